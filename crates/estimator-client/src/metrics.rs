//! Per-cluster metrics of the estimator client.
//!
//! The reference exposes none; these are ours (names prefixed
//! `karmada_scheduler_estimator_client_`, so they cannot clash with the estimator server's
//! own `karmada_scheduler_estimator_*` families):
//!
//! | Name | Type | Labels |
//! |---|---|---|
//! | `karmada_scheduler_estimator_client_request_duration_seconds` | histogram (0.001 s × 2^k, 15 buckets) | `cluster`, `method` |
//! | `karmada_scheduler_estimator_client_requests_total` | counter | `cluster`, `method`, `result` ∈ `success`, `error`, `timeout`, `no_connection` |
//! | `karmada_scheduler_estimator_client_connected` | gauge (1 connected, 0 not) | `cluster` |
//! | `karmada_scheduler_estimator_client_dials_total` | counter | `cluster`, `result` ∈ `success`, `error` |
//!
//! `method` is the gRPC method name (`MaxAvailableReplicas`, ...). A deleted cluster's
//! series are removed.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// gRPC methods of the estimator service.
pub const METHODS: [&str; 3] = [
    "MaxAvailableReplicas",
    "MaxAvailableComponentSets",
    "GetUnschedulableReplicas",
];

/// Outcome of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallResult {
    /// Answered.
    Success,
    /// The RPC failed.
    Error,
    /// The fan-out deadline passed first.
    Timeout,
    /// No connection to the cluster's estimator.
    NoConnection,
}

impl CallResult {
    const ALL: [CallResult; 4] = [
        CallResult::Success,
        CallResult::Error,
        CallResult::Timeout,
        CallResult::NoConnection,
    ];

    fn label(self) -> &'static str {
        match self {
            CallResult::Success => "success",
            CallResult::Error => "error",
            CallResult::Timeout => "timeout",
            CallResult::NoConnection => "no_connection",
        }
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    cluster: String,
    // Static: no allocation per call for the parts that are constants.
    method: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabels {
    cluster: String,
    method: &'static str,
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ClusterLabels {
    cluster: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DialLabels {
    cluster: String,
    result: String,
}

#[derive(Clone)]
struct Buckets;

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(exponential_buckets(0.001, 2.0, 15))
    }
}

/// The metric families; cheap to clone (clones share the series).
#[derive(Clone)]
pub struct EstimatorMetrics {
    duration: Family<MethodLabels, Histogram, Buckets>,
    requests: Family<ResultLabels, Counter>,
    connected: Family<ClusterLabels, Gauge>,
    dials: Family<DialLabels, Counter>,
}

impl Default for EstimatorMetrics {
    fn default() -> Self {
        Self {
            duration: Family::new_with_constructor(Buckets),
            requests: Family::default(),
            connected: Family::default(),
            dials: Family::default(),
        }
    }
}

impl EstimatorMetrics {
    /// Adds the families to `registry` (see the module documentation for names).
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "karmada_scheduler_estimator_client_request_duration_seconds",
            "Latency of estimator calls per cluster and gRPC method.",
            self.duration.clone(),
        );
        registry.register(
            "karmada_scheduler_estimator_client_requests",
            "Estimator calls per cluster, gRPC method and result.",
            self.requests.clone(),
        );
        registry.register(
            "karmada_scheduler_estimator_client_connected",
            "Whether the scheduler holds a ready connection to the cluster's estimator.",
            self.connected.clone(),
        );
        registry.register(
            "karmada_scheduler_estimator_client_dials",
            "Connection attempts to estimators per cluster and result.",
            self.dials.clone(),
        );
    }

    pub(crate) fn observe_call(
        &self,
        cluster: &str,
        method: &'static str,
        result: CallResult,
        took: Duration,
    ) {
        let labels = MethodLabels {
            cluster: cluster.to_string(),
            method,
        };
        self.duration
            .get_or_create(&labels)
            .observe(took.as_secs_f64());
        let labels = ResultLabels {
            cluster: labels.cluster,
            method,
            result: result.label(),
        };
        self.requests.get_or_create(&labels).inc();
    }

    pub(crate) fn set_connected(&self, cluster: &str, connected: bool) {
        let labels = ClusterLabels {
            cluster: cluster.to_string(),
        };
        self.connected
            .get_or_create(&labels)
            .set(i64::from(connected));
    }

    pub(crate) fn observe_dial(&self, cluster: &str, ok: bool) {
        let result = if ok { "success" } else { "error" };
        let labels = DialLabels {
            cluster: cluster.to_string(),
            result: result.to_string(),
        };
        self.dials.get_or_create(&labels).inc();
    }

    pub(crate) fn forget_cluster(&self, cluster: &str) {
        let cluster = cluster.to_string();
        self.connected.remove(&ClusterLabels {
            cluster: cluster.clone(),
        });
        for result in ["success", "error"] {
            self.dials.remove(&DialLabels {
                cluster: cluster.clone(),
                result: result.into(),
            });
        }
        for method in METHODS {
            self.duration.remove(&MethodLabels {
                cluster: cluster.clone(),
                method,
            });
            for result in CallResult::ALL {
                self.requests.remove(&ResultLabels {
                    cluster: cluster.clone(),
                    method,
                    result: result.label(),
                });
            }
        }
    }
}
