//! The Helm chart in `manifests/helm/karmada-scheduler-rs`, rendered with a real `helm`
//! (`_output/bin/helm`, built by `hack/build-helm.sh`), for the chart tests of both binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml::Value;

use crate::{e2e_required, repo_root};

/// `_output/bin/helm`, built first when `KARMADA_E2E` is set; `None` (the test skips) when it
/// is absent otherwise.
pub fn helm_or_skip(test: &str) -> Option<PathBuf> {
    let root = repo_root();
    let bin = root.join("_output/bin/helm");
    if !bin.exists() && e2e_required() {
        let status = Command::new(root.join("hack/build-helm.sh"))
            .status()
            .expect("run hack/build-helm.sh");
        assert!(status.success(), "hack/build-helm.sh failed");
    }
    if bin.exists() {
        Some(bin)
    } else {
        eprintln!("{test}: _output/bin/helm not built (hack/build-helm.sh); skipping");
        None
    }
}

/// The chart's directory.
pub fn chart() -> PathBuf {
    repo_root().join("manifests/helm/karmada-scheduler-rs")
}

/// `helm template ksrs <chart> --namespace karmada-system --set <each of sets>`, as documents.
pub fn render(helm: &Path, sets: &[&str]) -> Vec<Value> {
    let mut cmd = Command::new(helm);
    cmd.args(["template", "ksrs"])
        .arg(chart())
        .args(["--namespace", "karmada-system"]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().expect("helm template");
    assert!(
        out.status.success(),
        "helm template failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap_or_default();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}
