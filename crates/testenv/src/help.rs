//! `--help` of ours against the Go component's: every line the Go binary prints (its flags,
//! defaults and texts, which runbooks and wrappers read) must be printed by ours too, except
//! Cobra's `completion` subcommand, which ours does not have.

use std::path::Path;
use std::process::Command;

/// The `--help` output of `bin` (stdout and stderr; Cobra prints usage on stdout).
pub fn help_of(bin: &Path) -> String {
    let out = Command::new(bin)
        .arg("--help")
        .output()
        .unwrap_or_else(|e| panic!("running {} --help: {e}", bin.display()));
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

/// Texts of the v1.18.2 Go binaries' `--help` that v1.19.0 changed, and what v1.19.0 prints
/// instead (ours follows v1.19.0): the gate that became Beta, and klog v2.140's
/// `--stderrthreshold` text. Widths may differ (pflag pads to the longest flag), so the
/// comparison is of the changed fragment, not of the whole line.
pub const V1_19_CHANGED: &[(&str, &str)] = &[
    (
        "PriorityBasedScheduling=true|false (ALPHA - default=false)",
        "PriorityBasedScheduling=true|false (BETA - default=true)",
    ),
    (
        "(no effect when -logtostderr=true or -alsologtostderr=true) (default 2)",
        "(no effect when -logtostderr=true or -alsologtostderr=true unless -legacy_stderr_threshold_behavior=false) (default 2)",
    ),
];

/// The lines of `go`'s `--help` missing from `ours`'s, trailing spaces ignored. A v1.18.2 line
/// that v1.19.0 changed ([`V1_19_CHANGED`]) counts as present when ours prints its v1.19.0 form.
pub fn go_lines_missing(go: &Path, ours: &Path) -> Vec<String> {
    let theirs = help_of(go);
    let mine = help_of(ours);
    let mine: std::collections::HashSet<&str> = mine.lines().map(str::trim_end).collect();
    theirs
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.contains(" completion "))
        .filter(|l| !mine.contains(l))
        .filter(|l| {
            let Some((old, new)) = V1_19_CHANGED.iter().find(|(old, _)| l.contains(old)) else {
                return true;
            };
            let fragment = l.replace(old, new);
            let fragment = fragment.split_whitespace().collect::<Vec<_>>().join(" ");
            !mine
                .iter()
                .any(|m| m.split_whitespace().collect::<Vec<_>>().join(" ") == fragment)
        })
        .map(str::to_string)
        .collect()
}

/// Asserts that ours prints every line of the Go `component`'s `--help`; skipped (with a
/// note) when the Go tools are not built and the run does not require them.
pub fn assert_help_covers_go(component: &str, ours: &Path) {
    let tools = match crate::Tools::ensure() {
        Ok(t) => t,
        Err(e) => {
            assert!(!crate::e2e_required(), "{e}");
            eprintln!("Go tools not built ({e}); skipping the --help comparison");
            return;
        }
    };
    let go = tools.bin(component);
    let missing = go_lines_missing(&go, ours);
    assert!(
        missing.is_empty(),
        "lines of {}'s --help that ours does not print:\n{}",
        go.display(),
        missing.join("\n")
    );
}
