//! A failed API request, reduced to what callers decide on.

/// The `reason` of an [`ApiFailure`] for a write the write fence refused before sending it
/// (this replica's hold on the leader lease lapsed; see the `fence` module).
pub const FENCED_REASON: &str = "LeaseLapsed";

/// A write the write fence (`fence::FenceLayer`) refused on its way to the wire: a tower error,
/// which kube reports as a service error.
#[derive(Debug, thiserror::Error)]
#[error(
    "not sent: this replica's hold on the leader lease lapsed ({method} {path} refused by the write fence)"
)]
pub struct FencedRequest {
    method: http::Method,
    path: String,
}

impl FencedRequest {
    pub fn new(method: http::Method, path: &str) -> Self {
        Self {
            method,
            path: path.to_string(),
        }
    }

    /// Whether `e` is a request the fence refused (kube reports it as a service error).
    pub fn is_cause_of(e: &kube::Error) -> bool {
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
        while let Some(err) = source {
            if err.is::<FencedRequest>() {
                return true;
            }
            source = err.source();
        }
        false
    }
}

/// A failed API request: its status code, reason and message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiFailure {
    /// HTTP status code; 0 when the request never got an answer.
    pub code: u16,
    /// `Status.reason` (`Conflict`, `NotFound`, `QuotaExceeded`, ...).
    pub reason: String,
    /// `Status.message`, which is what a Go `StatusError` prints.
    pub message: String,
}

impl ApiFailure {
    pub fn is_conflict(&self) -> bool {
        self.code == 409
    }

    pub fn is_not_found(&self) -> bool {
        self.code == 404
    }

    /// Not sent: the write fence refused it because this replica's lease lapsed
    /// (see the write fence). The work belongs to whoever leads now.
    pub fn is_fenced(&self) -> bool {
        self.code == 0 && self.reason == FENCED_REASON
    }

    /// The API server did not act on the request as a judgement of it: no answer at all
    /// (refused, reset, timed out, the response lost), throttling, or a server-side error.
    /// Whether the write landed is unknown; the binding waits for the server to answer again
    /// and is then retried (a landed result patch is recognised by its marker).
    pub fn is_transient(&self) -> bool {
        self.code == 0 || self.code == 429 || self.code >= 500
    }
}

impl std::fmt::Display for ApiFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// `fut` (one API request, described by `what` when it times out) bounded by `limit`: a
/// timeout is a failure without an answer (code 0, reason `Timeout`), so that a hung API
/// server cannot hold a caller forever (the client has no read timeout: it also carries the
/// watches). A write that times out may still have landed.
pub async fn bounded<T>(
    what: impl FnOnce() -> String,
    limit: std::time::Duration,
    fut: impl std::future::Future<Output = Result<T, kube::Error>>,
) -> Result<T, ApiFailure> {
    match tokio::time::timeout(limit, fut).await {
        Ok(r) => r.map_err(api_failure),
        Err(_) => Err(ApiFailure {
            code: 0,
            reason: "Timeout".into(),
            message: format!(
                "{}: no answer from the API server within {}s",
                what(),
                limit.as_secs()
            ),
        }),
    }
}

/// Convert a kube error into the fields the callers look at.
pub fn api_failure(e: kube::Error) -> ApiFailure {
    match e {
        kube::Error::Api(s) => ApiFailure {
            code: s.code,
            reason: s.reason.clone(),
            message: s.message.clone(),
        },
        // Refused by the fence layer (the lease lapsed between the caller's check and the
        // wire): not sent, the same as a write its permit refused, never a transient failure
        // to be retried by a replica that no longer leads.
        other if FencedRequest::is_cause_of(&other) => ApiFailure {
            code: 0,
            reason: FENCED_REASON.to_string(),
            message: other.to_string(),
        },
        other => ApiFailure {
            code: 0,
            reason: String::new(),
            message: other.to_string(),
        },
    }
}
