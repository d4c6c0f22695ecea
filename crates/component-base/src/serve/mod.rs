//! `/healthz`, `/readyz` and `/metrics`, and the `--enable-pprof` profiling server.
//!
//! As upstream, the servers run on every replica (leader or not), `"0"` disables one, and equal
//! addresses share one server. `/readyz` is our addition: 200 only once the caches have synced
//! (a standby replica, which does not watch, reports ready once it is campaigning). Addresses
//! are Go-style (`:8080` means every interface); an empty address means port 80, as upstream.
//! Every connection is held to [`Limits`] ([`conn`]).

mod conn;
pub mod pprof;

pub use conn::Limits;

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::cancel::CancellationToken;
use anyhow::Context as _;
use axum::Router;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;
use tokio::net::TcpListener;

use crate::metrics::ComponentMetrics as Metrics;

/// Readiness shared between the controller and the probe server.
#[derive(Clone, Debug, Default)]
pub struct Readiness(Arc<AtomicBool>);

impl Readiness {
    pub fn set(&self, ready: bool) {
        self.0.store(ready, Ordering::SeqCst);
    }

    pub fn get(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// A Go listen address (`:8080`, `127.0.0.1:10351`, `[::1]:80`, `""`) as socket addresses.
pub fn parse_bind_address(addr: &str) -> anyhow::Result<SocketAddr> {
    let (host, port) = match addr.rsplit_once(':') {
        Some((h, p)) => (h, p),
        None if addr.is_empty() => ("", "80"),
        None => anyhow::bail!("address {addr}: missing port in address"),
    };
    let port: u16 = if port.is_empty() {
        80
    } else {
        port.parse()
            .with_context(|| format!("address {addr}: invalid port"))?
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let ip = if host.is_empty() {
        std::net::IpAddr::from([0u8; 16])
    } else if host == "localhost" {
        std::net::IpAddr::from([127, 0, 0, 1])
    } else {
        host.parse()
            .with_context(|| format!("address {addr}: host must be an IP address"))?
    };
    Ok(SocketAddr::new(ip, port))
}

fn router(health: bool, metrics: Option<Arc<Metrics>>, ready: Readiness) -> Router {
    let mut r = Router::new();
    if health {
        r = r.route("/healthz", any(|| async { (StatusCode::OK, "ok") }));
        r = r.route(
            "/readyz",
            any(move || {
                let ready = ready.clone();
                async move {
                    if ready.get() {
                        (StatusCode::OK, "ok")
                    } else {
                        (StatusCode::SERVICE_UNAVAILABLE, "caches not synced")
                    }
                }
            }),
        );
    }
    if let Some(m) = metrics {
        r = r.route(
            "/metrics",
            any(move || {
                let m = m.clone();
                async move {
                    match m.encode() {
                        Ok(text) => (
                            [(
                                header::CONTENT_TYPE,
                                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                            )],
                            text,
                        )
                            .into_response(),
                        Err(e) => Response::builder()
                            .status(StatusCode::INTERNAL_SERVER_ERROR)
                            .body(axum::body::Body::from(e.to_string()))
                            .unwrap_or_default(),
                    }
                }
            }),
        );
    }
    r
}

/// Bound listeners, ready to serve.
pub struct Servers {
    servers: Vec<(String, TcpListener, Router)>,
}

impl Servers {
    /// Bind the servers the flags ask for; a bind failure is fatal, as upstream.
    pub async fn bind(
        health_addr: &str,
        metrics_addr: &str,
        metrics: Arc<Metrics>,
        ready: Readiness,
    ) -> anyhow::Result<Self> {
        let mut plan: Vec<(String, String, Router)> = Vec::new();
        if health_addr == metrics_addr {
            if health_addr != "0" {
                plan.push((
                    "healthz and metrics".into(),
                    health_addr.into(),
                    router(true, Some(metrics), ready),
                ));
            }
        } else {
            if health_addr != "0" {
                plan.push((
                    "healthz".into(),
                    health_addr.into(),
                    router(true, None, ready),
                ));
            }
            if metrics_addr != "0" {
                plan.push((
                    "metrics".into(),
                    metrics_addr.into(),
                    router(false, Some(metrics), Readiness::default()),
                ));
            }
        }
        Self::listen(plan).await
    }

    /// Serve `extra` next to `/healthz` and `/readyz` on the probe server (a component's own
    /// read-only endpoints); nothing when the probe server is off.
    pub fn with_health_routes(mut self, extra: Router) -> Self {
        for (name, _, router) in &mut self.servers {
            if name.starts_with("healthz") {
                *router = std::mem::take(router).merge(extra.clone());
            }
        }
        self
    }

    /// Add the `--enable-pprof` server on `addr` (`crate::pprof`: CPU profiles that
    /// `go tool pprof` reads).
    pub async fn with_pprof(mut self, addr: &str) -> anyhow::Result<Self> {
        let more = Self::listen(vec![("profiling".into(), addr.into(), pprof::router())]).await?;
        self.servers.extend(more.servers);
        Ok(self)
    }

    async fn listen(plan: Vec<(String, String, Router)>) -> anyhow::Result<Self> {
        let mut servers = Vec::new();
        for (name, addr, r) in plan {
            let sock = parse_bind_address(&addr)?;
            let listener = TcpListener::bind(sock)
                .await
                .with_context(|| format!("Failed to serve {name} on {addr}"))?;
            tracing::info!("Starting {name} server on {addr}");
            servers.push((name, listener, r));
        }
        Ok(Self { servers })
    }

    /// Local addresses of the bound servers (tests bind port 0).
    pub fn local_addrs(&self) -> Vec<SocketAddr> {
        self.servers
            .iter()
            .filter_map(|(_, l, _)| l.local_addr().ok())
            .collect()
    }

    /// Serve until `stop` fires; then requests in flight get [`Limits::shutdown_grace`] to
    /// finish, and what is still open is closed.
    pub async fn serve(self, stop: CancellationToken) -> anyhow::Result<()> {
        let mut tasks = Vec::new();
        for (name, listener, r) in self.servers {
            tasks.push(tokio::spawn(conn::serve(
                name,
                listener,
                r,
                Limits::default(),
                stop.clone(),
            )));
        }
        for t in tasks {
            t.await.context("server task")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn get(addr: SocketAddr, path: &str) -> (u16, String) {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .unwrap();
        let mut buf = String::new();
        s.read_to_string(&mut buf).await.unwrap();
        let code = buf[9..12].parse().unwrap();
        let body = buf.split("\r\n\r\n").nth(1).unwrap_or_default().to_string();
        (code, body)
    }

    #[test]
    fn go_addresses() {
        assert_eq!(parse_bind_address(":8080").unwrap().port(), 8080);
        assert!(parse_bind_address(":8080").unwrap().ip().is_unspecified());
        assert_eq!(
            parse_bind_address("127.0.0.1:1").unwrap().to_string(),
            "127.0.0.1:1"
        );
        assert_eq!(
            parse_bind_address("[::1]:2").unwrap().to_string(),
            "[::1]:2"
        );
        assert_eq!(parse_bind_address("").unwrap().port(), 80);
        assert!(parse_bind_address("nope").is_err());
    }

    #[tokio::test]
    async fn one_server_when_addresses_match() {
        let ready = Readiness::default();
        let servers = Servers::bind(
            "127.0.0.1:0",
            "127.0.0.1:0",
            Arc::new(Metrics::new()),
            ready.clone(),
        )
        .await
        .unwrap();
        let addrs = servers.local_addrs();
        assert_eq!(addrs.len(), 1);
        let stop = CancellationToken::new();
        let task = tokio::spawn(servers.serve(stop.clone()));
        assert_eq!(get(addrs[0], "/healthz").await, (200, "ok".to_string()));
        assert_eq!(get(addrs[0], "/readyz").await.0, 503);
        ready.set(true);
        assert_eq!(get(addrs[0], "/readyz").await.0, 200);
        let (code, body) = get(addrs[0], "/metrics").await;
        assert_eq!(code, 200);
        assert!(body.contains("karmada_build_info"));
        assert_eq!(get(addrs[0], "/healthz/x").await.0, 404);
        stop.cancel();
        task.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn pprof_serves_profiles_only_on_its_own_address() {
        let servers = Servers::bind("0", "0", Arc::new(Metrics::new()), Readiness::default())
            .await
            .unwrap()
            .with_pprof("127.0.0.1:0")
            .await
            .unwrap();
        let addrs = servers.local_addrs();
        let stop = CancellationToken::new();
        tokio::spawn(servers.serve(stop.clone()));
        let (code, body) = get(addrs[0], "/debug/pprof/heap").await;
        assert_eq!(code, 501);
        assert!(body.contains("not available in this build"), "{body}");
        assert_eq!(get(addrs[0], "/debug/pprof/").await.0, 200);
        assert_eq!(get(addrs[0], "/metrics").await.0, 404);
        stop.cancel();
    }

    #[tokio::test]
    async fn zero_disables_and_different_addresses_split() {
        let m = Arc::new(Metrics::new());
        let none = Servers::bind("0", "0", m.clone(), Readiness::default())
            .await
            .unwrap();
        assert!(none.local_addrs().is_empty());
        let only_metrics = Servers::bind("0", "127.0.0.1:0", m.clone(), Readiness::default())
            .await
            .unwrap();
        let addrs = only_metrics.local_addrs();
        let stop = CancellationToken::new();
        tokio::spawn(only_metrics.serve(stop.clone()));
        assert_eq!(get(addrs[0], "/healthz").await.0, 404);
        assert_eq!(get(addrs[0], "/metrics").await.0, 200);
        stop.cancel();
    }
}
