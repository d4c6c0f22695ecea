//! The deployment files shipped in `manifests/`: the systemd unit passes `systemd-analyze
//! verify` and its flags parse; the example estimator Services have the shape the resolver
//! needs.

use karmada_scheduler::config::options::{Invocation, parse};

#[test]
fn systemd_unit_flags_parse_and_validate() {
    let unit = std::fs::read_to_string(
        testenv::repo_root().join("manifests/systemd/karmada-scheduler.service"),
    )
    .unwrap();
    let words = testenv::units::exec_start(&unit);
    assert_eq!(words[0], "/usr/local/bin/karmada-scheduler");
    match parse(&words[1..]) {
        Ok(Invocation::Run(opts)) => {
            opts.validate().unwrap();
            assert!(opts.common.leader_election.leader_elect);
            assert!(opts.enable_scheduler_estimator);
        }
        other => panic!("unit flags: {other:?}"),
    }
}

#[test]
fn systemd_unit_verifies() {
    let unit = std::fs::read_to_string(
        testenv::repo_root().join("manifests/systemd/karmada-scheduler.service"),
    )
    .unwrap();
    let Some(complaints) = testenv::units::verify(
        "karmada-scheduler.service",
        &unit,
        "/usr/local/bin/karmada-scheduler",
        std::path::Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")),
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

#[test]
fn example_estimator_services_are_resolvable_externalnames() {
    let text = std::fs::read_to_string(
        testenv::repo_root().join("manifests/examples/estimator-externalname-services.yaml"),
    )
    .unwrap();
    let mut n = 0;
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let svc: k8s_openapi::api::core::v1::Service =
            serde::Deserialize::deserialize(doc).unwrap();
        let name = svc.metadata.name.clone().unwrap();
        assert!(name.starts_with("karmada-scheduler-estimator-"), "{name}");
        assert_eq!(svc.metadata.namespace.as_deref(), Some("karmada-system"));
        let spec = svc.spec.unwrap();
        assert_eq!(spec.type_.as_deref(), Some("ExternalName"));
        assert!(spec.external_name.is_some_and(|e| !e.is_empty()));
        let port = spec
            .ports
            .unwrap()
            .into_iter()
            .find(|p| p.port == 10352)
            .expect("port 10352");
        assert!(
            matches!(
                port.target_port,
                Some(k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(_))
            ),
            "{name}: the resolver needs an integer targetPort"
        );
        n += 1;
    }
    assert_eq!(n, 3);
}

/// Every line of the Go karmada-scheduler's `--help` (flag names, defaults, texts) is in ours.
#[test]
fn help_prints_every_line_of_the_go_scheduler() {
    testenv::help::assert_help_covers_go(
        "karmada-scheduler",
        std::path::Path::new(env!("CARGO_BIN_EXE_karmada-scheduler")),
    );
}
