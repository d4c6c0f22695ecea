//! `TaintToleration`: `NoSchedule`/`NoExecute` taints must be tolerated by the placement.

use k8s_openapi::api::core::v1::{Taint, Toleration};

use crate::framework::{FilterContext, FilterPlugin, PluginResult};

/// Registry name.
pub const NAME: &str = "TaintToleration";

/// Filter on `spec.taints` against `placement.clusterTolerations`; clusters already in
/// `spec.clusters` always pass.
#[derive(Clone, Copy, Debug, Default)]
pub struct TaintToleration;

in_tree_plugin!(TaintToleration: filter);

impl FilterPlugin for TaintToleration {
    fn filter(&self, ctx: &FilterContext<'_>) -> PluginResult {
        if ctx.targets.contains(ctx.cluster.name()) {
            return PluginResult::success();
        }
        if ctx.prepared.is_some_and(|p| !p.has_hard_taint()) {
            // Only `NoSchedule` and `NoExecute` taints can be untolerated.
            return PluginResult::success();
        }
        let tolerations = &ctx.placement().cluster_tolerations;
        let untolerated = ctx.cluster.spec.taints.iter().find(|t| {
            matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
                && !tolerations.iter().any(|tol| tolerates(tol, t))
        });
        match untolerated {
            None => PluginResult::success(),
            Some(t) => PluginResult::unschedulable(format!(
                "cluster(s) had untolerated taint {{{}}}",
                taint_to_string(t)
            )),
        }
    }
}

/// `Toleration.ToleratesTaint` with comparison operators disabled (the reference passes
/// `false`): `Lt`/`Gt` and unknown operators never tolerate; `tolerationSeconds` is ignored.
pub fn tolerates(tol: &Toleration, taint: &Taint) -> bool {
    let effect = tol.effect.as_deref().unwrap_or("");
    if !effect.is_empty() && effect != taint.effect {
        return false;
    }
    let key = tol.key.as_deref().unwrap_or("");
    if !key.is_empty() && key != taint.key {
        return false;
    }
    match tol.operator.as_deref().unwrap_or("") {
        "" | "Equal" => tol.value.as_deref().unwrap_or("") == taint.value.as_deref().unwrap_or(""),
        "Exists" => true,
        _ => false,
    }
}

/// `Taint.ToString`: `key=value:effect`, `key:effect`, `key=value:` or `key`.
pub fn taint_to_string(t: &Taint) -> String {
    let value = t.value.as_deref().unwrap_or("");
    match (t.effect.is_empty(), value.is_empty()) {
        (true, true) => t.key.clone(),
        (true, false) => format!("{}={}:", t.key, value),
        (false, true) => format!("{}:{}", t.key, t.effect),
        (false, false) => format!("{}={}:{}", t.key, value, t.effect),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::framework::Code;
    use crate::plugins::testutil::*;
    use karmada_api::policy::Placement;
    use karmada_api::work::ResourceBindingSpec;

    fn taint(key: &str, value: &str, effect: &str) -> Taint {
        Taint {
            key: key.into(),
            value: (!value.is_empty()).then(|| value.into()),
            effect: effect.into(),
            time_added: None,
        }
    }

    fn tol(key: &str, op: &str, value: &str, effect: &str) -> Toleration {
        Toleration {
            key: (!key.is_empty()).then(|| key.into()),
            operator: (!op.is_empty()).then(|| op.into()),
            value: (!value.is_empty()).then(|| value.into()),
            effect: (!effect.is_empty()).then(|| effect.into()),
            toleration_seconds: None,
        }
    }

    fn tainted(taints: Vec<Taint>) -> karmada_api::cluster::Cluster {
        let mut c = cluster("cluster1");
        c.spec.taints = taints;
        c
    }

    fn with_tolerations(tols: Vec<Toleration>) -> ResourceBindingSpec {
        ResourceBindingSpec {
            placement: Some(Placement {
                cluster_tolerations: tols,
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    // karmada v1.18.2 plugins/tainttoleration/taint_toleration_test.go: TestTaintToleration_Filter.
    #[test]
    fn filter() {
        // cluster already in target clusters (no placement at all)
        let spec = ResourceBindingSpec {
            clusters: targets(&["cluster1"]),
            ..Default::default()
        };
        let c = tainted(vec![taint("key1", "value1", "NoSchedule")]);
        assert_eq!(run(&TaintToleration, &spec, &c).code(), Code::Success);
        // no taints
        assert_eq!(
            run(&TaintToleration, &with_tolerations(vec![]), &cluster("x")).code(),
            Code::Success
        );
        // tolerated taint
        let spec = with_tolerations(vec![tol("key1", "Equal", "value1", "NoSchedule")]);
        assert_eq!(run(&TaintToleration, &spec, &c).code(), Code::Success);
        // untolerated taint
        let r = run(&TaintToleration, &with_tolerations(vec![]), &c);
        assert_eq!(r.code(), Code::Unschedulable);
        assert_eq!(
            r.as_error().unwrap(),
            "cluster(s) had untolerated taint {key1=value1:NoSchedule}"
        );
    }

    #[test]
    fn taint_strings_and_effects() {
        assert_eq!(
            taint_to_string(&taint("k", "v", "NoSchedule")),
            "k=v:NoSchedule"
        );
        assert_eq!(taint_to_string(&taint("k", "", "NoExecute")), "k:NoExecute");
        assert_eq!(taint_to_string(&taint("k", "v", "")), "k=v:");
        assert_eq!(taint_to_string(&taint("k", "", "")), "k");

        // PreferNoSchedule is ignored; the first untolerated hard taint is reported.
        let c = tainted(vec![
            taint("soft", "", "PreferNoSchedule"),
            taint("a", "", "NoExecute"),
            taint("b", "x", "NoSchedule"),
        ]);
        let r = run(
            &TaintToleration,
            &with_tolerations(vec![tol("a", "Exists", "", "")]),
            &c,
        );
        assert_eq!(
            r.reasons(),
            ["cluster(s) had untolerated taint {b=x:NoSchedule}"]
        );
        let r = run(&TaintToleration, &with_tolerations(vec![]), &c);
        assert_eq!(
            r.reasons(),
            ["cluster(s) had untolerated taint {a:NoExecute}"]
        );
        // An empty key with Exists tolerates everything; effect must still match when given.
        let spec = with_tolerations(vec![tol("", "Exists", "", "NoSchedule")]);
        assert_eq!(
            run(&TaintToleration, &spec, &c).reasons(),
            ["cluster(s) had untolerated taint {a:NoExecute}"]
        );
        assert!(
            run(
                &TaintToleration,
                &with_tolerations(vec![tol("", "Exists", "", "")]),
                &c
            )
            .is_success()
        );
    }

    #[test]
    fn operators() {
        let t = taint("k", "5", "NoSchedule");
        assert!(tolerates(&tol("k", "", "5", ""), &t));
        assert!(tolerates(&tol("k", "Equal", "5", "NoSchedule"), &t));
        assert!(!tolerates(&tol("k", "Equal", "6", ""), &t));
        assert!(!tolerates(&tol("k", "Equal", "5", "NoExecute"), &t));
        assert!(!tolerates(&tol("k", "Gt", "1", ""), &t));
        assert!(!tolerates(&tol("k", "Lt", "9", ""), &t));
        assert!(!tolerates(&tol("k", "Bogus", "5", ""), &t));
        assert!(tolerates(&tol("k", "Exists", "", ""), &t));
        assert!(!tolerates(&tol("other", "Exists", "", ""), &t));
        // Empty key with Equal compares values only.
        assert!(tolerates(&tol("", "Equal", "5", ""), &t));
    }
}
