//! Helm charts rendered with a real `helm` (`_output/bin/helm`, built by `hack/build-helm.sh`):
//! the project's chart in `manifests/helm/karmada-scheduler-rs`, for the chart tests of both
//! binaries, and Karmada's own chart (`charts/karmada` of the pinned Karmada Go module, in the
//! Go module cache), for the tests that run our image the way Karmada deploys its scheduler.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_yaml::Value;

use crate::{e2e_required, repo_root};

/// `helm` in `$KARMADA_TOOLS_BIN` or `_output/bin`, built first when `KARMADA_E2E` is set;
/// `None` (the test skips) when it is absent otherwise.
pub fn helm_or_skip(test: &str) -> Option<PathBuf> {
    let root = repo_root();
    let bin_dir = std::env::var_os("KARMADA_TOOLS_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("_output/bin"));
    let bin = bin_dir.join("helm");
    if !bin.exists() && e2e_required() {
        let status = Command::new(root.join("hack/build-helm.sh"))
            .env("KARMADA_TOOLS_BIN", &bin_dir)
            .status()
            .expect("run hack/build-helm.sh");
        assert!(status.success(), "hack/build-helm.sh failed");
    }
    if bin.exists() {
        Some(bin)
    } else {
        eprintln!(
            "{test}: {} not built (hack/build-helm.sh); skipping",
            bin.display()
        );
        None
    }
}

/// The chart's directory.
pub fn chart() -> PathBuf {
    repo_root().join("manifests/helm/karmada-scheduler-rs")
}

/// `helm template ksrs <chart> --namespace karmada-system --set <each of sets>`, as documents.
pub fn render(helm: &Path, sets: &[&str]) -> Vec<Value> {
    render_chart(helm, &chart(), "ksrs", "karmada-system", sets)
}

/// `helm template <release> <chart_dir> --namespace <namespace> --set <each of sets>`, as
/// documents (empty ones dropped). Panics when helm fails.
pub fn render_chart(
    helm: &Path,
    chart_dir: &Path,
    release: &str,
    namespace: &str,
    sets: &[&str],
) -> Vec<Value> {
    render_chart_only(helm, chart_dir, release, namespace, sets, &[])
}

/// [`render_chart`] with `--show-only <template>` for each of `templates` (all when empty).
pub fn render_chart_only(
    helm: &Path,
    chart_dir: &Path,
    release: &str,
    namespace: &str,
    sets: &[&str],
    templates: &[&str],
) -> Vec<Value> {
    let mut cmd = Command::new(helm);
    cmd.args(["template", release])
        .arg(chart_dir)
        .args(["--namespace", namespace]);
    for s in sets {
        cmd.args(["--set", s]);
    }
    for t in templates {
        cmd.args(["--show-only", t]);
    }
    let out = cmd.output().expect("helm template");
    assert!(
        out.status.success(),
        "helm template {} failed:\n{}",
        chart_dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap_or_default();
    serde_yaml::Deserializer::from_str(&text)
        .map(|d| <Value as serde::Deserialize>::deserialize(d).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

/// The Karmada version the Go tools are built from (`hack/tools/karmada/go.mod`).
pub fn karmada_version() -> String {
    let go_mod = repo_root().join("hack/tools/karmada/go.mod");
    let text = std::fs::read_to_string(&go_mod).expect("hack/tools/karmada/go.mod");
    text.lines()
        .find_map(|l| {
            let mut words = l.split_whitespace();
            (words.next() == Some("github.com/karmada-io/karmada"))
                .then(|| words.next().map(str::to_string))
                .flatten()
        })
        .expect("github.com/karmada-io/karmada in hack/tools/karmada/go.mod")
}

/// The Go module cache: `$GOMODCACHE`, else `go env GOMODCACHE`, else `$GOPATH/pkg/mod` or
/// `~/go/pkg/mod`.
fn go_mod_cache() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("GOMODCACHE").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    for go in ["go", "/usr/local/go/bin/go", "/usr/lib/go/bin/go"] {
        if let Ok(out) = Command::new(go).args(["env", "GOMODCACHE"]).output()
            && out.status.success()
        {
            let d = String::from_utf8_lossy(&out.stdout).trim().to_string();
            if !d.is_empty() {
                return Some(PathBuf::from(d));
            }
        }
    }
    let gopath = std::env::var_os("GOPATH")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join("go")))?;
    Some(gopath.join("pkg/mod"))
}

/// Karmada's Helm chart, ready for `helm template`: a scratch copy of `charts/karmada` of the
/// Karmada module at [`karmada_version`] (which `hack/build-tools.sh` downloads into the Go
/// module cache), removed on drop.
///
/// The chart depends on Bitnami's `common` library chart, which is neither in the module nor
/// reachable here (it is fetched by `helm dependency build` from charts.bitnami.com). Karmada's
/// templates use two of its helpers, `common.images.image` and `common.images.pullSecrets`,
/// and only for `image:` and `imagePullSecrets:`; the copy gets a stand-in library chart
/// `common` defining those two (`<registry>/<repository>:<tag>`, no pull secrets), so that
/// everything else renders exactly as Karmada wrote it.
#[derive(Debug)]
pub struct KarmadaChart {
    dir: PathBuf,
    /// Holds the copy; removed when the chart is dropped.
    _scratch: tempfile::TempDir,
}

impl KarmadaChart {
    /// The chart's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

const COMMON_CHART: &str = "apiVersion: v2
name: common
type: library
version: 2.99.0
description: Stand-in for the two helpers of Bitnami's common chart that Karmada's chart uses (crates/testenv/src/helm.rs).
";

const COMMON_HELPERS: &str = r#"{{- define "common.images.image" -}}
{{- if .imageRoot.registry -}}
{{- printf "%s/%s:%s" .imageRoot.registry .imageRoot.repository (toString .imageRoot.tag) -}}
{{- else -}}
{{- printf "%s:%s" .imageRoot.repository (toString .imageRoot.tag) -}}
{{- end -}}
{{- end -}}
{{- define "common.images.pullSecrets" -}}
{{- end -}}
"#;

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// [`KarmadaChart`] (from `KARMADA_CHART_DIR` when set), or `None` after a message when the Karmada module is not in the Go
/// module cache and `KARMADA_E2E` is unset. Call [`crate::tools_or_skip`] first: with
/// `KARMADA_E2E` set it builds the tools, which downloads the module.
pub fn karmada_chart_or_skip(test: &str) -> Option<KarmadaChart> {
    let version = karmada_version();
    // Another version's chart (e.g. v1.19's, from the public source; never committed here).
    let source = match std::env::var_os("KARMADA_CHART_DIR") {
        Some(dir) => Some(PathBuf::from(dir)),
        None => go_mod_cache().map(|c| {
            c.join(format!(
                "github.com/karmada-io/karmada@{version}/charts/karmada"
            ))
        }),
    };
    let source = match source {
        Some(d) if d.join("Chart.yaml").is_file() => d,
        other => {
            let msg = format!(
                "{test}: Karmada's chart (charts/karmada of github.com/karmada-io/karmada@{version}) \
                 is not in the Go module cache ({other:?}); hack/build-tools.sh downloads it"
            );
            assert!(!e2e_required(), "{msg}");
            eprintln!("SKIPPED {msg}");
            return None;
        }
    };
    let scratch = tempfile::Builder::new()
        .prefix("karmada-chart-")
        .tempdir()
        .expect("a scratch directory for Karmada's chart");
    let dir = scratch.path().join("karmada");
    copy_tree(&source, &dir).expect("copy Karmada's chart");
    let common = dir.join("charts/common");
    if !common.exists() {
        std::fs::create_dir_all(common.join("templates")).expect("charts/common");
        std::fs::write(common.join("Chart.yaml"), COMMON_CHART).expect("common/Chart.yaml");
        std::fs::write(common.join("templates/_images.tpl"), COMMON_HELPERS)
            .expect("common/templates/_images.tpl");
    }
    Some(KarmadaChart {
        dir,
        _scratch: scratch,
    })
}
