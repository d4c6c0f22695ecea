//! The descheduler's pure rules (`karmada_descheduler::rules`) on a binding and estimator
//! answers of any shape: whether the binding is a candidate, its applied-placement
//! annotation, the ready replicas its aggregated status reports, the undesired clusters,
//! the merge of the estimators' unschedulable answers, and the plan written back.
//!
//! Input: `{"binding": <ResourceBinding>, "answers": [null | [["m1", 3], ...], ...]}` (one
//! entry per estimator, `null` for one that failed).
//!
//! Checks besides "no panic":
//! - undesired clusters are exactly those with fewer ready replicas than assigned;
//! - after the merge, a cluster that is not undesired has nothing unschedulable, and an
//!   undesired one has the smallest answer at its position that names it (never the "no
//!   answer" -1), else 0;
//! - a plan keeps the clusters and their order, never adds replicas, changes only clusters
//!   with unschedulable replicas and never below 0, and its total is what it took away
//!   (as int32, wrapping as the reference's does); no plan means nothing to take away.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use karmada_api::work::ResourceBinding;
use karmada_descheduler::rules::{self, UNKNOWN};
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;
use serde_json::Value;

#[derive(Deserialize)]
struct Input {
    binding: Value,
    #[serde(default)]
    answers: Vec<Option<Vec<(String, i32)>>>,
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Input>(data) else {
        return;
    };
    let Ok(rb) = karmada_api::from_json_value::<ResourceBinding>(input.binding) else {
        return;
    };
    let _ = rules::is_candidate(&rb);
    let _ = rules::is_supported_kind(&rb);
    if let Some(annotation) = rb
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get("policy.karmada.io/applied-placement"))
    {
        let _ = rules::divides_dynamically(annotation);
    }
    let (ready, problems) = rules::ready_replicas(&rb);
    for p in &problems {
        assert!(p.starts_with("status.aggregatedStatus[cluster "), "{p}");
    }
    let mut statuses = rules::replica_status(&rb, &ready);
    assert_eq!(statuses.len(), rb.spec.clusters.len());
    let undesired = rules::undesired(&statuses);
    for (i, s) in statuses.iter().enumerate() {
        assert_eq!(undesired.contains(&i), s.ready < s.spec, "{s:?}");
    }
    rules::merge_answers(&mut statuses, &undesired, &input.answers);
    for (i, s) in statuses.iter().enumerate() {
        match undesired.iter().position(|&u| u == i) {
            None => assert_eq!(s.unschedulable, 0, "{s:?}"),
            Some(pos) => {
                let lowest = input
                    .answers
                    .iter()
                    .flatten()
                    .filter_map(|a| a.get(pos))
                    .filter(|(cluster, n)| *n != UNKNOWN && *cluster == s.cluster)
                    .map(|(_, n)| *n)
                    .min()
                    .unwrap_or(0);
                assert_eq!(s.unschedulable, lowest, "{s:?}");
            }
        }
    }
    let clusters = &rb.spec.clusters;
    match rules::plan(clusters, &statuses) {
        None => {}
        Some(plan) => {
            assert_eq!(plan.clusters.len(), clusters.len());
            let mut total = 0i32;
            for ((new, old), s) in plan.clusters.iter().zip(clusters).zip(&statuses) {
                assert_eq!(new.name, old.name);
                assert!(new.replicas <= old.replicas, "{new:?} from {old:?}");
                if new.replicas != old.replicas {
                    assert!(new.replicas >= 0, "{new:?}");
                    assert!(s.unschedulable > 0, "{s:?}");
                }
                total = total.wrapping_add(old.replicas - new.replicas);
            }
            assert_eq!(plan.total, total);
            assert_ne!(plan.total, 0);
            assert!(
                plan.message.starts_with(rules::SUCCESS_MESSAGE),
                "{}",
                plan.message
            );
        }
    }
});
