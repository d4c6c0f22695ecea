//! The chart's optional descheduler (`descheduler.enabled`): rendered with a real `helm`
//! (built by hack/build-helm.sh), its container arguments parse and validate with the
//! descheduler's own flag parser, for the default values and for values that set every flag;
//! nothing of it renders unless enabled; its RBAC is exactly what the descheduler does.
//!
//! Skipped unless `_output/bin/helm` exists; with KARMADA_E2E=1, helm is built first.

use std::collections::BTreeSet;
use std::process::Command;

use karmada_descheduler::options::{Invocation, Options, flag_names, parse};
use serde_yaml::Value;
use testenv::helm::{chart, helm_or_skip, render};

fn name(doc: &Value) -> &str {
    doc["metadata"]["name"].as_str().unwrap_or_default()
}

/// An object of the descheduler: by name or by its labels.
fn is_descheduler(doc: &Value) -> bool {
    name(doc).contains("descheduler")
        || doc["metadata"]["labels"]["app.kubernetes.io/component"] == "descheduler"
}

/// The descheduler's Deployment: the one whose container runs karmada-descheduler.
fn descheduler_deployment(docs: &[Value]) -> &Value {
    let found: Vec<&Value> = docs
        .iter()
        .filter(|d| {
            d["kind"] == "Deployment"
                && d["spec"]["template"]["spec"]["containers"][0]["command"][0]
                    == "/bin/karmada-descheduler"
        })
        .collect();
    assert_eq!(found.len(), 1, "one descheduler Deployment");
    found[0]
}

fn container(dep: &Value) -> &Value {
    &dep["spec"]["template"]["spec"]["containers"][0]
}

fn args(docs: &[Value]) -> Vec<String> {
    container(descheduler_deployment(docs))["args"]
        .as_sequence()
        .expect("args")
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect()
}

fn parsed(args: &[String]) -> Options {
    match parse(args) {
        Ok(Invocation::Run(o)) => *o,
        other => panic!("rendered flags do not parse: {other:?}\n{args:?}"),
    }
}

fn options(args: &[String]) -> Options {
    let o = parsed(args);
    o.validate()
        .unwrap_or_else(|e| panic!("rendered flags do not validate: {e}\n{args:?}"));
    o
}

#[test]
fn defaults_render_the_reference_defaults() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let lint = Command::new(&helm)
        .arg("lint")
        .arg(chart())
        .args(["--set", "descheduler.enabled=true"])
        .args(["--set", "descheduler.serviceMonitor.enabled=true"])
        .output()
        .unwrap();
    assert!(
        lint.status.success(),
        "helm lint:\n{}",
        String::from_utf8_lossy(&lint.stdout)
    );
    let docs = render(&helm, &["descheduler.enabled=true"]);
    let opts = options(&args(&docs));
    // Field by field, so that a difference names the group it is in.
    let mut reference = Options {
        changed: opts.changed.clone(),
        ..Default::default()
    };
    // The one value the chart sets: the kubeconfig of its Secret.
    reference.common.kube.kubeconfig = "/etc/karmada/kubeconfig".into();
    assert_eq!(
        opts.common.leader_election,
        reference.common.leader_election
    );
    assert_eq!(
        opts.common.leader_election.resource_name,
        "karmada-descheduler"
    );
    assert_eq!(opts.common.kube, reference.common.kube);
    assert_eq!(opts.common.serving, reference.common.serving);
    assert_eq!(opts.common.serving.health_probe_bind_address, ":10358");
    assert_eq!(opts.estimator, reference.estimator);
    assert_eq!(opts.descheduling_interval, reference.descheduling_interval);
    assert_eq!(
        opts.unschedulable_threshold,
        reference.unschedulable_threshold
    );
    assert_eq!(opts.concurrent_syncs, reference.concurrent_syncs);
    assert_eq!(opts.common.logging, reference.common.logging);
    assert_eq!(
        opts, reference,
        "chart defaults equal the binary's defaults"
    );

    let dep = descheduler_deployment(&docs);
    let c = container(dep);
    assert_eq!(
        c["image"], "karmada-scheduler-rs:0.1.0",
        "the scheduler's image"
    );
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz");
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], 10358);
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz");
    assert_eq!(c["readinessProbe"]["httpGet"]["port"], 10358);
    let ports: Vec<(&str, u64)> = c["ports"]
        .as_sequence()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap(),
                p["containerPort"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(ports, vec![("metrics", 8080), ("health", 10358)]);
    let spec = &dep["spec"]["template"]["spec"];
    assert_eq!(
        spec["serviceAccountName"],
        "ksrs-karmada-scheduler-rs-descheduler"
    );
    assert_eq!(spec["automountServiceAccountToken"], false);
    assert_eq!(
        spec["volumes"][0]["secret"]["secretName"],
        "karmada-kubeconfig"
    );

    // Its own ServiceAccount and metrics Service; no ServiceMonitor unless asked for.
    let mine: Vec<(&str, &str)> = docs
        .iter()
        .filter(|d| is_descheduler(d))
        .map(|d| (d["kind"].as_str().unwrap(), name(d)))
        .collect();
    for k in [
        ("ServiceAccount", "ksrs-karmada-scheduler-rs-descheduler"),
        ("Service", "ksrs-karmada-scheduler-rs-descheduler-metrics"),
        ("Deployment", "ksrs-karmada-scheduler-rs-descheduler"),
    ] {
        assert!(mine.contains(&k), "{k:?} in {mine:?}");
    }
    assert!(!mine.iter().any(|(k, _)| *k == "ServiceMonitor"));

    // No selector of the scheduler's objects picks the descheduler's pods, and the other way.
    let sched = docs
        .iter()
        .find(|d| d["kind"] == "Deployment" && !is_descheduler(d))
        .expect("the scheduler's Deployment");
    let matches =
        |selector: &Value, pod: &Value| {
            selector.as_mapping().unwrap().iter().all(|(k, v)| {
                pod["spec"]["template"]["metadata"]["labels"][k.as_str().unwrap()] == *v
            })
        };
    assert!(!matches(&sched["spec"]["selector"]["matchLabels"], dep));
    assert!(!matches(&dep["spec"]["selector"]["matchLabels"], sched));
}

#[test]
fn every_flag_value_reaches_the_binary() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let docs = render(
        &helm,
        &[
            "descheduler.enabled=true",
            "descheduler.leaderElect=false",
            "descheduler.leaderElectResourceNamespace=karmada-leases",
            "descheduler.leaderElectLeaseDuration=20s",
            "descheduler.leaderElectRenewDeadline=12s",
            "descheduler.leaderElectRetryPeriod=3s",
            "descheduler.exitOnLostLease=true",
            "descheduler.master=https://10.0.0.1:5443",
            "descheduler.kubeApiQps=12.5",
            "descheduler.kubeApiBurst=30",
            "descheduler.metricsBindAddress=:9090",
            "descheduler.healthProbeBindAddress=:9091",
            "descheduler.enablePprof=true",
            "descheduler.profilingBindAddress=127.0.0.1:6061",
            "descheduler.schedulerEstimatorTimeout=1m30s",
            "descheduler.schedulerEstimatorServiceNamespace=estimators",
            "descheduler.schedulerEstimatorServicePrefix=est",
            "descheduler.schedulerEstimatorPort=20352",
            "descheduler.schedulerEstimatorCertFile=/tls/tls.crt",
            "descheduler.schedulerEstimatorKeyFile=/tls/tls.key",
            "descheduler.schedulerEstimatorCaFile=/tls/ca.crt",
            "descheduler.insecureSkipEstimatorVerify=true",
            "descheduler.schedulerEstimatorTlsServerName=estimator.example.internal",
            "descheduler.schedulerEstimatorEndpointRouting=true",
            "descheduler.schedulerEstimatorTlsNameAnnotation=true",
            "descheduler.schedulerEstimatorFailurePolicy=per-cluster",
            "descheduler.deschedulingInterval=30s",
            "descheduler.unschedulableThreshold=1m",
            "descheduler.concurrentDeschedulingSyncs=4",
            "descheduler.logging.v=4",
            "descheduler.logging.vmodule=controller=5",
            "descheduler.logging.flushFrequency=10s",
            "descheduler.logging.logDir=/var/log/kd",
            "descheduler.logging.logFile=/var/log/kd/descheduler.log",
            "descheduler.logging.logFileMaxSize=100",
            "descheduler.logging.logtostderr=false",
            "descheduler.logging.alsologtostderr=true",
            "descheduler.logging.alsologtostderrthreshold=WARNING",
            "descheduler.logging.legacyStderrThresholdBehavior=false",
            "descheduler.logging.addDirHeader=true",
            "descheduler.logging.skipHeaders=true",
            "descheduler.logging.oneOutput=true",
            "descheduler.logging.skipLogHeaders=true",
            "descheduler.logging.stderrthreshold=1",
            "descheduler.logging.logBacktraceAt=controller.go:10",
            "descheduler.karmadaKubeconfig.secretName=karmada-descheduler-kubeconfig",
            "descheduler.karmadaKubeconfig.mountPath=/etc/karmada-descheduler",
            "descheduler.image.tag=v9",
            "descheduler.serviceMonitor.enabled=true",
            "descheduler.extraArgs={--kube-api-burst=31}",
            // The scheduler's values do not leak into the descheduler.
            "logging.v=2",
            "scheduler.healthProbeBindAddress=:7000",
        ],
    );
    let args = args(&docs);
    let opts = options(&args);
    let le = &opts.common.leader_election;
    assert!(!le.leader_elect);
    assert_eq!(le.resource_name, "karmada-descheduler");
    assert_eq!(le.resource_namespace, "karmada-leases");
    assert_eq!(le.lease_duration.to_string(), "20s");
    assert_eq!(le.renew_deadline.to_string(), "12s");
    assert_eq!(le.retry_period.to_string(), "3s");
    assert!(le.exit_on_lost_lease);
    assert_eq!(
        opts.common.kube.kubeconfig,
        "/etc/karmada-descheduler/kubeconfig"
    );
    assert_eq!(opts.common.kube.master, "https://10.0.0.1:5443");
    assert_eq!(opts.common.kube.kube_api_qps, 12.5);
    // extraArgs come last, so they win.
    assert_eq!(opts.common.kube.kube_api_burst, 31);
    assert!(args.contains(&"--kube-api-burst=30".to_string()));
    assert_eq!(args.last().unwrap(), "--kube-api-burst=31");
    assert_eq!(opts.common.serving.metrics_bind_address, ":9090");
    assert_eq!(opts.common.serving.health_probe_bind_address, ":9091");
    assert!(opts.common.serving.enable_pprof);
    assert_eq!(opts.common.serving.profiling_bind_address, "127.0.0.1:6061");
    let e = &opts.estimator;
    assert_eq!(e.timeout.to_string(), "1m30s");
    assert_eq!(e.service_namespace, "estimators");
    assert_eq!(e.service_prefix, "est");
    assert_eq!(e.port, 20352);
    assert_eq!(e.cert_file, "/tls/tls.crt");
    assert_eq!(e.key_file, "/tls/tls.key");
    assert_eq!(e.ca_file, "/tls/ca.crt");
    assert!(e.insecure_skip_verify);
    assert_eq!(e.tls_server_name, "estimator.example.internal");
    assert!(e.endpoint_routing);
    assert!(e.tls_server_name_annotation);
    assert_eq!(e.failure_policy, "per-cluster");
    assert_eq!(opts.descheduling_interval.to_string(), "30s");
    assert_eq!(opts.unschedulable_threshold.to_string(), "1m0s");
    assert_eq!(opts.concurrent_syncs, 4);
    let l = &opts.common.logging;
    assert_eq!(l.verbosity, 4);
    assert_eq!(l.vmodule, vec![("controller".to_string(), 5)]);
    assert_eq!(l.flush_frequency.to_string(), "10s");
    assert_eq!(l.log_dir, "/var/log/kd");
    assert_eq!(l.log_file, "/var/log/kd/descheduler.log");
    assert_eq!(l.log_file_max_size, 100);
    assert!(!l.logtostderr);
    assert!(l.alsologtostderr && l.add_dir_header && l.skip_headers);
    assert!(l.one_output && l.skip_log_headers);
    assert_eq!(l.stderrthreshold, 1);
    assert_eq!(l.alsologtostderrthreshold, 1);
    assert!(!l.legacy_stderr_threshold_behavior);
    assert_eq!(l.log_backtrace_at, "controller.go:10");

    // Every flag of the binary is rendered (the chart leaves none to extraArgs).
    let given: BTreeSet<&str> = opts.changed.iter().map(String::as_str).collect();
    let missing: Vec<&str> = flag_names()
        .into_iter()
        .filter(|f| !given.contains(f))
        .collect();
    assert!(
        missing.is_empty(),
        "flags the chart cannot set: {missing:?}"
    );

    let dep = descheduler_deployment(&docs);
    let c = container(dep);
    assert_eq!(c["image"], "karmada-scheduler-rs:v9");
    assert_eq!(c["livenessProbe"]["httpGet"]["port"], 9091);
    assert_eq!(c["readinessProbe"]["httpGet"]["port"], 9091);
    assert_eq!(c["ports"][0]["containerPort"], 9090);
    let spec = &dep["spec"]["template"]["spec"];
    assert_eq!(
        spec["volumes"][0]["secret"]["secretName"],
        "karmada-descheduler-kubeconfig"
    );
    assert_eq!(
        c["volumeMounts"][0]["mountPath"],
        "/etc/karmada-descheduler"
    );
    assert!(
        docs.iter()
            .any(|d| d["kind"] == "ServiceMonitor" && is_descheduler(d))
    );
    // The RBAC follows the namespaces.
    let ns_of = |suffix: &str| {
        docs.iter()
            .find(|d| d["kind"] == "Role" && name(d).ends_with(suffix) && is_descheduler(d))
            .map(|d| d["metadata"]["namespace"].as_str().unwrap().to_string())
    };
    assert_eq!(
        ns_of("descheduler-leader-election").as_deref(),
        Some("karmada-leases")
    );
    assert_eq!(
        ns_of("descheduler-estimator-services").as_deref(),
        Some("estimators")
    );
}

/// The logging values that do not validate together with the ones above reach the binary too:
/// the JSON format (which refuses --vmodule) and the flags behind the LoggingAlphaOptions gate,
/// which the descheduler, without --feature-gates, refuses as the reference does.
#[test]
fn json_and_alpha_logging_values_reach_the_binary() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let docs = render(
        &helm,
        &[
            "descheduler.enabled=true",
            "descheduler.logging.format=json",
            "descheduler.logging.textSplitStream=true",
            "descheduler.logging.textInfoBufferSize=1Ki",
            "descheduler.logging.jsonSplitStream=true",
            "descheduler.logging.jsonInfoBufferSize=2Mi",
        ],
    );
    let opts = parsed(&args(&docs));
    let l = &opts.common.logging;
    assert_eq!(l.format, "json");
    assert!(l.text_split_stream && l.json_split_stream);
    assert_eq!(l.text_info_buffer_size, "1Ki");
    assert_eq!(l.json_info_buffer_size, "2Mi");
    let err = opts.validate().unwrap_err().to_string();
    assert!(err.contains("LoggingAlphaOptions"), "{err}");
    // JSON alone validates.
    let docs = render(
        &helm,
        &[
            "descheduler.enabled=true",
            "descheduler.logging.format=json",
        ],
    );
    assert_eq!(options(&args(&docs)).common.logging.format, "json");
}

#[test]
fn disabled_by_default() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let default = render(&helm, &[]);
    let found: Vec<(&str, &str)> = default
        .iter()
        .filter(|d| is_descheduler(d) || serde_yaml::to_string(d).unwrap().contains("descheduler"))
        .map(|d| (d["kind"].as_str().unwrap_or_default(), name(d)))
        .collect();
    assert!(
        found.is_empty(),
        "descheduler objects by default: {found:?}"
    );
    // Enabling it adds objects and changes none of the scheduler's.
    let enabled = render(&helm, &["descheduler.enabled=true"]);
    let others: Vec<&Value> = enabled.iter().filter(|d| !is_descheduler(d)).collect();
    assert_eq!(others, default.iter().collect::<Vec<_>>());
    assert!(enabled.len() > default.len());
}

/// Each rule of a descheduler Role/ClusterRole, one row per verb:
/// (kind, namespace, apiGroup, resource, resourceNames, verb).
type Rule = (String, String, String, String, String, String);

fn rules(docs: &[Value]) -> BTreeSet<Rule> {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let list = |v: &Value| -> Vec<String> {
        v.as_sequence()
            .map(|s| s.iter().map(|x| x.as_str().unwrap().to_string()).collect())
            .unwrap_or_default()
    };
    let mut out = BTreeSet::new();
    for d in docs.iter().filter(|d| is_descheduler(d)) {
        let kind = s(&d["kind"]);
        if kind != "Role" && kind != "ClusterRole" {
            continue;
        }
        for r in d["rules"].as_sequence().unwrap() {
            for g in list(&r["apiGroups"]) {
                for res in list(&r["resources"]) {
                    for v in list(&r["verbs"]) {
                        out.insert((
                            kind.clone(),
                            s(&d["metadata"]["namespace"]),
                            g.clone(),
                            res.clone(),
                            list(&r["resourceNames"]).join(","),
                            v,
                        ));
                    }
                }
            }
        }
    }
    out
}

#[test]
fn rbac_is_exactly_what_the_descheduler_does() {
    let Some(helm) = helm_or_skip("helm_chart") else {
        return;
    };
    let docs = render(&helm, &["descheduler.enabled=true"]);
    let row = |kind: &str, ns: &str, group: &str, res: &str, names: &str, verb: &str| {
        (
            kind.to_string(),
            ns.to_string(),
            group.to_string(),
            res.to_string(),
            names.to_string(),
            verb.to_string(),
        )
    };
    let mut want = BTreeSet::new();
    // Watches ResourceBindings and updates their spec.clusters.
    for v in ["list", "watch", "update"] {
        want.insert(row(
            "ClusterRole",
            "",
            "work.karmada.io",
            "resourcebindings",
            "",
            v,
        ));
    }
    // Watches Clusters (which estimators to connect).
    for v in ["list", "watch"] {
        want.insert(row(
            "ClusterRole",
            "",
            "cluster.karmada.io",
            "clusters",
            "",
            v,
        ));
    }
    // Records events on the bindings.
    for v in ["create", "patch"] {
        want.insert(row("ClusterRole", "", "", "events", "", v));
    }
    // Leader election on its Lease: create (RBAC cannot name an object not yet there), then
    // get/update of that one Lease.
    let le = "karmada-system";
    want.insert(row(
        "Role",
        le,
        "coordination.k8s.io",
        "leases",
        "",
        "create",
    ));
    for v in ["get", "update"] {
        want.insert(row(
            "Role",
            le,
            "coordination.k8s.io",
            "leases",
            "karmada-descheduler",
            v,
        ));
    }
    // The estimator Services (looked up, watched) and their EndpointSlices (listed, watched:
    // never read one by one).
    let est = "karmada-system";
    for v in ["get", "list", "watch"] {
        want.insert(row("Role", est, "", "services", "", v));
    }
    for v in ["list", "watch"] {
        want.insert(row(
            "Role",
            est,
            "discovery.k8s.io",
            "endpointslices",
            "",
            v,
        ));
    }
    assert_eq!(rules(&docs), want);

    // Every binding names the descheduler's own ServiceAccount, and each role is bound.
    let sa = serde_yaml::from_str::<Value>(
        "kind: ServiceAccount\nname: ksrs-karmada-scheduler-rs-descheduler\nnamespace: karmada-system",
    )
    .unwrap();
    let roles: BTreeSet<(&str, &str)> = docs
        .iter()
        .filter(|d| is_descheduler(d) && (d["kind"] == "Role" || d["kind"] == "ClusterRole"))
        .map(|d| (d["kind"].as_str().unwrap(), name(d)))
        .collect();
    let mut bound = BTreeSet::new();
    for b in docs.iter().filter(|d| {
        is_descheduler(d) && (d["kind"] == "RoleBinding" || d["kind"] == "ClusterRoleBinding")
    }) {
        assert_eq!(b["subjects"].as_sequence().unwrap(), &vec![sa.clone()]);
        bound.insert((
            b["roleRef"]["kind"].as_str().unwrap(),
            b["roleRef"]["name"].as_str().unwrap(),
        ));
    }
    assert_eq!(bound, roles);

    // rbac.subjects replaces the ServiceAccount (for a kubeconfig user); rbac.create=false
    // renders none.
    let docs = render(
        &helm,
        &[
            "descheduler.enabled=true",
            "descheduler.rbac.subjects[0].kind=User",
            "descheduler.rbac.subjects[0].name=system:karmada:karmada-descheduler",
        ],
    );
    for b in docs
        .iter()
        .filter(|d| is_descheduler(d) && d["kind"].as_str().unwrap().ends_with("Binding"))
    {
        assert_eq!(b["subjects"][0]["kind"], "User");
        assert_eq!(
            b["subjects"][0]["name"],
            "system:karmada:karmada-descheduler"
        );
    }
    let docs = render(
        &helm,
        &["descheduler.enabled=true", "descheduler.rbac.create=false"],
    );
    assert!(rules(&docs).is_empty());
}
