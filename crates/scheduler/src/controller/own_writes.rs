//! The generation bumps this scheduler causes itself, so that their watch events do not
//! schedule the binding again.
//!
//! The reference writes `spec.clusters`, which bumps `metadata.generation`; the watch event of
//! that write passes its update filter (generation changed) and queues the binding once more.
//! That extra round costs a third write per binding: a Divided binding gets its
//! `schedulerObservedGeneration` synced to the new generation, a Duplicated one is scheduled
//! again and its `lastScheduledTime` rewritten. We write the new generation as observed in the
//! status patch already (the result patch carries a resourceVersion precondition, so the new
//! generation is exactly our write on top of what we scheduled) and drop the event of our own
//! write here.
//!
//! An expectation is registered *before* the result patch is sent, because the watch event can
//! arrive before the HTTP response. Dropping it is safe whatever happens next: a generation is
//! never reused, and the only object that can carry generation `G+1` after a successful
//! preconditioned patch from `G` is our write (status and metadata changes do not queue
//! bindings anyway). When the patch fails the expectation is withdrawn.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::cycle::sink::ResultHook;
use crate::model::binding::{Binding, BindingKey};
use crate::model::condition::ApiFailure;
use crate::store::workload::WorkloadIndex;

/// Expected generations of our own result patches, by binding: a range, because one cycle
/// may write `spec.clusters` more than once (see `cycle/attempt.rs`, the echo passes).
#[derive(Debug, Default)]
pub struct OwnWrites(Mutex<HashMap<BindingKey, (i64, i64)>>);

impl OwnWrites {
    /// A result patch that changes the spec of `key` at `generation` is about to be sent.
    pub fn expect(&self, key: &BindingKey, generation: i64) {
        let mut map = self.lock();
        let next = generation + 1;
        match map.get_mut(key) {
            // The next write of the same cycle: its echo and the earlier ones are ours.
            Some(range) if range.1 == generation => range.1 = next,
            _ => {
                map.insert(key.clone(), (next, next));
            }
        }
    }

    /// The patch failed: events for `key` are someone else's again.
    pub fn withdraw(&self, key: &BindingKey) {
        self.lock().remove(key);
    }

    /// Whether an update of `key` to `generation` is the echo of our own write (consumed).
    pub fn is_echo(&self, key: &BindingKey, generation: i64) -> bool {
        let mut map = self.lock();
        let Some(&(low, high)) = map.get(key) else {
            return false;
        };
        if generation < low {
            return false;
        }
        if generation >= high {
            // The last of ours, or newer than ours (overtaken): nothing more to expect.
            map.remove(key);
            return generation == high;
        }
        map.insert(key.clone(), (generation + 1, high));
        true
    }

    /// The binding is gone.
    pub fn forget(&self, key: &BindingKey) {
        self.lock().remove(key);
    }

    /// Bindings with an expectation (tests).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.lock().len()
    }

    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BindingKey, (i64, i64)>> {
        self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Alone (the cycle's tests), the expectation half of the daemon's after-write hook,
/// [`AfterWrite`], which also keeps the written results.
impl ResultHook for OwnWrites {
    fn sending(&self, key: &BindingKey, generation: i64, bumps_generation: bool) {
        if bumps_generation {
            self.expect(key, generation);
        }
    }

    fn answered(
        &self,
        key: &BindingKey,
        bumps_generation: bool,
        answer: Result<&Binding, &ApiFailure>,
    ) {
        if bumps_generation && answer.is_err() {
            self.withdraw(key);
        }
    }
}

/// The daemon's after-write hook: the expected echoes, and the results just written for the
/// workload index (with `WorkloadAffinity`).
pub struct AfterWrite {
    pub own_writes: Arc<OwnWrites>,
    pub workload: Option<Arc<WorkloadIndex>>,
}

impl ResultHook for AfterWrite {
    fn sending(&self, key: &BindingKey, generation: i64, bumps_generation: bool) {
        self.own_writes.sending(key, generation, bumps_generation);
    }

    fn answered(
        &self,
        key: &BindingKey,
        bumps_generation: bool,
        answer: Result<&Binding, &ApiFailure>,
    ) {
        self.own_writes.answered(key, bumps_generation, answer);
        // A result just written that the watch has not delivered yet.
        if let (Some(w), Ok(stored)) = (&self.workload, answer) {
            w.written(stored);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> BindingKey {
        BindingKey::rb("ns", name)
    }

    #[test]
    fn only_the_expected_generation_is_an_echo_and_only_once() {
        let w = OwnWrites::default();
        w.expect(&key("a"), 4);
        assert!(!w.is_echo(&key("b"), 5), "another binding");
        assert!(!w.is_echo(&key("a"), 4), "an older generation");
        assert!(w.is_echo(&key("a"), 5));
        assert!(!w.is_echo(&key("a"), 5), "consumed");
        assert!(w.is_empty());
    }

    #[test]
    fn consecutive_writes_of_one_cycle_are_all_echoes() {
        let w = OwnWrites::default();
        w.expect(&key("a"), 4);
        w.expect(&key("a"), 5);
        assert!(w.is_echo(&key("a"), 5));
        assert!(w.is_echo(&key("a"), 6));
        assert!(w.is_empty());
        // Events may also be coalesced by a relist: the newest alone is enough.
        w.expect(&key("a"), 6);
        w.expect(&key("a"), 7);
        assert!(w.is_echo(&key("a"), 8));
        assert!(w.is_empty());
    }

    #[test]
    fn a_newer_generation_clears_the_expectation() {
        let w = OwnWrites::default();
        w.expect(&key("a"), 4);
        assert!(!w.is_echo(&key("a"), 7));
        assert!(w.is_empty());
        w.expect(&key("a"), 7);
        w.withdraw(&key("a"));
        assert!(!w.is_echo(&key("a"), 8));
    }
}
