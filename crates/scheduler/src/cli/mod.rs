//! The binary's subcommands, dispatched before the daemon's flags are parsed: `simulate`
//! ([`simulate`]: the daemon's cycle over objects read from files) and `explain` ([`explain`]:
//! the same over objects read from the live control plane). Both run the library's cycle
//! against its in-memory store.

pub mod explain;
pub mod simulate;
