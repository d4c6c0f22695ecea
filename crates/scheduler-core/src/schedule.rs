//! The scheduling pipeline and the `clusterAffinities` term loop.
//!
//! [`Scheduler::schedule`] runs one attempt: filter → score → available replicas from every
//! estimator (minimum) → canonical order and groups → selection → replica
//! assignment. [`Scheduler::schedule_binding`] wraps it in the term loop that the daemon
//! and `simulate` both use, so that they share every line of the decision.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use karmada_api::cluster::Cluster;
use karmada_api::policy::SpreadFieldValue;
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus, TargetCluster};

use crate::assign;
use crate::detail::ClusterDetail;
use crate::error::{FitError, ScheduleError};
use crate::estimator::{
    Ask, AssumedByCluster, AssumptionSource, EstimateRequest, Estimator, SharedEstimates,
};
use crate::features::FeatureGates;
use crate::framework::{
    FilterContext, Framework, RegistryError, TargetIndex, WorkloadGroupIndex, placement_of,
};
use crate::observe::{FrameworkObserver, Step, StepGuard, StepObserver};
use crate::plugins::in_tree_registry;
use crate::prepared::Prepared;
use crate::snapshot::Snapshot;
use crate::spread::{self, GroupClustersInfo, Selection};
use crate::trace::{AttemptTrace, ClusterTrace, EstimatorTrace, GroupTrace, Trace, Verdict};

/// Knobs of the algorithm that come from flags.
#[derive(Clone, Debug, Default)]
pub struct ScheduleConfig {
    /// `--enable-empty-workload-propagation`: selected clusters that got no replicas are
    /// appended with 0.
    pub enable_empty_workload_propagation: bool,
    /// `--feature-gates`.
    pub gates: FeatureGates,
    /// `--reschedule-keeps-affinity-term` (ours): a requested reschedule resumes
    /// `clusterAffinities` at the observed term, as v1.18.2 did, instead of at the first
    /// (v1.19.0).
    pub reschedule_keeps_affinity_term: bool,
    /// `--omit-component-results` (ours): no `spec.clusters[].components`, as v1.18.2.
    pub omit_component_results: bool,
}

/// One binding to schedule against one snapshot.
#[derive(Clone, Copy)]
pub struct BindingInput<'a> {
    /// The clusters of this cycle.
    pub snapshot: &'a Snapshot,
    /// The binding's spec; `clusters` is the previous result.
    pub spec: &'a ResourceBindingSpec,
    /// The binding's status (`schedulerObservingAffinityName`, `lastScheduledTime`).
    pub status: &'a ResourceBindingStatus,
    /// Other bindings for the workload-affinity plugins (gate `WorkloadAffinity`).
    pub workload_index: Option<&'a dyn WorkloadGroupIndex>,
    /// Workloads assumed on the clusters (gate `SchedulingOvercommitProtection`; `None`
    /// with it off), forwarded to every estimator.
    pub assumed: Option<&'a dyn AssumptionSource>,
}

/// What to write for a binding whose scheduling succeeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The new `spec.clusters`.
    Scheduled(Vec<TargetCluster>),
    /// `clusterAffinities` is present but empty: no term is tried and upstream writes nothing
    /// except a successful `Scheduled` condition; `spec.clusters` stays as it is.
    NoAffinityTerms,
}

/// A `clusterAffinities` term that failed; the daemon turns each into a warning event
/// `failed to schedule <Kind>(<key>) with clusterAffiliates index(<index>): <error>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedTerm {
    /// Position in `clusterAffinities`.
    pub index: usize,
    /// Its `affinityName`.
    pub affinity_name: String,
    /// Why it failed.
    pub error: ScheduleError,
}

/// The outcome of scheduling one binding.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// The decision, or the error to report (for `clusterAffinities`: the first term's).
    pub result: Result<Decision, ScheduleError>,
    /// With `clusterAffinities`, the name of the term that succeeded; the driver writes it to
    /// `status.schedulerObservingAffinityName`. `None` otherwise and on failure.
    pub affinity_name: Option<String>,
    /// Terms that failed before the winner (or all of them), in the order tried.
    pub failed_terms: Vec<FailedTerm>,
    /// What the decision looked at, when asked for.
    pub trace: Option<Trace>,
}

/// Plugins, estimators and flags: everything needed to schedule bindings.
#[derive(Clone)]
pub struct Scheduler {
    framework: Framework,
    estimators: Vec<Arc<dyn Estimator>>,
    config: ScheduleConfig,
    observer: Option<Arc<dyn StepObserver>>,
    /// Give the filters [`Prepared`] answers (the default; off only to compare the paths).
    prepare_filters: bool,
}

impl std::fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Scheduler")
            .field("framework", &self.framework)
            .field(
                "estimators",
                &self
                    .estimators
                    .iter()
                    .map(|e| e.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .field("config", &self.config)
            .field("observer", &self.observer.is_some())
            .finish()
    }
}

impl Scheduler {
    /// A scheduler with these plugins and no estimator yet. Upstream always registers the
    /// general estimator; add it (and the accurate one with `--enable-scheduler-estimator`)
    /// with [`Scheduler::with_estimator`].
    pub fn new(framework: Framework, config: ScheduleConfig) -> Self {
        Self {
            framework,
            estimators: Vec::new(),
            config,
            observer: None,
            prepare_filters: true,
        }
    }

    /// Whether the filters get answers prepared once per attempt ([`crate::prepared`], the
    /// default) or work everything out cluster by cluster; the placement is the same.
    pub fn with_prepared_filters(mut self, on: bool) -> Self {
        self.prepare_filters = on;
        self
    }

    /// The in-tree plugins selected by a `--plugins` list (`["*"]` is the default).
    pub fn from_plugins_flag<S: AsRef<str>>(
        plugins: &[S],
        config: ScheduleConfig,
    ) -> Result<Self, RegistryError> {
        let registry = in_tree_registry(&config.gates).filter(plugins);
        Ok(Self::new(Framework::new(&registry)?, config))
    }

    /// Add an estimator; answers are merged by minimum, so the order does not matter.
    pub fn with_estimator(mut self, estimator: Arc<dyn Estimator>) -> Self {
        self.estimators.push(estimator);
        self
    }

    /// Report the start and end of every pipeline step to `observer` (the daemon times them
    /// for `karmada_scheduler_scheduling_algorithm_duration_seconds`).
    pub fn with_step_observer(mut self, observer: Arc<dyn StepObserver>) -> Self {
        self.observer = Some(observer);
        self
    }

    /// The plugins in use.
    pub fn framework(&self) -> &Framework {
        &self.framework
    }

    /// The flags in use.
    pub fn config(&self) -> &ScheduleConfig {
        &self.config
    }

    /// Schedule a binding the way the reference's driver does: with
    /// `clusterAffinities`, try the terms from the observed one (or the first) onwards, stop at
    /// the first success, and report the first term's error when all fail; otherwise run once.
    pub async fn schedule_binding(&self, input: BindingInput<'_>, want_trace: bool) -> Outcome {
        let mut trace = want_trace.then(Trace::default);
        let placement = placement_of(input.spec);
        let Some(terms) = &placement.cluster_affinities else {
            let mut attempt = want_trace.then(AttemptTrace::default);
            let result = self.schedule(input, input.status, attempt.as_mut()).await;
            if let (Some(t), Some(a)) = (trace.as_mut(), attempt) {
                t.attempts.push(a);
            }
            return Outcome {
                result: result.map(Decision::Scheduled),
                affinity_name: None,
                failed_terms: Vec::new(),
                trace,
            };
        };

        let observed = &input.status.scheduler_observed_affinity_name;
        // v1.19: a reschedule requested after the last schedule (WorkloadRebalancer) starts
        // over from the first term; v1.18.2 resumed at the observed one.
        let restart = assign::reschedule_required(
            input.spec.reschedule_triggered_at.as_ref(),
            input.status.last_scheduled_time.as_ref(),
        );
        let restart = restart && !self.config.reschedule_keeps_affinity_term;
        let start = if observed.is_empty() || restart {
            0
        } else {
            terms
                .iter()
                .position(|t| &t.affinity_name == observed)
                .unwrap_or(0)
        };
        let mut status = input.status.clone();
        let mut failed_terms = Vec::new();
        for (index, term) in terms.iter().enumerate().skip(start) {
            status
                .scheduler_observed_affinity_name
                .clone_from(&term.affinity_name);
            let mut attempt = want_trace.then(|| AttemptTrace {
                affinity_index: Some(index),
                affinity_name: Some(term.affinity_name.clone()),
                ..Default::default()
            });
            let result = self.schedule(input, &status, attempt.as_mut()).await;
            if let (Some(t), Some(a)) = (trace.as_mut(), attempt) {
                t.attempts.push(a);
            }
            match result {
                Ok(clusters) => {
                    return Outcome {
                        result: Ok(Decision::Scheduled(clusters)),
                        affinity_name: Some(term.affinity_name.clone()),
                        failed_terms,
                        trace,
                    };
                }
                Err(error) => failed_terms.push(FailedTerm {
                    index,
                    affinity_name: term.affinity_name.clone(),
                    error,
                }),
            }
        }
        let result = match failed_terms.first() {
            Some(first) => Err(first.error.clone()),
            None => Ok(Decision::NoAffinityTerms),
        };
        Outcome {
            result,
            affinity_name: None,
            failed_terms,
            trace,
        }
    }

    /// One run of the pipeline with this status.
    pub async fn schedule(
        &self,
        input: BindingInput<'_>,
        status: &ResourceBindingStatus,
        mut trace: Option<&mut AttemptTrace>,
    ) -> Result<Vec<TargetCluster>, ScheduleError> {
        let result = self.run(input, status, trace.as_deref_mut()).await;
        if let Some(t) = trace {
            match &result {
                Ok(r) => t.result = Some(r.clone()),
                Err(e) => t.error = Some(e.to_string()),
            }
        }
        result
    }

    async fn run(
        &self,
        input: BindingInput<'_>,
        status: &ResourceBindingStatus,
        mut trace: Option<&mut AttemptTrace>,
    ) -> Result<Vec<TargetCluster>, ScheduleError> {
        let spec = input.spec;
        let targets = TargetIndex::new(&spec.clusters);
        let observer = self.observer.as_deref();

        let framework_obs = FrameworkObserver::new(observer);
        let filter_step = StepGuard::start(observer, Step::Filter);
        let feasible = self.filter(&input, status, &targets, trace.as_deref_mut())?;
        drop(filter_step);

        let score_step = StepGuard::start(observer, Step::Score);
        let scores = self
            .framework
            .run_score_plugins_observed(spec, &targets, &feasible.clusters, framework_obs)
            .map_err(|e| ScheduleError::Other(format!("failed to prioritize clusters: {e}")))?;
        drop(score_step);

        // Available replicas; the reference times them as part of the selection.
        let select_step = StepGuard::start(observer, Step::Select);
        let allocatable = self
            .cal_available_replicas(
                &feasible.clusters,
                &feasible.shared,
                spec,
                input.assumed,
                trace.as_deref_mut(),
            )
            .await;
        let details = cluster_details(
            &feasible,
            &scores.totals,
            &allocatable,
            spec,
            status,
            &targets,
        );
        if let Some(t) = trace.as_deref_mut() {
            record_details(t, &details, &scores.per_plugin);
        }
        // Feasible clusters are in the snapshot's (name) order.
        let info = spread::group_clusters_name_sorted(details, spec);
        let selection = self.select(spec, &info, trace)?;
        drop(select_step);

        let assign_step = StepGuard::start(observer, Step::AssignReplicas);
        let memo = self.prepare_filters.then_some(input.snapshot);
        let assigned = assign::assign_replicas_in(memo, &selection.clusters, spec, status)
            .map_err(|e| e.wrap("failed to assign replicas"))?;
        drop(assign_step);
        Ok(self.attach_extras(spec, &selection.clusters, assigned))
    }

    /// The candidates among the groups `info`, and what the trace shows of the choice.
    fn select<'a>(
        &self,
        spec: &ResourceBindingSpec,
        info: &GroupClustersInfo<'a>,
        mut trace: Option<&mut AttemptTrace>,
    ) -> Result<Selection<'a>, ScheduleError> {
        let placement = placement_of(spec);
        let need = if self.places_whole(spec) {
            1
        } else {
            spec.replicas
        };
        if let Some(t) = trace.as_deref_mut() {
            record_groups(t, info);
            t.need_replicas = if spread::should_ignore_available_resource(placement) {
                spread::INVALID_REPLICAS
            } else {
                need
            };
        }
        let selection = spread::select_best_clusters(placement, info, need)
            .map_err(|e| ScheduleError::Other(format!("failed to select clusters: {e}")))?;
        if let Some(t) = trace {
            t.selected = selection
                .clusters
                .iter()
                .map(|c| c.name.to_string())
                .collect();
            t.chosen_regions.clone_from(&selection.regions);
        }
        Ok(selection)
    }

    /// The assignment as written: with the per-component results of a multi-template workload
    /// placed whole (as v1.19 records them), and with the selected clusters that got no
    /// replicas under `--enable-empty-workload-propagation`.
    fn attach_extras(
        &self,
        spec: &ResourceBindingSpec,
        selected: &[ClusterDetail<'_>],
        mut assigned: Vec<TargetCluster>,
    ) -> Vec<TargetCluster> {
        if self.places_whole(spec)
            && !self.config.omit_component_results
            && spec.components.len() > 1
        {
            assign::attach_component_results(&mut assigned, spec);
        }
        if self.config.enable_empty_workload_propagation {
            assigned = assign::attach_zero_replica_clusters(selected, assigned);
        }
        assigned
    }

    /// The clusters that pass every filter plugin, in snapshot order; none is a fit error
    /// with each rejected cluster's reasons.
    fn filter<'s>(
        &self,
        input: &BindingInput<'s>,
        status: &ResourceBindingStatus,
        targets: &TargetIndex<'_>,
        mut trace: Option<&mut AttemptTrace>,
    ) -> Result<Feasible<'s>, ScheduleError> {
        let spec = input.spec;
        let framework_obs = FrameworkObserver::new(self.observer.as_deref());
        let n = input.snapshot.num_of_clusters();
        let mut feasible = Feasible {
            clusters: Vec::with_capacity(n),
            shared: Vec::with_capacity(n),
            positions: Vec::with_capacity(n),
        };
        let mut diagnosis: BTreeMap<String, Vec<String>> = BTreeMap::new();
        if let Some(t) = trace.as_deref_mut() {
            t.filter_plugins = self
                .framework
                .filter_plugin_names()
                .iter()
                .map(|s| s.to_string())
                .collect();
        }
        let mut note = |cluster: &Cluster, verdict: Verdict| {
            if let Some(t) = trace.as_deref_mut() {
                t.clusters.push(ClusterTrace {
                    name: cluster.name().to_string(),
                    verdict,
                    ..Default::default()
                });
            }
        };
        // What the filters would work out per cluster, once for the snapshot.
        let prepared = self
            .prepare_filters
            .then(|| Prepared::new(input.snapshot, spec, status));
        for (index, c) in input.snapshot.clusters().iter().enumerate() {
            let cluster: &Cluster = c;
            let terminating = match &prepared {
                Some(p) => p.terminating(index),
                None => cluster.is_terminating(),
            };
            if terminating {
                note(cluster, Verdict::Deleting);
                continue;
            }
            let ctx = FilterContext {
                spec,
                status,
                targets,
                cluster,
                workload_index: input.workload_index,
                prepared: prepared.as_ref().map(|p| p.at(index)),
            };
            match self
                .framework
                .run_filter_plugins_observed(&ctx, framework_obs)
            {
                Ok(()) => {
                    feasible.clusters.push(cluster);
                    feasible.shared.push(c);
                    feasible.positions.push(index);
                    note(cluster, Verdict::Feasible);
                }
                Err(rejection) => {
                    let reasons = rejection.result.reasons().to_vec();
                    note(
                        cluster,
                        Verdict::Rejected {
                            plugin: rejection.plugin.to_string(),
                            reasons: reasons.clone(),
                        },
                    );
                    diagnosis.insert(cluster.name().to_string(), reasons);
                }
            }
        }
        if feasible.clusters.is_empty() {
            return Err(ScheduleError::Fit(FitError {
                num_all_clusters: n,
                diagnosis,
            }));
        }
        Ok(feasible)
    }

    /// Merged estimator answers per feasible cluster, in `clusters` order.
    async fn cal_available_replicas(
        &self,
        clusters: &[&Cluster],
        shared: &[&Arc<Cluster>],
        spec: &ResourceBindingSpec,
        assumed: Option<&dyn AssumptionSource>,
        mut trace: Option<&mut AttemptTrace>,
    ) -> Vec<i32> {
        let mut out = vec![i32::MAX; clusters.len()];
        if spec.replicas == 0 && spec.components.is_empty() {
            if let Some(t) = trace {
                t.estimation_skipped = true;
            }
            return out;
        }
        // Built once per call for the clusters asked about, as the reference does; the binding's
        // own earlier assumption is included (its assigned replicas are added back later).
        let assumed = assumed.map(|source| assumed_on(clusters, source));
        let request = self.estimate_request(spec, assumed.as_ref());
        let mut positions = AnswerPositions::new(clusters);
        let mut per_estimator: Vec<EstimatorAnswers> = Vec::new();
        for estimator in &self.estimators {
            let answers = estimator.estimate_shared(clusters, shared, request).await;
            if let Some(t) = trace.as_deref_mut() {
                t.estimators.push(EstimatorTrace {
                    name: estimator.name().to_string(),
                    error: answers.as_ref().err().map(|e| e.to_string()),
                });
            }
            let Ok(answers) = answers else { continue };
            let seen = merge_minimum(&mut out, positions.of(answers), trace.is_some());
            if let Some(s) = seen {
                per_estimator.push((estimator.name().to_string(), s));
            }
        }
        for v in &mut out {
            if *v == i32::MAX {
                *v = spec.replicas;
            }
        }
        if let Some(t) = trace {
            record_estimates(t, clusters, &per_estimator);
        }
        out
    }

    /// What every estimator is asked about the binding.
    fn estimate_request<'a>(
        &self,
        spec: &'a ResourceBindingSpec,
        assumed: Option<&'a AssumedByCluster>,
    ) -> EstimateRequest<'a> {
        EstimateRequest {
            ask: if self.places_whole(spec) {
                Ask::ComponentSets
            } else {
                Ask::Replicas
            },
            resource: &spec.resource,
            replica_requirements: spec.replica_requirements.as_ref(),
            components: &spec.components,
            namespace: &spec.resource.namespace,
            assumed,
        }
    }

    /// Whether the binding is a multi-template workload placed whole on one cluster (and the
    /// gate that allows it is on): its clusters are asked for component sets, one is needed.
    fn places_whole(&self, spec: &ResourceBindingSpec) -> bool {
        self.config.gates.multiple_pod_templates_scheduling()
            && is_multi_template_scheduling_applicable(spec)
    }
}

/// The workloads assumed on each of `clusters` that has any.
fn assumed_on(clusters: &[&Cluster], source: &dyn AssumptionSource) -> AssumedByCluster {
    clusters
        .iter()
        .filter_map(|c| {
            let a = source.assumed_on(c.name());
            (!a.is_empty()).then(|| (c.name().to_string(), a))
        })
        .collect()
}

/// One estimator's name and its answer per feasible cluster (`None`: not answered), kept for
/// the trace.
type EstimatorAnswers = (String, Vec<Option<i32>>);

/// Where an estimator's answers go among the clusters asked: named answers normally come in
/// the order asked, and fall back to a lookup by name (built once, when first needed).
struct AnswerPositions<'c> {
    clusters: &'c [&'c Cluster],
    by_name: Option<HashMap<&'c str, usize>>,
}

impl<'c> AnswerPositions<'c> {
    fn new(clusters: &'c [&'c Cluster]) -> Self {
        Self {
            clusters,
            by_name: None,
        }
    }

    /// `(position in the clusters asked, answer)` of each answer about one of them.
    fn of(&mut self, answers: SharedEstimates) -> Vec<(usize, i32)> {
        let clusters = self.clusters;
        match answers {
            SharedEstimates::InOrder(values) => values
                .into_iter()
                .take(clusters.len())
                .enumerate()
                .collect(),
            SharedEstimates::Named(named) => named
                .into_iter()
                .enumerate()
                .filter_map(|(k, (name, v))| {
                    if clusters.get(k).is_some_and(|c| c.name() == name) {
                        return Some((k, v));
                    }
                    let by_name = self.by_name.get_or_insert_with(|| {
                        clusters
                            .iter()
                            .enumerate()
                            .map(|(i, c)| (c.name(), i))
                            .collect()
                    });
                    by_name.get(name.as_str()).map(|&i| (i, v))
                })
                .collect(),
        }
    }
}

/// Lower each answered cluster of `out` to its answer (an unauthentic answer is none); with
/// `keep`, also return what each cluster was answered.
fn merge_minimum(
    out: &mut [i32],
    answers: Vec<(usize, i32)>,
    keep: bool,
) -> Option<Vec<Option<i32>>> {
    let mut seen = keep.then(|| vec![None; out.len()]);
    for (i, v) in answers {
        if let Some(s) = seen.as_mut() {
            s[i] = Some(v);
        }
        if v != crate::estimator::UNAUTHENTIC_REPLICA && out[i] > v {
            out[i] = v;
        }
    }
    seen
}

/// Each estimator's answers on the trace's feasible clusters.
fn record_estimates(
    t: &mut AttemptTrace,
    clusters: &[&Cluster],
    per_estimator: &[EstimatorAnswers],
) {
    // Clusters are pushed in snapshot order; feasible ones are a subsequence.
    let mut it = per_estimator
        .iter()
        .map(|(n, v)| (n, v.iter()))
        .collect::<Vec<_>>();
    let feasible: std::collections::HashSet<&str> = clusters.iter().map(|c| c.name()).collect();
    for ct in t
        .clusters
        .iter_mut()
        .filter(|c| feasible.contains(c.name.as_str()))
    {
        for (name, values) in it.iter_mut() {
            ct.estimates
                .push((name.to_string(), values.next().copied().flatten()));
        }
    }
}

/// Whether a multi-template workload is placed whole on one cluster.
pub fn is_multi_template_scheduling_applicable(spec: &ResourceBindingSpec) -> bool {
    let Some(p) = &spec.placement else {
        return false;
    };
    !spec.components.is_empty()
        && p.spread_constraints.iter().any(|sc| {
            sc.spread_by_field == Some(SpreadFieldValue::Cluster)
                && sc.min_groups == 1
                && sc.max_groups == 1
        })
}

/// What selection and assignment know of each feasible cluster, in snapshot order.
fn cluster_details<'a>(
    feasible: &Feasible<'a>,
    scores: &[i64],
    allocatable: &[i32],
    spec: &ResourceBindingSpec,
    status: &ResourceBindingStatus,
    targets: &TargetIndex<'_>,
) -> Vec<ClusterDetail<'a>> {
    feasible
        .clusters
        .iter()
        .enumerate()
        .map(|(i, c)| ClusterDetail {
            name: c.name(),
            cluster: c,
            score: scores[i],
            overflow_order: spread::overflow_order(c, spec, status),
            allocatable_replicas: allocatable[i],
            available_replicas: i64::from(allocatable[i]) + i64::from(targets.replicas(c.name())),
            position: Some(feasible.positions[i]),
        })
        .collect()
}

fn record_details(
    t: &mut AttemptTrace,
    details: &[ClusterDetail<'_>],
    per_plugin: &[(&'static str, Vec<i64>)],
) {
    let index: HashMap<&str, usize> = t
        .clusters
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_str(), i))
        .collect();
    let mut updates = Vec::with_capacity(details.len());
    for (k, d) in details.iter().enumerate() {
        if let Some(&i) = index.get(d.name) {
            updates.push((i, k));
        }
    }
    for (i, k) in updates {
        let d = &details[k];
        let ct = &mut t.clusters[i];
        ct.scores = per_plugin
            .iter()
            .map(|(p, v)| (p.to_string(), v[k]))
            .collect();
        ct.score = Some(d.score);
        ct.allocatable_replicas = Some(d.allocatable_replicas);
        ct.available_replicas = Some(d.available_replicas);
        ct.overflow_order = Some(d.overflow_order);
    }
}

fn record_groups(t: &mut AttemptTrace, info: &GroupClustersInfo<'_>) {
    t.canonical_order = info.clusters.iter().map(|c| c.name.to_string()).collect();
    t.regions = info
        .regions
        .values()
        .map(|g| GroupTrace {
            name: g.name.clone(),
            score: g.score,
            available_replicas: g.available_replicas,
            clusters: g.clusters.iter().map(|c| c.name.to_string()).collect(),
        })
        .collect();
}

/// The clusters that pass the filters, in snapshot order: as plain references, as the
/// snapshot's `Arc`s (for estimators that memoise) and as positions in the snapshot.
struct Feasible<'s> {
    clusters: Vec<&'s Cluster>,
    shared: Vec<&'s Arc<Cluster>>,
    positions: Vec<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::estimator::{BoxFuture, Estimates, EstimatorError};
    use crate::features::MULTIPLE_POD_TEMPLATES_SCHEDULING;
    use crate::framework::Code;
    use crate::observe::ExtensionPoint;
    use karmada_api::cluster::{ClusterSpec, ClusterStatus, ResourceSummary};
    use karmada_api::policy::{
        ClusterAffinity, ClusterAffinityTerm, Placement, ReplicaSchedulingStrategy,
        ReplicaSchedulingType, SpreadConstraint,
    };
    use karmada_api::work::{Component, ObjectReference, ReplicaRequirements};
    use std::future::Future;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll, Waker};

    /// Drive a future whose estimators answer synchronously.
    fn block_on<F: Future>(f: F) -> F::Output {
        let mut f = std::pin::pin!(f);
        let mut cx = Context::from_waker(Waker::noop());
        loop {
            if let Poll::Ready(v) = f.as_mut().poll(&mut cx) {
                return v;
            }
        }
    }

    #[derive(Default)]
    struct Fake {
        name: &'static str,
        answers: Vec<(&'static str, i32)>,
        fail: bool,
        replica_calls: AtomicUsize,
        set_calls: AtomicUsize,
    }

    impl Fake {
        fn answer(&self) -> Result<Estimates, EstimatorError> {
            if self.fail {
                return Err(EstimatorError("unreachable".into()));
            }
            Ok(self
                .answers
                .iter()
                .map(|(n, v)| (n.to_string(), *v))
                .collect())
        }
    }

    impl Estimator for Fake {
        fn name(&self) -> &str {
            self.name
        }
        fn estimate<'a>(
            &'a self,
            _clusters: &'a [&'a Cluster],
            request: EstimateRequest<'a>,
        ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
            let calls = match request.ask {
                Ask::Replicas => &self.replica_calls,
                Ask::ComponentSets => &self.set_calls,
            };
            calls.fetch_add(1, Ordering::SeqCst);
            Box::pin(async move { self.answer() })
        }
    }

    fn cluster(name: &str) -> Cluster {
        let mut c = Cluster::new(name, ClusterSpec::default());
        let mut status = ClusterStatus::default();
        status
            .api_enablements
            .push(karmada_api::cluster::ApiEnablement {
                group_version: "apps/v1".into(),
                resources: vec![karmada_api::cluster::ApiResource {
                    name: "deployments".into(),
                    kind: "Deployment".into(),
                }],
            });
        status.resource_summary = Some(ResourceSummary::default());
        c.status = Some(status);
        c
    }

    fn deleting(name: &str) -> Cluster {
        let mut c = cluster(name);
        c.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
        ));
        c
    }

    fn spec(replicas: i32, placement: Placement) -> ResourceBindingSpec {
        ResourceBindingSpec {
            resource: ObjectReference {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                namespace: "ns".into(),
                name: "web".into(),
                ..Default::default()
            },
            replicas,
            placement: Some(placement),
            ..Default::default()
        }
    }

    fn duplicated() -> Placement {
        Placement {
            replica_scheduling: Some(ReplicaSchedulingStrategy {
                replica_scheduling_type: Some(ReplicaSchedulingType::Duplicated),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn names(n: &[&str]) -> ClusterAffinity {
        ClusterAffinity {
            cluster_names: n.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    fn scheduler(estimators: Vec<Arc<dyn Estimator>>) -> Scheduler {
        let mut s = Scheduler::from_plugins_flag(&["*"], ScheduleConfig::default()).unwrap();
        for e in estimators {
            s = s.with_estimator(e);
        }
        s
    }

    fn run(
        s: &Scheduler,
        snap: &Snapshot,
        spec: &ResourceBindingSpec,
        status: &ResourceBindingStatus,
    ) -> Outcome {
        block_on(s.schedule_binding(
            BindingInput {
                snapshot: snap,
                spec,
                status,
                workload_index: None,
                assumed: None,
            },
            true,
        ))
    }

    fn allocatable(o: &Outcome) -> Vec<(String, Option<i32>)> {
        let a = &o.trace.as_ref().unwrap().attempts[0];
        a.clusters
            .iter()
            .map(|c| (c.name.clone(), c.allocatable_replicas))
            .collect()
    }

    // minimum across estimators, -1 ignored, a failed estimator ignored as a
    // whole, i32::MAX left over replaced by spec.replicas.
    #[test]
    fn estimator_answers_merge_by_minimum() {
        let e1 = Arc::new(Fake {
            name: "e1",
            answers: vec![("m1", 5), ("m2", -1), ("m3", 7), ("zz", 0)],
            ..Default::default()
        });
        let e2 = Arc::new(Fake {
            name: "e2",
            answers: vec![("m3", 9), ("m1", 3), ("m2", -1)],
            ..Default::default()
        });
        let e3 = Arc::new(Fake {
            name: "e3",
            answers: vec![("m1", 0), ("m2", 0)],
            fail: true,
            ..Default::default()
        });
        let s = scheduler(vec![e1.clone(), e2.clone(), e3.clone()]);
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2"), cluster("m3")]);
        let o = run(
            &s,
            &snap,
            &spec(4, duplicated()),
            &ResourceBindingStatus::default(),
        );
        assert_eq!(
            allocatable(&o),
            [
                ("m1".to_string(), Some(3)),
                ("m2".to_string(), Some(4)),
                ("m3".to_string(), Some(7))
            ]
        );
        let a = &o.trace.as_ref().unwrap().attempts[0];
        assert_eq!(a.estimators[2].error.as_deref(), Some("unreachable"));
        assert_eq!(
            a.clusters[0].estimates,
            [("e1".to_string(), Some(5)), ("e2".to_string(), Some(3))]
        );
        assert_eq!(e3.replica_calls.load(Ordering::SeqCst), 1);
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![
                // Duplicated keeps the canonical order: available replicas descending.
                TargetCluster::new("m3", 4),
                TargetCluster::new("m2", 4),
                TargetCluster::new("m1", 4),
            ]))
        );
    }

    /// Forwards the plain methods of the general estimator only, so that the pipeline gets
    /// named answers from the default `estimate_shared`.
    struct PlainOnly(crate::general::GeneralEstimator);

    impl Estimator for PlainOnly {
        fn name(&self) -> &str {
            self.0.name()
        }
        fn estimate<'a>(
            &'a self,
            clusters: &'a [&'a Cluster],
            request: EstimateRequest<'a>,
        ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
            self.0.estimate(clusters, request)
        }
    }

    // Answers in order (the general estimator's shared path) and named answers merge alike.
    #[test]
    fn in_order_and_named_answers_agree() {
        use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
        let with_pods = |name: &str, pods: &str, cpu: &str| {
            let mut c = cluster(name);
            let rs = c
                .status
                .as_mut()
                .unwrap()
                .resource_summary
                .as_mut()
                .unwrap();
            rs.allocatable = [("pods", pods), ("cpu", cpu)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect();
            c
        };
        let mut no_summary = cluster("m4");
        no_summary.status.as_mut().unwrap().resource_summary = None;
        let snap = Snapshot::from_clusters([
            with_pods("m1", "10", "4"),
            with_pods("m2", "3", "100"),
            with_pods("m3", "0", "1"),
            no_summary,
            with_pods("m5", "7", "2"),
        ]);
        let mut sp = spec(
            9,
            Placement {
                replica_scheduling: Some(ReplicaSchedulingStrategy {
                    replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
                    replica_division_preference: Some(
                        karmada_api::policy::ReplicaDivisionPreference::Aggregated,
                    ),
                    ..Default::default()
                }),
                ..Default::default()
            },
        );
        sp.replica_requirements = Some(ReplicaRequirements {
            resource_request: [("cpu".to_string(), Quantity("500m".into()))].into(),
            ..Default::default()
        });
        let in_order = scheduler(vec![Arc::new(crate::general::GeneralEstimator::default())]);
        let named = scheduler(vec![Arc::new(PlainOnly(Default::default()))]);
        let status = ResourceBindingStatus::default();
        let a = run(&in_order, &snap, &sp, &status);
        let b = run(&named, &snap, &sp, &status);
        assert_eq!(a.result, b.result);
        assert!(a.result.is_ok(), "{:?}", a.result);
        assert_eq!(
            format!("{:?}", a.trace.unwrap()),
            format!("{:?}", b.trace.unwrap())
        );
        // Twice more through the memo.
        assert_eq!(run(&in_order, &snap, &sp, &status).result, b.result);
        assert_eq!(run(&in_order, &snap, &sp, &status).result, b.result);
    }

    // replicas 0 and no components skip every estimator.
    #[test]
    fn non_workloads_skip_estimators() {
        let e = Arc::new(Fake {
            name: "e",
            answers: vec![("m1", 0)],
            ..Default::default()
        });
        let s = scheduler(vec![e.clone()]);
        let snap = Snapshot::from_clusters([cluster("m1")]);
        let mut sp = spec(0, duplicated());
        sp.replica_requirements = Some(ReplicaRequirements::default());
        let o = run(&s, &snap, &sp, &ResourceBindingStatus::default());
        assert_eq!(e.replica_calls.load(Ordering::SeqCst), 0);
        assert_eq!(allocatable(&o), [("m1".to_string(), Some(i32::MAX))]);
        assert!(o.trace.as_ref().unwrap().attempts[0].estimation_skipped);
        // A workload scaled to 0 ends with no cluster unless empty workloads are propagated.
        assert_eq!(o.result, Ok(Decision::Scheduled(vec![])));
        let config = ScheduleConfig {
            enable_empty_workload_propagation: true,
            ..Default::default()
        };
        let s = Scheduler::from_plugins_flag(&["*"], config).unwrap();
        let o = run(&s, &snap, &sp, &ResourceBindingStatus::default());
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![TargetCluster::new("m1", 0)]))
        );
    }

    // deleting clusters are skipped but counted.
    #[test]
    fn fit_error_counts_deleting_clusters() {
        let s = scheduler(vec![]);
        let snap = Snapshot::from_clusters([deleting("d1"), cluster("m1"), cluster("m2")]);
        let p = Placement {
            cluster_affinity: Some(names(&["nope"])),
            ..duplicated()
        };
        let o = run(&s, &snap, &spec(1, p), &ResourceBindingStatus::default());
        let err = o.result.unwrap_err();
        assert_eq!(err.condition_reason(), "NoClusterFit");
        assert_eq!(
            err.to_string(),
            "0/3 clusters are available: 2 cluster(s) did not match the placement cluster affinity constraint."
        );
        let a = &o.trace.unwrap().attempts[0];
        assert_eq!(a.clusters[0].verdict, Verdict::Deleting);
        assert_eq!(
            a.clusters[1].verdict,
            Verdict::Rejected {
                plugin: "ClusterAffinity".into(),
                reasons: vec![
                    "cluster(s) did not match the placement cluster affinity constraint".into()
                ]
            }
        );
    }

    /// Records `(step, started?, token)` in call order.
    #[derive(Default)]
    struct Recorder(std::sync::Mutex<Vec<(Step, bool, u64)>>);

    impl StepObserver for Recorder {
        fn started(&self, step: Step) -> u64 {
            let mut log = self.0.lock().unwrap();
            let token = log.len() as u64;
            log.push((step, true, token));
            token
        }
        fn finished(&self, step: Step, token: u64) {
            self.0.lock().unwrap().push((step, false, token));
        }
    }

    #[test]
    fn step_observer_sees_each_step_once_in_order() {
        let rec = Arc::new(Recorder::default());
        let s = scheduler(vec![]).with_step_observer(rec.clone());
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let o = run(&s, &snap, &spec(1, duplicated()), &Default::default());
        assert!(o.result.is_ok(), "{:?}", o.result);
        let log = std::mem::take(&mut *rec.0.lock().unwrap());
        let want: Vec<(Step, bool, u64)> = Step::ALL
            .iter()
            .enumerate()
            .flat_map(|(i, st)| [(*st, true, 2 * i as u64), (*st, false, 2 * i as u64)])
            .collect();
        assert_eq!(log, want);

        // A fit error still ends the filter step, and nothing after it starts.
        let p = Placement {
            cluster_affinity: Some(names(&["nope"])),
            ..duplicated()
        };
        let o = run(&s, &snap, &spec(1, p), &Default::default());
        assert!(o.result.is_err());
        let log = std::mem::take(&mut *rec.0.lock().unwrap());
        assert_eq!(log, [(Step::Filter, true, 0), (Step::Filter, false, 0)]);
    }

    /// Records the framework hooks: `(point, plugin or "", code)`.
    struct FrameworkRecorder {
        plugins: bool,
        log: std::sync::Mutex<Vec<(ExtensionPoint, &'static str, Code)>>,
    }

    impl StepObserver for FrameworkRecorder {
        fn started(&self, _step: Step) -> u64 {
            0
        }
        fn finished(&self, _step: Step, _token: u64) {}
        fn extension_point(&self, point: ExtensionPoint, code: Code, _token: u64) {
            self.log.lock().unwrap().push((point, "", code));
        }
        fn time_plugins(&self) -> bool {
            self.plugins
        }
        fn plugin(&self, point: ExtensionPoint, plugin: &'static str, code: Code, _token: u64) {
            self.log.lock().unwrap().push((point, plugin, code));
        }
    }

    #[test]
    fn framework_hooks_report_extension_points_and_plugins_on_demand() {
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let p = Placement {
            cluster_affinity: Some(names(&["m2"])),
            ..duplicated()
        };
        for plugins in [false, true] {
            let rec = Arc::new(FrameworkRecorder {
                plugins,
                log: Default::default(),
            });
            let s = scheduler(vec![]).with_step_observer(rec.clone());
            let o = run(&s, &snap, &spec(1, p.clone()), &Default::default());
            assert!(o.result.is_ok(), "{:?}", o.result);
            let log = std::mem::take(&mut *rec.log.lock().unwrap());
            let points: Vec<_> = log.iter().filter(|e| e.1.is_empty()).collect();
            assert_eq!(
                points,
                [
                    &(ExtensionPoint::Filter, "", Code::Unschedulable),
                    &(ExtensionPoint::Filter, "", Code::Success),
                    &(ExtensionPoint::Score, "", Code::Success),
                ],
                "one Filter run per cluster, one Score run per binding"
            );
            let calls: Vec<_> = log.iter().filter(|e| !e.1.is_empty()).collect();
            if !plugins {
                assert!(calls.is_empty(), "{calls:?}");
                continue;
            }
            // m1 is rejected by ClusterAffinity and no later filter runs on it.
            let filter_names = s.framework().filter_plugin_names();
            let affinity_at = filter_names
                .iter()
                .position(|n| *n == "ClusterAffinity")
                .unwrap();
            let filter_calls = calls
                .iter()
                .filter(|e| e.0 == ExtensionPoint::Filter)
                .count();
            assert_eq!(filter_calls, affinity_at + 1 + filter_names.len());
            assert!(calls.contains(&&(
                ExtensionPoint::Filter,
                "ClusterAffinity",
                Code::Unschedulable
            )));
            // Each score plugin on the one feasible cluster; only ClusterAffinity normalises.
            let score_names = s.framework().score_plugin_names();
            let scores: Vec<_> = calls
                .iter()
                .filter(|e| e.0 == ExtensionPoint::Score)
                .map(|e| e.1)
                .collect();
            assert_eq!(scores, score_names);
            let normalize: Vec<_> = calls
                .iter()
                .filter(|e| e.0 == ExtensionPoint::ScoreExtensionNormalize)
                .map(|e| e.1)
                .collect();
            assert_eq!(normalize, ["ClusterAffinity"]);
        }
    }

    fn term(name: &str, clusters: &[&str]) -> ClusterAffinityTerm {
        ClusterAffinityTerm {
            affinity_name: name.into(),
            affinity: names(clusters),
            overflow_affinities: None,
        }
    }

    // start at the observed term, first success wins, first error reported.
    #[test]
    fn affinity_terms_failover() {
        let s = scheduler(vec![]);
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let with_terms = |t: Vec<ClusterAffinityTerm>| {
            spec(
                1,
                Placement {
                    cluster_affinities: Some(t),
                    ..duplicated()
                },
            )
        };
        let observed = |n: &str| ResourceBindingStatus {
            scheduler_observed_affinity_name: n.into(),
            ..Default::default()
        };

        let sp = with_terms(vec![term("a", &["nope"]), term("b", &["m2"])]);
        let o = run(&s, &snap, &sp, &ResourceBindingStatus::default());
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![TargetCluster::new("m2", 1)]))
        );
        assert_eq!(o.affinity_name.as_deref(), Some("b"));
        assert_eq!(o.failed_terms.len(), 1);
        assert_eq!(
            (
                o.failed_terms[0].index,
                o.failed_terms[0].affinity_name.as_str()
            ),
            (0, "a")
        );
        assert_eq!(o.trace.as_ref().unwrap().attempts.len(), 2);

        // Never back to an earlier term; the first attempted term's error is the result.
        let sp = with_terms(vec![
            term("a", &["m1"]),
            term("b", &["nope"]),
            term("c", &["gone"]),
        ]);
        let o = run(&s, &snap, &sp, &observed("b"));
        let err = o.result.unwrap_err();
        assert_eq!(
            err.to_string(),
            "0/2 clusters are available: 2 cluster(s) did not match the placement cluster affinity constraint."
        );
        assert_eq!(
            o.failed_terms.iter().map(|f| f.index).collect::<Vec<_>>(),
            [1, 2]
        );
        assert_eq!(o.affinity_name, None);

        // Unknown observed name: from the first term.
        let sp = with_terms(vec![term("a", &["m1"]), term("b", &["m2"])]);
        let o = run(&s, &snap, &sp, &observed("zzz"));
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![TargetCluster::new("m1", 1)]))
        );
        assert_eq!(o.affinity_name.as_deref(), Some("a"));

        // Present but empty: nothing tried.
        let o = run(
            &s,
            &snap,
            &with_terms(vec![]),
            &ResourceBindingStatus::default(),
        );
        assert_eq!(o.result, Ok(Decision::NoAffinityTerms));
        assert!(o.trace.unwrap().attempts.is_empty());
    }

    // `-Name` alone leaves no plugin, so every cluster is feasible.
    #[test]
    fn plugins_flag_can_disable_everything() {
        let s =
            Scheduler::from_plugins_flag(&["-ClusterAffinity"], ScheduleConfig::default()).unwrap();
        assert!(s.framework().filter_plugin_names().is_empty());
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let p = Placement {
            cluster_affinity: Some(names(&["nope"])),
            ..duplicated()
        };
        let o = run(&s, &snap, &spec(1, p), &ResourceBindingStatus::default());
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![
                TargetCluster::new("m1", 1),
                TargetCluster::new("m2", 1)
            ]))
        );
    }

    // with the gate, component sets are estimated and one set is needed.
    #[test]
    fn multi_template_uses_component_sets() {
        let e = Arc::new(Fake {
            name: "e",
            answers: vec![("m1", 0), ("m2", 2)],
            ..Default::default()
        });
        let s = with_gates(FeatureGates::new().with(MULTIPLE_POD_TEMPLATES_SCHEDULING, true))
            .with_estimator(e.clone());
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let p = Placement {
            spread_constraints: vec![one_cluster()],
            replica_scheduling: Some(ReplicaSchedulingStrategy {
                replica_scheduling_type: Some(ReplicaSchedulingType::Divided),
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut sp = spec(0, p);
        sp.components = vec![Component {
            name: "jm".into(),
            replicas: 1,
            replica_requirements: None,
        }];
        let o = run(&s, &snap, &sp, &ResourceBindingStatus::default());
        assert_eq!(e.set_calls.load(Ordering::SeqCst), 1);
        assert_eq!(e.replica_calls.load(Ordering::SeqCst), 0);
        assert_eq!(o.trace.as_ref().unwrap().attempts[0].need_replicas, 1);
        // m1 (first by name) has no set; m2 has two: swapped in.
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![TargetCluster::new("m2", 0)]))
        );
        // Without the gate the single-template path runs.
        let s = scheduler(vec![e.clone()]);
        let _ = run(&s, &snap, &sp, &ResourceBindingStatus::default());
        assert_eq!(e.replica_calls.load(Ordering::SeqCst), 1);
    }

    /// Spread by cluster, exactly one: the placement of a multi-template workload as a whole.
    fn one_cluster() -> SpreadConstraint {
        SpreadConstraint {
            spread_by_field: Some(SpreadFieldValue::Cluster),
            min_groups: 1,
            max_groups: 1,
            ..Default::default()
        }
    }

    fn with_gates(gates: FeatureGates) -> Scheduler {
        Scheduler::from_plugins_flag(
            &["*"],
            ScheduleConfig {
                gates,
                ..Default::default()
            },
        )
        .unwrap()
    }

    /// v1.19 `buildTargetComponents`: two components placed whole on one cluster are recorded
    /// in the target with their full replica counts; not with one component, not without the
    /// single-cluster spread constraint, not without the gate.
    #[test]
    fn multi_component_results_are_recorded_with_the_gate() {
        let s = with_gates(FeatureGates::new().with(MULTIPLE_POD_TEMPLATES_SCHEDULING, true));
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let single = Placement {
            spread_constraints: vec![one_cluster()],
            ..duplicated()
        };
        let comp = |name: &str, replicas: i32| Component {
            name: name.into(),
            replicas,
            replica_requirements: None,
        };
        let mut sp = spec(0, single.clone());
        sp.components = vec![comp("jobmanager", 1), comp("taskmanager", 3)];
        let o = run(&s, &snap, &sp, &ResourceBindingStatus::default());
        let Ok(Decision::Scheduled(targets)) = o.result else {
            panic!("{:?}", o.result)
        };
        assert_eq!(targets.len(), 1);
        assert_eq!(targets[0].replicas, 0);
        assert_eq!(
            targets[0].components(),
            vec![
                karmada_api::work::TargetComponent {
                    name: "jobmanager".into(),
                    replicas: 1
                },
                karmada_api::work::TargetComponent {
                    name: "taskmanager".into(),
                    replicas: 3
                },
            ]
        );
        let json = serde_json::to_value(&targets[0]).unwrap();
        assert_eq!(
            json["components"],
            serde_json::json!([{"name": "jobmanager", "replicas": 1}, {"name": "taskmanager", "replicas": 3}])
        );

        let targets_of = |s: &Scheduler, sp: &ResourceBindingSpec| match run(
            s,
            &snap,
            sp,
            &ResourceBindingStatus::default(),
        )
        .result
        {
            Ok(Decision::Scheduled(t)) => t,
            other => panic!("{other:?}"),
        };
        // One component: no per-component result.
        let mut one = sp.clone();
        one.components.truncate(1);
        assert!(
            targets_of(&s, &one)
                .iter()
                .all(|t| t.components().is_empty())
        );
        // Not a single-cluster placement: every cluster, no per-component result.
        let mut spread = sp.clone();
        spread.placement = Some(duplicated());
        let t = targets_of(&s, &spread);
        assert_eq!(t.len(), 2);
        assert!(t.iter().all(|t| t.components().is_empty()));
        // Gate off (the default): as v1.18.2.
        let off = scheduler(vec![]);
        assert!(
            targets_of(&off, &sp)
                .iter()
                .all(|t| t.components().is_empty())
        );
        // Gate on, v1.18.2's results asked for.
        let omit = Scheduler::from_plugins_flag(
            &["*"],
            ScheduleConfig {
                gates: FeatureGates::new().with(MULTIPLE_POD_TEMPLATES_SCHEDULING, true),
                omit_component_results: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(
            targets_of(&omit, &sp)
                .iter()
                .all(|t| t.components().is_empty())
        );
    }

    /// v1.19: a reschedule requested after the last schedule (`rescheduleTriggeredAt` later
    /// than `lastScheduledTime`, as a WorkloadRebalancer writes) tries the terms from the first
    /// again, whatever the observed term; an older trigger resumes at the observed term.
    #[test]
    fn a_requested_reschedule_restarts_affinity_terms_at_the_first() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
        let s = scheduler(vec![]);
        let snap = Snapshot::from_clusters([cluster("m1"), cluster("m2")]);
        let mut sp = spec(
            1,
            Placement {
                cluster_affinities: Some(vec![term("primary", &["m1"]), term("backup", &["m2"])]),
                ..duplicated()
            },
        );
        let t = |s: &str| Some(serde_json::from_value::<Time>(serde_json::json!(s)).unwrap());
        let status = ResourceBindingStatus {
            scheduler_observed_affinity_name: "backup".into(),
            last_scheduled_time: t("2026-01-01T00:00:00Z"),
            ..Default::default()
        };
        sp.reschedule_triggered_at = t("2026-01-01T00:00:10Z");
        let o = run(&s, &snap, &sp, &status);
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![TargetCluster::new("m1", 1)]))
        );
        assert_eq!(o.affinity_name.as_deref(), Some("primary"));

        // v1.18.2's behaviour, on request: resume at the observed term.
        let old = Scheduler::from_plugins_flag(
            &["*"],
            ScheduleConfig {
                reschedule_keeps_affinity_term: true,
                ..Default::default()
            },
        )
        .unwrap();
        let o = run(&old, &snap, &sp, &status);
        assert_eq!(o.affinity_name.as_deref(), Some("backup"));

        // Trigger not later than the last schedule: resume at the observed term.
        sp.reschedule_triggered_at = t("2026-01-01T00:00:00Z");
        let o = run(&s, &snap, &sp, &status);
        assert_eq!(
            o.result,
            Ok(Decision::Scheduled(vec![TargetCluster::new("m2", 1)]))
        );
        assert_eq!(o.affinity_name.as_deref(), Some("backup"));
    }
}
