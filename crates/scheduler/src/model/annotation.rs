//! The `policy.karmada.io/applied-placement` annotation, byte for byte as the reference writes it.
//!
//! The reference stores `json.Marshal(placement)`: keys in Go struct declaration order, map keys
//! sorted, empty optional fields omitted, and `<`, `>`, `&` (plus U+2028/U+2029) escaped as
//! `\u003c`-style sequences. Readers decode it, so only byte-exactness against annotations a Go
//! scheduler wrote matters: equal bytes mean no needless patch when a fleet migrates.
//!
//! The encoder walks the serde value of [`Placement`] with a table of Go key orders per type.
//! Keys that no Go type of v1.18.2 declares (kept by `karmada-api` in `extra` maps) follow the
//! declared ones in sorted order, so nothing the binding carries is lost.

use karmada_api::Placement;
use serde_json::Value;

/// Shapes of the Go types reachable from `Placement`, each with its JSON key order.
#[derive(Clone, Copy)]
enum Shape {
    Placement,
    ClusterAffinity,
    ClusterAffinityTerm,
    OverflowAffinity,
    LabelSelector,
    Requirement,
    FieldSelector,
    Toleration,
    SpreadConstraint,
    ReplicaScheduling,
    ClusterPreferences,
    StaticWeight,
    WorkloadAffinity,
    WorkloadAffinityTerm,
    /// A Go map: keys sorted.
    Map,
    /// Anything else: keys sorted (Go would use its own struct order; none is reachable).
    Opaque,
}

const AFFINITY_KEYS: &[&str] = &["labelSelector", "fieldSelector", "clusterNames", "exclude"];

impl Shape {
    fn keys(self) -> &'static [&'static str] {
        match self {
            Shape::Placement => &[
                "clusterAffinity",
                "clusterAffinities",
                "clusterTolerations",
                "spreadConstraints",
                "replicaScheduling",
                "workloadAffinity",
            ],
            Shape::ClusterAffinity => AFFINITY_KEYS,
            Shape::ClusterAffinityTerm => &[
                "affinityName",
                "labelSelector",
                "fieldSelector",
                "clusterNames",
                "exclude",
                "overflowAffinities",
            ],
            Shape::OverflowAffinity => &[
                "affinityName",
                "labelSelector",
                "fieldSelector",
                "clusterNames",
                "exclude",
            ],
            Shape::LabelSelector => &["matchLabels", "matchExpressions"],
            Shape::Requirement => &["key", "operator", "values"],
            Shape::FieldSelector => &["matchExpressions"],
            Shape::Toleration => &["key", "operator", "value", "effect", "tolerationSeconds"],
            Shape::SpreadConstraint => {
                &["spreadByField", "spreadByLabel", "maxGroups", "minGroups"]
            }
            Shape::ReplicaScheduling => &[
                "replicaSchedulingType",
                "replicaDivisionPreference",
                "weightPreference",
            ],
            Shape::ClusterPreferences => &["staticWeightList", "dynamicWeight"],
            Shape::StaticWeight => &["targetCluster", "weight"],
            Shape::WorkloadAffinity => &["affinity", "antiAffinity"],
            Shape::WorkloadAffinityTerm => &["groupByLabelKey"],
            Shape::Map | Shape::Opaque => &[],
        }
    }

    /// The shape of the value under `key` (arrays: of their elements).
    fn child(self, key: &str) -> Shape {
        match (self, key) {
            (Shape::Placement, "clusterAffinity") => Shape::ClusterAffinity,
            (Shape::Placement, "clusterAffinities") => Shape::ClusterAffinityTerm,
            (Shape::Placement, "clusterTolerations") => Shape::Toleration,
            (Shape::Placement, "spreadConstraints") => Shape::SpreadConstraint,
            (Shape::Placement, "replicaScheduling") => Shape::ReplicaScheduling,
            (Shape::Placement, "workloadAffinity") => Shape::WorkloadAffinity,
            (
                Shape::ClusterAffinity | Shape::ClusterAffinityTerm | Shape::OverflowAffinity,
                "labelSelector",
            ) => Shape::LabelSelector,
            (
                Shape::ClusterAffinity | Shape::ClusterAffinityTerm | Shape::OverflowAffinity,
                "fieldSelector",
            ) => Shape::FieldSelector,
            (Shape::ClusterAffinityTerm, "overflowAffinities") => Shape::OverflowAffinity,
            (Shape::LabelSelector, "matchLabels") => Shape::Map,
            (Shape::LabelSelector | Shape::FieldSelector, "matchExpressions") => Shape::Requirement,
            (Shape::ReplicaScheduling, "weightPreference") => Shape::ClusterPreferences,
            (Shape::ClusterPreferences, "staticWeightList") => Shape::StaticWeight,
            (Shape::StaticWeight, "targetCluster") => Shape::ClusterAffinity,
            (Shape::WorkloadAffinity, _) => Shape::WorkloadAffinityTerm,
            (Shape::Map, _) => Shape::Opaque,
            _ => Shape::Opaque,
        }
    }
}

fn write_value(out: &mut String, v: &Value, shape: Shape) {
    match v {
        Value::Object(map) => {
            out.push('{');
            let mut first = true;
            let mut emit = |out: &mut String, k: &str, val: &Value| {
                if !first {
                    out.push(',');
                }
                first = false;
                write_string(out, k);
                out.push(':');
                write_value(out, val, shape.child(k));
            };
            let declared = shape.keys();
            for k in declared {
                if let Some(val) = map.get(*k) {
                    emit(out, k, val);
                }
            }
            let mut rest: Vec<&String> = map
                .keys()
                .filter(|k| !declared.contains(&k.as_str()))
                .collect();
            rest.sort();
            for k in rest {
                emit(out, k, &map[k]);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, shape);
            }
            out.push(']');
        }
        Value::String(s) => write_string(out, s),
        other => out.push_str(&other.to_string()),
    }
}

/// A JSON string as Go's encoder writes it (HTML-safe escaping).
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The annotation value for this placement, as the reference would write it.
pub fn encode_placement(placement: &Placement) -> String {
    let value = serde_json::to_value(placement).unwrap_or(Value::Null);
    let mut out = String::new();
    write_value(&mut out, &value, Shape::Placement);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn placement(v: Value) -> Placement {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn spec_example_bytes() {
        let p = placement(json!({
            "replicaScheduling": {"replicaDivisionPreference": "Weighted", "replicaSchedulingType": "Divided"},
            "clusterAffinity": {"clusterNames": ["m1", "m2"]}
        }));
        assert_eq!(
            encode_placement(&p),
            r#"{"clusterAffinity":{"clusterNames":["m1","m2"]},"replicaScheduling":{"replicaSchedulingType":"Divided","replicaDivisionPreference":"Weighted"}}"#
        );
    }

    #[test]
    fn go_key_orders_and_html_escaping() {
        let p = placement(json!({
            "clusterAffinity": {
                "exclude": ["x"],
                "labelSelector": {
                    "matchExpressions": [{"values": ["a<b"], "operator": "In", "key": "k&"}],
                    "matchLabels": {"z": "1", "a": ">"}
                },
                "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["r"]}]}
            },
            "clusterTolerations": [{"effect": "NoSchedule", "key": "k", "operator": "Equal", "value": "v", "tolerationSeconds": 5}],
            "spreadConstraints": [{"minGroups": 1, "maxGroups": 2, "spreadByField": "cluster"}],
            "replicaScheduling": {
                "weightPreference": {"staticWeightList": [{"weight": 1, "targetCluster": {"clusterNames": ["m1"]}}]},
                "replicaSchedulingType": "Divided"
            }
        }));
        assert_eq!(
            encode_placement(&p),
            concat!(
                r#"{"clusterAffinity":{"labelSelector":{"matchLabels":{"a":"\u003e","z":"1"},"#,
                r#""matchExpressions":[{"key":"k\u0026","operator":"In","values":["a\u003cb"]}]},"#,
                r#""fieldSelector":{"matchExpressions":[{"key":"region","operator":"In","values":["r"]}]},"#,
                r#""exclude":["x"]},"#,
                r#""clusterTolerations":[{"key":"k","operator":"Equal","value":"v","effect":"NoSchedule","tolerationSeconds":5}],"#,
                r#""spreadConstraints":[{"spreadByField":"cluster","maxGroups":2,"minGroups":1}],"#,
                r#""replicaScheduling":{"replicaSchedulingType":"Divided","weightPreference":{"staticWeightList":[{"targetCluster":{"clusterNames":["m1"]},"weight":1}]}}}"#
            )
        );
    }

    #[test]
    fn affinity_terms_put_the_name_first() {
        let p = placement(json!({
            "clusterAffinities": [
                {"clusterNames": ["a"], "affinityName": "primary",
                 "overflowAffinities": [{"clusterNames": ["b"], "affinityName": "spill"}]},
                {"affinityName": "backup", "clusterNames": ["c"]}
            ]
        }));
        assert_eq!(
            encode_placement(&p),
            r#"{"clusterAffinities":[{"affinityName":"primary","clusterNames":["a"],"overflowAffinities":[{"affinityName":"spill","clusterNames":["b"]}]},{"affinityName":"backup","clusterNames":["c"]}]}"#
        );
    }

    #[test]
    fn round_trips_through_decode() {
        let p = placement(json!({
            "clusterAffinity": {"clusterNames": ["m1"]},
            "spreadConstraints": [{"spreadByField": "region", "minGroups": 1}]
        }));
        let back: Placement = serde_json::from_str(&encode_placement(&p)).unwrap();
        assert_eq!(back, p);
    }
}
