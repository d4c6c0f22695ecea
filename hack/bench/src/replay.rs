//! Replays the history of pairs that disagree after churn through the reference: each
//! placement change of each member, offline, against the clusters as they were after the first
//! `k` churn operations, through the upstream scheduler (the oracle, `hack/oracle`) and
//! `karmada-scheduler simulate`. The two members of a pair need not see the same cluster
//! states, and where the algorithm depends on the previous placement they may end in
//! different, equally correct places; a pair is *explained* when the oracle, fed the history
//! each member saw, lands where that member landed (the report's replay section tells more).

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::observe::{Placement, Step, placement_in};

/// Taint key the churn adds (removed again for states before the taint).
pub const CHURN_TAINT_KEY: &str = "bench.karmada.io/churn";

/// How many earlier cluster states to try per change, counting back from the newest one the
/// member could have seen.
const MAX_BACK: usize = 40;

/// One churn operation on a cluster, as the bench made it.
#[derive(Clone, Debug)]
pub struct ChurnOp {
    pub started: Instant,
    pub cluster: String,
    pub kind: OpKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OpKind {
    Taint,
    Delete,
}

/// The offline tools.
pub struct Tools {
    pub simulate: PathBuf,
    pub oracle: PathBuf,
    /// Scratch directory for input files.
    pub dir: PathBuf,
}

/// One member of a pair to replay.
pub struct Member {
    pub scheduler: String,
    /// The binding as stored at the end (spec and placement are replaced per change).
    pub object: Value,
    pub history: Vec<Step>,
}

/// Replay of one disagreeing pair.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PairReplay {
    pub binding: String,
    /// Rust's member first, then Go's.
    pub sides: Vec<SideReplay>,
    /// The oracle reproduced every placement change of both members.
    pub explained: bool,
    /// Why the replay could not run, if it could not.
    #[serde(default)]
    pub error: Option<String>,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SideReplay {
    pub scheduler: String,
    pub changes: Vec<Change>,
}

/// One placement change of one member.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Change {
    /// Seconds after the churn began.
    pub at_s: f64,
    pub replicas: i64,
    /// `cluster:replicas` entries that went away and came in.
    pub removed: String,
    pub added: String,
    /// Churn operations started before the change was seen (the most it could reflect).
    pub ops_before: usize,
    /// The largest number of churn operations (taints, then deletions) after which the
    /// oracle gives exactly this change; `None`: no state tried reproduces it.
    pub oracle_ops: Option<usize>,
    /// The same for `karmada-scheduler simulate`.
    pub simulate_ops: Option<usize>,
    /// `oracle_ops` described (e.g. "taints 100/100, deletions 23/50").
    pub seen: String,
}

struct Pending {
    pair: usize,
    side: usize,
    change: usize,
    binding: Value,
    expect: Placement,
}

/// Every placement change of each pair's members, and the binding to replay for each.
fn changes(
    ops: &[ChurnOp],
    origin: Instant,
    pairs: Vec<(String, [Member; 2])>,
) -> (Vec<PairReplay>, Vec<Pending>) {
    let mut out: Vec<PairReplay> = Vec::new();
    let mut pending: Vec<Pending> = Vec::new();
    for (p, (key, members)) in pairs.into_iter().enumerate() {
        let mut pr = PairReplay {
            binding: key,
            ..Default::default()
        };
        for (s, m) in members.into_iter().enumerate() {
            let mut side = SideReplay {
                scheduler: m.scheduler.clone(),
                changes: vec![],
            };
            for w in m.history.windows(2) {
                let (prev, next) = (&w[0], &w[1]);
                if prev.clusters == next.clusters {
                    continue;
                }
                let ops_before = ops.iter().filter(|o| o.started < next.at).count();
                let (removed, added) = diff(&prev.clusters, &next.clusters);
                pending.push(Pending {
                    pair: p,
                    side: s,
                    change: side.changes.len(),
                    binding: input_binding(
                        &m.object,
                        prev,
                        next.replicas,
                        &format!("s{s}c{}", side.changes.len()),
                    ),
                    expect: next.clusters.clone(),
                });
                side.changes.push(Change {
                    at_s: next.at.saturating_duration_since(origin).as_secs_f64(),
                    replicas: next.replicas,
                    removed,
                    added,
                    ops_before,
                    ..Default::default()
                });
            }
            pr.sides.push(side);
        }
        out.push(pr);
    }
    (out, pending)
}

/// Replays `pairs` (each `[rust member, go member]`); `ops` in the order they were made,
/// `clusters` as stored at the end (deleted ones still present, held by a finalizer).
pub fn replay(
    tools: &Tools,
    clusters: &[Value],
    ops: &[ChurnOp],
    origin: Instant,
    pairs: Vec<(String, [Member; 2])>,
) -> Vec<PairReplay> {
    let _ = std::fs::create_dir_all(&tools.dir);
    let (mut out, pending) = changes(ops, origin, pairs);
    // Round r tries, for every change not yet reproduced by a tool, the state after
    // `ops_before - r` operations; changes that need the same state share one input file.
    let mut open: Vec<[bool; 2]> = vec![[true, true]; pending.len()];
    for r in 0..=MAX_BACK {
        let mut by_k: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, p) in pending.iter().enumerate() {
            let before = out[p.pair].sides[p.side].changes[p.change].ops_before;
            if (open[i][0] || open[i][1]) && r <= before {
                by_k.entry(before - r).or_default().push(i);
            }
        }
        if by_k.is_empty() {
            break;
        }
        for (k, idx) in by_k {
            let file = tools.dir.join(format!("replay-{k:04}-r{r:02}.yaml"));
            let mut docs: Vec<Value> = clusters_after(clusters, ops, k);
            docs.extend(idx.iter().map(|&i| pending[i].binding.clone()));
            let text = docs
                .iter()
                .map(|d| serde_json::to_string(d).unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n---\n");
            if let Err(e) = std::fs::write(&file, text) {
                for &i in &idx {
                    out[pending[i].pair].error = Some(format!("{}: {e}", file.display()));
                }
                continue;
            }
            for (t, bin) in [&tools.oracle, &tools.simulate].into_iter().enumerate() {
                if !idx.iter().any(|&i| open[i][t]) {
                    continue;
                }
                let results = match testenv::simulate::run_json(bin, &file, &[]) {
                    Ok(v) => v,
                    Err(e) => {
                        for &i in &idx {
                            out[pending[i].pair].error = Some(e.clone());
                            open[i] = [false, false];
                        }
                        continue;
                    }
                };
                for (n, &i) in idx.iter().enumerate() {
                    if !open[i][t] {
                        continue;
                    }
                    let Some(res) = results.get(n) else { continue };
                    if res["result"] == "Scheduled"
                        && same(&placement_in(&res["clusters"]), &pending[i].expect)
                    {
                        open[i][t] = false;
                        let c = &mut out[pending[i].pair].sides[pending[i].side].changes
                            [pending[i].change];
                        if t == 0 {
                            c.oracle_ops = Some(k);
                            c.seen = describe(ops, k);
                        } else {
                            c.simulate_ops = Some(k);
                        }
                    }
                }
            }
            let _ = std::fs::remove_file(&file);
        }
    }
    for pr in &mut out {
        // Every change reproduced, and in states a member could have seen in that order (a
        // watch does not go back in time).
        pr.explained = pr.error.is_none()
            && pr.sides.iter().all(|s| {
                let ks: Option<Vec<usize>> = s.changes.iter().map(|c| c.oracle_ops).collect();
                ks.is_some_and(|ks| ks.windows(2).all(|w| w[0] <= w[1]))
            });
    }
    out
}

/// The binding as it was before a change: the end object with the spec's replicas at the
/// change, and the placement and observing-affinity name it had before.
fn input_binding(object: &Value, prev: &Step, replicas: i64, tag: &str) -> Value {
    let mut b = object.clone();
    if let Some(m) = b["metadata"].as_object_mut() {
        let name = m.get("name").and_then(Value::as_str).unwrap_or("binding");
        let name = format!("{name}--{tag}");
        m.retain(|k, _| matches!(k.as_str(), "namespace" | "labels" | "annotations"));
        m.insert("name".into(), json!(name));
    }
    b["spec"]["replicas"] = json!(replicas);
    b["spec"]["clusters"] = Value::Array(
        prev.clusters
            .iter()
            .map(|(n, r)| json!({"name": n, "replicas": r}))
            .collect(),
    );
    let mut status = serde_json::Map::new();
    if let Some(a) = &prev.observing_affinity {
        status.insert("schedulerObservingAffinityName".into(), json!(a));
    }
    b["status"] = Value::Object(status);
    b
}

/// The clusters as they were after the first `k` operations of `ops`.
fn clusters_after(clusters: &[Value], ops: &[ChurnOp], k: usize) -> Vec<Value> {
    let later = &ops[k.min(ops.len())..];
    clusters
        .iter()
        .map(|c| {
            let mut c = c.clone();
            let name = c["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            if let Some(m) = c["metadata"].as_object_mut() {
                m.retain(|k, _| {
                    matches!(
                        k.as_str(),
                        "name" | "labels" | "annotations" | "deletionTimestamp"
                    )
                });
            }
            for op in later.iter().filter(|o| o.cluster == name) {
                match op.kind {
                    OpKind::Delete => {
                        if let Some(m) = c["metadata"].as_object_mut() {
                            m.remove("deletionTimestamp");
                        }
                    }
                    OpKind::Taint => {
                        if let Some(t) = c["spec"]["taints"].as_array_mut() {
                            t.retain(|t| t["key"] != CHURN_TAINT_KEY);
                        }
                    }
                }
            }
            c
        })
        .collect()
}

/// "taints 100/100, deletions 23/50" for the first `k` operations.
fn describe(ops: &[ChurnOp], k: usize) -> String {
    let count = |kind: OpKind, upto: usize| ops[..upto].iter().filter(|o| o.kind == kind).count();
    let k = k.min(ops.len());
    format!(
        "taints {}/{}, deletions {}/{}",
        count(OpKind::Taint, k),
        count(OpKind::Taint, ops.len()),
        count(OpKind::Delete, k),
        count(OpKind::Delete, ops.len())
    )
}

fn same(a: &Placement, b: &Placement) -> bool {
    let sorted = |p: &Placement| {
        let mut p = p.clone();
        p.sort();
        p
    };
    sorted(a) == sorted(b)
}

/// Entries of `a` not in `b`, and of `b` not in `a`, as `name:replicas` lists.
fn diff(a: &Placement, b: &Placement) -> (String, String) {
    let only = |x: &Placement, y: &Placement| {
        let v: Vec<String> = x
            .iter()
            .filter(|e| !y.contains(e))
            .map(|(n, r)| format!("{n}:{r}"))
            .collect();
        format!("[{}]", v.join(", "))
    };
    (only(a, b), only(b, a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(name: &str, deleted: bool, taints: Vec<Value>) -> Value {
        let mut c = json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "resourceVersion": "7", "uid": "u"},
            "spec": {"taints": taints}});
        if deleted {
            c["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        c
    }

    #[test]
    fn clusters_after_undoes_the_later_operations_only() {
        let t0 = Instant::now();
        let churn = json!({"key": CHURN_TAINT_KEY, "effect": "NoSchedule"});
        let own = json!({"key": "own", "effect": "NoExecute"});
        let clusters = vec![
            cluster("a", false, vec![own.clone(), churn.clone()]),
            cluster("b", true, vec![]),
            cluster("c", true, vec![churn.clone()]),
        ];
        let op = |c: &str, kind| ChurnOp {
            started: t0,
            cluster: c.into(),
            kind,
        };
        let ops = vec![
            op("a", OpKind::Taint),
            op("c", OpKind::Taint),
            op("b", OpKind::Delete),
            op("c", OpKind::Delete),
        ];
        let at1 = clusters_after(&clusters, &ops, 1);
        assert_eq!(at1[0]["spec"]["taints"], json!([own, churn]));
        assert_eq!(at1[2]["spec"]["taints"], json!([]));
        assert!(at1[1]["metadata"].get("deletionTimestamp").is_none());
        assert!(at1[2]["metadata"].get("deletionTimestamp").is_none());
        assert!(at1[0]["metadata"].get("resourceVersion").is_none());
        let at3 = clusters_after(&clusters, &ops, 3);
        assert!(at3[1]["metadata"].get("deletionTimestamp").is_some());
        assert!(at3[2]["metadata"].get("deletionTimestamp").is_none());
        assert_eq!(at3[2]["spec"]["taints"], json!([churn]));
        assert_eq!(describe(&ops, 3), "taints 2/2, deletions 1/2");
    }

    #[test]
    fn input_binding_carries_the_previous_state() {
        let obj = json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "x", "namespace": "n", "resourceVersion": "9"},
            "spec": {"replicas": 5, "clusters": [{"name": "a", "replicas": 5}]},
            "status": {"schedulerObservingAffinityName": "late", "conditions": []}});
        let prev = Step {
            at: Instant::now(),
            replicas: 3,
            observing_affinity: Some("early".into()),
            clusters: vec![("a".into(), 2), ("b".into(), 1)],
        };
        let b = input_binding(&obj, &prev, 4, "s1c2");
        assert_eq!(b["metadata"], json!({"name": "x--s1c2", "namespace": "n"}));
        assert_eq!(b["spec"]["replicas"], 4);
        assert_eq!(
            b["spec"]["clusters"],
            json!([{"name": "a", "replicas": 2}, {"name": "b", "replicas": 1}])
        );
        assert_eq!(
            b["status"],
            json!({"schedulerObservingAffinityName": "early"})
        );
        assert_eq!(
            diff(&prev.clusters, &vec![("a".into(), 3)]),
            ("[a:2, b:1]".into(), "[a:3]".into())
        );
    }

    /// The replay machinery end to end against the real oracle (used here as both tools): a
    /// Duplicated binding on a, b, c; c then b are deleted; the member's change to [a, b] is
    /// reproduced by the state after the first deletion only.
    #[test]
    fn replay_finds_the_state_a_change_was_made_in() {
        let oracle =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../_output/bin/karmada-oracle");
        if !oracle.exists() {
            assert!(
                std::env::var("KARMADA_E2E").as_deref() != Ok("1"),
                "KARMADA_E2E=1 but {} is missing (hack/build-oracle.sh)",
                oracle.display()
            );
            eprintln!("skipped: {} is missing", oracle.display());
            return;
        }
        let ready = json!({"conditions": [{"type": "Ready", "status": "True",
            "reason": "ClusterReady", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}],
            "apiEnablements": [{"groupVersion": "apps/v1",
                                "resources": [{"name": "deployments", "kind": "Deployment"}]}]});
        let mut clusters = Vec::new();
        for (name, deleted) in [("a", false), ("b", true), ("c", true)] {
            let mut c = cluster(name, deleted, vec![]);
            c["status"] = ready.clone();
            clusters.push(c);
        }
        let t0 = Instant::now();
        let op = |c: &str| ChurnOp {
            started: t0,
            cluster: c.into(),
            kind: OpKind::Delete,
        };
        let ops = vec![op("c"), op("b")];
        let object = json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 1,
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default",
                             "name": "web", "uid": "0a0a0a0a-0000-4000-8000-000000000001"},
                "placement": {"clusterAffinity": {"clusterNames": ["a", "b", "c"]},
                              "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}}});
        let later = t0 + std::time::Duration::from_millis(5);
        let step = |clusters: &[&str]| Step {
            at: later,
            replicas: 1,
            observing_affinity: None,
            clusters: clusters.iter().map(|c| (c.to_string(), 1)).collect(),
        };
        let member = || Member {
            scheduler: "s".into(),
            object: object.clone(),
            history: vec![step(&["a", "b", "c"]), step(&["a", "b"])],
        };
        let dir = tempfile::tempdir().unwrap();
        let tools = Tools {
            simulate: oracle.clone(),
            oracle,
            dir: dir.path().to_path_buf(),
        };
        let pairs = vec![("default/web".to_string(), [member(), member()])];
        let out = replay(&tools, &clusters, &ops, t0, pairs);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].error, None);
        let c = &out[0].sides[0].changes[0];
        assert_eq!(c.ops_before, 2);
        assert_eq!(c.oracle_ops, Some(1), "{c:?}");
        assert_eq!(c.simulate_ops, Some(1));
        assert_eq!(c.seen, "taints 0/0, deletions 1/2");
        assert_eq!((c.removed.as_str(), c.added.as_str()), ("[c:1]", "[]"));
        assert!(out[0].explained);
    }
}
