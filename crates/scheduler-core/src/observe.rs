//! Hooks around the steps of the pipeline, so that the daemon can time them.
//!
//! The reference observes `karmada_scheduler_scheduling_algorithm_duration_seconds` per
//! step. The core has no clock (it stays pure and deterministic), so the caller provides
//! one: [`StepObserver::started`] returns an opaque token (e.g. a start time) that comes
//! back with [`StepObserver::finished`]. Without an observer nothing is called.

/// A step of one pipeline run, as the reference labels it (`schedule_step`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Step {
    /// Running the filter plugins over the snapshot.
    Filter,
    /// Running the score plugins over the feasible clusters.
    Score,
    /// Available replicas, grouping and cluster selection.
    Select,
    /// Dividing the replicas among the selected clusters.
    AssignReplicas,
}

impl Step {
    /// All steps, in pipeline order.
    pub const ALL: [Step; 4] = [
        Step::Filter,
        Step::Score,
        Step::Select,
        Step::AssignReplicas,
    ];

    /// The reference's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Step::Filter => "Filter",
            Step::Score => "Score",
            Step::Select => "Select",
            Step::AssignReplicas => "AssignReplicas",
        }
    }
}

/// Told when each step starts and ends; a step that fails still ends (like the
/// reference's deferred observation), steps that are never reached are not reported.
pub trait StepObserver: Send + Sync {
    /// `step` begins; the value returned is handed back to [`StepObserver::finished`].
    fn started(&self, step: Step) -> u64;
    /// `step` ended; `token` is what [`StepObserver::started`] returned for it.
    fn finished(&self, step: Step, token: u64);
}

/// Reports the end of a step when dropped, so early returns are covered.
pub(crate) struct StepGuard<'a> {
    observer: Option<&'a dyn StepObserver>,
    step: Step,
    token: u64,
}

impl<'a> StepGuard<'a> {
    /// Start `step` on `observer`, if there is one.
    pub(crate) fn start(observer: Option<&'a dyn StepObserver>, step: Step) -> Self {
        let token = observer.map_or(0, |o| o.started(step));
        Self {
            observer,
            step,
            token,
        }
    }
}

impl Drop for StepGuard<'_> {
    fn drop(&mut self) {
        if let Some(o) = self.observer {
            o.finished(self.step, self.token);
        }
    }
}
