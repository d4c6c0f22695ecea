//! End to end on a real control plane: this scheduler and the Go karmada-scheduler v1.18.2
//! schedule twin bindings (identical except name and `spec.schedulerName`) side by side, and
//! must write the same `spec.clusters`, applied-placement annotation (byte for byte),
//! `Scheduled` condition and observed generation — for every replica strategy, for failover
//! across `clusterAffinities` and for the failure outcomes (no fit, not enough replicas, bad
//! input). Ours runs with the token of the chart's ServiceAccount, bound to the chart's RBAC
//! only. Then scale and placement changes, a tainted cluster and a deleted cluster must lead
//! to the same rescheduling on both sides.
//!
//! Skipped when the Go binaries are absent and KARMADA_E2E is unset (see crates/testenv).

mod common;

use std::time::Duration;

use serde_json::json;
use testenv::{TestEnv, fixtures, rbac, tools_or_skip};

use common::*;

/// How long twins may take to agree after both were scheduled.
const SETTLE: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twins_match_the_go_scheduler() -> anyhow::Result<()> {
    let Some(tools) = tools_or_skip("twins_match_the_go_scheduler") else {
        return Ok(());
    };
    let Some(helm) = testenv::helm::helm_or_skip("twins_match_the_go_scheduler") else {
        return Ok(());
    };
    let env = TestEnv::builder().tools(tools).members(2).start().await?;
    for cluster in fixtures::extra_clusters() {
        env.apply_json(&cluster).await?;
    }
    let mut go = env.spawn_go_scheduler(&[
        "--enable-scheduler-estimator=true",
        "--scheduler-name=go-scheduler",
    ])?;
    go.wait_healthy(Duration::from_secs(60)).await?;
    // Ours with the chart's RBAC only (its ServiceAccount's token, see testenv::rbac).
    let docs = rbac::chart_rbac(&helm, rbac::Daemon::Scheduler, "ksrs", &[]);
    let identity = rbac::service_account_kubeconfig(&env, &docs).await?;
    let mut flags = vec!["--enable-scheduler-estimator=true"];
    flags.extend(testenv::AS_V1_18_2);
    let ours = OurScheduler::start_with_kubeconfig(&identity.kubeconfig, &flags).await?;

    let rbs = rb_api(&env).await?;
    let mut accepted = Vec::new();
    for (name, replicas, placement) in fixtures::scheduling_cases() {
        let mut ok = true;
        for (sched, suffix) in [("default-scheduler", "rs"), ("go-scheduler", "go")] {
            let b = binding(
                &format!("{name}-{suffix}"),
                replicas,
                placement.clone(),
                sched,
            );
            if let Err(e) = env.apply_json(&b).await {
                println!("{name}: rejected by the API server: {e:#}");
                ok = false;
                break;
            }
        }
        if ok {
            accepted.push(name);
        }
    }
    // The CRD refuses an unknown spread field at admission (what reaches the scheduler
    // undecodable is tested in e2e_bad_input.rs).
    let refused = env.apply_json(&json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "bad-spread-rs", "namespace": "default",
                     "labels": {"propagationpolicy.karmada.io/permanent-id": "x"}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "bad"},
                 "replicas": 1, "placement": {"spreadConstraints": [{"spreadByField": "planet"}]}}
    }))
    .await
    .expect_err("spreadByField: planet is outside the CRD's enum");
    assert!(
        format!("{refused:#}").contains("Unsupported value"),
        "{refused:#}"
    );

    // Cluster-scoped twins.
    let crbs = crb_api(&env).await?;
    let crb_cases = fixtures::scheduling_crb_cases();
    for (name, placement) in &crb_cases {
        for (sched, suffix) in [("default-scheduler", "rs"), ("go-scheduler", "go")] {
            env.apply_json(&cluster_binding(
                &format!("{name}-{suffix}"),
                placement.clone(),
                sched,
            ))
            .await?;
        }
    }
    let mut diffs: Vec<String> = Vec::new();
    for (name, _) in &crb_cases {
        wait_scheduled(&crbs, &format!("{name}-rs"))
            .await
            .map_err(|e| ours.explain(e))?;
        wait_scheduled(&crbs, &format!("{name}-go")).await?;
        let (o, g) = (format!("{name}-rs"), format!("{name}-go"));
        diffs.extend(settled_differences(&crbs, name, &o, &g, SETTLE).await?);
    }
    for name in accepted {
        wait_scheduled(&rbs, &format!("{name}-rs"))
            .await
            .map_err(|e| ours.explain(e))?;
        wait_scheduled(&rbs, &format!("{name}-go"))
            .await
            .map_err(|e| anyhow::anyhow!("{e:#}\n{}", go.log_tail(40)))?;
        let (o, g) = (format!("{name}-rs"), format!("{name}-go"));
        diffs.extend(settled_differences(&rbs, name, &o, &g, SETTLE).await?);
    }
    // The Events on the bindings and on their templates read the same.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let norm = |events: Vec<(String, String, String)>,
                twin: &str,
                name: &str|
     -> Vec<(String, String, String)> {
        events
            .into_iter()
            .map(|(t, r, m)| (t, r, fit_insensitive(&m.replace(twin, name))))
            .collect()
    };
    for name in ["dup", "nofit", "failover", "toomany"] {
        for kind in ["ResourceBinding", "Deployment"] {
            let (rs, go_name) = (format!("{name}-rs"), format!("{name}-go"));
            let o = norm(events_about(&env, "default", kind, &rs).await?, &rs, name);
            let g = norm(
                events_about(&env, "default", kind, &go_name).await?,
                &go_name,
                name,
            );
            if o != g || o.is_empty() {
                diffs.push(format!(
                    "{name}: events on the {kind}\n  ours: {o:?}\n  go:   {g:?}"
                ));
            }
        }
    }
    for kind in ["ClusterResourceBinding", "Namespace"] {
        let o = norm(
            events_about(&env, "default", kind, "crb-dup-rs").await?,
            "crb-dup-rs",
            "crb-dup",
        );
        let g = norm(
            events_about(&env, "default", kind, "crb-dup-go").await?,
            "crb-dup-go",
            "crb-dup",
        );
        if o != g || o.is_empty() {
            diffs.push(format!(
                "crb-dup: events on the {kind}\n  ours: {o:?}\n  go:   {g:?}"
            ));
        }
    }

    // Scale and placement changes.
    for suffix in ["rs", "go"] {
        patch_spec(&rbs, &format!("static-{suffix}"), json!({"replicas": 9})).await?;
        patch_spec(&rbs, &format!("aggregated-{suffix}"), json!({"placement": {
            "clusterAffinity": {"clusterNames": ["edge-3", "edge-1"]},
            "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}})).await?;
    }
    for name in ["static", "aggregated"] {
        wait_generation_observed(&rbs, &format!("{name}-rs"))
            .await
            .map_err(|e| ours.explain(e))?;
        wait_generation_observed(&rbs, &format!("{name}-go")).await?;
        let (o, g) = (format!("{name}-rs"), format!("{name}-go"));
        let case = format!("{name} (changed)");
        diffs.extend(settled_differences(&rbs, &case, &o, &g, SETTLE).await?);
    }

    // Delete edge-3 first, then taint edge-2 (a spec change, which requeues the bindings
    // whose affinity matches it). Neither scheduler requeues anything on a cluster delete (the
    // reference has no such trigger), so the taint must come second: both schedulers then see
    // it after the deletion in their Cluster watch, and reschedule against the same clusters.
    // In the other order the outcome depends on whether a scheduler processed the taint before
    // or after the deletion reached its cache.
    let clusters = cluster_api(&env).await?;
    clusters.delete("edge-3", &Default::default()).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let taint = json!({"spec": {"taints": [{"key": "maintenance", "effect": "NoExecute"}]}});
    clusters
        .patch(
            "edge-2",
            &Default::default(),
            &kube::api::Patch::Merge(&taint),
        )
        .await?;
    tokio::time::sleep(Duration::from_secs(5)).await;
    for name in ["dup", "static", "aggregated"] {
        let deadline = tokio::time::Instant::now() + SETTLE;
        loop {
            let o = rbs.get(&format!("{name}-rs")).await?;
            let g = rbs.get(&format!("{name}-go")).await?;
            if clusters_of(&o) == clusters_of(&g) {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                diffs.push(format!(
                    "{name} after taint/delete\n  ours: {}\n  go:   {}",
                    clusters_of(&o),
                    clusters_of(&g)
                ));
                break;
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }
    // The twins share spec.resource.uid (see common::binding), so ties between equal static
    // weights break the same way on both sides: every difference is a failure.
    let unexpected = diffs;
    assert!(
        unexpected.is_empty(),
        "differences from the Go scheduler:\n{}",
        unexpected.join("\n")
    );
    // Nothing ours asked for was refused (it is the only client of this process that counts).
    assert_eq!(
        component_base::forbidden::forbidden_requests().total(),
        0,
        "requests refused with the chart's RBAC (see the warnings above)"
    );

    drop(ours);
    drop(go);
    env.stop();
    Ok(())
}
