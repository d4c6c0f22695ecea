//! `karmada-descheduler`: gives back the replicas a member cluster cannot schedule, as Karmada
//! v1.18.2's descheduler does, over the same Service-aware estimator connection as our
//! karmada-scheduler.
//!
//! - [`options`]: every flag of the reference, parsed as pflag parses them;
//! - [`rules`]: which bindings are looked at and what they become (pure);
//! - [`controller`]: the caches, the periodic pass, the estimator calls, the writes and events;
//! - [`daemon`]: component-base's lifecycle around the controller.

pub mod controller;
pub mod daemon;
pub mod options;
pub mod rules;
