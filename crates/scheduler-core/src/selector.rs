//! Whether a cluster belongs to a [`ClusterAffinity`].
//!
//! Used by the ClusterAffinity filter, overflow ordering and static weights, so the three
//! agree on one definition. Label and field selectors follow the Kubernetes semantics the
//! reference uses (`metav1.LabelSelectorAsSelector`, the node-selector conversion), including
//! its validation: a selector with an invalid key, value or operator matches nothing.

use std::collections::{BTreeMap, HashSet};

use k8s_openapi::api::core::v1::NodeSelectorRequirement;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use karmada_api::cluster::Cluster;
use karmada_api::policy::ClusterAffinity;

/// The field-selector key matched against `spec.zones`.
pub const ZONE_FIELD: &str = "zone";
/// The field-selector key matched against `spec.provider`.
pub const PROVIDER_FIELD: &str = "provider";
/// The field-selector key matched against `spec.region`.
pub const REGION_FIELD: &str = "region";

/// `ClusterMatches`: exclusions first, then label selector, field selector and names.
pub fn cluster_matches(cluster: &Cluster, affinity: &ClusterAffinity) -> bool {
    AffinityMatcher::new(affinity).matches(cluster)
}

/// A [`ClusterAffinity`] made ready to test clusters against: whether its selectors are
/// valid depends on the affinity alone, so it is decided once here instead of per cluster.
/// [`AffinityMatcher::matches`] gives exactly [`cluster_matches`]'s answer.
#[derive(Clone, Debug)]
pub struct AffinityMatcher<'a> {
    affinity: &'a ClusterAffinity,
    /// `None` without a label selector; `Some(false)` when it is invalid (matches nothing).
    labels_valid: Option<bool>,
    /// Whether the field selector has requirements other than `zone`, and whether those are
    /// all valid.
    other_fields: bool,
    other_fields_valid: bool,
    exclude: NameSet<'a>,
    names: NameSet<'a>,
}

/// A list of cluster names, hashed when long and the matcher is reused.
#[derive(Clone, Debug)]
enum NameSet<'a> {
    List(&'a [String]),
    Hashed(HashSet<&'a str>),
}

impl NameSet<'_> {
    fn contains(&self, name: &str) -> bool {
        match self {
            Self::List(l) => l.iter().any(|n| n == name),
            Self::Hashed(h) => h.contains(name),
        }
    }
}

/// Lists longer than this are hashed by [`AffinityMatcher::indexed`].
const SCAN_LIMIT: usize = 16;

impl<'a> AffinityMatcher<'a> {
    /// Validate the selectors of `affinity` (allocation free).
    pub fn new(affinity: &'a ClusterAffinity) -> Self {
        let labels_valid = affinity.label_selector.as_ref().map(label_selector_valid);
        let others = || {
            affinity
                .field_selector
                .iter()
                .flat_map(|f| f.match_expressions.iter())
                .filter(|e| e.key != ZONE_FIELD)
        };
        Self {
            affinity,
            labels_valid,
            other_fields: others().next().is_some(),
            other_fields_valid: others().all(|e| {
                field_requirement(e)
                    .and_then(Requirement::validated)
                    .is_some()
            }),
            exclude: NameSet::List(&affinity.exclude_clusters),
            names: NameSet::List(&affinity.cluster_names),
        }
    }

    /// Also hash long name lists, for a matcher that tests many clusters.
    pub fn indexed(mut self) -> Self {
        for (set, list) in [
            (&mut self.exclude, &self.affinity.exclude_clusters),
            (&mut self.names, &self.affinity.cluster_names),
        ] {
            if list.len() > SCAN_LIMIT {
                *set = NameSet::Hashed(list.iter().map(String::as_str).collect());
            }
        }
        self
    }

    /// The affinity this matcher tests.
    pub fn affinity(&self) -> &'a ClusterAffinity {
        self.affinity
    }

    /// Whether the only constraint is a list of names (no exclusions, no selectors): such an
    /// affinity selects exactly the clusters it names.
    pub fn names_only(&self) -> bool {
        let a = self.affinity;
        a.label_selector.is_none()
            && a.field_selector.is_none()
            && a.exclude_clusters.is_empty()
            && !a.cluster_names.is_empty()
    }

    /// `ClusterMatches` for this cluster.
    pub fn matches(&self, cluster: &Cluster) -> bool {
        let name = cluster.name();
        if !self.affinity.exclude_clusters.is_empty() && self.exclude.contains(name) {
            return false;
        }
        match (self.labels_valid, &self.affinity.label_selector) {
            (Some(false), _) => return false,
            (Some(true), Some(selector)) => {
                let labels = cluster.metadata.labels.as_ref();
                let all = label_requirements(selector)
                    .flatten()
                    .all(|r| r.matches(labels.and_then(|l| l.get(r.key)).map(String::as_str)));
                if !all {
                    return false;
                }
            }
            _ => {}
        }
        if let Some(fields) = &self.affinity.field_selector {
            let zones_ok = fields
                .match_expressions
                .iter()
                .filter(|e| e.key == ZONE_FIELD)
                .all(|e| match_zones(e, &cluster.spec.zones));
            if !zones_ok {
                return false;
            }
            if self.other_fields {
                if !self.other_fields_valid {
                    return false;
                }
                let all = fields
                    .match_expressions
                    .iter()
                    .filter(|e| e.key != ZONE_FIELD)
                    .filter_map(field_requirement)
                    .all(|r| r.matches(cluster_field(cluster, r.key)));
                if !all {
                    return false;
                }
            }
        }
        self.affinity.cluster_names.is_empty() || self.names.contains(name)
    }
}

/// The cluster fields a field selector sees: `provider` and `region` when set.
pub fn cluster_fields(cluster: &Cluster) -> BTreeMap<String, String> {
    let mut m = BTreeMap::new();
    if !cluster.spec.provider.is_empty() {
        m.insert(PROVIDER_FIELD.to_string(), cluster.spec.provider.clone());
    }
    if !cluster.spec.region.is_empty() {
        m.insert(REGION_FIELD.to_string(), cluster.spec.region.clone());
    }
    m
}

/// One entry of [`cluster_fields`], without building the map.
fn cluster_field<'c>(cluster: &'c Cluster, key: &str) -> Option<&'c str> {
    let v = match key {
        PROVIDER_FIELD => &cluster.spec.provider,
        REGION_FIELD => &cluster.spec.region,
        _ => return None,
    };
    (!v.is_empty()).then_some(v.as_str())
}

/// `matchZones`: set semantics over `spec.zones`; unknown operators never match.
pub fn match_zones(e: &NodeSelectorRequirement, zones: &[String]) -> bool {
    let values = e.values.as_deref().unwrap_or_default();
    match e.operator.as_str() {
        "In" => zones.iter().any(|z| values.contains(z)),
        "NotIn" => !zones.iter().any(|z| values.contains(z)),
        "Exists" => !zones.is_empty(),
        "DoesNotExist" => zones.is_empty(),
        _ => false,
    }
}

/// Requirement operators after conversion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Clone, Copy)]
struct Requirement<'a> {
    key: &'a str,
    op: Op,
    values: &'a [String],
}

impl Requirement<'_> {
    /// `labels.NewRequirement` validation: `None` when the requirement is invalid.
    fn validated(self) -> Option<Self> {
        if !is_label_key(self.key) {
            return None;
        }
        let ok = match self.op {
            Op::In | Op::NotIn => !self.values.is_empty(),
            Op::Exists | Op::DoesNotExist => self.values.is_empty(),
            Op::Gt | Op::Lt => {
                self.values.len() == 1 && self.values.iter().all(|v| v.parse::<i64>().is_ok())
            }
        };
        (ok && self.values.iter().all(|v| is_label_value(v))).then_some(self)
    }

    /// Whether a label (or field) whose value is `val` (`None`: absent) satisfies this.
    fn matches(&self, val: Option<&str>) -> bool {
        match self.op {
            Op::In => val.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Op::NotIn => val.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Op::Exists => val.is_some(),
            Op::DoesNotExist => val.is_none(),
            Op::Gt | Op::Lt => {
                let Some(Ok(have)) = val.map(|v| v.parse::<i64>()) else {
                    return false;
                };
                let Some(Ok(want)) = self.values.first().map(|v| v.parse::<i64>()) else {
                    return false;
                };
                if self.op == Op::Gt {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

/// The requirements of a label selector in order (`matchLabels`, then `matchExpressions`);
/// `None` for an expression whose operator a label selector does not have.
fn label_requirements(
    selector: &LabelSelector,
) -> impl Iterator<Item = Option<Requirement<'_>>> + '_ {
    let labels = selector.match_labels.iter().flatten().map(|(k, v)| {
        Some(Requirement {
            key: k,
            op: Op::In,
            values: std::slice::from_ref(v),
        })
    });
    let exprs = selector.match_expressions.iter().flatten().map(|e| {
        let op = match e.operator.as_str() {
            "In" => Op::In,
            "NotIn" => Op::NotIn,
            "Exists" => Op::Exists,
            "DoesNotExist" => Op::DoesNotExist,
            _ => return None,
        };
        Some(Requirement {
            key: &e.key,
            op,
            values: e.values.as_deref().unwrap_or_default(),
        })
    });
    labels.chain(exprs)
}

/// Whether `LabelSelectorAsSelector` accepts the selector.
fn label_selector_valid(selector: &LabelSelector) -> bool {
    label_requirements(selector).all(|r| r.and_then(Requirement::validated).is_some())
}

/// A field-selector requirement with node-selector operators; `None` for an unknown one.
fn field_requirement(e: &NodeSelectorRequirement) -> Option<Requirement<'_>> {
    let op = match e.operator.as_str() {
        "In" => Op::In,
        "NotIn" => Op::NotIn,
        "Exists" => Op::Exists,
        "DoesNotExist" => Op::DoesNotExist,
        "Gt" => Op::Gt,
        "Lt" => Op::Lt,
        _ => return None,
    };
    Some(Requirement {
        key: &e.key,
        op,
        values: e.values.as_deref().unwrap_or_default(),
    })
}

/// A label key: optional DNS-subdomain prefix and `/`, then a name of at most 63 characters.
pub fn is_label_key(key: &str) -> bool {
    let name = match key.split_once('/') {
        None => key,
        Some((prefix, name)) => {
            if name.contains('/') || !is_dns1123_subdomain(prefix) {
                return false;
            }
            name
        }
    };
    !name.is_empty() && name.len() <= 63 && is_qualified_name_part(name)
}

/// A label value: empty, or at most 63 characters shaped like a key's name part.
pub fn is_label_value(v: &str) -> bool {
    v.len() <= 63 && (v.is_empty() || is_qualified_name_part(v))
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_alphanumeric();
    b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// Lowercase RFC 1123 subdomain of at most 253 characters.
fn is_dns1123_subdomain(s: &str) -> bool {
    let label = |l: &str| {
        let b = l.as_bytes();
        let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        b.first().is_some_and(edge)
            && b.last().is_some_and(edge)
            && b.iter().all(|c| edge(c) || *c == b'-')
    };
    !s.is_empty() && s.len() <= 253 && s.split('.').all(label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelectorRequirement, ObjectMeta};
    use karmada_api::cluster::ClusterSpec;
    use karmada_api::policy::FieldSelector;

    fn cluster() -> Cluster {
        let mut c = Cluster::new("cluster1", ClusterSpec::default());
        c.metadata = ObjectMeta {
            name: Some("cluster1".into()),
            labels: Some([("foo".to_string(), "bar".to_string())].into()),
            ..Default::default()
        };
        c.spec.zones = vec!["zone1".into(), "zone2".into(), "zone3".into()];
        c.spec.region = "region1".into();
        c.spec.provider = "provider1".into();
        c
    }

    fn req(key: &str, op: &str, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: Some(values.iter().map(|s| s.to_string()).collect()),
        }
    }

    /// A compact affinity: exclusions, names, one matchLabels pair, field requirements.
    fn aff(
        exclude: &[&str],
        names: &[&str],
        labels: Option<(&str, &str)>,
        fields: Vec<NodeSelectorRequirement>,
    ) -> ClusterAffinity {
        ClusterAffinity {
            exclude_clusters: exclude.iter().map(|s| s.to_string()).collect(),
            cluster_names: names.iter().map(|s| s.to_string()).collect(),
            label_selector: labels.map(|(k, v)| LabelSelector {
                match_labels: Some([(k.to_string(), v.to_string())].into()),
                match_expressions: None,
            }),
            field_selector: (!fields.is_empty()).then_some(FieldSelector {
                match_expressions: fields,
            }),
            ..Default::default()
        }
    }

    const ZONES: &[&str] = &["zone1", "zone2", "zone3"];

    /// The 38 cases of upstream `TestClusterMatches`, re-expressed.
    #[test]
    fn cluster_matches_upstream_table() {
        let c = cluster();
        let n = &["cluster1"][..];
        let fb = Some(("foo", "bar"));
        let cases: Vec<(&str, ClusterAffinity, bool)> = vec![
            ("excluded and names", aff(n, n, None, vec![]), false),
            (
                "excluded and label selector",
                aff(n, &[], fb, vec![]),
                false,
            ),
            (
                "excluded and field selector",
                aff(n, &[], None, vec![req("zone", "In", ZONES)]),
                false,
            ),
            ("names", aff(&[], n, None, vec![]), true),
            (
                "names not matched",
                aff(&[], &["cluster2"], None, vec![]),
                false,
            ),
            ("names and label selector", aff(&[], n, fb, vec![]), true),
            (
                "names and label not matched",
                aff(&[], n, Some(("foo", "unmatched")), vec![]),
                false,
            ),
            (
                "names and zone+region",
                aff(
                    &[],
                    n,
                    None,
                    vec![req("zone", "In", ZONES), req("region", "In", &["region1"])],
                ),
                true,
            ),
            (
                "names and provider",
                aff(&[], n, None, vec![req("provider", "In", &["provider1"])]),
                true,
            ),
            (
                "names and region",
                aff(&[], n, None, vec![req("region", "In", &["region1"])]),
                true,
            ),
            (
                "names and zone not in",
                aff(&[], n, None, vec![req("zone", "NotIn", ZONES)]),
                false,
            ),
            (
                "names and provider not in",
                aff(&[], n, None, vec![req("provider", "NotIn", &["provider1"])]),
                false,
            ),
            (
                "names and region not in",
                aff(&[], n, None, vec![req("region", "NotIn", &["region1"])]),
                false,
            ),
            (
                "label and zone",
                aff(&[], &[], fb, vec![req("zone", "In", ZONES)]),
                true,
            ),
            (
                "label and provider",
                aff(&[], &[], fb, vec![req("provider", "In", &["provider1"])]),
                true,
            ),
            (
                "label and region",
                aff(&[], &[], fb, vec![req("region", "In", &["region1"])]),
                true,
            ),
            (
                "label and zone not in",
                aff(&[], &[], fb, vec![req("zone", "NotIn", ZONES)]),
                false,
            ),
            (
                "label and provider not in",
                aff(&[], &[], fb, vec![req("provider", "NotIn", &["provider1"])]),
                false,
            ),
            (
                "label and region not in",
                aff(&[], &[], fb, vec![req("region", "NotIn", &["region1"])]),
                false,
            ),
            ("label selector", aff(&[], &[], fb, vec![]), true),
            (
                "label not matched",
                aff(&[], &[], Some(("foo", "unmatched")), vec![]),
                false,
            ),
            ("empty affinity", ClusterAffinity::default(), true),
            (
                "label selector error",
                aff(&[], &[], Some(("", "bar")), vec![]),
                false,
            ),
            (
                "field selector error",
                aff(
                    &[],
                    &[],
                    None,
                    vec![NodeSelectorRequirement {
                        key: "".into(),
                        ..Default::default()
                    }],
                ),
                false,
            ),
            (
                "zone matched",
                aff(&[], &[], None, vec![req("zone", "In", ZONES)]),
                true,
            ),
            (
                "zone partially matched",
                aff(&[], n, None, vec![req("zone", "NotIn", ZONES)]),
                false,
            ),
            (
                "zone subset",
                aff(&[], n, None, vec![req("zone", "In", &["zone2"])]),
                true,
            ),
            (
                "region matched",
                aff(&[], &[], None, vec![req("region", "In", &["region1"])]),
                true,
            ),
            (
                "region not in",
                aff(&[], n, None, vec![req("region", "NotIn", &["region1"])]),
                false,
            ),
            (
                "region other",
                aff(&[], n, None, vec![req("region", "In", &["region2"])]),
                false,
            ),
            (
                "provider matched",
                aff(&[], &[], None, vec![req("provider", "In", &["provider1"])]),
                true,
            ),
            (
                "provider not in",
                aff(
                    &[],
                    &[],
                    None,
                    vec![req("provider", "NotIn", &["provider1"])],
                ),
                false,
            ),
            (
                "provider other",
                aff(&[], &[], None, vec![req("provider", "In", &["provider2"])]),
                false,
            ),
            (
                "other key",
                aff(
                    &[],
                    &[],
                    None,
                    vec![req("metadata.name", "In", &["cluster1"])],
                ),
                false,
            ),
            (
                "zone, names, label",
                aff(&[], n, fb, vec![req("zone", "In", ZONES)]),
                true,
            ),
            (
                "zone, label, other names",
                aff(&[], &["cluster2"], fb, vec![req("zone", "In", ZONES)]),
                false,
            ),
            (
                "zone not in, names, label",
                aff(&[], n, fb, vec![req("zone", "NotIn", ZONES)]),
                false,
            ),
            (
                "zone, names, label not matched",
                aff(
                    &[],
                    n,
                    Some(("foo", "Unmatched")),
                    vec![req("zone", "In", ZONES)],
                ),
                false,
            ),
        ];
        assert_eq!(cases.len(), 38);
        for (name, a, want) in cases {
            assert_eq!(cluster_matches(&c, &a), want, "{name}");
            let m = AffinityMatcher::new(&a).indexed();
            assert_eq!(m.matches(&c), want, "{name} (matcher)");
        }
    }

    #[test]
    fn match_zones_upstream_table() {
        let z = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let none: &[&str] = &[];
        let cases = [
            (req("zone", "In", &["foo"]), z(none), false),
            (req("zone", "In", &["foo"]), z(&["foo", "bar"]), true),
            (req("zone", "In", &["foo", "bar"]), z(&["foo", "bar"]), true),
            (req("zone", "NotIn", &["foo"]), z(none), true),
            (req("zone", "NotIn", &["foo"]), z(&["foo", "bar"]), false),
            (req("zone", "Exists", none), z(none), false),
            (req("zone", "DoesNotExist", none), z(none), true),
            (req("zone", "Gt", none), z(&["foo"]), false),
        ];
        for (i, (e, zones, want)) in cases.iter().enumerate() {
            assert_eq!(match_zones(e, zones), *want, "case {i}");
        }
    }

    #[test]
    fn cluster_fields_upstream_table() {
        let mut c = Cluster::new("x", ClusterSpec::default());
        assert!(cluster_fields(&c).is_empty());
        c.spec.provider = "foo".into();
        assert_eq!(
            cluster_fields(&c),
            [("provider".to_string(), "foo".to_string())].into()
        );
        c.spec.region = "bar".into();
        assert_eq!(cluster_fields(&c).len(), 2);
    }

    #[test]
    fn indexed_matcher_agrees_on_long_name_lists() {
        let many: Vec<String> = (0..40).map(|i| format!("cluster{i}")).collect();
        let refs: Vec<&str> = many.iter().map(String::as_str).collect();
        let mut c = cluster();
        for (i, name) in ["cluster1", "cluster39", "cluster40", "x"]
            .iter()
            .enumerate()
        {
            c.metadata.name = Some(name.to_string());
            for a in [
                aff(&[], &refs, None, vec![]),
                aff(&refs, &[], None, vec![]),
                aff(&refs[..3], &refs, Some(("foo", "bar")), vec![]),
            ] {
                let m = AffinityMatcher::new(&a);
                assert_eq!(m.clone().indexed().matches(&c), m.matches(&c), "case {i}");
                assert_eq!(m.matches(&c), cluster_matches(&c, &a), "case {i}");
            }
        }
        assert!(AffinityMatcher::new(&aff(&[], &refs, None, vec![])).names_only());
        assert!(!AffinityMatcher::new(&aff(&refs, &refs, None, vec![])).names_only());
        assert!(!AffinityMatcher::new(&aff(&[], &[], None, vec![])).names_only());
    }

    #[test]
    fn zone_uses_spec_zones_only() {
        let mut c = cluster();
        c.spec.zones.clear();
        c.spec.zone = "zone1".into();
        assert!(!cluster_matches(
            &c,
            &aff(&[], &[], None, vec![req("zone", "In", &["zone1"])])
        ));
        assert!(cluster_matches(
            &c,
            &aff(&[], &[], None, vec![req("zone", "DoesNotExist", &[])])
        ));
    }

    #[test]
    fn field_selector_gt_lt_and_absent_fields() {
        let mut c = cluster();
        c.spec.region = "5".into();
        let m = |e| cluster_matches(&c, &aff(&[], &[], None, vec![e]));
        assert!(m(req("region", "Gt", &["4"])));
        assert!(!m(req("region", "Gt", &["5"])));
        assert!(m(req("region", "Lt", &["6"])));
        assert!(!m(req("region", "Lt", &["x"]))); // not an integer: invalid
        assert!(!m(req("region", "Gt", &["1", "2"]))); // exactly one value
        assert!(!m(req("region", "Gt", &["-1"]))); // "-1" is not a valid label value
        assert!(!m(req("provider", "Gt", &["1"]))); // "provider1" does not parse
        assert!(m(req("region", "Exists", &[])));
        assert!(!m(req("region", "Exists", &["5"]))); // values must be empty
        assert!(!m(req("region", "In", &[]))); // values must not be empty
        assert!(!m(req("region", "Bogus", &["5"])));
        c.spec.region.clear();
        let m = |e| cluster_matches(&c, &aff(&[], &[], None, vec![e]));
        assert!(m(req("region", "NotIn", &["5"])));
        assert!(m(req("region", "DoesNotExist", &[])));
        assert!(!m(req("region", "Lt", &["6"])));
    }

    /// `LabelSelectorAsSelector(s).Matches(labels)`; `None` when the selector is invalid.
    fn label_selector_matches(
        selector: &LabelSelector,
        labels: &BTreeMap<String, String>,
    ) -> Option<bool> {
        if !label_selector_valid(selector) {
            return None;
        }
        Some(
            label_requirements(selector)
                .flatten()
                .all(|r| r.matches(labels.get(r.key).map(String::as_str))),
        )
    }

    #[test]
    fn label_selector_expressions_and_validation() {
        let labels: BTreeMap<String, String> = [
            ("env".to_string(), "prod".to_string()),
            ("a.io/b".to_string(), "x".to_string()),
        ]
        .into();
        let sel = |key: &str, op: &str, vals: &[&str]| LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(vals.iter().map(|s| s.to_string()).collect()),
            }]),
        };
        assert_eq!(
            label_selector_matches(&sel("env", "In", &["prod"]), &labels),
            Some(true)
        );
        assert_eq!(
            label_selector_matches(&sel("env", "NotIn", &["prod"]), &labels),
            Some(false)
        );
        assert_eq!(
            label_selector_matches(&sel("zz", "NotIn", &["prod"]), &labels),
            Some(true)
        );
        assert_eq!(
            label_selector_matches(&sel("a.io/b", "Exists", &[]), &labels),
            Some(true)
        );
        assert_eq!(
            label_selector_matches(&sel("zz", "DoesNotExist", &[]), &labels),
            Some(true)
        );
        assert_eq!(
            label_selector_matches(&sel("env", "Gt", &["1"]), &labels),
            None
        );
        assert_eq!(
            label_selector_matches(&sel("env", "In", &[]), &labels),
            None
        );
        assert_eq!(
            label_selector_matches(&sel("env", "In", &["bad value"]), &labels),
            None
        );
        assert_eq!(
            label_selector_matches(&sel("A.io/b", "Exists", &[]), &labels),
            None
        );
        assert_eq!(
            label_selector_matches(&sel("a/b/c", "Exists", &[]), &labels),
            None
        );
        assert_eq!(
            label_selector_matches(&sel("-env", "Exists", &[]), &labels),
            None
        );
        let empty = LabelSelector::default();
        assert_eq!(label_selector_matches(&empty, &labels), Some(true));
    }

    #[test]
    fn key_and_value_syntax() {
        assert!(is_label_key("example.com/My_Name-1.x"));
        assert!(is_label_key(&"a".repeat(63)));
        assert!(!is_label_key(&"a".repeat(64)));
        assert!(!is_label_key("/name"));
        assert!(!is_label_key("Example.com/name"));
        assert!(!is_label_key("ex..ample.com/name"));
        assert!(!is_label_key("name_"));
        assert!(is_label_value(""));
        assert!(is_label_value("v1.2_x-y"));
        assert!(!is_label_value("-v"));
        assert!(!is_label_value(&"v".repeat(64)));
        assert!(!is_label_value("é"));
    }
}
