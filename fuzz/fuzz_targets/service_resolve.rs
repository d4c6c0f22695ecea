//! The estimator Service resolver (`estimator_client::resolver::resolve`): a Service and
//! EndpointSlices as the API server sends them (JSON) to the addresses that are dialled,
//! then what the dialler does with each address before connecting (URI, TLS server name).
//!
//! Input: `{"service": <Service or null>, "endpointSlices": [<EndpointSlice>...],
//! "port": <u16>, "endpointRouting": <bool>}`, the Service being
//! `karmada-system/karmada-scheduler-estimator-m1`.
//!
//! Checks besides "no panic": a resolution is never empty, holds no duplicate, no port 0,
//! no address no estimator can have, at most `MAX_ENDPOINTS` endpoints, a few notes;
//! a configured port 0 and only it is refused before the Service is looked at; endpoint
//! origins and only they are balanced; a missing Service and only it gives the DNS fallback; slices labelled for other Services change nothing; addresses print in a form
//! that reads back as the same address; errors name the Service.

#![no_main]

#[global_allocator]
static ALLOC: karmada_fuzz::LimitedAlloc = karmada_fuzz::LimitedAlloc;

use estimator_client::options::EstimatorOptions;
use estimator_client::resolver::{
    self, Address, DialStrategy, Origin, SERVICE_NAME_LABEL, TLS_SERVER_NAME_ANNOTATION,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use libfuzzer_sys::fuzz_target;
use serde::Deserialize;

const NAMESPACE: &str = "karmada-system";
const NAME: &str = "karmada-scheduler-estimator-m1";

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Input {
    #[serde(default)]
    service: Option<Service>,
    #[serde(default)]
    endpoint_slices: Vec<EndpointSlice>,
    #[serde(default = "default_port")]
    port: u16,
    #[serde(default)]
    endpoint_routing: bool,
}

fn default_port() -> u16 {
    10352
}

fn check_address(a: &Address) {
    assert_ne!(a.port(), 0, "{a}: port 0");
    assert_eq!(
        resolver::check_host(a.host()),
        Ok(()),
        "{a}: an address no estimator can have"
    );
    assert_eq!(
        &Address::new(a.host(), a.port()),
        a,
        "address not normalised"
    );
    let shown = a.to_string();
    assert!(shown.ends_with(&format!(":{}", a.port())), "{shown}");
    if a.ip().is_some_and(|ip| ip.is_ipv6()) {
        assert!(shown.starts_with('['), "{shown}: IPv6 host not bracketed");
    }
    // What the dialler does next; an unusable host is an error there, never a panic.
    let _ = tonic::transport::Endpoint::from_shared(format!("http://{a}"));
    let _ = estimator_client::tls::server_name(a.host(), None);
}

fuzz_target!(|data: &[u8]| {
    let Ok(input) = serde_json::from_slice::<Input>(data) else {
        return;
    };
    let service = input.service.as_ref();
    let resolve = |slices: &[EndpointSlice]| {
        resolver::resolve(
            NAMESPACE,
            NAME,
            input.port,
            service,
            slices,
            input.endpoint_routing,
        )
    };
    let result = resolve(&input.endpoint_slices);

    // Slices of other Services are ignored.
    let own: Vec<EndpointSlice> = input
        .endpoint_slices
        .iter()
        .filter(|s| {
            s.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(SERVICE_NAME_LABEL))
                .is_some_and(|n| n == NAME)
        })
        .cloned()
        .collect();
    assert_eq!(
        resolve(&own),
        result,
        "slices of other Services changed the result"
    );

    match &result {
        Ok(r) => {
            assert!(!r.addresses.is_empty(), "empty resolution");
            for (i, a) in r.addresses.iter().enumerate() {
                check_address(a);
                assert!(!r.addresses[..i].contains(a), "{a} listed twice");
            }
            let endpoints = matches!(r.origin, Origin::Endpoints | Origin::RoutedEndpoints);
            assert_eq!(r.strategy == DialStrategy::Balance, endpoints, "{r:?}");
            assert!(r.addresses.len() <= resolver::MAX_ENDPOINTS.max(4), "{r:?}");
            // However many entries are refused, the notes stay a few short lines.
            assert!(r.notes.len() <= 8, "{:?}", r.notes);
            assert_eq!(service.is_none(), r.origin == Origin::DnsFallback, "{r:?}");
            if let Some(n) = &r.server_name {
                assert!(!n.is_empty() && n.trim() == n, "{n:?}");
                let _ = estimator_client::tls::server_name("ignored", Some(n));
            }
            let annotated = service
                .and_then(|s| s.metadata.annotations.as_ref())
                .and_then(|a| a.get(TLS_SERVER_NAME_ANNOTATION))
                .is_some_and(|n| !n.trim().is_empty());
            assert_eq!(r.server_name.is_some(), annotated);
        }
        Err(e) => {
            assert!(
                service.is_some() || input.port == 0,
                "a missing Service always resolves for a usable port"
            );
            assert_eq!(
                input.port == 0,
                e.to_string().contains("configured estimator port is 0"),
                "{e}"
            );
            assert!(
                e.to_string()
                    .starts_with(&format!("estimator service \"{NAMESPACE}/{NAME}\"")),
                "{e}"
            );
        }
    }

    // The reverse mapping the cache uses on Service events.
    let options = EstimatorOptions::default();
    if let Some(name) = service.and_then(|s| s.metadata.name.as_deref())
        && let Some(cluster) = options.cluster_of_service(NAMESPACE, name)
    {
        assert_eq!(options.service_name(cluster), name);
    }
    if let Some(spec) = service.and_then(|s| s.spec.as_ref()) {
        let _ = resolver::routes_endpoints(spec, input.endpoint_routing);
    }
});
