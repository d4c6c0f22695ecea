//! The schedule procedure's plan, for the attempt (`attempt.rs`): what to tell and what to
//! write from the algorithm's outcome ([`plan`]), then, once the result writes went as they
//! went (echo passes included), the final event and the status update ([`closing`]). Pure,
//! so these rules (which events, which condition, which observed generation) are tested with
//! plain values.

use karmada_api::work::TargetCluster;
use scheduler_core::ScheduleError;
use scheduler_core::schedule::{Decision as CoreDecision, Outcome};

use crate::cycle::patch::{REASON_FAILED, REASON_SUCCEED, StatusUpdate, success_event_message};
use crate::model::binding::Binding;
use crate::model::condition::{ApiFailure, AttemptError, condition_for};

/// One Event on the binding (and its template).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedEvent {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

impl PlannedEvent {
    pub(crate) fn failed(message: String) -> Self {
        Self {
            warning: true,
            reason: REASON_FAILED,
            message,
        }
    }
}

/// What the algorithm's outcome asks for, before anything is written.
#[derive(Clone, Debug, PartialEq)]
pub struct Plan {
    /// Told before any write: each failed affinity term, and an error that writes nothing.
    pub events: Vec<PlannedEvent>,
    /// The clusters to write (empty on a fit error), or `None` when no result is written.
    pub result: Option<Vec<TargetCluster>>,
    /// The algorithm's error, if any.
    pub algo_err: Option<ScheduleError>,
    /// The affinity term that succeeded (written to the status on success only).
    pub affinity_name: Option<String>,
}

/// The first half: events and the result to write, from the algorithm's `outcome`.
pub fn plan(binding: &Binding, outcome: &Outcome) -> Plan {
    let key = binding.key();
    let mut events: Vec<PlannedEvent> = outcome
        .failed_terms
        .iter()
        .map(|term| {
            PlannedEvent::failed(format!(
                "failed to schedule {} with clusterAffiliates index({}): {}",
                key.describe(),
                term.index,
                term.error
            ))
        })
        .collect();
    let uses_terms = binding
        .spec
        .placement
        .as_ref()
        .is_some_and(|p| p.cluster_affinities.is_some());
    let (result, algo_err) = match &outcome.result {
        Ok(CoreDecision::Scheduled(result)) => (Some(result.clone()), None),
        Ok(CoreDecision::NoAffinityTerms) => (None, None),
        Err(e @ ScheduleError::Fit(_)) => (Some(Vec::new()), Some(e.clone())),
        Err(e) => {
            if !uses_terms {
                events.push(PlannedEvent::failed(e.to_string()));
            }
            (None, Some(e.clone()))
        }
    };
    Plan {
        events,
        result,
        algo_err,
        affinity_name: outcome.affinity_name.clone(),
    }
}

/// How the result writes went (the executor's report to [`closing`]).
#[derive(Clone, Debug, Default)]
pub struct Written {
    /// The object the last accepted result patch returned (`None`: none was needed or none
    /// was accepted).
    pub stored: Option<Binding>,
    /// The result finally written (after the echo passes), when [`Plan::result`] was some.
    pub result: Option<Vec<TargetCluster>>,
    /// A result patch the server refused with a judgement (not a conflict, not transient).
    pub refused: Option<ApiFailure>,
}

/// The second half: the final event, the status update and the attempt's error.
#[derive(Clone, Debug, PartialEq)]
pub struct Closing {
    /// The success or failure event of a written result (none when no result was planned).
    pub event: Option<PlannedEvent>,
    pub status: StatusUpdate,
    /// The attempt's error; `swallow` says the queue should treat it as done.
    pub error: Option<AttemptError>,
    pub swallow: bool,
}

/// The final event, status and error from the plan and how its writes went.
pub fn closing(binding: &Binding, plan: &Plan, written: &Written) -> Closing {
    let mut error = plan.algo_err.clone().map(AttemptError::Schedule);
    let mut event = None;
    if plan.result.is_some() {
        if let Some(refused) = &written.refused {
            let mut members: Vec<AttemptError> = error.take().into_iter().collect();
            members.push(AttemptError::Api(refused.clone()));
            error = AttemptError::aggregate(members);
        }
        let result = written
            .result
            .as_ref()
            .or(plan.result.as_ref())
            .map_or(&[][..], Vec::as_slice);
        event = Some(match &error {
            None => PlannedEvent {
                warning: false,
                reason: REASON_SUCCEED,
                message: success_event_message(binding.kind, result),
            },
            Some(e) => PlannedEvent::failed(e.to_string()),
        });
    }
    let (condition, swallow) = condition_for(error.as_ref());
    let status = StatusUpdate {
        condition,
        // The generation our own result patch produced when there was one: it is the
        // scheduled spec plus our `spec.clusters` (the patch was preconditioned), so the
        // reference's later sync of the observed generation is not needed.
        scheduled_generation: error
            .is_none()
            .then(|| written.stored.as_ref().unwrap_or(binding).generation()),
        affinity_name: if plan.algo_err.is_none() {
            plan.affinity_name.clone()
        } else {
            None
        },
    };
    Closing {
        event,
        status,
        error,
        swallow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::binding::BindingKind;
    use scheduler_core::schedule::FailedTerm;
    use serde_json::json;

    fn binding(generation: i64, terms: bool) -> Binding {
        let placement = if terms {
            json!({"clusterAffinities": [{"affinityName": "a", "clusterNames": ["m1"]}]})
        } else {
            json!({"clusterAffinity": {"clusterNames": ["m1"]}})
        };
        Binding::decode(
            BindingKind::ResourceBinding,
            &json!({"metadata": {"name": "b", "namespace": "ns", "generation": generation},
                   "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "name": "c"},
                            "placement": placement}}),
        )
        .unwrap()
    }

    fn outcome(result: Result<CoreDecision, ScheduleError>) -> Outcome {
        Outcome {
            result,
            affinity_name: Some("a".into()),
            failed_terms: Vec::new(),
            trace: None,
        }
    }

    fn clusters(names: &[&str]) -> Vec<TargetCluster> {
        serde_json::from_value(json!(
            names
                .iter()
                .map(|n| json!({"name": n, "replicas": 1}))
                .collect::<Vec<_>>()
        ))
        .unwrap()
    }

    #[test]
    fn a_success_writes_its_result_then_observes_the_generation_it_produced() {
        let b = binding(3, false);
        let p = plan(&b, &outcome(Ok(CoreDecision::Scheduled(clusters(&["m1"])))));
        assert!(p.events.is_empty());
        assert_eq!(p.result, Some(clusters(&["m1"])));
        let stored = binding(4, false);
        let c = closing(
            &b,
            &p,
            &Written {
                stored: Some(stored),
                result: Some(clusters(&["m1"])),
                refused: None,
            },
        );
        assert_eq!(c.error, None);
        assert_eq!(c.status.scheduled_generation, Some(4));
        assert!(c.status.condition.status);
        assert_eq!(c.status.affinity_name.as_deref(), Some("a"));
        let e = c.event.unwrap();
        assert_eq!((e.warning, e.reason), (false, REASON_SUCCEED));
    }

    #[test]
    fn nothing_to_write_observes_the_generation_decided_on() {
        let b = binding(3, false);
        let p = plan(&b, &outcome(Ok(CoreDecision::Scheduled(clusters(&["m1"])))));
        let c = closing(&b, &p, &Written::default());
        assert_eq!(c.status.scheduled_generation, Some(3));
    }

    #[test]
    fn an_error_without_terms_is_told_at_once_and_writes_no_result() {
        let b = binding(3, false);
        let err = ScheduleError::Other("estimators down".into());
        let p = plan(&b, &outcome(Err(err.clone())));
        assert_eq!(p.result, None);
        assert_eq!(p.events, vec![PlannedEvent::failed(err.to_string())]);
        let c = closing(&b, &p, &Written::default());
        assert_eq!(c.event, None);
        assert_eq!(c.status.scheduled_generation, None);
        assert_eq!(c.status.affinity_name, None);
        assert!(!c.status.condition.status);
    }

    #[test]
    fn with_terms_each_failed_term_is_told_and_the_error_is_not_repeated() {
        let b = binding(3, true);
        let mut o = outcome(Err(ScheduleError::Other("no term fits".into())));
        o.failed_terms = vec![FailedTerm {
            index: 0,
            affinity_name: "a".into(),
            error: ScheduleError::Other("x".into()),
        }];
        let p = plan(&b, &o);
        assert_eq!(p.events.len(), 1);
        assert!(p.events[0].message.contains("clusterAffiliates index(0)"));
    }

    #[test]
    fn a_refused_result_is_aggregated_with_the_algorithm_error() {
        let b = binding(3, false);
        let p = plan(&b, &outcome(Ok(CoreDecision::Scheduled(clusters(&["m1"])))));
        let refused = ApiFailure {
            code: 403,
            reason: "QuotaExceeded".into(),
            message: "quota".into(),
        };
        let c = closing(
            &b,
            &p,
            &Written {
                stored: None,
                result: Some(clusters(&["m1"])),
                refused: Some(refused),
            },
        );
        assert!(c.error.is_some());
        assert_eq!(c.status.scheduled_generation, None);
        assert_eq!(c.status.condition.reason, "QuotaExceeded");
        assert!(c.event.unwrap().warning);
    }
}
