//! Checks of the systemd units shipped in `manifests/systemd/`, shared by the scheduler's and
//! the descheduler's deployment tests.

use std::path::Path;
use std::process::Command;

/// `ExecStart=` of `unit` with line continuations joined, split into words; environment
/// references (`$VAR`) dropped.
pub fn exec_start(unit: &str) -> Vec<String> {
    let joined = unit.replace("\\\n", " ");
    let line = joined
        .lines()
        .find(|l| l.starts_with("ExecStart="))
        .unwrap_or_default();
    line.trim_start_matches("ExecStart=")
        .split_whitespace()
        .filter(|w| !w.starts_with('$'))
        .map(str::to_string)
        .collect()
}

/// `systemd-analyze verify` of the unit `file_name` (text `unit`), with its `ExecStart` binary
/// `installed` replaced by `built` (verify checks that the binary exists). `None` when
/// systemd-analyze is not installed; else the complaints about the unit (empty: it verifies).
pub fn verify(file_name: &str, unit: &str, installed: &str, built: &Path) -> Option<Vec<String>> {
    let out = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let unit = unit.replace(installed, &built.to_string_lossy());
    let dir = tempfile::tempdir().ok()?;
    let path = dir.path().join(file_name);
    std::fs::write(&path, unit).ok()?;
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&path)
        .output()
        .ok()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut complaints: Vec<String> = stderr
        .lines()
        .filter(|l| l.contains(file_name))
        .map(str::to_string)
        .collect();
    if !out.status.success() && complaints.is_empty() {
        complaints.push(stderr.into_owned());
    }
    Some(complaints)
}
