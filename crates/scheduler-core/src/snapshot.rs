//! The clusters one scheduling cycle sees.
//!
//! Upstream deep-copies the informer's clusters once per `Schedule` call, in hash-map order.
//! Here the snapshot shares the caller's `Arc`s (nothing in the core mutates a cluster) and is
//! sorted by name, so that traces and diagnoses come out in a stable order; the placement does
//! not depend on it.
//!
//! A snapshot also remembers sets of clusters that bindings ask about again and again (which
//! clusters serve an API, which match an affinity, ...), so that a snapshot scheduled against
//! many times answers those questions with one bit per cluster instead of reading every
//! cluster object each time (see [`crate::prepared`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use karmada_api::cluster::Cluster;
use karmada_api::policy::{ClusterAffinity, SpreadFieldValue};

/// An immutable, name-sorted list of clusters, terminating ones included.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    clusters: Vec<Arc<Cluster>>,
    sets: Arc<SetMemo>,
}

/// Positions in a snapshot, as a bit set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusterSet {
    words: Vec<u64>,
}

impl ClusterSet {
    /// The positions below `n` for which `member` holds.
    pub fn from_fn(n: usize, mut member: impl FnMut(usize) -> bool) -> Self {
        let mut words = vec![0u64; n.div_ceil(64)];
        for i in 0..n {
            if member(i) {
                words[i / 64] |= 1 << (i % 64);
            }
        }
        Self { words }
    }

    /// Whether position `i` is in the set.
    pub fn contains(&self, i: usize) -> bool {
        self.words
            .get(i / 64)
            .is_some_and(|w| (w >> (i % 64)) & 1 == 1)
    }

    /// Positions in either set.
    pub fn union(&self, other: &Self) -> Self {
        let (long, short) = if self.words.len() >= other.words.len() {
            (self, other)
        } else {
            (other, self)
        };
        let mut words = long.words.clone();
        for (w, o) in words.iter_mut().zip(&short.words) {
            *w |= o;
        }
        Self { words }
    }
}

/// What decides membership of a memoised set; equal keys must mean equal predicates.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum SetKey {
    /// `Cluster::is_terminating`.
    Terminating,
    /// Some taint with effect `NoSchedule` or `NoExecute`.
    HardTaints,
    /// Serves this group, version and kind (`status.apiEnablements`).
    Api {
        group: String,
        version: String,
        kind: String,
    },
    /// Lacks the property a spread constraint on this field groups by.
    Lacks(SpreadFieldValue),
    /// Matches the `ClusterAffinity` whose `Debug` form this is (every field, strings
    /// escaped: equal forms are equal affinities).
    Affinity(String),
}

impl SetKey {
    /// The key of the clusters matching `affinity` ([`crate::selector::cluster_matches`]).
    pub(crate) fn affinity(affinity: &ClusterAffinity) -> Self {
        Self::Affinity(format!("{affinity:?}"))
    }
}

/// Sets memoised for one snapshot (shared by its clones, which hold the same clusters).
#[derive(Default)]
struct SetMemo(Mutex<HashMap<SetKey, Arc<ClusterSet>>>);

impl std::fmt::Debug for SetMemo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.lock().map_or(0, |m| m.len());
        write!(f, "SetMemo({n} sets)")
    }
}

/// Distinct sets kept per snapshot; beyond it the memo starts over.
const SET_MEMO_LIMIT: usize = 1024;

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
        Self {
            clusters: out,
            sets: Arc::default(),
        }
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

    /// The set memoised under `key`, if some request computed it already.
    pub(crate) fn cached_cluster_set(&self, key: &SetKey) -> Option<Arc<ClusterSet>> {
        let memo = self.sets.0.lock().unwrap_or_else(|e| e.into_inner());
        memo.get(key).cloned()
    }

    /// The positions of the clusters for which `member` holds, computed on the first request
    /// for `key` and remembered for the life of the snapshot. `key` must determine `member`.
    pub(crate) fn cluster_set(
        &self,
        key: SetKey,
        member: impl Fn(&Cluster) -> bool,
    ) -> Arc<ClusterSet> {
        let lock = || self.sets.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(set) = lock().get(&key) {
            return set.clone();
        }
        // Computed without the lock; a concurrent request may compute the same set twice.
        let set = Arc::new(ClusterSet::from_fn(self.clusters.len(), |i| {
            member(&self.clusters[i])
        }));
        let mut memo = lock();
        if memo.len() >= SET_MEMO_LIMIT {
            memo.clear();
        }
        memo.insert(key, set.clone());
        set
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

    #[test]
    fn cluster_sets_are_computed_once_per_key() {
        let s = Snapshot::from_clusters((0..130).map(|i| cluster(&format!("m{i:03}"), "")));
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let odd = |c: &Cluster| {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            c.name().ends_with(['1', '3', '5', '7', '9'])
        };
        let a = s.cluster_set(SetKey::HardTaints, odd);
        let b = s.clone().cluster_set(SetKey::HardTaints, odd);
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 130);
        assert!((0..130).all(|i| a.contains(i) == (i % 2 == 1)));
        assert!(!a.contains(130) && !a.contains(10_000));
        let none = s.cluster_set(SetKey::Terminating, |_| false);
        let even = ClusterSet::from_fn(130, |i| i % 2 == 0);
        assert_eq!(a.union(&even), ClusterSet::from_fn(130, |_| true));
        assert_eq!(none.union(&a), *a);
        assert_eq!(ClusterSet::default().union(&a), *a);
    }
}
