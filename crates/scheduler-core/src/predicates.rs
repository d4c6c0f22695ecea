//! Facts about a cluster or a binding that the filter plugins and the per-pass answers of
//! [`crate::prepared`] both need: a leaf module, so that neither depends on the other.

use std::sync::LazyLock;

use karmada_api::cluster::Cluster;
use karmada_api::policy::{
    ClusterAffinity as Affinity, OverflowClusterAffinity, Placement, SpreadFieldValue,
};
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};

static EMPTY_PLACEMENT: LazyLock<Placement> = LazyLock::new(Placement::default);

/// `spec.placement` or the empty placement.
pub fn placement_of(spec: &ResourceBindingSpec) -> &Placement {
    spec.placement.as_ref().unwrap_or(&EMPTY_PLACEMENT)
}

/// Whether `status.apiEnablements` lists this kind under this group-version.
pub fn serves(cluster: &Cluster, group: &str, version: &str, kind: &str) -> bool {
    cluster.status.as_ref().is_some_and(|s| {
        s.api_enablements.iter().any(|e| {
            gv_equals(&e.group_version, group, version)
                && e.resources.iter().any(|r| r.kind == kind)
        })
    })
}

/// Go's `schema.ParseGroupVersion`, with a malformed value (more than one `/`) giving the
/// empty group-version as `schema.FromAPIVersionAndKind` does.
pub fn parse_group_version(api_version: &str) -> (&str, &str) {
    if api_version.is_empty() || api_version == "/" {
        return ("", "");
    }
    match api_version.matches('/').count() {
        0 => ("", api_version),
        1 => api_version.split_once('/').unwrap_or(("", "")),
        _ => ("", ""),
    }
}

/// Whether `gv` equals `GroupVersion{group, version}.String()` without building that string.
fn gv_equals(gv: &str, group: &str, version: &str) -> bool {
    if group.is_empty() {
        gv == version
    } else {
        gv.len() == group.len() + 1 + version.len()
            && gv.starts_with(group)
            && gv.as_bytes()[group.len()] == b'/'
            && gv.ends_with(version)
    }
}

/// The affinities a cluster may match: the inline affinity of the
/// placement or of the observed term, plus the term's overflow affinities for workloads.
/// Borrowed, so that filtering thousands of clusters allocates nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct Affinities<'a> {
    primary: Option<&'a Affinity>,
    overflow: &'a [OverflowClusterAffinity],
}

impl<'a> Affinities<'a> {
    /// No constraint at all.
    pub fn is_empty(&self) -> bool {
        self.primary.is_none()
    }

    /// In order: the inline affinity, then the overflow tiers.
    pub fn iter(&self) -> impl Iterator<Item = &'a Affinity> + 'a {
        self.primary
            .into_iter()
            .chain(self.overflow.iter().map(|o| &o.affinity))
    }
}

/// The affinities for this binding and status.
pub fn effective_affinities<'a>(
    placement: &'a Placement,
    spec: &ResourceBindingSpec,
    status: &ResourceBindingStatus,
) -> Affinities<'a> {
    if let Some(a) = &placement.cluster_affinity {
        return Affinities {
            primary: Some(a),
            overflow: &[],
        };
    }
    let observed = &status.scheduler_observed_affinity_name;
    let Some(term) = placement
        .cluster_affinities
        .iter()
        .flatten()
        .find(|t| &t.affinity_name == observed)
    else {
        return Affinities::default();
    };
    let overflow = match &term.overflow_affinities {
        Some(o) if spec.is_workload() => o.as_slice(),
        _ => &[],
    };
    Affinities {
        primary: Some(&term.affinity),
        overflow,
    }
}

/// Whether the cluster has a taint the filter looks at (`NoSchedule` or `NoExecute`).
pub fn has_hard_taint(cluster: &Cluster) -> bool {
    cluster
        .spec
        .taints
        .iter()
        .any(|t| matches!(t.effect.as_str(), "NoSchedule" | "NoExecute"))
}

/// Whether the cluster lacks the property `field` groups by (never for `cluster`).
pub fn lacks(cluster: &Cluster, field: SpreadFieldValue) -> bool {
    let spec = &cluster.spec;
    match field {
        SpreadFieldValue::Provider => spec.provider.is_empty(),
        SpreadFieldValue::Region => spec.region.is_empty(),
        SpreadFieldValue::Zone => spec.zones.is_empty(),
        SpreadFieldValue::Cluster => false,
    }
}
