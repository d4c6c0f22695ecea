//! Prometheus metrics with the reference's names, labels and buckets.

use std::sync::Arc;
use std::time::Duration;

pub use component_base::metrics::{
    ComponentMetrics, HistogramFamily, Labels, WorkToken, WorkqueueMetrics, rest_client,
};
use component_base::metrics::{exponential_buckets, labels};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric as _};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use scheduler_core::framework::Code;
use scheduler_core::observe::{ExtensionPoint, Step, StepObserver};

fn e2e_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn extension_point_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 12))
}

fn plugin_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.00001, 1.5, 20))
}

/// Incoming-binding reasons of `karmada_scheduler_queue_incoming_bindings_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IncomingEvent {
    BindingAdd,
    BindingUpdate,
    ScheduleAttemptFailure,
    ClusterChanged,
}

impl IncomingEvent {
    fn as_str(self) -> &'static str {
        match self {
            Self::BindingAdd => "BindingAdd",
            Self::BindingUpdate => "BindingUpdate",
            Self::ScheduleAttemptFailure => "ScheduleAttemptFailure",
            Self::ClusterChanged => "ClusterChanged",
        }
    }
}

/// `name` (and `controller`) label of the binding queue (legacy mode; the priority queue of the
/// reference registers no workqueue metrics).
pub const SCHEDULER_QUEUE: &str = "scheduler-queue";
/// The reference's worker that fans a cluster change out to the bindings it affects.
pub const CLUSTER_RECONCILE_WORKER: &str = "ClusterReconcileWorker";
/// The reference's worker that keeps the estimator connections (`--enable-scheduler-estimator`).
pub const SCHEDULER_ESTIMATOR_WORKER: &str = "scheduler-estimator";

/// Ours, not the reference's: tasks alive on the tokio runtime that serves `/metrics` (the
/// daemon's only runtime), read at each scrape. For soak runs (`hack/bench.sh churn`):
/// a count that keeps growing is a task leak. The Go scheduler's counterpart is
/// `go_goroutines`.
pub const TOKIO_ALIVE_TASKS: &str = "karmada_scheduler_tokio_alive_tasks";

/// Encodes [`TOKIO_ALIVE_TASKS`] when scraped on a tokio runtime (nothing otherwise).
#[derive(Debug)]
struct RuntimeCollector;

impl Collector for RuntimeCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return Ok(());
        };
        let tasks = handle.metrics().num_alive_tasks();
        let m = encoder.encode_descriptor(
            TOKIO_ALIVE_TASKS,
            "Tasks alive on the tokio runtime (this implementation's own metric)",
            None,
            MetricType::Gauge,
        )?;
        ConstGauge::new(tasks as i64).encode(m)
    }
}

/// All metrics of the process and the registry that serves them. (The registry ends each
/// help text with a period: the reference's texts are given without theirs.)
pub struct Metrics {
    schedule_attempts: Family<Labels, Counter>,
    e2e_duration: HistogramFamily,
    algorithm_duration: HistogramFamily,
    incoming_bindings: Family<Labels, Counter>,
    extension_point_duration: HistogramFamily,
    plugin_duration: HistogramFamily,
    base: Arc<ComponentMetrics>,
}

impl Metrics {
    /// The component-wide part (registry, leader, workqueues), which the servers and the
    /// lifecycle use.
    pub fn base(&self) -> Arc<ComponentMetrics> {
        self.base.clone()
    }
}

impl std::ops::Deref for Metrics {
    type Target = ComponentMetrics;
    fn deref(&self) -> &ComponentMetrics {
        &self.base
    }
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let base = Arc::new(ComponentMetrics::new());
        let mut guard = base.registry();
        let registry = &mut *guard;
        let schedule_attempts = Family::<Labels, Counter>::default();
        registry.register(
            "karmada_scheduler_schedule_attempts",
            "Number of attempts to schedule a ResourceBinding or ClusterResourceBinding",
            schedule_attempts.clone(),
        );
        let e2e_duration =
            HistogramFamily::new_with_constructor(e2e_histogram as fn() -> Histogram);
        registry.register(
            "karmada_scheduler_e2e_scheduling_duration_seconds",
            "E2e scheduling latency in seconds",
            e2e_duration.clone(),
        );
        let algorithm_duration =
            HistogramFamily::new_with_constructor(e2e_histogram as fn() -> Histogram);
        registry.register(
            "karmada_scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds(exclude scale scheduler)",
            algorithm_duration.clone(),
        );
        let incoming_bindings = Family::<Labels, Counter>::default();
        registry.register(
            "karmada_scheduler_queue_incoming_bindings",
            "Number of ResourceBinding and ClusterResourceBinding objects added to scheduling queues by event type",
            incoming_bindings.clone(),
        );
        let extension_point_duration =
            HistogramFamily::new_with_constructor(extension_point_histogram as fn() -> Histogram);
        registry.register(
            "karmada_scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point",
            extension_point_duration.clone(),
        );
        let plugin_duration =
            HistogramFamily::new_with_constructor(plugin_histogram as fn() -> Histogram);
        registry.register(
            "karmada_scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point",
            plugin_duration.clone(),
        );
        // Our addition (docs/compatibility.md): requests refused for lack of an RBAC rule.
        component_base::forbidden::register(registry, "karmada_scheduler");
        registry.register_collector(Box::new(RuntimeCollector));
        drop(guard);
        let metrics = Self {
            schedule_attempts,
            e2e_duration,
            algorithm_duration,
            incoming_bindings,
            extension_point_duration,
            plugin_duration,
            base,
        };
        // The reference builds this worker with the scheduler, whatever the flags.
        metrics.workqueue(CLUSTER_RECONCILE_WORKER);
        metrics
    }

    /// `BindingSchedule`: one attempt of the given type, its result and duration.
    pub fn binding_schedule(&self, schedule_type: &str, elapsed: Duration, ok: bool) {
        let result = if ok { "scheduled" } else { "error" };
        let l = labels(&[("result", result), ("schedule_type", schedule_type)]);
        self.schedule_attempts.get_or_create(&l).inc();
        self.e2e_duration
            .get_or_create(&l)
            .observe(elapsed.as_secs_f64());
    }

    /// One scheduling step (`Filter`, `Score`, `Select`, `AssignReplicas`).
    pub fn algorithm_step(&self, step: &str, elapsed: Duration) {
        self.algorithm_duration
            .get_or_create(&labels(&[("schedule_step", step)]))
            .observe(elapsed.as_secs_f64());
    }

    /// A binding entered the queue for this reason.
    pub fn incoming(&self, event: IncomingEvent) {
        self.incoming_bindings
            .get_or_create(&labels(&[("event", event.as_str())]))
            .inc();
    }

    /// An extension point (`Filter`, `Score`) ran with this result.
    pub fn extension_point(&self, point: &str, result: &str, elapsed: Duration) {
        self.extension_point_duration
            .get_or_create(&labels(&[("extension_point", point), ("result", result)]))
            .observe(elapsed.as_secs_f64());
    }

    /// One plugin ran at an extension point.
    pub fn plugin(&self, plugin: &str, point: &str, result: &str, elapsed: Duration) {
        self.plugin_duration
            .get_or_create(&labels(&[
                ("plugin", plugin),
                ("extension_point", point),
                ("result", result),
            ]))
            .observe(elapsed.as_secs_f64());
    }
}

/// Shared handle.
pub type SharedMetrics = Arc<Metrics>;

/// Plugin calls timed per second at most, like the reference's metrics buffer (1,000
/// samples flushed every second, the overflow dropped): timing every plugin on every cluster
/// would cost more than the plugins themselves at a thousand clusters.
pub const PLUGIN_SAMPLES_PER_SECOND: u64 = 1000;

/// Times scheduler-core into the reference's histograms: the pipeline steps
/// (`scheduling_algorithm_duration_seconds{schedule_step}`), every extension-point run
/// (`framework_extension_point_duration_seconds{extension_point,result}`) and, within a budget
/// of [`PLUGIN_SAMPLES_PER_SECOND`], whole passes of plugin calls
/// (`plugin_execution_duration_seconds{plugin,extension_point,result}`). The core has no
/// clock, so this observer's tokens are nanoseconds since it was created.
pub struct StepTimer {
    metrics: SharedMetrics,
    base: std::time::Instant,
    /// `[Filter, Score]` × `[Success, Unschedulable, Error]`, resolved once: an extension
    /// point runs once per cluster, so no label lookup on that path.
    points: [[Histogram; 3]; 2],
    /// The second (since `base`) the budget counts in, and the samples taken in it.
    window: std::sync::atomic::AtomicU64,
    taken: std::sync::atomic::AtomicU64,
}

fn code_index(code: Code) -> usize {
    match code {
        Code::Success => 0,
        Code::Unschedulable => 1,
        Code::Error => 2,
    }
}

impl StepTimer {
    /// A timer observing into `metrics`.
    pub fn new(metrics: SharedMetrics) -> Self {
        let point = |p: ExtensionPoint| {
            [Code::Success, Code::Unschedulable, Code::Error].map(|c| {
                metrics
                    .extension_point_duration
                    .get_or_create(&labels(&[
                        ("extension_point", p.as_str()),
                        ("result", c.as_str()),
                    ]))
                    .clone()
            })
        };
        let points = [point(ExtensionPoint::Filter), point(ExtensionPoint::Score)];
        Self {
            points,
            metrics,
            base: std::time::Instant::now(),
            window: Default::default(),
            taken: Default::default(),
        }
    }

    fn now(&self) -> u64 {
        u64::try_from(self.base.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn since(&self, token: u64) -> Duration {
        Duration::from_nanos(self.now().saturating_sub(token))
    }
}

impl StepObserver for StepTimer {
    fn started(&self, _step: Step) -> u64 {
        self.now()
    }

    fn finished(&self, step: Step, token: u64) {
        self.metrics
            .algorithm_step(step.as_str(), self.since(token));
    }

    fn clock(&self) -> u64 {
        self.now()
    }

    fn extension_point(&self, point: ExtensionPoint, code: Code, token: u64) {
        let row = match point {
            ExtensionPoint::Filter => &self.points[0],
            ExtensionPoint::Score => &self.points[1],
            ExtensionPoint::ScoreExtensionNormalize => return,
        };
        row[code_index(code)].observe(self.since(token).as_secs_f64());
    }

    /// Whole passes are timed while the second's budget lasts, so that the samples of one
    /// binding are never a partial picture of its plugins.
    fn time_plugins(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let second = self.now() / 1_000_000_000;
        if self.window.swap(second, Relaxed) != second {
            self.taken.store(0, Relaxed);
        }
        self.taken.load(Relaxed) < PLUGIN_SAMPLES_PER_SECOND
    }

    fn plugin(&self, point: ExtensionPoint, plugin: &'static str, code: Code, token: u64) {
        self.taken
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.metrics
            .plugin(plugin, point.as_str(), code.as_str(), self.since(token));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_labels_and_buckets() {
        let m = Metrics::new();
        m.binding_schedule("ReconcileSchedule", Duration::from_millis(3), true);
        m.incoming(IncomingEvent::BindingAdd);
        m.set_leader(true);
        let text = m.encode().unwrap();
        assert!(text.contains(
            r#"karmada_scheduler_schedule_attempts_total{result="scheduled",schedule_type="ReconcileSchedule"} 1"#
        ), "{text}");
        assert!(text.contains(
            r#"karmada_scheduler_e2e_scheduling_duration_seconds_bucket{le="0.004",result="scheduled",schedule_type="ReconcileSchedule"} 1"#
        ), "{text}");
        assert!(text.contains(r#"le="16.384""#));
        assert!(
            text.contains(
                r#"karmada_scheduler_queue_incoming_bindings_total{event="BindingAdd"} 1"#
            )
        );
        assert!(text.contains(r#"leader_election_master_status{name=""} 1"#));
        // The reference builds this worker with the scheduler, whatever the flags.
        assert!(text.contains(
            r#"workqueue_adds_total{controller="ClusterReconcileWorker",name="ClusterReconcileWorker"} 0"#
        ), "{text}");
        assert!(text.contains("karmada_build_info{git_version="));
        // Off a tokio runtime there is no task count to give.
        assert!(!text.contains(TOKIO_ALIVE_TASKS), "{text}");
    }

    #[tokio::test]
    async fn tokio_alive_tasks_counts_the_runtime_tasks() {
        let m = Metrics::new();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let _ = rx.await;
        });
        let text = m.encode().unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{TOKIO_ALIVE_TASKS} ")))
            .unwrap_or_else(|| panic!("no {TOKIO_ALIVE_TASKS} in {text}"));
        let n: i64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(n >= 1, "{line}");
        assert!(
            text.contains(&format!("# TYPE {TOKIO_ALIVE_TASKS} gauge")),
            "{text}"
        );
        let _ = tx.send(());
        task.await.unwrap();
    }

    #[test]
    fn plugin_timing_stops_when_the_budget_of_the_second_is_spent() {
        let t = StepTimer::new(Arc::new(Metrics::new()));
        let second = || t.now() / 1_000_000_000;
        let before = second();
        assert!(t.time_plugins());
        for _ in 0..PLUGIN_SAMPLES_PER_SECOND {
            t.plugin(
                ExtensionPoint::Filter,
                "APIEnablement",
                Code::Success,
                t.clock(),
            );
        }
        let spent = !t.time_plugins();
        // A new second gives a new budget; only then may timing go on.
        assert!(spent || second() != before, "budget not enforced");
        let text = t.metrics.encode().unwrap();
        assert!(text.contains(&format!(
            r#"karmada_scheduler_plugin_execution_duration_seconds_count{{plugin="APIEnablement",extension_point="Filter",result="Success"}} {PLUGIN_SAMPLES_PER_SECOND}"#
        )), "{text}");
    }

    /// The workqueue families carry the reference's names, labels and buckets; the two
    /// in-progress gauges follow the running items.
    #[test]
    fn rest_client_requests_are_labelled_like_client_go() {
        let m = Metrics::new();
        rest_client().request("201", "POST", "unit-test:6443");
        let text = m.encode().unwrap();
        assert!(
            text.contains("# TYPE rest_client_requests counter"),
            "{text}"
        );
        assert!(
            text.contains(
                r#"rest_client_requests_total{code="201",host="unit-test:6443",method="POST"} 1"#
            ),
            "{text}"
        );
    }
}
