//! [`ClusterName`]: a shared, immutable cluster name.
//!
//! `spec.clusters` of a Duplicated binding lists every cluster it runs in; in a fleet of a
//! thousand clusters the scheduler's cache holds millions of such entries, yet only as many
//! distinct names as there are clusters. Each name is therefore stored once and shared: an
//! entry costs one thin pointer (8 bytes, where a `String` takes 24 plus its own allocation).

use std::borrow::Borrow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, LazyLock, RwLock};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How many distinct names are shared at most. Cluster names are few; past this bound (names
/// from bad input, say) a name is simply allocated on its own, so the table cannot grow
/// without limit.
const MAX_SHARED: usize = 1 << 16;

static SHARED: LazyLock<RwLock<HashSet<ClusterName>>> = LazyLock::new(Default::default);

/// A cluster name, shared between every object that names the same cluster.
///
/// Behaves as a `str` (`Deref`, `Borrow`, comparisons with `str` and `String`), compares and
/// hashes by its text, and (de)serialises as a plain JSON string.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClusterName(Arc<String>);

impl ClusterName {
    /// The shared copy of `name`, adding it to the table when it is new.
    pub fn new(name: &str) -> Self {
        if let Some(shared) = SHARED.read().unwrap_or_else(|p| p.into_inner()).get(name) {
            return shared.clone();
        }
        let mut table = SHARED.write().unwrap_or_else(|p| p.into_inner());
        if let Some(shared) = table.get(name) {
            return shared.clone();
        }
        let fresh = Self(Arc::new(name.to_owned()));
        if table.len() < MAX_SHARED {
            table.insert(fresh.clone());
        }
        fresh
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl Default for ClusterName {
    fn default() -> Self {
        Self::new("")
    }
}

impl Deref for ClusterName {
    type Target = str;
    fn deref(&self) -> &str {
        self.0.as_str()
    }
}

impl AsRef<str> for ClusterName {
    fn as_ref(&self) -> &str {
        self.0.as_str()
    }
}

impl Borrow<str> for ClusterName {
    fn borrow(&self) -> &str {
        self.0.as_str()
    }
}

impl fmt::Debug for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.0.as_str(), f)
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.0.as_str(), f)
    }
}

impl From<&str> for ClusterName {
    fn from(name: &str) -> Self {
        Self::new(name)
    }
}

impl From<&String> for ClusterName {
    fn from(name: &String) -> Self {
        Self::new(name)
    }
}

impl From<String> for ClusterName {
    fn from(name: String) -> Self {
        Self::new(&name)
    }
}

impl From<&ClusterName> for ClusterName {
    fn from(name: &ClusterName) -> Self {
        name.clone()
    }
}

impl From<ClusterName> for String {
    fn from(name: ClusterName) -> Self {
        Arc::unwrap_or_clone(name.0)
    }
}

impl PartialEq<str> for ClusterName {
    fn eq(&self, other: &str) -> bool {
        self.0.as_str() == other
    }
}

impl PartialEq<&str> for ClusterName {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_str() == *other
    }
}

impl PartialEq<String> for ClusterName {
    fn eq(&self, other: &String) -> bool {
        self.0.as_str() == other.as_str()
    }
}

impl PartialEq<ClusterName> for str {
    fn eq(&self, other: &ClusterName) -> bool {
        self == other.0.as_str()
    }
}

impl PartialEq<ClusterName> for &str {
    fn eq(&self, other: &ClusterName) -> bool {
        *self == other.0.as_str()
    }
}

impl PartialEq<ClusterName> for String {
    fn eq(&self, other: &ClusterName) -> bool {
        self.as_str() == other.0.as_str()
    }
}

impl Serialize for ClusterName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.0.as_str())
    }
}

impl<'de> Deserialize<'de> for ClusterName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ClusterName;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ClusterName, E> {
                Ok(ClusterName::new(v))
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_names_share_one_allocation() {
        let a = ClusterName::new("member-a");
        let b: ClusterName = serde_json::from_str("\"member-a\"").unwrap();
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert_eq!(a, b);
        assert_eq!(a, "member-a");
        assert_eq!("member-a".to_string(), a);
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"member-a\"");
        assert_ne!(ClusterName::new("member-b"), a);
    }

    #[test]
    fn orders_and_hashes_as_its_text() {
        let mut names = vec![ClusterName::new("m2"), ClusterName::new("m10"), "m1".into()];
        names.sort();
        assert_eq!(names, ["m1", "m10", "m2"]);
        let set: HashSet<ClusterName> = names.into_iter().collect();
        assert!(set.contains("m10"));
    }

    #[test]
    fn an_entry_of_spec_clusters_stays_small() {
        assert_eq!(std::mem::size_of::<ClusterName>(), 8);
        assert_eq!(std::mem::size_of::<crate::work::TargetCluster>(), 24);
    }

    #[test]
    fn a_non_string_is_refused() {
        let err = serde_json::from_str::<ClusterName>("12").unwrap_err();
        assert!(err.to_string().contains("a string"), "{err}");
    }
}
