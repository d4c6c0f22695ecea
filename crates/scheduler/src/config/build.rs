//! What the flags build: the scheduler-core pipeline, the estimator client options and, with
//! `--enable-scheduler-estimator`, the estimator sync that follows Clusters and Services.

use std::sync::Arc;

use estimator_client::sync::EstimatorSync;
use scheduler_core::estimator::Estimator;
use scheduler_core::schedule::{ScheduleConfig, Scheduler};

use crate::config::options::Options;
use crate::metrics::{Metrics, SCHEDULER_ESTIMATOR_WORKER};

/// Build the scheduler-core pipeline for these flags; `estimators` are asked beside the
/// general estimator, in order (the daemon's: the accurate estimator with
/// `--enable-scheduler-estimator`).
pub fn build_scheduler(
    opts: &Options,
    estimators: impl IntoIterator<Item = Arc<dyn Estimator>>,
) -> anyhow::Result<Scheduler> {
    let config = ScheduleConfig {
        enable_empty_workload_propagation: opts.enable_empty_workload_propagation,
        gates: opts.feature_gates.clone(),
        reschedule_keeps_affinity_term: opts.effective_reschedule_keeps_affinity_term(),
        omit_component_results: opts.effective_omit_component_results(),
    };
    let general = scheduler_core::general::GeneralEstimator::new(
        opts.feature_gates.customized_cluster_resource_modeling(),
    );
    let mut s = Scheduler::from_plugins_flag(&opts.plugins, config)
        .map_err(|e| anyhow::anyhow!("couldn't create scheduler: {e}"))?
        .with_estimator(Arc::new(general));
    for e in estimators {
        s = s.with_estimator(e);
    }
    Ok(s)
}

/// The estimator client options for these flags.
pub fn estimator_options(opts: &Options) -> estimator_client::EstimatorOptions {
    opts.estimator
        .to_options(opts.disable_scheduler_estimator_in_pull_mode)
}

/// The estimator connections (and the sync that keeps them) when
/// `--enable-scheduler-estimator` is set; their metrics are registered on `metrics`.
pub fn estimator_sync(
    opts: &Options,
    client: &kube::Client,
    metrics: &Metrics,
) -> Option<Arc<EstimatorSync>> {
    if !opts.enable_scheduler_estimator {
        return None;
    }
    let cache = Arc::new(estimator_client::ConnectionCache::over_api(
        estimator_options(opts),
        client.clone(),
    ));
    metrics.register(|r| cache.register_metrics(r));
    Some(EstimatorSync::new(
        cache,
        metrics.workqueue(SCHEDULER_ESTIMATOR_WORKER),
    ))
}

/// The accurate estimator over the estimator connections, if any.
pub fn accurate_estimator(estimators: Option<&Arc<EstimatorSync>>) -> Option<Arc<dyn Estimator>> {
    estimators.map(|e| {
        Arc::new(estimator_client::SchedulerEstimator::new(e.cache().clone())) as Arc<dyn Estimator>
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// v1.19.0's decisions by default; `PriorityBasedScheduling=false` brings v1.18.2's with
    /// its queue; each of our two flags overrides that either way.
    #[test]
    fn v1_18_decisions_follow_the_gate_unless_set() {
        let config = |args: &[&str]| match crate::config::options::parse(args) {
            Ok(crate::config::options::Invocation::Run(o)) => {
                let c = build_scheduler(&o, []).unwrap().config().clone();
                (c.reschedule_keeps_affinity_term, c.omit_component_results)
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(config(&[]), (false, false));
        let off = "--feature-gates=PriorityBasedScheduling=false";
        assert_eq!(config(&[off]), (true, true));
        assert_eq!(
            config(&[off, "--reschedule-keeps-affinity-term=false"]),
            (false, true)
        );
        assert_eq!(
            config(&[off, "--omit-component-results=false"]),
            (true, false)
        );
        assert_eq!(
            config(&[
                "--reschedule-keeps-affinity-term",
                "--omit-component-results"
            ]),
            (true, true)
        );
    }

    /// Our estimator connection flags reach the estimator client; unset, they are the
    /// reference's behaviour.
    #[test]
    fn estimator_connection_flags_reach_the_client() {
        let parse = |args: &[&str]| match crate::config::options::parse(args) {
            Ok(crate::config::options::Invocation::Run(o)) => *o,
            other => panic!("{other:?}"),
        };
        let d = estimator_options(&parse(&[]));
        assert_eq!(
            (d.server_name, d.endpoint_routing, d.failure_policy),
            (None, false, estimator_client::FailurePolicy::FailAll)
        );
        assert!(!d.tls_server_name_annotation);
        let o = estimator_options(&parse(&[
            "--scheduler-estimator-tls-server-name=estimator.test",
            "--scheduler-estimator-endpoint-routing=true",
            "--scheduler-estimator-failure-policy=per-cluster",
            "--scheduler-estimator-tls-name-annotation",
        ]));
        assert!(o.tls_server_name_annotation);
        assert_eq!(
            (
                o.server_name.as_deref(),
                o.endpoint_routing,
                o.failure_policy
            ),
            (
                Some("estimator.test"),
                true,
                estimator_client::FailurePolicy::PerCluster
            )
        );
    }
}
