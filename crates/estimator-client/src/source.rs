//! Where estimator Services come from: the Karmada API server, or a list in memory.

use std::collections::BTreeMap;
use std::sync::RwLock;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{Api, ListParams};
use scheduler_core::estimator::BoxFuture;

use crate::resolver::SERVICE_NAME_LABEL;

/// A Service as looked up, with the EndpointSlices a headless one needs.
#[derive(Clone, Debug, Default)]
pub struct ServiceLookup {
    /// `None` when the API answered NotFound (the resolver then uses DNS names).
    pub service: Option<Service>,
    /// Slices labelled with the Service's name; only filled for headless Services (and
    /// ClusterIP ones with endpoint routing).
    pub endpoint_slices: Vec<EndpointSlice>,
}

/// A lookup failed for another reason than NotFound (retried on the next event).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("get service {namespace}/{name}: {reason}")]
pub struct LookupError {
    /// Namespace looked in.
    pub namespace: String,
    /// Service name.
    pub name: String,
    /// Why it failed.
    pub reason: String,
}

/// Looks up estimator Services.
pub trait ServiceSource: Send + Sync + 'static {
    /// The Service `namespace/name` and, when it is headless, its EndpointSlices.
    fn lookup<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ServiceLookup, LookupError>>;
}

fn is_headless(service: &Service) -> bool {
    let spec = service.spec.as_ref();
    spec.and_then(|s| s.cluster_ip.as_deref()) == Some("None")
        || spec
            .and_then(|s| s.cluster_ips.as_ref())
            .is_some_and(|ips| ips.iter().any(|ip| ip == "None"))
}

/// Services (and EndpointSlices) read from the Karmada API server. Needs `get` on services
/// and, for headless Services only (and ClusterIP ones with endpoint routing), `list` on
/// `discovery.k8s.io` endpointslices in the estimator namespace.
#[derive(Clone)]
pub struct KubeServiceSource {
    client: kube::Client,
    endpoint_routing: bool,
}

impl KubeServiceSource {
    /// A source reading through `client`.
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            endpoint_routing: false,
        }
    }

    /// Also read the EndpointSlices of ClusterIP Services (`EstimatorOptions::endpoint_routing`).
    pub fn with_endpoint_routing(mut self, on: bool) -> Self {
        self.endpoint_routing = on;
        self
    }
}

/// Whether the resolver will read the Service's EndpointSlices.
fn needs_slices(service: &Service, endpoint_routing: bool) -> bool {
    is_headless(service)
        || service
            .spec
            .as_ref()
            .is_some_and(|s| crate::resolver::routes_endpoints(s, endpoint_routing))
}

impl ServiceSource for KubeServiceSource {
    fn lookup<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ServiceLookup, LookupError>> {
        Box::pin(async move {
            let fail = |e: kube::Error| LookupError {
                namespace: namespace.to_string(),
                name: name.to_string(),
                reason: e.to_string(),
            };
            let services: Api<Service> = Api::namespaced(self.client.clone(), namespace);
            let service = services.get_opt(name).await.map_err(fail)?;
            let mut endpoint_slices = Vec::new();
            if service
                .as_ref()
                .is_some_and(|s| needs_slices(s, self.endpoint_routing))
            {
                let slices: Api<EndpointSlice> = Api::namespaced(self.client.clone(), namespace);
                let params = ListParams::default().labels(&format!("{SERVICE_NAME_LABEL}={name}"));
                endpoint_slices = slices.list(&params).await.map_err(fail)?.items;
            }
            Ok(ServiceLookup {
                service,
                endpoint_slices,
            })
        })
    }
}

/// Services held in memory: for `simulate` (Services from its input files) and tests.
/// Change it, then tell the cache with [`crate::ConnectionCache::on_service_changed`].
#[derive(Debug, Default)]
pub struct InMemoryServiceSource {
    services: RwLock<BTreeMap<(String, String), Service>>,
    slices: RwLock<BTreeMap<(String, String), EndpointSlice>>,
}

fn key(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

impl InMemoryServiceSource {
    /// An empty source: every lookup is NotFound.
    pub fn new() -> Self {
        Self::default()
    }

    /// A source holding these objects (keyed by `metadata.namespace`/`metadata.name`).
    pub fn with_objects(
        services: impl IntoIterator<Item = Service>,
        endpoint_slices: impl IntoIterator<Item = EndpointSlice>,
    ) -> Self {
        let source = Self::new();
        services.into_iter().for_each(|s| source.upsert_service(s));
        endpoint_slices
            .into_iter()
            .for_each(|s| source.upsert_endpoint_slice(s));
        source
    }

    /// Adds or replaces a Service.
    pub fn upsert_service(&self, service: Service) {
        let k = key(&service.metadata);
        self.services
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(k, service);
    }

    /// Adds or replaces an EndpointSlice.
    pub fn upsert_endpoint_slice(&self, slice: EndpointSlice) {
        let k = key(&slice.metadata);
        self.slices
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(k, slice);
    }
}

impl ServiceSource for InMemoryServiceSource {
    fn lookup<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ServiceLookup, LookupError>> {
        let k = (namespace.to_string(), name.to_string());
        let service = self
            .services
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&k)
            .cloned();
        // Held in memory: handing them over costs nothing, the resolver decides.
        let endpoint_slices = if service.is_some() {
            self.slices
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .filter(|((ns, _), slice)| {
                    ns == namespace
                        && slice
                            .metadata
                            .labels
                            .as_ref()
                            .and_then(|l| l.get(SERVICE_NAME_LABEL))
                            == Some(&k.1)
                })
                .map(|(_, slice)| slice.clone())
                .collect()
        } else {
            Vec::new()
        };
        Box::pin(std::future::ready(Ok(ServiceLookup {
            service,
            endpoint_slices,
        })))
    }
}
