//! Client-side request limiting per `--kube-api-qps` / `--kube-api-burst`.
//!
//! The reference attaches one token bucket (`flowcontrol.NewTokenBucketRateLimiter`) to its REST
//! config, so every request of every client built from it — lists, watches, patches, Events,
//! Lease updates — waits for a token. Here the same bucket is a tower layer on the kube
//! client's service stack: `poll_ready` reserves a token and sleeps until it is due, so requests
//! leave in order at most `qps` per second after an initial burst.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::Instant;
use tower::{Layer, Service};

/// A token bucket in the manner of `golang.org/x/time/rate` (starts full, continuous refill).
#[derive(Debug)]
pub struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Instant,
}

impl TokenBucket {
    pub fn new(qps: f64, burst: f64) -> Self {
        Self::new_at(qps, burst, Instant::now())
    }

    /// Full at `now`.
    pub fn new_at(qps: f64, burst: f64, now: Instant) -> Self {
        Self {
            qps,
            burst,
            tokens: burst,
            last: now,
        }
    }

    /// The tokens there would be at `now` (refilled since the last use, up to the burst).
    pub fn tokens_at(&self, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        (self.tokens + elapsed * self.qps).min(self.burst)
    }

    /// Whether the bucket is full at `now` (the same as a bucket never used).
    pub fn is_full_at(&self, now: Instant) -> bool {
        self.tokens_at(now) >= self.burst
    }

    /// Take one token now, returning how long the caller must wait before using it.
    pub fn reserve(&mut self) -> Duration {
        self.reserve_at(Instant::now())
    }

    /// Take one token at `now` (`Reserve().Delay()`): how long until it is available.
    pub fn reserve_at(&mut self, now: Instant) -> Duration {
        self.tokens = self.tokens_at(now) - 1.0;
        self.last = now;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }

    /// Take one token at `now` if one is there (`Allow()`); nothing is owed otherwise.
    pub fn allow_at(&mut self, now: Instant) -> bool {
        self.tokens = self.tokens_at(now);
        self.last = now;
        let allowed = self.tokens >= 1.0;
        if allowed {
            self.tokens -= 1.0;
        }
        allowed
    }
}

/// The layer; clones share one bucket.
#[derive(Clone, Debug)]
pub struct QpsLayer {
    bucket: Option<Arc<Mutex<TokenBucket>>>,
}

impl QpsLayer {
    /// `qps <= 0` disables limiting (the reference would stall forever once the burst is spent;
    /// we treat it as "no limit" instead).
    pub fn new(qps: f32, burst: i64) -> Self {
        let bucket = (qps > 0.0).then(|| {
            Arc::new(Mutex::new(TokenBucket::new(
                f64::from(qps),
                burst.max(1) as f64,
            )))
        });
        Self { bucket }
    }
}

impl<S> Layer<S> for QpsLayer {
    type Service = QpsLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        QpsLimit {
            inner,
            bucket: self.bucket.clone(),
            wait: None,
            reserved: false,
        }
    }
}

/// The service: waits for a token before each request.
pub struct QpsLimit<S> {
    inner: S,
    bucket: Option<Arc<Mutex<TokenBucket>>>,
    wait: Option<Pin<Box<tokio::time::Sleep>>>,
    reserved: bool,
}

impl<S, R> Service<R> for QpsLimit<S>
where
    S: Service<R>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        if let Some(bucket) = &self.bucket
            && !self.reserved
        {
            if self.wait.is_none() {
                let delay = bucket.lock().unwrap_or_else(|p| p.into_inner()).reserve();
                if !delay.is_zero() {
                    self.wait = Some(Box::pin(tokio::time::sleep(delay)));
                }
            }
            if let Some(wait) = self.wait.as_mut() {
                if wait.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.wait = None;
            }
            self.reserved = true;
        }
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: R) -> Self::Future {
        self.reserved = false;
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;

    #[tokio::test(start_paused = true)]
    async fn burst_then_qps() {
        let layer = QpsLayer::new(10.0, 3);
        let mut svc = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(Instant::now())
        }));
        let start = Instant::now();
        let mut times = Vec::new();
        for _ in 0..5 {
            times.push(svc.ready().await.unwrap().call(()).await.unwrap() - start);
        }
        let ms: Vec<u128> = times.iter().map(Duration::as_millis).collect();
        assert_eq!(ms, vec![0, 0, 0, 100, 200]);
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_the_bucket_and_zero_qps_is_unlimited() {
        let layer = QpsLayer::new(1.0, 1);
        let mut a = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(Instant::now())
        }));
        let mut b = layer.layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(Instant::now())
        }));
        let start = Instant::now();
        a.ready().await.unwrap().call(()).await.unwrap();
        let t = b.ready().await.unwrap().call(()).await.unwrap();
        assert_eq!(t - start, Duration::from_secs(1));
        let mut free = QpsLayer::new(0.0, 0).layer(tower::service_fn(|_: ()| async {
            Ok::<_, std::convert::Infallible>(Instant::now())
        }));
        for _ in 0..100 {
            free.ready().await.unwrap().call(()).await.unwrap();
        }
        assert_eq!(Instant::now() - start, Duration::from_secs(1));
    }
}
