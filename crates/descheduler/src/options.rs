//! Every command-line flag of the reference `karmada-descheduler` v1.18.2, parsed as pflag
//! parses them. The flags it shares with karmada-scheduler come from their one declaration
//! (component-base's logging, leader-election, client and serving groups, estimator-client's
//! estimator flags); [`FLAGS`] holds the descheduler's own.

use component_base::cli::{Invocation as GenericInvocation, ValidationError};
use component_base::flags::{self, FlagDef, FlagSink, GENERIC as G, Kind as K};
use component_base::goparse::{self, GoDuration, go_quote};
use component_base::options::{CommonOptions, health_probe_flag};
use component_base::{daemon_tables, setter};
use estimator_client::flags::EstimatorFlags;

/// The component name: the command, the Lease and the events' source.
pub const COMPONENT: &str = "karmada-descheduler";

/// What the command line asks for.
pub type Invocation = GenericInvocation<Options>;

/// Everything the command line can say.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Leader election, the client, the servers, logging: the groups every daemon has.
    pub common: CommonOptions,
    pub estimator: EstimatorFlags,
    /// `--descheduling-interval`: time between two passes.
    pub descheduling_interval: GoDuration,
    /// `--unschedulable-threshold`: how long a pod must have been unschedulable to count.
    pub unschedulable_threshold: GoDuration,
    /// Not a flag of the reference (which handles one binding at a time): how many bindings
    /// are descheduled at once; `1` behaves as the reference.
    pub concurrent_syncs: i64,
    /// Normalised names of the flags given, in order of first use.
    pub changed: Vec<String>,
}

impl Default for Options {
    /// The shared groups' defaults, then every default of [`FLAGS`].
    fn default() -> Self {
        let mut o = Self {
            common: CommonOptions::new(COMPONENT),
            estimator: EstimatorFlags::default(),
            descheduling_interval: GoDuration(0),
            unschedulable_threshold: GoDuration(0),
            concurrent_syncs: 0,
            changed: Vec::new(),
        };
        flags::apply_defaults(&[FLAGS], &mut o);
        o
    }
}

/// The descheduler's own flags.
pub static FLAGS: &[FlagDef] = &[
    health_probe_flag(
        ":10358",
        "The TCP address that the server should bind to for serving health probes(e.g. 127.0.0.1:10358, :10358). It can be set to \"0\" to disable serving the health probe. Defaults to 0.0.0.0:10358.",
    ),
    flags::flag(
        G,
        "descheduling-interval",
        K::Duration,
        "2m0s",
        "Time interval between two consecutive descheduler executions. Setting this value instructs the descheduler to run in a continuous loop at the interval specified.",
    )
    .set(setter!(Options, |o, v| o.descheduling_interval = GoDuration::parse(v)?)),
    flags::flag(
        G,
        "unschedulable-threshold",
        K::Duration,
        "5m0s",
        "The period of pod unschedulable condition. This value is considered as a classification standard of unschedulable replicas.",
    )
    .set(setter!(Options, |o, v| o.unschedulable_threshold = GoDuration::parse(v)?)),
    flags::flag(
        G,
        "concurrent-descheduling-syncs",
        K::Int,
        "16",
        "The number of bindings descheduled at the same time (not a flag of the Go karmada-descheduler, which handles one at a time: 1 behaves as it does).",
    )
    .set(setter!(Options, |o, v| o.concurrent_syncs = goparse::parse_int(v)?)),
];

/// The Go descheduler registers no `--leader-elect-resource-name` and no `--feature-gates`.
const TABLES: &[&[FlagDef]] = daemon_tables!(
    component_base::logflags::FORMAT_USAGE;
    estimator_client::flags::FLAGS,
    FLAGS,
);

impl FlagSink for Options {
    fn set(&mut self, name: &str, value: &str, _first_use: bool) -> Result<(), String> {
        flags::apply_to(
            TABLES,
            self,
            |o| {
                let mut groups = o.common.groups();
                groups.push(&mut o.estimator);
                groups
            },
            name,
            value,
            true,
        )
    }
}

/// `Options.<field>: Invalid value: "<d>": must be greater than or equal to 0`.
fn negative(field: &str, d: GoDuration) -> Option<String> {
    d.is_negative().then(|| {
        format!(
            "Options.{field}: Invalid value: {}: must be greater than or equal to 0",
            go_quote(&d.to_string())
        )
    })
}

impl Options {
    /// The reference's validation: the logging configuration (with the default feature
    /// gates: the Go descheduler has no `--feature-gates`), then its options, in its order.
    pub fn validate(&self) -> Result<(), ValidationError> {
        let logging = self
            .common
            .logging
            .validate(&|gate| gate == "LoggingBetaOptions");
        if !logging.is_empty() {
            return Err(ValidationError::Logging(flags::aggregate(&logging)));
        }
        let mut errs: Vec<String> = Vec::new();
        errs.extend(self.estimator.port_error());
        errs.extend(self.estimator.timeout_error());
        errs.extend(negative("DeschedulingInterval", self.descheduling_interval));
        errs.extend(negative(
            "UnschedulableThreshold",
            self.unschedulable_threshold,
        ));
        errs.extend(self.estimator.failure_policy_error());
        if !(1..=1024).contains(&self.concurrent_syncs) {
            errs.push(format!(
                "Options.ConcurrentDeschedulingSyncs: Invalid value: {}: must be between 1 and 1024 inclusive",
                self.concurrent_syncs
            ));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ValidationError::Options(flags::aggregate(&errs)))
        }
    }
}

const LONG: &str = "The karmada-descheduler evicts replicas from member clusters
if they are failed to be scheduled for a period of time. It relies on
karmada-scheduler-estimator to get replica status.";

component_base::command_line!(
    Options,
    name: COMPONENT,
    long: LONG,
    tables: TABLES,
    subcommands: &[
        ("help", "Help about any command"),
        ("version", "Print the version information"),
    ],
);

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn defaults_are_the_references() {
        let o = run(&[]);
        assert!(o.common.leader_election.leader_elect);
        assert_eq!(
            o.common.leader_election.resource_name,
            "karmada-descheduler"
        );
        assert_eq!(
            o.common.leader_election.resource_namespace,
            "karmada-system"
        );
        assert_eq!(
            o.common.leader_election.lease_duration,
            GoDuration::from_secs(15)
        );
        assert_eq!(o.common.serving.metrics_bind_address, ":8080");
        assert_eq!(o.common.serving.health_probe_bind_address, ":10358");
        assert_eq!(o.common.kube.kube_api_qps, 40.0);
        assert_eq!(o.common.kube.kube_api_burst, 60);
        assert_eq!(o.estimator.timeout, GoDuration::from_secs(3));
        assert_eq!(o.estimator.port, 10352);
        assert_eq!(o.estimator.service_prefix, "karmada-scheduler-estimator");
        assert_eq!(o.descheduling_interval, GoDuration::from_secs(120));
        assert_eq!(o.unschedulable_threshold, GoDuration::from_secs(300));
        assert!(o.validate().is_ok());
    }

    #[test]
    fn own_and_shared_flags_parse() {
        let o = run(&[
            "--descheduling-interval=30s",
            "--unschedulable-threshold",
            "1m",
            "--scheduler-estimator-port=20352",
            "--kube-api-qps=5",
            "--leader-elect=false",
            "-v=4",
        ]);
        assert_eq!(o.descheduling_interval, GoDuration::from_secs(30));
        assert_eq!(o.unschedulable_threshold, GoDuration::from_secs(60));
        assert_eq!(o.estimator.port, 20352);
        assert_eq!(o.common.kube.kube_api_qps, 5.0);
        assert!(!o.common.leader_election.leader_elect);
        assert_eq!(o.common.logging.verbosity, 4);
        assert_eq!(
            err(&["--descheduling-interval=soon"]),
            r#"invalid argument "soon" for "--descheduling-interval" flag: time: invalid duration "soon""#
        );
        // The Go descheduler has neither.
        assert_eq!(
            err(&["--leader-elect-resource-name=x"]),
            "unknown flag: --leader-elect-resource-name"
        );
        assert_eq!(
            err(&["--feature-gates=A=true"]),
            "unknown flag: --feature-gates"
        );
        assert_eq!(
            parse(&["extra"]).unwrap_err().message,
            r#""karmada-descheduler" does not take any arguments, got ["extra"]"#
        );
    }

    #[test]
    fn validation_messages_are_the_references() {
        let e = run(&[
            "--scheduler-estimator-port=70000",
            "--scheduler-estimator-timeout=-1s",
            "--descheduling-interval=-1s",
            "--unschedulable-threshold=-2m",
        ])
        .validate()
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"[Options.SchedulerEstimatorPort: Invalid value: 70000: must be a valid port between 0 and 65535 inclusive, Options.SchedulerEstimatorTimeout: Invalid value: "-1s": must be greater than or equal to 0, Options.DeschedulingInterval: Invalid value: "-1s": must be greater than or equal to 0, Options.UnschedulableThreshold: Invalid value: "-2m0s": must be greater than or equal to 0]"#
        );
        assert!(matches!(
            run(&["--logging-format=xml"]).validate(),
            Err(ValidationError::Logging(_))
        ));
    }

    #[test]
    fn help_lists_every_reference_flag() {
        let help = help_text();
        for name in [
            "leader-elect",
            "leader-elect-resource-namespace",
            "leader-elect-lease-duration",
            "leader-elect-renew-deadline",
            "leader-elect-retry-period",
            "kubeconfig",
            "master",
            "kube-api-qps",
            "kube-api-burst",
            "scheduler-estimator-timeout",
            "scheduler-estimator-port",
            "scheduler-estimator-cert-file",
            "scheduler-estimator-key-file",
            "scheduler-estimator-ca-file",
            "insecure-skip-estimator-verify",
            "scheduler-estimator-service-namespace",
            "scheduler-estimator-service-prefix",
            "descheduling-interval",
            "unschedulable-threshold",
            "metrics-bind-address",
            "health-probe-bind-address",
            "enable-pprof",
            "profiling-bind-address",
            "v",
            "vmodule",
            "logging-format",
            "log-flush-frequency",
            "log-dir",
            "log-file",
            "logtostderr",
        ] {
            assert!(
                help.contains(&format!("--{name} "))
                    || help.contains(&format!("--{name}\n"))
                    || help.contains(&format!("--{name}  ")),
                "--{name} missing:\n{help}"
            );
        }
        assert!(help.contains("(default \"2m0s\")") || help.contains("(default 2m0s)"));
    }
}
