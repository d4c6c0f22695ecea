//! `SchedulingOvercommitProtection`: the workloads this scheduler has placed whose pods the
//! member clusters may not report yet, kept per binding and cluster and forwarded to every
//! estimator, which counts them as taken.
//!
//! As the reference v1.18.2: only ResourceBindings of workloads are assumed; an assumption
//! is the binding's whole assignment on a cluster (its replicas there and their
//! requirements, or its whole component set), replaced by every result written; it is
//! released when the workload turns `Healthy` on that cluster, when the result moves away
//! from the cluster, when the binding is deleted or stops being ours, and five minutes after
//! the binding's last result (no longer answered then, and swept by the next write once a
//! minute has passed since the last sweep). The cache lives in memory only.
//!
//! It is written in one place, its ledger: what the watch says (through the store's writer),
//! what a cycle's [`Reservation`] decided, and the ledger's own sweeps.
//!
//! Unlike the reference, which schedules one binding at a time, cycles here run
//! concurrently. Two cycles must not both spend the same free capacity, so with the gate on
//! a workload's estimate and its reservation happen under one lock
//! ([`Assumptions::reserve`]): the result is assumed as soon as it is decided, before the
//! write, and the reservation is rolled back if the write does not land. Cycles of bindings
//! that are not workloads, and everything after the decision (the writes), still run
//! concurrently.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use karmada_api::work::{
    Component, ComponentReplicaRequirements, ResourceBindingSpec, ResourceBindingStatus,
    TargetCluster,
};
use scheduler_core::{AssumedWorkload, AssumptionSource};
use tokio::time::Instant;

/// How long an assumption lives after the binding's last result (the reference's fixed 5 m).
pub const TTL: Duration = Duration::from_secs(300);
/// How often expired assumptions are swept, at most (the reference's GC runs every 1 m).
pub const GC_PERIOD: Duration = Duration::from_secs(60);
/// `aggregatedStatus[].health` of a workload that runs as asked on a cluster.
pub const HEALTHY: &str = "Healthy";

/// One binding's assumptions.
#[derive(Clone, Debug, PartialEq)]
pub struct BindingAssumption {
    /// Per cluster, what is assumed there.
    entries: BTreeMap<String, AssumedWorkload>,
    expires_at: Instant,
    /// The clusters the binding was last seen `Healthy` on, to release on the edge only.
    healthy: BTreeSet<String>,
}

/// The assumption cache; keys are `namespace/name` of ResourceBindings.
#[derive(Debug)]
pub struct Assumptions {
    ttl: Duration,
    ledger: Mutex<Ledger>,
    /// Held from a workload's estimate to its reservation.
    reservations: tokio::sync::Mutex<()>,
}

/// The cache's contents and their one writer: every change is one of its `&mut` methods.
#[derive(Clone, Debug, Default)]
struct Ledger {
    bindings: HashMap<String, BindingAssumption>,
    /// When a write sweeps expired bindings next (the first write sweeps, as the reference's
    /// first GC runs at once).
    next_sweep: Option<Instant>,
}

impl Ledger {
    /// Set (or, with `None`, release) the assumptions of `key`; what they replace.
    fn put(&mut self, key: &str, b: Option<BindingAssumption>) -> Option<BindingAssumption> {
        match b {
            Some(b) => self.bindings.insert(key.to_string(), b),
            None => self.bindings.remove(key),
        }
    }

    /// Release the clusters `key` turned `Healthy` on since the last version seen.
    fn observed(&mut self, key: &str, status: &ResourceBindingStatus) {
        let Some(b) = self.bindings.get_mut(key) else {
            return;
        };
        let now = healthy_clusters(status);
        for cluster in now.difference(&b.healthy) {
            if b.entries.remove(cluster).is_some() {
                tracing::debug!(
                    binding = key,
                    cluster = cluster.as_str(),
                    "Released assumption for ResourceBinding({key}) on cluster({cluster}): workload became Healthy"
                );
            }
        }
        b.healthy = now;
        if b.entries.is_empty() {
            self.bindings.remove(key);
        }
    }

    /// Drop the expired bindings; how many.
    fn sweep(&mut self) -> usize {
        let now = Instant::now();
        self.next_sweep = Some(now + GC_PERIOD);
        let before = self.bindings.len();
        self.bindings.retain(|_, b| b.expires_at >= now);
        let n = before - self.bindings.len();
        if n > 0 {
            tracing::debug!("Assumption cache GC: removed {n} expired entries");
        }
        n
    }
}

impl Default for Assumptions {
    fn default() -> Self {
        Self::new(TTL)
    }
}

/// The clusters a status reports `Healthy`.
pub fn healthy_clusters(status: &ResourceBindingStatus) -> BTreeSet<String> {
    status
        .aggregated_status
        .iter()
        .filter(|s| s.health == HEALTHY)
        .map(|s| s.cluster_name.clone())
        .collect()
}

/// What the reference assumes on each cluster of `result` for a binding with `spec`: the
/// whole component set on every cluster, or one component named after the template with the
/// replicas assigned there. `None` for bindings that are not workloads.
pub fn assumptions_for(
    spec: &ResourceBindingSpec,
    result: &[TargetCluster],
) -> Option<BTreeMap<String, AssumedWorkload>> {
    if !spec.is_workload() {
        return None;
    }
    let namespace = spec.resource.namespace.clone();
    Some(
        result
            .iter()
            .map(|tc| {
                let components = if spec.components.is_empty() {
                    vec![Component {
                        name: spec.resource.name.clone(),
                        replicas: tc.replicas,
                        replica_requirements: spec.replica_requirements.as_ref().map(|r| {
                            ComponentReplicaRequirements {
                                node_claim: r.node_claim.clone(),
                                resource_request: r.resource_request.clone(),
                                priority_class_name: r.priority_class_name.clone(),
                            }
                        }),
                    }]
                } else {
                    spec.components.clone()
                };
                (
                    tc.name.to_string(),
                    AssumedWorkload {
                        namespace: namespace.clone(),
                        components,
                    },
                )
            })
            .collect(),
    )
}

/// A reservation made before its write: rolled back when dropped unless [`kept`].
///
/// [`kept`]: Reservation::keep
#[must_use]
pub struct Reservation<'a> {
    cache: &'a Assumptions,
    key: String,
    before: Option<BindingAssumption>,
    kept: bool,
}

impl Reservation<'_> {
    /// The write landed: the assumption stays.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let before = self.before.take();
            self.cache.write(|l| l.put(&self.key, before));
        }
    }
}

impl Assumptions {
    /// An empty cache whose assumptions live `ttl` after their binding's last result.
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl,
            ledger: Mutex::default(),
            reservations: tokio::sync::Mutex::new(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Every write: a sweep first when one is due, then `change`.
    fn write<R>(&self, change: impl FnOnce(&mut Ledger) -> R) -> R {
        let mut ledger = self.lock();
        if ledger.next_sweep.is_none_or(|t| Instant::now() >= t) {
            ledger.sweep();
        }
        change(&mut ledger)
    }

    /// Serialises the estimate and the reservation of workloads: hold the guard from before
    /// the estimate until [`Assumptions::assume`] has run.
    pub async fn reserve(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.reservations.lock().await
    }

    /// Assume `result` for the binding `key` (`updateAssumptionsCache`): clusters it left are
    /// released, every cluster of the result gets the binding's whole assignment there, and
    /// the binding's expiry starts again. `healthy` is where the binding is `Healthy` now.
    /// Returns the reservation, rolled back unless kept.
    pub fn assume(
        &self,
        key: &str,
        spec: &ResourceBindingSpec,
        result: &[TargetCluster],
        healthy: BTreeSet<String>,
    ) -> Option<Reservation<'_>> {
        let entries = assumptions_for(spec, result)?;
        let before = self.write(|l| {
            let expires_at = Instant::now() + self.ttl;
            let b = BindingAssumption {
                entries,
                expires_at,
                healthy,
            };
            l.put(key, Some(b).filter(|b| !b.entries.is_empty()))
        });
        Some(Reservation {
            cache: self,
            key: key.to_string(),
            before,
            kept: false,
        })
    }

    /// A new version of the binding `key` was seen: release the clusters it turned
    /// `Healthy` on since the last version seen (`releaseHealthyClusterAssumptions`).
    pub fn observed(&self, key: &str, status: &ResourceBindingStatus) {
        self.write(|l| l.observed(key, status));
    }

    /// The binding `key` is gone (deleted, or no longer ours): release all of it.
    pub fn release(&self, key: &str) {
        self.write(|l| l.put(key, None));
    }

    /// Drop the expired bindings now; how many.
    pub fn gc(&self) -> usize {
        self.lock().sweep()
    }

    /// A copy with the same assumptions, for a read-only explanation that must not change
    /// this cache.
    pub fn copy(&self) -> Self {
        Self {
            ttl: self.ttl,
            ledger: Mutex::new(self.lock().clone()),
            reservations: tokio::sync::Mutex::new(()),
        }
    }

    /// Bindings with assumptions (tests, logs).
    pub fn len(&self) -> usize {
        self.lock().bindings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl AssumptionSource for Assumptions {
    /// By binding key, so that two calls with the same cache answer in the same order.
    fn assumed_on(&self, cluster: &str) -> Vec<AssumedWorkload> {
        let now = Instant::now();
        let ledger = self.lock();
        let mut found: Vec<(&String, &AssumedWorkload)> = ledger
            .bindings
            .iter()
            .filter(|(_, b)| b.expires_at >= now)
            .filter_map(|(k, b)| b.entries.get(cluster).map(|a| (k, a)))
            .collect();
        found.sort_by(|a, b| a.0.cmp(b.0));
        found.into_iter().map(|(_, a)| a.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> ResourceBindingSpec {
        serde_json::from_value(v).unwrap()
    }

    fn deployment(replicas: i32) -> ResourceBindingSpec {
        spec(json!({
            "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "work-ns", "name": "my-deploy"},
            "replicas": replicas,
            "replicaRequirements": {"resourceRequest": {"cpu": "500m", "memory": "256Mi"}}
        }))
    }

    fn tc(name: &str, replicas: i32) -> TargetCluster {
        TargetCluster::new(name, replicas)
    }

    fn replicas_on(cache: &Assumptions, cluster: &str) -> Vec<Vec<i32>> {
        cache
            .assumed_on(cluster)
            .iter()
            .map(|a| a.components.iter().map(|c| c.replicas).collect())
            .collect()
    }

    #[test]
    fn the_whole_assignment_is_assumed_and_replaced() {
        let c = Assumptions::default();
        c.assume("ns/a", &deployment(5), &[tc("c1", 5)], BTreeSet::new())
            .unwrap()
            .keep();
        let got = c.assumed_on("c1");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].namespace, "work-ns");
        assert_eq!(got[0].components[0].name, "my-deploy");
        assert_eq!(got[0].components[0].replicas, 5);
        let cpu = &got[0].components[0]
            .replica_requirements
            .as_ref()
            .unwrap()
            .resource_request["cpu"];
        assert_eq!(cpu.0, "500m");
        // A new result replaces (not adds to) each cluster, and releases clusters left.
        c.assume(
            "ns/a",
            &deployment(6),
            &[tc("c1", 4), tc("c2", 2)],
            BTreeSet::new(),
        )
        .unwrap()
        .keep();
        assert_eq!(replicas_on(&c, "c1"), [[4]]);
        assert_eq!(replicas_on(&c, "c2"), [[2]]);
        c.assume("ns/a", &deployment(4), &[tc("c1", 4)], BTreeSet::new())
            .unwrap()
            .keep();
        assert!(c.assumed_on("c2").is_empty());
        // Another binding on c1 adds its own.
        c.assume("ns/b", &deployment(1), &[tc("c1", 1)], BTreeSet::new())
            .unwrap()
            .keep();
        assert_eq!(replicas_on(&c, "c1"), [[4], [1]]);
        // An empty result (no cluster fits) releases everything of the binding.
        c.assume("ns/a", &deployment(4), &[], BTreeSet::new())
            .unwrap()
            .keep();
        assert_eq!(replicas_on(&c, "c1"), [[1]]);
    }

    #[test]
    fn component_sets_and_non_workloads() {
        let c = Assumptions::default();
        let jm = spec(json!({
            "resource": {"apiVersion": "flink/v1", "kind": "FlinkDeployment", "namespace": "work-ns", "name": "f"},
            "components": [
                {"name": "jobmanager", "replicas": 1},
                {"name": "taskmanager", "replicas": 2}
            ]
        }));
        c.assume("ns/f", &jm, &[tc("c1", 1)], BTreeSet::new())
            .unwrap()
            .keep();
        assert_eq!(replicas_on(&c, "c1"), [[1, 2]]);
        let config_map = spec(json!({
            "resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "work-ns", "name": "cm"}
        }));
        assert!(
            c.assume("ns/cm", &config_map, &[tc("c1", 0)], BTreeSet::new())
                .is_none()
        );
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_reservation_is_rolled_back_unless_kept() {
        let c = Assumptions::default();
        c.assume("ns/a", &deployment(2), &[tc("c1", 2)], BTreeSet::new())
            .unwrap()
            .keep();
        let r = c.assume("ns/a", &deployment(5), &[tc("c2", 5)], BTreeSet::new());
        assert_eq!(replicas_on(&c, "c2"), [[5]]);
        drop(r);
        assert_eq!(replicas_on(&c, "c1"), [[2]]);
        assert!(c.assumed_on("c2").is_empty());
        let r = c.assume("ns/new", &deployment(1), &[tc("c3", 1)], BTreeSet::new());
        drop(r);
        assert!(c.assumed_on("c3").is_empty());
        assert_eq!(c.len(), 1);
    }

    fn status(health: &[(&str, &str)]) -> ResourceBindingStatus {
        serde_json::from_value(json!({
            "aggregatedStatus": health.iter().map(|(c, h)| json!({"clusterName": c, "health": h})).collect::<Vec<_>>()
        }))
        .unwrap()
    }

    #[test]
    fn healthy_edges_release_their_cluster_only() {
        let c = Assumptions::default();
        let result = [tc("c1", 1), tc("c2", 1)];
        c.assume(
            "ns/a",
            &deployment(2),
            &result,
            healthy_clusters(&status(&[("c1", "Healthy")])),
        )
        .unwrap()
        .keep();
        // c1 was already Healthy: no edge, kept; c2 Unknown → Healthy: released.
        c.observed("ns/a", &status(&[("c1", "Healthy"), ("c2", "Unknown")]));
        assert_eq!(replicas_on(&c, "c1"), [[1]]);
        c.observed("ns/a", &status(&[("c1", "Healthy"), ("c2", "Healthy")]));
        assert!(c.assumed_on("c2").is_empty());
        assert_eq!(replicas_on(&c, "c1"), [[1]]);
        // Healthy → Unhealthy → Healthy is an edge.
        c.observed("ns/a", &status(&[("c1", "Unhealthy")]));
        c.observed("ns/a", &status(&[("c1", "Healthy")]));
        assert!(c.assumed_on("c1").is_empty());
        assert!(c.is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn assumptions_expire_and_are_swept() {
        let c = Assumptions::new(Duration::from_secs(300));
        c.assume("ns/a", &deployment(1), &[tc("c1", 1)], BTreeSet::new())
            .unwrap()
            .keep();
        tokio::time::advance(Duration::from_secs(200)).await;
        c.assume("ns/b", &deployment(1), &[tc("c1", 1)], BTreeSet::new())
            .unwrap()
            .keep();
        assert_eq!(c.gc(), 0);
        tokio::time::advance(Duration::from_secs(101)).await;
        // Expired: no longer answered even before the sweep.
        assert_eq!(replicas_on(&c, "c1"), [[1]]);
        assert_eq!(c.gc(), 1);
        c.release("ns/b");
        assert!(c.is_empty());
    }

    /// A binding deleted while a write was in flight: released by the deletion, then the
    /// write (refused) rolls its reservation back to the earlier result's assumption, for a
    /// binding that is gone. Those stay only until they expire: the sweep empties the cache
    /// however many there were. A write that landed (kept) adds nothing back.
    #[tokio::test(start_paused = true)]
    async fn assumptions_of_deleted_bindings_go_at_the_latest_with_their_expiry() {
        let c = Assumptions::default();
        for i in 0..10_000 {
            let key = format!("ns/b{i}");
            c.assume(&key, &deployment(1), &[tc("c1", 1)], BTreeSet::new())
                .unwrap()
                .keep();
            let r = c.assume(&key, &deployment(2), &[tc("c1", 2)], BTreeSet::new());
            c.release(&key);
            if i % 2 == 0 {
                drop(r);
            } else {
                r.unwrap().keep();
            }
        }
        assert_eq!(c.len(), 5_000);
        tokio::time::advance(TTL + Duration::from_secs(1)).await;
        assert_eq!(c.gc(), 5_000);
        assert!(c.is_empty());
    }
}
