//! Golden bytes of the Kubernetes protobuf encodings the estimator protocol carries.
//!
//! The expected bytes were produced by Go's own marshallers (k8s.io/api and
//! k8s.io/apimachinery v0.35.3, the versions of Karmada v1.18.2): a throw-away program run
//! outside this repository called `resource.MustParse(s).Marshal()`,
//! `corev1.Toleration.Marshal()` and `corev1.NodeSelector.Marshal()` on the values below
//! and printed hex. They also follow from protobuf's encoding rules (ascending field numbers,
//! scalar strings always written, `tolerationSeconds` only when set).

use estimator_client::kubeproto::{encode_node_selector, encode_quantity, encode_toleration};
use estimator_client::pb::messages as pb;
use estimator_client::request;
use k8s_openapi::api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use karmada_api::work::{NodeClaim, ReplicaRequirements};
use prost::Message;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn quantities_are_sent_in_canonical_form() {
    let cases = [
        ("500m", "0a043530306d"),
        ("1Gi", "0a03314769"),
        ("0", "0a0130"),
        ("1000m", "0a0131"),
        ("1.5Gi", "0a06313533364d69"),
        ("100M", "0a043130304d"),
        ("0.1", "0a043130306d"),
        ("1e3", "0a03316533"),
        ("2", "0a0132"),
        ("128974848", "0a09313238393734383438"),
        ("129e6", "0a053132396536"),
        ("129M", "0a043132394d"),
        ("123Mi", "0a053132334d69"),
        ("4096Ki", "0a03344d69"),
        ("1024Mi", "0a03314769"),
        ("1536Mi", "0a06313533364d69"),
        ("1k", "0a02316b"),
        ("1000", "0a02316b"),
        ("12e6", "0a0431326536"),
        ("1.5", "0a05313530306d"),
        ("250m", "0a043235306d"),
        ("100Gi", "0a053130304769"),
        ("0.5Gi", "0a053531324d69"),
        ("1m", "0a02316d"),
        ("1n", "0a02316e"),
        ("1u", "0a023175"),
        ("0.0001", "0a0431303075"),
        (
            "9223372036854775807",
            "0a1339323233333732303336383534373735383037",
        ),
        ("1E", "0a023145"),
        ("1Ei", "0a03314569"),
        ("500Mi", "0a053530304d69"),
        ("2000m", "0a0132"),
    ];
    for (input, want) in cases {
        assert_eq!(
            hex(&encode_quantity(&Quantity(input.to_string()))),
            want,
            "quantity {input}"
        );
    }
    // JSON decoding trims surrounding spaces.
    assert_eq!(
        hex(&encode_quantity(&Quantity(" 500m ".into()))),
        "0a043530306d"
    );
}

fn toleration(
    key: &str,
    operator: &str,
    value: &str,
    effect: &str,
    seconds: Option<i64>,
) -> Toleration {
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Toleration {
        key: opt(key),
        operator: opt(operator),
        value: opt(value),
        effect: opt(effect),
        toleration_seconds: seconds,
    }
}

#[test]
fn tolerations_write_every_string_and_seconds_only_when_set() {
    let cases = [
        (toleration("", "", "", "", None), "0a0012001a002200"),
        (
            toleration("", "Exists", "", "", None),
            "0a0012064578697374731a002200",
        ),
        (
            toleration(
                "node.kubernetes.io/not-ready",
                "Exists",
                "",
                "NoExecute",
                Some(300),
            ),
            "0a1c6e6f64652e6b756265726e657465732e696f2f6e6f742d726561647912064578697374731a0022094e6f4578656375746528ac02",
        ),
        (
            toleration("dedicated", "Equal", "gpu", "NoSchedule", None),
            "0a096465646963617465641205457175616c1a03677075220a4e6f5363686564756c65",
        ),
        (
            toleration("k", "", "", "", Some(0)),
            "0a016b12001a0022002800",
        ),
    ];
    for (t, want) in cases {
        assert_eq!(hex(&encode_toleration(&t)), want, "{t:?}");
    }
}

fn requirement(key: &str, operator: &str, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: operator.into(),
        values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
    }
}

#[test]
fn node_selectors() {
    let empty = NodeSelector {
        node_selector_terms: vec![],
    };
    assert_eq!(hex(&encode_node_selector(&empty)), "");
    let empty_term = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm::default()],
    };
    assert_eq!(hex(&encode_node_selector(&empty_term)), "0a00");
    let full = NodeSelector {
        node_selector_terms: vec![
            NodeSelectorTerm {
                match_expressions: Some(vec![
                    requirement("topology.kubernetes.io/zone", "In", &["z1", "z2"]),
                    requirement("gpu", "Exists", &[]),
                ]),
                match_fields: None,
            },
            NodeSelectorTerm {
                match_expressions: None,
                match_fields: Some(vec![requirement("metadata.name", "NotIn", &["n1"])]),
            },
        ],
    };
    assert_eq!(
        hex(&encode_node_selector(&full)),
        "0a3a0a290a1b746f706f6c6f67792e6b756265726e657465732e696f2f7a6f6e651202496e1a027a311a027a320a0d0a0367707512064578697374730a1c121a0a0d6d657461646174612e6e616d6512054e6f74496e1a026e31"
    );
    let empty_value = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(vec![requirement("a", "In", &[""])]),
            match_fields: None,
        }],
    };
    assert_eq!(
        hex(&encode_node_selector(&empty_value)),
        "0a0b0a090a01611202496e1a00"
    );
}

#[test]
fn typed_fields_embed_the_same_bytes_as_the_bytes_fields() {
    let affinity = NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Some(vec![requirement("gpu", "Exists", &[])]),
            match_fields: None,
        }],
    };
    let claim = NodeClaim {
        hard_node_affinity: Some(affinity.clone()),
        node_selector: Default::default(),
        tolerations: vec![toleration("dedicated", "Equal", "gpu", "NoSchedule", None)],
    };
    let reqs = ReplicaRequirements {
        node_claim: Some(claim),
        resource_request: [
            ("cpu".to_string(), Quantity("1000m".into())),
            ("memory".to_string(), Quantity("1.5Gi".into())),
        ]
        .into(),
        namespace: "ns".into(),
        priority_class_name: String::new(),
    };
    let message = request::replica_requirements(&reqs);
    #[allow(deprecated)]
    {
        let claim = message.node_claim.as_ref().unwrap();
        assert_eq!(
            claim.node_affinity.as_ref().unwrap().encode_to_vec(),
            claim.node_affinity_bytes
        );
        assert_eq!(claim.node_affinity_bytes, encode_node_selector(&affinity));
        assert_eq!(
            claim.tolerations[0].encode_to_vec(),
            claim.tolerations_bytes[0]
        );
        for (name, q) in &message.resource_request {
            assert_eq!(
                &q.encode_to_vec(),
                message.resource_request_bytes.get(name).unwrap()
            );
        }
        assert_eq!(message.resource_request["cpu"].string.as_deref(), Some("1"));
        assert_eq!(
            message.resource_request["memory"].string.as_deref(),
            Some("1536Mi")
        );
    }
    // The whole message decodes back to itself (wire round trip).
    let decoded = pb::ReplicaRequirements::decode(message.encode_to_vec().as_slice()).unwrap();
    assert_eq!(decoded, message);
}

#[test]
fn requests_without_requirements_carry_only_the_cluster() {
    use scheduler_core::{Ask, EstimateRequest};
    let resource = karmada_api::work::ObjectReference {
        kind: "ConfigMap".into(),
        name: "c".into(),
        ..Default::default()
    };
    let req = EstimateRequest {
        ask: Ask::Replicas,
        resource: &resource,
        replica_requirements: None,
        components: &[],
        namespace: "",
        assumed: None,
    };
    let mut message = request::max_available_replicas(&req);
    message.cluster = "m1".into();
    // field 1, length 2, "m1"
    assert_eq!(hex(&message.encode_to_vec()), "0a026d31");
    assert_eq!(
        request::object_metadata(&resource),
        "kind=ConfigMap, name=/c"
    );
}
