//! The writes of a [`Cycle`], preconditioned on the resourceVersion they were computed
//! against: the result patch (announced to the after-write hook) and the status patch, recomputed on
//! a fresh read when it conflicts.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::Value;

use super::{Cycle, CycleError};
use crate::cycle::patch::{StatusUpdate, status_patch, with_precondition};
use crate::cycle::sink::Target;
use crate::model::binding::{Binding, BindingKey};
use crate::model::condition::{ApiFailure, AttemptError};

/// Attempts at the status patch when it keeps conflicting with concurrent writers.
const STATUS_PATCH_ATTEMPTS: usize = 5;

impl Cycle<'_> {
    /// Send a result patch computed against `base`, preconditioned on its resourceVersion,
    /// between the after-write hook's two calls (see [`ResultHook`](crate::store::ResultHook)).
    pub(super) async fn send_result(
        &self,
        key: &BindingKey,
        base: &Binding,
        patch: Value,
        bumps_generation: bool,
    ) -> Result<Binding, ApiFailure> {
        let patch = with_precondition(patch, base.resource_version());
        if let Some(hook) = self.after_write {
            hook.sending(key, base.generation(), bumps_generation);
        }
        let sent = self.writer.patch(key, Target::Main, patch).await;
        if let Some(hook) = self.after_write {
            hook.answered(key, bumps_generation, sent.as_ref());
        }
        sent
    }

    /// Send the status patch against `base`, re-reading and recomputing on conflicts.
    ///
    /// A re-read that finds another generation ends the attempt with [`CycleError::Conflict`]
    /// (the caller decides again on the fresh object): `update` was decided for `base`'s
    /// generation, and writing it over a newer one would mark a newer spec as scheduled, or
    /// move `schedulerObservedGeneration` back, for a decision made on a stale copy. Only
    /// changes that leave the generation alone (another controller's condition) are merged.
    pub(super) async fn write_status(
        &self,
        key: &BindingKey,
        base: &Binding,
        update: &StatusUpdate,
        now: &Time,
    ) -> Result<(), CycleError> {
        let mut base = base.clone();
        for _ in 0..STATUS_PATCH_ATTEMPTS {
            let Some(patch) = status_patch(&base.status, update, now) else {
                return Ok(());
            };
            let patch = with_precondition(patch, base.resource_version());
            match self.writer.patch(key, Target::Status, patch).await {
                Ok(_) => return Ok(()),
                Err(e) if e.is_conflict() => match self.writer.get(key).await {
                    Ok(b) if b.generation() == base.generation() => base = b,
                    Ok(_) => return Err(CycleError::Conflict),
                    Err(e) => return Err(CycleError::Failed(e.into())),
                },
                Err(e) => return Err(CycleError::Failed(e.into())),
            }
        }
        Err(CycleError::Failed(AttemptError::Other(format!(
            "status of {} kept changing during {STATUS_PATCH_ATTEMPTS} attempts",
            key.describe()
        ))))
    }
}
