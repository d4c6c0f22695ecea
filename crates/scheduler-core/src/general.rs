//! The general estimator: capacity from `status.resourceSummary`.
//!
//! Every cluster reports what it can allocate and what is allocated or being allocated; the
//! general estimator divides what is left by the per-replica request, bounded by the free pod
//! count. With `CustomizedClusterResourceModeling` (default on) and reported node models, it
//! instead counts how many replicas fit on model nodes, because a cluster-wide sum hides
//! fragmentation. Quantities use [`crate::quantity`], so that the reference's format quirks
//! (memory as `16G` is counted in milli-bytes by the component-set path, `1Gi` in bytes)
//! come out the same.
//!
//! Parsing quantities dominates the cost of a scheduling cycle, while a cluster's summary
//! changes far less often than bindings are scheduled. The estimator therefore keeps each
//! cluster's parsed summary ([`SummaryCapacity`]) in a memo keyed by cluster name and checked
//! against the summary's exact text before every use, so a hit can never differ from parsing
//! afresh; the request is parsed once per call rather than once per cluster. When the
//! pipeline passes the `Arc`s the clusters live in (the snapshot's), a second memo keyed by
//! the `Arc`'s address answers without reading the summary at all: the memo holds a clone of
//! the `Arc`, so the address cannot be reused by another cluster while the entry exists, and
//! a cluster shared through an `Arc` is never mutated. Entries whose `Arc` nobody else holds
//! any more are dropped when that memo grows.
//!
//! With `SchedulingOvercommitProtection`, the workloads assumed on a cluster (placed, their
//! pods not yet reported) are taken off its capacity first, as the reference does: added to
//! `allocating` for one template, subtracted in the component-set units for component sets,
//! and placed first-fit on the model nodes before counting there. A cluster without
//! assumptions takes the memoised path unchanged.

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::{Arc, Mutex};

use karmada_api::ResourceList;
use karmada_api::cluster::{Cluster, ResourceSummary};
use karmada_api::work::{Component, ReplicaRequirements};

use crate::estimator::{
    Ask, AssumedWorkload, BoxFuture, EstimateRequest, Estimates, Estimator, EstimatorError,
    SharedEstimates,
};
use crate::quantity::{Format, Quantity};
use crate::selector::is_label_key;

/// Registry name of the general estimator.
pub const GENERAL_ESTIMATOR: &str = "general-estimator";

/// Pod capacity of a model node (the Kubernetes default per node).
pub const MAX_PODS_PER_MODEL_NODE: i64 = 110;

/// Memo entries kept beyond the largest call seen before the memo is emptied (deleted
/// clusters would otherwise stay forever).
const MEMO_SLACK: usize = 64;

/// The general estimator; the field is the `CustomizedClusterResourceModeling` gate.
pub struct GeneralEstimator {
    /// Use `spec.resourceModels` when the cluster reports `allocatableModelings`.
    pub customized_cluster_resource_modeling: bool,
    memo: Mutex<SummaryMemo>,
}

impl GeneralEstimator {
    /// A general estimator with the `CustomizedClusterResourceModeling` gate as given.
    pub fn new(customized_cluster_resource_modeling: bool) -> Self {
        Self {
            customized_cluster_resource_modeling,
            memo: Mutex::default(),
        }
    }

    /// Run `f` on the memo; a poisoned lock only means another call panicked mid-update,
    /// and every entry is re-checked against the summary before use, so it stays usable.
    fn with_memo<R>(&self, f: impl FnOnce(&mut SummaryMemo) -> R) -> R {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut memo)
    }
}

impl Default for GeneralEstimator {
    fn default() -> Self {
        Self::new(true)
    }
}

impl Clone for GeneralEstimator {
    /// A copy with the same gate and an empty memo.
    fn clone(&self) -> Self {
        Self::new(self.customized_cluster_resource_modeling)
    }
}

impl std::fmt::Debug for GeneralEstimator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeneralEstimator")
            .field(
                "customized_cluster_resource_modeling",
                &self.customized_cluster_resource_modeling,
            )
            .finish_non_exhaustive()
    }
}

/// The parsed summary of the cluster of this name, from `entries` when its text is unchanged.
fn capacity_by_name(
    entries: &mut HashMap<String, (ResourceSummary, Arc<SummaryCapacity>)>,
    name: &str,
    rs: &ResourceSummary,
) -> Arc<SummaryCapacity> {
    if let Some((raw, parsed)) = entries.get(name)
        && raw == rs
    {
        return parsed.clone();
    }
    let parsed = Arc::new(SummaryCapacity::parse(rs));
    entries.insert(name.to_string(), (rs.clone(), parsed.clone()));
    parsed
}

/// Hashes the address of a cluster shared through an `Arc` (a multiply-shift; the low bits of
/// an address are always zero, so they are mixed with the high ones).
#[derive(Default, Clone, Copy)]
struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u64(&mut self, n: u64) {
        let x = (self.0 ^ n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        self.0 = x ^ (x >> 29);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

/// What the memo keeps per shared cluster: the `Arc` (which pins its address) and the parsed
/// summary, `None` when the cluster reports none.
type SharedEntry = (Arc<Cluster>, Option<SummaryCapacity>);

/// Parsed summaries by cluster name, each with the text it was parsed from, and by the
/// address of the `Arc` a cluster is shared through.
#[derive(Default)]
struct SummaryMemo {
    entries: HashMap<String, (ResourceSummary, Arc<SummaryCapacity>)>,
    /// Position in `slab` by the address of the `Arc`; the table stays small (it fits a
    /// core's cache with thousands of clusters) and the entries stay in the order they were
    /// first asked about, which is the order calls read them in.
    shared: HashMap<usize, u32, BuildHasherDefault<AddressHasher>>,
    slab: Vec<SharedEntry>,
    /// Size of `slab` beyond which unreferenced entries are swept.
    shared_limit: usize,
    /// The most clusters asked about in one call, which bounds the memo.
    widest_call: usize,
}

impl SummaryMemo {
    /// The parsed summary of a shared cluster, `None` when it reports none; from the address
    /// memo when this very `Arc` was seen before, else through [`SummaryMemo::capacity`].
    fn capacity_shared(&mut self, cluster: &Arc<Cluster>) -> Option<&SummaryCapacity> {
        let key = Arc::as_ptr(cluster) as usize;
        let Self {
            entries,
            shared,
            slab,
            ..
        } = self;
        let i = *shared.entry(key).or_insert_with(|| {
            let cap = summary_of(cluster)
                .map(|rs| (*capacity_by_name(entries, cluster.name(), rs)).clone());
            slab.push((cluster.clone(), cap));
            u32::try_from(slab.len() - 1).expect("fewer than 2^32 clusters")
        });
        slab[i as usize].1.as_ref()
    }

    /// After a call through the shared path: when the address memo outgrew its limit, drop
    /// the entries whose cluster only the memo still holds (no caller can present that `Arc`
    /// again), and set the next limit.
    fn sweep_shared(&mut self) {
        let floor = self.widest_call.saturating_mul(2) + MEMO_SLACK;
        if self.slab.len() > self.shared_limit.max(floor) {
            self.slab.retain(|(c, _)| Arc::strong_count(c) > 1);
            self.shared = self
                .slab
                .iter()
                .enumerate()
                .map(|(i, (c, _))| (Arc::as_ptr(c) as usize, i as u32))
                .collect();
            self.shared_limit = self.slab.len().saturating_mul(2).max(floor);
        }
    }

    /// The parsed form of this cluster's summary, from the memo when its text is unchanged.
    fn capacity(&mut self, name: &str, rs: &ResourceSummary) -> Arc<SummaryCapacity> {
        capacity_by_name(&mut self.entries, name, rs)
    }

    /// Note a call about `n` clusters; empty the memo when it outgrew what calls need.
    fn note_call(&mut self, n: usize) {
        self.widest_call = self.widest_call.max(n);
        if self.entries.len() > self.widest_call.saturating_mul(2) + MEMO_SLACK {
            self.entries.clear();
        }
    }
}

impl Estimator for GeneralEstimator {
    fn name(&self) -> &str {
        GENERAL_ESTIMATOR
    }

    fn estimate<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
        let res = self.answer(Clusters::Plain(clusters), request);
        Box::pin(std::future::ready(res.map(named(clusters))))
    }

    fn estimate_shared<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        shared: &'a [&'a Arc<Cluster>],
        request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<SharedEstimates, EstimatorError>> {
        let res = self.answer(Clusters::new(clusters, shared), request);
        Box::pin(std::future::ready(res.map(SharedEstimates::InOrder)))
    }
}

/// The clusters of one call: plain references, or the `Arc`s they are shared through.
#[derive(Clone, Copy)]
enum Clusters<'a> {
    Plain(&'a [&'a Cluster]),
    Shared(&'a [&'a Arc<Cluster>]),
}

impl<'a> Clusters<'a> {
    /// The shared form when it describes the same clusters.
    fn new(clusters: &'a [&'a Cluster], shared: &'a [&'a Arc<Cluster>]) -> Self {
        if shared.len() == clusters.len() {
            debug_assert!(
                shared
                    .iter()
                    .zip(clusters)
                    .all(|(a, b)| std::ptr::eq(Arc::as_ptr(a), *b))
            );
            Self::Shared(shared)
        } else {
            Self::Plain(clusters)
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Plain(c) => c.len(),
            Self::Shared(c) => c.len(),
        }
    }
}

/// Pair answers in order with the names of the clusters asked.
fn named<'a>(clusters: &'a [&'a Cluster]) -> impl FnOnce(Vec<i32>) -> Estimates + 'a {
    move |answers| {
        clusters
            .iter()
            .zip(answers)
            .map(|(c, n)| (c.name().to_string(), n))
            .collect()
    }
}

impl GeneralEstimator {
    /// The answer to `request.ask`, plain or shared.
    fn answer(
        &self,
        clusters: Clusters<'_>,
        request: EstimateRequest<'_>,
    ) -> Result<Vec<i32>, EstimatorError> {
        match request.ask {
            Ask::Replicas => self.replicas(clusters, request),
            Ask::ComponentSets => self.sets(clusters, request),
        }
    }

    /// Both replica paths: the request checked and parsed once, then every cluster.
    fn replicas(
        &self,
        clusters: Clusters<'_>,
        request: EstimateRequest<'_>,
    ) -> Result<Vec<i32>, EstimatorError> {
        parse_request(
            request.replica_requirements.map(|r| &r.resource_request),
            "spec.replicaRequirements.resourceRequest",
        )?;
        let req = request.replica_requirements;
        let parsed = req.map(ParsedRequest::new);
        Ok(self.each_cluster(clusters, |c, cap| {
            let assumed = request.assumed_on(c.name());
            if assumed.is_empty() {
                return self.max_replicas_parsed(c, cap, req.zip(parsed.as_ref()), assumed);
            }
            let Some(rs) = summary_of(c) else {
                return 0;
            };
            let cap = SummaryCapacity::parse_assumed(rs, assumed);
            self.max_replicas_parsed(c, &cap, req.zip(parsed.as_ref()), assumed)
        }))
    }

    /// Both component-set paths.
    fn sets(
        &self,
        clusters: Clusters<'_>,
        request: EstimateRequest<'_>,
    ) -> Result<Vec<i32>, EstimatorError> {
        for (i, c) in request.components.iter().enumerate() {
            let field = format!("spec.components[{i}].replicaRequirements.resourceRequest");
            parse_request(
                c.replica_requirements.as_ref().map(|r| &r.resource_request),
                &field,
            )?;
        }
        let need = SetDemand::new(request.components);
        Ok(self.each_cluster(clusters, |c, cap| {
            let assumed = request.assumed_on(c.name());
            if assumed.is_empty() {
                return self.max_component_sets_parsed(c, cap, request.components, &need, assumed);
            }
            let mut cap = cap.clone();
            cap.deduct_for_sets(assumed);
            self.max_component_sets_parsed(c, &cap, request.components, &need, assumed)
        }))
    }

    /// `f` of every cluster with its parsed summary (0 without a summary), in order, through
    /// the address memo for shared clusters.
    fn each_cluster(
        &self,
        clusters: Clusters<'_>,
        f: impl Fn(&Cluster, &SummaryCapacity) -> i32,
    ) -> Vec<i32> {
        self.with_memo(|memo| {
            memo.note_call(clusters.len());
            match clusters {
                Clusters::Shared(shared) => {
                    let out = shared
                        .iter()
                        .map(|c| memo.capacity_shared(c).map_or(0, |cap| f(c, cap)))
                        .collect();
                    memo.sweep_shared();
                    out
                }
                Clusters::Plain(plain) => plain
                    .iter()
                    .map(|c| match summary_of(c) {
                        Some(rs) => f(c, &memo.capacity(c.name(), rs)),
                        None => 0,
                    })
                    .collect(),
            }
        })
    }
}

/// Reject a request whose quantities do not parse (upstream could not even decode it).
fn parse_request(list: Option<&ResourceList>, field: &str) -> Result<(), EstimatorError> {
    for (name, q) in list.into_iter().flatten() {
        if let Err(e) = Quantity::from_k8s(q) {
            return Err(EstimatorError(format!(
                "{field}[{name}]: invalid quantity {:?}: {e}",
                q.0
            )));
        }
    }
    Ok(())
}

/// A cluster-side quantity; one that does not parse counts as zero (the reference never
/// sees such a cluster: its decoding fails).
fn qty(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> Quantity {
    Quantity::from_k8s(q).unwrap_or_else(|_| Quantity::from_i64(0, Format::DecimalSI))
}

/// A request quantity as the estimator sees it after the protobuf round trip of the
/// reference (`String()` then parse again); unparsable ones were rejected earlier.
fn request_qty(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> Quantity {
    let parsed = qty(q);
    Quantity::parse(&parsed.canonical()).unwrap_or(parsed)
}

/// `quantityAsInt64`: milli-units for decimal formats, units for BinarySI.
pub fn quantity_as_int(q: &Quantity) -> i64 {
    match q.format() {
        Format::DecimalSI | Format::DecimalExponent => q.milli_value(),
        Format::BinarySI => q.value(),
    }
}

fn summary_of(cluster: &Cluster) -> Option<&ResourceSummary> {
    cluster
        .status
        .as_ref()
        .and_then(|s| s.resource_summary.as_ref())
}

/// `allocatable - allocated - allocating` of one resource (absent terms skipped), or `None`
/// when the exact value is out of reach (see [`crate::quantity::QuantityError::TooLarge`]).
fn remaining(rs: &ResourceSummary, name: &str) -> Option<Option<Quantity>> {
    let Some(a) = rs.allocatable.get(name) else {
        return Some(None);
    };
    let mut a = qty(a);
    if let Some(x) = rs.allocated.get(name) {
        a = a.sub(&qty(x)).ok()?;
    }
    if let Some(x) = rs.allocating.get(name) {
        a = a.sub(&qty(x)).ok()?;
    }
    Some(Some(a))
}

/// What is left of one allocatable resource, in the units each path reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Left {
    value: i64,
    milli: i64,
    /// [`quantity_as_int`] of what is left.
    as_int: i64,
}

impl Left {
    fn of(q: &Quantity) -> Self {
        Self {
            value: q.value(),
            milli: q.milli_value(),
            as_int: quantity_as_int(q),
        }
    }
}

/// One cluster's `resourceSummary` reduced to the numbers the estimator reads; a pure
/// function of the summary, so it can be reused for as long as the summary is unchanged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryCapacity {
    /// [`allowed_pods`].
    pods: i64,
    /// Whether the summary reports `allocatableModelings`.
    has_models: bool,
    /// What is left of `cpu` and `memory`, which nearly every request names, kept out of the
    /// map so that reading them touches nothing else; `None` when not allocatable.
    cpu: Option<Option<Left>>,
    memory: Option<Option<Left>>,
    /// Per other allocatable resource, what is left; `None` when out of exact reach.
    others: BTreeMap<String, Option<Left>>,
}

impl SummaryCapacity {
    /// What is left of an allocatable resource (`None` inside when out of exact reach);
    /// `None` when the resource is not allocatable.
    fn left(&self, name: &str) -> Option<&Option<Left>> {
        match name {
            "cpu" => self.cpu.as_ref(),
            "memory" => self.memory.as_ref(),
            _ => self.others.get(name),
        }
    }

    fn left_mut(&mut self, name: &str) -> Option<&mut Option<Left>> {
        match name {
            "cpu" => self.cpu.as_mut(),
            "memory" => self.memory.as_mut(),
            _ => self.others.get_mut(name),
        }
    }

    /// Parse every quantity of the summary once.
    pub fn parse(rs: &ResourceSummary) -> Self {
        let mut left: BTreeMap<String, Option<Left>> = rs
            .allocatable
            .keys()
            .map(|name| {
                let l = remaining(rs, name).flatten().map(|q| Left::of(&q));
                (name.clone(), l)
            })
            .collect();
        Self {
            pods: allowed_pods(rs),
            has_models: !rs.allocatable_modelings.is_empty(),
            cpu: left.remove("cpu"),
            memory: left.remove("memory"),
            others: left,
        }
    }
}

impl SummaryCapacity {
    /// [`SummaryCapacity::parse`] of the summary with the assumed workloads added to
    /// `allocating` (`deductAssumedWorkloadsFromSummary`): per component with replicas, its
    /// pods, its CPU in millicores and every other resource in whole units, times replicas.
    pub fn parse_assumed(rs: &ResourceSummary, assumed: &[AssumedWorkload]) -> Self {
        let mut pods = 0i64;
        let mut taken: BTreeMap<&str, i64> = BTreeMap::new();
        for c in assumed.iter().flat_map(|a| &a.components) {
            if c.replicas <= 0 {
                continue;
            }
            let replicas = i64::from(c.replicas);
            pods = pods.wrapping_add(replicas);
            let Some(r) = &c.replica_requirements else {
                continue;
            };
            for (name, q) in &r.resource_request {
                let q = qty(q);
                let per = if name == "cpu" {
                    q.milli_value()
                } else {
                    q.value()
                };
                let e = taken.entry(name).or_default();
                *e = e.wrapping_add(per.wrapping_mul(replicas));
            }
        }
        let mut cap = Self::parse(rs);
        cap.pods = free_pods(rs).wrapping_sub(pods).max(0);
        for (name, amount) in taken {
            let deduct = if name == "cpu" {
                Quantity::from_milli(amount, Format::DecimalSI)
            } else {
                Quantity::from_i64(amount, Format::DecimalSI)
            };
            let left = match remaining(rs, name) {
                Some(Some(q)) => q.sub(&deduct).ok().map(|q| Left::of(&q)),
                // Not allocatable: nothing to take from; out of exact reach stays so.
                Some(None) => continue,
                None => None,
            };
            // Allocatable, so parsed above: the slot is there.
            if let Some(slot) = cap.left_mut(name) {
                *slot = left;
            }
        }
        cap
    }

    /// The component-set path's deduction: the assumed pods off the free pods (every
    /// component, as the reference counts them), and per resource the assumed demand in
    /// [`quantity_as_int`] units off what is left.
    fn deduct_for_sets(&mut self, assumed: &[AssumedWorkload]) {
        let mut pods = 0i64;
        let mut taken: BTreeMap<&str, i64> = BTreeMap::new();
        for c in assumed.iter().flat_map(|a| &a.components) {
            let replicas = i64::from(c.replicas);
            pods = pods.wrapping_add(replicas);
            let Some(r) = &c.replica_requirements else {
                continue;
            };
            for (name, q) in &r.resource_request {
                let e = taken.entry(name).or_default();
                *e = e.wrapping_add(quantity_as_int(&qty(q)).wrapping_mul(replicas));
            }
        }
        self.pods = self.pods.wrapping_sub(pods);
        for (name, amount) in taken {
            if let Some(Some(left)) = self.left_mut(name) {
                left.as_int = left.as_int.wrapping_sub(amount);
            }
        }
    }
}

/// A replica request with its quantities parsed: `(name, value, milli value)`.
struct ParsedRequest<'a>(Vec<(&'a str, i64, i64)>);

impl<'a> ParsedRequest<'a> {
    fn new(req: &'a ReplicaRequirements) -> Self {
        Self(
            req.resource_request
                .iter()
                .map(|(name, q)| {
                    let q = qty(q);
                    (name.as_str(), q.value(), q.milli_value())
                })
                .collect(),
        )
    }
}

/// What one component set needs in total, per resource ([`quantity_as_int`] units), and
/// the pods it takes.
struct SetDemand<'a> {
    pods: i64,
    need: BTreeMap<&'a str, i64>,
}

impl<'a> SetDemand<'a> {
    fn new(components: &'a [Component]) -> Self {
        let pods = components
            .iter()
            .fold(0i64, |s, c| s.wrapping_add(i64::from(c.replicas)));
        let mut need: BTreeMap<&str, i64> = BTreeMap::new();
        for c in components {
            let Some(r) = &c.replica_requirements else {
                continue;
            };
            for (name, q) in &r.resource_request {
                let add = quantity_as_int(&qty(q)).wrapping_mul(i64::from(c.replicas));
                let e = need.entry(name).or_default();
                *e = e.wrapping_add(add);
            }
        }
        Self { pods, need }
    }
}

/// `getAllowedPodNumber`: free pods, never negative.
pub fn allowed_pods(rs: &ResourceSummary) -> i64 {
    free_pods(rs).max(0)
}

/// `allocatable - allocated - allocating` pods.
fn free_pods(rs: &ResourceSummary) -> i64 {
    let pods = |l: &ResourceList| l.get("pods").map_or(0, |q| qty(q).value());
    pods(&rs.allocatable)
        .wrapping_sub(pods(&rs.allocated))
        .wrapping_sub(pods(&rs.allocating))
}

/// `getMaximumReplicasBasedOnClusterSummary`: the scarcest requested resource decides.
pub fn max_replicas_by_summary(rs: &ResourceSummary, req: &ReplicaRequirements) -> i64 {
    by_summary(&SummaryCapacity::parse(rs), &ParsedRequest::new(req))
}

fn by_summary(cap: &SummaryCapacity, req: &ParsedRequest<'_>) -> i64 {
    let mut max = i64::MAX;
    for &(name, value, milli) in &req.0 {
        let mut requested = value;
        if requested <= 0 {
            continue;
        }
        let Some(Some(avail)) = cap.left(name) else {
            return 0;
        };
        let mut available = avail.value;
        if available <= 0 {
            return 0;
        }
        if name == "cpu" {
            requested = milli;
            available = avail.milli;
        }
        // Upstream divides unchecked; a zero divisor (only through i64 wrap-around) panics
        // there, here it counts as no room.
        let Some(n) = available.checked_div(requested) else {
            return 0;
        };
        max = max.min(n);
    }
    max
}

impl GeneralEstimator {
    /// Maximum replicas of one template the cluster can take.
    pub fn max_replicas(&self, cluster: &Cluster, req: Option<&ReplicaRequirements>) -> i32 {
        let Some(rs) = summary_of(cluster) else {
            return 0;
        };
        let parsed = req.map(ParsedRequest::new);
        self.max_replicas_parsed(
            cluster,
            &SummaryCapacity::parse(rs),
            req.zip(parsed.as_ref()),
            &[],
        )
    }

    fn max_replicas_parsed(
        &self,
        cluster: &Cluster,
        cap: &SummaryCapacity,
        req: Option<(&ReplicaRequirements, &ParsedRequest<'_>)>,
        assumed: &[AssumedWorkload],
    ) -> i32 {
        let pods = cap.pods;
        if pods <= 0 {
            return 0;
        }
        let Some((req, parsed)) = req else {
            return pods as i32;
        };
        if self.customized_cluster_resource_modeling
            && cap.has_models
            && let Ok(n) = max_replicas_by_models(cluster, req, assumed)
        {
            return pods.min(n) as i32;
        }
        pods.min(by_summary(cap, parsed)) as i32
    }

    /// Maximum complete sets of `components` the cluster can take.
    pub fn max_component_sets(&self, cluster: &Cluster, components: &[Component]) -> i32 {
        let Some(rs) = summary_of(cluster) else {
            return 0;
        };
        self.max_component_sets_parsed(
            cluster,
            &SummaryCapacity::parse(rs),
            components,
            &SetDemand::new(components),
            &[],
        )
    }

    fn max_component_sets_parsed(
        &self,
        cluster: &Cluster,
        cap: &SummaryCapacity,
        components: &[Component],
        demand: &SetDemand<'_>,
        assumed: &[AssumedWorkload],
    ) -> i32 {
        let pods = cap.pods;
        if pods <= 0 {
            return 0;
        }
        let pods_per_set = demand.pods;
        if pods_per_set <= 0 {
            return pods as i32;
        }
        let bound = (pods / pods_per_set) as i32;
        let mut sets = bound;
        if !demand.need.values().all(|v| *v == 0) {
            for (name, n) in &demand.need {
                if *n <= 0 {
                    continue;
                }
                let a = match cap.left(name) {
                    Some(Some(l)) => l.as_int,
                    _ => 0,
                };
                if a <= 0 {
                    return 0;
                }
                sets = sets.min((a / n) as i32);
            }
        }
        if self.customized_cluster_resource_modeling
            && cap.has_models
            && let Ok(n) = max_sets_by_models(cluster, components, sets, assumed)
        {
            sets = sets.min(n);
        }
        sets
    }
}

/// Why the model-based estimate is unavailable (the summary-based one is used instead).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("resource summary is nil")]
    NoSummary,
    #[error("no resource models defined")]
    NoModels,
    #[error("negative node count for grade {0}")]
    NegativeCount(u32),
}

/// Resources in the units the reference's scheduler framework uses (`util.Resource`):
/// CPU in millicores, everything else in units; names that are neither native nor scalar
/// resources are ignored.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    pub scalars: BTreeMap<String, i64>,
}

impl Resources {
    fn add_quantity(&mut self, name: &str, q: &Quantity) {
        match name {
            "cpu" => self.milli_cpu = self.milli_cpu.wrapping_add(q.milli_value()),
            "memory" => self.memory = self.memory.wrapping_add(q.value()),
            "pods" => self.pods = self.pods.wrapping_add(q.value()),
            "ephemeral-storage" => {
                self.ephemeral_storage = self.ephemeral_storage.wrapping_add(q.value())
            }
            _ if is_scalar_resource_name(name) => {
                let e = self.scalars.entry(name.to_string()).or_default();
                *e = e.wrapping_add(q.value());
            }
            _ => {}
        }
    }

    /// `MaxDivided`: how many copies of `d` fit (pods bound included).
    pub fn max_divided(&self, d: &Resources) -> i64 {
        let mut res = i64::MAX;
        let mut bound = |have: i64, want: i64| {
            if want > 0 {
                res = res.min(have.wrapping_div(want));
            }
        };
        bound(self.milli_cpu, d.milli_cpu);
        bound(self.memory, d.memory);
        bound(self.ephemeral_storage, d.ephemeral_storage);
        for (name, want) in &d.scalars {
            bound(self.scalars.get(name).copied().unwrap_or(0), *want);
        }
        res.min(self.pods)
    }

    /// `SubResource(d × k)`, each field clamped at zero; scalars only where present.
    pub fn sub_times(&mut self, d: &Resources, k: i64) {
        let sub = |have: i64, want: i64| have.wrapping_sub(want.wrapping_mul(k)).max(0);
        self.milli_cpu = sub(self.milli_cpu, d.milli_cpu);
        self.memory = sub(self.memory, d.memory);
        self.ephemeral_storage = sub(self.ephemeral_storage, d.ephemeral_storage);
        self.pods = sub(self.pods, d.pods);
        for (name, want) in &d.scalars {
            if let Some(have) = self.scalars.get_mut(name) {
                *have = sub(*have, *want);
            }
        }
    }

    /// One replica's demand: its request plus one pod.
    fn demand(request: Option<&ResourceList>) -> Resources {
        let mut r = Resources::default();
        for (name, q) in request.into_iter().flatten() {
            r.add_quantity(name, &request_qty(q));
        }
        r.pods = 1;
        r
    }
}

/// `IsScalarResourceName`: extended, hugepages, `kubernetes.io/`-prefixed or attachable
/// volume resources.
pub fn is_scalar_resource_name(name: &str) -> bool {
    let prefixed_native = name.contains("kubernetes.io/");
    let native = !name.contains('/') || prefixed_native;
    let extended =
        !native && !name.starts_with("requests.") && is_label_key(&format!("requests.{name}"));
    extended
        || name.starts_with("hugepages-")
        || prefixed_native
        || name.starts_with("attachable-volumes-")
}

/// Identical model nodes: `count` nodes of capacity `node`, in grade order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeGroup {
    pub node: Resources,
    pub count: i64,
}

/// `buildModelNodes`: per grade present in both the models and the modelings, that many
/// nodes with the models' minimums as capacity (and 110 pods).
pub fn model_nodes(cluster: &Cluster) -> Result<Vec<NodeGroup>, ModelError> {
    let rs = cluster
        .status
        .as_ref()
        .and_then(|s| s.resource_summary.as_ref())
        .ok_or(ModelError::NoSummary)?;
    if cluster.spec.resource_models.is_empty() {
        return Err(ModelError::NoModels);
    }
    let mut caps: BTreeMap<u32, BTreeMap<&str, Quantity>> = BTreeMap::new();
    for m in &cluster.spec.resource_models {
        let mut tmpl: BTreeMap<&str, Quantity> = BTreeMap::new();
        for r in &m.ranges {
            tmpl.insert(&r.name, qty(&r.min));
        }
        tmpl.insert(
            "pods",
            Quantity::from_i64(MAX_PODS_PER_MODEL_NODE, Format::DecimalSI),
        );
        caps.insert(m.grade, tmpl);
    }
    let mut counts: BTreeMap<u32, i64> = BTreeMap::new();
    for a in &rs.allocatable_modelings {
        if a.count < 0 {
            return Err(ModelError::NegativeCount(a.grade));
        }
        let e = counts.entry(a.grade).or_default();
        *e = e.wrapping_add(a.count);
    }
    let mut groups = Vec::new();
    for (grade, tmpl) in caps {
        let count = counts.get(&grade).copied().unwrap_or(0);
        if count == 0 {
            continue;
        }
        let mut node = Resources::default();
        for (name, q) in &tmpl {
            node.add_quantity(name, q);
        }
        groups.push(NodeGroup { node, count });
    }
    Ok(groups)
}

/// Replicas of one template that fit on the model nodes (first fit, one replica at a time,
/// which sums each node's fit), capped at `i32::MAX` like the reference's simulation.
pub fn max_replicas_by_models(
    cluster: &Cluster,
    req: &ReplicaRequirements,
    assumed: &[AssumedWorkload],
) -> Result<i64, ModelError> {
    let mut nodes = model_nodes(cluster)?;
    place_assumed(&mut nodes, assumed);
    let d = Resources::demand(Some(&req.resource_request));
    let total = nodes.iter().fold(0i64, |s, g| {
        s.saturating_add(g.node.max_divided(&d).max(0).saturating_mul(g.count))
    });
    Ok(total.min(i64::from(i32::MAX)))
}

/// Complete component sets that fit on the model nodes, at most `upper`.
pub fn max_sets_by_models(
    cluster: &Cluster,
    components: &[Component],
    upper: i32,
    assumed: &[AssumedWorkload],
) -> Result<i32, ModelError> {
    let mut nodes = model_nodes(cluster)?;
    place_assumed(&mut nodes, assumed);
    Ok(simulate_sets(&mut nodes, &demands_of(components), upper))
}

fn demands_of(components: &[Component]) -> Vec<(Resources, i32)> {
    components
        .iter()
        .map(|c| {
            (
                Resources::demand(c.replica_requirements.as_ref().map(|r| &r.resource_request)),
                c.replicas,
            )
        })
        .collect()
}

/// Each assumed workload placed once, first fit, before anything is counted; what a workload
/// that does not fit whole placed stays placed, as in the reference.
fn place_assumed(nodes: &mut Vec<NodeGroup>, assumed: &[AssumedWorkload]) {
    for a in assumed {
        if !a.components.is_empty() {
            simulate_sets(nodes, &demands_of(&a.components), 1);
        }
    }
}

/// `SchedulingSimulator.SimulateScheduling`: place whole sets first fit until one component
/// no longer fits or `upper` sets are placed. Nodes are kept as runs of identical nodes, so
/// large node counts cost nothing; the result equals node-by-node placement.
pub fn simulate_sets(
    nodes: &mut Vec<NodeGroup>,
    components: &[(Resources, i32)],
    upper: i32,
) -> i32 {
    let mut sets = 0;
    while sets < upper {
        if !components
            .iter()
            .all(|(d, replicas)| place(nodes, d, i64::from(*replicas)))
        {
            break;
        }
        sets += 1;
    }
    sets
}

/// First-fit placement of `replicas` copies of `d`; whether all were placed.
fn place(nodes: &mut Vec<NodeGroup>, d: &Resources, mut replicas: i64) -> bool {
    if replicas == 0 {
        return true;
    }
    let mut i = 0;
    while i < nodes.len() {
        // Negative fits only arise from negative model minimums, which validation forbids.
        let fit = nodes[i].node.max_divided(d).max(0);
        if fit == 0 {
            i += 1;
            continue;
        }
        if replicas < 0 {
            // The reference "places" a negative count on the first node with room.
            split_off_one(nodes, i, d, replicas);
            return true;
        }
        let whole = replicas / fit;
        if whole >= nodes[i].count {
            let g = &mut nodes[i];
            g.node.sub_times(d, fit);
            replicas -= fit * g.count;
            if replicas == 0 {
                merge_runs(nodes);
                return true;
            }
            i += 1;
            continue;
        }
        let rest = replicas - whole * fit;
        let g = nodes[i].clone();
        let mut runs = Vec::with_capacity(3);
        if whole > 0 {
            let mut full = g.node.clone();
            full.sub_times(d, fit);
            runs.push(NodeGroup {
                node: full,
                count: whole,
            });
        }
        let mut left = g.count - whole;
        if rest > 0 {
            let mut partial = g.node.clone();
            partial.sub_times(d, rest);
            runs.push(NodeGroup {
                node: partial,
                count: 1,
            });
            left -= 1;
        }
        if left > 0 {
            runs.push(NodeGroup {
                node: g.node,
                count: left,
            });
        }
        nodes.splice(i..=i, runs);
        merge_runs(nodes);
        return true;
    }
    false
}

fn split_off_one(nodes: &mut Vec<NodeGroup>, i: usize, d: &Resources, k: i64) {
    let g = nodes[i].clone();
    let mut one = g.node.clone();
    one.sub_times(d, k);
    let mut runs = vec![NodeGroup {
        node: one,
        count: 1,
    }];
    if g.count > 1 {
        runs.push(NodeGroup {
            node: g.node,
            count: g.count - 1,
        });
    }
    nodes.splice(i..=i, runs);
}

/// Join adjacent runs of identical nodes.
fn merge_runs(nodes: &mut Vec<NodeGroup>) {
    let mut out: Vec<NodeGroup> = Vec::with_capacity(nodes.len());
    for g in nodes.drain(..) {
        match out.last_mut() {
            Some(last) if last.node == g.node => last.count = last.count.saturating_add(g.count),
            _ => out.push(g),
        }
    }
    *nodes = out;
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity as KQ;
    use karmada_api::cluster::{
        AllocatableModeling, ClusterSpec, ClusterStatus, ResourceModel, ResourceModelRange,
    };
    use karmada_api::work::ComponentReplicaRequirements;

    fn rl(v: &[(&str, &str)]) -> ResourceList {
        v.iter()
            .map(|(k, q)| (k.to_string(), KQ(q.to_string())))
            .collect()
    }

    fn summary(
        alloc: &[(&str, &str)],
        allocated: &[(&str, &str)],
        allocating: &[(&str, &str)],
    ) -> ResourceSummary {
        ResourceSummary {
            allocatable: rl(alloc),
            allocated: rl(allocated),
            allocating: rl(allocating),
            allocatable_modelings: vec![],
        }
    }

    fn cluster(rs: Option<ResourceSummary>) -> Cluster {
        let mut c = Cluster::new("m1", ClusterSpec::default());
        c.status = Some(ClusterStatus {
            resource_summary: rs,
            ..Default::default()
        });
        c
    }

    /// Models given as ranges per grade (name, min); counts per grade.
    fn modeled(models: &[(u32, &[(&str, &str)])], counts: &[(u32, i64)]) -> Cluster {
        let mut c = cluster(Some(ResourceSummary {
            allocatable_modelings: counts
                .iter()
                .map(|(g, n)| AllocatableModeling {
                    grade: *g,
                    count: *n,
                })
                .collect(),
            ..Default::default()
        }));
        c.spec.resource_models = models
            .iter()
            .map(|(g, ranges)| ResourceModel {
                grade: *g,
                ranges: ranges
                    .iter()
                    .map(|(n, min)| ResourceModelRange {
                        name: n.to_string(),
                        min: KQ(min.to_string()),
                        max: KQ("9223372036854775807".into()),
                    })
                    .collect(),
            })
            .collect();
        c
    }

    fn req(v: &[(&str, &str)]) -> ReplicaRequirements {
        ReplicaRequirements {
            resource_request: rl(v),
            ..Default::default()
        }
    }

    fn comp(name: &str, replicas: i32, v: &[(&str, &str)]) -> Component {
        Component {
            name: name.into(),
            replicas,
            replica_requirements: Some(ComponentReplicaRequirements {
                resource_request: rl(v),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn spec_example_single_template() {
        let c = cluster(Some(summary(
            &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")],
            &[("cpu", "2"), ("memory", "4Gi"), ("pods", "20")],
            &[],
        )));
        let ge = GeneralEstimator::default();
        assert_eq!(
            ge.max_replicas(&c, Some(&req(&[("cpu", "500m"), ("memory", "1Gi")]))),
            12
        );
        assert_eq!(ge.max_replicas(&c, None), 90);
        assert_eq!(ge.max_replicas(&c, Some(&req(&[]))), 90);
        assert_eq!(
            ge.max_replicas(&c, Some(&req(&[("nvidia.com/gpu", "1")]))),
            0
        );
    }

    /// Through the trait, answers come from the memo while a summary is unchanged and from a
    /// fresh parse as soon as its text changes, and always equal the direct computation.
    #[test]
    fn memo_follows_summary_changes() {
        let ge = GeneralEstimator::default();
        let r = req(&[("cpu", "500m"), ("memory", "1Gi")]);
        let resource = Default::default();
        let ask = |c: &Cluster| {
            let request = EstimateRequest {
                ask: Ask::Replicas,
                resource: &resource,
                replica_requirements: Some(&r),
                components: &[],
                namespace: "",
                assumed: None,
            };
            let fut = ge.estimate(std::slice::from_ref(&c), request);
            let mut fut = std::pin::pin!(fut);
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            match fut.as_mut().poll(&mut cx) {
                std::task::Poll::Ready(v) => v.unwrap(),
                std::task::Poll::Pending => unreachable!("the general estimator is synchronous"),
            }
        };
        let mut c = cluster(Some(summary(
            &[("cpu", "8"), ("memory", "16Gi"), ("pods", "110")],
            &[("cpu", "2"), ("memory", "4Gi"), ("pods", "20")],
            &[],
        )));
        assert_eq!(ask(&c), vec![("m1".to_string(), 12)]);
        assert_eq!(ask(&c), vec![("m1".to_string(), 12)]);
        let rs = c
            .status
            .as_mut()
            .unwrap()
            .resource_summary
            .as_mut()
            .unwrap();
        rs.allocating = rl(&[("cpu", "4")]);
        assert_eq!(ge.max_replicas(&c, Some(&r)), 4);
        assert_eq!(ask(&c), vec![("m1".to_string(), 4)]);
        c.status.as_mut().unwrap().resource_summary = None;
        assert_eq!(ask(&c), vec![("m1".to_string(), 0)]);
    }

    /// The shared path answers from the address memo while the same `Arc` is presented,
    /// parses (or reuses by text) for a new `Arc`, and sweeps entries nobody else holds.
    #[test]
    fn shared_memo_follows_arcs() {
        let ge = GeneralEstimator::default();
        let r = req(&[("cpu", "500m"), ("memory", "1Gi")]);
        let resource = Default::default();
        let ask = |shared: &[&Arc<Cluster>], sets: bool| {
            let plain: Vec<&Cluster> = shared.iter().map(|c| c.as_ref()).collect();
            let comps = [comp("c", 2, &[("cpu", "1")])];
            let request = EstimateRequest {
                ask: if sets {
                    Ask::ComponentSets
                } else {
                    Ask::Replicas
                },
                resource: &resource,
                replica_requirements: Some(&r),
                components: if sets { &comps } else { &[] },
                namespace: "",
                assumed: None,
            };
            let fut = ge.estimate_shared(&plain, shared, request);
            let mut fut = std::pin::pin!(fut);
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            match fut.as_mut().poll(&mut cx) {
                std::task::Poll::Ready(Ok(SharedEstimates::InOrder(v))) => v,
                other => panic!("{other:?}"),
            }
        };
        let base = cluster(Some(summary(
            &[
                ("cpu", "8"),
                ("memory", "16Gi"),
                ("pods", "110"),
                ("nvidia.com/gpu", "2"),
            ],
            &[("cpu", "2"), ("memory", "4Gi"), ("pods", "20")],
            &[],
        )));
        let a = Arc::new(base.clone());
        assert_eq!(ask(&[&a], false), vec![12]);
        assert_eq!(ask(&[&a], false), vec![12]);
        assert_eq!(ask(&[&a], true), vec![3]);
        // A new object with another summary is parsed afresh.
        let mut changed = base.clone();
        let rs = changed
            .status
            .as_mut()
            .unwrap()
            .resource_summary
            .as_mut()
            .unwrap();
        rs.allocating = rl(&[("cpu", "4")]);
        let b = Arc::new(changed);
        assert_eq!(ask(&[&b], false), vec![4]);
        assert_eq!(ask(&[&a], false), vec![12]);
        let none = Arc::new(cluster(None));
        assert_eq!(ask(&[&none], false), vec![0]);
        // Dropped clusters leave the memo once it outgrows its limit.
        drop((a, b, none));
        let many: Vec<Arc<Cluster>> = (0..200).map(|_| Arc::new(base.clone())).collect();
        let refs: Vec<&Arc<Cluster>> = many.iter().collect();
        for chunk in refs.chunks(10) {
            assert!(ask(chunk, false).iter().all(|n| *n == 12));
        }
        let memo = ge.memo.lock().unwrap();
        assert!(memo.slab.len() <= 200 && !memo.slab.is_empty());
        assert_eq!(memo.slab.len(), memo.shared.len());
        assert!(memo.slab.iter().all(|(c, _)| Arc::strong_count(c) == 2));
    }

    #[test]
    fn no_summary_or_no_pods_gives_zero() {
        let ge = GeneralEstimator::default();
        assert_eq!(ge.max_replicas(&cluster(None), None), 0);
        assert_eq!(
            ge.max_replicas(&cluster(Some(ResourceSummary::default())), None),
            0
        );
        let full = summary(&[("pods", "10")], &[("pods", "10")], &[]);
        assert_eq!(ge.max_replicas(&cluster(Some(full)), None), 0);
    }

    /// Upstream `TestGetAllowedPodNumber`-style cases.
    #[test]
    fn allowed_pods_cases() {
        assert_eq!(
            allowed_pods(&summary(
                &[("pods", "110")],
                &[("pods", "20")],
                &[("pods", "10")]
            )),
            80
        );
        assert_eq!(
            allowed_pods(&summary(&[("pods", "10")], &[("pods", "20")], &[])),
            0
        );
        assert_eq!(allowed_pods(&summary(&[("cpu", "1")], &[], &[])), 0);
        assert_eq!(allowed_pods(&ResourceSummary::default()), 0);
    }

    #[test]
    fn summary_based_cases() {
        let rs = summary(
            &[("cpu", "4"), ("memory", "8Gi"), ("pods", "100")],
            &[("cpu", "1")],
            &[("memory", "2Gi")],
        );
        assert_eq!(max_replicas_by_summary(&rs, &req(&[("cpu", "1")])), 3);
        assert_eq!(max_replicas_by_summary(&rs, &req(&[("cpu", "300m")])), 10);
        assert_eq!(max_replicas_by_summary(&rs, &req(&[("memory", "1Gi")])), 6);
        assert_eq!(
            max_replicas_by_summary(&rs, &req(&[("cpu", "1"), ("memory", "4Gi")])),
            1
        );
        assert_eq!(max_replicas_by_summary(&rs, &req(&[("gpu.io/x", "1")])), 0);
        assert_eq!(max_replicas_by_summary(&rs, &req(&[])), i64::MAX);
        // A zero request is skipped.
        assert_eq!(
            max_replicas_by_summary(&rs, &req(&[("gpu.io/x", "0")])),
            i64::MAX
        );
        // Exhausted resource.
        let rs = summary(&[("cpu", "1")], &[("cpu", "1")], &[]);
        assert_eq!(max_replicas_by_summary(&rs, &req(&[("cpu", "100m")])), 0);
    }

    /// Upstream `TestGetMaximumReplicasBasedOnResourceModels`, re-expressed.
    #[test]
    fn replicas_by_models_upstream_table() {
        let cpu3: &[(u32, &[(&str, &str)])] = &[
            (0, &[("cpu", "0")]),
            (1, &[("cpu", "1")]),
            (2, &[("cpu", "2")]),
        ];
        let cpu_mem: &[(u32, &[(&str, &str)])] = &[
            (0, &[("cpu", "0"), ("memory", "0")]),
            (1, &[("cpu", "1"), ("memory", "1Gi")]),
            (2, &[("cpu", "2"), ("memory", "2Gi")]),
        ];
        let one_each = [(0, 1), (1, 1), (2, 1)];
        assert_eq!(
            max_replicas_by_models(
                &cluster(Some(Default::default())),
                &req(&[("cpu", "1")]),
                &[]
            ),
            Err(ModelError::NoModels)
        );
        assert_eq!(
            max_replicas_by_models(&modeled(cpu3, &one_each), &req(&[("cpu", "1.5")]), &[]),
            Ok(1)
        );
        assert_eq!(
            max_replicas_by_models(&modeled(cpu3, &one_each), &req(&[("cpu", "3")]), &[]),
            Ok(0)
        );
        assert_eq!(
            max_replicas_by_models(
                &modeled(cpu_mem, &one_each),
                &req(&[("cpu", "1"), ("memory", "1.5Gi")]),
                &[]
            ),
            Ok(1)
        );
        assert_eq!(
            max_replicas_by_models(
                &modeled(cpu_mem, &one_each),
                &req(&[("cpu", "1"), ("memory", "2.5Gi")]),
                &[]
            ),
            Ok(0)
        );
        assert_eq!(
            max_replicas_by_models(&modeled(cpu3, &[(1, -1)]), &req(&[("cpu", "1")]), &[]),
            Err(ModelError::NegativeCount(1))
        );
    }

    #[test]
    fn models_bound_but_do_not_replace_pods_and_fall_back_on_error() {
        let mut c = modeled(
            &[(0, &[("cpu", "0")]), (1, &[("cpu", "4")])],
            &[(0, 3), (1, 5)],
        );
        let rs = c
            .status
            .as_mut()
            .unwrap()
            .resource_summary
            .as_mut()
            .unwrap();
        rs.allocatable = rl(&[("pods", "12"), ("cpu", "1")]);
        let r = req(&[("cpu", "1")]);
        // Models: 5 nodes × 4 = 20; pods 12 → 12. The summary (1 cpu) is not applied.
        assert_eq!(GeneralEstimator::default().max_replicas(&c, Some(&r)), 12);
        // Gate off: the summary decides.
        let off = GeneralEstimator::new(false);
        assert_eq!(off.max_replicas(&c, Some(&r)), 1);
        // Negative counts make the model path fail: summary again.
        c.status
            .as_mut()
            .unwrap()
            .resource_summary
            .as_mut()
            .unwrap()
            .allocatable_modelings[0]
            .count = -1;
        assert_eq!(GeneralEstimator::default().max_replicas(&c, Some(&r)), 1);
    }

    #[test]
    fn model_pod_capacity_is_110_and_large_counts_are_cheap() {
        let c = modeled(
            &[(0, &[("cpu", "0"), ("pods", "5")])],
            &[(0, 1_000_000_000)],
        );
        // cpu demand 0 is unbounded, pods 110 per node: 1.1e11 replicas, capped at i32::MAX.
        assert_eq!(
            max_replicas_by_models(&c, &req(&[]), &[]),
            Ok(i64::from(i32::MAX))
        );
    }

    /// Upstream `TestGetMaximumSetsBasedOnResourceModels`, re-expressed.
    #[test]
    fn sets_by_models_upstream_table() {
        const GPU: &str = "nvidia.com/gpu";
        let c3: &[(u32, &[(&str, &str)])] = &[
            (0, &[("cpu", "500m")]),
            (1, &[("cpu", "1000m")]),
            (2, &[("cpu", "2000m")]),
        ];
        let counts3 = [(0, 5), (1, 0), (2, 10)];
        let mut none = cluster(Some(Default::default()));
        none.spec.resource_models.clear();
        assert_eq!(
            max_sets_by_models(&none, &[comp("w", 1, &[("cpu", "1500m")])], 100, &[]),
            Err(ModelError::NoModels)
        );
        assert_eq!(
            max_sets_by_models(&modeled(c3, &counts3), &[comp("n", 1, &[])], 100, &[]),
            Ok(100)
        );
        assert_eq!(
            max_sets_by_models(
                &modeled(c3, &counts3),
                &[comp("c", 1, &[("cpu", "1500m")])],
                100,
                &[]
            ),
            Ok(10)
        );
        let gpu: &[(u32, &[(&str, &str)])] = &[
            (0, &[("cpu", "1000m"), ("memory", "2Gi"), (GPU, "0")]),
            (1, &[("cpu", "2000m"), ("memory", "4Gi"), (GPU, "1")]),
            (2, &[("cpu", "4000m"), ("memory", "8Gi"), (GPU, "2")]),
        ];
        let w = comp(
            "gpu-worker",
            2,
            &[("cpu", "2000m"), ("memory", "4Gi"), (GPU, "1")],
        );
        assert_eq!(
            max_sets_by_models(&modeled(gpu, &[(0, 4), (1, 3), (2, 2)]), &[w], 100, &[]),
            Ok(3)
        );
        let c2: &[(u32, &[(&str, &str)])] = &[(0, &[("cpu", "1000m")]), (1, &[("cpu", "2000m")])];
        assert_eq!(
            max_sets_by_models(
                &modeled(c2, &[(0, 10), (1, 10)]),
                &[comp("h", 1, &[("cpu", "3000m")])],
                100,
                &[]
            ),
            Ok(0)
        );
        let jm = comp("jobmanager", 1, &[("cpu", "1"), ("memory", "2Gi")]);
        let tm = comp("taskmanager", 3, &[("cpu", "3"), ("memory", "10Gi")]);
        let jmtm: &[(u32, &[(&str, &str)])] = &[
            (0, &[("cpu", "1000m"), ("memory", "2Gi")]),
            (1, &[("cpu", "3000m"), ("memory", "10Gi")]),
            (2, &[("cpu", "4000m"), ("memory", "12Gi")]),
        ];
        assert_eq!(
            max_sets_by_models(
                &modeled(jmtm, &[(0, 2), (1, 6), (2, 3)]),
                &[jm.clone(), tm.clone()],
                100,
                &[]
            ),
            Ok(3)
        );
        let four: &[(u32, &[(&str, &str)])] = &[
            (0, &[("cpu", "1000m"), ("memory", "2Gi")]),
            (1, &[("cpu", "2000m"), ("memory", "4Gi")]),
            (2, &[("cpu", "3000m"), ("memory", "6Gi")]),
            (3, &[("cpu", "8000m"), ("memory", "12Gi")]),
        ];
        let cache = comp("cache", 1, &[("cpu", "500m"), ("memory", "1Gi")]);
        assert_eq!(
            max_sets_by_models(
                &modeled(four, &[(0, 2), (1, 3), (2, 2), (3, 6)]),
                &[jm, tm, cache],
                100,
                &[]
            ),
            Ok(2)
        );
    }

    /// Upstream `TestGetMaxAvailableComponentSetsGeneral`, re-expressed.
    #[test]
    fn component_sets_upstream_table() {
        let ge = GeneralEstimator::default();
        assert_eq!(ge.max_component_sets(&cluster(None), &[]), 0);
        let full = summary(&[("pods", "10")], &[("pods", "10")], &[]);
        assert_eq!(ge.max_component_sets(&cluster(Some(full)), &[]), 0);
        let ten = summary(&[("pods", "10")], &[], &[]);
        assert_eq!(ge.max_component_sets(&cluster(Some(ten)), &[]), 10);
        let basic = summary(
            &[("pods", "100"), ("cpu", "10"), ("memory", "8Gi")],
            &[("pods", "20"), ("cpu", "0"), ("memory", "2Gi")],
            &[],
        );
        let c = cluster(Some(basic));
        assert_eq!(
            ge.max_component_sets(
                &c,
                &[
                    comp("jm", 1, &[("cpu", "1")]),
                    comp("tm", 2, &[("cpu", "1.5")])
                ]
            ),
            2
        );
        assert_eq!(
            ge.max_component_sets(
                &c,
                &[
                    comp("jm", 1, &[("cpu", "1"), ("memory", "2Gi")]),
                    comp("tm", 2, &[("cpu", "2000m"), ("memory", "2Gi")])
                ]
            ),
            1
        );
        let pods3 = summary(
            &[("pods", "3"), ("cpu", "100"), ("memory", "1Ti")],
            &[],
            &[],
        );
        assert_eq!(
            ge.max_component_sets(
                &cluster(Some(pods3)),
                &[comp("s", 3, &[("cpu", "10m"), ("memory", "1Mi")])]
            ),
            1
        );
        let gpu = summary(
            &[
                ("pods", "20"),
                ("cpu", "40"),
                ("memory", "64Gi"),
                ("nvidia.com/gpu", "8"),
            ],
            &[
                ("pods", "0"),
                ("cpu", "0"),
                ("memory", "0Gi"),
                ("nvidia.com/gpu", "0"),
            ],
            &[],
        );
        let w = comp(
            "gpu-worker",
            2,
            &[("cpu", "4"), ("memory", "8Gi"), ("nvidia.com/gpu", "1")],
        );
        assert_eq!(ge.max_component_sets(&cluster(Some(gpu)), &[w]), 4);
    }

    /// The component-set path's quirk: decimal-format memory is counted in milli-units, BinarySI in units, and a
    /// subtraction keeps the left operand's format.
    #[test]
    fn component_sets_format_quirk() {
        let ge = GeneralEstimator::default();
        // 16G allocatable (DecimalSI: milli-bytes) vs a 1Gi request (BinarySI: bytes): the
        // request looks 1000 times smaller than it is.
        let c = cluster(Some(summary(
            &[("pods", "1000"), ("memory", "16G")],
            &[],
            &[],
        )));
        assert_eq!(
            ge.max_component_sets(&c, &[comp("x", 1, &[("memory", "1Gi")])]),
            1000
        );
        // The single-template path uses Value() on both sides: 14 replicas.
        let r = req(&[("memory", "1Gi")]);
        assert_eq!(ge.max_replicas(&c, Some(&r)), 14);
        // A zero left operand takes the right's format: 0 - 1Gi is BinarySI.
        let z = Quantity::parse("0")
            .unwrap()
            .sub(&Quantity::parse("1Gi").unwrap())
            .unwrap();
        assert_eq!(z.format(), Format::BinarySI);
        assert_eq!(quantity_as_int(&z), -(1 << 30));
    }

    /// Upstream `TestMaxAvailableReplicas`, `TestMaxAvailableReplicasGeneral`,
    /// `TestMaxAvailableReplicasGeneralWithResourceModels` and
    /// `TestGetMaximumReplicasBasedOnClusterSummary`, without the assumed-workload cases
    /// (SchedulingOvercommitProtection is not implemented).
    #[test]
    fn max_replicas_upstream_tables() {
        let ge = GeneralEstimator::default();
        let base = summary(
            &[("cpu", "4"), ("memory", "8Gi"), ("pods", "100")],
            &[("cpu", "1"), ("memory", "2Gi"), ("pods", "20")],
            &[],
        );
        let r = req(&[("cpu", "500m"), ("memory", "1Gi")]);
        assert_eq!(ge.max_replicas(&cluster(Some(base.clone())), Some(&r)), 6);
        assert_eq!(
            ge.max_replicas(&cluster(None), Some(&req(&[("cpu", "1")]))),
            0
        );
        let full = summary(&[("pods", "10")], &[("pods", "10")], &[]);
        assert_eq!(ge.max_replicas(&cluster(Some(full)), None), 0);
        let ten = summary(&[("pods", "10")], &[], &[]);
        assert_eq!(ge.max_replicas(&cluster(Some(ten)), None), 10);

        let mut c = modeled(
            &[(0, &[("cpu", "0")]), (1, &[("cpu", "1")])],
            &[(0, 0), (1, 3)],
        );
        c.status
            .as_mut()
            .unwrap()
            .resource_summary
            .as_mut()
            .unwrap()
            .allocatable = rl(&[("pods", "100"), ("cpu", "3")]);
        assert_eq!(ge.max_replicas(&c, Some(&req(&[("cpu", "500m")]))), 6);

        let no_pods = |a: &[(&str, &str)], b: &[(&str, &str)]| summary(a, b, &[]);
        let rs = no_pods(
            &[("cpu", "4"), ("memory", "8Gi")],
            &[("cpu", "1"), ("memory", "2Gi")],
        );
        assert_eq!(max_replicas_by_summary(&rs, &r), 6);
        let rs = no_pods(
            &[("cpu", "4"), ("memory", "2Gi")],
            &[("cpu", "1"), ("memory", "1.5Gi")],
        );
        assert_eq!(max_replicas_by_summary(&rs, &r), 0);
    }

    /// `pkg/util/resource_test.go`-style checks of the resource arithmetic.
    #[test]
    fn resources_max_divided_and_sub() {
        let node = Resources {
            milli_cpu: 4000,
            memory: 8 << 30,
            pods: 10,
            scalars: [("nvidia.com/gpu".to_string(), 3)].into(),
            ..Default::default()
        };
        let d = Resources {
            milli_cpu: 1500,
            memory: 1 << 30,
            pods: 1,
            ..Default::default()
        };
        assert_eq!(node.max_divided(&d), 2);
        let gpu = Resources {
            scalars: [("nvidia.com/gpu".to_string(), 2)].into(),
            pods: 1,
            ..Default::default()
        };
        assert_eq!(node.max_divided(&gpu), 1);
        let other = Resources {
            scalars: [("x.io/y".to_string(), 1)].into(),
            pods: 1,
            ..Default::default()
        };
        assert_eq!(node.max_divided(&other), 0);
        assert_eq!(node.max_divided(&Resources::default()), 10);
        let mut n = node.clone();
        n.sub_times(&d, 3);
        assert_eq!((n.milli_cpu, n.memory, n.pods), (0, 5 << 30, 7));
        n.sub_times(&other, 1);
        assert!(!n.scalars.contains_key("x.io/y"));
        let demand = Resources::demand(Some(&rl(&[
            ("cpu", "100m"),
            ("pods", "7"),
            ("custom", "1"),
        ])));
        assert_eq!(
            (demand.milli_cpu, demand.pods, demand.scalars.len()),
            (100, 1, 0)
        );
    }

    #[test]
    fn scalar_resource_names() {
        assert!(is_scalar_resource_name("nvidia.com/gpu"));
        assert!(is_scalar_resource_name("hugepages-2Mi"));
        assert!(is_scalar_resource_name("kubernetes.io/foo"));
        assert!(is_scalar_resource_name("attachable-volumes-aws-ebs"));
        assert!(!is_scalar_resource_name("pods"));
        assert!(!is_scalar_resource_name("custom"));
        assert!(!is_scalar_resource_name("requests.example.com/x"));
    }

    #[test]
    fn simulator_first_fit_matches_node_by_node() {
        // Two 4-cpu nodes; components of 3 cpu then 1 cpu: each set uses one node fully.
        let node = Resources {
            milli_cpu: 4000,
            pods: 110,
            ..Default::default()
        };
        let mut nodes = vec![NodeGroup { node, count: 2 }];
        let d = |m| Resources {
            milli_cpu: m,
            pods: 1,
            ..Default::default()
        };
        assert_eq!(
            simulate_sets(&mut nodes, &[(d(3000), 1), (d(1000), 1)], 10),
            2
        );
        // 5 replicas of 1.5 cpu on 3 nodes of 4: 2 + 2 + 1.
        let node = Resources {
            milli_cpu: 4000,
            pods: 110,
            ..Default::default()
        };
        let mut nodes = vec![NodeGroup { node, count: 3 }];
        assert!(place(&mut nodes, &d(1500), 5));
        let left: Vec<(i64, i64)> = nodes.iter().map(|g| (g.node.milli_cpu, g.count)).collect();
        assert_eq!(left, vec![(1000, 2), (2500, 1)]);
        assert!(!place(&mut nodes, &d(1500), 2));
    }

    #[test]
    fn estimator_trait_answers_every_cluster_and_rejects_bad_requests() {
        let a = cluster(Some(summary(&[("pods", "5")], &[], &[])));
        let mut b = cluster(None);
        b.metadata.name = Some("m2".into());
        let clusters = [&a, &b];
        let resource = Default::default();
        let r = req(&[("cpu", "1")]);
        let request = EstimateRequest {
            ask: Ask::Replicas,
            resource: &resource,
            replica_requirements: None,
            components: &[],
            namespace: "",
            assumed: None,
        };
        let ge = GeneralEstimator::default();
        let got = futures_lite_block_on(ge.estimate(&clusters, request)).unwrap();
        assert_eq!(got, vec![("m1".to_string(), 5), ("m2".to_string(), 0)]);
        let mut bad = r.clone();
        bad.resource_request.insert("cpu".into(), KQ("1x".into()));
        let request = EstimateRequest {
            replica_requirements: Some(&bad),
            ..request
        };
        let err = futures_lite_block_on(ge.estimate(&clusters, request)).unwrap_err();
        assert!(
            err.0
                .starts_with("spec.replicaRequirements.resourceRequest[cpu]: invalid quantity"),
            "{err}"
        );
        let comps = [comp("c", 2, &[])];
        let request = EstimateRequest {
            ask: Ask::ComponentSets,
            replica_requirements: None,
            components: &comps,
            ..request
        };
        let got = futures_lite_block_on(ge.estimate(&clusters, request)).unwrap();
        // 5 free pods, 2 pods per set.
        assert_eq!(got, vec![("m1".to_string(), 2), ("m2".to_string(), 0)]);
    }

    /// The estimator's futures are ready at once: poll once with a no-op waker.
    fn futures_lite_block_on<T>(f: BoxFuture<'_, T>) -> T {
        let waker = std::task::Waker::noop();
        let mut cx = std::task::Context::from_waker(waker);
        let mut f = f;
        match f.as_mut().poll(&mut cx) {
            std::task::Poll::Ready(v) => v,
            std::task::Poll::Pending => panic!("general estimator future was not ready"),
        }
    }

    fn assumed(components: Vec<Component>) -> AssumedWorkload {
        AssumedWorkload {
            namespace: "ns".into(),
            components,
        }
    }

    /// Both trait paths for `clusters`, with `on` assumed per cluster name.
    fn ask_with(
        clusters: &[&Cluster],
        r: Option<&ReplicaRequirements>,
        components: &[Component],
        on: &[(&str, Vec<AssumedWorkload>)],
    ) -> Vec<i32> {
        let map: crate::estimator::AssumedByCluster =
            on.iter().map(|(c, a)| (c.to_string(), a.clone())).collect();
        let resource = Default::default();
        let request = EstimateRequest {
            ask: if components.is_empty() {
                Ask::Replicas
            } else {
                Ask::ComponentSets
            },
            resource: &resource,
            replica_requirements: r,
            components,
            namespace: "ns",
            assumed: Some(&map),
        };
        let ge = GeneralEstimator::default();
        futures_lite_block_on(ge.estimate(clusters, request))
            .unwrap()
            .into_iter()
            .map(|(_, n)| n)
            .collect()
    }

    /// The reference's cases for one template: the assumed replicas' pods and resources are
    /// taken off as if being allocated.
    #[test]
    fn assumed_workloads_are_allocating_for_one_template() {
        let c = cluster(Some(summary(
            &[("cpu", "4"), ("memory", "8Gi"), ("pods", "100")],
            &[("cpu", "1"), ("memory", "2Gi"), ("pods", "20")],
            &[],
        )));
        let r = req(&[("cpu", "500m"), ("memory", "1Gi")]);
        assert_eq!(ask_with(&[&c], Some(&r), &[], &[]), [6]);
        let two = assumed(vec![comp("w", 2, &[("cpu", "500m"), ("memory", "1Gi")])]);
        assert_eq!(
            ask_with(&[&c], Some(&r), &[], &[("m1", vec![two.clone()])]),
            [4]
        );
        // Another cluster's assumptions are not this one's.
        assert_eq!(ask_with(&[&c], Some(&r), &[], &[("m2", vec![two])]), [6]);
        // Replicas 0 take nothing; no requirements take pods only.
        let pods_only = |n| AssumedWorkload {
            namespace: "ns".into(),
            components: vec![Component {
                name: "p".into(),
                replicas: n,
                replica_requirements: None,
            }],
        };
        assert_eq!(
            ask_with(&[&c], Some(&r), &[], &[("m1", vec![pods_only(0)])]),
            [6]
        );
        assert_eq!(
            ask_with(&[&c], None, &[], &[("m1", vec![pods_only(78)])]),
            [2]
        );
        assert_eq!(
            ask_with(&[&c], None, &[], &[("m1", vec![pods_only(90)])]),
            [0]
        );
        // Deducting a huge workload does not overflow.
        let huge = assumed(vec![comp("h", 10000, &[("memory", "1Ti")])]);
        assert_eq!(ask_with(&[&c], Some(&r), &[], &[("m1", vec![huge])]), [0]);
    }

    #[test]
    fn assumed_workloads_are_placed_on_model_nodes_first() {
        let c = modeled(&[(1, &[("cpu", "1")])], &[(1, 3)]);
        let r = req(&[("cpu", "500m")]);
        assert_eq!(max_replicas_by_models(&c, &r, &[]), Ok(6));
        let four = assumed(vec![comp("w", 4, &[("cpu", "500m")])]);
        assert_eq!(max_replicas_by_models(&c, &r, &[four]), Ok(2));
        // Sets on two nodes of 2 CPUs: two 1-CPU replicas assumed leave two sets of one.
        let c = modeled(&[(1, &[("cpu", "2")])], &[(1, 2)]);
        let set = [comp("a", 1, &[("cpu", "1")])];
        assert_eq!(max_sets_by_models(&c, &set, 100, &[]), Ok(4));
        let two = assumed(vec![comp("w", 2, &[("cpu", "1")])]);
        assert_eq!(max_sets_by_models(&c, &set, 100, &[two]), Ok(2));
        // An assumption that fits nowhere takes nothing.
        let big = assumed(vec![comp("w", 1, &[("cpu", "100")])]);
        assert_eq!(max_sets_by_models(&c, &set, 100, &[big]), Ok(4));
    }

    /// The reference's component-set cases: set = 1×1 CPU + 2×1.5 CPU (4 CPUs, 3 pods).
    #[test]
    fn assumed_workloads_are_taken_off_component_sets() {
        let set = vec![
            comp("jm", 1, &[("cpu", "1")]),
            comp("tm", 2, &[("cpu", "1.5")]),
        ];
        let with = |cpu: &str, pods: &str| {
            cluster(Some(summary(&[("cpu", cpu), ("pods", pods)], &[], &[])))
        };
        let pods_only = |n| Component {
            name: "p".into(),
            replicas: n,
            replica_requirements: None,
        };
        let c = with("10", "100");
        assert_eq!(ask_with(&[&c], None, &set, &[]), [2]);
        assert_eq!(
            ask_with(&[&c], None, &set, &[("m1", vec![assumed(set.clone())])]),
            [1]
        );
        let c8 = with("8", "100");
        assert_eq!(
            ask_with(
                &[&c8],
                None,
                &set,
                &[("m1", vec![assumed(vec![comp("x", 4, &[("cpu", "2")])])])]
            ),
            [0]
        );
        let few = with("100", "3");
        assert_eq!(
            ask_with(
                &[&few],
                None,
                &set,
                &[("m1", vec![assumed(vec![pods_only(3)])])]
            ),
            [0]
        );
        let c12 = with("12", "100");
        assert_eq!(
            ask_with(&[&c12], None, &set, &[("m1", vec![assumed(set.clone())])]),
            [2]
        );
        assert_eq!(
            ask_with(
                &[&c],
                None,
                &set,
                &[("m1", vec![assumed(vec![pods_only(3)])])]
            ),
            [2]
        );
        // Per cluster: only cluster a's assumption counts for a.
        let mut a = with("8", "100");
        a.metadata.name = Some("a".into());
        let mut b = with("8", "100");
        b.metadata.name = Some("b".into());
        let pair = vec![comp("w", 2, &[("cpu", "2")])];
        assert_eq!(
            ask_with(
                &[&a, &b],
                None,
                &pair,
                &[("a", vec![assumed(pair.clone())])]
            ),
            [1, 2]
        );
    }
}
