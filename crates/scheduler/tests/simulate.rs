//! `karmada-scheduler simulate` as a user runs it: flags the vector format cannot express
//! (`--enable-empty-workload-propagation`, `--plugins`, `--feature-gates`), the three output
//! formats, directory and stdin input, and the errors for malformed input.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const CLUSTERS: &str = r#"
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member1}
spec: {region: r1, taints: [{key: dedicated, value: gpu, effect: NoSchedule}]}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: 10}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member2}
spec: {region: r1}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: 10}}
---
apiVersion: cluster.karmada.io/v1alpha1
kind: Cluster
metadata: {name: member3}
spec: {region: r2}
status:
  apiEnablements: [{groupVersion: apps/v1, resources: [{name: deployments, kind: Deployment}]}]
  resourceSummary: {allocatable: {pods: 4}}
"#;

fn binding(name: &str, replicas: i32, extra_spec: &str) -> String {
    format!(
        "---\napiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {{name: {name}, namespace: default}}\n\
         spec:\n  resource: {{apiVersion: apps/v1, kind: Deployment, namespace: default, name: {name}}}\n  replicas: {replicas}\n{extra_spec}"
    )
}

struct Scratch(tempfile::TempDir);

impl Scratch {
    fn new() -> Self {
        Scratch(tempfile::tempdir().unwrap())
    }

    fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.0.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }
}

fn simulate(args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    cmd.arg("simulate")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    let mut child = cmd.spawn().expect("spawn karmada-scheduler");
    if let Some(text) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }
    child.wait_with_output().unwrap()
}

fn json(out: &Output) -> Vec<Value> {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

fn clusters(v: &Value) -> Vec<(String, i64)> {
    v["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["replicas"].as_i64().unwrap(),
            )
        })
        .collect()
}

fn pairs(p: &[(&str, i64)]) -> Vec<(String, i64)> {
    p.iter().map(|(n, r)| (n.to_string(), *r)).collect()
}

const DUPLICATED: &str = "  placement: {replicaScheduling: {replicaSchedulingType: Duplicated}}\n";
const STATIC_1_1: &str = "  placement:\n    replicaScheduling:\n      replicaSchedulingType: Divided\n      replicaDivisionPreference: Weighted\n      weightPreference:\n        staticWeightList:\n        - {targetCluster: {clusterNames: [member2]}, weight: 1}\n        - {targetCluster: {clusterNames: [member3]}, weight: 1}\n";

#[test]
fn json_output_in_input_order_with_sorted_clusters() {
    let s = Scratch::new();
    let f = s.write(
        "in.yaml",
        &format!(
            "{CLUSTERS}{}{}{}",
            binding("dup", 2, DUPLICATED),
            binding(
                "nowhere",
                1,
                "  placement: {clusterAffinity: {clusterNames: [member9]}}\n"
            ),
            binding("noplacement", 1, "")
        ),
    );
    let out = json(&simulate(&["-f", f.to_str().unwrap()], None));
    assert_eq!(out.len(), 3);
    assert_eq!(out[0]["kind"], "ResourceBinding");
    assert_eq!(out[0]["namespace"], "default");
    assert_eq!(out[0]["name"], "dup");
    assert_eq!(out[0]["result"], "Scheduled");
    assert_eq!(
        out[0]["message"],
        "Binding has been scheduled successfully."
    );
    // member1 is tainted; the rest sorted by name.
    assert_eq!(clusters(&out[0]), pairs(&[("member2", 2), ("member3", 2)]));
    assert_eq!(out[1]["result"], "Unschedulable");
    assert_eq!(
        out[1]["message"],
        "0/3 clusters are available: 1 cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}, \
         2 cluster(s) did not match the placement cluster affinity constraint."
    );
    assert_eq!(clusters(&out[1]), []);
    assert_eq!(out[2]["result"], "Error");
    assert_eq!(
        out[2]["message"],
        "failed to get placement from resourceBinding(default/noplacement)"
    );
}

#[test]
fn empty_workload_propagation_flag() {
    // Static weights 1:1 with one replica: one cluster gets it, the other gets no entry unless
    // empty workloads are propagated.
    let s = Scratch::new();
    let f = s.write(
        "in.yaml",
        &format!("{CLUSTERS}{}", binding("web", 1, STATIC_1_1)),
    );
    let f = f.to_str().unwrap();
    let off = json(&simulate(&["-f", f], None));
    assert_eq!(clusters(&off[0]), pairs(&[("member2", 1)]));
    let on = json(&simulate(
        &["-f", f, "--enable-empty-workload-propagation"],
        None,
    ));
    assert_eq!(clusters(&on[0]), pairs(&[("member2", 1), ("member3", 0)]));
}

#[test]
fn plugins_and_feature_gates() {
    let s = Scratch::new();
    let f = s.write(
        "in.yaml",
        &format!("{CLUSTERS}{}", binding("dup", 1, DUPLICATED)),
    );
    let f = f.to_str().unwrap();
    // Without TaintToleration the tainted member1 is feasible.
    let out = json(&simulate(
        &["-f", f, "--plugins", "*,-TaintToleration"],
        None,
    ));
    assert_eq!(
        clusters(&out[0]),
        pairs(&[("member1", 1), ("member2", 1), ("member3", 1)])
    );
    // `-Name` alone leaves no plugin at all.
    let out = json(&simulate(&["-f", f, "--plugins=-APIEnablement"], None));
    assert_eq!(clusters(&out[0]).len(), 3);
    // Unknown gates are rejected like the daemon rejects them.
    let out = simulate(&["-f", f, "--feature-gates", "NoSuchGate=true"], None);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognized feature gate: NoSuchGate"));
}

#[test]
fn directories_and_stdin() {
    let s = Scratch::new();
    s.write("1-clusters.yaml", CLUSTERS);
    s.write("2-binding.yml", &binding("a", 1, DUPLICATED));
    s.write("3-binding.json", r#"{"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding",
        "metadata": {"name": "b"}, "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "b"},
        "replicas": 2, "placement": {}}}"#);
    s.write("ignored.txt", "not yaml: [");
    let out = json(&simulate(&["-f", s.0.path().to_str().unwrap()], None));
    assert_eq!(out.len(), 2);
    assert_eq!(
        (out[0]["name"].as_str(), out[1]["name"].as_str()),
        (Some("a"), Some("b"))
    );
    assert_eq!(out[1]["kind"], "ClusterResourceBinding");
    assert_eq!(out[1]["namespace"], "");

    let text = format!("{CLUSTERS}{}", binding("c", 1, DUPLICATED));
    let out = json(&simulate(&["-f", "-"], Some(&text)));
    assert_eq!(out[0]["name"], "c");
}

#[test]
fn yaml_and_explain_outputs() {
    let s = Scratch::new();
    let region = "  placement:\n    spreadConstraints:\n    - {spreadByField: region, minGroups: 1, maxGroups: 1}\n    - {spreadByField: cluster, minGroups: 1, maxGroups: 2}\n    replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}\n";
    let f = s.write(
        "in.yaml",
        &format!("{CLUSTERS}{}", binding("web", 8, region)),
    );
    let f = f.to_str().unwrap();
    let yaml = simulate(
        &[
            "-f",
            f,
            "-o",
            "yaml",
            "--estimator-replicas",
            "member1=10",
            "--estimator-replicas=member2=8",
            "--estimator-replicas=member3=3",
        ],
        None,
    );
    assert!(yaml.status.success());
    let parsed: serde_yaml::Value = serde_yaml::from_slice(&yaml.stdout).unwrap();
    assert_eq!(parsed[0]["result"].as_str(), Some("Scheduled"));

    let out = simulate(
        &[
            "-f",
            f,
            "-o",
            "explain",
            "--estimator-replicas",
            "member2=8,member3=3",
        ],
        None,
    );
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    // Why member1 is out, what each estimator said, how regions scored, what was chosen.
    for needle in [
        "ResourceBinding default/web: Scheduled",
        "member1  rejected by TaintToleration: cluster(s) had untolerated taint {dedicated=gpu:NoSchedule}",
        "general-estimator 10",
        "scheduler-estimator 8",
        "region r1: score",
        "chosen regions: r1",
        "selected (capacity not checked): member2",
        "division rule: Aggregated from scratch: 8 replicas divided on as few clusters as possible",
        "division: member2:8",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn malformed_input_names_file_document_and_field() {
    let s = Scratch::new();
    let f = s.write(
        "bad.yaml",
        &format!(
            "{CLUSTERS}{}",
            binding(
                "web",
                1,
                "  placement: {replicaScheduling: {replicaSchedulingType: Sometimes}}\n"
            )
        ),
    );
    let out = simulate(&["-f", f.to_str().unwrap()], None);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("{}: document 4 (ResourceBinding \"web\"): spec.placement.replicaScheduling.replicaSchedulingType", f.display())), "{err}");

    let out = simulate(
        &["-f", Path::new("/nonexistent/x.yaml").to_str().unwrap()],
        None,
    );
    assert!(!out.status.success());
    let out = simulate(
        &["-f", s.write("syntax.yaml", "a: [").to_str().unwrap()],
        None,
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("document 1"));
    let out = simulate(&["--bogus"], None);
    assert_eq!(out.status.code(), Some(2));
}

/// `simulate ... | head` closes the pipe early: the output ends quietly, no panic (exit 101).
#[test]
fn a_closed_stdout_is_not_a_panic() {
    let s = Scratch::new();
    let input = s.write(
        "in.yaml",
        &format!(
            "{CLUSTERS}{}",
            binding(
                "w",
                3,
                "  placement: {clusterAffinity: {clusterNames: [member2]}}\n"
            )
        ),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_karmada-scheduler"))
        .args(["simulate", "-f", input.to_str().unwrap(), "-o", "explain"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn karmada-scheduler");
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

#[test]
fn the_daemons_event_filter_is_part_of_the_decision() {
    let labels = "  placement: {clusterAffinity: {clusterNames: [member2]}}\n";
    let labelled = |name: &str, extra: &str| {
        binding(name, 1, &format!("{labels}{extra}")).replacen(
            "namespace: default}",
            "namespace: default, labels: {propagationpolicy.karmada.io/permanent-id: x}}",
            1,
        )
    };
    let input = format!(
        "{CLUSTERS}{}{}{}{}",
        labelled("ours", ""),
        labelled("theirs", "  schedulerName: other\n"),
        labelled("suspended", "  suspension: {scheduling: true}\n"),
        binding("unlabelled", 1, labels),
    );
    let out = json(&simulate(&["-f", "-"], Some(&input)));
    let acts: Vec<(&str, bool)> = out
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), e["daemonActs"] == true))
        .collect();
    assert_eq!(
        acts,
        [
            ("ours", true),
            ("theirs", false),
            ("suspended", false),
            ("unlabelled", false)
        ]
    );
    // The attempt is made anyway.
    assert!(out.iter().all(|e| e["result"] == "Scheduled"), "{out:?}");
    assert!(
        out[1]["decision"]
            .as_str()
            .unwrap()
            .contains("schedulerName"),
        "{}",
        out[1]
    );
    // With the other name, the other binding is the daemon's.
    let out = json(&simulate(
        &["-f", "-", "--scheduler-name", "other"],
        Some(&input),
    ));
    assert_eq!(out[0]["daemonActs"], false, "{}", out[0]);
    assert_eq!(out[1]["daemonActs"], true, "{}", out[1]);
}

/// With `WorkloadAffinity`, the group filters see every input binding, as the daemon's see
/// its cache: one later in the input as read, one earlier as scheduled.
#[test]
fn workload_groups_see_the_other_input_bindings() {
    let grouped = |name: &str, groups: &str, extra: &str| {
        binding(
            name,
            1,
            &format!("{DUPLICATED}  workloadAffinityGroups: {groups}\n{extra}"),
        )
    };
    let input = format!(
        "{CLUSTERS}{}{}{}{}",
        grouped("follower", "{affinityGroup: g}", ""),
        grouped(
            "leader",
            "{affinityGroup: g}",
            "  clusters: [{name: member3, replicas: 1}]\n"
        ),
        binding(
            "placed",
            1,
            "  placement: {clusterAffinity: {clusterNames: [member2]}, replicaScheduling: {replicaSchedulingType: Duplicated}}\n  workloadAffinityGroups: {antiAffinityGroup: a}\n"
        ),
        grouped("avoider", "{antiAffinityGroup: a}", ""),
    );
    let out = json(&simulate(
        &["-f", "-", "--feature-gates=WorkloadAffinity=true"],
        Some(&input),
    ));
    let placed: Vec<(&str, Vec<(String, i64)>)> = out
        .iter()
        .map(|e| (e["name"].as_str().unwrap(), clusters(e)))
        .collect();
    assert_eq!(
        placed,
        [
            ("follower", pairs(&[("member3", 1)])),
            ("leader", pairs(&[("member3", 1)])),
            ("placed", pairs(&[("member2", 1)])),
            ("avoider", pairs(&[("member3", 1)])),
        ],
        "{out:?}"
    );
}
