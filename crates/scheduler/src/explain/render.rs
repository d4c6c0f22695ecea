//! The text `simulate -o explain` and `karmada-scheduler explain` print for an
//! [`Explanation`]: the decision, the placement, the workload, each attempt's filter verdicts,
//! scores, estimates, groups and division, and for `explain` the patches and events.

use std::fmt::Write as _;

use karmada_api::work::{ResourceBindingSpec, TargetCluster};
use scheduler_core::trace::{AttemptTrace, Verdict};

use crate::cycle::sink::Target;
use crate::explain::Explanation;
use crate::model::binding::Binding;

/// `karmada-scheduler explain`'s text: [`attempt`], then the patches the daemon would send and
/// its events.
pub fn explanation(b: &Binding, e: &Explanation) -> String {
    let mut text = String::new();
    attempt(&mut text, b, e);
    text.push_str("  the daemon would write:\n");
    for (target, patch) in &e.patches {
        let t = if *target == Target::Main {
            "main"
        } else {
            "status"
        };
        let _ = writeln!(text, "    {t} {patch}");
    }
    if e.patches.is_empty() {
        text.push_str("    nothing\n");
    }
    text.push_str("  events:\n");
    for ev in &e.events {
        let _ = writeln!(
            text,
            "    {} {} on {} {}: {}",
            if ev.warning { "Warning" } else { "Normal" },
            ev.reason,
            ev.involved.kind.as_deref().unwrap_or_default(),
            ev.involved.name.as_deref().unwrap_or_default(),
            ev.message
        );
    }
    text
}

/// `simulate -o explain`'s text for one binding (`b` as it was before the attempt), which
/// [`explanation`] continues for `karmada-scheduler explain`.
pub fn attempt(out: &mut String, b: &Binding, e: &Explanation) {
    let v = e.verdict();
    let outcome = e.report.outcome.as_ref();
    let _ = writeln!(out, "{} {}: {}", b.kind.kind(), b.key(), v.result);
    let _ = writeln!(out, "  decision: {}", e.decision());
    let _ = writeln!(out, "  message: {}", v.message);
    if v.result == "Scheduled" {
        let _ = writeln!(out, "  clusters: {}", format_targets(&v.clusters));
    }
    let Some(outcome) = outcome else {
        out.push('\n');
        return;
    };
    let spec = &b.spec;
    let strategy = describe_strategy(spec);
    let _ = writeln!(
        out,
        "  workload: {} {} replicas={} strategy={}{}",
        spec.resource.api_version,
        spec.resource.kind,
        spec.replicas,
        strategy,
        if spec.clusters.is_empty() {
            String::new()
        } else {
            format!(
                " previous=[{}]",
                spec.clusters
                    .iter()
                    .map(|t| format!("{}:{}", t.name, t.replicas))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    if let Some(name) = &outcome.affinity_name {
        let _ = writeln!(out, "  clusterAffinities: term {name:?} succeeded");
    }
    for f in &outcome.failed_terms {
        let _ = writeln!(
            out,
            "  clusterAffinities: term {} {:?} failed: {}",
            f.index, f.affinity_name, f.error
        );
    }
    if let Some(trace) = &outcome.trace {
        if trace.attempts.is_empty() {
            let _ = writeln!(
                out,
                "  clusterAffinities is empty: nothing was tried, spec.clusters is left as it is"
            );
        }
        for a in &trace.attempts {
            explain_attempt(out, b, a);
        }
    }
    out.push('\n');
}

fn explain_attempt(out: &mut String, b: &Binding, a: &AttemptTrace) {
    match (&a.affinity_index, &a.affinity_name) {
        (Some(i), Some(n)) => {
            let _ = writeln!(out, "  attempt with clusterAffinities[{i}] {n:?}:");
        }
        _ => {
            let _ = writeln!(out, "  attempt:");
        }
    }
    let _ = writeln!(
        out,
        "    filters (in order): {}",
        a.filter_plugins.join(", ")
    );
    let width = a.clusters.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &a.clusters {
        let _ = writeln!(out, "    {:width$}  {}", c.name, cluster_line(c));
    }
    explain_estimation(out, a);
    explain_selection(out, a);
    explain_division(out, b, a);
}

/// A cluster's filter verdict, with a feasible one's scores and replicas.
fn cluster_line(c: &scheduler_core::trace::ClusterTrace) -> String {
    match &c.verdict {
        Verdict::Deleting => "deleting: skipped, still counted in 0/N".to_string(),
        Verdict::Rejected { plugin, reasons } => {
            format!("rejected by {plugin}: {}", reasons.join(", "))
        }
        Verdict::Feasible => feasible_line(c),
    }
}

/// `feasible`, then the score, the estimates, the replicas and the overflow tier it has.
fn feasible_line(c: &scheduler_core::trace::ClusterTrace) -> String {
    let mut s = String::from("feasible");
    if let Some(score) = c.score {
        let parts: Vec<String> = c.scores.iter().map(|(p, v)| format!("{p} {v}")).collect();
        let _ = write!(s, ", score {score} ({})", parts.join(" + "));
    }
    if !c.estimates.is_empty() {
        let parts: Vec<String> = c
            .estimates
            .iter()
            .map(|(e, v)| format!("{e} {}", v.map_or("-".to_string(), |v| v.to_string())))
            .collect();
        let _ = write!(s, ", estimates [{}]", parts.join(", "));
    }
    if let (Some(alloc), Some(avail)) = (c.allocatable_replicas, c.available_replicas) {
        let _ = write!(
            s,
            ", allocatable {}, available {avail}",
            show_replicas(alloc)
        );
    }
    if let Some(o) = c.overflow_order.filter(|o| *o != 0) {
        let _ = write!(s, ", overflow tier {o}");
    }
    s
}

/// The estimators whose answers were ignored, or that none was asked.
fn explain_estimation(out: &mut String, a: &AttemptTrace) {
    for e in &a.estimators {
        if let Some(err) = &e.error {
            let _ = writeln!(
                out,
                "    estimator {} failed, its answers are ignored: {err}",
                e.name
            );
        }
    }
    if a.estimation_skipped {
        let _ = writeln!(
            out,
            "    estimators not asked: replicas 0 and no components (every cluster counts as unlimited)"
        );
    }
}

/// The canonical order, the region groups and what was chosen among them.
fn explain_selection(out: &mut String, a: &AttemptTrace) {
    if !a.canonical_order.is_empty() {
        let _ = writeln!(
            out,
            "    order (tier asc, score desc, available desc, name): {}",
            a.canonical_order.join(", ")
        );
    }
    for g in &a.regions {
        let _ = writeln!(
            out,
            "    region {}: score {}, available {}, clusters [{}]",
            g.name,
            g.score,
            g.available_replicas,
            g.clusters.join(", ")
        );
    }
    if !a.chosen_regions.is_empty() {
        let _ = writeln!(out, "    chosen regions: {}", a.chosen_regions.join(", "));
    }
    if !a.selected.is_empty() {
        let need = if a.need_replicas < 0 || !a.chosen_regions.is_empty() {
            "capacity not checked".to_string()
        } else {
            format!("needing {} replicas", a.need_replicas)
        };
        let _ = writeln!(out, "    selected ({need}): {}", a.selected.join(", "));
    }
}

/// How the replicas were divided, or why the attempt failed.
fn explain_division(out: &mut String, b: &Binding, a: &AttemptTrace) {
    if a.result.is_some() {
        let _ = writeln!(out, "    division rule: {}", division_rule(b, a));
    }
    if let Some(r) = &a.result {
        let _ = writeln!(
            out,
            "    division: {}",
            r.iter()
                .map(|t| format!("{}:{}", t.name, t.replicas))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(e) = &a.error {
        let _ = writeln!(out, "    error: {e}");
    }
}

/// Which division rule divided the replicas, in words.
fn division_rule(b: &Binding, a: &AttemptTrace) -> String {
    use scheduler_core::assign::{Mode, Strategy, assignment_mode, strategy_of};
    let spec = &b.spec;
    if !((spec.replicas > 0 || spec.replica_requirements.is_some()) && spec.components.len() <= 1) {
        return "not a workload (replicas 0, no requirements): every candidate with 0 replicas"
            .to_string();
    }
    let Some(placement) = &spec.placement else {
        return "-".to_string();
    };
    let tiers = a
        .clusters
        .iter()
        .filter_map(|c| c.overflow_order)
        .any(|o| o != 0);
    let tiers = if tiers {
        "; overflow tiers are filled in order, each up to its available replicas"
    } else {
        ""
    };
    let rule = match strategy_of(placement) {
        Err(e) => e.to_string(),
        Ok(Strategy::Duplicated) => format!("Duplicated: every candidate gets {} replicas", spec.replicas),
        Ok(Strategy::StaticWeight) => {
            "static weights (Webster); clusters without a positive weight get nothing, capacity is not checked"
                .to_string()
        }
        Ok(strategy) => {
            let how = if strategy == Strategy::Aggregated {
                "on as few clusters as possible (largest first)"
            } else {
                "in proportion"
            };
            let previous: i64 = spec
                .clusters
                .iter()
                .filter(|t| a.selected.iter().any(|s| *s == t.name))
                .map(|t| i64::from(t.replicas))
                .sum();
            let want = i64::from(spec.replicas);
            if assignment_mode(spec, &b.status) == Mode::Fresh {
                format!(
                    "{} fresh (rescheduleTriggeredAt after lastScheduledTime): all {want} replicas divided {how} by allocatable + current replicas",
                    strategy.as_str()
                )
            } else if previous > want {
                format!(
                    "{} scale down from {previous} to {want}: divided {how} by the current replicas",
                    strategy.as_str()
                )
            } else if previous == 0 {
                format!(
                    "{} from scratch: {want} replicas divided {how} by allocatable replicas",
                    strategy.as_str()
                )
            } else if previous < want {
                format!(
                    "{} scale up from {previous} to {want}: the {} new replicas divided {how} by allocatable replicas and added to the current ones",
                    strategy.as_str(),
                    want - previous
                )
            } else {
                format!("{} steady: the candidates already hold {want} replicas, nothing moves", strategy.as_str())
            }
        }
    };
    format!("{rule}{tiers}")
}

fn show_replicas(v: i32) -> String {
    if v == i32::MAX {
        "unlimited".to_string()
    } else {
        v.to_string()
    }
}

fn format_targets(c: &[TargetCluster]) -> String {
    if c.is_empty() {
        return "(none)".to_string();
    }
    c.iter()
        .map(|t| format!("{}:{}", t.name, t.replicas))
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_strategy(spec: &ResourceBindingSpec) -> String {
    let Some(p) = &spec.placement else {
        return "-".to_string();
    };
    let Some(rs) = &p.replica_scheduling else {
        return "Duplicated (no replicaScheduling)".to_string();
    };
    let t = rs.replica_scheduling_type.map_or("\"\"", |t| t.as_str());
    let pref = rs.replica_division_preference.map_or("", |p| p.as_str());
    let weights = match &rs.weight_preference {
        Some(wp) if wp.dynamic_weight.is_some() => "/dynamic",
        Some(wp) if !wp.static_weight_list.is_empty() => "/static",
        _ => "",
    };
    if pref.is_empty() {
        t.to_string()
    } else {
        format!("{t}/{pref}{weights}")
    }
}
