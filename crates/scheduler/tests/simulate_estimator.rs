//! `karmada-scheduler simulate --enable-scheduler-estimator` against a real tonic estimator
//! server on loopback, found through ExternalName Services in the input files: the division
//! follows the estimator's answers (the minimum with the general estimate), and a cluster whose
//! Service is broken or missing is reported on stderr while the binding falls back to the
//! general estimator alone (the reference's all-or-nothing merge).

use std::process::{Command, Output};

use serde_json::Value;
use testenv::estimator::{FakeEstimator, Running};

/// Serves `answers` on 127.0.0.1 (other cluster names fail, as an estimator serving a
/// different cluster); stops when the returned server is dropped.
async fn serve(answers: &[(&str, i32)]) -> (u16, Running) {
    let server = FakeEstimator::table(answers).serve().await.unwrap();
    (server.addr.port(), server)
}

/// Three clusters with room for 10 pods each; m3 has no `spec` (accepted as an empty spec).
const CLUSTERS: &str = r#"
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m1}
spec: {syncMode: Push}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: 10}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m2}
spec: {syncMode: Push}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: 10}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: m3}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: 10}}
"#;

const BINDING: &str = r#"---
apiVersion: work.karmada.io/v1alpha2
kind: ResourceBinding
metadata: {name: web, namespace: default}
spec:
  resource: {apiVersion: apps/v1, kind: Deployment, namespace: default, name: web}
  replicas: 12
  placement:
    replicaScheduling:
      replicaSchedulingType: Divided
      replicaDivisionPreference: Weighted
      weightPreference: {dynamicWeight: AvailableReplicas}
"#;

/// The ExternalName Service of `cluster`'s estimator: port 10352 → `target_port` on
/// 127.0.0.1 (`service_port` other than 10352 makes it unusable).
fn service(cluster: &str, service_port: u16, target_port: u16) -> String {
    format!(
        "---\napiVersion: v1\nkind: Service\n\
         metadata: {{name: karmada-scheduler-estimator-{cluster}, namespace: karmada-system}}\n\
         spec:\n  type: ExternalName\n  externalName: 127.0.0.1\n  \
         ports: [{{port: {service_port}, targetPort: {target_port}}}]\n"
    )
}

struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Self {
        Scratch(tempfile::tempdir().unwrap())
    }

    fn write(&self, text: &str) -> String {
        let p = self.0.path().join("in.yaml");
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    }
}

/// Runs the binary off the runtime's threads, so the estimator server keeps serving.
async fn simulate(args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_karmada-scheduler"))
            .arg("simulate")
            .args(&args)
            .output()
            .expect("run karmada-scheduler")
    })
    .await
    .unwrap()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The clusters of the only binding, as `name:replicas`.
fn division(out: &Output) -> Vec<String> {
    assert!(out.status.success(), "stderr: {}", stderr(out));
    let v: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["result"], "Scheduled", "{}", v[0]);
    v[0]["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| format!("{}:{}", c["name"].as_str().unwrap(), c["replicas"]))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn division_follows_the_real_estimators_answers() {
    // m3's estimator says 100, above the general estimate (10): the minimum, 10, counts.
    let (port, _stop) = serve(&[("m1", 2), ("m2", 6), ("m3", 100)]).await;
    let s = Scratch::new();
    // m3's Service is written without a namespace: it is taken to be in the estimator
    // Service namespace.
    let f = s.write(&format!(
        "{CLUSTERS}{BINDING}{}{}{}",
        service("m1", 10352, port),
        service("m2", 10352, port),
        service("m3", 10352, port).replace(", namespace: karmada-system", "")
    ));

    let general = division(&simulate(&["-f", &f, "-o", "json"]).await);
    assert_eq!(general, ["m1:4", "m2:4", "m3:4"]);

    let out = simulate(&["-f", &f, "--enable-scheduler-estimator", "-o", "json"]).await;
    assert_eq!(stderr(&out), "");
    // 12 replicas in proportion to 2 : 6 : 10.
    let real = division(&out);
    assert_eq!(real, ["m1:1", "m2:4", "m3:7"]);
    // The same as the stub answering the same numbers.
    let stub = division(
        &simulate(&[
            "-f",
            &f,
            "--estimator-replicas=m1=2,m2=6,m3=100",
            "-o",
            "json",
        ])
        .await,
    );
    assert_eq!(real, stub);

    // The daemon's flag syntax: a separate value, a Go duration, `_` for `-`.
    let out = simulate(&[
        "-f",
        &f,
        "--enable-scheduler-estimator=true",
        "--scheduler-estimator-timeout",
        "2s500ms",
        "--scheduler_estimator_port=10352",
        "--scheduler-estimator-service-namespace=karmada-system",
    ])
    .await;
    assert_eq!(division(&out), real);

    // -o explain shows each estimator's answer per cluster.
    let out = simulate(&["-f", &f, "--enable-scheduler-estimator", "-o", "explain"]).await;
    assert!(out.status.success(), "stderr: {}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    for (cluster, answer) in [("m1", 2), ("m2", 6), ("m3", 100)] {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{cluster} ")))
            .unwrap_or_else(|| panic!("no line for {cluster}:\n{text}"));
        assert!(
            line.contains(&format!(
                "estimates [general-estimator 10, scheduler-estimator {answer}]"
            )),
            "{line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_or_missing_service_falls_back_to_the_general_estimate() {
    let (port, _stop) = serve(&[("m1", 2), ("m2", 6), ("m3", 100)]).await;
    let s = Scratch::new();
    // m2's Service has no port 10352; m3 has no Service at all (the DNS fallback fails).
    let f = s.write(&format!(
        "{CLUSTERS}{BINDING}{}{}",
        service("m1", 10352, port),
        service("m2", 9999, port),
    ));
    let general = division(&simulate(&["-f", &f]).await);

    let out = simulate(&["-f", &f, "--enable-scheduler-estimator"]).await;
    let err = stderr(&out);
    assert!(
        err.contains(
            "scheduler-estimator of cluster m2: Service karmada-system/karmada-scheduler-estimator-m2 port 10352: "
        ) && err.contains("no service port 10352 found in spec.ports"),
        "{err}"
    );
    assert!(
        err.contains(
            "scheduler-estimator of cluster m3: Service karmada-system/karmada-scheduler-estimator-m3 port 10352: "
        ) && err.contains("karmada-scheduler-estimator-m3.karmada-system.svc"),
        "{err}"
    );
    assert!(!err.contains("cluster m1"), "{err}");
    // All of the estimator's answers are dropped, m1's included.
    assert_eq!(division(&out), general);

    let out = simulate(&["-f", &f, "--enable-scheduler-estimator", "-o", "explain"]).await;
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("estimator scheduler-estimator failed, its answers are ignored: "),
        "{text}"
    );
}

#[tokio::test]
async fn estimator_flags_are_parsed_and_validated_as_the_daemon_does() {
    let s = Scratch::new();
    let f = s.write(&format!("{CLUSTERS}{BINDING}"));
    let out = simulate(&["-f", &f, "--scheduler-estimator-timeout=10"]).await;
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(
            r#"invalid argument "10" for "--scheduler-estimator-timeout" flag: time: missing unit in duration "10""#
        ),
        "{}",
        stderr(&out)
    );
    let out = simulate(&["-f", &f, "--scheduler-estimator-port", "70000"]).await;
    assert!(
        stderr(&out).contains(
            "Options.SchedulerEstimatorPort: Invalid value: 70000: must be a valid port between 0 and 65535 inclusive"
        ),
        "{}",
        stderr(&out)
    );
    // Without --enable-scheduler-estimator the other flags change nothing.
    let out = simulate(&["-f", &f, "--insecure-skip-estimator-verify"]).await;
    assert_eq!(division(&out), ["m1:4", "m2:4", "m3:4"]);
}
