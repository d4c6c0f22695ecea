//! `--enable-pprof`: the paths of Go's `net/http/pprof` that a Rust process can answer truly.
//!
//! `/debug/pprof/profile?seconds=N` samples this process's CPU for N seconds (30 when absent or
//! not a positive number, as Go) at 100 Hz (Go's rate) and answers the profile in pprof's
//! protobuf format, symbolised in process, so `go tool pprof http://<addr>/debug/pprof/profile`
//! works as against the Go scheduler. One profile at a time, as Go. `/debug/pprof/cmdline`
//! answers the command line. The Go runtime's other profiles (heap, goroutine, allocs, block,
//! mutex, threadcreate, trace) have no counterpart without an allocator profiler or a Go
//! runtime: they answer 501 with a message that says so, instead of an empty profile.
//!
//! Sampling uses a `SIGPROF` interval timer (the `pprof` crate), only while a profile is
//! being taken; nothing runs otherwise.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::{StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::any;

/// Go's default profile length.
const DEFAULT_SECONDS: u64 = 30;
/// A profile must end within the server's request timeout: longer ones are refused, as Go
/// refuses those that reach its server's write timeout (the same 5 min).
const MAX_SECONDS: u64 = super::Limits::DEFAULT_REQUEST_TIMEOUT.as_secs();
/// Go's CPU profiling rate.
const FREQUENCY_HZ: i32 = 100;

/// Set while a CPU profile is being taken: the interval timer is process-wide.
static PROFILING: AtomicBool = AtomicBool::new(false);

/// The routes of the profiling server.
pub fn router() -> Router {
    Router::new()
        .route("/debug/pprof", any(index))
        .route("/debug/pprof/", any(index))
        .route("/debug/pprof/profile", any(profile))
        .route("/debug/pprof/cmdline", any(cmdline))
        .route("/debug/pprof/{*rest}", any(unavailable))
}

async fn index() -> impl IntoResponse {
    (
        StatusCode::OK,
        "profiles:\n\
         profile   CPU profile in pprof's protobuf format (?seconds=N, default 30)\n\
         cmdline   the command line\n\
         heap, allocs, goroutine, block, mutex, threadcreate, trace: not available in this build (no Go runtime)\n",
    )
}

async fn cmdline() -> impl IntoResponse {
    std::env::args().collect::<Vec<_>>().join("\0")
}

async fn unavailable(uri: Uri) -> impl IntoResponse {
    (
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "{}: not available in this build: it is a profile of the Go runtime (no Go runtime here) \
             or needs an allocator profiler; /debug/pprof/profile gives a CPU profile\n",
            uri.path()
        ),
    )
}

/// `seconds` of the query as Go reads it: a positive integer, else the default.
fn seconds(uri: &Uri) -> u64 {
    uri.query()
        .into_iter()
        .flat_map(|q| q.split('&'))
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == "seconds")
        .and_then(|(_, v)| v.parse::<i64>().ok())
        .filter(|s| *s > 0)
        .map_or(DEFAULT_SECONDS, |s| s as u64)
}

/// Why a profile could not be taken.
#[derive(Debug, thiserror::Error)]
enum ProfileError {
    #[error("Could not enable CPU profiling: cpu profiling already in use")]
    Busy,
    #[error("Could not enable CPU profiling: {0}")]
    Start(String),
    #[error("Could not build the CPU profile: {0}")]
    Build(String),
}

/// Sample the CPU for `length` and encode the profile.
fn take(length: Duration) -> Result<Vec<u8>, ProfileError> {
    use pprof::protos::Message as _;
    if PROFILING.swap(true, Ordering::SeqCst) {
        return Err(ProfileError::Busy);
    }
    let result = (|| {
        let guard = pprof::ProfilerGuardBuilder::default()
            .frequency(FREQUENCY_HZ)
            .blocklist(&["libc", "libgcc", "pthread", "vdso"])
            .build()
            .map_err(|e| ProfileError::Start(e.to_string()))?;
        std::thread::sleep(length);
        let report = guard
            .report()
            .build()
            .map_err(|e| ProfileError::Build(e.to_string()))?;
        let profile = report
            .pprof()
            .map_err(|e| ProfileError::Build(e.to_string()))?;
        let mut out = Vec::new();
        profile
            .encode(&mut out)
            .map_err(|e| ProfileError::Build(e.to_string()))?;
        Ok(out)
    })();
    PROFILING.store(false, Ordering::SeqCst);
    result
}

async fn profile(uri: Uri) -> Response {
    let secs = seconds(&uri);
    if secs >= MAX_SECONDS {
        return (
            StatusCode::BAD_REQUEST,
            "profile duration exceeds server's WriteTimeout\n",
        )
            .into_response();
    }
    let length = Duration::from_secs(secs);
    // The sampling thread sleeps through the profile; keep it off the async workers.
    match tokio::task::spawn_blocking(move || take(length)).await {
        Ok(Ok(bytes)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"profile\"",
                ),
            ],
            bytes,
        )
            .into_response(),
        Ok(Err(e)) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
        Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, format!("{e}\n")).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_as_go_reads_them() {
        let s = |q: &str| seconds(&format!("/debug/pprof/profile{q}").parse().unwrap());
        assert_eq!(s(""), 30);
        assert_eq!(s("?seconds=5"), 5);
        assert_eq!(s("?debug=1&seconds=2"), 2);
        assert_eq!(s("?seconds=0"), 30);
        assert_eq!(s("?seconds=-3"), 30);
        assert_eq!(s("?seconds=x"), 30);
        assert_eq!(s("?seconds=100000"), 100000);
    }

    #[tokio::test]
    async fn a_profile_longer_than_the_request_timeout_is_refused() {
        let r = profile("/debug/pprof/profile?seconds=300".parse().unwrap()).await;
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn a_second_profile_at_once_is_refused() {
        PROFILING.store(true, Ordering::SeqCst);
        let r = take(Duration::from_millis(1));
        PROFILING.store(false, Ordering::SeqCst);
        assert!(matches!(r, Err(ProfileError::Busy)), "{r:?}");
    }
}
