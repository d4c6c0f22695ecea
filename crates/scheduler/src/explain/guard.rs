//! Who may ask `/debug/explain`: the caller's bearer token is checked with the Karmada API
//! server (a TokenReview), then its right to `get` the binding (a SubjectAccessReview), as
//! Kubernetes components check callers of their own endpoints. Answers are kept for
//! [`VERDICT_TTL`] in bounded caches, and the reviews sent on a cache miss are rate-limited,
//! so a caller with made-up tokens cannot turn the endpoint into load on the API server.

use std::sync::Mutex;
use std::time::Duration;

use component_base::lru::Lru;
use component_base::ratelimit::TokenBucket;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use crate::model::binding::{BindingKey, BindingKind};

/// How long a review's answer is reused (Kubernetes' delegated authentication and
/// authorization keep theirs 10 s by default).
pub const VERDICT_TTL: Duration = Duration::from_secs(10);
/// Tokens and (token, binding) pairs remembered at most.
const CACHE_ENTRIES: usize = 1024;
/// Reviews sent per second on cache misses, and the burst.
const REVIEW_QPS: f64 = 5.0;
const REVIEW_BURST: f64 = 10.0;

/// What the reviews say about a caller and a binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// The token is not one the API server accepts (401).
    Unauthenticated(String),
    /// The caller may not `get` the binding (403).
    Forbidden(String),
}

/// Why a caller could not be checked.
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    #[error("too many callers to check with the API server; try again shortly")]
    TooMany,
    #[error("checking the caller with the API server failed: {0}")]
    Review(#[from] kube::Error),
}

type Entry<T> = (T, Instant);

/// A token as the caches know it: its SHA-256, so that they hold no credential and a long
/// token costs no more memory than a short one.
type TokenId = [u8; 32];

fn token_id(token: &str) -> TokenId {
    let d = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
    let mut id = [0u8; 32];
    id.copy_from_slice(d.as_ref());
    id
}

/// The caches and the review budget of one daemon.
pub struct Guard {
    users: Mutex<Lru<TokenId, Entry<Result<UserInfo, String>>>>,
    rights: Mutex<Lru<(TokenId, BindingKey), Entry<Verdict>>>,
    reviews: Mutex<TokenBucket>,
}

impl Default for Guard {
    fn default() -> Self {
        Self {
            users: Mutex::new(Lru::new(CACHE_ENTRIES)),
            rights: Mutex::new(Lru::new(CACHE_ENTRIES)),
            reviews: Mutex::new(TokenBucket::new(REVIEW_QPS, REVIEW_BURST)),
        }
    }
}

fn fresh<K: std::hash::Hash + Eq + Clone, T: Clone>(
    cache: &Mutex<Lru<K, Entry<T>>>,
    key: &K,
) -> Option<T> {
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    match c.get_mut(key) {
        Some((v, at)) if at.elapsed() < VERDICT_TTL => Some(v.clone()),
        Some(_) => {
            c.remove(key);
            None
        }
        None => None,
    }
}

fn keep<K: std::hash::Hash + Eq + Clone, T>(cache: &Mutex<Lru<K, Entry<T>>>, key: K, v: T) {
    cache
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, (v, Instant::now()));
}

impl Guard {
    /// May the holder of `token` `get` the binding `key`?
    pub async fn check(
        &self,
        client: &kube::Client,
        token: &str,
        key: &BindingKey,
    ) -> Result<Verdict, CheckError> {
        let pair = (token_id(token), key.clone());
        if let Some(v) = fresh(&self.rights, &pair) {
            return Ok(v);
        }
        let user = match fresh(&self.users, &pair.0) {
            Some(u) => u,
            None => {
                let u = self.authenticate(client, token).await?;
                keep(&self.users, pair.0, u.clone());
                u
            }
        };
        let verdict = match user {
            Err(why) => Verdict::Unauthenticated(why),
            Ok(user) => self.authorize(client, user, key).await?,
        };
        keep(&self.rights, pair, verdict.clone());
        Ok(verdict)
    }

    fn spend(&self) -> Result<(), CheckError> {
        let mut bucket = self.reviews.lock().unwrap_or_else(|e| e.into_inner());
        if bucket.allow_at(Instant::now()) {
            Ok(())
        } else {
            Err(CheckError::TooMany)
        }
    }

    /// The token's user, or why the API server does not accept it.
    async fn authenticate(
        &self,
        client: &kube::Client,
        token: &str,
    ) -> Result<Result<UserInfo, String>, CheckError> {
        self.spend()?;
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<TokenReview>::all(client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = answer.status.unwrap_or_default();
        Ok(match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Ok(user),
            _ => Err(status
                .error
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "the token is not valid".to_string())),
        })
    }

    async fn authorize(
        &self,
        client: &kube::Client,
        user: UserInfo,
        key: &BindingKey,
    ) -> Result<Verdict, CheckError> {
        self.spend()?;
        let name = user.username.clone().unwrap_or_default();
        let namespace = match key.kind {
            BindingKind::ResourceBinding => Some(key.object.namespace.clone()),
            BindingKind::ClusterResourceBinding => None,
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username,
                groups: user.groups,
                uid: user.uid,
                extra: user.extra,
                resource_attributes: Some(ResourceAttributes {
                    group: Some("work.karmada.io".into()),
                    resource: Some(key.kind.plural().into()),
                    verb: Some("get".into()),
                    namespace: namespace.clone(),
                    name: Some(key.object.name.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let answer = Api::<SubjectAccessReview>::all(client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = answer.status.unwrap_or_default();
        if status.allowed {
            return Ok(Verdict::Allowed);
        }
        let place = namespace
            .map(|ns| format!(" in the namespace {ns:?}"))
            .unwrap_or_default();
        let mut why = format!(
            "user {name:?} cannot get {}.work.karmada.io {:?}{place}",
            key.kind.plural(),
            key.object.name
        );
        if let Some(r) = status.reason.filter(|r| !r.is_empty()) {
            why = format!("{why}: {r}");
        }
        Ok(Verdict::Forbidden(why))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A client whose API server accepts the token `good` (user `alice`, who may get
    /// everything) and counts the reviews it is sent.
    fn client(reviews: Arc<AtomicUsize>) -> kube::Client {
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let reviews = reviews.clone();
            async move {
                reviews.fetch_add(1, Ordering::SeqCst);
                let path = req.uri().path().to_string();
                let body = req.into_body().collect_bytes().await.unwrap_or_default();
                let sent: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let mut answer = sent.clone();
                answer["status"] = if path.ends_with("/tokenreviews") {
                    if sent["spec"]["token"] == "good" {
                        serde_json::json!({"authenticated": true, "user": {"username": "alice"}})
                    } else {
                        serde_json::json!({"authenticated": false, "error": "invalid bearer token"})
                    }
                } else {
                    serde_json::json!({"allowed": sent["spec"]["user"] == "alice"})
                };
                Ok::<_, std::convert::Infallible>(
                    http::Response::builder()
                        .header("content-type", "application/json")
                        .body(kube::client::Body::from(answer.to_string().into_bytes()))
                        .unwrap(),
                )
            }
        });
        kube::Client::new(svc, "default")
    }

    #[tokio::test(start_paused = true)]
    async fn verdicts_are_reused_for_their_lifetime_and_reviews_are_budgeted() {
        let reviews = Arc::new(AtomicUsize::new(0));
        let client = client(reviews.clone());
        let guard = Guard::default();
        let rb = BindingKey::rb("ns", "b");
        let check = |token: &'static str| {
            let (guard, client, rb) = (&guard, &client, &rb);
            async move { guard.check(client, token, rb).await }
        };
        assert_eq!(check("good").await.unwrap(), Verdict::Allowed);
        assert_eq!(reviews.load(Ordering::SeqCst), 2);
        let Verdict::Unauthenticated(why) = check("bad").await.unwrap() else {
            panic!("a bad token passed");
        };
        assert!(why.contains("invalid bearer token"), "{why}");
        assert_eq!(reviews.load(Ordering::SeqCst), 3);
        // Asked again: from the caches.
        assert_eq!(check("good").await.unwrap(), Verdict::Allowed);
        assert!(matches!(
            check("bad").await,
            Ok(Verdict::Unauthenticated(_))
        ));
        assert_eq!(reviews.load(Ordering::SeqCst), 3);
        // After their lifetime, asked again.
        tokio::time::advance(VERDICT_TTL).await;
        assert_eq!(check("good").await.unwrap(), Verdict::Allowed);
        assert_eq!(reviews.load(Ordering::SeqCst), 5);
        // Made-up tokens spend the review budget, then get "too many" without a review.
        let mut refused = 0;
        for i in 0..100 {
            let token: &'static str = Box::leak(format!("made-up-{i}").into_boxed_str());
            refused += usize::from(matches!(check(token).await, Err(CheckError::TooMany)));
        }
        assert!(refused >= 90, "{refused}");
        assert!(reviews.load(Ordering::SeqCst) <= 5 + 10, "{reviews:?}");
    }
}
