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

/// Decode a typed object from JSON text, as the API server sends it.
///
/// Straight from the text, with no `serde_json::Value` in between: the fields the daemons do
/// not model are skipped by serde_json's iterative scanner and the opaque ones
/// ([`RawJson`](crate::work::RawJson)) are kept as text, so an object nested deeper than a
/// `Value` can hold (Go's decoder takes 10,000 levels) decodes as Go decodes it.
///
/// A field given twice takes its last value, as in Go: serde refuses a struct's field given
/// twice, so a text it refuses is decoded again through a value where one can hold it.
pub fn from_json_str<T: DeserializeOwned>(text: &str) -> Result<T, DecodeError> {
    match serde_json::from_str(text) {
        Ok(t) => Ok(t),
        Err(_) => {
            if let Ok(value) = serde_json::from_str::<serde_json::Value>(text) {
                return from_json_ref(&value);
            }
            let mut de = serde_json::Deserializer::from_str(text);
            serde_path_to_error::deserialize(&mut de).map_err(DecodeError::from_path)
        }
    }
}

/// Decode a typed object from one YAML document (through a JSON value, so that the opaque
/// fields, which keep JSON text, decode as they do from the API server).
pub fn from_yaml_str<T: DeserializeOwned>(text: &str) -> Result<T, DecodeError> {
    let de = serde_yaml::Deserializer::from_str(text);
    let value: serde_json::Value =
        serde_path_to_error::deserialize(de).map_err(DecodeError::from_path)?;
    from_json_value(value)
}

/// How deep [`shallow_value`] builds the value: well past the deepest field of a binding's or a
/// cluster's schema that the daemons read leniently (metadata, `spec.schedulerName`, ...).
pub const SHALLOW_DEPTH: usize = 32;

/// JSON text as a value whose containers deeper than `depth` levels are `null`.
///
/// For reading a few known fields of an object leniently (its identity, the event filter's
/// fields, what a malformed object still tells) whatever its nesting: the skipped subtrees
/// are scanned iteratively, so neither serde_json's recursion limit nor the stack is at stake.
pub fn shallow_value(text: &str, depth: usize) -> serde_json::Result<serde_json::Value> {
    use serde::de::DeserializeSeed as _;
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Capped(depth).deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// Builds a value `0` levels deep at most (see [`shallow_value`]).
struct Capped(usize);

impl<'de> serde::de::DeserializeSeed<'de> for Capped {
    type Value = serde_json::Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Capped {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(v.into())
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::new();
        if self.0 == 0 {
            while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
            return Ok(serde_json::Value::Null);
        }
        while let Some(v) = seq.next_element_seed(Capped(self.0 - 1))? {
            items.push(v);
        }
        Ok(items.into())
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = serde_json::Map::new();
        if self.0 == 0 {
            while map
                .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
                .is_some()
            {}
            return Ok(serde_json::Value::Null);
        }
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(Capped(self.0 - 1))?;
            fields.insert(k, v);
        }
        Ok(fields.into())
    }
}

/// At most `max` bytes of `text` (cut on a character boundary, `…` added when cut): what a log
/// line or a message quotes of an input of any size.
pub fn excerpt(text: &str, max: usize) -> std::borrow::Cow<'_, str> {
    if text.len() <= max {
        return text.into();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end]).into()
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

    /// A binding whose member status nests 10,000 levels (Go's decoder limit) decodes from
    /// its text, the status kept as it came; its neighbours' fields read as usual.
    #[test]
    fn a_status_of_any_depth_decodes_from_text() {
        let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
        let text = format!(
            r#"{{"metadata":{{"name":"a","namespace":"n"}},"spec":{{"replicas":2,"resource":{{"apiVersion":"apps/v1","kind":"Deployment","name":"a"}}}},"status":{{"aggregatedStatus":[{{"clusterName":"m1","status":{{"readyReplicas":2,"deep":{deep}}}}}]}}}}"#
        );
        let rb: ResourceBinding = from_json_str(&text).unwrap();
        assert_eq!(rb.spec.replicas, 2);
        let status = rb.status.aggregated_status[0].status.as_ref().unwrap();
        assert_eq!(
            status.as_str(),
            format!(r#"{{"readyReplicas":2,"deep":{deep}}}"#)
        );
        assert_eq!(
            status.field("readyReplicas").unwrap(),
            Some(serde_json::json!(2))
        );
        assert_eq!(status.field("missing").unwrap(), None);
        // Too deep for a value: written as null, never a panic or a stack overflow.
        assert_eq!(status.value(), serde_json::Value::Null);
        assert_eq!(serde_json::to_value(&rb).unwrap()["spec"]["replicas"], 2);

        let shallow = shallow_value(&text, SHALLOW_DEPTH).unwrap();
        assert_eq!(shallow["metadata"]["name"], "a");
        assert_eq!(
            shallow["status"]["aggregatedStatus"][0]["status"]["readyReplicas"],
            2
        );
        assert!(shallow["status"]["aggregatedStatus"][0]["status"]["deep"].is_array());
        // Containers past the depth are null, scalars above it are kept.
        let v = shallow_value(r#"{"a":{"b":{"c":1}},"d":2}"#, 2).unwrap();
        assert_eq!(v, serde_json::json!({"a": {"b": null}, "d": 2}));
    }

    #[test]
    fn a_field_given_twice_takes_its_last_value_as_in_go() {
        let rb: ResourceBinding = from_json_str(
            r#"{"spec":{"replicas":1,"resource":{"apiVersion":"apps/v1","kind":"A","kind":"Deployment","name":"a"},"replicas":4}}"#,
        )
        .unwrap();
        assert_eq!(rb.spec.replicas, 4);
        assert_eq!(rb.spec.resource.kind, "Deployment");
        // Refused for its content, it still names the field.
        let e = from_json_str::<ResourceBinding>(r#"{"spec":{"replicas":1,"replicas":"x"}}"#)
            .unwrap_err();
        assert_eq!(e.path, "spec.replicas", "{e}");
    }

    #[test]
    fn decoding_from_text_and_from_yaml_names_the_field() {
        let e = from_json_str::<ResourceBinding>(
            r#"{"spec":{"placement":{"replicaScheduling":{"replicaSchedulingType":"Sideways"}}}}"#,
        )
        .unwrap_err();
        assert_eq!(
            e.path, "spec.placement.replicaScheduling.replicaSchedulingType",
            "{e}"
        );
        let e = from_yaml_str::<ResourceBinding>(
            "spec:\n  placement:\n    replicaScheduling:\n      replicaSchedulingType: Sideways\n",
        )
        .unwrap_err();
        assert_eq!(
            e.path, "spec.placement.replicaScheduling.replicaSchedulingType",
            "{e}"
        );
        let rb: ResourceBinding = from_yaml_str(
            "spec:\n  replicas: 3\n  resource: {apiVersion: apps/v1, kind: Deployment, name: a}\nstatus:\n  aggregatedStatus:\n  - clusterName: m1\n    status: {readyReplicas: 1}\n",
        )
        .unwrap();
        let status = rb.status.aggregated_status[0].status.as_ref().unwrap();
        assert_eq!(status.value()["readyReplicas"], 1);
    }

    #[test]
    fn an_excerpt_is_cut_on_a_character_boundary() {
        assert_eq!(excerpt("short", 10), "short");
        assert_eq!(excerpt("ééé", 3), "é…");
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
