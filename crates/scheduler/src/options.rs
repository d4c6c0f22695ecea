//! Every command-line flag of the reference `karmada-scheduler` v1.18.2, parsed as pflag parses
//! them.
//!
//! Existing manifests are the contract: a flag line that the Go binary accepts must mean the same
//! here, and one it rejects must fail here with a message naming the flag. So this module
//! reimplements pflag's grammar rather than using a Rust argument parser with different rules:
//! `--x=v` and `--x v`; booleans only as `--x` or `--x=false`; `-v 3`, `-v=3`, `-v3`; `--`
//! ends flags; `_` in names normalised to `-` (component-base's `WordSepNormalizeFunc`); values
//! parsed with Go's `strconv`/`time` syntax; string slices split as CSV, the first use replacing
//! the default and later uses appending; feature gates merged across uses.
//!
//! [`parse`] turns `argv` into an [`Invocation`]; [`Options::validate`] applies the reference's
//! two validation steps (logging configuration, then scheduler options).

use std::collections::BTreeSet;

use scheduler_core::features::FeatureGates;

use crate::goparse::{self, GoDuration, go_quote};

/// The component name, used as the command name and as the default Lease name.
pub const COMPONENT: &str = "karmada-scheduler";

/// `spec.schedulerName` of bindings handled by default.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// `--scheduler-estimator-failure-policy` values: the reference's all-or-nothing merge, and
/// per-cluster degradation (upstream's open proposal, karmada PR #7664).
pub const FAILURE_POLICY_ALL: &str = "all";
pub const FAILURE_POLICY_PER_CLUSTER: &str = "per-cluster";

/// Default of `--concurrent-binding-syncs`: enough requests in flight to keep an apiserver
/// busy while each binding waits for its two writes.
pub const DEFAULT_CONCURRENT_BINDING_SYNCS: i64 = 16;

/// In-tree plugin names, as `--help` lists them (the workload-affinity pair only exists with
/// the `WorkloadAffinity` gate and is not listed, as upstream).
pub const IN_TREE_PLUGINS: &[&str] = &[
    "APIEnablement",
    "ClusterAffinity",
    "ClusterEviction",
    "ClusterLocality",
    "SpreadConstraint",
    "TaintToleration",
];

/// Leader-election settings (`--leader-elect*`).
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElection {
    pub leader_elect: bool,
    pub resource_name: String,
    pub resource_namespace: String,
    pub lease_duration: GoDuration,
    pub renew_deadline: GoDuration,
    pub retry_period: GoDuration,
    /// Not a flag of the reference: exit (code 255) when the Lease is lost, as the reference
    /// does, instead of pausing scheduling and campaigning again.
    pub exit_on_lost_lease: bool,
}

/// The `--rate-limiter-*` flags of the scheduling queue.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RateLimiterOptions {
    pub base_delay: GoDuration,
    pub max_delay: GoDuration,
    pub qps: i64,
    pub bucket_size: i64,
}

impl RateLimiterOptions {
    /// Values ≤ 0 replaced by the defaults, silently, as upstream's `SetDefaults`.
    pub fn with_defaults(self) -> Self {
        let d = Self::default();
        Self {
            base_delay: if self.base_delay.0 <= 0 {
                d.base_delay
            } else {
                self.base_delay
            },
            max_delay: if self.max_delay.0 <= 0 {
                d.max_delay
            } else {
                self.max_delay
            },
            qps: if self.qps <= 0 { d.qps } else { self.qps },
            bucket_size: if self.bucket_size <= 0 {
                d.bucket_size
            } else {
                self.bucket_size
            },
        }
    }
}

impl Default for RateLimiterOptions {
    fn default() -> Self {
        Self {
            base_delay: GoDuration::from_millis(5),
            max_delay: GoDuration::from_secs(1000),
            qps: 10,
            bucket_size: 100,
        }
    }
}

/// Logging flags of component-base and klog, validated as component-base validates them and
/// honoured by `crate::logging` as klog honours them.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggingOptions {
    pub format: String,
    pub verbosity: u32,
    pub vmodule: Vec<(String, u32)>,
    pub flush_frequency: GoDuration,
    pub text_split_stream: bool,
    pub text_info_buffer_size: String,
    pub json_split_stream: bool,
    pub json_info_buffer_size: String,
    pub log_dir: String,
    pub log_file: String,
    pub log_file_max_size: u64,
    pub logtostderr: bool,
    pub alsologtostderr: bool,
    pub add_dir_header: bool,
    pub skip_headers: bool,
    pub one_output: bool,
    pub skip_log_headers: bool,
    pub stderrthreshold: i32,
    pub log_backtrace_at: String,
}

impl Default for LoggingOptions {
    fn default() -> Self {
        Self {
            format: "text".into(),
            verbosity: 0,
            vmodule: Vec::new(),
            flush_frequency: GoDuration::from_secs(5),
            text_split_stream: false,
            text_info_buffer_size: "0".into(),
            json_split_stream: false,
            json_info_buffer_size: "0".into(),
            log_dir: String::new(),
            log_file: String::new(),
            log_file_max_size: 1800,
            logtostderr: true,
            alsologtostderr: false,
            add_dir_header: false,
            skip_headers: false,
            one_output: false,
            skip_log_headers: false,
            stderrthreshold: 2,
            log_backtrace_at: String::new(),
        }
    }
}

/// Everything the command line can say.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub leader_election: LeaderElection,
    pub kubeconfig: String,
    pub master: String,
    pub metrics_bind_address: String,
    pub health_probe_bind_address: String,
    pub kube_api_qps: f32,
    pub kube_api_burst: i64,
    pub enable_scheduler_estimator: bool,
    pub disable_scheduler_estimator_in_pull_mode: bool,
    pub scheduler_estimator_timeout: GoDuration,
    pub scheduler_estimator_service_namespace: String,
    pub scheduler_estimator_service_prefix: String,
    pub scheduler_estimator_port: i64,
    pub scheduler_estimator_cert_file: String,
    pub scheduler_estimator_key_file: String,
    pub scheduler_estimator_ca_file: String,
    pub insecure_skip_estimator_verify: bool,
    /// Not a flag of the reference: the name estimator certificates are verified against
    /// (empty: the host dialled, as the reference).
    pub scheduler_estimator_tls_server_name: String,
    /// Not a flag of the reference: dial a ClusterIP estimator Service's ready endpoints.
    pub scheduler_estimator_endpoint_routing: bool,
    /// Not a flag of the reference: `all` (the reference's all-or-nothing merge) or
    /// `per-cluster`.
    pub scheduler_estimator_failure_policy: String,
    pub enable_empty_workload_propagation: bool,
    pub plugins: Vec<String>,
    pub scheduler_name: String,
    /// Not a flag of the reference (which schedules one binding at a time): how many
    /// bindings are scheduled at once; `1` behaves as the reference.
    pub concurrent_binding_syncs: i64,
    pub feature_gates: FeatureGates,
    pub enable_pprof: bool,
    pub profiling_bind_address: String,
    pub rate_limiter: RateLimiterOptions,
    pub logging: LoggingOptions,
    /// Normalised names of the flags given on the command line, in order of first use.
    pub changed: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            leader_election: LeaderElection {
                leader_elect: true,
                resource_name: COMPONENT.into(),
                resource_namespace: "karmada-system".into(),
                lease_duration: GoDuration::from_secs(15),
                renew_deadline: GoDuration::from_secs(10),
                retry_period: GoDuration::from_secs(2),
                exit_on_lost_lease: false,
            },
            kubeconfig: String::new(),
            master: String::new(),
            metrics_bind_address: ":8080".into(),
            health_probe_bind_address: ":10351".into(),
            kube_api_qps: 40.0,
            kube_api_burst: 60,
            enable_scheduler_estimator: false,
            disable_scheduler_estimator_in_pull_mode: false,
            scheduler_estimator_timeout: GoDuration::from_secs(3),
            scheduler_estimator_service_namespace: "karmada-system".into(),
            scheduler_estimator_service_prefix: "karmada-scheduler-estimator".into(),
            scheduler_estimator_port: 10352,
            scheduler_estimator_cert_file: String::new(),
            scheduler_estimator_key_file: String::new(),
            scheduler_estimator_ca_file: String::new(),
            insecure_skip_estimator_verify: false,
            scheduler_estimator_tls_server_name: String::new(),
            scheduler_estimator_endpoint_routing: false,
            scheduler_estimator_failure_policy: FAILURE_POLICY_ALL.into(),
            enable_empty_workload_propagation: false,
            plugins: vec!["*".into()],
            scheduler_name: DEFAULT_SCHEDULER_NAME.into(),
            concurrent_binding_syncs: DEFAULT_CONCURRENT_BINDING_SYNCS,
            feature_gates: FeatureGates::default(),
            enable_pprof: false,
            profiling_bind_address: ":6060".into(),
            rate_limiter: RateLimiterOptions::default(),
            logging: LoggingOptions::default(),
            changed: Vec::new(),
        }
    }
}

/// The help section a flag is printed in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Section {
    Logs,
    Generic,
}

/// A flag's value type; decides the parser, the `--help` type word and the zero default.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Bool,
    Str,
    Int,
    Float32,
    Duration,
    Strings,
    MapStringBool,
    Level,
    Uint,
    Severity,
    TraceLocation,
    VModule,
    Quantity,
}

impl Kind {
    /// The type word pflag prints after the flag name (empty for booleans).
    fn type_word(self) -> &'static str {
        match self {
            Kind::Bool => "",
            Kind::Str => "string",
            Kind::Int => "int",
            Kind::Float32 => "float32",
            Kind::Duration => "duration",
            Kind::Strings => "strings",
            Kind::MapStringBool => "mapStringBool",
            Kind::Level => "Level",
            Kind::Uint => "uint",
            Kind::Severity => "severity",
            Kind::TraceLocation => "traceLocation",
            Kind::VModule => "pattern=N,...",
            Kind::Quantity => "quantity",
        }
    }

    /// pflag's `defaultIsZeroValue`: zero defaults are not printed.
    fn default_is_zero(self, def: &str) -> bool {
        match self {
            Kind::Bool => def == "false",
            Kind::Duration => def == "0" || def == "0s",
            Kind::Int | Kind::Float32 | Kind::Uint => def == "0",
            Kind::Str => def.is_empty(),
            Kind::Strings => def == "[]",
            _ => matches!(def, "false" | "<nil>" | "" | "0"),
        }
    }
}

struct FlagDef {
    name: &'static str,
    shorthand: Option<char>,
    kind: Kind,
    /// pflag's `DefValue`, as printed by `--help`.
    default: &'static str,
    usage: &'static str,
    section: Section,
}

const fn flag(
    section: Section,
    name: &'static str,
    kind: Kind,
    default: &'static str,
    usage: &'static str,
) -> FlagDef {
    FlagDef {
        name,
        shorthand: None,
        kind,
        default,
        usage,
        section,
    }
}

use Kind as K;
use Section::{Generic as G, Logs as L};

const FEATURE_GATES_USAGE: &str = "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:
AllAlpha=true|false (ALPHA - default=false)
AllBeta=true|false (BETA - default=false)
ContextualLogging=true|false (BETA - default=true)
ControllerPriorityQueue=true|false (BETA - default=true)
CustomizedClusterResourceModeling=true|false (BETA - default=true)
Failover=true|false (BETA - default=false)
FederatedQuotaEnforcement=true|false (ALPHA - default=false)
GracefulEviction=true|false (BETA - default=true)
LoggingAlphaOptions=true|false (ALPHA - default=false)
LoggingBetaOptions=true|false (BETA - default=true)
MultiClusterService=true|false (ALPHA - default=false)
MultiplePodTemplatesScheduling=true|false (ALPHA - default=false)
PriorityBasedScheduling=true|false (ALPHA - default=false)
PropagateDeps=true|false (BETA - default=true)
PropagationPolicyPreemption=true|false (ALPHA - default=false)
ResourceQuotaEstimate=true|false (ALPHA - default=false)
SchedulingOvercommitProtection=true|false (ALPHA - default=false)
StatefulFailoverInjection=true|false (ALPHA - default=false)
WorkloadAffinity=true|false (ALPHA - default=false)";

/// Every flag, with the reference's name, type, default and usage text.
static FLAGS: &[FlagDef] = &[
    // --- logs: component-base logging configuration
    flag(
        L,
        "logging-format",
        K::Str,
        "text",
        "Sets the log format. Permitted formats: \"json\", \"text\".",
    ),
    flag(
        L,
        "log-flush-frequency",
        K::Duration,
        "5s",
        "Maximum number of seconds between log flushes",
    ),
    FlagDef {
        name: "v",
        shorthand: Some('v'),
        kind: K::Level,
        default: "0",
        usage: "number for the log level verbosity",
        section: L,
    },
    flag(
        L,
        "vmodule",
        K::VModule,
        "",
        "comma-separated list of pattern=N settings for file-filtered logging (only works for text log format)",
    ),
    flag(
        L,
        "log-text-split-stream",
        K::Bool,
        "false",
        "[Alpha] In text format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
    ),
    flag(
        L,
        "log-text-info-buffer-size",
        K::Quantity,
        "0",
        "[Alpha] In text format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
    ),
    flag(
        L,
        "log-json-split-stream",
        K::Bool,
        "false",
        "[Alpha] In JSON format, write error messages to stderr and info messages to stdout. The default is to write a single stream to stdout. Enable the LoggingAlphaOptions feature gate to use this.",
    ),
    flag(
        L,
        "log-json-info-buffer-size",
        K::Quantity,
        "0",
        "[Alpha] In JSON format with split output streams, the info messages can be buffered for a while to increase performance. The default value of zero bytes disables buffering. The size can be specified as number of bytes (512), multiples of 1000 (1K), multiples of 1024 (2Ki), or powers of those (3M, 4G, 5Mi, 6Gi). Enable the LoggingAlphaOptions feature gate to use this.",
    ),
    // --- logs: klog (registered with underscores; shown normalised)
    flag(
        L,
        "log-dir",
        K::Str,
        "",
        "If non-empty, write log files in this directory (no effect when -logtostderr=true)",
    ),
    flag(
        L,
        "log-file",
        K::Str,
        "",
        "If non-empty, use this log file (no effect when -logtostderr=true)",
    ),
    flag(
        L,
        "log-file-max-size",
        K::Uint,
        "1800",
        "Defines the maximum size a log file can grow to (no effect when -logtostderr=true). Unit is megabytes. If the value is 0, the maximum file size is unlimited.",
    ),
    flag(
        L,
        "logtostderr",
        K::Bool,
        "true",
        "log to standard error instead of files",
    ),
    flag(
        L,
        "alsologtostderr",
        K::Bool,
        "false",
        "log to standard error as well as files (no effect when -logtostderr=true)",
    ),
    flag(
        L,
        "add-dir-header",
        K::Bool,
        "false",
        "If true, adds the file directory to the header of the log messages",
    ),
    flag(
        L,
        "skip-headers",
        K::Bool,
        "false",
        "If true, avoid header prefixes in the log messages",
    ),
    flag(
        L,
        "one-output",
        K::Bool,
        "false",
        "If true, only write logs to their native severity level (vs also writing to each lower severity level; no effect when -logtostderr=true)",
    ),
    flag(
        L,
        "skip-log-headers",
        K::Bool,
        "false",
        "If true, avoid headers when opening log files (no effect when -logtostderr=true)",
    ),
    flag(
        L,
        "stderrthreshold",
        K::Severity,
        "2",
        "logs at or above this threshold go to stderr when writing to files and stderr (no effect when -logtostderr=true or -alsologtostderr=true)",
    ),
    flag(
        L,
        "log-backtrace-at",
        K::TraceLocation,
        ":0",
        "when logging hits line file:N, emit a stack trace",
    ),
    // --- generic
    flag(
        G,
        "leader-elect",
        K::Bool,
        "true",
        "Enable leader election, which must be true when running multi instances.",
    ),
    flag(
        G,
        "leader-elect-resource-name",
        K::Str,
        "karmada-scheduler",
        "The name of resource object that is used for locking during leader election.",
    ),
    flag(
        G,
        "leader-elect-resource-namespace",
        K::Str,
        "karmada-system",
        "The namespace of resource object that is used for locking during leader election.",
    ),
    flag(
        G,
        "leader-elect-lease-duration",
        K::Duration,
        "15s",
        "The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership of a led but unrenewed leader slot. This is effectively the maximum duration that a leader can be stopped before it is replaced by another candidate. This is only applicable if leader election is enabled.",
    ),
    flag(
        G,
        "leader-elect-renew-deadline",
        K::Duration,
        "10s",
        "The interval between attempts by the acting master to renew a leadership slot before it stops leading. This must be less than or equal to the lease duration. This is only applicable if leader election is enabled.",
    ),
    flag(
        G,
        "leader-elect-retry-period",
        K::Duration,
        "2s",
        "The duration the clients should wait between attempting acquisition and renewal of a leadership. This is only applicable if leader election is enabled.",
    ),
    flag(
        G,
        "exit-on-lost-lease",
        K::Bool,
        "false",
        "Exit with code 255 when the leader Lease cannot be renewed, as the Go karmada-scheduler does. By default this scheduler stops scheduling, keeps its caches and campaigns again (an API server outage longer than the renew deadline no longer ends the process). Not a flag of the Go karmada-scheduler.",
    ),
    flag(
        G,
        "kubeconfig",
        K::Str,
        "",
        "Path to karmada control plane kubeconfig file.",
    ),
    flag(
        G,
        "master",
        K::Str,
        "",
        "The address of the Kubernetes API server. Overrides any value in KubeConfig. Only required if out-of-cluster.",
    ),
    flag(
        G,
        "metrics-bind-address",
        K::Str,
        ":8080",
        "The TCP address that the server should bind to for serving prometheus metrics(e.g. 127.0.0.1:8080, :8080). It can be set to \"0\" to disable the metrics serving. Defaults to 0.0.0.0:8080.",
    ),
    flag(
        G,
        "health-probe-bind-address",
        K::Str,
        ":10351",
        "The TCP address that the server should bind to for serving health probes(e.g. 127.0.0.1:10351, :10351). It can be set to \"0\" to disable serving the health probe. Defaults to 0.0.0.0:10351.",
    ),
    flag(
        G,
        "kube-api-qps",
        K::Float32,
        "40",
        "QPS to use while talking with karmada-apiserver.",
    ),
    flag(
        G,
        "kube-api-burst",
        K::Int,
        "60",
        "Burst to use while talking with karmada-apiserver.",
    ),
    flag(
        G,
        "enable-scheduler-estimator",
        K::Bool,
        "false",
        "Enable calling cluster scheduler estimator for adjusting replicas.",
    ),
    flag(
        G,
        "disable-scheduler-estimator-in-pull-mode",
        K::Bool,
        "false",
        "Disable the scheduler estimator for clusters in pull mode, which takes effect only when enable-scheduler-estimator is true.",
    ),
    flag(
        G,
        "scheduler-estimator-timeout",
        K::Duration,
        "3s",
        "Specifies the timeout period of calling the scheduler estimator service.",
    ),
    flag(
        G,
        "scheduler-estimator-service-namespace",
        K::Str,
        "karmada-system",
        "The namespace to be used for discovering scheduler estimator services.",
    ),
    flag(
        G,
        "scheduler-estimator-service-prefix",
        K::Str,
        "karmada-scheduler-estimator",
        "The prefix of scheduler estimator service name",
    ),
    flag(
        G,
        "scheduler-estimator-port",
        K::Int,
        "10352",
        "The secure port on which to connect the accurate scheduler estimator.",
    ),
    flag(
        G,
        "scheduler-estimator-cert-file",
        K::Str,
        "",
        "SSL certification file used to secure scheduler estimator communication.",
    ),
    flag(
        G,
        "scheduler-estimator-key-file",
        K::Str,
        "",
        "SSL key file used to secure scheduler estimator communication.",
    ),
    flag(
        G,
        "scheduler-estimator-ca-file",
        K::Str,
        "",
        "SSL Certificate Authority file used to secure scheduler estimator communication.",
    ),
    flag(
        G,
        "insecure-skip-estimator-verify",
        K::Bool,
        "false",
        "Controls whether verifies the scheduler estimator's certificate chain and host name.",
    ),
    flag(
        G,
        "scheduler-estimator-tls-server-name",
        K::Str,
        "",
        "The name the scheduler estimators' certificates are verified against instead of the host dialled, e.g. the DNS name in the certificate of estimators reached through a virtual IP. The annotation estimator.karmada-scheduler-rs.io/tls-server-name on an estimator Service overrides it for that estimator. Not a flag of the Go karmada-scheduler.",
    ),
    flag(
        G,
        "scheduler-estimator-endpoint-routing",
        K::Bool,
        "false",
        "Dial the ready endpoints listed in the EndpointSlices of a ClusterIP estimator Service instead of its cluster IP, for control planes without kube-proxy (as kube-apiserver's --enable-aggregator-routing). Not a flag of the Go karmada-scheduler.",
    ),
    flag(
        G,
        "scheduler-estimator-failure-policy",
        K::Str,
        "all",
        "What an estimator that fails does to a binding's estimates: 'all' discards every answer of the scheduler estimators for that binding (as the Go karmada-scheduler does), 'per-cluster' discards only that cluster's. Not a flag of the Go karmada-scheduler.",
    ),
    flag(
        G,
        "enable-empty-workload-propagation",
        K::Bool,
        "false",
        "Enable workload with replicas 0 to be propagated to member clusters.",
    ),
    flag(
        G,
        "plugins",
        K::Strings,
        "[*]",
        "A list of plugins to enable. '*' enables all build-in and customized plugins, 'foo' enables the plugin named 'foo', '*,-foo' disables the plugin named 'foo'.\nAll build-in plugins: APIEnablement,ClusterAffinity,ClusterEviction,ClusterLocality,SpreadConstraint,TaintToleration.",
    ),
    flag(
        G,
        "scheduler-name",
        K::Str,
        "default-scheduler",
        "SchedulerName represents the name of the scheduler. default is 'default-scheduler'.",
    ),
    flag(
        G,
        "concurrent-binding-syncs",
        K::Int,
        "16",
        "The number of bindings scheduled at the same time (not a flag of the Go karmada-scheduler, which schedules one at a time: 1 behaves as it does). A binding is never scheduled by two workers at once, so its own writes stay ordered.",
    ),
    flag(
        G,
        "feature-gates",
        K::MapStringBool,
        "",
        FEATURE_GATES_USAGE,
    ),
    flag(
        G,
        "enable-pprof",
        K::Bool,
        "false",
        "Enable profiling via web interface host:port/debug/pprof/.",
    ),
    flag(
        G,
        "profiling-bind-address",
        K::Str,
        ":6060",
        "The TCP address for serving profiling(e.g. 127.0.0.1:6060, :6060). This is only applicable if profiling is enabled.",
    ),
    flag(
        G,
        "rate-limiter-base-delay",
        K::Duration,
        "5ms",
        "The base delay for rate limiter.",
    ),
    flag(
        G,
        "rate-limiter-max-delay",
        K::Duration,
        "16m40s",
        "The max delay for rate limiter.",
    ),
    flag(
        G,
        "rate-limiter-qps",
        K::Int,
        "10",
        "The QPS for rate limier.",
    ),
    flag(
        G,
        "rate-limiter-bucket-size",
        K::Int,
        "100",
        "The bucket size for rate limier.",
    ),
];

fn lookup(name: &str) -> Option<&'static FlagDef> {
    FLAGS.iter().find(|f| f.name == name)
}

/// component-base's `WordSepNormalizeFunc`: `log_dir` and `log-dir` are one flag.
fn normalize(name: &str) -> String {
    name.replace('_', "-")
}

/// pflag's display name in value errors: `--name`, or `-v, --v` for flags with a shorthand.
fn display_name(def: &FlagDef) -> String {
    match def.shorthand {
        Some(c) => format!("-{c}, --{}", def.name),
        None => format!("--{}", def.name),
    }
}

/// pflag's string-slice reader: empty means empty, otherwise one CSV record.
fn read_csv(value: &str) -> Result<Vec<String>, String> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let mut fields = Vec::new();
    let mut chars = value.chars().peekable();
    let mut col = 0usize;
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            col += 1;
            loop {
                match chars.next() {
                    None => {
                        return Err(format!(
                            "parse error on line 1, column {}: extraneous or missing \" in quoted-field",
                            col + 1
                        ));
                    }
                    Some('"') => {
                        col += 1;
                        if chars.peek() == Some(&'"') {
                            chars.next();
                            col += 1;
                            field.push('"');
                        } else {
                            break;
                        }
                    }
                    Some(c) => {
                        col += 1;
                        field.push(c);
                    }
                }
            }
            match chars.peek() {
                None | Some(',') => {}
                Some(_) => {
                    return Err(format!(
                        "parse error on line 1, column {}: extraneous or missing \" in quoted-field",
                        col + 1
                    ));
                }
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '"' {
                    return Err(format!(
                        "parse error on line 1, column {}: bare \" in non-quoted-field",
                        col + 1
                    ));
                }
                field.push(c);
                col += 1;
                chars.next();
            }
        }
        fields.push(field);
        match chars.next() {
            Some(',') => col += 1,
            _ => break,
        }
    }
    Ok(fields)
}

fn parse_vmodule(value: &str) -> Result<Vec<(String, u32)>, String> {
    let mut out = Vec::new();
    for pat in value.split(',') {
        if pat.is_empty() {
            continue;
        }
        let parts: Vec<&str> = pat.split('=').collect();
        if parts.len() != 2 || parts[0].is_empty() || parts[1].is_empty() {
            return Err(format!(
                "{} does not have the pattern=N format",
                go_quote(pat)
            ));
        }
        let level = goparse::parse_level(parts[1])
            .map_err(|e| format!("parsing verbosity in {}: {e}", go_quote(pat)))?;
        out.push((parts[0].to_string(), level));
    }
    Ok(out)
}

fn parse_severity(value: &str) -> Result<i32, String> {
    match value.to_ascii_uppercase().as_str() {
        "INFO" => Ok(0),
        "WARNING" => Ok(1),
        "ERROR" => Ok(2),
        "FATAL" => Ok(3),
        _ => goparse::parse_int32_base10(value),
    }
}

fn parse_trace_location(value: &str) -> Result<String, String> {
    if value.is_empty() {
        return Ok(String::new());
    }
    let syntax = || "syntax error: expect file.go:234".to_string();
    let fields: Vec<&str> = value.split(':').collect();
    if fields.len() != 2 || !fields[0].contains('.') {
        return Err(syntax());
    }
    let line: i64 = fields[1].parse().map_err(|_| syntax())?;
    if line <= 0 {
        return Err("negative or zero value for level".into());
    }
    Ok(value.to_string())
}

impl Options {
    /// Apply one flag value; `first_use` tells string slices to replace the default.
    fn set(&mut self, name: &str, value: &str, first_use: bool) -> Result<(), String> {
        let b = || goparse::parse_bool(value);
        let s = || value.to_string();
        let d = || GoDuration::parse(value);
        let i = || goparse::parse_int(value);
        let le = &mut self.leader_election;
        let lg = &mut self.logging;
        match name {
            "logging-format" => lg.format = s(),
            "log-flush-frequency" => lg.flush_frequency = d()?,
            "v" => lg.verbosity = goparse::parse_level(value)?,
            "vmodule" => {
                let items = parse_vmodule(value)?;
                lg.vmodule.extend(items);
            }
            "log-text-split-stream" => lg.text_split_stream = b()?,
            "log-text-info-buffer-size" => {
                goparse::parse_quantity_is_zero(value)?;
                lg.text_info_buffer_size = s();
            }
            "log-json-split-stream" => lg.json_split_stream = b()?,
            "log-json-info-buffer-size" => {
                goparse::parse_quantity_is_zero(value)?;
                lg.json_info_buffer_size = s();
            }
            "log-dir" => lg.log_dir = s(),
            "log-file" => lg.log_file = s(),
            "log-file-max-size" => lg.log_file_max_size = goparse::parse_uint64(value)?,
            "logtostderr" => lg.logtostderr = b()?,
            "alsologtostderr" => lg.alsologtostderr = b()?,
            "add-dir-header" => lg.add_dir_header = b()?,
            "skip-headers" => lg.skip_headers = b()?,
            "one-output" => lg.one_output = b()?,
            "skip-log-headers" => lg.skip_log_headers = b()?,
            "stderrthreshold" => lg.stderrthreshold = parse_severity(value)?,
            "log-backtrace-at" => lg.log_backtrace_at = parse_trace_location(value)?,
            "leader-elect" => le.leader_elect = b()?,
            "leader-elect-resource-name" => le.resource_name = s(),
            "exit-on-lost-lease" => le.exit_on_lost_lease = b()?,
            "leader-elect-resource-namespace" => le.resource_namespace = s(),
            "leader-elect-lease-duration" => le.lease_duration = d()?,
            "leader-elect-renew-deadline" => le.renew_deadline = d()?,
            "leader-elect-retry-period" => le.retry_period = d()?,
            "kubeconfig" => self.kubeconfig = s(),
            "master" => self.master = s(),
            "metrics-bind-address" => self.metrics_bind_address = s(),
            "health-probe-bind-address" => self.health_probe_bind_address = s(),
            "kube-api-qps" => self.kube_api_qps = goparse::parse_float32(value)?,
            "kube-api-burst" => self.kube_api_burst = i()?,
            "enable-scheduler-estimator" => self.enable_scheduler_estimator = b()?,
            "disable-scheduler-estimator-in-pull-mode" => {
                self.disable_scheduler_estimator_in_pull_mode = b()?
            }
            "scheduler-estimator-timeout" => self.scheduler_estimator_timeout = d()?,
            "scheduler-estimator-service-namespace" => {
                self.scheduler_estimator_service_namespace = s()
            }
            "scheduler-estimator-service-prefix" => self.scheduler_estimator_service_prefix = s(),
            "scheduler-estimator-port" => self.scheduler_estimator_port = i()?,
            "scheduler-estimator-cert-file" => self.scheduler_estimator_cert_file = s(),
            "scheduler-estimator-key-file" => self.scheduler_estimator_key_file = s(),
            "scheduler-estimator-ca-file" => self.scheduler_estimator_ca_file = s(),
            "insecure-skip-estimator-verify" => self.insecure_skip_estimator_verify = b()?,
            "scheduler-estimator-tls-server-name" => self.scheduler_estimator_tls_server_name = s(),
            "scheduler-estimator-endpoint-routing" => {
                self.scheduler_estimator_endpoint_routing = b()?
            }
            "scheduler-estimator-failure-policy" => self.scheduler_estimator_failure_policy = s(),
            "enable-empty-workload-propagation" => self.enable_empty_workload_propagation = b()?,
            "plugins" => {
                let items = read_csv(value)?;
                if first_use {
                    self.plugins = items;
                } else {
                    self.plugins.extend(items);
                }
            }
            "scheduler-name" => self.scheduler_name = s(),
            "concurrent-binding-syncs" => self.concurrent_binding_syncs = i()?,
            "feature-gates" => self.feature_gates.set(value).map_err(|e| e.to_string())?,
            "enable-pprof" => self.enable_pprof = b()?,
            "profiling-bind-address" => self.profiling_bind_address = s(),
            "rate-limiter-base-delay" => self.rate_limiter.base_delay = d()?,
            "rate-limiter-max-delay" => self.rate_limiter.max_delay = d()?,
            "rate-limiter-qps" => self.rate_limiter.qps = i()?,
            "rate-limiter-bucket-size" => self.rate_limiter.bucket_size = i()?,
            other => return Err(format!("no such flag -{other}")),
        }
        Ok(())
    }

    /// Whether the flag (normalised name) was given on the command line.
    pub fn was_set(&self, name: &str) -> bool {
        self.changed.iter().any(|c| c == name)
    }

    /// The reference's validation: first the logging configuration (component-base
    /// `ValidateAndApply`), then the scheduler options (`Options.Validate`). Each step returns
    /// its errors as one aggregate message (`e` or `[e1, e2]`).
    pub fn validate(&self) -> Result<(), ValidationError> {
        let logging = self.validate_logging();
        if !logging.is_empty() {
            return Err(ValidationError::Logging(aggregate(&logging)));
        }
        let mut errs = Vec::new();
        if !(0..=65535).contains(&self.scheduler_estimator_port) {
            errs.push(format!(
                "Options.SchedulerEstimatorPort: Invalid value: {}: must be a valid port between 0 and 65535 inclusive",
                self.scheduler_estimator_port
            ));
        }
        if !(1..=1024).contains(&self.concurrent_binding_syncs) {
            errs.push(format!(
                "Options.ConcurrentBindingSyncs: Invalid value: {}: must be between 1 and 1024 inclusive",
                self.concurrent_binding_syncs
            ));
        }
        if ![FAILURE_POLICY_ALL, FAILURE_POLICY_PER_CLUSTER]
            .contains(&self.scheduler_estimator_failure_policy.as_str())
        {
            errs.push(format!(
                "Options.SchedulerEstimatorFailurePolicy: Unsupported value: {}: supported values: \"{FAILURE_POLICY_ALL}\", \"{FAILURE_POLICY_PER_CLUSTER}\"",
                go_quote(&self.scheduler_estimator_failure_policy)
            ));
        }
        if self.scheduler_estimator_timeout.is_negative() {
            errs.push(format!(
                "Options.SchedulerEstimatorTimeout: Invalid value: {}: must be greater than or equal to 0",
                go_quote(&self.scheduler_estimator_timeout.to_string())
            ));
        }
        if self.scheduler_name.is_empty() {
            errs.push(
                "Options.SchedulerName: Invalid value: \"\": should not be empty".to_string(),
            );
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ValidationError::Options(aggregate(&errs)))
        }
    }

    fn validate_logging(&self) -> Vec<String> {
        let lg = &self.logging;
        let gates = &self.feature_gates;
        let mut errs = Vec::new();
        if lg.flush_frequency.0 <= 0 {
            errs.push(format!(
                "flushFrequency: Invalid value: {}: Must be greater than zero",
                go_quote(&lg.flush_frequency.to_string())
            ));
        }
        if lg.format != "text" && !lg.vmodule.is_empty() {
            errs.push(format!(
                "format: Invalid value: {}: Non-default format doesn't honor flag: vmodule",
                go_quote(&lg.format)
            ));
        }
        match lg.format.as_str() {
            "text" => {}
            "json" => {
                if !gates.enabled("LoggingBetaOptions") {
                    errs.push(
                        "format: Forbidden: Log format json is disabled, see LoggingBetaOptions feature"
                            .into(),
                    );
                }
            }
            other => errs.push(format!(
                "format: Invalid value: {}: Unsupported log format",
                go_quote(other)
            )),
        }
        if !lg.vmodule.is_empty() && !lg.format.is_empty() && lg.format != "text" {
            errs.push("vmodule: Forbidden: Only supported for text log format".into());
        }
        let alpha = gates.enabled("LoggingAlphaOptions");
        let forbidden =
            |path: &str| format!("{path}: Forbidden: Feature LoggingAlphaOptions is disabled");
        let nonzero = |q: &str| !goparse::parse_quantity_is_zero(q).unwrap_or(true);
        if !alpha {
            if lg.text_split_stream {
                errs.push(forbidden("options.text.splitStream"));
            }
            if nonzero(&lg.text_info_buffer_size) {
                errs.push(forbidden("options.text.infoBufferSize"));
            }
            if lg.json_split_stream {
                errs.push(forbidden("options.json.splitStream"));
            }
            if nonzero(&lg.json_info_buffer_size) {
                errs.push(forbidden("options.json.infoBufferSize"));
            }
        }
        errs
    }
}

/// apimachinery's aggregate error text.
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

/// Validation failure; both kinds end the process with exit code 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValidationError {
    /// The logging configuration is invalid (reported before logging starts).
    #[error("{0}")]
    Logging(String),
    /// A scheduler option is invalid.
    #[error("{0}")]
    Options(String),
}

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Invocation {
    /// Run the scheduler with these options (not yet validated).
    Run(Box<Options>),
    /// `-h`/`--help`/`help`: print [`help_text`] to stdout, exit 0.
    Help,
    /// `version`: print [`version_text`] to stdout, exit 0.
    Version,
}

/// A command-line error: print the usage, then `Error: <message>`, exit 1.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct FlagError {
    pub message: String,
    /// Whether the usage text goes before the error (flag errors do; argument errors do not).
    pub show_usage: bool,
}

fn flag_err(message: String) -> FlagError {
    FlagError {
        message,
        show_usage: true,
    }
}

/// Subcommands of the root command (cobra's `help` plus the reference's `version`; `simulate`
/// is dispatched by `main` before parsing).
const SUBCOMMANDS: &[&str] = &["help", "version"];

/// Parse `args` (without the program name) the way the reference's cobra command does.
pub fn parse<S: AsRef<str>>(args: &[S]) -> Result<Invocation, FlagError> {
    let mut opts = Options::default();
    let mut positionals: Vec<String> = Vec::new();
    let mut help = false;
    let mut i = 0;
    let args: Vec<&str> = args.iter().map(AsRef::as_ref).collect();
    let set = |opts: &mut Options, def: &FlagDef, value: &str| -> Result<(), FlagError> {
        let first = !opts.was_set(def.name);
        opts.set(def.name, value, first).map_err(|e| {
            flag_err(format!(
                "invalid argument {} for {} flag: {e}",
                go_quote(value),
                go_quote(&display_name(def))
            ))
        })?;
        if first {
            opts.changed.push(def.name.to_string());
        }
        Ok(())
    };
    while i < args.len() {
        let arg = args[i];
        i += 1;
        if arg.len() < 2 || !arg.starts_with('-') {
            positionals.push(arg.to_string());
            continue;
        }
        if let Some(body) = arg.strip_prefix("--") {
            if body.is_empty() {
                positionals.extend(args[i..].iter().map(|s| s.to_string()));
                break;
            }
            if body.starts_with('-') || body.starts_with('=') {
                return Err(flag_err(format!("bad flag syntax: {arg}")));
            }
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (body, None),
            };
            let norm = normalize(name);
            if norm == "help" {
                let v = inline.map(goparse::parse_bool).transpose().map_err(|e| {
                    flag_err(format!(
                        "invalid argument {} for \"-h, --help\" flag: {e}",
                        go_quote(inline.unwrap_or_default())
                    ))
                })?;
                help = v.unwrap_or(true);
                continue;
            }
            let Some(def) = lookup(&norm) else {
                return Err(flag_err(format!("unknown flag: --{name}")));
            };
            let value = match inline {
                Some(v) => v.to_string(),
                None if def.kind == Kind::Bool => "true".to_string(),
                None if i < args.len() => {
                    i += 1;
                    args[i - 1].to_string()
                }
                None => return Err(flag_err(format!("flag needs an argument: {arg}"))),
            };
            set(&mut opts, def, &value)?;
            continue;
        }
        // Shorthand cluster: -v3, -v=3, -v 3, -h.
        let mut shorts = &arg[1..];
        while !shorts.is_empty() {
            let c = shorts.chars().next().unwrap_or_default();
            if c == 'h' {
                help = true;
                shorts = &shorts[1..];
                continue;
            }
            let Some(def) = FLAGS.iter().find(|f| f.shorthand == Some(c)) else {
                return Err(flag_err(format!(
                    "unknown shorthand flag: '{c}' in -{shorts}"
                )));
            };
            let rest = &shorts[c.len_utf8()..];
            let value;
            if rest.len() > 1 && rest.starts_with('=') {
                value = rest[1..].to_string();
                shorts = "";
            } else if def.kind == Kind::Bool {
                value = "true".into();
                shorts = rest;
            } else if !rest.is_empty() {
                value = rest.to_string();
                shorts = "";
            } else if i < args.len() {
                value = args[i].to_string();
                i += 1;
                shorts = "";
            } else {
                return Err(flag_err(format!(
                    "flag needs an argument: '{c}' in -{shorts}"
                )));
            }
            set(&mut opts, def, &value)?;
        }
    }
    if help {
        return Ok(Invocation::Help);
    }
    if let Some(first) = positionals.first()
        && SUBCOMMANDS.contains(&first.as_str())
    {
        return Ok(match first.as_str() {
            "help" => Invocation::Help,
            _ => Invocation::Version,
        });
    }
    if positionals.iter().any(|a| !a.is_empty()) {
        let list: Vec<String> = positionals.iter().map(|a| go_quote(a)).collect();
        return Err(FlagError {
            message: format!(
                "{} does not take any arguments, got [{}]",
                go_quote(COMPONENT),
                list.join(" ")
            ),
            show_usage: false,
        });
    }
    Ok(Invocation::Run(Box::new(opts)))
}

const LONG: &str = "The karmada-scheduler is a control plane process which assigns resources to the clusters it manages.
The scheduler determines which clusters are valid placements for each resource in the scheduling queue according to
constraints and available resources. The scheduler then ranks each valid cluster and binds the resource to
the most suitable cluster.";

/// The flag sections as pflag's `FlagUsagesWrapped` prints them (no terminal: no wrapping).
fn sections() -> String {
    let mut out = String::new();
    for (section, title) in [(Section::Logs, "Logs"), (Section::Generic, "Generic")] {
        let mut defs: Vec<&FlagDef> = FLAGS.iter().filter(|f| f.section == section).collect();
        defs.sort_by_key(|f| f.name);
        let heads: Vec<String> = defs
            .iter()
            .map(|f| {
                let mut line = match f.shorthand {
                    Some(c) => format!("  -{c}, --{}", f.name),
                    None => format!("      --{}", f.name),
                };
                if !f.kind.type_word().is_empty() {
                    line.push(' ');
                    line.push_str(f.kind.type_word());
                }
                line
            })
            .collect();
        let width = heads.iter().map(String::len).max().unwrap_or(0) + 1;
        out.push_str(&format!("\n{title} flags:\n\n"));
        for (f, head) in defs.iter().zip(&heads) {
            let mut usage = f.usage.to_string();
            if !f.kind.default_is_zero(f.default) {
                if f.kind == Kind::Str {
                    usage.push_str(&format!(" (default {})", go_quote(f.default)));
                } else {
                    usage.push_str(&format!(" (default {})", f.default));
                }
            }
            let usage = usage.replace('\n', &format!("\n{}", " ".repeat(width + 2)));
            let pad = " ".repeat(width - head.len());
            out.push_str(&format!("{head}{pad}  {usage}\n"));
        }
    }
    out
}

/// `karmada-scheduler --help`: the long description, usage, subcommands and both flag sections.
pub fn help_text() -> String {
    format!("{LONG}\n\n{}", usage_text())
}

/// The usage text printed before a flag error.
pub fn usage_text() -> String {
    let mut out = format!("Usage:\n  {COMPONENT} [flags]\n\nAvailable Commands:\n");
    for (cmd, short) in [
        ("help", "Help about any command"),
        (
            "simulate",
            "Run one scheduling pass over objects read from files",
        ),
        ("version", "Print the version information"),
    ] {
        out.push_str(&format!("  {COMPONENT} {cmd:<30}  {short}\n"));
    }
    out.push_str(&sections());
    out
}

/// `karmada-scheduler version`, in the shape of the reference's Go `%#v` dump.
pub fn version_text() -> String {
    format!(
        "{COMPONENT} version: version.Info{{GitVersion:\"v{}\", GitCommit:\"\", GitShortCommit:\"\", GitTreeState:\"\", BuildDate:\"\", GoVersion:\"\", Compiler:\"rustc\", Platform:\"{}/{}\"}}",
        env!("CARGO_PKG_VERSION"),
        std::env::consts::OS,
        go_arch()
    )
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}

/// Names of all flags (normalised), for tooling that checks manifests against this binary.
pub fn flag_names() -> BTreeSet<&'static str> {
    FLAGS.iter().map(|f| f.name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn run(args: &[&str]) -> Options {
        match parse(args) {
            Ok(Invocation::Run(o)) => *o,
            other => panic!("expected Run for {args:?}, got {other:?}"),
        }
    }

    fn err(args: &[&str]) -> String {
        match parse(args) {
            Err(e) => e.message,
            other => panic!("expected an error for {args:?}, got {other:?}"),
        }
    }

    #[test]
    fn defaults_match_the_reference() {
        let o = run(&[]);
        assert!(o.leader_election.leader_elect);
        assert_eq!(o.leader_election.resource_name, "karmada-scheduler");
        assert_eq!(o.leader_election.resource_namespace, "karmada-system");
        assert_eq!(o.leader_election.lease_duration, GoDuration::from_secs(15));
        assert_eq!(o.leader_election.renew_deadline, GoDuration::from_secs(10));
        assert_eq!(o.leader_election.retry_period, GoDuration::from_secs(2));
        assert_eq!(o.metrics_bind_address, ":8080");
        assert_eq!(o.health_probe_bind_address, ":10351");
        assert_eq!(o.kube_api_qps, 40.0);
        assert_eq!(o.kube_api_burst, 60);
        assert_eq!(o.scheduler_estimator_timeout, GoDuration::from_secs(3));
        assert_eq!(o.scheduler_estimator_port, 10352);
        assert_eq!(o.plugins, vec!["*"]);
        assert_eq!(o.scheduler_name, "default-scheduler");
        assert_eq!(o.rate_limiter, RateLimiterOptions::default());
        assert_eq!(o.logging.format, "text");
        assert!(o.logging.logtostderr);
        assert_eq!(o.logging.stderrthreshold, 2);
        assert!(!o.feature_gates.enabled("PriorityBasedScheduling"));
        assert!(o.feature_gates.enabled("CustomizedClusterResourceModeling"));
        assert!(o.validate().is_ok());
    }

    #[test]
    fn booleans_take_no_separate_value() {
        assert!(!run(&["--leader-elect=false"]).leader_election.leader_elect);
        assert!(run(&["--enable-scheduler-estimator"]).enable_scheduler_estimator);
        assert!(run(&["--enable-scheduler-estimator=T"]).enable_scheduler_estimator);
        // `--x false` leaves `false` as a positional argument, which the command rejects.
        let e = parse(&["--leader-elect", "false"]).unwrap_err();
        assert!(!e.show_usage);
        assert_eq!(
            e.message,
            r#""karmada-scheduler" does not take any arguments, got ["false"]"#
        );
        assert_eq!(
            err(&["--leader-elect=maybe"]),
            r#"invalid argument "maybe" for "--leader-elect" flag: strconv.ParseBool: parsing "maybe": invalid syntax"#
        );
    }

    #[test]
    fn values_inline_or_separate() {
        let o = run(&[
            "--kubeconfig",
            "/k",
            "--master=https://x:6443",
            "--kube-api-qps=12.5",
        ]);
        assert_eq!(o.kubeconfig, "/k");
        assert_eq!(o.master, "https://x:6443");
        assert_eq!(o.kube_api_qps, 12.5);
        assert_eq!(run(&["--scheduler-name="]).scheduler_name, "");
        assert_eq!(
            err(&["--kubeconfig"]),
            "flag needs an argument: --kubeconfig"
        );
        // A following flag is taken as the value, as pflag does.
        assert_eq!(run(&["--kubeconfig", "--v=3"]).kubeconfig, "--v=3");
    }

    #[test]
    fn durations_in_go_syntax() {
        let o = run(&[
            "--leader-elect-lease-duration=1m30s",
            "--scheduler-estimator-timeout",
            "500ms",
        ]);
        assert_eq!(o.leader_election.lease_duration, GoDuration::from_secs(90));
        assert_eq!(o.scheduler_estimator_timeout, GoDuration::from_millis(500));
        assert_eq!(
            err(&["--rate-limiter-max-delay=10"]),
            r#"invalid argument "10" for "--rate-limiter-max-delay" flag: time: missing unit in duration "10""#
        );
    }

    #[test]
    fn verbosity_short_and_long() {
        assert_eq!(run(&["-v", "4"]).logging.verbosity, 4);
        assert_eq!(run(&["-v=5"]).logging.verbosity, 5);
        assert_eq!(run(&["-v6"]).logging.verbosity, 6);
        assert_eq!(run(&["--v=7"]).logging.verbosity, 7);
        assert_eq!(run(&["--v", "8"]).logging.verbosity, 8);
        assert_eq!(
            err(&["-v=x"]),
            r#"invalid argument "x" for "-v, --v" flag: strconv.ParseUint: parsing "x": invalid syntax"#
        );
        assert_eq!(err(&["-v"]), "flag needs an argument: 'v' in -v");
        assert_eq!(err(&["-x"]), "unknown shorthand flag: 'x' in -x");
        // Single-dash long names are shorthand clusters in pflag.
        assert_eq!(
            err(&["-kubeconfig=/x"]),
            "unknown shorthand flag: 'k' in -kubeconfig=/x"
        );
    }

    #[test]
    fn underscores_are_dashes() {
        let o = run(&[
            "--log_dir=/var/log",
            "--log-file=/f",
            "--kube_api_burst=7",
            "--skip_headers",
        ]);
        assert_eq!(o.logging.log_dir, "/var/log");
        assert_eq!(o.logging.log_file, "/f");
        assert_eq!(o.kube_api_burst, 7);
        assert!(o.logging.skip_headers);
        assert!(o.was_set("log-dir"));
    }

    #[test]
    fn string_slices_replace_then_append() {
        assert_eq!(
            run(&["--plugins=*,-TaintToleration"]).plugins,
            vec!["*", "-TaintToleration"]
        );
        assert_eq!(
            run(&["--plugins=A", "--plugins", "B,C"]).plugins,
            vec!["A", "B", "C"]
        );
        assert_eq!(run(&["--plugins="]).plugins, Vec::<String>::new());
        assert_eq!(run(&["--plugins=\"a,b\",c"]).plugins, vec!["a,b", "c"]);
        assert!(err(&["--plugins=a\"b"]).contains("bare \" in non-quoted-field"));
    }

    #[test]
    fn ints_accept_go_prefixes() {
        assert_eq!(run(&["--kube-api-burst=0x20"]).kube_api_burst, 32);
        assert_eq!(run(&["--rate-limiter-qps=1_000"]).rate_limiter.qps, 1000);
        assert_eq!(
            err(&["--kube-api-burst=ten"]),
            r#"invalid argument "ten" for "--kube-api-burst" flag: strconv.ParseInt: parsing "ten": invalid syntax"#
        );
    }

    #[test]
    fn feature_gates_merge_and_reject_unknown() {
        let o = run(&[
            "--feature-gates=PriorityBasedScheduling=true",
            "--feature-gates",
            "WorkloadAffinity=true, Failover=false",
        ]);
        assert!(o.feature_gates.enabled("PriorityBasedScheduling"));
        assert!(o.feature_gates.enabled("WorkloadAffinity"));
        assert!(!o.feature_gates.enabled("Failover"));
        let all = run(&["--feature-gates=AllAlpha=true,WorkloadAffinity=false"]);
        assert!(all.feature_gates.enabled("MultiplePodTemplatesScheduling"));
        assert!(!all.feature_gates.enabled("WorkloadAffinity"));
        assert_eq!(
            err(&["--feature-gates=Nope=true"]),
            r#"invalid argument "Nope=true" for "--feature-gates" flag: unrecognized feature gate: Nope"#
        );
        assert_eq!(
            err(&["--feature-gates=Failover"]),
            r#"invalid argument "Failover" for "--feature-gates" flag: missing bool value for Failover"#
        );
    }

    #[test]
    fn unknown_and_malformed_flags() {
        assert_eq!(err(&["--nope"]), "unknown flag: --nope");
        assert_eq!(
            err(&["--bind-address=0.0.0.0"]),
            "unknown flag: --bind-address"
        );
        assert_eq!(err(&["---x"]), "bad flag syntax: ---x");
        assert_eq!(err(&["--=x"]), "bad flag syntax: --=x");
    }

    #[test]
    fn terminator_help_and_subcommands() {
        assert_eq!(parse(&["--help"]), Ok(Invocation::Help));
        assert_eq!(parse(&["-h"]), Ok(Invocation::Help));
        assert_eq!(parse(&["help"]), Ok(Invocation::Help));
        assert_eq!(parse(&["version"]), Ok(Invocation::Version));
        assert_eq!(parse(&["--v=2", "version"]), Ok(Invocation::Version));
        let e = parse(&["--", "--kubeconfig=x"]).unwrap_err();
        assert_eq!(
            e.message,
            r#""karmada-scheduler" does not take any arguments, got ["--kubeconfig=x"]"#
        );
        // Empty positional arguments are tolerated by the reference's Args check.
        assert!(matches!(parse(&[""]), Ok(Invocation::Run(_))));
    }

    #[test]
    fn klog_value_types() {
        let o = run(&[
            "--stderrthreshold=WARNING",
            "--log_backtrace_at=main.go:12",
            "--vmodule=a=1,b=2",
            "--log-file-max-size=0",
        ]);
        assert_eq!(o.logging.stderrthreshold, 1);
        assert_eq!(o.logging.log_backtrace_at, "main.go:12");
        assert_eq!(
            o.logging.vmodule,
            vec![("a".to_string(), 1), ("b".to_string(), 2)]
        );
        assert_eq!(o.logging.log_file_max_size, 0);
        assert!(err(&["--log-backtrace-at=main:1"]).contains("syntax error: expect file.go:234"));
        assert!(err(&["--vmodule=a"]).contains(r#""a" does not have the pattern=N format"#));
        assert!(err(&["--log-text-info-buffer-size=1Q"]).contains("quantities must match"));
    }

    #[test]
    fn validation_matches_reference_messages() {
        let bad = run(&[
            "--scheduler-estimator-port=70000",
            "--scheduler-estimator-timeout=-1s",
            "--scheduler-name=",
        ]);
        assert_eq!(
            bad.validate().unwrap_err().to_string(),
            r#"[Options.SchedulerEstimatorPort: Invalid value: 70000: must be a valid port between 0 and 65535 inclusive, Options.SchedulerEstimatorTimeout: Invalid value: "-1s": must be greater than or equal to 0, Options.SchedulerName: Invalid value: "": should not be empty]"#
        );
        assert!(
            run(&[
                "--scheduler-estimator-port=0",
                "--scheduler-estimator-timeout=0s"
            ])
            .validate()
            .is_ok()
        );
        // Our own flag: 1 (the reference's one-at-a-time) is the smallest value.
        assert!(run(&["--concurrent-binding-syncs=1"]).validate().is_ok());
        // Our estimator connection options: off by default, validated.
        let d = run(&[]);
        assert_eq!(
            (
                d.scheduler_estimator_tls_server_name.as_str(),
                d.scheduler_estimator_endpoint_routing,
                d.scheduler_estimator_failure_policy.as_str()
            ),
            ("", false, "all")
        );
        let o = run(&[
            "--scheduler-estimator-tls-server-name=estimator.example",
            "--scheduler-estimator-endpoint-routing",
            "--scheduler-estimator-failure-policy=per-cluster",
        ]);
        assert!(o.validate().is_ok());
        assert_eq!(o.scheduler_estimator_tls_server_name, "estimator.example");
        assert!(o.scheduler_estimator_endpoint_routing);
        match run(&["--scheduler-estimator-failure-policy=some"]).validate() {
            Err(ValidationError::Options(m)) => assert_eq!(
                m,
                r#"Options.SchedulerEstimatorFailurePolicy: Unsupported value: "some": supported values: "all", "per-cluster""#
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(run(&[]).concurrent_binding_syncs, 16);
        assert_eq!(
            run(&["--concurrent-binding-syncs=0"])
                .validate()
                .unwrap_err()
                .to_string(),
            "Options.ConcurrentBindingSyncs: Invalid value: 0: must be between 1 and 1024 inclusive"
        );
        let e = run(&["--logging-format=xml"]).validate().unwrap_err();
        assert_eq!(
            e,
            ValidationError::Logging(
                r#"format: Invalid value: "xml": Unsupported log format"#.into()
            )
        );
        let e = run(&["--logging-format=json", "--vmodule=x=1"])
            .validate()
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("vmodule: Forbidden: Only supported for text log format")
        );
        assert!(run(&["--logging-format=json"]).validate().is_ok());
        assert!(run(&["--log-flush-frequency=0s"]).validate().is_err());
        let e = run(&["--log-text-split-stream"]).validate().unwrap_err();
        assert_eq!(
            e.to_string(),
            "options.text.splitStream: Forbidden: Feature LoggingAlphaOptions is disabled"
        );
        assert!(
            run(&[
                "--log-text-split-stream",
                "--feature-gates=LoggingAlphaOptions=true"
            ])
            .validate()
            .is_ok()
        );
    }

    #[test]
    fn rate_limiter_defaults_replace_non_positive() {
        let o = run(&[
            "--rate-limiter-qps=0",
            "--rate-limiter-base-delay=-1s",
            "--rate-limiter-bucket-size=5",
        ]);
        let r = o.rate_limiter.with_defaults();
        assert_eq!(r.qps, 10);
        assert_eq!(r.base_delay, GoDuration::from_millis(5));
        assert_eq!(r.bucket_size, 5);
    }

    #[test]
    fn help_groups_sections_like_the_reference() {
        let h = help_text();
        let logs = h.find("Logs flags:").unwrap();
        let generic = h.find("Generic flags:").unwrap();
        assert!(logs < generic);
        assert!(h.contains(
            "  -v, --v Level                              number for the log level verbosity\n"
        ));
        assert!(h.contains("      --log-backtrace-at traceLocation       when logging hits line file:N, emit a stack trace (default :0)\n"));
        assert!(h.contains("      --kube-api-qps float32                           QPS to use while talking with karmada-apiserver. (default 40)\n"));
        assert!(h.contains("      --leader-elect                                   Enable leader election, which must be true when running multi instances. (default true)\n"));
        assert!(h.contains("(default [*])"));
        assert!(h.contains("(default 16m40s)"));
        assert!(h.contains("\n                                                       AllAlpha=true|false (ALPHA - default=false)\n"));
        // Every flag appears exactly once.
        for name in flag_names() {
            let needle = format!("--{name} ");
            assert_eq!(h.matches(&needle).count(), 1, "{name}");
        }
    }
}
