//! Configuration: every flag of the reference, parsed as pflag parses them ([`options`]), and
//! what they build: the scheduler-core pipeline and the estimator connections ([`build`]).

pub mod build;
pub mod options;
