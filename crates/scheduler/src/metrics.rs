//! Prometheus metrics with the reference's names, labels and buckets (spec §8.3).

use std::sync::Arc;
use std::time::Duration;

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use scheduler_core::framework::Code;
use scheduler_core::observe::{ExtensionPoint, Step, StepObserver};

type Labels = Vec<(String, String)>;
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

fn e2e_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

fn extension_point_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.0001, 2.0, 12))
}

fn plugin_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.00001, 1.5, 20))
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
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

/// All metrics of the process and the registry that serves them.
pub struct Metrics {
    registry: std::sync::Mutex<Registry>,
    schedule_attempts: Family<Labels, Counter>,
    e2e_duration: HistogramFamily,
    algorithm_duration: HistogramFamily,
    incoming_bindings: Family<Labels, Counter>,
    extension_point_duration: HistogramFamily,
    plugin_duration: HistogramFamily,
    leader: Family<Labels, Gauge>,
    queue_depth: Family<Labels, Gauge>,
    queue_adds: Family<Labels, Counter>,
    queue_retries: Family<Labels, Counter>,
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
        let mut registry = Registry::default();
        let schedule_attempts = Family::<Labels, Counter>::default();
        registry.register(
            "karmada_scheduler_schedule_attempts",
            "Number of attempts to schedule resourceBinding",
            schedule_attempts.clone(),
        );
        let e2e_duration =
            HistogramFamily::new_with_constructor(e2e_histogram as fn() -> Histogram);
        registry.register(
            "karmada_scheduler_e2e_scheduling_duration_seconds",
            "E2E scheduling latency in seconds",
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
            "Number of bindings added to scheduling queues by event type.",
            incoming_bindings.clone(),
        );
        let extension_point_duration =
            HistogramFamily::new_with_constructor(extension_point_histogram as fn() -> Histogram);
        registry.register(
            "karmada_scheduler_framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            extension_point_duration.clone(),
        );
        let plugin_duration =
            HistogramFamily::new_with_constructor(plugin_histogram as fn() -> Histogram);
        registry.register(
            "karmada_scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            plugin_duration.clone(),
        );
        let build_info = Family::<Labels, Gauge>::default();
        registry.register(
            "karmada_build_info",
            "A metric with a constant '1' value labeled by git version, git commit, git tree state, build date, Go version, and compiler from which Karmada was built, and platform on which it is running.",
            build_info.clone(),
        );
        build_info
            .get_or_create(&labels(&[
                ("git_version", concat!("v", env!("CARGO_PKG_VERSION"))),
                ("git_commit", ""),
                ("git_short_commit", ""),
                ("git_tree_state", ""),
                ("build_date", ""),
                ("go_version", ""),
                ("compiler", "rustc"),
                (
                    "platform",
                    &format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
                ),
            ]))
            .set(1);
        let leader = Family::<Labels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
            leader.clone(),
        );
        let queue_depth = Family::<Labels, Gauge>::default();
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            queue_depth.clone(),
        );
        let queue_adds = Family::<Labels, Counter>::default();
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            queue_adds.clone(),
        );
        let queue_retries = Family::<Labels, Counter>::default();
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            queue_retries.clone(),
        );
        Self {
            registry: std::sync::Mutex::new(registry),
            schedule_attempts,
            e2e_duration,
            algorithm_duration,
            incoming_bindings,
            extension_point_duration,
            plugin_duration,
            leader,
            queue_depth,
            queue_adds,
            queue_retries,
        }
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

    /// Leadership of the (unnamed) election: 1 leading, 0 standby.
    pub fn set_leader(&self, leading: bool) {
        self.leader
            .get_or_create(&labels(&[("name", "")]))
            .set(i64::from(leading));
    }

    /// The scheduling queue's depth, adds and retries (`name=controller=scheduler-queue`).
    pub fn queue(&self, depth: usize, added: bool, retried: bool) {
        let l = labels(&[
            ("controller", "scheduler-queue"),
            ("name", "scheduler-queue"),
        ]);
        let mut with_priority = l.clone();
        with_priority.push(("priority".into(), String::new()));
        self.queue_depth
            .get_or_create(&with_priority)
            .set(depth as i64);
        if added {
            self.queue_adds.get_or_create(&l).inc();
        }
        if retried {
            self.queue_retries.get_or_create(&l).inc();
        }
    }

    /// Let another component (the estimator client) add its metric families.
    pub fn register(&self, f: impl FnOnce(&mut Registry)) {
        f(&mut self.registry.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// The text exposition of every metric.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut out = String::new();
        encode(
            &mut out,
            &self.registry.lock().unwrap_or_else(|p| p.into_inner()),
        )?;
        Ok(out)
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
        assert!(text.contains("karmada_build_info{git_version="));
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
}
