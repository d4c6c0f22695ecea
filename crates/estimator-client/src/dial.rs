//! Dialling an estimator: from resolved addresses to a ready gRPC connection.
//!
//! As the reference: each address gets a fixed time (5 s) to become ready, addresses are
//! tried in order and the first ready one wins; if none does, the error lists every attempt
//! as `dial <addr> error: <reason>`. For a headless Service's endpoints (equivalent
//! replicas) every endpoint is dialled at once and calls are spread over those that
//! connected.
//!
//! The transport ([`crate::transport`]) resolves the host name on every (re)connect, so a DNS
//! target follows DNS changes like grpc-go's `dns` resolver; TLS is done by our own rustls
//! connector so that the reference's choices (including skipped verification) can be
//! reproduced.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use rustls::ClientConfig;

use crate::resolver::{Address, DialStrategy, Resolution};
use crate::tls;
use crate::transport::Channel;

/// Transport settings for one dial.
#[derive(Clone)]
pub struct DialSettings {
    /// TLS configuration, `None` for plaintext.
    pub tls: Option<Arc<ClientConfig>>,
    /// Our extension: name verified instead of each address's host.
    pub server_name: Option<String>,
    /// Limit for one address to become ready.
    pub connect_timeout: Duration,
}

/// No address could be connected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{}", aggregate(.0))]
pub struct DialError(pub Vec<String>);

/// Formats several error messages as Kubernetes' aggregate errors print: the only message
/// alone, else `[m1, m2, ...]`.
pub fn aggregate(messages: &[String]) -> String {
    match messages {
        [] => String::new(),
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// A ready connection to one estimator (one channel, or one per endpoint when balancing).
#[derive(Debug)]
pub struct Connection {
    channels: Vec<(Address, Channel)>,
    next: AtomicUsize,
}

impl Connection {
    /// The channel for the next call (round robin over endpoints).
    pub fn channel(&self) -> Channel {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.channels.len();
        self.channels[i].1.clone()
    }

    /// The addresses connected to.
    pub fn addresses(&self) -> Vec<Address> {
        self.channels.iter().map(|(a, _)| a.clone()).collect()
    }

    /// The addresses as one string, for logs (`a, b`).
    pub fn target(&self) -> String {
        self.channels
            .iter()
            .map(|(a, _)| a.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Connects to `resolution` as its strategy says.
pub async fn dial(
    resolution: &Resolution,
    settings: &DialSettings,
) -> Result<Connection, DialError> {
    let mut errors = Vec::new();
    let mut channels = Vec::new();
    match resolution.strategy {
        DialStrategy::FirstReachable => {
            for address in &resolution.addresses {
                match dial_one(address, settings).await {
                    Ok(channel) => {
                        channels.push((address.clone(), channel));
                        break;
                    }
                    Err(reason) => errors.push(format!("dial {address} error: {reason}")),
                }
            }
        }
        DialStrategy::Balance => {
            let attempts = resolution.addresses.iter().map(|a| dial_one(a, settings));
            let results = futures::future::join_all(attempts).await;
            for (address, result) in resolution.addresses.iter().zip(results) {
                match result {
                    Ok(channel) => channels.push((address.clone(), channel)),
                    Err(reason) => errors.push(format!("dial {address} error: {reason}")),
                }
            }
        }
    }
    if channels.is_empty() {
        if errors.is_empty() {
            errors.push("no address to dial".to_string());
        }
        return Err(DialError(errors));
    }
    Ok(Connection {
        channels,
        next: AtomicUsize::new(0),
    })
}

/// Connects one address and waits until the HTTP/2 connection is ready.
pub async fn dial_one(address: &Address, settings: &DialSettings) -> Result<Channel, String> {
    let tls = match &settings.tls {
        None => None,
        Some(config) => {
            let name = tls::server_name(address.host(), settings.server_name.as_deref())
                .map_err(|e| e.to_string())?;
            Some((config.clone(), name))
        }
    };
    Channel::connect(address.clone(), tls, settings.connect_timeout)
        .await
        .map_err(|e| error_chain(e.as_ref()))
}

/// `error: cause: cause`, skipping repeated texts (errors wrap their causes in layers).
pub fn error_chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut current = Some(error);
    while let Some(e) = current {
        let text = e.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        current = e.source();
    }
    parts.join(": ")
}
