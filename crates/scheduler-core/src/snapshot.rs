//! The clusters one scheduling cycle sees.
//!
//! Upstream deep-copies the informer's clusters once per `Schedule` call, in hash-map order.
//! Here the snapshot shares the caller's `Arc`s (nothing in the core mutates a cluster) and is
//! sorted by name, so that traces and diagnoses come out in a stable order; the placement does
//! not depend on it (spec-algorithm §4, §14).

use std::sync::Arc;

use karmada_api::cluster::Cluster;

/// An immutable, name-sorted list of clusters, terminating ones included.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    clusters: Vec<Arc<Cluster>>,
}

impl Snapshot {
    /// A snapshot of these clusters. Duplicate names keep the last one given, as a store
    /// keyed by name would.
    pub fn new(clusters: impl IntoIterator<Item = Arc<Cluster>>) -> Self {
        let mut clusters: Vec<Arc<Cluster>> = clusters.into_iter().collect();
        // Stable sort, then keep the last of each run of equal names.
        clusters.sort_by(|a, b| a.name().cmp(b.name()));
        let mut out: Vec<Arc<Cluster>> = Vec::with_capacity(clusters.len());
        for c in clusters {
            match out.last_mut() {
                Some(last) if last.name() == c.name() => *last = c,
                _ => out.push(c),
            }
        }
        Self { clusters: out }
    }

    /// A snapshot owning these clusters.
    pub fn from_clusters(clusters: impl IntoIterator<Item = Cluster>) -> Self {
        Self::new(clusters.into_iter().map(Arc::new))
    }

    /// All clusters, sorted by name.
    pub fn clusters(&self) -> &[Arc<Cluster>] {
        &self.clusters
    }

    /// Every cluster, including the ones being deleted (the `N` of "0/N clusters").
    pub fn num_of_clusters(&self) -> usize {
        self.clusters.len()
    }

    /// The cluster with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<Cluster>> {
        self.clusters
            .binary_search_by(|c| c.name().cmp(name))
            .ok()
            .map(|i| &self.clusters[i])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, region: &str) -> Cluster {
        let mut c = Cluster::new(name, Default::default());
        c.spec.region = region.to_string();
        c
    }

    #[test]
    fn sorted_by_name_last_duplicate_wins() {
        let s = Snapshot::from_clusters([
            cluster("m2", ""),
            cluster("m1", "a"),
            cluster("m3", ""),
            cluster("m1", "b"),
        ]);
        let names: Vec<&str> = s.clusters().iter().map(|c| c.name()).collect();
        assert_eq!(names, ["m1", "m2", "m3"]);
        assert_eq!(s.get("m1").unwrap().spec.region, "b");
        assert!(s.get("m4").is_none());
        assert_eq!(s.num_of_clusters(), 3);
    }
}
