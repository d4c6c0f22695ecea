//! Differential test: `karmada-scheduler simulate` against the upstream v1.18.2 scheduler.
//!
//! A seeded generator (`testenv::inputs::oracle_file`) writes random but valid inputs; each
//! file is run through `simulate -o json` and through the oracle (hack/oracle: the upstream
//! scheduler driven in-process with fake clients, built by `hack/build-oracle.sh` into
//! `_output/bin/karmada-oracle`). Results must agree binding by binding: result class, the
//! target clusters (as a set) and the condition message.
//!
//! Knobs (environment):
//! * `DIFF_CASES` — number of bindings to generate (default 3000);
//! * `DIFF_SEED` — the run's seed (default fixed; decimal or 0x-hex);
//! * `DIFF_PER_FILE` — bindings per input file (default 40);
//! * `DIFF_ORACLE_ONLY=1` — only run the oracle and print its result histogram (to tune the
//!   generator, or while `simulate` is unfinished);
//! * `KARMADA_ORACLE` — oracle binary (default `<repo>/_output/bin/karmada-oracle`);
//! * `KARMADA_E2E=1` — a missing oracle is a failure (the test first tries to build it),
//!   instead of a skip.
//!
//! Every disagreement is written as a conformance vector (the format of the conformance
//! README, expectation = the oracle's output) under
//! `<target tmp>/differential/<seed>/` and printed; commit it under
//! `tests/conformance/regressions/` once understood.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{Value, json};
use testenv::inputs::{self, Workload};

const DEFAULT_SEED: u64 = 0x6b61_726d_6164_6121;
const DEFAULT_CASES: usize = 3000;
const DEFAULT_PER_FILE: usize = 40;
/// Ours decides as v1.18.2 (the oracle's version) with these: the generator produces
/// requested reschedules of bindings with clusterAffinities, where v1.19.0 differs
/// (docs/compatibility.md, "Karmada v1.19.0"), and `PriorityBasedScheduling=false` brings
/// v1.18.2's decisions with v1.18.2's queue.
const OURS_AS_V1_18_2: &[&str] = testenv::AS_V1_18_2;

fn env_num(name: &str) -> Option<u64> {
    let v = std::env::var(name).ok()?;
    let v = v.trim();
    let parsed = match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => v.parse(),
    };
    Some(parsed.unwrap_or_else(|e| panic!("{name}={v:?} is not a number: {e}")))
}

/// The oracle binary, or None (after a printed message) when the test should be skipped.
fn oracle() -> Option<PathBuf> {
    let e2e = std::env::var("KARMADA_E2E").is_ok_and(|v| v == "1");
    let path = std::env::var_os("KARMADA_ORACLE")
        .map(PathBuf::from)
        .unwrap_or_else(|| testenv::repo_root().join("_output/bin/karmada-oracle"));
    if !path.exists() && e2e {
        let status = Command::new("bash")
            .arg(testenv::repo_root().join("hack/build-oracle.sh"))
            .status();
        eprintln!("differential: built the oracle: {status:?}");
    }
    if path.exists() {
        return Some(path);
    }
    if e2e {
        panic!(
            "differential: oracle {} not found and KARMADA_E2E=1 (build it with hack/build-oracle.sh)",
            path.display()
        );
    }
    eprintln!(
        "differential: SKIPPED: oracle {} not found (build it with hack/build-oracle.sh, or set KARMADA_ORACLE)",
        path.display()
    );
    None
}

/// Runs `bin [simulate] -f file [--estimator-replicas ...] -o json` and parses the array.
fn run(bin: &Path, file: &Path, case: &Workload, extra: &[&str]) -> Result<Vec<Value>, String> {
    let mut args = case.estimator_args();
    args.extend(extra.iter().map(|a| a.to_string()));
    testenv::simulate::run_json(bin, file, &args)
}

/// The comparable part of one result element.
fn summary(v: &Value) -> (String, String, String, String, Vec<(String, i64)>, String) {
    let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let mut clusters: Vec<(String, i64)> = v
        .get("clusters")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| {
                    (
                        c.get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        c.get("replicas").and_then(Value::as_i64).unwrap_or(0),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    clusters.sort();
    (
        s("kind"),
        s("namespace"),
        s("name"),
        s("result"),
        clusters,
        s("message"),
    )
}

/// Why two results differ, or None when they agree.
fn disagreement(ours: &Value, theirs: &Value) -> Option<String> {
    let (ok, on, oname, ores, oclusters, omsg) = summary(ours);
    let (tk, tn, tname, tres, tclusters, tmsg) = summary(theirs);
    if (ok.as_str(), on.as_str(), oname.as_str()) != (tk.as_str(), tn.as_str(), tname.as_str()) {
        return Some(format!(
            "identity: simulate {ok} {on}/{oname}, oracle {tk} {tn}/{tname}"
        ));
    }
    if ores != tres {
        return Some(format!("result: simulate {ores}, oracle {tres}"));
    }
    // clusters are only meaningful on success (the README: not checked otherwise)
    if ores == "Scheduled" && oclusters != tclusters {
        return Some(format!(
            "clusters: simulate {oclusters:?}, oracle {tclusters:?}"
        ));
    }
    if omsg != tmsg {
        return Some("message".to_string());
    }
    None
}

/// A conformance vector holding the clusters and one binding, expecting the oracle's answer.
fn regression_vector(
    case: &Workload,
    binding: &Value,
    oracle: &Value,
    simulate: &Value,
    seed: u64,
    file: usize,
    what: &str,
) -> Value {
    let mut objects = case.clusters.clone();
    objects.push(binding.clone());
    let mut expect = serde_json::Map::new();
    expect.insert("name".into(), oracle["name"].clone());
    expect.insert("result".into(), oracle["result"].clone());
    if oracle["result"] == "Scheduled" {
        expect.insert("clusters".into(), oracle["clusters"].clone());
    }
    if let Some(m) = oracle["message"].as_str().filter(|m| !m.is_empty()) {
        expect.insert("messageContains".into(), json!(m));
    }
    let mut v = serde_json::Map::new();
    v.insert(
        "source".into(),
        json!(format!(
            "differential test (crates/scheduler/tests/differential.rs) seed {seed:#x} file {file}; expectation from the oracle (upstream karmada v1.18.2 driven by hack/oracle)"
        )),
    );
    v.insert(
        "note".into(),
        json!(format!(
            "differential: {what}; simulate said {}",
            serde_json::to_string(simulate).unwrap_or_default()
        )),
    );
    if !case.estimator.is_empty() {
        v.insert("estimatorReplicas".into(), json!(case.estimator));
    }
    v.insert("objects".into(), Value::Array(objects));
    v.insert("expect".into(), Value::Array(vec![Value::Object(expect)]));
    Value::Object(v)
}

#[test]
fn simulate_agrees_with_upstream_oracle() {
    differential(&[], "", DEFAULT_CASES);
}

/// The same with `SchedulingOvercommitProtection`: within a file, what each binding gets is
/// assumed for the ones after it, on both sides (simulate's cache; the oracle hands the
/// bindings over one by one). A disagreement depends on the bindings before it, so instead of
/// a one-binding vector the whole input file is kept and named.
#[test]
fn simulate_agrees_with_upstream_oracle_with_overcommit_protection() {
    differential(
        &["--feature-gates=SchedulingOvercommitProtection=true"],
        "overcommit-",
        DEFAULT_CASES / 3,
    );
}

fn differential(extra: &[&str], label: &str, default_cases: usize) {
    let Some(oracle) = oracle() else {
        return;
    };
    let seed = env_num("DIFF_SEED").unwrap_or(DEFAULT_SEED);
    let cases = env_num("DIFF_CASES").map_or(default_cases, |n| n as usize);
    let per_file = env_num("DIFF_PER_FILE").map_or(DEFAULT_PER_FILE, |n| (n as usize).max(1));
    let sequential = !extra.is_empty();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("differential")
        .join(format!("{label}{seed:#x}"));
    // start empty: vectors left by an earlier run with this seed would read as this run's
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create the differential work dir");
    // private copies: a long run must not see a concurrent `cargo build` replace the binaries
    let simulate = dir.join("karmada-scheduler");
    std::fs::copy(env!("CARGO_BIN_EXE_karmada-scheduler"), &simulate)
        .expect("copy the karmada-scheduler binary");
    let oracle_copy = dir.join("karmada-oracle");
    std::fs::copy(&oracle, &oracle_copy).expect("copy the oracle binary");
    let oracle = oracle_copy;

    let oracle_only = std::env::var("DIFF_ORACLE_ONLY").is_ok_and(|v| v == "1");
    let files = cases.div_ceil(per_file);
    let mut compared = 0usize;
    let mut results: BTreeMap<String, usize> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    for file in 0..files {
        let n = per_file.min(cases - file * per_file);
        let case = inputs::oracle_file(seed, file as u64, n);
        let input = dir.join(format!("input-{file:04}.yaml"));
        std::fs::write(&input, case.to_yaml()).expect("write an input file");

        let theirs = run(&oracle, &input, &case, extra)
            .unwrap_or_else(|e| panic!("oracle failed on {}: {e}", input.display()));
        if oracle_only {
            for t in &theirs {
                compared += 1;
                let msg = t["message"].as_str().unwrap_or("");
                let class = msg.split(':').next().unwrap_or("").trim();
                *results
                    .entry(format!("{} {}", t["result"].as_str().unwrap_or("?"), class))
                    .or_default() += 1;
            }
            continue;
        }
        let ours_extra: Vec<&str> = extra.iter().chain(OURS_AS_V1_18_2).copied().collect();
        let ours = match run(&simulate, &input, &case, &ours_extra) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{}: simulate failed: {e}", input.display()));
                continue;
            }
        };
        if ours.len() != theirs.len() {
            failures.push(format!(
                "{}: simulate printed {} results, the oracle {}",
                input.display(),
                ours.len(),
                theirs.len()
            ));
            continue;
        }
        let failures_before = failures.len();
        for (i, (o, t)) in ours.iter().zip(&theirs).enumerate() {
            compared += 1;
            *results
                .entry(t["result"].as_str().unwrap_or("?").to_string())
                .or_default() += 1;
            let Some(what) = disagreement(o, t) else {
                continue;
            };
            if sequential {
                eprintln!(
                    "differential: DISAGREEMENT ({what}) in {} binding #{i} (with {extra:?}):\n  simulate: {o}\n  oracle:   {t}",
                    input.display()
                );
                failures.push(format!("{} binding #{i} ({what})", input.display()));
                continue;
            }
            let binding = case.bindings[i].manifest();
            let vector = regression_vector(&case, &binding, t, o, seed, file, &what);
            let path = dir.join(format!("regression-{file:04}-{i:03}.yaml"));
            let text = inputs::to_yaml(&vector);
            std::fs::write(&path, &text).expect("write a regression vector");
            eprintln!(
                "differential: DISAGREEMENT ({what}) in {} binding #{i}:\n  simulate: {}\n  oracle:   {}\n  vector:   {}",
                input.display(),
                o,
                t,
                path.display()
            );
            failures.push(format!("{} ({what})", path.display()));
        }
        if failures.len() == failures_before {
            // an input that agreed is not worth its disk space (hundreds of MiB per run)
            let _ = std::fs::remove_file(&input);
        }
    }
    // the private binary copies are the bulk of the directory; the vectors stand alone
    let _ = std::fs::remove_file(&simulate);
    let _ = std::fs::remove_file(&oracle);
    eprintln!(
        "differential: seed {seed:#x}: {compared} bindings in {files} files compared; oracle results {results:?}; {} disagreement(s)",
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} disagreement(s) between simulate and the upstream oracle:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The generator must be deterministic: same seed, same bytes.
#[test]
fn generator_is_deterministic() {
    let a = inputs::oracle_file(7, 3, 20).to_yaml();
    let b = inputs::oracle_file(7, 3, 20).to_yaml();
    assert_eq!(a, b);
    let c = inputs::oracle_file(7, 4, 20).to_yaml();
    assert_ne!(a, c);
}

/// The YAML emitter must write what a YAML parser reads back as the same value, so that
/// the input files and the regression vectors mean what the generator built.
#[test]
fn yaml_emitter_round_trips() {
    let case = inputs::oracle_file(11, 0, 30);
    let bindings = case.bindings.iter().map(|b| b.manifest());
    for obj in case.clusters.iter().cloned().chain(bindings) {
        let obj = &obj;
        let text = inputs::to_yaml(obj);
        let back: Value = serde_yaml::from_str(&text)
            .unwrap_or_else(|e| panic!("emitted YAML does not parse: {e}\n{text}"));
        assert_eq!(&back, obj, "round trip changed the object:\n{text}");
    }
    let oracle = json!({"kind": "ResourceBinding", "namespace": "default", "name": "b000",
        "result": "Scheduled", "clusters": [{"name": "ams", "replicas": 2}],
        "message": "Binding has been scheduled successfully."});
    let vector = regression_vector(
        &case,
        &case.bindings[0].manifest(),
        &oracle,
        &oracle,
        11,
        0,
        "clusters",
    );
    let text = inputs::to_yaml(&vector);
    let back: Value = serde_yaml::from_str(&text).expect("the vector parses");
    assert_eq!(back, vector);
}

#[test]
fn disagreement_compares_result_clusters_and_message() {
    let base = json!({"kind": "ResourceBinding", "namespace": "default", "name": "b",
        "result": "Scheduled", "clusters": [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 2}],
        "message": "Binding has been scheduled successfully."});
    let mut reordered = base.clone();
    reordered["clusters"] = json!([{"name": "b", "replicas": 2}, {"name": "a", "replicas": 1}]);
    assert_eq!(disagreement(&base, &reordered), None);

    let mut other = base.clone();
    other["clusters"][0]["replicas"] = json!(2);
    assert!(disagreement(&base, &other).unwrap().starts_with("clusters"));

    let mut failed = base.clone();
    failed["result"] = json!("Unschedulable");
    assert!(disagreement(&base, &failed).unwrap().starts_with("result"));

    let mut text = base.clone();
    text["message"] = json!("something else");
    assert_eq!(disagreement(&base, &text).as_deref(), Some("message"));

    // clusters of failed results are not compared
    let mut a = failed.clone();
    a["clusters"] = json!([]);
    assert_eq!(disagreement(&failed, &a), None);
}
