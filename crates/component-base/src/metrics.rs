//! The metrics every Karmada component exports, with client-go's, controller-runtime's and the
//! Prometheus Go client's names, labels and buckets: build info, leader status, workqueues,
//! REST client requests and the process collector. A component registers its own families
//! into the same registry ([`ComponentMetrics::register`]).

use std::sync::Arc;
use std::time::Instant;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// A series' labels, as name/value pairs.
pub type Labels = Vec<(String, String)>;
/// A histogram family whose histograms share one bucket layout.
pub type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

/// `prometheus.ExponentialBuckets`: each bound the previous one times `factor`, so that the
/// bounds are the very floats the reference prints (`9.999999999999999e-06`, not `1e-05`).
pub fn exponential_buckets(start: f64, factor: f64, count: usize) -> Vec<f64> {
    std::iter::successors(Some(start), |b| Some(b * factor))
        .take(count)
        .collect()
}

/// client-go's workqueue latency buckets: 10 ns to 1,000 s, ×10.
fn workqueue_histogram() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

/// Labels from string pairs.
pub fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The registry of the process and the families every component has. (The registry ends
/// each help text with a period: the reference's texts are given without theirs.)
pub struct ComponentMetrics {
    registry: std::sync::Mutex<Registry>,
    leader: Family<Labels, Gauge>,
    workqueue: WorkqueueFamilies,
}

impl std::fmt::Debug for ComponentMetrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ComponentMetrics")
    }
}

impl Default for ComponentMetrics {
    fn default() -> Self {
        Self::new()
    }
}

impl ComponentMetrics {
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let build_info = Family::<Labels, Gauge>::default();
        registry.register(
            "karmada_build_info",
            "Karmada build metadata exposed as labels with a constant value of 1",
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
                // GOOS/GOARCH spelling, as the reference prints it (`linux/amd64`).
                (
                    "platform",
                    &format!("{}/{}", std::env::consts::OS, crate::flags::go_arch()),
                ),
            ]))
            .set(1);
        let leader = Family::<Labels, Gauge>::default();
        registry.register(
            "leader_election_master_status",
            "Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name",
            leader.clone(),
        );
        let workqueue = WorkqueueFamilies::register(&mut registry);
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            rest_client().requests.clone(),
        );
        registry.register_collector(Box::new(ProcessCollector));
        Self {
            registry: std::sync::Mutex::new(registry),
            leader,
            workqueue,
        }
    }

    /// Leadership of the (unnamed) election: 1 leading, 0 standby.
    pub fn set_leader(&self, leading: bool) {
        self.leader
            .get_or_create(&labels(&[("name", "")]))
            .set(i64::from(leading));
    }

    /// The workqueue metrics of the queue called `name` (its `name` and `controller` label),
    /// created with all series at zero on first use, as client-go creates them with the queue.
    pub fn workqueue(&self, name: &str) -> Arc<WorkqueueMetrics> {
        self.workqueue.get_or_create(name)
    }

    /// The registry, for a component registering several families at once.
    pub fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Let another part of the process (the estimator client) add its metric families.
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

/// The families of client-go's workqueue metrics (as controller-runtime registers them: every
/// series labelled `controller` and `name`, both the queue's name) and the queues using them.
struct WorkqueueFamilies {
    depth: Family<Labels, Gauge>,
    adds: Family<Labels, Counter>,
    retries: Family<Labels, Counter>,
    queue_duration: HistogramFamily,
    work_duration: HistogramFamily,
    queues: Arc<std::sync::Mutex<Vec<Arc<WorkqueueMetrics>>>>,
}

impl WorkqueueFamilies {
    fn register(registry: &mut Registry) -> Self {
        let depth = Family::<Labels, Gauge>::default();
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue by workqueue and priority",
            depth.clone(),
        );
        let adds = Family::<Labels, Counter>::default();
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            adds.clone(),
        );
        let queue_duration =
            HistogramFamily::new_with_constructor(workqueue_histogram as fn() -> Histogram);
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue_duration.clone(),
        );
        let work_duration =
            HistogramFamily::new_with_constructor(workqueue_histogram as fn() -> Histogram);
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            work_duration.clone(),
        );
        let retries = Family::<Labels, Counter>::default();
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            retries.clone(),
        );
        let queues = Arc::new(std::sync::Mutex::new(Vec::new()));
        registry.register_collector(Box::new(WorkqueueCollector {
            queues: queues.clone(),
        }));
        Self {
            depth,
            adds,
            retries,
            queue_duration,
            work_duration,
            queues,
        }
    }

    fn get_or_create(&self, name: &str) -> Arc<WorkqueueMetrics> {
        let mut queues = self.queues.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(q) = queues.iter().find(|q| q.name == name) {
            return q.clone();
        }
        let l = labels(&[("controller", name), ("name", name)]);
        let mut with_priority = l.clone();
        with_priority.push(("priority".into(), String::new()));
        let q = Arc::new(WorkqueueMetrics {
            name: name.to_string(),
            depth: self.depth.get_or_create(&with_priority).clone(),
            adds: self.adds.get_or_create(&l).clone(),
            retries: self.retries.get_or_create(&l).clone(),
            queue_duration: self.queue_duration.get_or_create(&l).clone(),
            work_duration: self.work_duration.get_or_create(&l).clone(),
            running: Default::default(),
        });
        queues.push(q.clone());
        q
    }
}

/// client-go's workqueue metrics of one queue. The queue reports each item's life:
/// [`added`](Self::added) when it becomes waiting (not when deduplicated),
/// [`started`](Self::started) when a worker takes it, [`finished`](Self::finished) when the
/// worker is done, [`retried`](Self::retried) when it is put back for a later attempt.
/// The two "in progress" gauges are computed from the running items at scrape time.
#[derive(Debug)]
pub struct WorkqueueMetrics {
    name: String,
    depth: Gauge,
    adds: Counter,
    retries: Counter,
    queue_duration: Histogram,
    work_duration: Histogram,
    running: std::sync::Mutex<Running>,
}

#[derive(Debug, Default)]
struct Running {
    next: u64,
    started: std::collections::HashMap<u64, Instant>,
}

/// One item being processed; give it back to [`WorkqueueMetrics::finished`].
#[derive(Debug)]
#[must_use]
pub struct WorkToken(u64);

impl WorkqueueMetrics {
    /// An item was added (`workqueue_adds_total`, `workqueue_depth`); the time to give to
    /// [`started`](Self::started).
    pub fn added(&self) -> Instant {
        self.adds.inc();
        self.depth.inc();
        Instant::now()
    }

    /// A worker took an item added at `added_at` (`workqueue_queue_duration_seconds`).
    pub fn started(&self, added_at: Option<Instant>) -> WorkToken {
        self.depth.dec();
        let now = Instant::now();
        if let Some(at) = added_at {
            self.queue_duration
                .observe(now.saturating_duration_since(at).as_secs_f64());
        }
        let mut r = self.running.lock().unwrap_or_else(|p| p.into_inner());
        r.next += 1;
        let id = r.next;
        r.started.insert(id, now);
        WorkToken(id)
    }

    /// The worker is done with the item (`workqueue_work_duration_seconds`).
    pub fn finished(&self, token: WorkToken) {
        let started = self
            .running
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .started
            .remove(&token.0);
        if let Some(at) = started {
            self.work_duration.observe(at.elapsed().as_secs_f64());
        }
    }

    /// The item is put back for a later attempt (`workqueue_retries_total`).
    pub fn retried(&self) {
        self.retries.inc();
    }

    /// Add, take and finish one item processed at once by the caller.
    pub fn process<T>(&self, work: impl FnOnce() -> T) -> T {
        let token = self.started(Some(self.added()));
        let out = work();
        self.finished(token);
        out
    }

    /// `(unfinished_work_seconds, longest_running_processor_seconds)` at `now`: the summed and
    /// the longest running time of the items being processed.
    fn in_progress(&self, now: Instant) -> (f64, f64) {
        let r = self.running.lock().unwrap_or_else(|p| p.into_inner());
        r.started.values().fold((0.0, 0.0), |(sum, longest), at| {
            let d = now.saturating_duration_since(*at).as_secs_f64();
            (sum + d, f64::max(longest, d))
        })
    }
}

/// `workqueue_unfinished_work_seconds` and `workqueue_longest_running_processor_seconds`,
/// computed at scrape time (client-go refreshes them every 500 ms).
#[derive(Debug)]
struct WorkqueueCollector {
    queues: Arc<std::sync::Mutex<Vec<Arc<WorkqueueMetrics>>>>,
}

impl Collector for WorkqueueCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let now = Instant::now();
        let rows: Vec<(Labels, (f64, f64))> = self
            .queues
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(|q| {
                let l = labels(&[("controller", &q.name), ("name", &q.name)]);
                (l, q.in_progress(now))
            })
            .collect();
        // (name, help, whether the value is the longest rather than the sum)
        let gauges = [
            (
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
                false,
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running.",
                true,
            ),
        ];
        for (name, help, longest) in gauges {
            let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
            for (l, (sum, max)) in &rows {
                let v = if longest { *max } else { *sum };
                ConstGauge::new(v).encode(family.encode_family(l)?)?;
            }
        }
        Ok(())
    }
}

/// client-go's REST client metrics, shared by every client of the process (client-go keeps
/// them in a global registry too).
#[derive(Debug, Default)]
pub struct RestClientMetrics {
    requests: Family<Labels, Counter>,
}

impl RestClientMetrics {
    /// One request answered with `code` (a status code, or `<error>` when none came) to
    /// `method` (`GET`, `PATCH`, ...) on `host` (the server's `host:port`).
    pub fn request(&self, code: &str, method: &str, host: &str) {
        self.requests
            .get_or_create(&labels(&[
                ("code", code),
                ("host", host),
                ("method", method),
            ]))
            .inc();
    }
}

#[cfg(test)]
impl RestClientMetrics {
    /// The count of one series (tests).
    pub(crate) fn count(&self, code: &str, method: &str, host: &str) -> u64 {
        self.requests
            .get_or_create(&labels(&[
                ("code", code),
                ("host", host),
                ("method", method),
            ]))
            .get()
    }
}

/// The process's REST client metrics.
pub fn rest_client() -> &'static RestClientMetrics {
    static REST_CLIENT: std::sync::OnceLock<RestClientMetrics> = std::sync::OnceLock::new();
    REST_CLIENT.get_or_init(RestClientMetrics::default)
}

/// The Prometheus Go client's process collector: read from `/proc` at each scrape. A file that
/// cannot be read leaves out its metrics (there is none outside Linux).
#[derive(Debug)]
struct ProcessCollector;

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sample = ProcessSample::read();
        for (name, help, kind, value) in sample.metrics() {
            let Some(v) = value else { continue };
            let m = encoder.encode_descriptor(name, help, None, kind)?;
            match kind {
                MetricType::Counter => ConstCounter::new(v).encode(m)?,
                _ => ConstGauge::new(v).encode(m)?,
            }
        }
        Ok(())
    }
}

/// What the process collector reports, each `None` when its source could not be read.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProcessSample {
    pub cpu_seconds: Option<f64>,
    pub resident_memory_bytes: Option<f64>,
    pub virtual_memory_bytes: Option<f64>,
    pub virtual_memory_max_bytes: Option<f64>,
    pub open_fds: Option<f64>,
    pub max_fds: Option<f64>,
    pub start_time_seconds: Option<f64>,
    pub network_receive_bytes: Option<f64>,
    pub network_transmit_bytes: Option<f64>,
}

/// Clock ticks per second of `/proc/<pid>/stat` (procfs, which the Go client uses, assumes 100
/// as well).
const USER_HZ: f64 = 100.0;

/// The stat fields the collector reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ProcStat {
    /// `utime + stime`, in clock ticks.
    pub cpu_ticks: u64,
    /// Start time after boot, in clock ticks.
    pub start_ticks: u64,
    pub vsize_bytes: u64,
}

/// Fields of `/proc/<pid>/stat`, counted after the command name (which may hold spaces and
/// parentheses, so it ends at the last `)`).
pub fn parse_proc_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    // Field 3 (state) is the first one after the name.
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
    Some(ProcStat {
        cpu_ticks: field(14)? + field(15)?,
        start_ticks: field(22)?,
        vsize_bytes: field(23)?,
    })
}

/// `VmRSS` of `/proc/<pid>/status` in bytes (the kernel's resident pages times the page size,
/// the value of `rss` in stat times the page size).
pub fn parse_status_rss(text: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: f64 = line["VmRSS:".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    Some(kib * 1024.0)
}

/// The soft limit of one row of `/proc/<pid>/limits`; `unlimited` is the largest u64, as
/// procfs reports it.
fn soft_limit(text: &str, row: &str) -> Option<f64> {
    let line = text.lines().find(|l| l.starts_with(row))?;
    match line[row.len()..].split_whitespace().next()? {
        "unlimited" => Some(u64::MAX as f64),
        v => v.parse::<u64>().ok().map(|v| v as f64),
    }
}

/// `(max open files, max address space)` soft limits from `/proc/<pid>/limits`.
pub fn parse_limits(text: &str) -> (Option<f64>, Option<f64>) {
    (
        soft_limit(text, "Max open files"),
        soft_limit(text, "Max address space"),
    )
}

/// `btime` of `/proc/stat`: the boot time, in seconds since the epoch.
pub fn parse_boot_time(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))?
        .trim()
        .parse()
        .ok()
}

/// `IpExt` `InOctets` and `OutOctets` of `/proc/<pid>/net/netstat` (what the Go client
/// reports as the process's network bytes: the counters of its network namespace), 0 when a
/// counter is absent, as there.
pub fn parse_netstat_octets(text: &str) -> (f64, f64) {
    let mut rows = text.lines().filter_map(|l| l.strip_prefix("IpExt:"));
    let (Some(names), Some(values)) = (rows.next(), rows.next()) else {
        return (0.0, 0.0);
    };
    let mut received = 0.0;
    let mut sent = 0.0;
    for (name, value) in names.split_whitespace().zip(values.split_whitespace()) {
        match name {
            "InOctets" => received = value.parse().unwrap_or(0.0),
            "OutOctets" => sent = value.parse().unwrap_or(0.0),
            _ => {}
        }
    }
    (received, sent)
}

impl ProcessSample {
    /// This process, now.
    pub fn read() -> Self {
        let read = |p: &str| std::fs::read_to_string(p).ok();
        let mut s = Self::default();
        if let Some(stat) = read("/proc/self/stat").as_deref().and_then(parse_proc_stat) {
            s.cpu_seconds = Some(stat.cpu_ticks as f64 / USER_HZ);
            s.virtual_memory_bytes = Some(stat.vsize_bytes as f64);
            s.start_time_seconds = read("/proc/stat")
                .as_deref()
                .and_then(parse_boot_time)
                .map(|boot| boot as f64 + stat.start_ticks as f64 / USER_HZ);
        }
        s.resident_memory_bytes = read("/proc/self/status")
            .as_deref()
            .and_then(parse_status_rss);
        if let Some(limits) = read("/proc/self/limits") {
            (s.max_fds, s.virtual_memory_max_bytes) = parse_limits(&limits);
        }
        s.open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|d| d.count() as f64);
        if let Some(netstat) = read("/proc/self/net/netstat") {
            let (rx, tx) = parse_netstat_octets(&netstat);
            s.network_receive_bytes = Some(rx);
            s.network_transmit_bytes = Some(tx);
        }
        s
    }

    /// `(name, help, type, value)` of each metric, with the reference's names (a counter's
    /// without its `_total`, which the encoder adds).
    fn metrics(&self) -> [(&'static str, &'static str, MetricType, Option<f64>); 9] {
        use MetricType::{Counter, Gauge};
        [
            (
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                Counter,
                self.cpu_seconds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                Gauge,
                self.max_fds,
            ),
            (
                "process_network_receive_bytes",
                "Number of bytes received by the process over the network.",
                Counter,
                self.network_receive_bytes,
            ),
            (
                "process_network_transmit_bytes",
                "Number of bytes sent by the process over the network.",
                Counter,
                self.network_transmit_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                Gauge,
                self.open_fds,
            ),
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                Gauge,
                self.resident_memory_bytes,
            ),
            (
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
                Gauge,
                self.start_time_seconds,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                Gauge,
                self.virtual_memory_bytes,
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                Gauge,
                self.virtual_memory_max_bytes,
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Dashboards filter `karmada_build_info` by the reference's GOOS/GOARCH spelling.
    #[test]
    fn build_info_names_the_platform_as_go_does() {
        let text = ComponentMetrics::new().encode().unwrap();
        let want = format!(
            r#"platform="{}/{}""#,
            std::env::consts::OS,
            crate::flags::go_arch()
        );
        assert!(text.contains(&want), "{text}");
        #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
        assert!(text.contains(r#"platform="linux/amd64""#), "{text}");
    }

    #[test]
    fn workqueue_metrics_follow_the_items() {
        let m = ComponentMetrics::new();
        // A queue that never sees an item still exports its series.
        m.workqueue("ClusterReconcileWorker");
        let q = m.workqueue("scheduler-queue");
        assert!(Arc::ptr_eq(&q, &m.workqueue("scheduler-queue")));
        let added = q.added();
        let token = q.started(Some(added));
        let text = m.encode().unwrap();
        let l = r#"controller="scheduler-queue",name="scheduler-queue""#;
        assert!(
            text.contains(&format!("workqueue_adds_total{{{l}}} 1")),
            "{text}"
        );
        assert!(
            text.contains(&format!(r#"workqueue_depth{{{l},priority=""}} 0"#)),
            "{text}"
        );
        assert!(
            text.contains(&format!("workqueue_queue_duration_seconds_count{{{l}}} 1")),
            "{text}"
        );
        assert!(text.contains(&format!("workqueue_work_duration_seconds_count{{{l}}} 0")));
        for name in [
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
        ] {
            assert!(text.contains(&format!("# TYPE {name} gauge")), "{text}");
            assert!(
                text.contains(&format!(
                    r#"{name}{{controller="ClusterReconcileWorker",name="ClusterReconcileWorker"}} 0.0"#
                )),
                "{text}"
            );
        }
        let later = Instant::now() + Duration::from_secs(3);
        let (sum, longest) = q.in_progress(later);
        assert!((3.0..4.0).contains(&sum) && (3.0..4.0).contains(&longest));
        let second = q.started(None);
        let (sum, longest) = q.in_progress(later);
        assert!(
            sum > longest && (3.0..4.0).contains(&longest),
            "{sum} {longest}"
        );
        q.finished(token);
        q.finished(second);
        q.retried();
        assert_eq!(q.in_progress(later), (0.0, 0.0));
        let text = m.encode().unwrap();
        assert!(text.contains(&format!("workqueue_work_duration_seconds_count{{{l}}} 2")));
        assert!(text.contains(&format!("workqueue_retries_total{{{l}}} 1")));
        // client-go's buckets: 1e-8 s to 1,000 s by ×10.
        let buckets = exponential_buckets(10e-9, 10.0, 12);
        assert_eq!(buckets.len(), 12);
        assert_eq!(buckets[0], 1e-8);
        assert_eq!(buckets[3].to_string(), "0.000009999999999999999");
        assert!(
            text.contains(&format!(
                r#"workqueue_queue_duration_seconds_bucket{{le="1000.0",{l}}} 1"#
            )),
            "{text}"
        );
        let worker = m.workqueue("ClusterReconcileWorker");
        assert_eq!(worker.process(|| 7), 7);
        let text = m.encode().unwrap();
        assert!(text.contains(
            r#"workqueue_adds_total{controller="ClusterReconcileWorker",name="ClusterReconcileWorker"} 1"#
        ));
    }

    #[test]
    fn proc_stat_fields_are_counted_after_the_command_name() {
        // The name holds spaces and a parenthesis; fields 14, 15, 22 and 23 follow it.
        let stat = "4242 (tokio (rt) x) S 1 4242 4242 0 -1 4194560 3390 0 0 0 \
                    12 5 0 0 20 0 9 0 364903 1346441216 11859 18446744073709551615";
        assert_eq!(
            parse_proc_stat(stat),
            Some(ProcStat {
                cpu_ticks: 17,
                start_ticks: 364903,
                vsize_bytes: 1346441216,
            })
        );
        assert_eq!(parse_proc_stat("4242 (truncated"), None);
        assert_eq!(parse_proc_stat("4242 (short) S 1 2"), None);
    }

    #[test]
    fn proc_status_limits_stat_and_netstat() {
        let status = "Name:\tkarmada\nVmSize:\t 1314884 kB\nVmRSS:\t   47704 kB\nRssAnon:\t 1 kB\n";
        assert_eq!(parse_status_rss(status), Some(47704.0 * 1024.0));
        assert_eq!(parse_status_rss("Name:\tx\n"), None);

        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max cpu time              unlimited            unlimited            seconds   \n\
                      Max open files            20000                1048576              files     \n\
                      Max address space         unlimited            unlimited            bytes     \n";
        assert_eq!(
            parse_limits(limits),
            (Some(20000.0), Some(18446744073709551615.0))
        );
        assert_eq!(parse_limits(""), (None, None));

        let stat = "cpu  1 2 3\nintr 5\nbtime 1796116650\nprocesses 9\n";
        assert_eq!(parse_boot_time(stat), Some(1796116650));
        assert_eq!(parse_boot_time("cpu 1\n"), None);

        let netstat = "TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 0\n\
                       IpExt: InNoRoutes InTruncatedPkts InOctets OutOctets\n\
                       IpExt: 0 0 1490403096 1134956564\n";
        assert_eq!(parse_netstat_octets(netstat), (1490403096.0, 1134956564.0));
        assert_eq!(parse_netstat_octets("TcpExt: A\nTcpExt: 1\n"), (0.0, 0.0));
    }

    /// On Linux, every process metric of the Go client is there, with its type.
    #[cfg(target_os = "linux")]
    #[test]
    fn process_metrics_are_read_from_proc() {
        let s = ProcessSample::read();
        assert!(s.metrics().iter().all(|(_, _, _, v)| v.is_some()), "{s:?}");
        assert!(s.open_fds.unwrap() >= 3.0 && s.max_fds.unwrap() >= s.open_fds.unwrap());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let start = s.start_time_seconds.unwrap();
        assert!(
            start <= now + 1.0 && start > now - 86400.0 * 365.0,
            "{start}"
        );
        let text = ComponentMetrics::new().encode().unwrap();
        for (name, kind) in [
            ("process_cpu_seconds", "counter"),
            ("process_network_receive_bytes", "counter"),
            ("process_network_transmit_bytes", "counter"),
            ("process_resident_memory_bytes", "gauge"),
            ("process_virtual_memory_bytes", "gauge"),
            ("process_virtual_memory_max_bytes", "gauge"),
            ("process_open_fds", "gauge"),
            ("process_max_fds", "gauge"),
            ("process_start_time_seconds", "gauge"),
        ] {
            assert!(
                text.contains(&format!("# TYPE {name} {kind}\n")),
                "{name}: {text}"
            );
        }
        assert!(text.contains("\nprocess_cpu_seconds_total "), "{text}");
    }
}
