//! Flag groups every Karmada daemon registers with the same names, texts and defaults: leader
//! election, the control-plane client, and the metrics/profiling servers. Each group is one
//! table of [`FlagDef`] and one setter; a component lists the tables it offers.
//!
//! The skeleton of a daemon's options is here too: [`CommonOptions`] holds the groups every
//! daemon has (with logging), routes their flags ([`CommonOptions::groups`]), and
//! [`daemon_tables!`](crate::daemon_tables) lists their tables first, in the order `--help`
//! shows them; a binary declares only its own flags and groups after them.

use std::any::Any;

use crate::flags::{FlagDef, GENERIC as G, Kind as K, flag, with_defaults};
use crate::goparse::{self, GoDuration};
use crate::logflags::LoggingOptions;
use crate::setter;

/// The option groups every Karmada daemon has, under the same flags: leader election, the
/// control-plane client, the probe/metrics/profiling servers and logging.
#[derive(Clone, Debug, PartialEq)]
pub struct CommonOptions {
    pub leader_election: LeaderElection,
    pub kube: KubeClientOptions,
    pub serving: ServingOptions,
    pub logging: LoggingOptions,
}

impl CommonOptions {
    /// Every group at its table's defaults, the Lease named after `component`; the health
    /// probe address is the default of the component's own [`health_probe_flag`].
    pub fn new(component: &str) -> Self {
        Self {
            leader_election: LeaderElection::new(component),
            kube: KubeClientOptions::default(),
            serving: ServingOptions::new(""),
            logging: LoggingOptions::default(),
        }
    }

    /// The groups a shared flag's setter is routed to
    /// ([`flags::apply_to`](crate::flags::apply_to)); a daemon adds its own after them.
    pub fn groups(&mut self) -> Vec<&mut dyn Any> {
        vec![
            &mut self.logging,
            &mut self.leader_election,
            &mut self.kube,
            &mut self.serving,
        ]
    }
}

/// The flag tables of a daemon's command line: the shared groups' first (`--logging-format`
/// with the component's usage text, the other logging flags, leader election, the client,
/// the servers), then the component's own, in the order given. The order is `--help`'s.
#[macro_export]
macro_rules! daemon_tables {
    ($format_usage:expr; $($own:expr),* $(,)?) => {
        &[
            &[$crate::logflags::format_flag($format_usage)],
            $crate::logflags::FLAGS,
            $crate::options::LEADER_FLAGS,
            $crate::options::KUBE_FLAGS,
            $crate::options::SERVING_FLAGS,
            $($own),*
        ]
    };
}

/// Namespace of the Go components' Leases and estimator Services.
pub const KARMADA_SYSTEM: &str = "karmada-system";

/// Leader-election settings (`--leader-elect*`).
#[derive(Clone, Debug, PartialEq)]
pub struct LeaderElection {
    pub leader_elect: bool,
    /// The Lease name: `--leader-elect-resource-name` where a component has that flag, else
    /// the component's name.
    pub resource_name: String,
    pub resource_namespace: String,
    pub lease_duration: GoDuration,
    pub renew_deadline: GoDuration,
    pub retry_period: GoDuration,
    /// Not a flag of the reference: exit (code 255) when the Lease is lost, as the reference
    /// does, instead of pausing the work and campaigning again.
    pub exit_on_lost_lease: bool,
}

impl LeaderElection {
    /// The defaults of [`LEADER_FLAGS`], with the Lease named after `component`.
    pub fn new(component: &str) -> Self {
        let blank = Self {
            leader_elect: false,
            resource_name: component.into(),
            resource_namespace: String::new(),
            lease_duration: GoDuration::default(),
            renew_deadline: GoDuration::default(),
            retry_period: GoDuration::default(),
            exit_on_lost_lease: false,
        };
        with_defaults(blank, &[LEADER_FLAGS])
    }
}

/// `--leader-elect*` of the Go components (all but `--leader-elect-resource-name`, which only
/// some have: [`leader_resource_name_flag`]) and our `--exit-on-lost-lease`.
pub static LEADER_FLAGS: &[FlagDef] = &[
    flag(
        G,
        "leader-elect",
        K::Bool,
        "true",
        "Enable leader election, which must be true when running multi instances.",
    )
    .set(setter!(LeaderElection, |o, v| o.leader_elect = goparse::parse_bool(v)?)),
    flag(
        G,
        "leader-elect-resource-namespace",
        K::Str,
        KARMADA_SYSTEM,
        "The namespace of resource object that is used for locking during leader election.",
    )
    .set(setter!(LeaderElection, |o, v| o.resource_namespace = v.into())),
    flag(
        G,
        "leader-elect-lease-duration",
        K::Duration,
        "15s",
        "The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership of a led but unrenewed leader slot. This is effectively the maximum duration that a leader can be stopped before it is replaced by another candidate. This is only applicable if leader election is enabled.",
    )
    .set(setter!(LeaderElection, |o, v| o.lease_duration = GoDuration::parse(v)?)),
    flag(
        G,
        "leader-elect-renew-deadline",
        K::Duration,
        "10s",
        "The interval between attempts by the acting master to renew a leadership slot before it stops leading. This must be less than or equal to the lease duration. This is only applicable if leader election is enabled.",
    )
    .set(setter!(LeaderElection, |o, v| o.renew_deadline = GoDuration::parse(v)?)),
    flag(
        G,
        "leader-elect-retry-period",
        K::Duration,
        "2s",
        "The duration the clients should wait between attempting acquisition and renewal of a leadership. This is only applicable if leader election is enabled.",
    )
    .set(setter!(LeaderElection, |o, v| o.retry_period = GoDuration::parse(v)?)),
    flag(
        G,
        "exit-on-lost-lease",
        K::Bool,
        "false",
        "Exit with code 255 when the leader Lease cannot be renewed, as the Go Karmada components do. By default this component pauses its work, keeps its caches and campaigns again (an API server outage longer than the renew deadline no longer ends the process). Not a flag of the Go Karmada components.",
    )
    .set(setter!(LeaderElection, |o, v| o.exit_on_lost_lease = goparse::parse_bool(v)?)),
];

/// `--leader-elect-resource-name`, for a component whose Lease name is a flag; its default
/// is `default`'s.
pub const fn leader_resource_name_flag(default: &'static str) -> FlagDef {
    flag(
        G,
        "leader-elect-resource-name",
        K::Str,
        default,
        "The name of resource object that is used for locking during leader election.",
    )
    .set(setter!(LeaderElection, |o, v| o.resource_name = v.into()))
}

/// How the component reaches the Karmada API server.
#[derive(Clone, Debug, PartialEq)]
pub struct KubeClientOptions {
    pub kubeconfig: String,
    pub master: String,
    pub kube_api_qps: f32,
    pub kube_api_burst: i64,
}

impl Default for KubeClientOptions {
    /// The defaults of [`KUBE_FLAGS`].
    fn default() -> Self {
        let blank = Self {
            kubeconfig: String::new(),
            master: String::new(),
            kube_api_qps: 0.0,
            kube_api_burst: 0,
        };
        with_defaults(blank, &[KUBE_FLAGS])
    }
}

/// `--kubeconfig`, `--master`, `--kube-api-qps`, `--kube-api-burst`.
pub static KUBE_FLAGS: &[FlagDef] = &[
    flag(
        G,
        "kubeconfig",
        K::Str,
        "",
        "Path to karmada control plane kubeconfig file.",
    )
    .set(setter!(KubeClientOptions, |o, v| o.kubeconfig = v.into())),
    flag(
        G,
        "master",
        K::Str,
        "",
        "The address of the Kubernetes API server. Overrides any value in KubeConfig. Only required if out-of-cluster.",
    )
    .set(setter!(KubeClientOptions, |o, v| o.master = v.into())),
    flag(
        G,
        "kube-api-qps",
        K::Float32,
        "40",
        "QPS to use while talking with karmada-apiserver.",
    )
    .set(setter!(KubeClientOptions, |o, v| o.kube_api_qps = goparse::parse_float32(v)?)),
    flag(
        G,
        "kube-api-burst",
        K::Int,
        "60",
        "Burst to use while talking with karmada-apiserver.",
    )
    .set(setter!(KubeClientOptions, |o, v| o.kube_api_burst = goparse::parse_int(v)?)),
];

/// The HTTP servers of the process: probes, metrics and profiling.
#[derive(Clone, Debug, PartialEq)]
pub struct ServingOptions {
    pub metrics_bind_address: String,
    pub health_probe_bind_address: String,
    pub enable_pprof: bool,
    pub profiling_bind_address: String,
}

impl ServingOptions {
    /// The defaults of [`SERVING_FLAGS`]; the health-probe port differs per component.
    pub fn new(health_probe_bind_address: &str) -> Self {
        let blank = Self {
            metrics_bind_address: String::new(),
            health_probe_bind_address: health_probe_bind_address.into(),
            enable_pprof: false,
            profiling_bind_address: String::new(),
        };
        with_defaults(blank, &[SERVING_FLAGS])
    }
}

/// `--metrics-bind-address`, `--enable-pprof`, `--profiling-bind-address` (the health-probe
/// flag names its component's port in its text: [`health_probe_flag`]).
pub static SERVING_FLAGS: &[FlagDef] = &[
    flag(
        G,
        "metrics-bind-address",
        K::Str,
        ":8080",
        "The TCP address that the server should bind to for serving prometheus metrics(e.g. 127.0.0.1:8080, :8080). It can be set to \"0\" to disable the metrics serving. Defaults to 0.0.0.0:8080.",
    )
    .set(setter!(ServingOptions, |o, v| o.metrics_bind_address = v.into())),
    flag(
        G,
        "enable-pprof",
        K::Bool,
        "false",
        "Enable profiling via web interface host:port/debug/pprof/.",
    )
    .set(setter!(ServingOptions, |o, v| o.enable_pprof = goparse::parse_bool(v)?)),
    flag(
        G,
        "profiling-bind-address",
        K::Str,
        ":6060",
        "The TCP address for serving profiling(e.g. 127.0.0.1:6060, :6060). This is only applicable if profiling is enabled.",
    )
    .set(setter!(ServingOptions, |o, v| o.profiling_bind_address = v.into())),
];

/// `--health-probe-bind-address` with its default and the text that names it.
pub const fn health_probe_flag(default: &'static str, usage: &'static str) -> FlagDef {
    flag(G, "health-probe-bind-address", K::Str, default, usage)
        .set(setter!(ServingOptions, |o, v| o
            .health_probe_bind_address =
            v.into()))
}
