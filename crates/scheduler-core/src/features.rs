//! Feature gates: the reference's `--feature-gates` with its v1.19.0 defaults.
//!
//! v1.19.0 differs from v1.18.2 in one gate only: `PriorityBasedScheduling` became Beta and on
//! by default. `--feature-gates=PriorityBasedScheduling=false` gives v1.18.2's defaults back.
//!
//! Only five gates change what the scheduler does (`CustomizedClusterResourceModeling`,
//! `MultiplePodTemplatesScheduling`, `WorkloadAffinity`, `SchedulingOvercommitProtection`,
//! `PriorityBasedScheduling`), but every gate the reference knows must be accepted, and an
//! unknown one rejected, so that a manifest written for the Go binary keeps working. Parsing
//! lives here, next to the algorithm, so that the daemon and `simulate` share it.

use std::collections::BTreeMap;

/// Maturity of a gate; `AllAlpha`/`AllBeta` act on a whole stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
}

/// Every gate of the reference binary (v1.19.0): name, default, stage.
pub const KNOWN_GATES: &[(&str, bool, Stage)] = &[
    ("Failover", false, Stage::Beta),
    ("GracefulEviction", true, Stage::Beta),
    ("PropagateDeps", true, Stage::Beta),
    (CUSTOMIZED_CLUSTER_RESOURCE_MODELING, true, Stage::Beta),
    ("PropagationPolicyPreemption", false, Stage::Alpha),
    ("MultiClusterService", false, Stage::Alpha),
    ("ResourceQuotaEstimate", false, Stage::Alpha),
    ("StatefulFailoverInjection", false, Stage::Alpha),
    (PRIORITY_BASED_SCHEDULING, true, Stage::Beta),
    ("FederatedQuotaEnforcement", false, Stage::Alpha),
    ("LoggingAlphaOptions", false, Stage::Alpha),
    ("LoggingBetaOptions", true, Stage::Beta),
    ("ContextualLogging", true, Stage::Beta),
    (MULTIPLE_POD_TEMPLATES_SCHEDULING, false, Stage::Alpha),
    ("ControllerPriorityQueue", true, Stage::Beta),
    (WORKLOAD_AFFINITY, false, Stage::Alpha),
    (SCHEDULING_OVERCOMMIT_PROTECTION, false, Stage::Alpha),
];

/// General estimator may use `spec.resourceModels`.
pub const CUSTOMIZED_CLUSTER_RESOURCE_MODELING: &str = "CustomizedClusterResourceModeling";
/// Component-set estimation and whole-workload placement of multi-template workloads.
pub const MULTIPLE_POD_TEMPLATES_SCHEDULING: &str = "MultiplePodTemplatesScheduling";
/// Registers the `WorkloadAffinity` and `WorkloadAntiAffinity` filter plugins.
pub const WORKLOAD_AFFINITY: &str = "WorkloadAffinity";
/// Estimators subtract workloads assumed but not yet reported by member clusters.
pub const SCHEDULING_OVERCOMMIT_PROTECTION: &str = "SchedulingOvercommitProtection";
/// Priority scheduling queue (queue order only, never the placement).
pub const PRIORITY_BASED_SCHEDULING: &str = "PriorityBasedScheduling";

const ALL_ALPHA: &str = "AllAlpha";
const ALL_BETA: &str = "AllBeta";

/// The usage text of `--feature-gates`, as the reference prints it: one line per gate of
/// [`KNOWN_GATES`] and the two stage switches, sorted by name. Generated at compile time from
/// the table, so that a gate added there shows up in `--help` without a second edit.
pub const FEATURE_GATES_USAGE: &str = match std::str::from_utf8(&usage::BYTES) {
    Ok(text) => text,
    Err(_) => panic!("the feature gate usage text is not UTF-8"),
};

/// Const builders of [`FEATURE_GATES_USAGE`] (const code: no `format!`, no sort, so loops).
mod usage {
    use super::{ALL_ALPHA, ALL_BETA, KNOWN_GATES, Stage};

    const HEAD: &str = "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:";
    const COUNT: usize = KNOWN_GATES.len() + 2;

    /// The stage switches and the gates, sorted by name (byte order, as Go's sort.Strings).
    const SORTED: [(&str, bool, Stage); COUNT] = {
        let mut all = [(ALL_ALPHA, false, Stage::Alpha); COUNT];
        all[1] = (ALL_BETA, false, Stage::Beta);
        let mut i = 0;
        while i < KNOWN_GATES.len() {
            all[i + 2] = KNOWN_GATES[i];
            i += 1;
        }
        let mut i = 1;
        while i < COUNT {
            let mut j = i;
            while j > 0 && less(all[j].0, all[j - 1].0) {
                let t = all[j];
                all[j] = all[j - 1];
                all[j - 1] = t;
                j -= 1;
            }
            i += 1;
        }
        all
    };

    const fn less(a: &str, b: &str) -> bool {
        let (a, b) = (a.as_bytes(), b.as_bytes());
        let mut i = 0;
        while i < a.len() && i < b.len() {
            if a[i] != b[i] {
                return a[i] < b[i];
            }
            i += 1;
        }
        a.len() < b.len()
    }

    /// The pieces of one line: `\n<name>=true|false (<STAGE> - default=<bool>)`.
    const fn parts(gate: (&'static str, bool, Stage)) -> [&'static str; 5] {
        let stage = match gate.2 {
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
        };
        let default = if gate.1 { "true" } else { "false" };
        ["\n", gate.0, "=true|false (", stage, default]
    }

    const TAIL_OF_STAGE: &str = " - default=";
    const CLOSE: &str = ")";

    const LEN: usize = {
        let mut n = HEAD.len();
        let mut i = 0;
        while i < COUNT {
            let p = parts(SORTED[i]);
            n += p[0].len() + p[1].len() + p[2].len() + p[3].len();
            n += TAIL_OF_STAGE.len() + p[4].len() + CLOSE.len();
            i += 1;
        }
        n
    };

    pub(super) const BYTES: [u8; LEN] = {
        let mut out = [0u8; LEN];
        let mut at = put(&mut out, 0, HEAD);
        let mut i = 0;
        while i < COUNT {
            let p = parts(SORTED[i]);
            at = put(&mut out, at, p[0]);
            at = put(&mut out, at, p[1]);
            at = put(&mut out, at, p[2]);
            at = put(&mut out, at, p[3]);
            at = put(&mut out, at, TAIL_OF_STAGE);
            at = put(&mut out, at, p[4]);
            at = put(&mut out, at, CLOSE);
            i += 1;
        }
        out
    };

    const fn put(out: &mut [u8; LEN], at: usize, s: &str) -> usize {
        let b = s.as_bytes();
        let mut i = 0;
        while i < b.len() {
            out[at + i] = b[i];
            i += 1;
        }
        at + b.len()
    }
}

/// A `--feature-gates` value the reference would reject; the text is the reference's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct FeatureGateError(pub String);

/// The effective gates: explicit settings over `AllAlpha`/`AllBeta` over the defaults.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FeatureGates {
    explicit: BTreeMap<String, bool>,
    all_alpha: Option<bool>,
    all_beta: Option<bool>,
}

impl FeatureGates {
    /// The v1.19.0 defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Parse one `--feature-gates` value (`A=true,B=false`), as the reference's flag `Set`
    /// does; repeated flags accumulate. Nothing changes when the value is rejected.
    pub fn set(&mut self, value: &str) -> Result<(), FeatureGateError> {
        let mut parsed = Vec::new();
        for item in value.split(',') {
            if item.is_empty() {
                continue;
            }
            let (key, val) = match item.split_once('=') {
                Some((k, v)) => (k.trim(), v.trim()),
                None => {
                    return Err(FeatureGateError(format!(
                        "missing bool value for {}",
                        item.trim()
                    )));
                }
            };
            let b = parse_go_bool(val).ok_or_else(|| {
                FeatureGateError(format!(
                    "invalid value of {key}={val}, err: strconv.ParseBool: parsing {val:?}: invalid syntax"
                ))
            })?;
            parsed.push((key.to_string(), b));
        }
        for (key, _) in &parsed {
            if key != ALL_ALPHA && key != ALL_BETA && stage_of(key).is_none() {
                return Err(FeatureGateError(format!(
                    "unrecognized feature gate: {key}"
                )));
            }
        }
        for (key, b) in parsed {
            match key.as_str() {
                ALL_ALPHA => self.all_alpha = Some(b),
                ALL_BETA => self.all_beta = Some(b),
                _ => {
                    self.explicit.insert(key, b);
                }
            }
        }
        Ok(())
    }

    /// Whether a gate is on. Unknown names are off.
    pub fn enabled(&self, name: &str) -> bool {
        if let Some(b) = self.explicit.get(name) {
            return *b;
        }
        let Some((_, default, stage)) = KNOWN_GATES.iter().find(|(n, _, _)| *n == name) else {
            return false;
        };
        let by_stage = match stage {
            Stage::Alpha => self.all_alpha,
            Stage::Beta => self.all_beta,
        };
        by_stage.unwrap_or(*default)
    }

    /// Turn one gate on or off programmatically (tests, embedding).
    pub fn with(mut self, name: &str, on: bool) -> Self {
        self.explicit.insert(name.to_string(), on);
        self
    }

    /// `CustomizedClusterResourceModeling`.
    pub fn customized_cluster_resource_modeling(&self) -> bool {
        self.enabled(CUSTOMIZED_CLUSTER_RESOURCE_MODELING)
    }

    /// `MultiplePodTemplatesScheduling`.
    pub fn multiple_pod_templates_scheduling(&self) -> bool {
        self.enabled(MULTIPLE_POD_TEMPLATES_SCHEDULING)
    }

    /// `WorkloadAffinity`.
    pub fn workload_affinity(&self) -> bool {
        self.enabled(WORKLOAD_AFFINITY)
    }

    /// `SchedulingOvercommitProtection`.
    pub fn scheduling_overcommit_protection(&self) -> bool {
        self.enabled(SCHEDULING_OVERCOMMIT_PROTECTION)
    }

    /// `PriorityBasedScheduling`.
    pub fn priority_based_scheduling(&self) -> bool {
        self.enabled(PRIORITY_BASED_SCHEDULING)
    }
}

fn stage_of(name: &str) -> Option<Stage> {
    KNOWN_GATES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, _, s)| *s)
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generated `--feature-gates` usage is the reference's text, line for line.
    #[test]
    fn the_usage_text_lists_every_gate_as_the_reference_does() {
        let want = "A set of key=value pairs that describe feature gates for alpha/experimental features. Options are:
AllAlpha=true|false (ALPHA - default=false)
AllBeta=true|false (BETA - default=false)
ContextualLogging=true|false (BETA - default=true)
ControllerPriorityQueue=true|false (BETA - default=true)
CustomizedClusterResourceModeling=true|false (BETA - default=true)
Failover=true|false (BETA - default=false)
FederatedQuotaEnforcement=true|false (ALPHA - default=false)
GracefulEviction=true|false (BETA - default=true)
LoggingAlphaOptions=true|false (ALPHA - default=false)
LoggingBetaOptions=true|false (BETA - default=true)
MultiClusterService=true|false (ALPHA - default=false)
MultiplePodTemplatesScheduling=true|false (ALPHA - default=false)
PriorityBasedScheduling=true|false (BETA - default=true)
PropagateDeps=true|false (BETA - default=true)
PropagationPolicyPreemption=true|false (ALPHA - default=false)
ResourceQuotaEstimate=true|false (ALPHA - default=false)
SchedulingOvercommitProtection=true|false (ALPHA - default=false)
StatefulFailoverInjection=true|false (ALPHA - default=false)
WorkloadAffinity=true|false (ALPHA - default=false)";
        assert_eq!(FEATURE_GATES_USAGE, want);
    }

    #[test]
    fn defaults_are_v1_19_0() {
        let g = FeatureGates::new();
        assert!(g.customized_cluster_resource_modeling());
        assert!(!g.multiple_pod_templates_scheduling());
        assert!(!g.workload_affinity());
        assert!(!g.scheduling_overcommit_protection());
        assert!(g.priority_based_scheduling());
        assert!(g.enabled("GracefulEviction"));
    }

    /// The one gate whose default moved in v1.19.0 is off again with `=false`, and with
    /// `AllBeta=false` (it is Beta now), as in the reference.
    #[test]
    fn v1_18_2_defaults_are_one_flag_away() {
        let mut g = FeatureGates::new();
        g.set("PriorityBasedScheduling=false").unwrap();
        assert!(!g.priority_based_scheduling());
        let mut g = FeatureGates::new();
        g.set("AllBeta=false").unwrap();
        assert!(!g.priority_based_scheduling());
        let mut g = FeatureGates::new();
        g.set("AllAlpha=false").unwrap();
        assert!(g.priority_based_scheduling());
    }

    #[test]
    fn explicit_values_accumulate_and_win_over_all_alpha() {
        let mut g = FeatureGates::new();
        g.set("WorkloadAffinity=false,AllAlpha=true").unwrap();
        assert!(!g.workload_affinity());
        assert!(g.multiple_pod_templates_scheduling());
        g.set("AllBeta=false").unwrap();
        assert!(!g.customized_cluster_resource_modeling());
        g.set(" CustomizedClusterResourceModeling = T ").unwrap();
        assert!(g.customized_cluster_resource_modeling());
    }

    #[test]
    fn rejects_like_the_reference() {
        let mut g = FeatureGates::new();
        assert_eq!(
            g.set("Nope=true").unwrap_err().0,
            "unrecognized feature gate: Nope"
        );
        assert_eq!(
            g.set("WorkloadAffinity").unwrap_err().0,
            "missing bool value for WorkloadAffinity"
        );
        assert!(
            g.set("WorkloadAffinity=yes")
                .unwrap_err()
                .0
                .starts_with("invalid value of WorkloadAffinity=yes")
        );
        // A rejected value changes nothing, even its valid parts.
        assert!(g.set("WorkloadAffinity=true,Nope=true").is_err());
        assert!(!g.workload_affinity());
        g.set("").unwrap();
    }
}
