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

/// The caches and the review budget of one daemon.
pub struct Guard {
    users: Mutex<Lru<String, Entry<Result<UserInfo, String>>>>,
    rights: Mutex<Lru<(String, BindingKey), Entry<Verdict>>>,
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
        let pair = (token.to_string(), key.clone());
        if let Some(v) = fresh(&self.rights, &pair) {
            return Ok(v);
        }
        let user = match fresh(&self.users, &pair.0) {
            Some(u) => u,
            None => {
                let u = self.authenticate(client, token).await?;
                keep(&self.users, pair.0.clone(), u.clone());
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
            BindingKind::ResourceBinding => Some(key.namespace.clone()),
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
                    name: Some(key.name.clone()),
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
            key.name
        );
        if let Some(r) = status.reason.filter(|r| !r.is_empty()) {
            why = format!("{why}: {r}");
        }
        Ok(Verdict::Forbidden(why))
    }
}
