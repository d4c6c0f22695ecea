//! Status codes of plugin results: a leaf, so that the framework and its observers both
//! depend on it and not on each other.

/// The status code of a plugin result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Code {
    /// The cluster fits (also what a missing result means upstream).
    Success,
    /// The cluster does not fit; the reasons say why.
    Unschedulable,
    /// The plugin itself failed.
    Error,
}

impl Code {
    /// The reference's name of the code (`Success`, `Unschedulable`, `Error`), as in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "Success",
            Self::Unschedulable => "Unschedulable",
            Self::Error => "Error",
        }
    }
}
