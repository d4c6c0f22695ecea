//! What the filters would otherwise work out cluster by cluster, prepared once per binding
//! attempt over the whole snapshot.
//!
//! Each answer is a set of snapshot positions ([`ClusterSet`]) memoised by the snapshot under
//! a key that fully determines it, so that a snapshot scheduled against many times reads one
//! bit per cluster instead of each cluster object, and a fresh snapshot does the same work the
//! filters would have done. The filters use them through [`FilterContext::prepared`]
//! (`None` keeps the cluster-by-cluster path; both give the same verdicts).
//!
//! [`FilterContext::prepared`]: crate::framework::FilterContext::prepared

use std::sync::Arc;

use karmada_api::policy::SpreadFieldValue;
use karmada_api::work::{ResourceBindingSpec, ResourceBindingStatus};

use crate::predicates::{
    self, effective_affinities, has_hard_taint, parse_group_version, placement_of, serves,
};
use crate::selector::AffinityMatcher;
use crate::snapshot::{ClusterSet, SetKey, Snapshot};

/// The answers for one binding attempt.
#[derive(Clone, Debug)]
pub struct Prepared {
    terminating: Arc<ClusterSet>,
    api_enabled: Arc<ClusterSet>,
    hard_taints: Arc<ClusterSet>,
    /// Clusters matching some effective affinity; `None` without affinity constraint.
    affinity: Option<Arc<ClusterSet>>,
    /// Clusters lacking the provider, region, zones, for the fields spread constraints use.
    lacking: [Option<Arc<ClusterSet>>; 3],
}

/// Index in [`Prepared::lacking`] of the fields the SpreadConstraint filter checks.
fn lacking_slot(field: SpreadFieldValue) -> Option<usize> {
    match field {
        SpreadFieldValue::Provider => Some(0),
        SpreadFieldValue::Region => Some(1),
        SpreadFieldValue::Zone => Some(2),
        SpreadFieldValue::Cluster => None,
    }
}

impl Prepared {
    /// Prepare the answers for `spec` (with `status` selecting the affinity term).
    pub fn new(
        snapshot: &Snapshot,
        spec: &ResourceBindingSpec,
        status: &ResourceBindingStatus,
    ) -> Self {
        let (group, version) = parse_group_version(&spec.resource.api_version);
        let kind = spec.resource.kind.as_str();
        let api_key = SetKey::Api {
            group: group.to_string(),
            version: version.to_string(),
            kind: kind.to_string(),
        };
        let affinities = effective_affinities(placement_of(spec), spec, status);
        let affinity = if affinities.is_empty() {
            None
        } else {
            let mut union: Option<Arc<ClusterSet>> = None;
            for a in affinities.iter() {
                let matcher = AffinityMatcher::new(a).indexed();
                let set = snapshot.cluster_set(SetKey::affinity(a), |c| matcher.matches(c));
                union = Some(match union {
                    None => set,
                    Some(u) => Arc::new(u.union(&set)),
                });
            }
            union
        };
        let mut lacking: [Option<Arc<ClusterSet>>; 3] = Default::default();
        for field in placement_of(spec)
            .spread_constraints
            .iter()
            .filter_map(|sc| sc.spread_by_field)
        {
            if let Some(slot) = lacking_slot(field)
                && lacking[slot].is_none()
            {
                lacking[slot] = Some(
                    snapshot.cluster_set(SetKey::Lacks(field), |c| predicates::lacks(c, field)),
                );
            }
        }
        Self {
            lacking,
            terminating: snapshot.cluster_set(SetKey::Terminating, |c| c.is_terminating()),
            api_enabled: snapshot.cluster_set(api_key, |c| serves(c, group, version, kind)),
            hard_taints: snapshot.cluster_set(SetKey::HardTaints, has_hard_taint),
            affinity,
        }
    }

    /// These answers about the cluster at position `index` of the snapshot.
    pub fn at(&self, index: usize) -> PreparedRef<'_> {
        PreparedRef {
            prepared: self,
            index,
        }
    }

    /// Whether the cluster at `index` is being deleted.
    pub fn terminating(&self, index: usize) -> bool {
        self.terminating.contains(index)
    }
}

/// [`Prepared`] answers about one cluster.
#[derive(Clone, Copy, Debug)]
pub struct PreparedRef<'a> {
    prepared: &'a Prepared,
    index: usize,
}

impl PreparedRef<'_> {
    /// Whether the cluster serves the binding's group-version and kind.
    pub fn api_enabled(&self) -> bool {
        self.prepared.api_enabled.contains(self.index)
    }

    /// Whether the cluster has a `NoSchedule` or `NoExecute` taint.
    pub fn has_hard_taint(&self) -> bool {
        self.prepared.hard_taints.contains(self.index)
    }

    /// Whether the cluster lacks the property `field` groups by; `None` when not prepared
    /// (no spread constraint uses the field).
    pub fn lacks(&self, field: SpreadFieldValue) -> Option<bool> {
        let set = self.prepared.lacking[lacking_slot(field)?].as_ref()?;
        Some(set.contains(self.index))
    }

    /// Whether the cluster matches one of the effective affinities (true without any).
    pub fn matches_affinity(&self) -> bool {
        self.prepared
            .affinity
            .as_ref()
            .is_none_or(|s| s.contains(self.index))
    }
}
