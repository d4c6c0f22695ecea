//! The seeded PRNG and stable hash shared with the tests (`testenv::rng`): the workload must be
//! the same for a given seed on every machine and every version of the dependencies.

pub use testenv::rng::{Rng, fnv1a};
