//! Configuration: every flag of the reference, parsed as pflag parses them ([`options`]).

pub mod options;
