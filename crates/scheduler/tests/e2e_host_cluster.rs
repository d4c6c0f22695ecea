//! The charts installed and run on a real one-node Kubernetes host cluster
//! (`hack/host-cluster-up.sh`, [`testenv::hostcluster`]), in the layout Karmada itself uses
//! (docs/deploy-helm.md walks through the same steps):
//!
//! * the pod network works: a pod resolves `<svc>.<ns>.svc.cluster.local` through CoreDNS and
//!   reaches the Service's ClusterIP through kube-proxy;
//! * the Karmada control plane of [`TestEnv`] runs on this machine's loopback; pods reach its
//!   API servers at the node address (`HostCluster::expose`), whose certificates name it;
//! * each member's Go `karmada-scheduler-estimator` runs as a pod behind the ClusterIP Service
//!   `karmada-system/karmada-scheduler-estimator-<member>` of the host cluster, serving mutual
//!   TLS; the Karmada API server holds no estimator Service, so the schedulers dial
//!   `karmada-scheduler-estimator-<member>.karmada-system.svc.cluster.local:10352` through
//!   cluster DNS and kube-proxy, as Karmada's do;
//! * our chart: `helm install` → both scheduler replicas Running and Ready, one leader; bindings
//!   of every replica strategy scheduled, the estimators answering; the leader pod deleted →
//!   another pod takes over and schedules; the descheduler Deployment the same (Ready, one
//!   leader connected to every estimator, another pod leading once its leader is deleted);
//!   `helm upgrade` changing a flag rolls the pods while bindings keep arriving, none lost;
//!   `helm uninstall` leaves nothing of the release;
//! * Karmada v1.18.2's chart: its scheduler, descheduler and estimator objects rendered by helm
//!   with our image (the Go estimator's for the estimators), applied as rendered next to the
//!   Secrets it expects; rolled out, scheduling through its estimator pods over mutual TLS.
//!
//! Root, the Go tools and the host cluster's binaries are needed; skipped with a message
//! otherwise (unless `KARMADA_E2E` is set).

mod common;

use std::path::Path;
use std::time::Duration;

use anyhow::{Context as _, bail};
use kube::api::{Api, DynamicObject};
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};
use testenv::hostcluster::HostCluster;
use testenv::{TestEnv, http_get, tools_or_skip, wait_for};

use common::image::*;
use common::*;

const NS: &str = "karmada-system";
const RELEASE: &str = "rs";
/// The estimators' gRPC port (the Services' port and `--scheduler-estimator-port`).
const ESTIMATOR_PORT: u16 = 10352;
/// Successful estimator calls of a scheduler.
const REQUESTS: &str = "karmada_scheduler_estimator_client_requests_total";
/// Successful connections to estimators (what the descheduler shows of them).
const DIALS: &str = "karmada_scheduler_estimator_client_dials_total";
/// Where the scheduler and the estimators mount the estimator mTLS Secret.
const PKI: &str = "/etc/karmada/pki";

fn write(dir: &Path, name: &str, text: &str) -> anyhow::Result<String> {
    let p = dir.join(name);
    std::fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
    Ok(p.to_string_lossy().into_owned())
}

/// A kubeconfig whose server `https://127.0.0.1:<port>` becomes `https://<node_ip>:<port>`.
fn for_pods(kubeconfig: &Path, node_ip: &str) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(kubeconfig)?;
    anyhow::ensure!(
        text.contains("https://127.0.0.1:"),
        "{} has no 127.0.0.1 server",
        kubeconfig.display()
    );
    Ok(text.replace("https://127.0.0.1:", &format!("https://{node_ip}:")))
}

/// A pod on the pod network resolves a Service by its DNS name and reaches it through its
/// ClusterIP.
fn smoke(hc: &HostCluster, dir: &Path) -> anyhow::Result<()> {
    let image = &hc.info().busybox_image;
    let manifest = format!(
        r#"apiVersion: v1
kind: Pod
metadata: {{name: echo, namespace: default, labels: {{app: echo}}}}
spec:
  containers:
  - name: httpd
    image: {image}
    imagePullPolicy: Never
    command: [/bin/sh, -c, "mkdir -p /tmp/www && echo hello-from-echo > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www"]
---
apiVersion: v1
kind: Service
metadata: {{name: echo, namespace: default}}
spec:
  selector: {{app: echo}}
  ports: [{{port: 80, targetPort: 8080}}]
---
apiVersion: v1
kind: Pod
metadata: {{name: client, namespace: default}}
spec:
  restartPolicy: Never
  containers:
  - name: client
    image: {image}
    imagePullPolicy: Never
    command: [/bin/sh, -c, "for i in $(seq 1 30); do nslookup echo.default.svc.cluster.local && timeout 3 wget -O- http://echo.default.svc.cluster.local/ && exit 0; sleep 1; done; exit 1"]
"#
    );
    let file = write(dir, "smoke.yaml", &manifest)?;
    hc.kubectl_run(&["apply", "-f", &file])?;
    // Each try gives up after 3 s (`timeout`: this busybox's `wget -T` crashes): a first SYN
    // sent before kube-proxy has programmed the new Service is dropped, and wget without a
    // timeout then waited past this loop (seen in a full test run).
    let mut phase = String::new();
    for _ in 0..300 {
        phase = hc.kubectl_run(&["get", "pod", "client", "-o", "jsonpath={.status.phase}"])?;
        if phase == "Succeeded" || phase == "Failed" {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let log = hc
        .kubectl_run(&["logs", "client"])
        .unwrap_or_else(|e| e.to_string());
    anyhow::ensure!(
        phase == "Succeeded" && log.contains("hello-from-echo"),
        "the client pod did not reach echo.default.svc.cluster.local (phase {phase}):\n{log}\n\
         --- kube-proxy ---\n{}",
        hc.log_tail("kube-proxy", 20)
    );
    let svc_ip = hc.kubectl_run(&["get", "svc", "echo", "-o", "jsonpath={.spec.clusterIP}"])?;
    anyhow::ensure!(
        log.contains(&format!("Address: {svc_ip}")),
        "the name resolved to the ClusterIP {svc_ip}:\n{log}"
    );
    hc.kubectl_run(&["delete", "-f", &file, "--wait=false"])?;
    Ok(())
}

/// The Go estimator of each member as Karmada deploys it: a Deployment and a ClusterIP
/// Service `karmada-scheduler-estimator-<member>` in the host cluster, the member's kubeconfig
/// from a Secret, mutual TLS from the Secret `estimator-tls`.
fn estimators(hc: &HostCluster, env: &TestEnv, dir: &Path) -> anyhow::Result<()> {
    let node_ip = &hc.info().node_ip;
    let image = &hc.info().estimator_image;
    let mut docs = Vec::new();
    for m in env.members() {
        let name = format!("karmada-scheduler-estimator-{}", m.name);
        let kubeconfig = for_pods(&m.kubeconfig, node_ip)?;
        docs.push(json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": format!("{}-kubeconfig", m.name), "namespace": NS},
            "stringData": {"kubeconfig": kubeconfig},
        }));
        docs.push(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": {"app": name}},
                "template": {
                    "metadata": {"labels": {"app": name}},
                    "spec": {
                        "automountServiceAccountToken": false,
                        "containers": [{
                            "name": "karmada-scheduler-estimator",
                            "image": image,
                            "imagePullPolicy": "Never",
                            "command": [
                                "/bin/karmada-scheduler-estimator",
                                "--kubeconfig=/etc/member/kubeconfig",
                                format!("--cluster-name={}", m.name),
                                format!("--server-port={ESTIMATOR_PORT}"),
                                format!("--grpc-auth-cert-file={PKI}/karmada.crt"),
                                format!("--grpc-auth-key-file={PKI}/karmada.key"),
                                format!("--grpc-client-ca-file={PKI}/ca.crt"),
                                "--metrics-bind-address=$(POD_IP):8080",
                                "--health-probe-bind-address=$(POD_IP):10351",
                            ],
                            "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                            "readinessProbe": {"tcpSocket": {"port": ESTIMATOR_PORT}, "periodSeconds": 2},
                            "volumeMounts": [
                                {"name": "member", "mountPath": "/etc/member", "readOnly": true},
                                {"name": "pki", "mountPath": PKI, "readOnly": true},
                            ],
                        }],
                        "volumes": [
                            {"name": "member", "secret": {"secretName": format!("{}-kubeconfig", m.name)}},
                            {"name": "pki", "secret": {"secretName": "estimator-tls"}},
                        ],
                    },
                },
            },
        }));
        docs.push(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": name, "namespace": NS},
            "spec": {
                "type": "ClusterIP",
                "selector": {"app": name},
                "ports": [{"name": "grpc", "port": ESTIMATOR_PORT, "targetPort": ESTIMATOR_PORT}],
            },
        }));
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": docs});
    let file = write(dir, "estimators.json", &list.to_string())?;
    hc.kubectl_run(&["apply", "-f", &file])?;
    for m in env.members() {
        hc.kubectl_run(&[
            "-n",
            NS,
            "rollout",
            "status",
            &format!("deployment/karmada-scheduler-estimator-{}", m.name),
            "--timeout=120s",
        ])?;
    }
    Ok(())
}

/// Pods of the release's scheduler (or descheduler) Deployment: (name, IP, ready).
fn pods(hc: &HostCluster, component: &str) -> anyhow::Result<Vec<(String, String, bool)>> {
    let all = pods_matching(hc, &format!("app.kubernetes.io/instance={RELEASE}"))?;
    Ok(all
        .into_iter()
        .filter(|(name, _, _)| (component == "descheduler") == name.contains("descheduler"))
        .collect())
}

/// Pods in `karmada-system` matching the label `selector` and not being deleted:
/// (name, IP, ready).
fn pods_matching(hc: &HostCluster, selector: &str) -> anyhow::Result<Vec<(String, String, bool)>> {
    let out = hc.kubectl_run(&["-n", NS, "get", "pods", "-l", selector, "-o", "json"])?;
    let v: Value = serde_json::from_str(&out)?;
    let mut res = Vec::new();
    for p in v["items"].as_array().into_iter().flatten() {
        if p["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        let ready = p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        res.push((
            p["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            p["status"]["podIP"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            ready,
        ));
    }
    Ok(res)
}

/// Waits for `n` Ready pods of the component; returns them.
async fn ready_pods(
    hc: &HostCluster,
    component: &str,
    n: usize,
) -> anyhow::Result<Vec<(String, String, bool)>> {
    wait_for(
        &format!("{n} Ready {component} pods"),
        Duration::from_secs(120),
        || async {
            let p = pods(hc, component)?;
            Ok((p.len() == n && p.iter().all(|(_, _, r)| *r)).then_some(p))
        },
    )
    .await
}

/// The holder of the Lease `name` in the Karmada API server's karmada-system.
async fn lease_holder(env: &TestEnv, name: &str) -> anyhow::Result<Option<String>> {
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk("coordination.k8s.io", "v1", "Lease"));
    let leases: Api<DynamicObject> = Api::namespaced_with(env.client().await?, NS, &ar);
    Ok(leases.get_opt(name).await?.and_then(|l| {
        l.data
            .pointer("/spec/holderIdentity")
            .and_then(Value::as_str)
            .map(str::to_string)
    }))
}

/// The pod (of `pods`) holding the Lease `name`.
async fn leader(
    env: &TestEnv,
    name: &str,
    pods: &[(String, String, bool)],
) -> anyhow::Result<(String, String)> {
    let last = std::sync::Mutex::new(String::new());
    wait_for(
        &format!("a pod holding the Lease {name}"),
        Duration::from_secs(60),
        || async {
            let holder = lease_holder(env, name).await?.unwrap_or_default();
            *last.lock().unwrap() = holder.clone();
            Ok(pods
                .iter()
                .find(|(p, _, _)| holder.starts_with(&format!("{p}_")) || holder == *p)
                .map(|(p, ip, _)| (p.clone(), ip.clone())))
        },
    )
    .await
    .with_context(|| {
        let names: Vec<&str> = pods.iter().map(|(p, _, _)| p.as_str()).collect();
        format!(
            "the Lease {name} is held by {:?}, not by one of {names:?}",
            last.lock().unwrap()
        )
    })
}

/// The pod of `component` other than `deleted` that holds the Lease `name` once the leader
/// `deleted` is gone: the other replica or the Deployment's replacement, whichever campaigns
/// first (a leader that shuts down releases the Lease at once).
async fn new_leader(
    hc: &HostCluster,
    env: &TestEnv,
    name: &str,
    component: &str,
    deleted: &str,
) -> anyhow::Result<(String, String)> {
    wait_for(
        &format!("a pod other than {deleted} holding the Lease {name}"),
        Duration::from_secs(60),
        || async {
            let holder = lease_holder(env, name).await?.unwrap_or_default();
            Ok(pods(hc, component)?
                .into_iter()
                // A replacement pod can win the Lease before the kubelet has published its
                // IP: wait for the IP too, the metrics are read there.
                .filter(|(p, ip, _)| p != deleted && !ip.is_empty())
                .find(|(p, _, _)| holder.starts_with(&format!("{p}_")))
                .map(|(p, ip, _)| (p, ip)))
        },
    )
    .await
    .map_err(|e| failover_diagnosis(hc, e, deleted))
}

/// What the pods and the kubelet say when a deleted leader was not replaced.
fn failover_diagnosis(hc: &HostCluster, e: anyhow::Error, deleted: &str) -> anyhow::Error {
    let (listing, logs) = pods_and_logs(hc, RELEASE);
    let kubelet: String = hc
        .log_tail("kubelet", 400)
        .lines()
        .filter(|l| l.contains(deleted))
        .collect::<Vec<_>>()
        .join("\n");
    anyhow::anyhow!(
        "{e:#}\n(deleted {deleted})\n{listing}{logs}\n--- kubelet about {deleted} ---\n{kubelet}"
    )
}

/// The pod listing of `karmada-system` and the logs of the pods whose names start with
/// `prefix`.
fn pods_and_logs(hc: &HostCluster, prefix: &str) -> (String, String) {
    let listing = hc
        .kubectl_run(&["-n", NS, "get", "pods", "-o", "wide"])
        .unwrap_or_else(|e| e.to_string());
    let mut logs = String::new();
    for p in listing
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
    {
        if p.starts_with(prefix) {
            logs.push_str(&format!("\n--- {p} ---\n{}", pod_logs(hc, p)));
        }
    }
    (listing, logs)
}

/// `e` with the pod listing and the logs of the pods named `prefix`*.
fn with_pod_logs(hc: &HostCluster, e: anyhow::Error, prefix: &str) -> anyhow::Error {
    let (listing, logs) = pods_and_logs(hc, prefix);
    anyhow::anyhow!("{e:#}\n{listing}{logs}")
}

/// The logs of a pod's container (current, and the previous run's when it restarted).
fn pod_logs(hc: &HostCluster, pod: &str) -> String {
    let mut out = hc
        .kubectl_run(&["-n", NS, "logs", pod, "--tail=40"])
        .unwrap_or_else(|e| e.to_string());
    if let Ok(prev) = hc.kubectl_run(&["-n", NS, "logs", pod, "--previous", "--tail=20"]) {
        out.push_str("\n--- previous ---\n");
        out.push_str(&prev);
    }
    out
}

fn placements() -> Vec<(&'static str, Value)> {
    vec![
        (
            "duplicated",
            json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                   "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}),
        ),
        (
            "static",
            json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                   "replicaScheduling": {"replicaSchedulingType": "Divided",
                     "replicaDivisionPreference": "Weighted",
                     "weightPreference": {"staticWeightList": [
                       {"targetCluster": {"clusterNames": ["member1"]}, "weight": 1},
                       {"targetCluster": {"clusterNames": ["member2"]}, "weight": 2}]}}}),
        ),
        (
            "dynamic",
            json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                   "replicaScheduling": {"replicaSchedulingType": "Divided",
                     "replicaDivisionPreference": "Weighted",
                     "weightPreference": {"dynamicWeight": "AvailableReplicas"}}}),
        ),
        (
            "aggregated",
            json!({"clusterAffinity": {"clusterNames": ["member1", "member2"]},
                   "replicaScheduling": {"replicaSchedulingType": "Divided",
                     "replicaDivisionPreference": "Aggregated"}}),
        ),
    ]
}

/// Creates a binding and waits until it is scheduled with all its replicas placed.
async fn schedule(
    env: &TestEnv,
    rbs: &Api<DynamicObject>,
    name: &str,
    placement: Value,
) -> anyhow::Result<()> {
    env.apply_json(&binding(name, 3, placement, "default-scheduler"))
        .await?;
    let rb = wait_scheduled(rbs, name).await?;
    let cond = scheduled_condition(&rb).unwrap_or_default();
    anyhow::ensure!(cond["status"] == "True", "{name}: {cond}");
    let clusters = clusters_of(&rb);
    anyhow::ensure!(
        clusters.as_array().is_some_and(|c| !c.is_empty()),
        "{name}: no clusters: {clusters}"
    );
    Ok(())
}

/// `helm` against the host cluster.
fn helm(helm: &Path, hc: &HostCluster, args: &[&str]) -> anyhow::Result<String> {
    let out = std::process::Command::new(helm)
        .arg("--kubeconfig")
        .arg(&hc.info().kubeconfig)
        .args(args)
        .output()
        .context("running helm")?;
    if !out.status.success() {
        bail!(
            "helm {} failed ({}):\n{}{}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The sum of the samples of the counter `metric` with `result="success"` for `cluster` on a
/// metrics endpoint.
async fn estimator_successes(addr: &str, metric: &str, cluster: &str) -> anyhow::Result<f64> {
    let (code, body) = http_get(addr, "/metrics").await?;
    anyhow::ensure!(code == 200, "/metrics on {addr} answered {code}");
    Ok(body
        .lines()
        .filter(|l| {
            l.starts_with(&format!("{metric}{{"))
                && l.contains(&format!("cluster=\"{cluster}\""))
                && l.contains("result=\"success\"")
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum())
}

/// Waits until the counter `metric` at `addr` counts a success for every member.
async fn estimators_answered(env: &TestEnv, addr: &str, metric: &str) -> anyhow::Result<()> {
    for m in env.members() {
        wait_for(
            &format!("{metric} of {} at {addr}", m.name),
            // A pod that has just rolled out may first wait for the Lease a replaced pod held;
            // 60 s was once too short on a loaded machine (Karmada's chart, the descheduler).
            Duration::from_secs(120),
            || async {
                Ok((estimator_successes(addr, metric, &m.name).await? > 0.0).then_some(()))
            },
        )
        .await?;
    }
    Ok(())
}

/// The IP of the pod matching `selector` that holds the Lease `lease`. Karmada's chart runs
/// two descheduler replicas by default: only the leader dials the estimators, so the first
/// pod listed is not enough (it failed CI when that was the standby).
async fn leader_ip(
    hc: &HostCluster,
    env: &TestEnv,
    selector: &str,
    lease: &str,
) -> anyhow::Result<String> {
    let pods: Vec<_> = pods_matching(hc, selector)?
        .into_iter()
        .filter(|(_, ip, _)| !ip.is_empty())
        .collect();
    let (_, ip) = leader(env, lease, &pods).await?;
    Ok(ip)
}

/// `<registry>/<repository>:<tag>` split as Karmada's chart values take an image.
fn image_values(reference: &str) -> anyhow::Result<Value> {
    let (registry, rest) = reference
        .split_once('/')
        .with_context(|| format!("no registry in {reference}"))?;
    let (repository, tag) = rest
        .rsplit_once(':')
        .with_context(|| format!("no tag in {reference}"))?;
    Ok(json!({"registry": registry, "repository": repository, "tag": tag, "pullPolicy": "Never"}))
}

/// A member's kubeconfig as the `schedulerEstimator.memberClusters[].kubeconfig` values of
/// Karmada's chart (PEM certificates, the server pods reach).
fn member_values(kubeconfig: &Path, node_ip: &str) -> anyhow::Result<Value> {
    let kc: serde_yaml::Value = serde_yaml::from_str(&for_pods(kubeconfig, node_ip)?)?;
    let pem = |v: &serde_yaml::Value| -> anyhow::Result<String> {
        let b64 = v.as_str().context("base64 data in the kubeconfig")?;
        let mut child = std::process::Command::new("base64")
            .arg("-d")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()?;
        use std::io::Write as _;
        child
            .stdin
            .take()
            .context("stdin")?
            .write_all(b64.as_bytes())?;
        let out = child.wait_with_output()?;
        anyhow::ensure!(out.status.success(), "base64 -d failed");
        Ok(String::from_utf8(out.stdout)?)
    };
    let cluster = &kc["clusters"][0]["cluster"];
    let user = &kc["users"][0]["user"];
    Ok(json!({
        "caCrt": pem(&cluster["certificate-authority-data"])?,
        "crt": pem(&user["client-certificate-data"])?,
        "key": pem(&user["client-key-data"])?,
        "server": cluster["server"].as_str().context("server")?,
    }))
}

/// Karmada v1.18.2's own chart: its scheduler, descheduler and estimator objects rendered by
/// helm with the images replaced (ours for the schedulers, the Go estimator, a kubectl image
/// for its init containers) and applied as rendered; the Secrets it expects made by hand (the
/// rest of the chart, the Karmada control plane, is what [`TestEnv`] runs).
async fn karmadas_chart(
    hc: &HostCluster,
    env: &TestEnv,
    helm_bin: &Path,
    dir: &Path,
    ours: &str,
) -> anyhow::Result<()> {
    const TEST: &str = "karmadas_chart";
    let Some(chart) = testenv::helm::karmada_chart_or_skip(TEST) else {
        return Ok(());
    };
    let node_ip = &hc.info().node_ip;
    let mut members = Vec::new();
    for m in env.members() {
        members.push(json!({
            "clusterName": m.name,
            "replicaCount": 1,
            "kubeconfig": member_values(&m.kubeconfig, node_ip)?,
        }));
    }
    let values = json!({
        "installMode": "host",
        "components": ["descheduler", "schedulerEstimator"],
        "scheduler": {"enableSchedulerEstimator": true, "image": image_values(ours)?},
        "descheduler": {"image": image_values(ours)?},
        "schedulerEstimator": {
            "image": image_values(&hc.info().estimator_image)?,
            "memberClusters": members,
        },
        "kubectl": {"image": image_values(&hc.info().kubectl_image)?},
    });
    let values_file = write(dir, "karmada-values.json", &values.to_string())?;
    let rendered = helm(
        helm_bin,
        hc,
        &[
            "template",
            "karmada",
            &chart.path().to_string_lossy(),
            "--namespace",
            NS,
            "-f",
            &values_file,
        ],
    )?;
    let docs: Vec<Value> = serde_yaml::Deserializer::from_str(&rendered)
        .map(|d| {
            <serde_yaml::Value as serde::Deserialize>::deserialize(d).map(serde_json::to_value)
        })
        .collect::<Result<Result<Vec<_>, _>, _>>()??;
    // The scheduler's, descheduler's and estimators' objects, exactly as rendered.
    let mine: Vec<Value> = docs
        .into_iter()
        .filter(|d| {
            let name = d["metadata"]["name"].as_str().unwrap_or_default();
            name == "karmada-scheduler"
                || name == "karmada-descheduler"
                || name.starts_with("karmada-scheduler-estimator-")
                || env
                    .members()
                    .iter()
                    .any(|m| name == format!("{}-kubeconfig", m.name))
        })
        .collect();
    let kinds: Vec<String> = mine
        .iter()
        .map(|d| {
            format!(
                "{}/{}",
                d["kind"].as_str().unwrap_or("?"),
                d["metadata"]["name"].as_str().unwrap_or("?")
            )
        })
        .collect();
    eprintln!("{TEST}: applying {}", kinds.join(", "));
    let sched = mine
        .iter()
        .find(|d| d["kind"] == "Deployment" && d["metadata"]["name"] == "karmada-scheduler")
        .context("no karmada-scheduler Deployment rendered")?;
    let container = &sched["spec"]["template"]["spec"]["containers"][0];
    anyhow::ensure!(container["image"] == ours, "{container}");
    anyhow::ensure!(
        container["command"][0] == "/bin/karmada-scheduler",
        "{container}"
    );
    // Its init container waits for the ConfigMap the chart's static-resource job writes.
    let wait = sched["spec"]["template"]["spec"]["initContainers"][0]["command"]
        .as_array()
        .and_then(|c| c.last())
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = wait
        .split("!= ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .with_context(|| format!("no version in the init container's script: {wait}"))?
        .to_string();
    env.kubectl()
        .args(["-n", NS, "create", "configmap", "karmada-version"])
        .arg(format!("--from-literal=karmadaVersion={version}"))
        .output()?;

    // The Secrets the chart expects: karmada-kubeconfig (key kubeconfig, made for our chart
    // above) and karmada-cert with the estimator mTLS files under the names it mounts.
    let pki = env.estimator_pki().context("estimator TLS")?;
    let cert = json!({"apiVersion": "v1", "kind": "Secret",
    "metadata": {"name": "karmada-cert", "namespace": NS},
    "stringData": {
        "server-ca.crt": std::fs::read_to_string(&pki.ca)?,
        "karmada.crt": std::fs::read_to_string(&pki.cert)?,
        "karmada.key": std::fs::read_to_string(&pki.key)?,
    }});
    let items: Vec<Value> = std::iter::once(cert).chain(mine).collect();
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    hc.kubectl_run(&[
        "apply",
        "-f",
        &write(dir, "karmada-chart.json", &list.to_string())?,
    ])?;
    for d in ["karmada-scheduler", "karmada-descheduler"]
        .into_iter()
        .map(str::to_string)
        .chain(
            env.members()
                .iter()
                .map(|m| format!("karmada-scheduler-estimator-{}", m.name)),
        )
    {
        hc.kubectl_run(&[
            "-n",
            NS,
            "rollout",
            "status",
            &format!("deployment/{d}"),
            "--timeout=180s",
        ])?;
    }
    chart_runs(hc, env)
        .await
        .map_err(|e| with_pod_logs(hc, e, "karmada-"))
}

/// Karmada's chart, applied and rolled out: the scheduler schedules through the chart's
/// estimator pods over mutual TLS; the descheduler leader connects to every one.
async fn chart_runs(hc: &HostCluster, env: &TestEnv) -> anyhow::Result<()> {
    let ip = leader_ip(hc, env, "app=karmada-scheduler", "karmada-scheduler").await?;
    let rbs = rb_api(env).await?;
    for (name, placement) in placements() {
        schedule(env, &rbs, &format!("kc-{name}"), placement).await?;
    }
    estimators_answered(env, &format!("{ip}:8080"), REQUESTS).await?;
    let (code, _) = http_get(&format!("{ip}:10351"), "/healthz").await?;
    anyhow::ensure!(
        code == 200,
        "the scheduler's /healthz on {ip}:10351 answered {code}"
    );
    // The descheduler: running from our image, connected to every estimator pod.
    let ip = leader_ip(hc, env, "app=karmada-descheduler", "karmada-descheduler").await?;
    let (code, _) = http_get(&format!("{ip}:10358"), "/healthz").await?;
    anyhow::ensure!(
        code == 200,
        "the descheduler's /healthz on {ip}:10358 answered {code}"
    );
    estimators_answered(env, &format!("{ip}:8080"), DIALS).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn charts_run_on_a_host_cluster() -> anyhow::Result<()> {
    const TEST: &str = "charts_run_on_a_host_cluster";
    let Some(tools) = tools_or_skip(TEST) else {
        return Ok(());
    };
    let Some(helm_bin) = testenv::helm::helm_or_skip(TEST) else {
        return Ok(());
    };
    let scratch = tempfile::tempdir().unwrap();
    let Some(archive) = image_archive(TEST, scratch.path()) else {
        return Ok(());
    };
    let started = std::time::Instant::now();
    let Some(hc) = HostCluster::start(TEST)? else {
        return Ok(());
    };
    let dir = scratch.path();

    smoke(&hc, dir)?;
    eprintln!(
        "{TEST}: pod network, DNS and ClusterIP work ({:.0?})",
        started.elapsed()
    );

    // The Karmada control plane on loopback, its API servers' certificates naming the node
    // address the pods reach them at.
    let node_ip = hc.info().node_ip.clone();
    let env = TestEnv::builder()
        .tools(tools)
        .members(2)
        .estimator_tls(true)
        .apiserver_sans(&[format!("IP:{node_ip}")])
        .start()
        .await?;
    let pki = env.estimator_pki().context("estimator TLS")?.clone();
    let mut ports = vec![env.info().karmada_apiserver_port];
    ports.extend(env.members().iter().map(|m| m.apiserver_port));
    hc.expose(&ports)?;
    // Only the estimator pods answer: the loopback estimators stop and the Karmada API server
    // holds no estimator Service, so the schedulers go through cluster DNS.
    for m in env.members() {
        let _ = std::process::Command::new("kill")
            .arg(m.estimator_pid.to_string())
            .status();
    }
    env.kubectl()
        .args(["-n", NS, "delete", "service", "--all"])
        .output()
        .context("deleting the estimator Services of the Karmada API server")?;

    // The host cluster's side: namespace, Secrets, estimators, our image.
    hc.kubectl_run(&["create", "namespace", NS])?;
    let ca = std::fs::read_to_string(&pki.ca)?;
    let crt = std::fs::read_to_string(&pki.cert)?;
    let key = std::fs::read_to_string(&pki.key)?;
    let secrets = json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "estimator-tls", "namespace": NS},
         "stringData": {"ca.crt": ca, "karmada.crt": crt, "karmada.key": key}},
        {"apiVersion": "v1", "kind": "Secret",
         "metadata": {"name": "karmada-kubeconfig", "namespace": NS},
         "stringData": {"kubeconfig": for_pods(env.kubeconfig(), &node_ip)?}},
    ]});
    hc.kubectl_run(&[
        "apply",
        "-f",
        &write(dir, "secrets.json", &secrets.to_string())?,
    ])?;
    estimators(&hc, &env, dir)?;
    hc.import(&archive)?;
    eprintln!(
        "{TEST}: estimators Ready, image imported ({:.0?})",
        started.elapsed()
    );

    // helm install: scheduler and descheduler, estimator mTLS from the Secret.
    let chart = testenv::helm::chart();
    let chart = chart.to_string_lossy();
    let volumes = r#"[{"name":"estimator-tls","secret":{"secretName":"estimator-tls"}}]"#;
    let mounts = format!(r#"[{{"name":"estimator-tls","mountPath":"{PKI}","readOnly":true}}]"#);
    let mut values = vec![
        "--set".to_string(),
        "image.pullPolicy=Never".to_string(),
        "--set".to_string(),
        "scheduler.enableSchedulerEstimator=true".to_string(),
        "--set".to_string(),
        "descheduler.enabled=true".to_string(),
        "--set-json".to_string(),
        format!("extraVolumes={volumes}"),
        "--set-json".to_string(),
        format!("extraVolumeMounts={mounts}"),
        "--set-json".to_string(),
        format!("descheduler.extraVolumes={volumes}"),
        "--set-json".to_string(),
        format!("descheduler.extraVolumeMounts={mounts}"),
    ];
    for section in ["scheduler", "descheduler"] {
        for (flag, file) in [
            ("schedulerEstimatorCaFile", "ca.crt"),
            ("schedulerEstimatorCertFile", "karmada.crt"),
            ("schedulerEstimatorKeyFile", "karmada.key"),
        ] {
            values.push("--set".into());
            values.push(format!("{section}.{flag}={PKI}/{file}"));
        }
    }
    let mut install = vec![
        "install",
        RELEASE,
        &chart,
        "-n",
        NS,
        "--wait",
        "--timeout=180s",
    ];
    install.extend(values.iter().map(String::as_str));
    let t = std::time::Instant::now();
    helm(&helm_bin, &hc, &install)?;
    let scheds = ready_pods(&hc, "scheduler", 2).await?;
    let descheds = ready_pods(&hc, "descheduler", 2).await?;
    eprintln!(
        "{TEST}: helm install → 2+2 pods Ready in {:.0?}",
        t.elapsed()
    );
    let (lead, lead_ip) = leader(&env, "karmada-scheduler", &scheds).await?;
    let (desched_lead, desched_ip) = leader(&env, "karmada-descheduler", &descheds).await?;
    estimators_answered(&env, &format!("{desched_ip}:8080"), DIALS).await?;

    // Bindings of every strategy, scheduled with the estimators' answers.
    let rbs = rb_api(&env).await?;
    for (name, placement) in placements() {
        schedule(&env, &rbs, &format!("hc-{name}"), placement).await?;
    }
    estimators_answered(&env, &format!("{lead_ip}:8080"), REQUESTS).await?;

    // The leader pod deleted: the other one takes over and schedules.
    hc.kubectl_run(&["-n", NS, "delete", "pod", &lead, "--wait=false"])?;
    let (new_lead, _) = new_leader(&hc, &env, "karmada-scheduler", "scheduler", &lead).await?;
    schedule(&env, &rbs, "hc-after-failover", placements()[2].1.clone()).await?;
    eprintln!("{TEST}: {lead} deleted, {new_lead} took over");
    ready_pods(&hc, "scheduler", 2).await?;
    // The same for the descheduler.
    hc.kubectl_run(&["-n", NS, "delete", "pod", &desched_lead, "--wait=false"])?;
    let (new_desched, new_desched_ip) = new_leader(
        &hc,
        &env,
        "karmada-descheduler",
        "descheduler",
        &desched_lead,
    )
    .await?;
    estimators_answered(&env, &format!("{new_desched_ip}:8080"), DIALS).await?;
    eprintln!("{TEST}: {desched_lead} deleted, {new_desched} took over");
    ready_pods(&hc, "descheduler", 2).await?;

    // helm upgrade changing a flag: the pods roll while bindings keep arriving; none is lost.
    let upgrade = vec![
        "upgrade",
        RELEASE,
        &chart,
        "-n",
        NS,
        "--reuse-values",
        "--set",
        "scheduler.kubeApiQps=41",
        "--wait",
        "--timeout=180s",
    ];
    let feeder = {
        let client = env.client().await?;
        tokio::spawn(async move {
            let mut names = Vec::new();
            for i in 0..20 {
                let name = format!("hc-rolling-{i}");
                let b = binding(&name, 2, placements()[2].1.clone(), "default-scheduler");
                testenv::apply_value(&client, &b).await?;
                names.push(name);
                tokio::time::sleep(Duration::from_millis(1500)).await;
            }
            anyhow::Ok(names)
        })
    };
    helm(&helm_bin, &hc, &upgrade)?;
    let names = feeder.await??;
    let rolled = ready_pods(&hc, "scheduler", 2).await?;
    for (p, _, _) in &rolled {
        anyhow::ensure!(
            !scheds.iter().any(|(old, _, _)| old == p),
            "{p} was not replaced by the upgrade"
        );
        let args = hc.kubectl_run(&[
            "-n",
            NS,
            "get",
            "pod",
            p,
            "-o",
            "jsonpath={.spec.containers[0].args}",
        ])?;
        anyhow::ensure!(args.contains("--kube-api-qps=41"), "{p}: {args}");
    }
    for name in &names {
        let rb = wait_scheduled(&rbs, name).await?;
        let cond = scheduled_condition(&rb).unwrap_or_default();
        anyhow::ensure!(cond["status"] == "True", "{name} after the upgrade: {cond}");
    }
    leader(&env, "karmada-scheduler", &rolled).await?;
    eprintln!(
        "{TEST}: helm upgrade rolled both pods, {} bindings all scheduled",
        names.len()
    );

    // helm uninstall leaves nothing of the release.
    helm(
        &helm_bin,
        &hc,
        &["uninstall", RELEASE, "-n", NS, "--wait", "--timeout=120s"],
    )?;
    // Its pods terminate (and are gone), then nothing labelled with the release is left.
    let selector = format!("app.kubernetes.io/instance={RELEASE}");
    wait_for(
        "the release's pods gone",
        Duration::from_secs(90),
        || async {
            let left = hc.kubectl_run(&["get", "pods", "-A", "-l", &selector, "-o", "name"])?;
            Ok(left.trim().is_empty().then_some(()))
        },
    )
    .await?;
    let left = hc.kubectl_run(&[
        "get",
        "all,serviceaccounts,roles,rolebindings,clusterroles,clusterrolebindings,configmaps,secrets,leases",
        "-A",
        "-l",
        &selector,
        "-o",
        "name",
    ])?;
    anyhow::ensure!(left.trim().is_empty(), "left after helm uninstall:\n{left}");
    eprintln!("{TEST}: our chart done ({:.0?})", started.elapsed());

    // Karmada's own chart, in place of our estimators.
    for m in env.members() {
        let name = format!("karmada-scheduler-estimator-{}", m.name);
        hc.kubectl_run(&[
            "-n",
            NS,
            "delete",
            "deployment,service",
            &name,
            "--wait=true",
        ])?;
    }
    let ours = format!("docker.io/library/karmada-scheduler-rs:{}", app_version());
    karmadas_chart(&hc, &env, &helm_bin, dir, &ours).await?;
    eprintln!("{TEST}: done in {:.0?}", started.elapsed());
    Ok(())
}
