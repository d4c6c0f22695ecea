//! The container image under test, shared by the tests that run it (`e2e_image`,
//! `e2e_host_cluster`): built by `hack/build-image.sh` from this test build's binaries, or
//! taken from `KARMADA_IMAGE_ARCHIVE`.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use testenv::e2e_required;

/// The image's user: numeric, non-root.
pub const USER: &str = "65532:65532";

/// Our chart's appVersion, the image's tag.
pub fn app_version() -> String {
    let chart = std::fs::read_to_string(testenv::helm::chart().join("Chart.yaml")).unwrap();
    let v: serde_yaml::Value = serde_yaml::from_str(&chart).unwrap();
    v["appVersion"].as_str().expect("appVersion").to_string()
}

/// The directory of this test build's binaries.
pub fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_karmada-scheduler"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The archive under test: `$KARMADA_IMAGE_ARCHIVE`, or one `hack/build-image.sh` builds in
/// `dir` from this test build's binaries (fast compression: the debug binaries are large).
pub fn image_archive(test: &str, dir: &Path) -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("KARMADA_IMAGE_ARCHIVE") {
        return Some(PathBuf::from(p));
    }
    let bins = bin_dir();
    if !bins.join("karmada-descheduler").is_file() {
        let msg = format!(
            "{test}: {} has no karmada-descheduler to put in the image (cargo build --bin \
             karmada-descheduler, or cargo test --workspace)",
            bins.display()
        );
        assert!(!e2e_required(), "{msg}");
        eprintln!("SKIPPED {msg}");
        return None;
    }
    let out = dir.join("image.oci.tar");
    let run = Command::new(testenv::repo_root().join("hack/build-image.sh"))
        .args(["--no-build", "--gzip-level", "1", "--bin-dir"])
        .arg(&bins)
        .arg("--output")
        .arg(&out)
        .output()
        .unwrap_or_else(|e| panic!("{test}: running hack/build-image.sh: {e}"));
    assert!(
        run.status.success(),
        "{test}: hack/build-image.sh failed ({}):\n{}",
        run.status,
        String::from_utf8_lossy(&run.stderr)
    );
    Some(out)
}
