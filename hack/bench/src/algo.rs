//! The Rust algorithm's time per binding, measured in-process on the run's own workload.
//!
//! The daemon observes `karmada_scheduler_scheduling_algorithm_duration_seconds` per step as
//! upstream does, but in buckets of 1 ms and up, where the Rust steps mostly fall into the
//! first one. The bench therefore also times the very function the daemon calls,
//! `Scheduler::schedule_binding`, with the daemon's default plugins, gates and general
//! estimator, over the same clusters and bindings: the whole algorithm of an attempt, at full
//! precision.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use karmada_api::Cluster;
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};
use scheduler_core::features::FeatureGates;
use scheduler_core::general::GeneralEstimator;
use scheduler_core::schedule::{BindingInput, Outcome, ScheduleConfig, Scheduler};
use scheduler_core::snapshot::Snapshot;
use serde_json::Value;

use crate::workload::BindingTemplate;

/// Seconds per binding (second of two passes, so caches are warm as in a running daemon).
pub fn time_bindings(clusters: &[Value], bindings: &[BindingTemplate]) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::with_capacity(bindings.len());
    schedule_each(clusters, bindings, 2, |pass, _, dt| {
        if pass == 1 {
            out.push(dt);
        }
    })?;
    Ok(out)
}

/// Schedules every binding `passes` times in order, giving `each` the pass, the outcome and
/// the seconds it took.
pub fn schedule_each(
    clusters: &[Value],
    bindings: &[BindingTemplate],
    passes: usize,
    mut each: impl FnMut(usize, Outcome, f64),
) -> anyhow::Result<()> {
    let clusters: Vec<Cluster> = clusters
        .iter()
        .map(|c| {
            serde_json::from_value(c.clone())
                .with_context(|| format!("decoding cluster {}", c["metadata"]["name"]))
        })
        .collect::<anyhow::Result<_>>()?;
    let specs: Vec<ResourceBindingSpec> = bindings
        .iter()
        .map(|b| {
            serde_json::from_value(b.spec.clone())
                .with_context(|| format!("decoding binding {}", b.name))
        })
        .collect::<anyhow::Result<_>>()?;
    let gates = FeatureGates::new();
    let mut general = GeneralEstimator::default();
    general.customized_cluster_resource_modeling = gates.customized_cluster_resource_modeling();
    let scheduler = Scheduler::from_plugins_flag(
        &["*"],
        ScheduleConfig {
            enable_empty_workload_propagation: false,
            gates: gates.clone(),
            reschedule_keeps_affinity_term: false,
            omit_component_results: false,
        },
    )?
    .with_estimator(Arc::new(general));
    let snapshot = Snapshot::from_clusters(clusters);
    let status = ResourceBindingStatus::default();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    for pass in 0..passes {
        for spec in &specs {
            let input = BindingInput {
                snapshot: &snapshot,
                spec,
                status: &status,
                workload_index: None,
                assumed: None,
            };
            let t = Instant::now();
            let outcome = rt.block_on(scheduler.schedule_binding(input, false));
            let dt = t.elapsed().as_secs_f64();
            each(pass, std::hint::black_box(outcome), dt);
        }
    }
    Ok(())
}
