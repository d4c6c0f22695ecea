//! The data of scheduling: one view over ResourceBinding and ClusterResourceBinding
//! ([`binding`]), the applied-placement annotation ([`annotation`]), attempt errors and the
//! `Scheduled` condition ([`condition`]), and the reference's ladder deciding whether a
//! binding needs scheduling ([`decision`]).

pub mod annotation;
pub mod binding;
pub mod condition;
pub mod decision;
