//! Every command-line flag of the reference `karmada-scheduler` v1.18.2, parsed as pflag parses
//! them (component-base's [`flags`] grammar).
//!
//! The flags shared with other components come from their one declaration: the logging flags
//! ([`component_base::logflags`]), leader election, client and serving flags
//! ([`component_base::options`]) and the estimator flags ([`estimator_client::flags`]); the
//! scheduler's own are [`FLAGS`] here. [`parse`] turns `argv` into an [`Invocation`];
//! [`Options::validate`] applies the reference's two validation steps (logging configuration,
//! then scheduler options).

use component_base::flags::{self, FlagDef, FlagSink, GENERIC as G, Kind as K, flag};
use component_base::goparse::{self, GoDuration};
use component_base::options::{CommonOptions, health_probe_flag, leader_resource_name_flag};
use component_base::{daemon_tables, setter};
use estimator_client::flags::EstimatorFlags;
pub use estimator_client::flags::{FAILURE_POLICY_ALL, FAILURE_POLICY_PER_CLUSTER};
use scheduler_core::features::{FEATURE_GATES_USAGE, FeatureGates};

pub use component_base::cli::ValidationError;
pub use component_base::flags::FlagError;

/// What the command line asks for.
pub type Invocation = component_base::cli::Invocation<Options>;

/// The component name, used as the command name and as the default Lease name.
pub const COMPONENT: &str = "karmada-scheduler";

/// `spec.schedulerName` of bindings handled by default.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

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
        let or = |v: i64, default: i64| if v <= 0 { default } else { v };
        Self {
            base_delay: GoDuration(or(self.base_delay.0, d.base_delay.0)),
            max_delay: GoDuration(or(self.max_delay.0, d.max_delay.0)),
            qps: or(self.qps, d.qps),
            bucket_size: or(self.bucket_size, d.bucket_size),
        }
    }
}

impl Default for RateLimiterOptions {
    /// The defaults of [`RATE_LIMITER_FLAGS`].
    fn default() -> Self {
        let blank = Self {
            base_delay: GoDuration::default(),
            max_delay: GoDuration::default(),
            qps: 0,
            bucket_size: 0,
        };
        flags::with_defaults(blank, &[RATE_LIMITER_FLAGS])
    }
}

/// Everything the command line can say.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Leader election, the client, the servers, logging: the groups every daemon has.
    pub common: CommonOptions,
    pub enable_scheduler_estimator: bool,
    pub disable_scheduler_estimator_in_pull_mode: bool,
    pub estimator: EstimatorFlags,
    pub enable_empty_workload_propagation: bool,
    pub plugins: Vec<String>,
    pub scheduler_name: String,
    /// Not a flag of the reference (which schedules one binding at a time): how many
    /// bindings are scheduled at once; `1` behaves as the reference.
    pub concurrent_binding_syncs: i64,
    /// Not a flag of the reference: serve `/debug/explain/...` on the probe server.
    pub enable_explain_endpoint: bool,
    /// Not a flag of the reference: v1.18.2's resumption of `clusterAffinities` at the
    /// observed term on a requested reschedule (v1.19.0 starts at the first term). When not
    /// given, it follows the `PriorityBasedScheduling` gate ([`Options::v1_18_decisions`]).
    pub reschedule_keeps_affinity_term: bool,
    /// Not a flag of the reference: v1.18.2's results without `components`. When not given,
    /// as `reschedule_keeps_affinity_term`.
    pub omit_component_results: bool,
    pub feature_gates: FeatureGates,
    pub rate_limiter: RateLimiterOptions,
    /// Normalised names of the flags given on the command line, in order of first use.
    pub changed: Vec<String>,
}

impl Default for Options {
    /// The groups' defaults (each from its own table), then every default of [`FLAGS`]: a
    /// default is stated once, in its flag's table.
    fn default() -> Self {
        let mut o = Self {
            common: CommonOptions::new(COMPONENT),
            enable_scheduler_estimator: false,
            disable_scheduler_estimator_in_pull_mode: false,
            estimator: EstimatorFlags::default(),
            enable_empty_workload_propagation: false,
            plugins: Vec::new(),
            scheduler_name: String::new(),
            concurrent_binding_syncs: 0,
            enable_explain_endpoint: false,
            reschedule_keeps_affinity_term: false,
            omit_component_results: false,
            feature_gates: FeatureGates::default(),
            rate_limiter: RateLimiterOptions::default(),
            changed: Vec::new(),
        };
        flags::apply_defaults(&[FLAGS], &mut o);
        o
    }
}

/// The scheduler's own flags, with the reference's name, type, default and usage text.
pub static FLAGS: &[FlagDef] = &[
    leader_resource_name_flag(COMPONENT),
    health_probe_flag(
        ":10351",
        "The TCP address that the server should bind to for serving health probes(e.g. 127.0.0.1:10351, :10351). It can be set to \"0\" to disable serving the health probe. Defaults to 0.0.0.0:10351.",
    ),
    flag(
        G,
        "enable-scheduler-estimator",
        K::Bool,
        "false",
        "Enable calling cluster scheduler estimator for adjusting replicas.",
    )
    .set(setter!(Options, |o, v| o.enable_scheduler_estimator = goparse::parse_bool(v)?)),
    flag(
        G,
        "disable-scheduler-estimator-in-pull-mode",
        K::Bool,
        "false",
        "Disable the scheduler estimator for clusters in pull mode, which takes effect only when enable-scheduler-estimator is true.",
    )
    .set(setter!(Options, |o, v| o.disable_scheduler_estimator_in_pull_mode = goparse::parse_bool(v)?)),
    flag(
        G,
        "enable-empty-workload-propagation",
        K::Bool,
        "false",
        "Enable workload with replicas 0 to be propagated to member clusters.",
    )
    .set(setter!(Options, |o, v| o.enable_empty_workload_propagation = goparse::parse_bool(v)?)),
    flag(
        G,
        "plugins",
        K::Strings,
        "[*]",
        "A list of plugins to enable. '*' enables all build-in and customized plugins, 'foo' enables the plugin named 'foo', '*,-foo' disables the plugin named 'foo'.\nAll build-in plugins: APIEnablement,ClusterAffinity,ClusterEviction,ClusterLocality,SpreadConstraint,TaintToleration.",
    )
    .set(setter!(Options, |o, v, first| { let items = flags::read_csv(v)?; if first { o.plugins = items } else { o.plugins.extend(items) } })),
    flag(
        G,
        "scheduler-name",
        K::Str,
        DEFAULT_SCHEDULER_NAME,
        "SchedulerName represents the name of the scheduler. default is 'default-scheduler'.",
    )
    .set(setter!(Options, |o, v| o.scheduler_name = v.into())),
    flag(
        G,
        "concurrent-binding-syncs",
        K::Int,
        "16",
        "The number of bindings scheduled at the same time (not a flag of the Go karmada-scheduler, which schedules one at a time: 1 behaves as it does). A binding is never scheduled by two workers at once, so its own writes stay ordered.",
    )
    .set(setter!(Options, |o, v| o.concurrent_binding_syncs = goparse::parse_int(v)?)),
    flag(
        G,
        "enable-explain-endpoint",
        K::Bool,
        "false",
        "Serve /debug/explain/<namespace>/<name> (a ResourceBinding) and /debug/explain/<name> (a ClusterResourceBinding) on the health probe server: what this scheduler would decide for the binding in its cache now, and why, as JSON; read-only. Not a flag of the Go karmada-scheduler.",
    )
    .set(setter!(Options, |o, v| o.enable_explain_endpoint = goparse::parse_bool(v)?)),
    flag(
        G,
        "reschedule-keeps-affinity-term",
        K::Bool,
        "false",
        "When a reschedule is requested (spec.rescheduleTriggeredAt later than status.lastScheduledTime, e.g. by a WorkloadRebalancer), resume clusterAffinities at the term the binding was last scheduled with, as Karmada v1.18 did, instead of starting again at the first term as Karmada v1.19 does. When not given: true with --feature-gates=PriorityBasedScheduling=false (Karmada v1.18's scheduling as a whole), false otherwise. Not a flag of the Go karmada-scheduler.",
    )
    .set(setter!(Options, |o, v| o.reschedule_keeps_affinity_term = goparse::parse_bool(v)?)),
    flag(
        G,
        "omit-component-results",
        K::Bool,
        "false",
        "Do not write spec.clusters[].components (the per-component replicas Karmada v1.19 writes with the MultiplePodTemplatesScheduling gate), as Karmada v1.18 did. When not given: true with --feature-gates=PriorityBasedScheduling=false (Karmada v1.18's scheduling as a whole), false otherwise. Not a flag of the Go karmada-scheduler.",
    )
    .set(setter!(Options, |o, v| o.omit_component_results = goparse::parse_bool(v)?)),
    flag(
        G,
        "feature-gates",
        K::MapStringBool,
        "",
        FEATURE_GATES_USAGE,
    )
    .set(setter!(Options, |o, v| o.feature_gates.set(v).map_err(|e| e.to_string())?)),
];

/// The `--rate-limiter-*` flags ([`RateLimiterOptions`]).
pub static RATE_LIMITER_FLAGS: &[FlagDef] = &[
    flag(
        G,
        "rate-limiter-base-delay",
        K::Duration,
        "5ms",
        "The base delay for rate limiter.",
    )
    .set(setter!(RateLimiterOptions, |o, v| o.base_delay =
        GoDuration::parse(v)?)),
    flag(
        G,
        "rate-limiter-max-delay",
        K::Duration,
        "16m40s",
        "The max delay for rate limiter.",
    )
    .set(setter!(RateLimiterOptions, |o, v| o.max_delay =
        GoDuration::parse(v)?)),
    flag(
        G,
        "rate-limiter-qps",
        K::Int,
        "10",
        "The QPS for rate limier.",
    )
    .set(setter!(RateLimiterOptions, |o, v| o.qps = goparse::parse_int(v)?)),
    flag(
        G,
        "rate-limiter-bucket-size",
        K::Int,
        "100",
        "The bucket size for rate limier.",
    )
    .set(setter!(RateLimiterOptions, |o, v| o.bucket_size =
        goparse::parse_int(v)?)),
];

/// Every table the command line is parsed against.
const TABLES: &[&[FlagDef]] = daemon_tables!(
    component_base::logflags::FORMAT_USAGE;
    estimator_client::flags::FLAGS,
    RATE_LIMITER_FLAGS,
    FLAGS,
);

impl FlagSink for Options {
    fn set(&mut self, name: &str, value: &str, first_use: bool) -> Result<(), String> {
        flags::apply_to(
            TABLES,
            self,
            |o| {
                let mut groups = o.common.groups();
                groups.push(&mut o.estimator);
                groups.push(&mut o.rate_limiter);
                groups
            },
            name,
            value,
            first_use,
        )
    }
}

impl Options {
    /// Whether the flag (normalised name) was given on the command line.
    pub fn was_set(&self, name: &str) -> bool {
        self.changed.iter().any(|c| c == name)
    }

    /// Whether Karmada v1.18's decisions apply where v1.19 changed them when no flag says
    /// otherwise: with `PriorityBasedScheduling` off, the one switch an operator flips to get
    /// v1.18.2's scheduler back, the rest of v1.18.2's scheduling comes with its queue.
    pub fn v1_18_decisions(&self) -> bool {
        !self
            .feature_gates
            .enabled(scheduler_core::features::PRIORITY_BASED_SCHEDULING)
    }

    /// `--reschedule-keeps-affinity-term` as given, else [`Options::v1_18_decisions`].
    pub fn effective_reschedule_keeps_affinity_term(&self) -> bool {
        if self.was_set("reschedule-keeps-affinity-term") {
            self.reschedule_keeps_affinity_term
        } else {
            self.v1_18_decisions()
        }
    }

    /// `--omit-component-results` as given, else [`Options::v1_18_decisions`].
    pub fn effective_omit_component_results(&self) -> bool {
        if self.was_set("omit-component-results") {
            self.omit_component_results
        } else {
            self.v1_18_decisions()
        }
    }

    /// The reference's validation: first the logging configuration (component-base
    /// `ValidateAndApply`), then the scheduler options (`Options.Validate`). Each step returns
    /// its errors as one aggregate message (`e` or `[e1, e2]`).
    pub fn validate(&self) -> Result<(), ValidationError> {
        let gates = &self.feature_gates;
        let logging = self.common.logging.validate(&|g| gates.enabled(g));
        if !logging.is_empty() {
            return Err(ValidationError::Logging(flags::aggregate(&logging)));
        }
        let mut errs: Vec<String> = self.estimator.port_error().into_iter().collect();
        if !(1..=1024).contains(&self.concurrent_binding_syncs) {
            errs.push(format!(
                "Options.ConcurrentBindingSyncs: Invalid value: {}: must be between 1 and 1024 inclusive",
                self.concurrent_binding_syncs
            ));
        }
        errs.extend(self.estimator.failure_policy_error());
        errs.extend(self.estimator.timeout_error());
        if self.scheduler_name.is_empty() {
            errs.push(
                "Options.SchedulerName: Invalid value: \"\": should not be empty".to_string(),
            );
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ValidationError::Options(flags::aggregate(&errs)))
        }
    }
}

const LONG: &str = "The karmada-scheduler is a control plane process which assigns resources to the clusters it manages.
The scheduler determines which clusters are valid placements for each resource in the scheduling queue according to
constraints and available resources. The scheduler then ranks each valid cluster and binds the resource to
the most suitable cluster.";

component_base::command_line!(
    Options,
    name: COMPONENT,
    long: LONG,
    tables: TABLES,
    subcommands: &[
        (
            "explain",
            "Show what the scheduler would decide for one live binding, and why",
        ),
        ("help", "Help about any command"),
        (
            "simulate",
            "Run one scheduling pass over objects read from files",
        ),
        ("version", "Print the version information"),
    ],
);

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
    fn every_listed_flag_has_a_setter() {
        let mut o = Options::default();
        assert_eq!(flags::unknown_to(&mut o, TABLES), Vec::<&str>::new());
        assert_eq!(
            flags::unknown_to(&mut o, &[&[flag(G, "no-such", K::Str, "", "")]]),
            ["no-such"]
        );
    }

    #[test]
    fn defaults_match_the_reference() {
        let o = run(&[]);
        assert!(o.common.leader_election.leader_elect);
        assert_eq!(o.common.leader_election.resource_name, "karmada-scheduler");
        assert_eq!(
            o.common.leader_election.resource_namespace,
            "karmada-system"
        );
        assert_eq!(
            o.common.leader_election.lease_duration,
            GoDuration::from_secs(15)
        );
        assert_eq!(
            o.common.leader_election.renew_deadline,
            GoDuration::from_secs(10)
        );
        assert_eq!(
            o.common.leader_election.retry_period,
            GoDuration::from_secs(2)
        );
        assert_eq!(o.common.serving.metrics_bind_address, ":8080");
        assert_eq!(o.common.serving.health_probe_bind_address, ":10351");
        assert_eq!(o.common.kube.kube_api_qps, 40.0);
        assert_eq!(o.common.kube.kube_api_burst, 60);
        assert_eq!(o.estimator.timeout, GoDuration::from_secs(3));
        assert_eq!(o.estimator.port, 10352);
        assert_eq!(o.plugins, vec!["*"]);
        assert_eq!(o.scheduler_name, "default-scheduler");
        assert_eq!(o.rate_limiter, RateLimiterOptions::default());
        assert_eq!(o.common.logging.format, "text");
        assert!(o.common.logging.logtostderr);
        assert_eq!(o.common.logging.stderrthreshold, 2);
        // v1.19.0: Beta, on by default.
        assert!(o.feature_gates.enabled("PriorityBasedScheduling"));
        assert!(o.feature_gates.enabled("CustomizedClusterResourceModeling"));
        assert!(o.validate().is_ok());
    }

    #[test]
    fn booleans_take_no_separate_value() {
        assert!(
            !run(&["--leader-elect=false"])
                .common
                .leader_election
                .leader_elect
        );
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
        assert_eq!(o.common.kube.kubeconfig, "/k");
        assert_eq!(o.common.kube.master, "https://x:6443");
        assert_eq!(o.common.kube.kube_api_qps, 12.5);
        assert_eq!(run(&["--scheduler-name="]).scheduler_name, "");
        assert_eq!(
            err(&["--kubeconfig"]),
            "flag needs an argument: --kubeconfig"
        );
        // A following flag is taken as the value, as pflag does.
        assert_eq!(
            run(&["--kubeconfig", "--v=3"]).common.kube.kubeconfig,
            "--v=3"
        );
    }

    #[test]
    fn durations_in_go_syntax() {
        let o = run(&[
            "--leader-elect-lease-duration=1m30s",
            "--scheduler-estimator-timeout",
            "500ms",
        ]);
        assert_eq!(
            o.common.leader_election.lease_duration,
            GoDuration::from_secs(90)
        );
        assert_eq!(o.estimator.timeout, GoDuration::from_millis(500));
        assert_eq!(
            err(&["--rate-limiter-max-delay=10"]),
            r#"invalid argument "10" for "--rate-limiter-max-delay" flag: time: missing unit in duration "10""#
        );
    }

    #[test]
    fn verbosity_short_and_long() {
        assert_eq!(run(&["-v", "4"]).common.logging.verbosity, 4);
        assert_eq!(run(&["-v=5"]).common.logging.verbosity, 5);
        assert_eq!(run(&["-v6"]).common.logging.verbosity, 6);
        assert_eq!(run(&["--v=7"]).common.logging.verbosity, 7);
        assert_eq!(run(&["--v", "8"]).common.logging.verbosity, 8);
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
        assert_eq!(o.common.logging.log_dir, "/var/log");
        assert_eq!(o.common.logging.log_file, "/f");
        assert_eq!(o.common.kube.kube_api_burst, 7);
        assert!(o.common.logging.skip_headers);
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
        assert_eq!(
            run(&["--kube-api-burst=0x20"]).common.kube.kube_api_burst,
            32
        );
        assert_eq!(run(&["--rate-limiter-qps=1_000"]).rate_limiter.qps, 1000);
        assert_eq!(
            err(&["--kube-api-burst=ten"]),
            r#"invalid argument "ten" for "--kube-api-burst" flag: strconv.ParseInt: parsing "ten": invalid syntax"#
        );
    }

    #[test]
    fn feature_gates_merge_and_reject_unknown() {
        let o = run(&[
            "--feature-gates=PriorityBasedScheduling=false",
            "--feature-gates",
            "WorkloadAffinity=true, Failover=false",
        ]);
        assert!(!o.feature_gates.enabled("PriorityBasedScheduling"));
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
        assert_eq!(o.common.logging.stderrthreshold, 1);
        assert_eq!(o.common.logging.log_backtrace_at, "main.go:12");
        assert_eq!(
            o.common.logging.vmodule,
            vec![("a".to_string(), 1), ("b".to_string(), 2)]
        );
        assert_eq!(o.common.logging.log_file_max_size, 0);
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
                d.estimator.tls_server_name.as_str(),
                d.estimator.endpoint_routing,
                d.estimator.failure_policy.as_str()
            ),
            ("", false, "all")
        );
        let o = run(&[
            "--scheduler-estimator-tls-server-name=estimator.example",
            "--scheduler-estimator-endpoint-routing",
            "--scheduler-estimator-failure-policy=per-cluster",
        ]);
        assert!(o.validate().is_ok());
        assert_eq!(o.estimator.tls_server_name, "estimator.example");
        assert!(o.estimator.endpoint_routing);
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
