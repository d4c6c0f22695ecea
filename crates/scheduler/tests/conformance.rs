//! Conformance vectors replayed through the built `karmada-scheduler simulate`.
//!
//! Every `*.yaml` vector under `tests/conformance/` of the repository (or under the directory
//! named by `CONFORMANCE_DIR`), recursively, is run exactly as `docs/simulate.md`
//! describes: its `objects` written as one multi-document YAML file, one
//! `--estimator-replicas NAME=N` per `estimatorReplicas` entry, `-o json`; the output is checked
//! with the pass rules written there. All failures are reported together.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;
use serde_yaml::Value as Yaml;

fn vectors_dir() -> PathBuf {
    match std::env::var_os("CONFORMANCE_DIR") {
        Some(d) => PathBuf::from(d),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance"),
    }
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            collect(&p, out);
        } else if p.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(p);
        }
    }
}

/// The `(name, replicas)` pairs of a cluster list; a missing `replicas` counts as 0.
fn pairs<'a>(list: impl Iterator<Item = (&'a str, i64)>) -> BTreeSet<(String, i64)> {
    list.map(|(n, r)| (n.to_string(), r)).collect()
}

fn yaml_str<'a>(v: &'a Yaml, path: &[&str]) -> &'a str {
    let mut cur = v;
    for key in path {
        match cur.get(*key) {
            Some(next) => cur = next,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

/// Run one vector; `Err` lists what did not match.
fn run_vector(path: &Path, scratch: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let vector: Yaml = serde_yaml::from_str(&text).map_err(|e| format!("not a vector: {e}"))?;
    if vector.get("queue").is_some() {
        // A scheduling-queue vector: replayed by the queue's unit tests, not by simulate.
        return Ok(());
    }
    let objects = vector
        .get("objects")
        .and_then(Yaml::as_sequence)
        .ok_or("vector has no objects")?;
    let expect = vector
        .get("expect")
        .and_then(Yaml::as_sequence)
        .ok_or("vector has no expect")?;

    let mut docs = String::new();
    for o in objects {
        docs.push_str("---\n");
        docs.push_str(&serde_yaml::to_string(o).map_err(|e| e.to_string())?);
    }
    std::fs::write(scratch, docs).map_err(|e| e.to_string())?;

    let mut cmd = Command::new(env!("CARGO_BIN_EXE_karmada-scheduler"));
    cmd.arg("simulate").arg("-f").arg(scratch);
    if let Some(map) = vector.get("estimatorReplicas").and_then(Yaml::as_mapping) {
        for (k, v) in map {
            let name = k.as_str().ok_or("estimatorReplicas key is not a string")?;
            let n = v
                .as_i64()
                .ok_or("estimatorReplicas value is not an integer")?;
            cmd.arg("--estimator-replicas").arg(format!("{name}={n}"));
        }
    }
    if let Some(flags) = vector.get("flags").and_then(Yaml::as_sequence) {
        for f in flags {
            cmd.arg(f.as_str().ok_or("flags entry is not a string")?);
        }
    }
    cmd.arg("-o").arg("json");
    let out = cmd.output().map_err(|e| format!("running simulate: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let results: Vec<Json> = serde_json::from_str(&stdout).map_err(|e| {
        format!(
            "stdout is not a JSON array ({e}); stderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;

    let bindings: Vec<&Yaml> = objects
        .iter()
        .filter(|o| {
            matches!(
                yaml_str(o, &["kind"]),
                "ResourceBinding" | "ClusterResourceBinding"
            )
        })
        .collect();
    let mut problems = Vec::new();
    if results.len() != bindings.len() {
        problems.push(format!(
            "{} results for {} bindings",
            results.len(),
            bindings.len()
        ));
    }
    for (i, (b, r)) in bindings.iter().zip(&results).enumerate() {
        let kind = yaml_str(b, &["kind"]);
        let ns = if kind == "ResourceBinding" {
            yaml_str(b, &["metadata", "namespace"])
        } else {
            ""
        };
        let name = yaml_str(b, &["metadata", "name"]);
        let got = |k: &str| {
            r.get(k)
                .and_then(Json::as_str)
                .unwrap_or("<missing>")
                .to_string()
        };
        if got("kind") != kind || got("namespace") != ns || got("name") != name {
            problems.push(format!(
                "element {i}: got {}/{}/{}, want {kind}/{ns}/{name}",
                got("kind"),
                got("namespace"),
                got("name")
            ));
        }
        let Some(e) = expect.get(i) else {
            problems.push(format!("element {i}: no expectation"));
            continue;
        };
        let want_result = yaml_str(e, &["result"]);
        if got("result") != want_result {
            problems.push(format!(
                "{name}: result {} (message {:?}), want {want_result}",
                got("result"),
                got("message")
            ));
        }
        if let Some(want) = e.get("clusters").and_then(Yaml::as_sequence) {
            let want = pairs(want.iter().map(|c| {
                (
                    yaml_str(c, &["name"]),
                    c.get("replicas").and_then(Yaml::as_i64).unwrap_or(0),
                )
            }));
            let have = r
                .get("clusters")
                .and_then(Json::as_array)
                .cloned()
                .unwrap_or_default();
            let have = pairs(have.iter().map(|c| {
                (
                    c.get("name").and_then(Json::as_str).unwrap_or(""),
                    c.get("replicas").and_then(Json::as_i64).unwrap_or(0),
                )
            }));
            if want != have {
                problems.push(format!("{name}: clusters {have:?}, want {want:?}"));
            }
        }
        for want in e
            .get("clusters")
            .and_then(Yaml::as_sequence)
            .into_iter()
            .flatten()
        {
            let Some(want_components) = want.get("components").and_then(Yaml::as_sequence) else {
                continue;
            };
            let cname = yaml_str(want, &["name"]);
            let want_components: Vec<(String, i64)> = want_components
                .iter()
                .map(|c| {
                    (
                        yaml_str(c, &["name"]).to_string(),
                        c.get("replicas").and_then(Yaml::as_i64).unwrap_or(0),
                    )
                })
                .collect();
            let have_components: Vec<(String, i64)> = r
                .get("clusters")
                .and_then(Json::as_array)
                .and_then(|cs| {
                    cs.iter()
                        .find(|c| c.get("name").and_then(Json::as_str) == Some(cname))
                })
                .and_then(|c| c.get("components"))
                .and_then(Json::as_array)
                .map(|cs| {
                    cs.iter()
                        .map(|c| {
                            (
                                c.get("name")
                                    .and_then(Json::as_str)
                                    .unwrap_or("")
                                    .to_string(),
                                c.get("replicas").and_then(Json::as_i64).unwrap_or(0),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            if want_components != have_components {
                problems.push(format!(
                    "{name}: components in {cname} {have_components:?}, want {want_components:?}"
                ));
            }
        }
        let contains = yaml_str(e, &["messageContains"]);
        if !contains.is_empty() && !got("message").contains(contains) {
            problems.push(format!(
                "{name}: message {:?} does not contain {contains:?}",
                got("message")
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n    "))
    }
}

#[test]
fn conformance_vectors() {
    let dir = vectors_dir();
    let mut files = Vec::new();
    collect(&dir, &mut files);
    assert!(!files.is_empty(), "no vectors under {}", dir.display());

    let scratch_dir = tempfile::tempdir().expect("scratch directory");
    let scratch = scratch_dir.path().join("objects.yaml");
    let mut failures = Vec::new();
    for f in &files {
        if let Err(why) = run_vector(f, &scratch) {
            failures.push(format!("{}:\n    {why}", f.display()));
        }
    }
    eprintln!(
        "conformance: {} vectors, {} failed ({})",
        files.len(),
        failures.len(),
        dir.display()
    );
    assert!(
        failures.is_empty(),
        "{} of {} vectors failed:\n{}",
        failures.len(),
        files.len(),
        failures.join("\n")
    );
}
