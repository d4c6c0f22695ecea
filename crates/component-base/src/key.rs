//! The one key of an object in the caches, queues and logs of both daemons.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// `namespace/name`, or `name` for a cluster-scoped object: client-go's cache key, in
/// structured form so that no caller splits or joins the text again.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectKey {
    /// Empty for a cluster-scoped object.
    pub namespace: String,
    pub name: String,
}

impl ObjectKey {
    pub fn new(namespace: &str, name: &str) -> Self {
        Self {
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The key of an object from its metadata (a missing field reads as empty).
    pub fn of(meta: &ObjectMeta) -> Self {
        Self::new(
            meta.namespace.as_deref().unwrap_or_default(),
            meta.name.as_deref().unwrap_or_default(),
        )
    }
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaced_and_cluster_scoped_keys_read_as_client_go_writes_them() {
        let meta = ObjectMeta {
            namespace: Some("ns".into()),
            name: Some("b".into()),
            ..Default::default()
        };
        assert_eq!(ObjectKey::of(&meta).to_string(), "ns/b");
        assert_eq!(ObjectKey::new("", "c").to_string(), "c");
        assert_eq!(ObjectKey::of(&ObjectMeta::default()), ObjectKey::default());
    }
}
