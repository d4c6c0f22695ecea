//! The descheduler's systemd unit: its flags parse and validate with the binary's own parser,
//! and it passes `systemd-analyze verify` (where installed).

use std::path::{Path, PathBuf};

use karmada_descheduler::options::{Invocation, parse};

fn unit() -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../manifests/systemd/karmada-descheduler.service");
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn systemd_unit_flags_parse_and_validate() {
    let words = testenv::units::exec_start(&unit());
    assert_eq!(words[0], "/usr/local/bin/karmada-descheduler");
    match parse(&words[1..]) {
        Ok(Invocation::Run(opts)) => {
            opts.validate().unwrap();
            assert!(opts.common.leader_election.leader_elect);
            assert_eq!(
                opts.common.leader_election.resource_name,
                "karmada-descheduler"
            );
            assert_eq!(opts.common.serving.health_probe_bind_address, ":10358");
        }
        other => panic!("unit flags: {other:?}"),
    }
}

#[test]
fn systemd_unit_verifies() {
    let Some(complaints) = testenv::units::verify(
        "karmada-descheduler.service",
        &unit(),
        "/usr/local/bin/karmada-descheduler",
        Path::new(env!("CARGO_BIN_EXE_karmada-descheduler")),
    ) else {
        assert!(
            !testenv::e2e_required(),
            "systemd-analyze is not installed (hack/ci-deps.sh installs Debian's systemd package)"
        );
        eprintln!("systemd-analyze not installed; skipping the unit verification");
        return;
    };
    assert!(
        complaints.is_empty(),
        "systemd-analyze verify:\n{complaints:#?}"
    );
}

/// Every line of the Go karmada-descheduler's `--help` (flag names, defaults, texts) is in ours.
#[test]
fn help_prints_every_line_of_the_go_descheduler() {
    testenv::help::assert_help_covers_go(
        "karmada-descheduler",
        std::path::Path::new(env!("CARGO_BIN_EXE_karmada-descheduler")),
    );
}
