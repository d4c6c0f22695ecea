//! The estimator flags of `karmada-scheduler`, as values (the binary maps flags onto them).

use std::path::PathBuf;
use std::time::Duration;

/// Default of `--scheduler-estimator-service-prefix`.
pub const DEFAULT_SERVICE_PREFIX: &str = "karmada-scheduler-estimator";
/// Default of `--scheduler-estimator-service-namespace`.
pub const DEFAULT_SERVICE_NAMESPACE: &str = "karmada-system";
/// Default of `--scheduler-estimator-port`.
pub const DEFAULT_PORT: u16 = 10352;
/// Default of `--scheduler-estimator-timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);
/// The reference's fixed limit for one address to become ready when dialling.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a failed dial keeps the fan-out from dialling the same cluster again.
pub const DEFAULT_REDIAL_BACKOFF: Duration = Duration::from_secs(10);

/// What a fan-out does with clusters whose estimator failed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FailurePolicy {
    /// The reference rule: any failed cluster fails the whole estimator for this binding, so
    /// scheduler-core ignores all of its answers.
    #[default]
    FailAll,
    /// Our extension: a failed cluster answers `-1` ("no opinion"), the others keep their
    /// answers. Off by default.
    PerCluster,
}

/// Everything the estimator client is configured with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EstimatorOptions {
    /// `--scheduler-estimator-service-prefix`: Service name is `<prefix>-<cluster>`.
    pub service_prefix: String,
    /// `--scheduler-estimator-service-namespace`: where the Services are looked up.
    pub service_namespace: String,
    /// `--scheduler-estimator-port`: matched against `spec.ports[].port`.
    pub port: u16,
    /// `--scheduler-estimator-timeout`: the deadline of one whole fan-out.
    pub timeout: Duration,
    /// `--scheduler-estimator-cert-file` (empty flag = `None`).
    pub cert_file: Option<PathBuf>,
    /// `--scheduler-estimator-key-file` (empty flag = `None`).
    pub key_file: Option<PathBuf>,
    /// `--scheduler-estimator-ca-file` (empty flag = `None`); turns TLS on.
    pub ca_file: Option<PathBuf>,
    /// `--insecure-skip-estimator-verify`; turns TLS on without verification.
    pub insecure_skip_verify: bool,
    /// `--disable-scheduler-estimator-in-pull-mode`: Pull clusters get no connection.
    pub disable_in_pull_mode: bool,
    /// Our extension: the TLS server name to verify instead of the dialled host (a Service's
    /// `resolver::TLS_SERVER_NAME_ANNOTATION` overrides it for that estimator when
    /// `tls_server_name_annotation` allows it).
    pub server_name: Option<String>,
    /// Our extension: honour a Service's `resolver::TLS_SERVER_NAME_ANNOTATION`. Off by
    /// default: whoever may edit a Service would otherwise choose which certificate the
    /// daemon accepts for that estimator.
    pub tls_server_name_annotation: bool,
    /// Our extension: a ClusterIP Service's ready endpoints are dialled, not its cluster IP
    /// (for control planes without kube-proxy). Off by default.
    pub endpoint_routing: bool,
    /// Our extension: what a failed cluster does to the fan-out (default: the reference's).
    pub failure_policy: FailurePolicy,
    /// Limit for one address to connect (the reference hard-codes 5 s).
    pub connect_timeout: Duration,
    /// After a failed dial, calls do not dial the cluster again before this elapses, nor does
    /// a Service change that leaves its addresses as they were (Cluster events and their
    /// retries follow the per-cluster backoff of [`crate::sync::EstimatorSync`]).
    pub redial_backoff: Duration,
}

impl Default for EstimatorOptions {
    fn default() -> Self {
        Self {
            service_prefix: DEFAULT_SERVICE_PREFIX.to_string(),
            service_namespace: DEFAULT_SERVICE_NAMESPACE.to_string(),
            port: DEFAULT_PORT,
            timeout: DEFAULT_TIMEOUT,
            cert_file: None,
            key_file: None,
            ca_file: None,
            insecure_skip_verify: false,
            disable_in_pull_mode: false,
            server_name: None,
            tls_server_name_annotation: false,
            endpoint_routing: false,
            failure_policy: FailurePolicy::FailAll,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            redial_backoff: DEFAULT_REDIAL_BACKOFF,
        }
    }
}

impl EstimatorOptions {
    /// Name of the estimator Service of `cluster`.
    pub fn service_name(&self, cluster: &str) -> String {
        crate::resolver::service_name(&self.service_prefix, cluster)
    }

    /// The cluster whose estimator Service is `namespace/name`, if it is one.
    pub fn cluster_of_service<'a>(&self, namespace: &str, name: &'a str) -> Option<&'a str> {
        if namespace != self.service_namespace {
            return None;
        }
        name.strip_prefix(self.service_prefix.as_str())?
            .strip_prefix('-')
            .filter(|c| !c.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_reference_defaults() {
        let o = EstimatorOptions::default();
        assert_eq!(o.service_prefix, "karmada-scheduler-estimator");
        assert_eq!(o.service_namespace, "karmada-system");
        assert_eq!(o.port, 10352);
        assert_eq!(o.timeout, Duration::from_secs(3));
        assert_eq!(o.connect_timeout, Duration::from_secs(5));
        assert_eq!(o.failure_policy, FailurePolicy::FailAll);
        assert!(!o.insecure_skip_verify && !o.disable_in_pull_mode);
        assert!(!o.tls_server_name_annotation && !o.endpoint_routing);
    }

    #[test]
    fn service_names_map_to_clusters() {
        let o = EstimatorOptions::default();
        assert_eq!(o.service_name("m-1"), "karmada-scheduler-estimator-m-1");
        assert_eq!(
            o.cluster_of_service("karmada-system", "karmada-scheduler-estimator-m-1"),
            Some("m-1")
        );
        assert_eq!(
            o.cluster_of_service("default", "karmada-scheduler-estimator-m-1"),
            None
        );
        assert_eq!(
            o.cluster_of_service("karmada-system", "karmada-scheduler-estimator-"),
            None
        );
        assert_eq!(o.cluster_of_service("karmada-system", "other"), None);
    }
}
