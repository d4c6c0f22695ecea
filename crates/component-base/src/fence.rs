//! Write fencing: a replica sends a write only while it certainly holds the leader Lease.
//!
//! Leader election alone does not stop a replica that was frozen (SIGSTOP, a paused or
//! live-migrated VM, a stalled disk) or cut off from the API server: when it wakes, its
//! goroutine-equivalent still believes it leads, its caches are stale, and whatever it had
//! taken or computed is about to be written, while another replica has led meanwhile. client-go
//! only notices when a renewal times out, seconds later.
//!
//! The [`Fence`] keeps a validity deadline on `CLOCK_BOOTTIME`, a clock that keeps counting
//! through a stall or a suspend: the start of the last successful renewal plus the renew
//! deadline. Every other candidate considers the Lease held until its own observation of that
//! renewal plus the whole lease duration, which is later, so the gap (lease duration minus
//! renew deadline, 5 s with the defaults) is the margin for request latency and clock rates.
//!
//! Work is done under a [`Permit`]: the fence's term when it was taken. A term ends the moment
//! the deadline passes without a renewal, or leadership ends; a later renewal or acquisition
//! opens a new term. [`Permit::check`] is called right before each request is sent and fails
//! for a past term even when the replica leads again, so anything taken or computed before or
//! during a stall is dropped unwritten and requeued for whoever leads. The kube client adds the
//! same deadline check below its rate limiter and retries ([`FenceLayer`]), for writes that do
//! not carry a permit (Events).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::sync::watch;

use crate::api::ApiFailure;
pub use crate::api::{FENCED_REASON, FencedRequest};

/// Nanoseconds on a clock that counts through stalls and suspends.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// `CLOCK_BOOTTIME` in nanoseconds: unlike `CLOCK_MONOTONIC` (tokio's `Instant`), it also
/// counts the time the machine was suspended.
pub fn boottime_nanos() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_BOOTTIME exists on every Linux since
    // 2.6.39, and the call writes nothing else.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) };
    if rc != 0 {
        // Not reachable on Linux; fall back to a clock that still never goes backwards.
        return std::time::Instant::now()
            .duration_since(*START)
            .as_nanos()
            .try_into()
            .unwrap_or(u64::MAX);
    }
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

static START: std::sync::LazyLock<std::time::Instant> =
    std::sync::LazyLock::new(std::time::Instant::now);

#[derive(Debug)]
struct State {
    /// Increases each time the fence opens.
    term: u64,
    /// Writes allowed while the clock reads below this; `u64::MAX` without election.
    valid_until: u64,
    /// Whether the current term is open (closed on loss, before the deadline if need be).
    open: bool,
}

struct Inner {
    state: Mutex<State>,
    clock: Clock,
    /// Mirrors "open" for the work loops that wait for leadership.
    leading: watch::Sender<bool>,
}

/// The shared fence of one process; cheap to clone.
#[derive(Clone)]
pub struct Fence(Arc<Inner>);

impl std::fmt::Debug for Fence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fence")
            .field("state", &*self.lock())
            .finish()
    }
}

/// Why a write was not sent.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "not sent: this replica's hold on the leader lease lapsed (term {term} is over); the work is left to the current leader"
)]
pub struct Fenced {
    pub term: u64,
}

impl From<Fenced> for ApiFailure {
    fn from(f: Fenced) -> Self {
        ApiFailure {
            code: 0,
            reason: FENCED_REASON.to_string(),
            message: f.to_string(),
        }
    }
}

impl Fence {
    fn with(clock: Clock, open: bool, valid_until: u64) -> Self {
        let (leading, _) = watch::channel(open);
        Fence(Arc::new(Inner {
            state: Mutex::new(State {
                term: u64::from(open),
                valid_until,
                open,
            }),
            clock,
            leading,
        }))
    }

    /// Always open (no leader election): one term that never ends.
    pub fn unfenced() -> Self {
        Self::with(Arc::new(boottime_nanos), true, u64::MAX)
    }

    /// Closed until the elector opens it, on `CLOCK_BOOTTIME`.
    pub fn closed() -> Self {
        Self::closed_with_clock(Arc::new(boottime_nanos))
    }

    /// Closed, on another clock (tests).
    pub fn closed_with_clock(clock: Clock) -> Self {
        Self::with(clock, false, 0)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.0.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The fence's clock now.
    pub fn now(&self) -> u64 {
        (self.0.clock)()
    }

    /// A renewal (or acquisition) that started at `started` (this fence's clock) succeeded:
    /// writes are allowed until `started + validity`. Opens a new term if the fence was closed
    /// or its deadline had passed meanwhile: work of the old term is not trusted any more.
    pub fn renewed(&self, started: u64, validity: Duration) {
        let now = self.now();
        let until = started.saturating_add(u64::try_from(validity.as_nanos()).unwrap_or(u64::MAX));
        let mut s = self.lock();
        if !s.open || now >= s.valid_until {
            s.term += 1;
            s.open = true;
        }
        s.valid_until = until;
        drop(s);
        self.0
            .leading
            .send_if_modified(|l| !std::mem::replace(l, true));
    }

    /// Leadership ended (or was found lapsed): the term is over.
    pub fn close(&self) {
        let mut s = self.lock();
        s.open = false;
        drop(s);
        self.0
            .leading
            .send_if_modified(|l| std::mem::replace(l, false));
    }

    /// Whether a write may be sent now (any term).
    pub fn is_valid_now(&self) -> bool {
        let s = self.lock();
        s.open && self.now() < s.valid_until
    }

    /// Whether the term is open but its deadline passed: the elector closes it at once.
    pub fn lapsed(&self) -> bool {
        let s = self.lock();
        s.open && self.now() >= s.valid_until
    }

    /// Time left before the deadline (zero when closed or lapsed).
    pub fn remaining(&self) -> Duration {
        let s = self.lock();
        if !s.open {
            return Duration::ZERO;
        }
        Duration::from_nanos(s.valid_until.saturating_sub(self.now()))
    }

    /// A permit for work taken now, if the fence is valid now.
    pub fn permit(&self) -> Option<Permit> {
        let s = self.lock();
        (s.open && self.now() < s.valid_until).then(|| Permit {
            fence: self.clone(),
            term: s.term,
        })
    }

    /// Follows whether the fence is open (for loops that wait to lead).
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.0.leading.subscribe()
    }

    /// Wait until the fence is open; a permit for the work about to be taken.
    pub async fn wait_permit(&self) -> Permit {
        let mut rx = self.leading();
        loop {
            if let Some(p) = self.permit() {
                return p;
            }
            // Open but lapsed: the elector closes it within a tick; poll meanwhile.
            tokio::select! {
                _ = rx.changed() => {}
                _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            }
        }
    }
}

/// The term a piece of work was taken in.
#[derive(Clone, Debug)]
pub struct Permit {
    fence: Fence,
    term: u64,
}

impl Permit {
    /// Right before a request is sent: still the same term, and its deadline not passed.
    pub fn check(&self) -> Result<(), Fenced> {
        let s = self.fence.lock();
        if s.open && s.term == self.term && self.fence.now() < s.valid_until {
            Ok(())
        } else {
            Err(Fenced { term: self.term })
        }
    }

    pub fn term(&self) -> u64 {
        self.term
    }
}

/// Whether a request writes (anything but the Lease, which is how the fence opens).
fn is_fenced_request<B>(req: &http::Request<B>) -> bool {
    let writes = matches!(
        *req.method(),
        http::Method::POST | http::Method::PUT | http::Method::PATCH | http::Method::DELETE
    );
    // The Lease is the fence's own; token and access reviews store nothing.
    let path = req.uri().path();
    writes
        && !path.starts_with("/apis/coordination.k8s.io/")
        && !path.starts_with("/apis/authentication.k8s.io/")
        && !path.starts_with("/apis/authorization.k8s.io/")
}

/// A kube client layer refusing writes (other than the Lease's, and reviews) while the fence is
/// not valid.
/// It sits below the rate limiter, the buffer and the retry layer, so each attempt on the
/// wire is checked, however long the request waited for a token.
#[derive(Clone, Debug)]
pub struct FenceLayer(pub Fence);

impl<S> tower::Layer<S> for FenceLayer {
    type Service = FenceService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FenceService {
            inner,
            fence: self.0.clone(),
        }
    }
}

/// The service of [`FenceLayer`].
#[derive(Clone, Debug)]
pub struct FenceService<S> {
    inner: S,
    fence: Fence,
}

impl<S, B, R> tower::Service<http::Request<B>> for FenceService<S>
where
    S: tower::Service<http::Request<B>, Response = R>,
    R: Send + 'static,
    S::Error: Into<tower::BoxError>,
    S::Future: Send + 'static,
{
    type Response = R;
    type Error = tower::BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<R, tower::BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if is_fenced_request(&req) && !self.fence.is_valid_now() {
            let err = FencedRequest::new(req.method().clone(), req.uri().path());
            tracing::warn!("{err}");
            return Box::pin(std::future::ready(Err(err.into())));
        }
        let fut = self.inner.call(req);
        Box::pin(async move { fut.await.map_err(Into::into) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn manual() -> (Fence, Arc<AtomicU64>) {
        let t = Arc::new(AtomicU64::new(1_000));
        let c = t.clone();
        (
            Fence::closed_with_clock(Arc::new(move || c.load(Ordering::SeqCst))),
            t,
        )
    }

    const S: u64 = 1_000_000_000;

    #[test]
    fn a_permit_is_valid_only_in_its_term_and_before_the_deadline() {
        let (f, t) = manual();
        assert!(f.permit().is_none(), "closed at first");
        f.renewed(t.load(Ordering::SeqCst), Duration::from_secs(10));
        let p = f.permit().expect("open");
        assert!(p.check().is_ok());
        // Renewed in time: same term.
        t.fetch_add(5 * S, Ordering::SeqCst);
        f.renewed(t.load(Ordering::SeqCst), Duration::from_secs(10));
        assert!(p.check().is_ok());
        // A stall past the deadline: refused at once, whatever the elector thinks.
        t.fetch_add(11 * S, Ordering::SeqCst);
        assert!(f.lapsed());
        assert_eq!(p.check(), Err(Fenced { term: p.term() }));
        assert!(f.permit().is_none());
        // The next renewal succeeds (nobody took the lease): a new term; the old work stays
        // refused.
        f.renewed(t.load(Ordering::SeqCst), Duration::from_secs(10));
        assert!(p.check().is_err());
        let q = f.permit().unwrap();
        assert_eq!(q.term(), p.term() + 1);
        assert!(q.check().is_ok());
    }

    #[test]
    fn closing_ends_the_term_before_the_deadline() {
        let (f, t) = manual();
        f.renewed(t.load(Ordering::SeqCst), Duration::from_secs(10));
        let p = f.permit().unwrap();
        f.close();
        assert!(p.check().is_err());
        assert!(!*f.leading().borrow());
        f.renewed(t.load(Ordering::SeqCst), Duration::from_secs(10));
        assert!(p.check().is_err(), "a new term");
        assert!(*f.leading().borrow());
    }

    #[test]
    fn validity_counts_from_the_start_of_the_renewal() {
        let (f, t) = manual();
        let started = t.load(Ordering::SeqCst);
        t.fetch_add(3 * S, Ordering::SeqCst); // the renewal took 3 s
        f.renewed(started, Duration::from_secs(10));
        assert_eq!(f.remaining(), Duration::from_secs(7));
    }

    #[test]
    fn a_refusal_is_recognised_through_kubes_error() {
        let refused = || {
            kube::Error::Service(Box::new(FencedRequest::new(
                http::Method::POST,
                "/api/v1/namespaces/ns/events",
            )))
        };
        assert!(FencedRequest::is_cause_of(&refused()));
        assert!(crate::api::api_failure(refused()).is_fenced());
        let other = || kube::Error::Service("connection refused".into());
        assert!(!FencedRequest::is_cause_of(&other()));
        let failure = crate::api::api_failure(other());
        assert!(!failure.is_fenced() && failure.is_transient());
    }

    #[test]
    fn unfenced_is_always_valid() {
        let f = Fence::unfenced();
        assert!(f.permit().unwrap().check().is_ok());
        assert!(*f.leading().borrow());
    }

    #[test]
    fn boottime_moves_forward() {
        let a = boottime_nanos();
        std::thread::sleep(Duration::from_millis(2));
        assert!(boottime_nanos() > a);
    }

    #[tokio::test]
    async fn the_layer_refuses_writes_but_not_reads_or_the_lease() {
        use tower::{Layer as _, ServiceExt as _};
        let (f, t) = manual();
        let sent = Arc::new(AtomicU64::new(0));
        let counter = sent.clone();
        let inner = tower::service_fn(move |_req: http::Request<()>| {
            counter.fetch_add(1, Ordering::SeqCst);
            async { Ok::<_, std::convert::Infallible>(http::Response::new(())) }
        });
        let svc = FenceLayer(f.clone()).layer(inner);
        let req =
            |m: http::Method, p: &str| http::Request::builder().method(m).uri(p).body(()).unwrap();
        let patch = "/apis/work.karmada.io/v1alpha2/namespaces/a/resourcebindings/b";
        assert!(
            svc.clone()
                .oneshot(req(http::Method::PATCH, patch))
                .await
                .is_err()
        );
        assert!(
            svc.clone()
                .oneshot(req(http::Method::POST, "/api/v1/namespaces/a/events"))
                .await
                .is_err()
        );
        assert!(
            svc.clone()
                .oneshot(req(http::Method::GET, patch))
                .await
                .is_ok()
        );
        assert!(
            svc.clone()
                .oneshot(req(
                    http::Method::PUT,
                    "/apis/coordination.k8s.io/v1/namespaces/k/leases/l"
                ))
                .await
                .is_ok()
        );
        // Reviews store nothing (`/debug/explain` checks its callers on a paused leader too).
        for review in [
            "/apis/authentication.k8s.io/v1/tokenreviews",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        ] {
            assert!(
                svc.clone()
                    .oneshot(req(http::Method::POST, review))
                    .await
                    .is_ok()
            );
        }
        assert_eq!(sent.load(Ordering::SeqCst), 4);
        f.renewed(t.load(Ordering::SeqCst), Duration::from_secs(10));
        assert!(
            svc.clone()
                .oneshot(req(http::Method::PATCH, patch))
                .await
                .is_ok()
        );
        assert_eq!(sent.load(Ordering::SeqCst), 5);
    }
}
