//! Decoding with errors that name the offending field.
//!
//! A malformed binding must produce a message an operator can act on (`spec.placement.
//! replicaScheduling.replicaSchedulingType: unknown variant ...`), so every decode of user
//! objects that fails is told through [`serde_path_to_error`].
//!
//! Only a failure pays for the path: tracking it allocates a string for every map key of
//! the document (every field of every object on every watch event), while a well-formed
//! object, nearly all of them, decodes from a borrowed value with no key copied. A failed
//! decode is run again with the path tracked; it fails the same way, now with its field.

use serde::de::DeserializeOwned;

/// A decode failure with the JSON path of the field that failed.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct DecodeError {
    /// Dotted path from the document root, `.` when the root itself is wrong.
    pub path: String,
    /// What serde reported.
    pub message: String,
}

impl DecodeError {
    fn from_path<E: std::fmt::Display>(e: serde_path_to_error::Error<E>) -> Self {
        let path = e.path().to_string();
        Self {
            path,
            message: e.inner().to_string(),
        }
    }
}

/// Decode a typed object from a JSON value.
pub fn from_json_value<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, DecodeError> {
    from_json_ref(&value)
}

/// Decode a typed object from a borrowed JSON value: the caller keeps the value (to read
/// what it can of a malformed object) without copying it first.
pub fn from_json_ref<T: DeserializeOwned>(value: &serde_json::Value) -> Result<T, DecodeError> {
    match T::deserialize(value) {
        Ok(t) => Ok(t),
        Err(_) => serde_path_to_error::deserialize(value).map_err(DecodeError::from_path),
    }
}

/// Decode a typed object from one YAML document.
pub fn from_yaml_str<T: DeserializeOwned>(text: &str) -> Result<T, DecodeError> {
    let de = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(DecodeError::from_path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ResourceBinding;

    #[test]
    fn a_well_formed_object_decodes_as_serde_json_does() {
        let doc = serde_json::json!({
            "apiVersion": "work.karmada.io/v1alpha2",
            "kind": "ResourceBinding",
            "metadata": {"name": "a", "namespace": "n", "generation": 3},
            "spec": {
                "replicas": 4,
                "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "a"},
                "placement": {"replicaScheduling": {"replicaSchedulingType": "Divided"}},
                "clusters": [{"name": "m1", "replicas": 4}]
            }
        });
        let ours: ResourceBinding = from_json_value(doc.clone()).unwrap();
        let plain: ResourceBinding = serde_json::from_value(doc).unwrap();
        assert_eq!(
            serde_json::to_value(&ours).unwrap(),
            serde_json::to_value(&plain).unwrap()
        );
        assert_eq!(ours.spec.clusters[0].name, "m1");
    }

    #[test]
    fn a_malformed_object_names_its_field() {
        let doc = serde_json::json!({
            "metadata": {"name": "a"},
            "spec": {"placement": {"replicaScheduling": {"replicaSchedulingType": "Sideways"}}}
        });
        let e = from_json_value::<ResourceBinding>(doc).unwrap_err();
        assert_eq!(
            e.path, "spec.placement.replicaScheduling.replicaSchedulingType",
            "{e}"
        );
        assert!(e.message.contains("unknown variant `Sideways`"), "{e}");
    }
}
