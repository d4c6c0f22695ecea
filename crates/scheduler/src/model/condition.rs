//! The outcome of one scheduling attempt and the `Scheduled` condition it maps to.
//!
//! The reference classifies Go error values with `errors.As`; here the same classes are enum
//! variants, and [`AttemptError`] prints exactly as the reference's errors print (aggregates as
//! `[e1, e2]`, duplicates removed, a lone member as itself).

use scheduler_core::ScheduleError;

/// `status.conditions[type=Scheduled]` type.
pub const SCHEDULED: &str = "Scheduled";
/// Message of the successful `Scheduled` condition and prefix of the success Event.
pub const SUCCESS_MESSAGE: &str = "Binding has been scheduled successfully.";

pub use component_base::api::ApiFailure;

/// `maxLength` of a condition's `message` in the ResourceBinding CRD (as in every
/// `metav1.Condition`).
pub const MAX_MESSAGE_CHARS: usize = 32768;

/// What ends a message that was cut.
const CUT_MARK: &str = "...";

/// `message` cut to [`MAX_MESSAGE_CHARS`] characters, the last three of them `...`. The API
/// server counts `maxLength` in Unicode code points, so the cut is made between two `char`s,
/// never inside one. A longer message (a decode error quoting a huge field) would make the
/// whole status write fail with 422, and the binding would be retried for ever without its
/// condition.
pub fn cut_message(message: String) -> String {
    if message.chars().nth(MAX_MESSAGE_CHARS).is_none() {
        return message;
    }
    let keep = MAX_MESSAGE_CHARS - CUT_MARK.chars().count();
    let end = message
        .char_indices()
        .nth(keep)
        .map_or(message.len(), |(i, _)| i);
    let mut cut = message;
    cut.truncate(end);
    cut.push_str(CUT_MARK);
    cut
}

/// Why an attempt did not simply succeed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AttemptError {
    /// The algorithm's error, classified.
    Schedule(ScheduleError),
    /// A write failed.
    Api(ApiFailure),
    /// Anything else (missing placement, ...).
    Other(String),
    /// Several errors reported together (apimachinery's `Aggregate`).
    Aggregate(Vec<AttemptError>),
}

impl AttemptError {
    /// apimachinery's `NewAggregate`: no errors → none, otherwise an aggregate.
    pub fn aggregate(errs: Vec<AttemptError>) -> Option<AttemptError> {
        if errs.is_empty() {
            None
        } else {
            Some(AttemptError::Aggregate(errs))
        }
    }

    fn visit<'a>(&'a self, out: &mut Vec<&'a AttemptError>) {
        match self {
            AttemptError::Aggregate(members) => members.iter().for_each(|m| m.visit(out)),
            other => out.push(other),
        }
    }

    /// Whether the error is (not merely contains) an unschedulable error; such bindings are
    /// parked in the unschedulable pool by the priority queue.
    pub fn is_unschedulable(&self) -> bool {
        matches!(
            self,
            AttemptError::Schedule(ScheduleError::Unschedulable(_))
        )
    }

    /// Whether a write of the attempt failed for want of the API server
    /// ([`ApiFailure::is_transient`]) rather than by its judgement.
    pub fn is_transient(&self) -> bool {
        self.any_api(ApiFailure::is_transient)
    }

    /// A write the fence refused: this replica's lease lapsed (see `component_base::fence`).
    pub fn is_fenced(&self) -> bool {
        self.any_api(ApiFailure::is_fenced)
    }

    /// A `409 Conflict` from a write with a resourceVersion precondition.
    pub fn is_conflict(&self) -> bool {
        self.any_api(ApiFailure::is_conflict)
    }

    /// Whether any failed request among the leaves is of the kind `pred` tells.
    fn any_api(&self, pred: fn(&ApiFailure) -> bool) -> bool {
        let mut leaves = Vec::new();
        self.visit(&mut leaves);
        leaves
            .iter()
            .any(|e| matches!(e, AttemptError::Api(a) if pred(a)))
    }
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AttemptError::Schedule(e) => write!(f, "{e}"),
            AttemptError::Api(e) => write!(f, "{e}"),
            AttemptError::Other(s) => f.write_str(s),
            AttemptError::Aggregate(members) => {
                if members.len() == 1 {
                    return write!(f, "{}", members[0]);
                }
                let mut leaves = Vec::new();
                self.visit(&mut leaves);
                let mut seen: Vec<String> = Vec::new();
                for leaf in leaves {
                    let msg = leaf.to_string();
                    if !seen.contains(&msg) {
                        seen.push(msg);
                    }
                }
                if seen.len() == 1 {
                    f.write_str(&seen[0])
                } else {
                    write!(f, "[{}]", seen.join(", "))
                }
            }
        }
    }
}

impl std::error::Error for AttemptError {}

impl From<ScheduleError> for AttemptError {
    fn from(e: ScheduleError) -> Self {
        AttemptError::Schedule(e)
    }
}

impl From<ApiFailure> for AttemptError {
    fn from(e: ApiFailure) -> Self {
        AttemptError::Api(e)
    }
}

/// The `Scheduled` condition to set, without its transition time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledCondition {
    pub status: bool,
    pub reason: &'static str,
    pub message: String,
}

/// `getConditionByError`: the condition for an attempt's final error, and whether the error is
/// then dropped (a settled outcome the queue must not retry).
pub fn condition_for(err: Option<&AttemptError>) -> (ScheduledCondition, bool) {
    let cond = |status, reason, message: String| ScheduledCondition {
        status,
        reason,
        message: cut_message(message),
    };
    let Some(err) = err else {
        return (cond(true, "Success", SUCCESS_MESSAGE.to_string()), true);
    };
    match err {
        AttemptError::Schedule(ScheduleError::Unschedulable(_)) => {
            return (cond(false, "Unschedulable", err.to_string()), false);
        }
        AttemptError::Schedule(ScheduleError::Fit(_)) => {
            return (cond(false, "NoClusterFit", err.to_string()), true);
        }
        AttemptError::Aggregate(members) => {
            for m in members {
                if matches!(m, AttemptError::Schedule(ScheduleError::Fit(_))) {
                    return (cond(false, "NoClusterFit", err.to_string()), false);
                }
                if let AttemptError::Api(a) = m
                    && a.code == 403
                    && a.reason == "QuotaExceeded"
                {
                    return (cond(false, "QuotaExceeded", m.to_string()), false);
                }
            }
        }
        _ => {}
    }
    (cond(false, "SchedulerError", err.to_string()), false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use scheduler_core::FitError;

    fn fit() -> AttemptError {
        AttemptError::Schedule(ScheduleError::Fit(FitError {
            num_all_clusters: 2,
            diagnosis: [
                (
                    "m1".to_string(),
                    vec![
                        "cluster(s) did not match the placement cluster affinity constraint"
                            .to_string(),
                    ],
                ),
                (
                    "m2".to_string(),
                    vec![
                        "cluster(s) did not match the placement cluster affinity constraint"
                            .to_string(),
                    ],
                ),
            ]
            .into(),
        }))
    }

    fn api(code: u16, reason: &str, message: &str) -> AttemptError {
        AttemptError::Api(ApiFailure {
            code,
            reason: reason.into(),
            message: message.into(),
        })
    }

    #[test]
    fn the_reference_table() {
        let (c, swallow) = condition_for(None);
        assert_eq!(
            (c.status, c.reason, c.message.as_str(), swallow),
            (true, "Success", SUCCESS_MESSAGE, true)
        );

        let unsched = AttemptError::Schedule(ScheduleError::Unschedulable(
            "failed to assign replicas: failed to scale up: Clusters available replicas 3 are not enough to schedule.".into(),
        ));
        let (c, swallow) = condition_for(Some(&unsched));
        assert_eq!((c.reason, swallow), ("Unschedulable", false));
        assert_eq!(c.message, unsched.to_string());

        let (c, swallow) = condition_for(Some(&fit()));
        assert_eq!((c.reason, swallow), ("NoClusterFit", true));
        assert_eq!(
            c.message,
            "0/2 clusters are available: 2 cluster(s) did not match the placement cluster affinity constraint."
        );

        let agg = AttemptError::Aggregate(vec![fit(), api(500, "InternalError", "boom")]);
        let (c, swallow) = condition_for(Some(&agg));
        assert_eq!((c.reason, swallow), ("NoClusterFit", false));
        assert_eq!(
            c.message,
            "[0/2 clusters are available: 2 cluster(s) did not match the placement cluster affinity constraint., boom]"
        );

        let quota = AttemptError::Aggregate(vec![api(403, "QuotaExceeded", "exceeded quota: q")]);
        let (c, _) = condition_for(Some(&quota));
        assert_eq!(
            (c.reason, c.message.as_str()),
            ("QuotaExceeded", "exceeded quota: q")
        );

        let other =
            AttemptError::Schedule(ScheduleError::Other("failed to select clusters: x".into()));
        let (c, swallow) = condition_for(Some(&other));
        assert_eq!((c.reason, swallow), ("SchedulerError", false));
        let plain = AttemptError::Aggregate(vec![api(500, "InternalError", "boom")]);
        assert_eq!(condition_for(Some(&plain)).0.reason, "SchedulerError");
    }

    /// Messages longer than the CRD's limit are cut to it between characters, shorter ones
    /// are kept whole; the condition built for a huge error fits.
    #[test]
    fn messages_are_cut_to_the_crd_limit() {
        let chars = |s: &str| s.chars().count();
        assert_eq!(cut_message("short".into()), "short");
        let exact = "x".repeat(MAX_MESSAGE_CHARS);
        assert_eq!(cut_message(exact.clone()), exact);
        let long = cut_message("y".repeat(MAX_MESSAGE_CHARS + 1));
        assert_eq!(chars(&long), MAX_MESSAGE_CHARS);
        assert!(long.ends_with("y..."));
        // Multi-byte characters: counted as the API server counts them, never split.
        let wide = cut_message("é€😀".repeat(MAX_MESSAGE_CHARS));
        assert_eq!(chars(&wide), MAX_MESSAGE_CHARS);
        assert!(wide.len() > MAX_MESSAGE_CHARS);
        assert!(wide.starts_with("é€😀é€😀"));
        let huge = AttemptError::Other(format!("failed to decode: {}", "z".repeat(1 << 20)));
        let (c, _) = condition_for(Some(&huge));
        assert_eq!(chars(&c.message), MAX_MESSAGE_CHARS);
        assert!(c.message.starts_with("failed to decode: zzz"));
    }

    #[test]
    fn aggregates_print_like_apimachinery() {
        let a = AttemptError::Aggregate(vec![
            api(500, "", "x"),
            AttemptError::Aggregate(vec![api(500, "", "x"), api(500, "", "y")]),
        ]);
        assert_eq!(a.to_string(), "[x, y]");
        let dup = AttemptError::Aggregate(vec![api(500, "", "x"), api(500, "", "x")]);
        assert_eq!(dup.to_string(), "x");
        assert!(AttemptError::Aggregate(vec![api(409, "Conflict", "c")]).is_conflict());
    }
}
