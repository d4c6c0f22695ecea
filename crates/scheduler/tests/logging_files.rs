//! klog's file flags on the real binary: `--logtostderr=false --log-file` writes every line to
//! the file (after klog's header) and only errors (`--stderrthreshold`, default 2) to standard
//! error; `--alsologtostderr` sends everything to both; `--log-dir` writes klog's per-severity
//! files. The process fails fast here (its kubeconfig does not exist), which logs an info line
//! and an error line.

use std::path::Path;
use std::process::Command;

fn run(extra: &[String]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_karmada-scheduler"))
        .args([
            "--kubeconfig=/nonexistent/kubeconfig",
            "--leader-elect=false",
            "--metrics-bind-address=0",
            "--health-probe-bind-address=0",
        ])
        .args(extra)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn flag(name: &str, value: &Path) -> String {
    format!("--{name}={}", value.display())
}

#[test]
fn log_file_gets_every_line_and_stderr_only_errors() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scheduler.log");
    let (code, stderr) = run(&["--logtostderr=false".into(), flag("log-file", &file)]);
    assert_eq!(code, 1);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("Log file created at: "), "{text}");
    let lines: Vec<&str> = text.lines().skip(4).collect();
    assert!(
        lines[0].starts_with('I') && lines[0].contains("karmada-scheduler version"),
        "{text}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with('E') && l.contains("error building kubeconfig")),
        "{text}"
    );
    // Only the error reaches standard error.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.starts_with('E') && stderr.contains("error building kubeconfig"),
        "{stderr}"
    );

    // --alsologtostderr: everything on standard error too; the file is appended to.
    let (_, stderr) = run(&[
        "--logtostderr=false".into(),
        "--alsologtostderr".into(),
        flag("log-file", &file),
    ]);
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("karmada-scheduler version")),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert_eq!(text.matches("Log file created at: ").count(), 2, "{text}");

    // The file flags do nothing while --logtostderr is true (the default).
    let other = dir.path().join("unused.log");
    let (_, stderr) = run(&[flag("log-file", &other)]);
    assert!(!other.exists());
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("karmada-scheduler version")),
        "{stderr}"
    );
}

#[test]
fn log_dir_gets_klogs_files_per_severity() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _) = run(&["--logtostderr=false".into(), flag("log-dir", dir.path())]);
    assert_eq!(code, 1);
    let info = std::fs::read_to_string(dir.path().join("karmada-scheduler.INFO")).unwrap();
    let error = std::fs::read_to_string(dir.path().join("karmada-scheduler.ERROR")).unwrap();
    assert!(
        info.contains("karmada-scheduler version") && info.contains("error building kubeconfig")
    );
    assert!(
        !error.contains("karmada-scheduler version") && error.contains("error building kubeconfig")
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names
            .iter()
            .any(|n| n.starts_with("karmada-scheduler.") && n.contains(".log.INFO.")),
        "{names:?}"
    );
}

/// The two klog flags of Kubernetes 1.36 (Karmada v1.19): `--alsologtostderrthreshold` caps
/// what `--alsologtostderr` copies to standard error; `--legacy-stderr-threshold-behavior=false`
/// makes `--stderrthreshold` filter the default `--logtostderr` output too.
#[test]
fn kubernetes_1_36_stderr_thresholds() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("scheduler.log");
    let (_, stderr) = run(&[
        "--logtostderr=false".into(),
        "--alsologtostderr".into(),
        "--alsologtostderrthreshold=ERROR".into(),
        flag("log-file", &file),
    ]);
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with('E'), "{stderr}");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("karmada-scheduler version"), "{text}");

    // Default (legacy) behaviour: every line on standard error, the threshold ignored.
    let (_, stderr) = run(&["--stderrthreshold=ERROR".into()]);
    assert!(stderr.contains("karmada-scheduler version"), "{stderr}");
    // Honoured when the legacy behaviour is off.
    let (code, stderr) = run(&[
        "--stderrthreshold=ERROR".into(),
        "--legacy-stderr-threshold-behavior=false".into(),
    ]);
    assert_eq!(code, 1);
    assert!(!stderr.contains("karmada-scheduler version"), "{stderr}");
    assert!(stderr.contains("error building kubeconfig"), "{stderr}");
}
