//! The `--scheduler-estimator-*` flags both estimator consumers (karmada-scheduler and
//! karmada-descheduler) register: one table with the reference's names, texts and defaults
//! (plus our extensions), one setter, the reference's validation messages, and the
//! mapping onto [`EstimatorOptions`].

use component_base::flags::{self, FlagDef, GENERIC as G, Kind as K, flag};
use component_base::goparse::{self, GoDuration, go_quote};
use component_base::setter;

use crate::options::{EstimatorOptions, FailurePolicy};

/// `--scheduler-estimator-failure-policy` values: the reference's all-or-nothing merge, and
/// per-cluster degradation (upstream's open proposal, karmada PR #7664).
pub const FAILURE_POLICY_ALL: &str = "all";
pub const FAILURE_POLICY_PER_CLUSTER: &str = "per-cluster";

/// The values of the estimator flags, as given.
#[derive(Clone, Debug, PartialEq)]
pub struct EstimatorFlags {
    pub timeout: GoDuration,
    pub service_namespace: String,
    pub service_prefix: String,
    pub port: i64,
    pub cert_file: String,
    pub key_file: String,
    pub ca_file: String,
    pub insecure_skip_verify: bool,
    /// Not a flag of the reference: the name estimator certificates are verified against
    /// (empty: the host dialled, as the reference).
    pub tls_server_name: String,
    /// Not a flag of the reference: honour the TLS server name annotation of estimator
    /// Services.
    pub tls_server_name_annotation: bool,
    /// Not a flag of the reference: dial a ClusterIP estimator Service's ready endpoints.
    pub endpoint_routing: bool,
    /// Not a flag of the reference: [`FAILURE_POLICY_ALL`] or [`FAILURE_POLICY_PER_CLUSTER`].
    pub failure_policy: String,
}

impl Default for EstimatorFlags {
    /// The defaults of [`FLAGS`].
    fn default() -> Self {
        let blank = Self {
            timeout: GoDuration::default(),
            service_namespace: String::new(),
            service_prefix: String::new(),
            port: 0,
            cert_file: String::new(),
            key_file: String::new(),
            ca_file: String::new(),
            insecure_skip_verify: false,
            tls_server_name: String::new(),
            tls_server_name_annotation: false,
            endpoint_routing: false,
            failure_policy: String::new(),
        };
        flags::with_defaults(blank, &[FLAGS])
    }
}

impl EstimatorFlags {
    /// The reference's `Options.SchedulerEstimatorPort` check.
    pub fn port_error(&self) -> Option<String> {
        (!(0..=65535).contains(&self.port)).then(|| {
            format!(
                "Options.SchedulerEstimatorPort: Invalid value: {}: must be a valid port between 0 and 65535 inclusive",
                self.port
            )
        })
    }

    /// The reference's `Options.SchedulerEstimatorTimeout` check.
    pub fn timeout_error(&self) -> Option<String> {
        self.timeout.is_negative().then(|| {
            format!(
                "Options.SchedulerEstimatorTimeout: Invalid value: {}: must be greater than or equal to 0",
                go_quote(&self.timeout.to_string())
            )
        })
    }

    /// Our `--scheduler-estimator-failure-policy` check, in the reference's style.
    pub fn failure_policy_error(&self) -> Option<String> {
        (![FAILURE_POLICY_ALL, FAILURE_POLICY_PER_CLUSTER]
            .contains(&self.failure_policy.as_str()))
        .then(|| {
            format!(
                "Options.SchedulerEstimatorFailurePolicy: Unsupported value: {}: supported values: \"{FAILURE_POLICY_ALL}\", \"{FAILURE_POLICY_PER_CLUSTER}\"",
                go_quote(&self.failure_policy)
            )
        })
    }

    /// The client options for these flags (`disable_in_pull_mode` is the scheduler's
    /// `--disable-scheduler-estimator-in-pull-mode`; the descheduler has no such flag).
    pub fn to_options(&self, disable_in_pull_mode: bool) -> EstimatorOptions {
        let file = |s: &str| (!s.is_empty()).then(|| std::path::PathBuf::from(s));
        EstimatorOptions {
            service_prefix: self.service_prefix.clone(),
            service_namespace: self.service_namespace.clone(),
            port: self.port.clamp(0, 65535) as u16,
            timeout: self.timeout.to_std(),
            cert_file: file(&self.cert_file),
            key_file: file(&self.key_file),
            ca_file: file(&self.ca_file),
            insecure_skip_verify: self.insecure_skip_verify,
            disable_in_pull_mode,
            server_name: (!self.tls_server_name.is_empty()).then(|| self.tls_server_name.clone()),
            tls_server_name_annotation: self.tls_server_name_annotation,
            endpoint_routing: self.endpoint_routing,
            failure_policy: if self.failure_policy == FAILURE_POLICY_PER_CLUSTER {
                FailurePolicy::PerCluster
            } else {
                FailurePolicy::FailAll
            },
            ..Default::default()
        }
    }
}

/// Every estimator flag both consumers offer.
pub static FLAGS: &[FlagDef] = &[
    flag(
        G,
        "scheduler-estimator-timeout",
        K::Duration,
        "3s",
        "Specifies the timeout period of calling the scheduler estimator service.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.timeout = GoDuration::parse(v)?)),
    flag(
        G,
        "scheduler-estimator-service-namespace",
        K::Str,
        "karmada-system",
        "The namespace to be used for discovering scheduler estimator services.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.service_namespace = v.into())),
    flag(
        G,
        "scheduler-estimator-service-prefix",
        K::Str,
        "karmada-scheduler-estimator",
        "The prefix of scheduler estimator service name",
    )
    .set(setter!(EstimatorFlags, |o, v| o.service_prefix = v.into())),
    flag(
        G,
        "scheduler-estimator-port",
        K::Int,
        "10352",
        "The secure port on which to connect the accurate scheduler estimator.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.port = goparse::parse_int(v)?)),
    flag(
        G,
        "scheduler-estimator-cert-file",
        K::Str,
        "",
        "SSL certification file used to secure scheduler estimator communication.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.cert_file = v.into())),
    flag(
        G,
        "scheduler-estimator-key-file",
        K::Str,
        "",
        "SSL key file used to secure scheduler estimator communication.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.key_file = v.into())),
    flag(
        G,
        "scheduler-estimator-ca-file",
        K::Str,
        "",
        "SSL Certificate Authority file used to secure scheduler estimator communication.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.ca_file = v.into())),
    flag(
        G,
        "insecure-skip-estimator-verify",
        K::Bool,
        "false",
        "Controls whether verifies the scheduler estimator's certificate chain and host name.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.insecure_skip_verify = goparse::parse_bool(v)?)),
    flag(
        G,
        "scheduler-estimator-tls-server-name",
        K::Str,
        "",
        "The name the scheduler estimators' certificates are verified against instead of the host dialled, e.g. the DNS name in the certificate of estimators reached through a virtual IP. With --scheduler-estimator-tls-name-annotation, the annotation estimator.karmada-scheduler-rs.io/tls-server-name on an estimator Service overrides it for that estimator. Not a flag of the Go Karmada components.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.tls_server_name = v.into())),
    flag(
        G,
        "scheduler-estimator-tls-name-annotation",
        K::Bool,
        "false",
        "Honour the annotation estimator.karmada-scheduler-rs.io/tls-server-name on estimator Services: the name that estimator's certificate is verified against. Off, the annotation is ignored (and logged), since whoever may edit a Service would choose the certificate accepted. Not a flag of the Go Karmada components.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.tls_server_name_annotation = goparse::parse_bool(v)?)),
    flag(
        G,
        "scheduler-estimator-endpoint-routing",
        K::Bool,
        "false",
        "Dial the ready endpoints listed in the EndpointSlices of a ClusterIP estimator Service instead of its cluster IP, for control planes without kube-proxy (as kube-apiserver's --enable-aggregator-routing). Not a flag of the Go Karmada components.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.endpoint_routing = goparse::parse_bool(v)?)),
    flag(
        G,
        "scheduler-estimator-failure-policy",
        K::Str,
        "all",
        "What an estimator that fails does to a binding's estimates: 'all' discards every answer of the scheduler estimators for that binding (as the Go Karmada components do), 'per-cluster' discards only that cluster's. Not a flag of the Go Karmada components.",
    )
    .set(setter!(EstimatorFlags, |o, v| o.failure_policy = v.into())),
];
