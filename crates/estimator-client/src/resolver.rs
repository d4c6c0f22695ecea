//! From an estimator's Service object to the addresses to dial.
//!
//! The reference (v1.18.2 `pkg/estimator/client/service.go`) accepts only `ExternalName`
//! Services and falls back to cluster DNS names when the Service does not exist. This
//! resolver keeps both behaviours and also understands the other Service shapes, so that an
//! operator can point the scheduler at an estimator however it is published:
//!
//! | Service | Addresses |
//! |---|---|
//! | not found | `<svc>.<ns>.svc.cluster.local:<port>`, `<svc>.<ns>.svc:<port>` (in order) |
//! | `ExternalName` | `<externalName>:<targetPort of the entry whose port is <port>>` |
//! | `ClusterIP`/`NodePort`/`LoadBalancer` | `<clusterIP>:<port>` for every cluster IP, then the DNS names |
//! | headless (`clusterIP: None`) | the ready endpoints of its EndpointSlices, balanced |
//! | `ClusterIP` with endpoint routing on | the same as headless (our option, off by default) |
//!
//! Whoever can edit a Service or its EndpointSlices chooses what the daemon dials, so what
//! they name is checked ([`check_ip`]): an address no estimator can have (unspecified,
//! multicast, link-local such as a cloud metadata endpoint, broadcast) is refused with an
//! error naming the Service and the field, or skipped in a list that has usable entries.
//! Loopback and private addresses stay usable (development setups, VIPs). A host name is
//! checked the same way once resolved ([`crate::transport`]). A LoadBalancer's
//! `status.loadBalancer.ingress` is not dialled: the reference never does, and that status is
//! written by controllers (in a Karmada API server, aggregated from member clusters), not by
//! whoever publishes the estimator; an `ExternalName` Service names such an address.
//!
//! Endpoints are taken as kube-proxy takes them: the ready ones that are not terminating
//! (a missing `ready` counts as ready), or, only when there is none, those serving while
//! terminating. At most [`MAX_ENDPOINTS`] are dialled, the first in address order, so every
//! process picks the same ones.
//!
//! The annotation [`TLS_SERVER_NAME_ANNOTATION`] on a Service names what that estimator's
//! certificate is verified against (our addition). It is reported here; the connection cache
//! honours it only when the operator allows it.
//!
//! Everything here is pure: the caller fetches the Service and its EndpointSlices
//! ([`crate::source::ServiceSource`]) and passes them in.

use std::collections::BTreeSet;
use std::fmt;
use std::net::{IpAddr, Ipv6Addr};

use k8s_openapi::api::core::v1::{Service, ServicePort, ServiceSpec};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// Label that ties an EndpointSlice to its Service.
pub const SERVICE_NAME_LABEL: &str = "kubernetes.io/service-name";

/// Service annotation: the TLS server name of that estimator (a DNS name in its certificate,
/// when it is reached through an IP such as an LVS VIP).
pub const TLS_SERVER_NAME_ANNOTATION: &str = "estimator.karmada-scheduler-rs.io/tls-server-name";

/// Endpoints dialled per Service at most. Each is one HTTP/2 connection held for as long as
/// the cluster exists (tens of KiB each) and dialled at once; an estimator has a handful of
/// replicas, so 16 leaves room without letting one EndpointSlice open thousands.
pub const MAX_ENDPOINTS: usize = 16;

/// Cluster IPs dialled at most: the API server allows one per IP family. Each is tried in
/// turn with the connect timeout, so a longer list would only delay the DNS names.
const MAX_CLUSTER_IPS: usize = 2;

/// Notes kept per resolution (skipped entries, ignored settings); the rest are counted, so
/// that a slice of thousands of bad entries makes one short log line.
const MAX_NOTES: usize = 4;

/// Name of the estimator Service of a cluster: `<prefix>-<cluster>`.
pub fn service_name(prefix: &str, cluster: &str) -> String {
    format!("{prefix}-{cluster}")
}

/// Why an IP cannot be an estimator's address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Unfit {
    /// `0.0.0.0` or `::`: means "this host" to some stacks, no server anywhere.
    #[error("unspecified")]
    Unspecified,
    /// `224.0.0.0/4`, `ff00::/8`: a group, not a server.
    #[error("multicast")]
    Multicast,
    /// `169.254.0.0/16`, `fe80::/10`: the local link, where cloud metadata services live.
    #[error("link-local")]
    LinkLocal,
    /// `255.255.255.255`.
    #[error("broadcast")]
    Broadcast,
}

/// Whether `ip` can be an estimator's address. IPv4-mapped IPv6 addresses are judged as
/// their IPv4 address. Loopback and private ranges are accepted.
pub fn check_ip(ip: IpAddr) -> Result<(), Unfit> {
    match ip.to_canonical() {
        IpAddr::V4(v4) => {
            if v4.is_unspecified() {
                Err(Unfit::Unspecified)
            } else if v4.is_broadcast() {
                Err(Unfit::Broadcast)
            } else if v4.is_multicast() {
                Err(Unfit::Multicast)
            } else if v4.is_link_local() {
                Err(Unfit::LinkLocal)
            } else {
                Ok(())
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_unspecified() {
                Err(Unfit::Unspecified)
            } else if v6.is_multicast() {
                Err(Unfit::Multicast)
            } else if v6.segments()[0] & 0xffc0 == 0xfe80 {
                Err(Unfit::LinkLocal)
            } else {
                Ok(())
            }
        }
    }
}

/// [`check_ip`] for a host as written in a Service: an IP literal (bracketed or not) is
/// checked, a DNS name passes (it is checked once resolved).
pub fn check_host(host: &str) -> Result<(), Unfit> {
    match Address::new(host, 1).ip() {
        Some(ip) => check_ip(ip),
        None => Ok(()),
    }
}

/// A host (IP literal or DNS name, never bracketed) and a port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Address {
    host: String,
    port: u16,
}

impl Address {
    /// An address; brackets around an IPv6 host are removed so that equal addresses compare
    /// equal however they were written.
    pub fn new(host: impl Into<String>, port: u16) -> Self {
        let host = host.into();
        let host = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(inner) if inner.parse::<Ipv6Addr>().is_ok() => inner.to_string(),
            _ => host,
        };
        Self { host, port }
    }

    /// The host without brackets: what TLS verification is done against.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The host as an IP address, when it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }
}

/// `host:port`, with IPv6 hosts bracketed (`[fd00::1]:10352`).
impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.parse::<Ipv6Addr>().is_ok() {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// How a list of addresses is used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DialStrategy {
    /// Alternatives for the same server: try in order, keep the first that connects.
    FirstReachable,
    /// Equivalent replicas: connect to every one that answers and spread calls over them.
    Balance,
}

/// What kind of lookup produced the addresses (for logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The Service does not exist: cluster DNS names.
    DnsFallback,
    /// `spec.externalName`.
    ExternalName,
    /// `spec.clusterIP(s)`, then DNS names (also NodePort and LoadBalancer Services).
    ClusterIp,
    /// Ready endpoints of a headless Service's EndpointSlices.
    Endpoints,
    /// Ready endpoints of a ClusterIP Service's EndpointSlices (endpoint routing).
    RoutedEndpoints,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Origin::DnsFallback => "DNS fallback (Service not found)",
            Origin::ExternalName => "spec.externalName",
            Origin::ClusterIp => "ClusterIP",
            Origin::Endpoints => "headless Service endpoints",
            Origin::RoutedEndpoints => "ClusterIP Service endpoints (endpoint routing)",
        })
    }
}

/// The result of resolving one estimator Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolution {
    /// Addresses to dial, never empty.
    pub addresses: Vec<Address>,
    /// How to use them.
    pub strategy: DialStrategy,
    /// Where they came from.
    pub origin: Origin,
    /// The Service's [`TLS_SERVER_NAME_ANNOTATION`], when set.
    pub server_name: Option<String>,
    /// What was left out and why (refused entries, endpoints beyond [`MAX_ENDPOINTS`]), each
    /// naming its field; short, for one log line per change.
    pub notes: Vec<String>,
}

impl Resolution {
    fn new(addresses: Vec<Address>, strategy: DialStrategy, origin: Origin) -> Self {
        Self {
            addresses,
            strategy,
            origin,
            server_name: None,
            notes: Vec::new(),
        }
    }

    /// The addresses as one string, for logs (`a, b`).
    pub fn targets(&self) -> String {
        let all: Vec<String> = self.addresses.iter().map(ToString::to_string).collect();
        all.join(", ")
    }
}

/// A found Service cannot be turned into addresses.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("estimator service \"{namespace}/{name}\" (port {port}): {problem}")]
pub struct ResolveError {
    /// Namespace of the Service.
    pub namespace: String,
    /// Name of the Service.
    pub name: String,
    /// The configured estimator port.
    pub port: u16,
    /// What is wrong.
    pub problem: Problem,
}

/// What is wrong with a Service.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Problem {
    /// No `spec.ports[]` entry has `port` equal to the configured port.
    #[error("no service port {0} found in spec.ports")]
    NoServicePort(u16),
    /// `spec.externalName` is missing or empty.
    #[error("spec.externalName is empty")]
    EmptyExternalName,
    /// An `ExternalName` Service cannot resolve a named target port.
    #[error("ExternalName service needs an integer targetPort, found the name {0:?}")]
    NamedTargetPort(String),
    /// A port number outside 1..=65535.
    #[error("targetPort {0} is not a valid port number")]
    InvalidPort(i32),
    /// The configured port itself is 0. The flags refuse it; a library caller could still
    /// pass it, and dialling port 0 would only fail later with a less helpful error.
    #[error("the configured estimator port is 0 (--scheduler-estimator-port must be 1-65535)")]
    ZeroPort,
    /// A `spec.type` this resolver does not know.
    #[error("unsupported service type {0:?}")]
    UnsupportedType(String),
    /// A headless Service without any ready endpoint serving the port.
    #[error("headless service has no ready endpoint for this port in its EndpointSlices")]
    NoReadyEndpoints,
    /// Endpoint routing is on and the ClusterIP Service has no ready endpoint for the port.
    #[error(
        "endpoint routing is on and the ClusterIP service has no ready endpoint for this port in its EndpointSlices"
    )]
    NoRoutableEndpoints,
    /// The only address the Service names (or every one of them) cannot be an estimator's.
    #[error("{field} {value:?} cannot be an estimator's address ({reason})")]
    Refused {
        /// Where the address is written, e.g. `spec.externalName` or
        /// `EndpointSlice "x" endpoints[3].addresses[0]`.
        field: String,
        /// The address as written.
        value: String,
        /// Why it is refused.
        reason: Unfit,
    },
}

/// The two DNS names of the reference's fallback, with `port`.
pub fn dns_fallback(name: &str, namespace: &str, port: u16) -> Vec<Address> {
    vec![
        Address::new(format!("{name}.{namespace}.svc.cluster.local"), port),
        Address::new(format!("{name}.{namespace}.svc"), port),
    ]
}

/// Resolves the estimator Service `namespace/name` for `port`.
///
/// `service` is `None` when the API server answered NotFound. `endpoint_slices` are only
/// read for headless Services, and for ClusterIP ones when `endpoint_routing` is on; slices of
/// other Services (by the [`SERVICE_NAME_LABEL`] label) are ignored, so passing every slice of
/// the namespace is fine.
pub fn resolve(
    namespace: &str,
    name: &str,
    port: u16,
    service: Option<&Service>,
    endpoint_slices: &[EndpointSlice],
    endpoint_routing: bool,
) -> Result<Resolution, ResolveError> {
    let mut resolution = addresses(
        namespace,
        name,
        port,
        service,
        endpoint_slices,
        endpoint_routing,
    )?;
    resolution.server_name = service
        .and_then(|s| s.metadata.annotations.as_ref())
        .and_then(|a| a.get(TLS_SERVER_NAME_ANNOTATION))
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty());
    Ok(resolution)
}

/// Whether a ClusterIP (not headless) Service of this spec has its endpoints dialled.
pub fn routes_endpoints(spec: &ServiceSpec, endpoint_routing: bool) -> bool {
    endpoint_routing
        && spec.type_.as_deref().unwrap_or(CLUSTER_IP) == CLUSTER_IP
        && !cluster_ips(spec).iter().any(|ip| ip == "None")
}

/// Entries of a list left out, with the first refusal (reported when nothing is left).
#[derive(Default)]
struct Skipped {
    notes: Vec<String>,
    more: usize,
    first: Option<Problem>,
}

impl Skipped {
    fn refuse(&mut self, field: String, value: &str, reason: Unfit) {
        self.note(format!(
            "{field} {value:?} skipped: cannot be an estimator's address ({reason})"
        ));
        self.first.get_or_insert(Problem::Refused {
            field,
            value: value.to_string(),
            reason,
        });
    }

    fn note(&mut self, note: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(note);
        } else {
            self.more += 1;
        }
    }

    fn into_notes(mut self) -> Vec<String> {
        if self.more > 0 {
            self.notes.push(format!("{} more skipped", self.more));
        }
        self.notes
    }
}

/// `spec.type` values: the ones an estimator can be published as, `ClusterIP` the default.
const EXTERNAL_NAME: &str = "ExternalName";
const CLUSTER_IP: &str = "ClusterIP";
const NODE_PORT: &str = "NodePort";
const LOAD_BALANCER: &str = "LoadBalancer";

/// The Service being resolved, for errors that name it.
struct Target<'a> {
    namespace: &'a str,
    name: &'a str,
    port: u16,
}

impl Target<'_> {
    fn fail(&self, problem: Problem) -> ResolveError {
        ResolveError {
            namespace: self.namespace.into(),
            name: self.name.into(),
            port: self.port,
            problem,
        }
    }

    /// The Service's port entry for the estimator port.
    fn service_port<'s>(&self, spec: &'s ServiceSpec) -> Result<&'s ServicePort, ResolveError> {
        spec.ports
            .iter()
            .flatten()
            .find(|p| p.port == i32::from(self.port))
            .ok_or_else(|| self.fail(Problem::NoServicePort(self.port)))
    }
}

/// The addresses of each Service shape: none (the DNS names), `ExternalName`, or one with
/// cluster IPs (headless or not, endpoints routed or not).
fn addresses(
    namespace: &str,
    name: &str,
    port: u16,
    service: Option<&Service>,
    endpoint_slices: &[EndpointSlice],
    endpoint_routing: bool,
) -> Result<Resolution, ResolveError> {
    let t = Target {
        namespace,
        name,
        port,
    };
    if port == 0 {
        return Err(t.fail(Problem::ZeroPort));
    }
    let Some(service) = service else {
        return Ok(Resolution::new(
            dns_fallback(name, namespace, port),
            DialStrategy::FirstReachable,
            Origin::DnsFallback,
        ));
    };
    let spec = service.spec.clone().unwrap_or_default();
    match spec.type_.as_deref().unwrap_or(CLUSTER_IP) {
        EXTERNAL_NAME => external_name(&t, &spec),
        CLUSTER_IP | NODE_PORT | LOAD_BALANCER => {
            with_cluster_ips(&t, service, &spec, endpoint_slices, endpoint_routing)
        }
        other => Err(t.fail(Problem::UnsupportedType(other.to_string()))),
    }
}

/// `spec.externalName` with the target port of the estimator port's entry.
fn external_name(t: &Target, spec: &ServiceSpec) -> Result<Resolution, ResolveError> {
    let host = spec.external_name.as_deref().unwrap_or_default().trim();
    if host.is_empty() {
        return Err(t.fail(Problem::EmptyExternalName));
    }
    if let Err(reason) = check_host(host) {
        return Err(t.fail(Problem::Refused {
            field: "spec.externalName".into(),
            value: host.into(),
            reason,
        }));
    }
    let entry = t.service_port(spec)?;
    let target = match &entry.target_port {
        None => entry.port,
        Some(IntOrString::Int(0)) => entry.port,
        Some(IntOrString::Int(n)) => *n,
        Some(IntOrString::String(s)) => {
            // Kubernetes accepts "8080" in the string form; a real name is an error.
            match s.parse::<i32>() {
                Ok(n) => n,
                Err(_) => return Err(t.fail(Problem::NamedTargetPort(s.clone()))),
            }
        }
    };
    let target = valid_port(target).ok_or_else(|| t.fail(Problem::InvalidPort(target)))?;
    Ok(Resolution::new(
        vec![Address::new(host, target)],
        DialStrategy::FirstReachable,
        Origin::ExternalName,
    ))
}

/// A `ClusterIP`, `NodePort` or `LoadBalancer` Service: its endpoints when it is headless or
/// its endpoints are routed, else its cluster IPs and then its DNS names.
fn with_cluster_ips(
    t: &Target,
    service: &Service,
    spec: &ServiceSpec,
    endpoint_slices: &[EndpointSlice],
    endpoint_routing: bool,
) -> Result<Resolution, ResolveError> {
    let entry = t.service_port(spec)?;
    let ips = cluster_ips(spec);
    let is_cluster_ip = spec.type_.as_deref().unwrap_or(CLUSTER_IP) == CLUSTER_IP;
    if is_cluster_ip && ips.iter().any(|ip| ip == "None") {
        return headless(t.name, entry, endpoint_slices, Origin::Endpoints)
            .map_err(|refused| t.fail(refused.unwrap_or(Problem::NoReadyEndpoints)));
    }
    if routes_endpoints(spec, endpoint_routing) {
        return headless(t.name, entry, endpoint_slices, Origin::RoutedEndpoints)
            .map_err(|refused| t.fail(refused.unwrap_or(Problem::NoRoutableEndpoints)));
    }
    let mut skipped = Skipped::default();
    let ingress = service
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
        .filter(|i| !i.is_empty());
    if ingress.is_some() {
        skipped.note(
            "status.loadBalancer.ingress is not dialled (publish such an address in an ExternalName Service)"
                .into(),
        );
    }
    let mut addresses = virtual_ips(&ips, t.port, &mut skipped);
    for dns in dns_fallback(t.name, t.namespace, t.port) {
        push_unique(&mut addresses, dns);
    }
    let mut resolution =
        Resolution::new(addresses, DialStrategy::FirstReachable, Origin::ClusterIp);
    resolution.notes = skipped.into_notes();
    Ok(resolution)
}

/// The first [`MAX_CLUSTER_IPS`] cluster IPs that can be an estimator's, with `port`; the
/// others are noted in `skipped`.
fn virtual_ips(ips: &[String], port: u16, skipped: &mut Skipped) -> Vec<Address> {
    let mut addresses = Vec::new();
    let mut beyond = 0;
    for (i, ip) in ips.iter().enumerate() {
        if ip == "None" {
            continue;
        }
        if addresses.len() == MAX_CLUSTER_IPS {
            beyond += 1;
            continue;
        }
        match check_host(ip) {
            Ok(()) => push_unique(&mut addresses, Address::new(ip.as_str(), port)),
            Err(reason) => skipped.refuse(format!("spec.clusterIPs[{i}]"), ip, reason),
        }
    }
    if beyond > 0 {
        skipped.note(format!(
            "{beyond} more spec.clusterIPs not dialled (a Service has one per IP family)"
        ));
    }
    addresses
}

fn valid_port(n: i32) -> Option<u16> {
    u16::try_from(n).ok().filter(|p| *p != 0)
}

fn push_unique(list: &mut Vec<Address>, address: Address) {
    if !list.contains(&address) {
        list.push(address);
    }
}

fn cluster_ips(spec: &ServiceSpec) -> Vec<String> {
    let mut ips: Vec<String> = spec.cluster_ips.clone().unwrap_or_default();
    if let Some(ip) = &spec.cluster_ip
        && !ip.is_empty()
        && !ips.contains(ip)
    {
        ips.insert(0, ip.clone());
    }
    ips.retain(|ip| !ip.is_empty());
    ips
}

/// The endpoints of the Service's slices to dial, with the port that serves `entry`: the
/// ready ones that are not terminating, else the serving ones that are terminating (kube-proxy's
/// rule), refused addresses skipped, at most [`MAX_ENDPOINTS`] in address order. `Err` when
/// none is left: with the first refusal, if an address was refused.
fn headless(
    name: &str,
    entry: &ServicePort,
    slices: &[EndpointSlice],
    origin: Origin,
) -> Result<Resolution, Option<Problem>> {
    let wanted_name = entry.name.as_deref().unwrap_or_default();
    // Without port information on a slice, the Service's own numbers apply.
    let fallback_port = match &entry.target_port {
        None | Some(IntOrString::Int(0)) => valid_port(entry.port),
        Some(IntOrString::Int(n)) => valid_port(*n),
        Some(IntOrString::String(s)) => s.parse().ok().and_then(valid_port),
    };
    let mut ready = BTreeSet::new();
    let mut terminating = BTreeSet::new();
    let mut skipped = Skipped::default();
    for slice in slices {
        let owner = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(SERVICE_NAME_LABEL));
        if owner.map(String::as_str) != Some(name) {
            continue;
        }
        let slice_ports = slice.ports.as_deref().unwrap_or_default();
        let endpoint_port = if slice_ports.is_empty() {
            fallback_port
        } else {
            slice_ports
                .iter()
                .find(|p| p.name.as_deref().unwrap_or_default() == wanted_name)
                .and_then(|p| p.port.map_or(fallback_port, valid_port))
        };
        let Some(endpoint_port) = endpoint_port else {
            continue;
        };
        let slice_name = slice.metadata.name.as_deref().unwrap_or_default();
        for (i, endpoint) in slice.endpoints.iter().enumerate() {
            // As kube-proxy reads them: a missing `ready` or `serving` is true, a missing
            // `terminating` false.
            let c = endpoint.conditions.as_ref();
            let is_ready = c.and_then(|c| c.ready).unwrap_or(true);
            let is_serving = c.and_then(|c| c.serving).unwrap_or(true);
            let is_terminating = c.and_then(|c| c.terminating).unwrap_or(false);
            let set = if is_ready && !is_terminating {
                &mut ready
            } else if is_serving && is_terminating {
                &mut terminating
            } else {
                continue;
            };
            // Addresses of one endpoint are fungible; Kubernetes consumers use the first.
            let Some(host) = endpoint.addresses.first().filter(|h| !h.is_empty()) else {
                continue;
            };
            match check_host(host) {
                Ok(()) => {
                    set.insert(Address::new(host.as_str(), endpoint_port));
                }
                Err(reason) => skipped.refuse(
                    format!("EndpointSlice {slice_name:?} endpoints[{i}].addresses[0]"),
                    host,
                    reason,
                ),
            }
        }
    }
    let found = if ready.is_empty() { terminating } else { ready };
    if found.is_empty() {
        return Err(skipped.first);
    }
    let beyond = found.len().saturating_sub(MAX_ENDPOINTS);
    let mut resolution = Resolution::new(
        found.into_iter().take(MAX_ENDPOINTS).collect(),
        DialStrategy::Balance,
        origin,
    );
    resolution.notes = skipped.into_notes();
    if beyond > 0 {
        resolution.notes.push(format!(
            "{beyond} more endpoints not dialled (at most {MAX_ENDPOINTS} per Service, the first in address order)"
        ));
    }
    Ok(resolution)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{
        LoadBalancerIngress, LoadBalancerStatus, ServiceSpec, ServiceStatus,
    };
    use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    const NS: &str = "karmada-system";
    const SVC: &str = "karmada-scheduler-estimator-m1";
    const PORT: u16 = 10352;

    fn port(port: i32, target: Option<IntOrString>, name: Option<&str>) -> ServicePort {
        ServicePort {
            port,
            target_port: target,
            name: name.map(str::to_string),
            ..Default::default()
        }
    }

    fn service(spec: ServiceSpec) -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some(SVC.into()),
                namespace: Some(NS.into()),
                ..Default::default()
            },
            spec: Some(spec),
            status: None,
        }
    }

    fn external(name: &str, ports: Vec<ServicePort>) -> Service {
        service(ServiceSpec {
            type_: Some("ExternalName".into()),
            external_name: Some(name.into()),
            ports: Some(ports),
            ..Default::default()
        })
    }

    fn addrs(r: &Resolution) -> Vec<String> {
        r.addresses.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn configured_port_zero_is_refused_naming_the_service() {
        let svc = external(
            "10.0.0.1",
            vec![port(0, Some(IntOrString::Int(8080)), None)],
        );
        for s in [None, Some(&svc)] {
            let err = resolve(NS, SVC, 0, s, &[], false).unwrap_err();
            assert_eq!(err.problem, Problem::ZeroPort);
            assert_eq!(
                err.to_string(),
                format!(
                    "estimator service \"{NS}/{SVC}\" (port 0): the configured estimator port \
                     is 0 (--scheduler-estimator-port must be 1-65535)"
                )
            );
        }
    }

    fn resolve_ok(svc: Option<&Service>, slices: &[EndpointSlice]) -> Resolution {
        resolve(NS, SVC, PORT, svc, slices, false).expect("resolves")
    }

    fn resolve_err(svc: &Service) -> ResolveError {
        resolve(NS, SVC, PORT, Some(svc), &[], false).expect_err("must fail")
    }

    #[test]
    fn not_found_gives_the_reference_dns_names_in_order() {
        let r = resolve_ok(None, &[]);
        assert_eq!(
            addrs(&r),
            [
                "karmada-scheduler-estimator-m1.karmada-system.svc.cluster.local:10352",
                "karmada-scheduler-estimator-m1.karmada-system.svc:10352",
            ]
        );
        assert_eq!(r.strategy, DialStrategy::FirstReachable);
        assert_eq!(r.origin, Origin::DnsFallback);
    }

    #[test]
    fn external_name_ipv4_with_int_target_port() {
        let svc = external(
            "10.0.0.7",
            vec![port(10352, Some(IntOrString::Int(10353)), None)],
        );
        let r = resolve_ok(Some(&svc), &[]);
        assert_eq!(addrs(&r), ["10.0.0.7:10353"]);
        assert_eq!(r.origin, Origin::ExternalName);
    }

    #[test]
    fn external_name_ipv6_is_bracketed() {
        let svc = external(
            "fd00::7",
            vec![port(10352, Some(IntOrString::Int(10352)), None)],
        );
        let r = resolve_ok(Some(&svc), &[]);
        assert_eq!(addrs(&r), ["[fd00::7]:10352"]);
        assert_eq!(r.addresses[0].host(), "fd00::7");
    }

    #[test]
    fn external_name_dns_name() {
        let svc = external(
            "estimator.m1.example.com",
            vec![port(10352, Some(IntOrString::Int(443)), None)],
        );
        assert_eq!(
            addrs(&resolve_ok(Some(&svc), &[])),
            ["estimator.m1.example.com:443"]
        );
    }

    #[test]
    fn external_name_absent_target_port_means_port() {
        let svc = external("10.0.0.7", vec![port(10352, None, None)]);
        assert_eq!(addrs(&resolve_ok(Some(&svc), &[])), ["10.0.0.7:10352"]);
    }

    #[test]
    fn external_name_numeric_string_target_port_is_a_number() {
        let svc = external(
            "10.0.0.7",
            vec![port(10352, Some(IntOrString::String("9000".into())), None)],
        );
        assert_eq!(addrs(&resolve_ok(Some(&svc), &[])), ["10.0.0.7:9000"]);
    }

    #[test]
    fn external_name_port_is_matched_by_number_first_match_wins() {
        let svc = external(
            "10.0.0.7",
            vec![
                port(80, Some(IntOrString::Int(8080)), Some("http")),
                port(10352, Some(IntOrString::Int(1)), Some("grpc")),
                port(10352, Some(IntOrString::Int(2)), Some("other")),
            ],
        );
        assert_eq!(addrs(&resolve_ok(Some(&svc), &[])), ["10.0.0.7:1"]);
    }

    #[test]
    fn external_name_named_target_port_is_an_error_naming_service_port_and_problem() {
        let svc = external(
            "10.0.0.7",
            vec![port(10352, Some(IntOrString::String("grpc".into())), None)],
        );
        let err = resolve_err(&svc);
        assert_eq!(err.problem, Problem::NamedTargetPort("grpc".into()));
        assert_eq!(
            err.to_string(),
            "estimator service \"karmada-system/karmada-scheduler-estimator-m1\" (port 10352): \
             ExternalName service needs an integer targetPort, found the name \"grpc\""
        );
    }

    #[test]
    fn external_name_missing_port_entry_is_an_error() {
        let svc = external("10.0.0.7", vec![port(80, None, None)]);
        let err = resolve_err(&svc);
        assert_eq!(err.problem, Problem::NoServicePort(10352));
        assert_eq!(
            err.to_string(),
            "estimator service \"karmada-system/karmada-scheduler-estimator-m1\" (port 10352): \
             no service port 10352 found in spec.ports"
        );
        // No ports at all: same error.
        let svc = service(ServiceSpec {
            type_: Some("ExternalName".into()),
            external_name: Some("10.0.0.7".into()),
            ..Default::default()
        });
        assert_eq!(resolve_err(&svc).problem, Problem::NoServicePort(10352));
    }

    #[test]
    fn external_name_empty_name_is_an_error() {
        let svc = external("", vec![port(10352, None, None)]);
        let err = resolve_err(&svc);
        assert_eq!(err.problem, Problem::EmptyExternalName);
        assert!(
            err.to_string()
                .contains("karmada-system/karmada-scheduler-estimator-m1")
        );
        assert!(err.to_string().contains("port 10352"));
    }

    #[test]
    fn external_name_out_of_range_target_port_is_an_error() {
        let svc = external(
            "10.0.0.7",
            vec![port(10352, Some(IntOrString::Int(70000)), None)],
        );
        assert_eq!(resolve_err(&svc).problem, Problem::InvalidPort(70000));
    }

    #[test]
    fn cluster_ip_then_dns_names() {
        let svc = service(ServiceSpec {
            cluster_ip: Some("10.96.0.20".into()),
            cluster_ips: Some(vec!["10.96.0.20".into(), "fd00:10:96::20".into()]),
            ports: Some(vec![port(10352, Some(IntOrString::Int(9999)), None)]),
            ..Default::default()
        });
        let r = resolve_ok(Some(&svc), &[]);
        assert_eq!(
            addrs(&r),
            [
                "10.96.0.20:10352",
                "[fd00:10:96::20]:10352",
                "karmada-scheduler-estimator-m1.karmada-system.svc.cluster.local:10352",
                "karmada-scheduler-estimator-m1.karmada-system.svc:10352",
            ]
        );
        assert_eq!(r.origin, Origin::ClusterIp);
        assert_eq!(r.strategy, DialStrategy::FirstReachable);
    }

    #[test]
    fn node_port_is_served_like_cluster_ip() {
        let svc = service(ServiceSpec {
            type_: Some("NodePort".into()),
            cluster_ip: Some("10.96.0.21".into()),
            ports: Some(vec![port(10352, None, None)]),
            ..Default::default()
        });
        assert_eq!(addrs(&resolve_ok(Some(&svc), &[]))[0], "10.96.0.21:10352");
    }

    #[test]
    fn cluster_ip_without_the_port_is_an_error() {
        let svc = service(ServiceSpec {
            cluster_ip: Some("10.96.0.20".into()),
            ports: Some(vec![port(80, None, None)]),
            ..Default::default()
        });
        assert_eq!(resolve_err(&svc).problem, Problem::NoServicePort(10352));
    }

    /// The ingress of a LoadBalancer is status that controllers write: never dialled (the
    /// reference dials no LoadBalancer at all); the cluster IP and DNS names are, and the
    /// skipped ingress is said once.
    #[test]
    fn load_balancer_ingress_is_not_dialled() {
        let mut svc = service(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            cluster_ip: Some("10.96.0.22".into()),
            ports: Some(vec![port(10352, None, None)]),
            ..Default::default()
        });
        svc.status = Some(ServiceStatus {
            load_balancer: Some(LoadBalancerStatus {
                ingress: Some(vec![
                    LoadBalancerIngress {
                        ip: Some("203.0.113.9".into()),
                        ..Default::default()
                    },
                    LoadBalancerIngress {
                        hostname: Some("lb.example.com".into()),
                        ..Default::default()
                    },
                ]),
            }),
            conditions: None,
        });
        let r = resolve_ok(Some(&svc), &[]);
        assert_eq!(
            addrs(&r),
            [
                "10.96.0.22:10352",
                "karmada-scheduler-estimator-m1.karmada-system.svc.cluster.local:10352",
                "karmada-scheduler-estimator-m1.karmada-system.svc:10352",
            ]
        );
        assert_eq!(r.origin, Origin::ClusterIp);
        assert_eq!(r.notes.len(), 1);
        assert!(
            r.notes[0].starts_with("status.loadBalancer.ingress is not dialled"),
            "{:?}",
            r.notes
        );
    }

    /// The address rules on plain values: what no estimator can have is refused, loopback,
    /// private, shared and public ranges are kept, mapped IPv4 is judged as IPv4.
    #[test]
    fn address_rules() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for (addr, unfit) in [
            ("0.0.0.0", Unfit::Unspecified),
            ("::", Unfit::Unspecified),
            ("224.0.0.1", Unfit::Multicast),
            ("239.255.255.250", Unfit::Multicast),
            ("ff02::1", Unfit::Multicast),
            ("169.254.169.254", Unfit::LinkLocal),
            ("169.254.0.1", Unfit::LinkLocal),
            ("fe80::1", Unfit::LinkLocal),
            ("febf::1", Unfit::LinkLocal),
            ("::ffff:169.254.169.254", Unfit::LinkLocal),
            ("::ffff:0.0.0.0", Unfit::Unspecified),
            ("255.255.255.255", Unfit::Broadcast),
        ] {
            assert_eq!(check_ip(ip(addr)), Err(unfit), "{addr}");
            assert_eq!(check_host(addr), Err(unfit), "{addr}");
        }
        for addr in [
            "127.0.0.1",
            "127.0.0.3",
            "::1",
            "10.0.0.7",
            "172.16.0.1",
            "192.168.1.7",
            "100.64.0.1",
            "fd00::7",
            "fec0::1",
            "203.0.113.9",
            "2001:db8::9",
            "169.253.255.255",
            "169.255.0.1",
            "::ffff:10.0.0.1",
        ] {
            assert_eq!(check_ip(ip(addr)), Ok(()), "{addr}");
        }
        assert_eq!(check_host("[fe80::1]"), Err(Unfit::LinkLocal));
        assert_eq!(check_host("estimator.example.com"), Ok(()));
    }

    /// A refused `externalName` is an error naming the Service, the field and the reason.
    #[test]
    fn external_name_that_cannot_be_an_estimator_is_refused() {
        for (host, reason) in [
            ("169.254.169.254", "link-local"),
            ("0.0.0.0", "unspecified"),
            ("ff02::1", "multicast"),
            ("255.255.255.255", "broadcast"),
        ] {
            let svc = external(host, vec![port(10352, Some(IntOrString::Int(80)), None)]);
            let err = resolve_err(&svc);
            assert_eq!(
                err.to_string(),
                format!(
                    "estimator service \"{NS}/{SVC}\" (port 10352): spec.externalName \
                     \"{host}\" cannot be an estimator's address ({reason})"
                )
            );
        }
        // Loopback and private addresses stay usable.
        for host in ["127.0.0.1", "::1", "10.1.2.3", "192.168.0.9"] {
            let svc = external(host, vec![port(10352, None, None)]);
            assert!(resolve(NS, SVC, PORT, Some(&svc), &[], false).is_ok());
        }
    }

    /// Only two cluster IPs are tried (one per family, as the API server allows).
    #[test]
    fn cluster_ips_beyond_two_are_not_dialled() {
        let ips: Vec<String> = (1..=20).map(|i| format!("10.96.0.{i}")).collect();
        let svc = service(ServiceSpec {
            cluster_ips: Some(ips),
            ports: Some(vec![port(10352, None, None)]),
            ..Default::default()
        });
        let r = resolve_ok(Some(&svc), &[]);
        assert_eq!(addrs(&r)[..2], ["10.96.0.1:10352", "10.96.0.2:10352"]);
        assert_eq!(r.addresses.len(), 4);
        assert_eq!(
            r.notes,
            ["18 more spec.clusterIPs not dialled (a Service has one per IP family)"]
        );
    }

    /// A refused cluster IP is skipped with a note; the DNS names remain.
    #[test]
    fn refused_cluster_ip_is_skipped_and_noted() {
        let svc = service(ServiceSpec {
            cluster_ip: Some("169.254.0.9".into()),
            ports: Some(vec![port(10352, None, None)]),
            ..Default::default()
        });
        let r = resolve_ok(Some(&svc), &[]);
        assert_eq!(r.addresses.len(), 2);
        assert!(r.addresses.iter().all(|a| a.ip().is_none()));
        assert_eq!(
            r.notes,
            [
                "spec.clusterIPs[0] \"169.254.0.9\" skipped: cannot be an estimator's address (link-local)"
            ]
        );
    }

    fn slice(
        service: &str,
        ports: Option<Vec<(Option<&str>, i32)>>,
        endpoints: Vec<(&str, Option<bool>)>,
    ) -> EndpointSlice {
        EndpointSlice {
            address_type: "IPv4".into(),
            metadata: ObjectMeta {
                name: Some(format!("{service}-abc")),
                namespace: Some(NS.into()),
                labels: Some([(SERVICE_NAME_LABEL.to_string(), service.to_string())].into()),
                ..Default::default()
            },
            ports: ports.map(|ps| {
                ps.into_iter()
                    .map(|(name, port)| EndpointPort {
                        name: name.map(str::to_string),
                        port: Some(port),
                        ..Default::default()
                    })
                    .collect()
            }),
            endpoints: endpoints
                .into_iter()
                .map(|(ip, ready)| Endpoint {
                    addresses: vec![ip.to_string()],
                    conditions: Some(EndpointConditions {
                        ready,
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn headless_service(target: Option<IntOrString>, name: Option<&str>) -> Service {
        service(ServiceSpec {
            cluster_ip: Some("None".into()),
            cluster_ips: Some(vec!["None".into()]),
            ports: Some(vec![port(10352, target, name)]),
            ..Default::default()
        })
    }

    #[test]
    fn headless_uses_ready_endpoints_balanced() {
        let svc = headless_service(Some(IntOrString::Int(10352)), None);
        let slices = [
            slice(
                SVC,
                Some(vec![(None, 10352)]),
                vec![("10.1.0.2", Some(true)), ("10.1.0.3", None)],
            ),
            slice(
                SVC,
                Some(vec![(None, 10352)]),
                vec![("10.1.0.4", Some(false))],
            ),
            slice(
                "other-service",
                Some(vec![(None, 10352)]),
                vec![("10.9.9.9", Some(true))],
            ),
        ];
        let r = resolve_ok(Some(&svc), &slices);
        assert_eq!(addrs(&r), ["10.1.0.2:10352", "10.1.0.3:10352"]);
        assert_eq!(r.strategy, DialStrategy::Balance);
        assert_eq!(r.origin, Origin::Endpoints);
    }

    #[test]
    fn headless_named_target_port_is_resolved_through_the_slice() {
        let svc = headless_service(Some(IntOrString::String("grpc".into())), Some("grpc"));
        let slices = [slice(
            SVC,
            Some(vec![(Some("metrics"), 8080), (Some("grpc"), 7000)]),
            vec![("fd00::5", Some(true))],
        )];
        assert_eq!(addrs(&resolve_ok(Some(&svc), &slices)), ["[fd00::5]:7000"]);
    }

    #[test]
    fn headless_hand_made_slice_without_ports_uses_the_target_port() {
        let svc = headless_service(Some(IntOrString::Int(10400)), None);
        let slices = [slice(SVC, None, vec![("192.0.2.10", None)])];
        assert_eq!(
            addrs(&resolve_ok(Some(&svc), &slices)),
            ["192.0.2.10:10400"]
        );
    }

    #[test]
    fn headless_without_ready_endpoints_is_an_error() {
        let svc = headless_service(None, None);
        let slices = [slice(
            SVC,
            Some(vec![(None, 10352)]),
            vec![("10.1.0.4", Some(false))],
        )];
        let err = resolve(NS, SVC, PORT, Some(&svc), &slices, false).unwrap_err();
        assert_eq!(err.problem, Problem::NoReadyEndpoints);
        assert!(
            err.to_string()
                .contains("karmada-system/karmada-scheduler-estimator-m1")
        );
        let err = resolve(NS, SVC, PORT, Some(&svc), &[], false).unwrap_err();
        assert_eq!(err.problem, Problem::NoReadyEndpoints);
    }

    fn endpoint(
        ip: &str,
        ready: Option<bool>,
        serving: Option<bool>,
        terminating: Option<bool>,
    ) -> Endpoint {
        Endpoint {
            addresses: vec![ip.to_string()],
            conditions: Some(EndpointConditions {
                ready,
                serving,
                terminating,
            }),
            ..Default::default()
        }
    }

    /// kube-proxy's rule: ready and not terminating endpoints; the serving terminating ones
    /// only when no endpoint is ready; neither ready nor serving never.
    #[test]
    fn endpoint_conditions_are_honoured_as_kube_proxy_does() {
        let svc = headless_service(Some(IntOrString::Int(10352)), None);
        let mut s = slice(SVC, Some(vec![(None, 10352)]), vec![]);
        s.endpoints = vec![
            endpoint("10.1.0.1", None, None, None),
            endpoint("10.1.0.2", Some(true), Some(true), Some(false)),
            endpoint("10.1.0.3", Some(false), Some(true), Some(true)),
            endpoint("10.1.0.4", Some(false), Some(false), Some(true)),
            endpoint("10.1.0.5", Some(false), Some(false), Some(false)),
            // Ready yet terminating (publishNotReadyAddresses): going away, skipped.
            endpoint("10.1.0.6", Some(true), Some(true), Some(true)),
        ];
        let r = resolve_ok(Some(&svc), std::slice::from_ref(&s));
        assert_eq!(addrs(&r), ["10.1.0.1:10352", "10.1.0.2:10352"]);
        // No ready endpoint: the serving terminating ones.
        s.endpoints.drain(..2);
        let r = resolve_ok(Some(&svc), std::slice::from_ref(&s));
        assert_eq!(addrs(&r), ["10.1.0.3:10352", "10.1.0.6:10352"]);
        // Nothing serving: no endpoint.
        s.endpoints = vec![
            endpoint("10.1.0.4", Some(false), Some(false), Some(true)),
            endpoint("10.1.0.5", Some(false), None, None),
        ];
        let err = resolve(NS, SVC, PORT, Some(&svc), &[s], false).unwrap_err();
        assert_eq!(err.problem, Problem::NoReadyEndpoints);
    }

    /// Refused endpoint addresses are skipped, each named by slice and index; when no
    /// endpoint is left the error names the first.
    #[test]
    fn refused_endpoints_are_skipped_or_named() {
        let svc = headless_service(Some(IntOrString::Int(10352)), None);
        let slices = [slice(
            SVC,
            Some(vec![(None, 10352)]),
            vec![
                ("169.254.169.254", None),
                ("10.1.0.2", Some(true)),
                ("224.0.0.5", Some(true)),
                ("0.0.0.0", None),
            ],
        )];
        let r = resolve_ok(Some(&svc), &slices);
        assert_eq!(addrs(&r), ["10.1.0.2:10352"]);
        assert_eq!(
            r.notes,
            [
                format!(
                    "EndpointSlice \"{SVC}-abc\" endpoints[0].addresses[0] \"169.254.169.254\" skipped: cannot be an estimator's address (link-local)"
                ),
                format!(
                    "EndpointSlice \"{SVC}-abc\" endpoints[2].addresses[0] \"224.0.0.5\" skipped: cannot be an estimator's address (multicast)"
                ),
                format!(
                    "EndpointSlice \"{SVC}-abc\" endpoints[3].addresses[0] \"0.0.0.0\" skipped: cannot be an estimator's address (unspecified)"
                ),
            ]
        );
        let only_bad = [slice(
            SVC,
            Some(vec![(None, 10352)]),
            vec![("10.1.0.9", Some(false)), ("fe80::1", None)],
        )];
        let err = resolve(NS, SVC, PORT, Some(&svc), &only_bad, false).unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "estimator service \"{NS}/{SVC}\" (port 10352): EndpointSlice \"{SVC}-abc\" \
                 endpoints[1].addresses[0] \"fe80::1\" cannot be an estimator's address (link-local)"
            )
        );
    }

    /// At most MAX_ENDPOINTS endpoints, the first in address order whatever the order of the
    /// slices; notes stay short however many entries are refused.
    #[test]
    fn endpoints_are_capped_deterministically() {
        let svc = headless_service(Some(IntOrString::Int(10352)), None);
        let ips: Vec<String> = (0..40).map(|i| format!("10.2.0.{}", 100 + i)).collect();
        let bad: Vec<String> = (0..1000)
            .map(|i| format!("169.254.{}.{}", i / 200, i % 200 + 1))
            .collect();
        let mut eps: Vec<(&str, Option<bool>)> = ips.iter().map(|s| (s.as_str(), None)).collect();
        eps.extend(bad.iter().map(|s| (s.as_str(), None)));
        let forward = [slice(SVC, Some(vec![(None, 10352)]), eps.clone())];
        eps.reverse();
        let backward = [slice(SVC, Some(vec![(None, 10352)]), eps)];
        let a = resolve_ok(Some(&svc), &forward);
        let b = resolve_ok(Some(&svc), &backward);
        assert_eq!(a.addresses.len(), MAX_ENDPOINTS);
        assert_eq!(a.addresses, b.addresses);
        assert_eq!(addrs(&a)[0], "10.2.0.100:10352");
        assert_eq!(addrs(&a)[MAX_ENDPOINTS - 1], "10.2.0.115:10352");
        assert_eq!(a.notes.len(), MAX_NOTES + 2, "{:?}", a.notes);
        assert_eq!(a.notes[MAX_NOTES], "996 more skipped");
        assert_eq!(
            a.notes[MAX_NOTES + 1],
            "24 more endpoints not dialled (at most 16 per Service, the first in address order)"
        );
    }

    #[test]
    fn unknown_type_is_an_error() {
        let svc = service(ServiceSpec {
            type_: Some("Mystery".into()),
            ..Default::default()
        });
        let err = resolve_err(&svc);
        assert_eq!(err.problem, Problem::UnsupportedType("Mystery".into()));
        assert!(
            err.to_string()
                .ends_with("unsupported service type \"Mystery\"")
        );
    }

    #[test]
    fn addresses_display_and_normalise_brackets() {
        assert_eq!(Address::new("[::1]", 5).to_string(), "[::1]:5");
        assert_eq!(Address::new("::1", 5), Address::new("[::1]", 5));
        assert_eq!(Address::new("127.0.0.1", 5).to_string(), "127.0.0.1:5");
        assert_eq!(Address::new("a.b", 5).ip(), None);
        assert_eq!(service_name("karmada-scheduler-estimator", "m1"), SVC);
    }

    /// Endpoint routing: a ClusterIP Service's ready endpoints instead of its cluster IP; the
    /// cluster IP and DNS names without it; headless and other types unchanged.
    #[test]
    fn endpoint_routing_of_cluster_ip_services() {
        let svc = service(ServiceSpec {
            type_: Some("ClusterIP".into()),
            cluster_ip: Some("10.96.0.10".into()),
            ports: Some(vec![port(
                10352,
                Some(IntOrString::Int(8000)),
                Some("grpc"),
            )]),
            ..Default::default()
        });
        let slice = EndpointSlice {
            address_type: "IPv4".into(),
            metadata: ObjectMeta {
                name: Some(format!("{SVC}-a")),
                namespace: Some(NS.into()),
                labels: Some([(SERVICE_NAME_LABEL.to_string(), SVC.to_string())].into()),
                ..Default::default()
            },
            ports: Some(vec![EndpointPort {
                name: Some("grpc".into()),
                port: Some(8000),
                ..Default::default()
            }]),
            endpoints: vec![
                Endpoint {
                    addresses: vec!["192.168.1.7".into()],
                    ..Default::default()
                },
                Endpoint {
                    addresses: vec!["192.168.1.8".into()],
                    conditions: Some(EndpointConditions {
                        ready: Some(false),
                        ..Default::default()
                    }),
                    ..Default::default()
                },
            ],
        };
        let off = resolve(
            NS,
            SVC,
            PORT,
            Some(&svc),
            std::slice::from_ref(&slice),
            false,
        )
        .unwrap();
        assert_eq!(off.origin, Origin::ClusterIp);
        assert_eq!(addrs(&off)[0], "10.96.0.10:10352");
        let on = resolve(
            NS,
            SVC,
            PORT,
            Some(&svc),
            std::slice::from_ref(&slice),
            true,
        )
        .unwrap();
        assert_eq!(on.origin, Origin::RoutedEndpoints);
        assert_eq!(on.strategy, DialStrategy::Balance);
        assert_eq!(addrs(&on), ["192.168.1.7:8000"]);
        let err = resolve(NS, SVC, PORT, Some(&svc), &[], true).unwrap_err();
        assert_eq!(
            err.to_string(),
            "estimator service \"karmada-system/karmada-scheduler-estimator-m1\" (port 10352): endpoint routing is on and the ClusterIP service has no ready endpoint for this port in its EndpointSlices"
        );
        // An ExternalName Service is not routed.
        let ext = external(
            "10.0.0.1",
            vec![port(10352, Some(IntOrString::Int(9000)), None)],
        );
        let r = resolve(NS, SVC, PORT, Some(&ext), &[slice], true).unwrap();
        assert_eq!(addrs(&r), ["10.0.0.1:9000"]);
    }

    #[test]
    fn the_tls_server_name_annotation_is_read() {
        let mut svc = external(
            "10.0.0.1",
            vec![port(10352, Some(IntOrString::Int(9000)), None)],
        );
        assert_eq!(resolve_ok(Some(&svc), &[]).server_name, None);
        svc.metadata.annotations = Some(
            [(
                TLS_SERVER_NAME_ANNOTATION.to_string(),
                " estimator.test ".to_string(),
            )]
            .into(),
        );
        assert_eq!(
            resolve_ok(Some(&svc), &[]).server_name.as_deref(),
            Some("estimator.test")
        );
        svc.metadata.annotations =
            Some([(TLS_SERVER_NAME_ANNOTATION.to_string(), String::new())].into());
        assert_eq!(resolve_ok(Some(&svc), &[]).server_name, None);
    }
}
