//! Hooks around the steps of the pipeline, so that the daemon can time them.
//!
//! The reference observes `karmada_scheduler_scheduling_algorithm_duration_seconds` per
//! step. The core has no clock (it stays pure and deterministic), so the caller provides
//! one: [`StepObserver::started`] returns an opaque token (e.g. a start time) that comes
//! back with [`StepObserver::finished`]. Without an observer nothing is called.
//!
//! The same observer is told of every run of an extension point of the plugin framework (the
//! filter plugins on one cluster, the score plugins on the feasible clusters), for
//! `framework_extension_point_duration_seconds`, and, when it asks for it with
//! [`StepObserver::time_plugins`], of every single plugin call, for
//! `plugin_execution_duration_seconds`. Timing every plugin on every cluster costs a clock
//! read per call, so the observer decides per binding (the reference records those samples
//! through a bounded buffer and drops what overflows it).

use crate::status::Code;

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

/// An extension point of the plugin framework, as the reference labels it
/// (`extension_point`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ExtensionPoint {
    /// The filter plugins on one cluster.
    Filter,
    /// The score plugins on the feasible clusters.
    Score,
    /// A score plugin's normalisation of its scores.
    ScoreExtensionNormalize,
}

impl ExtensionPoint {
    /// The reference's label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Filter => "Filter",
            Self::Score => "Score",
            Self::ScoreExtensionNormalize => "ScoreExtensionNormalize",
        }
    }
}

/// Told when each step starts and ends; a step that fails still ends (like the
/// reference's deferred observation), steps that are never reached are not reported.
///
/// The plugin-framework methods have empty defaults, so an observer of steps only needs
/// the first two.
pub trait StepObserver: Send + Sync {
    /// `step` begins; the value returned is handed back to [`StepObserver::finished`].
    fn started(&self, step: Step) -> u64;
    /// `step` ended; `token` is what [`StepObserver::started`] returned for it.
    fn finished(&self, step: Step, token: u64);

    /// A clock reading for the framework hooks below (the same clock as `started`).
    fn clock(&self) -> u64 {
        0
    }
    /// An extension point ran from `token` (a [`StepObserver::clock`] reading) until now,
    /// ending with `code`.
    fn extension_point(&self, _point: ExtensionPoint, _code: Code, _token: u64) {}
    /// Asked once per scheduling pass: whether to report each plugin call of this pass
    /// through [`StepObserver::plugin`].
    fn time_plugins(&self) -> bool {
        false
    }
    /// One plugin ran at `point` from `token` until now, with result `code`.
    fn plugin(&self, _point: ExtensionPoint, _plugin: &'static str, _code: Code, _token: u64) {}
}

/// The observer of one scheduling pass, as the framework sees it: extension points are
/// reported whenever there is an observer, plugin calls only when it asked for them.
#[derive(Clone, Copy, Default)]
pub struct FrameworkObserver<'a> {
    observer: Option<&'a dyn StepObserver>,
    plugins: bool,
}

impl<'a> FrameworkObserver<'a> {
    /// Ask `observer` (if any) whether plugin calls are timed in this pass.
    pub fn new(observer: Option<&'a dyn StepObserver>) -> Self {
        Self {
            observer,
            plugins: observer.is_some_and(|o| o.time_plugins()),
        }
    }

    /// Nothing is reported.
    pub fn none() -> Self {
        Self::default()
    }

    pub(crate) fn point_start(&self) -> u64 {
        self.observer.map_or(0, |o| o.clock())
    }

    pub(crate) fn point_end(&self, point: ExtensionPoint, code: Code, token: u64) {
        if let Some(o) = self.observer {
            o.extension_point(point, code, token);
        }
    }

    pub(crate) fn plugin_start(&self) -> u64 {
        match self.observer {
            Some(o) if self.plugins => o.clock(),
            _ => 0,
        }
    }

    pub(crate) fn plugin_end(
        &self,
        point: ExtensionPoint,
        plugin: &'static str,
        code: Code,
        token: u64,
    ) {
        if let Some(o) = self.observer
            && self.plugins
        {
            o.plugin(point, plugin, code, token);
        }
    }
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
