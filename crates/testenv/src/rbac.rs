//! Least privilege for real: an identity on the local Karmada API server that holds exactly
//! the RBAC rules the project's chart renders, and nothing else.
//!
//! The rules come from the chart itself, rendered by the real `helm` ([`chart_rbac`]), so the
//! tests and the chart share one source of truth; the identity is the chart's own
//! ServiceAccount with a real token from the TokenRequest API (`kubectl create token`, which
//! the API server serves with the `--service-account-*` flags of `hack/local-up.sh`), not the
//! admin certificate of the environment's kubeconfig.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, anyhow, bail};
use serde_json::{Value, json};

use crate::TestEnv;

/// Which daemon's RBAC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Daemon {
    Scheduler,
    Descheduler,
}

/// The kinds of the chart's identity and its permissions.
const RBAC_KINDS: &[&str] = &[
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
];

/// The ServiceAccount and RBAC objects the chart renders for `daemon` (as JSON values), for
/// release `release` in `karmada-system`, with `sets` on top (the scheduler's estimator
/// discovery Role is rendered: `scheduler.enableSchedulerEstimator=true`).
pub fn chart_rbac(helm: &Path, daemon: Daemon, release: &str, sets: &[&str]) -> Vec<Value> {
    let (mut all_sets, templates): (Vec<&str>, &[&str]) = match daemon {
        Daemon::Scheduler => (
            vec!["scheduler.enableSchedulerEstimator=true"],
            &["templates/serviceaccount.yaml", "templates/rbac.yaml"],
        ),
        Daemon::Descheduler => (
            vec!["descheduler.enabled=true"],
            &[
                "templates/descheduler-serviceaccount.yaml",
                "templates/descheduler-rbac.yaml",
            ],
        ),
    };
    all_sets.extend_from_slice(sets);
    crate::helm::render_chart_only(
        helm,
        &crate::helm::chart(),
        release,
        "karmada-system",
        &all_sets,
        templates,
    )
    .into_iter()
    .map(|doc| serde_json::to_value(doc).expect("YAML as JSON"))
    .filter(|doc| {
        doc["kind"]
            .as_str()
            .is_some_and(|k| RBAC_KINDS.contains(&k))
    })
    .collect()
}

/// Takes `verb` away from every rule of the Roles and ClusterRoles in `docs` that grants it on
/// `resource` in API `group`; fails when none did (a test taking away a permission that was
/// never there would prove nothing).
pub fn without_verb(
    docs: &mut [Value],
    group: &str,
    resource: &str,
    verb: &str,
) -> anyhow::Result<()> {
    let mut taken = 0;
    for doc in docs.iter_mut() {
        if !matches!(doc["kind"].as_str(), Some("Role" | "ClusterRole")) {
            continue;
        }
        let Some(rules) = doc.get_mut("rules").and_then(Value::as_array_mut) else {
            continue;
        };
        for rule in rules.iter_mut() {
            let has = |field: &str, want: &str| {
                rule[field]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|v| v == want))
            };
            if !(has("apiGroups", group) && has("resources", resource) && has("verbs", verb)) {
                continue;
            }
            if let Some(verbs) = rule["verbs"].as_array_mut() {
                verbs.retain(|v| v != verb);
                taken += 1;
            }
        }
        // A rule left without verbs is invalid: it goes.
        rules.retain(|r| r["verbs"].as_array().is_none_or(|v| !v.is_empty()));
    }
    if taken == 0 {
        bail!("no rule of the chart grants {verb} on {resource:?} in API group {group:?}");
    }
    Ok(())
}

/// The chart's identity on the environment's Karmada API server.
#[derive(Clone, Debug)]
pub struct Identity {
    /// A kubeconfig with the ServiceAccount's token (no client certificate).
    pub kubeconfig: PathBuf,
    /// The user name the API server knows it by: `system:serviceaccount:<ns>:<name>`.
    pub user: String,
}

/// Applies `docs` (from [`chart_rbac`]) with the admin identity, asks the TokenRequest API for
/// a token of the ServiceAccount among them, and writes a kubeconfig with that token only, to
/// `<state dir>/<ServiceAccount name>.kubeconfig`.
pub async fn service_account_kubeconfig(env: &TestEnv, docs: &[Value]) -> anyhow::Result<Identity> {
    let sa = docs
        .iter()
        .find(|d| d["kind"] == "ServiceAccount")
        .ok_or_else(|| anyhow!("the rendered RBAC has no ServiceAccount"))?;
    let name = sa["metadata"]["name"]
        .as_str()
        .ok_or_else(|| anyhow!("ServiceAccount without a name"))?
        .to_string();
    let namespace = sa["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default")
        .to_string();
    let client = env.client().await?;
    for doc in docs {
        crate::apply_value(&client, doc).await?;
    }
    let out = env
        .kubectl()
        .args(["create", "token", &name, "-n", &namespace, "--duration=2h"])
        .output()
        .context("kubectl create token")?;
    if !out.status.success() {
        bail!(
            "kubectl create token {name} -n {namespace} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let token = String::from_utf8(out.stdout)?.trim().to_string();
    if token.is_empty() {
        bail!("kubectl create token {name} -n {namespace} printed no token");
    }
    // The admin kubeconfig's cluster (server and CA), with the token as the only credential.
    let admin: Value = serde_yaml::from_str(&std::fs::read_to_string(env.kubeconfig())?)?;
    let admin = serde_json::to_value(admin)?;
    let cluster = admin["clusters"][0]["cluster"].clone();
    if cluster.is_null() {
        bail!("{} has no cluster", env.kubeconfig().display());
    }
    let kubeconfig = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "karmada", "cluster": cluster}],
        "users": [{"name": name, "user": {"token": token}}],
        "contexts": [{"name": name, "context": {"cluster": "karmada", "user": name}}],
        "current-context": name,
    });
    let path = env.state_dir().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, serde_yaml::to_string(&kubeconfig)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(Identity {
        kubeconfig: path,
        user: format!("system:serviceaccount:{namespace}:{name}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_verb_is_taken_from_the_matching_rules_only() {
        let mut docs = vec![
            json!({"kind": "ClusterRole", "rules": [
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
                {"apiGroups": ["x.io"], "resources": ["events"], "verbs": ["create"]}]}),
            json!({"kind": "Role", "rules": [
                {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["list"]}]}),
            json!({"kind": "RoleBinding", "rules": [
                {"apiGroups": [""], "resources": ["events"], "verbs": ["create"]}]}),
        ];
        without_verb(&mut docs, "", "events", "create").unwrap();
        assert_eq!(docs[0]["rules"][0]["verbs"], json!(["patch"]));
        assert_eq!(docs[0]["rules"][1]["verbs"], json!(["create"]));
        assert_eq!(docs[2]["rules"][0]["verbs"], json!(["create"]));
        // A rule left without verbs goes.
        without_verb(&mut docs, "discovery.k8s.io", "endpointslices", "list").unwrap();
        assert_eq!(docs[1]["rules"], json!([]));
        // Nothing to take: an error, not a test that proves nothing.
        let e = without_verb(&mut docs, "", "events", "update").unwrap_err();
        assert!(e.to_string().contains("update"), "{e}");
    }
}
