//! Decoding with errors that name the offending field.
//!
//! A malformed binding must produce a message an operator can act on (`spec.placement.
//! replicaScheduling.replicaSchedulingType: unknown variant ...`), so every decode of user
//! objects goes through [`serde_path_to_error`].

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
    serde_path_to_error::deserialize(value).map_err(DecodeError::from_path)
}

/// Decode a typed object from one YAML document.
pub fn from_yaml_str<T: DeserializeOwned>(text: &str) -> Result<T, DecodeError> {
    let de = serde_yaml::Deserializer::from_str(text);
    serde_path_to_error::deserialize(de).map_err(DecodeError::from_path)
}
