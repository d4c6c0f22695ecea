//! Our scheduler and descheduler inside a whole Karmada v1.18.2 (`hack/karmada-up.sh`):
//! karmada-controller-manager turns a Deployment and its PropagationPolicy into a
//! ResourceBinding, our scheduler places it, Works reach the members (two in Push mode, one in
//! Pull mode through karmada-agent), and kwok runs the pods. The demo's path
//! (`manifests/examples/demo-workloads.yaml`, as `hack/demo.sh` applies it): each member runs
//! what its binding says, pods Running; the first Deployment is divided over all three members
//! by the estimators' answers (member i has 4*i CPUs a node, so member1 gets the fewest), a
//! spread constraint keeps the second on two clusters, and scaling on Karmada reaches the
//! members without moving replicas. The exact split also depends on the general estimator,
//! which reads the Clusters' resource summaries as karmada-controller-manager last wrote them,
//! so the test checks these properties rather than one split.
//!
//! `Cluster` comes from karmada-aggregated-apiserver, not a CRD. The scheduler lists and
//! watches it there; the aggregated API server is killed mid-stream and started again (twice),
//! and Cluster label changes made afterwards still move a Duplicated binding that selects
//! clusters by label; the descheduler, watching Clusters there too, connects to the estimator
//! of a Cluster added afterwards and drops it when the Cluster is deleted.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::time::Duration;

use serde_json::Value;
use testenv::tools_or_skip;
use testenv::whole::{WholeKarmada, poll};

const TIMEOUT: Duration = Duration::from_secs(180);

/// The binding's `spec.clusters` as sorted (name, replicas).
fn placement(k: &WholeKarmada, binding: &str) -> anyhow::Result<Vec<(String, i64)>> {
    let rb = k.get_json(None, &["rb", binding, "-n", "default"])?;
    let mut p = testenv::fixtures::placement_in(&rb["spec"]["clusters"]);
    p.sort();
    Ok(p)
}

/// Running pods of `app` in `default` on one member.
fn running_pods(k: &WholeKarmada, member: &str, app: &str) -> anyhow::Result<i64> {
    let pods = k.get_json(
        Some(member),
        &[
            "pods",
            "-n",
            "default",
            "-l",
            &format!("app={app}"),
            "--field-selector=status.phase=Running",
        ],
    )?;
    Ok(pods["items"].as_array().map_or(0, |a| a.len() as i64))
}

/// Waits until the binding of Deployment `app` places `total` replicas in all, `accept`s the
/// placement, and every member runs exactly what the binding gives it (Ready replicas and
/// Running pods; none where it gives nothing). Returns the placement.
fn wait_members_follow(
    k: &WholeKarmada,
    app: &str,
    total: i64,
    accept: impl Fn(&[(String, i64)]) -> bool,
) -> anyhow::Result<Vec<(String, i64)>> {
    let binding = format!("{app}-deployment");
    poll(
        &format!("{app} placed ({total} replicas) and running on the members"),
        TIMEOUT,
        || {
            let got = placement(k, &binding)?;
            if got.iter().map(|(_, r)| r).sum::<i64>() != total || !accept(&got) {
                anyhow::bail!("placement {got:?}");
            }
            for m in ["member1", "member2", "member3"] {
                let r = got.iter().find(|(n, _)| n == m).map_or(0, |(_, r)| *r);
                let ready = match k.get_json(Some(m), &["deploy", app, "-n", "default"]) {
                    Ok(d) => d["status"]["readyReplicas"].as_i64().unwrap_or(0),
                    Err(_) if r == 0 => 0,
                    Err(e) => return Err(e),
                };
                let pods = running_pods(k, m, app)?;
                if ready != r || pods != r {
                    anyhow::bail!("{m}: {ready} ready, {pods} running, want {r} ({got:?})");
                }
            }
            Ok(Some(got))
        },
    )
}

/// Replicas a placement gives `member`.
fn on(p: &[(String, i64)], member: &str) -> i64 {
    p.iter().find(|(n, _)| n == member).map_or(0, |(_, r)| *r)
}

fn condition<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

#[test]
fn whole_karmada_demo_path_and_aggregated_clusters() -> anyhow::Result<()> {
    let test = "e2e_whole_karmada";
    let Some(tools) = tools_or_skip(test) else {
        return Ok(());
    };
    let bins = common::image::bin_dir();
    let descheduler = bins.join("karmada-descheduler");
    if !descheduler.is_file() {
        let msg = format!(
            "{test}: {} has no karmada-descheduler (cargo build --bin karmada-descheduler, or \
             cargo test --workspace)",
            bins.display()
        );
        assert!(!testenv::e2e_required(), "{msg}");
        eprintln!("SKIPPED {msg}");
        return Ok(());
    }
    let Some(mut k) =
        WholeKarmada::start(test, &tools, &bins.join("karmada-scheduler"), &descheduler)?
    else {
        return Ok(());
    };
    let result = demo_path_and_aggregated_clusters(&k);
    if result.is_err() {
        k.keep_state();
    }
    result
}

fn demo_path_and_aggregated_clusters(k: &WholeKarmada) -> anyhow::Result<()> {
    // Cluster is served by the aggregated API server: an APIService, and no CRD.
    let svc = k.get_json(None, &["apiservice", "v1alpha1.cluster.karmada.io"])?;
    assert_eq!(
        svc["spec"]["service"]["name"],
        "karmada-aggregated-apiserver"
    );
    assert_eq!(
        condition(&svc, "Available").map(|c| c["status"].clone()),
        Some(Value::from("True"))
    );
    assert!(
        k.kubectl(None, &["get", "crd", "clusters.cluster.karmada.io"])
            .is_err(),
        "a Cluster CRD exists next to the aggregated API"
    );
    let clusters = k.get_json(None, &["clusters"])?;
    let mut modes: Vec<(String, String)> = clusters["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(
                condition(c, "Ready").map(|r| r["status"].clone()),
                Some(Value::from("True")),
                "{c}"
            );
            (
                c["metadata"]["name"].as_str().unwrap().to_string(),
                c["spec"]["syncMode"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    modes.sort();
    assert_eq!(
        modes,
        [
            ("member1", "Push"),
            ("member2", "Push"),
            ("member3", "Pull")
        ]
        .map(|(a, b)| (a.to_string(), b.to_string()))
    );

    // The demo's path.
    let workloads = testenv::repo_root().join("manifests/examples/demo-workloads.yaml");
    k.kubectl(None, &["apply", "-f", &workloads.to_string_lossy()])?;
    let web = wait_members_follow(k, "web", 6, |p| {
        p.len() == 3 && on(p, "member1") < on(p, "member3")
    })?;
    eprintln!("web: {web:?}");
    let api = wait_members_follow(k, "api", 4, |p| p.len() == 2)?;
    eprintln!("api: {api:?}");
    // The binding says who placed it, and statuses flow back to Karmada's Deployment.
    let rb = k.get_json(None, &["rb", "web-deployment", "-n", "default"])?;
    assert_eq!(
        condition(&rb, "Scheduled").map(|c| c["status"].clone()),
        Some(Value::from("True")),
        "{rb}"
    );
    poll("web 6/6 ready on Karmada", TIMEOUT, || {
        let d = k.get_json(None, &["deploy", "web", "-n", "default"])?;
        Ok((d["status"]["readyReplicas"] == 6).then_some(()))
    })?;

    k.kubectl(
        None,
        &[
            "scale",
            "deploy",
            "web",
            "-n",
            "default",
            "--replicas",
            "12",
        ],
    )?;
    let scaled = wait_members_follow(k, "web", 12, |p| web.iter().all(|(m, r)| on(p, m) >= *r))?;
    eprintln!("web scaled: {scaled:?}");

    // The aggregated API server dies mid-stream and comes back; Cluster changes made after
    // that still reach the scheduler's watch.
    k.restart("karmada-aggregated-apiserver", Duration::from_secs(3))?;
    poll("clusters served again", TIMEOUT, || {
        Ok(k.kubectl(None, &["get", "clusters"]).ok().map(|_| ()))
    })?;
    // A Duplicated binding follows its clusters: a label change is rescheduled (as Go's
    // scheduler does on a Cluster update), so each move below proves that a Cluster watch
    // event reached the scheduler after the aggregated API server came back.
    let pick = |member: &str| -> anyhow::Result<()> {
        k.kubectl(None, &["label", "cluster", "--all", "e2e.karmada.io/pick-"])?;
        k.kubectl(
            None,
            &["label", "cluster", member, "e2e.karmada.io/pick=yes"],
        )?;
        Ok(())
    };
    pick("member2")?;
    k.apply(
        r#"apiVersion: apps/v1
kind: Deployment
metadata: {name: picked, namespace: default, labels: {app: picked}}
spec:
  replicas: 2
  selector: {matchLabels: {app: picked}}
  template:
    metadata: {labels: {app: picked}}
    spec:
      containers: [{name: c, image: registry.k8s.io/pause:3.10}]
---
apiVersion: policy.karmada.io/v1alpha1
kind: PropagationPolicy
metadata: {name: picked, namespace: default}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: picked}]
  placement:
    clusterAffinity:
      labelSelector: {matchLabels: {e2e.karmada.io/pick: "yes"}}
    replicaScheduling: {replicaSchedulingType: Duplicated}
"#,
    )?;
    wait_members_follow(k, "picked", 2, |p| p == [("member2".to_string(), 2)])?;
    // Once more, and now the watch that came back after the first restart is cut.
    k.restart("karmada-aggregated-apiserver", Duration::from_secs(1))?;
    poll("clusters served again", TIMEOUT, || {
        Ok(k.kubectl(None, &["get", "clusters"]).ok().map(|_| ()))
    })?;
    pick("member1")?;
    wait_members_follow(k, "picked", 2, |p| p == [("member1".to_string(), 2)])?;
    pick("member3")?;
    wait_members_follow(k, "picked", 2, |p| p == [("member3".to_string(), 2)])?;
    descheduler_follows_clusters(k)
}

/// The descheduler's Cluster watch came back too: a Cluster added after both restarts gets an
/// estimator connection there, and its deletion closes it. Its estimator Service names
/// member1's estimator, so that the connection can be made.
fn descheduler_follows_clusters(k: &WholeKarmada) -> anyhow::Result<()> {
    let log = k.state_dir().join("logs/karmada-descheduler.log");
    let mentions = |what: &str| -> anyhow::Result<bool> {
        let text = std::fs::read_to_string(&log)?;
        Ok(text
            .lines()
            .any(|l| l.contains("member-late") && l.contains(what)))
    };
    let svc = k.get_json(
        None,
        &[
            "service",
            "-n",
            "karmada-system",
            "karmada-scheduler-estimator-member1",
        ],
    )?;
    let spec = serde_json::json!({
        "type": "ExternalName",
        "externalName": svc["spec"]["externalName"],
        "ports": svc["spec"]["ports"],
    });
    k.apply(&format!(
        r#"apiVersion: v1
kind: Service
metadata: {{name: karmada-scheduler-estimator-member-late, namespace: karmada-system}}
spec: {spec}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {{name: member-late}}
spec: {{syncMode: Push, apiEndpoint: "https://127.0.0.1:1"}}
"#
    ))?;
    poll(
        "the descheduler connects to member-late's estimator",
        TIMEOUT,
        || Ok(mentions("Connection with the estimator has been established")?.then_some(())),
    )?;
    k.kubectl(None, &["delete", "cluster", "member-late", "--wait=false"])?;
    poll(
        "the descheduler drops member-late's estimator",
        TIMEOUT,
        || Ok(mentions("deleted cluster")?.then_some(())),
    )?;
    k.kubectl(
        None,
        &[
            "delete",
            "service",
            "-n",
            "karmada-system",
            "karmada-scheduler-estimator-member-late",
        ],
    )?;
    Ok(())
}
