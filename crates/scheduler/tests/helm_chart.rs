//! The Helm chart renders (with a real `helm`, built by hack/build-helm.sh) and the container
//! arguments of its Deployment parse and validate with the binary's own flag parser, for the
//! default values and for values that set every flag.
//!
//! Skipped unless `_output/bin/helm` exists; with KARMADA_E2E=1, helm is built first.

use std::process::Command;

use karmada_scheduler::config::options::{Invocation, Options, parse};
use serde_yaml::Value;
use testenv::helm::{chart, helm_or_skip, render};

fn deployment_args(docs: &[Value]) -> Vec<String> {
    let dep = docs
        .iter()
        .find(|d| d["kind"] == "Deployment")
        .expect("a Deployment");
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    c["args"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

fn options(args: &[String]) -> Options {
    match parse(args) {
        Ok(Invocation::Run(o)) => {
            o.validate()
                .unwrap_or_else(|e| panic!("rendered flags do not validate: {e}\n{args:?}"));
            *o
        }
        other => panic!("rendered flags do not parse: {other:?}\n{args:?}"),
    }
}

#[test]
fn defaults_render_the_reference_defaults() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let lint = Command::new(&helm)
        .arg("lint")
        .arg(chart())
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "helm lint:\n{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let docs = render(&helm, &[]);
    let opts = options(&deployment_args(&docs));
    let mut reference = Options {
        changed: opts.changed.clone(),
        ..Default::default()
    };
    reference.common.kube.kubeconfig = "/etc/karmada/kubeconfig".into();
    assert_eq!(
        opts, reference,
        "chart defaults equal the reference defaults"
    );
    // Probes on the health port, RBAC present, no ServiceMonitor by default.
    let dep = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["readinessProbe"]["httpGet"]["port"], 10351);
    // The binary's path in the image (hack/build-image.sh), the same as in Karmada's images.
    assert_eq!(c["command"][0], "/bin/karmada-scheduler");
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    for k in [
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ServiceAccount",
        "Service",
    ] {
        assert!(kinds.contains(&k), "{k} in {kinds:?}");
    }
    assert!(!kinds.contains(&"ServiceMonitor"));
}

/// `0` given on the command line (`--set`) is a number to Helm: it still turns the servers off.
#[test]
fn zero_addresses_disable_the_servers() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let docs = render(
        &helm,
        &[
            "scheduler.metricsBindAddress=0",
            "scheduler.healthProbeBindAddress=0",
        ],
    );
    let opts = options(&deployment_args(&docs));
    assert_eq!(opts.common.serving.metrics_bind_address, "0");
    assert_eq!(opts.common.serving.health_probe_bind_address, "0");
    let dep = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    assert!(
        c["livenessProbe"].is_null() && c["ports"].is_null(),
        "{c:?}"
    );
    assert!(!docs.iter().any(|d| d["kind"] == "Service"));
}

#[test]
fn every_flag_value_reaches_the_binary() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let docs = render(
        &helm,
        &[
            "scheduler.leaderElect=false",
            "scheduler.leaderElectLeaseDuration=20s",
            "scheduler.master=https://10.0.0.1:5443",
            "scheduler.kubeApiQps=12.5",
            "scheduler.kubeApiBurst=30",
            "scheduler.metricsBindAddress=:9090",
            "scheduler.healthProbeBindAddress=:9091",
            "scheduler.enableSchedulerEstimator=true",
            "scheduler.disableSchedulerEstimatorInPullMode=true",
            "scheduler.schedulerEstimatorTimeout=1m30s",
            "scheduler.schedulerEstimatorPort=20352",
            "scheduler.schedulerEstimatorCaFile=/tls/ca.crt",
            "scheduler.plugins={*,-ClusterLocality}",
            "scheduler.schedulerName=rs-scheduler",
            "scheduler.featureGates.PriorityBasedScheduling=false",
            "scheduler.rateLimiterQps=20",
            "scheduler.exitOnLostLease=true",
            "scheduler.schedulerEstimatorTlsServerName=estimator.example",
            "scheduler.schedulerEstimatorEndpointRouting=true",
            "scheduler.schedulerEstimatorTlsNameAnnotation=true",
            "scheduler.schedulerEstimatorFailurePolicy=per-cluster",
            "scheduler.enableExplainEndpoint=true",
            "logging.format=json",
            "logging.v=4",
            "logging.logDir=/var/log/ks",
            "logging.alsologtostderrthreshold=ERROR",
            "logging.legacyStderrThresholdBehavior=false",
            "serviceMonitor.enabled=true",
            "extraArgs={--log-file-max-size=10}",
        ],
    );
    let opts = options(&deployment_args(&docs));
    assert!(!opts.common.leader_election.leader_elect);
    assert_eq!(
        opts.common.leader_election.lease_duration.to_string(),
        "20s"
    );
    assert_eq!(opts.common.kube.master, "https://10.0.0.1:5443");
    assert_eq!(opts.common.kube.kube_api_qps, 12.5);
    assert_eq!(opts.common.kube.kube_api_burst, 30);
    assert_eq!(opts.common.serving.metrics_bind_address, ":9090");
    assert!(opts.enable_scheduler_estimator && opts.disable_scheduler_estimator_in_pull_mode);
    assert_eq!(opts.estimator.timeout.to_string(), "1m30s");
    assert_eq!(opts.estimator.port, 20352);
    assert_eq!(opts.estimator.ca_file, "/tls/ca.crt");
    assert_eq!(opts.plugins, vec!["*", "-ClusterLocality"]);
    assert_eq!(opts.scheduler_name, "rs-scheduler");
    assert!(!opts.feature_gates.enabled("PriorityBasedScheduling"));
    assert_eq!(opts.rate_limiter.qps, 20);
    assert!(opts.common.leader_election.exit_on_lost_lease);
    assert_eq!(opts.estimator.tls_server_name, "estimator.example");
    assert!(opts.estimator.endpoint_routing);
    assert!(opts.estimator.tls_server_name_annotation);
    assert_eq!(opts.estimator.failure_policy, "per-cluster");
    assert!(opts.enable_explain_endpoint);
    assert_eq!(opts.common.logging.format, "json");
    assert_eq!(opts.common.logging.verbosity, 4);
    assert_eq!(opts.common.logging.log_dir, "/var/log/ks");
    assert_eq!(opts.common.logging.alsologtostderrthreshold, 2);
    assert!(!opts.common.logging.legacy_stderr_threshold_behavior);
    assert_eq!(opts.common.logging.log_file_max_size, 10);
    let dep = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
    let c = &dep["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], 9091);
    let kinds: Vec<&str> = docs.iter().filter_map(|d| d["kind"].as_str()).collect();
    assert!(kinds.contains(&"ServiceMonitor"));
    // With the estimator on, its Services are readable.
    let estimator_role = docs.iter().any(|d| {
        d["kind"] == "Role"
            && d["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("estimator-services"))
    });
    assert!(estimator_role);
}

/// The scheduler may ask for token and access reviews only when `/debug/explain`, which needs
/// them to check its callers, is enabled.
#[test]
fn the_explain_endpoint_brings_the_review_rules() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let reviews = |sets: &[&str]| -> Vec<String> {
        let docs = render(&helm, sets);
        let role = docs
            .iter()
            .find(|d| d["kind"] == "ClusterRole")
            .expect("a ClusterRole");
        let mut found = Vec::new();
        for rule in role["rules"].as_sequence().unwrap() {
            for r in rule["resources"].as_sequence().unwrap() {
                let r = r.as_str().unwrap();
                if r.ends_with("reviews") {
                    let verbs: Vec<&str> = rule["verbs"]
                        .as_sequence()
                        .unwrap()
                        .iter()
                        .filter_map(|v| v.as_str())
                        .collect();
                    let group = rule["apiGroups"][0].as_str().unwrap();
                    found.push(format!("{r}.{group}: {}", verbs.join(",")));
                }
            }
        }
        found
    };
    assert!(reviews(&[]).is_empty(), "{:?}", reviews(&[]));
    assert_eq!(
        reviews(&["scheduler.enableExplainEndpoint=true"]),
        [
            "tokenreviews.authentication.k8s.io: create",
            "subjectaccessreviews.authorization.k8s.io: create"
        ]
    );
}

/// Karmada's own chart (v1.18.2 from the Go module cache, or the one `KARMADA_CHART_DIR` names,
/// e.g. v1.19's) renders scheduler arguments that ours parses and validates, with v1.19's new
/// values set: `scheduler.enableEmptyWorkloadPropagation` becomes
/// `--enable-empty-workload-propagation=true` in a v1.19 chart (a v1.18.2 chart ignores it);
/// `schedulerEstimator.certs` only names the estimator pods' Secret.
#[test]
fn karmadas_chart_renders_arguments_ours_takes() {
    let Some(helm) = helm_or_skip("karmadas_chart_renders_arguments_ours_takes") else {
        return;
    };
    let Some(chart) =
        testenv::helm::karmada_chart_or_skip("karmadas_chart_renders_arguments_ours_takes")
    else {
        return;
    };
    let docs = testenv::helm::render_chart(
        &helm,
        chart.path(),
        "karmada",
        "karmada-system",
        &[
            "installMode=host",
            "components={descheduler}",
            "scheduler.enableSchedulerEstimator=true",
            "scheduler.enableEmptyWorkloadPropagation=true",
            "schedulerEstimator.certs=estimator-cert",
        ],
    );
    let scheduler = docs
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "karmada-scheduler")
        .expect("the karmada-scheduler Deployment");
    let c = &scheduler["spec"]["template"]["spec"]["containers"][0];
    let mut args: Vec<String> = c["command"]
        .as_sequence()
        .into_iter()
        .flatten()
        .chain(c["args"].as_sequence().into_iter().flatten())
        .filter_map(|a| a.as_str().map(str::to_string))
        .skip(1)
        .collect();
    // The pod's IP comes from the downward API.
    for a in &mut args {
        *a = a.replace("$(POD_IP)", "127.0.0.1");
    }
    let opts = options(&args);
    assert!(opts.enable_scheduler_estimator);
    let v1_19 = args
        .iter()
        .any(|a| a == "--enable-empty-workload-propagation=true");
    assert_eq!(opts.enable_empty_workload_propagation, v1_19);
    println!(
        "Karmada chart at {}: v1.19 values rendered: {v1_19}",
        chart.path().display()
    );
}
