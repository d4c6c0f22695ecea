//! Who may ask `/debug/explain`: the caller's bearer token is checked with the Karmada API
//! server (a TokenReview), then its right to `get` the binding (a SubjectAccessReview), as
//! Kubernetes components check callers of their own endpoints. Answers are kept for
//! [`VERDICT_TTL`] in bounded caches (refusals too), and the reviews sent on a cache miss come
//! out of [`Budgets`]: callers it cannot vouch for yet (new or made-up tokens) have their own,
//! per source address and in all, so they can neither turn the endpoint into load on the API
//! server nor lock out the callers it knows.

use std::sync::Mutex;
use std::time::Duration;

use component_base::lru::Lru;
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use crate::explain::budget::{Budgets, SEEN_VALID_FOR, Source};
use crate::model::binding::{BindingKey, BindingKind};

/// How long a review's answer is reused (Kubernetes' delegated authentication and
/// authorization keep theirs 10 s by default).
pub const VERDICT_TTL: Duration = Duration::from_secs(10);
/// Tokens, (token, binding) pairs and tokens seen valid remembered at most.
const CACHE_ENTRIES: usize = 1024;

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

/// The caches and the review budgets of one daemon.
pub struct Guard {
    users: Mutex<Lru<TokenId, Entry<Result<UserInfo, String>>>>,
    rights: Mutex<Lru<(TokenId, BindingKey), Entry<Verdict>>>,
    /// When the API server last accepted a token: its re-reviews are a known caller's. Only
    /// accepted tokens get in, so made-up ones cannot push them out.
    seen_valid: Mutex<Lru<TokenId, Instant>>,
    budgets: Mutex<Budgets>,
}

impl Default for Guard {
    fn default() -> Self {
        Self {
            users: Mutex::new(Lru::new(CACHE_ENTRIES)),
            rights: Mutex::new(Lru::new(CACHE_ENTRIES)),
            seen_valid: Mutex::new(Lru::new(CACHE_ENTRIES)),
            budgets: Mutex::new(Budgets::default()),
        }
    }
}

/// Which budget a review comes out of.
enum Budget {
    /// A SubjectAccessReview, or a TokenReview of a token seen valid lately.
    Known,
    /// A TokenReview of any other token, from this source.
    Unknown(Source),
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
    /// May the holder of `token`, asking from `source`, `get` the binding `key`?
    pub async fn check(
        &self,
        client: &kube::Client,
        token: &str,
        source: Source,
        key: &BindingKey,
    ) -> Result<Verdict, CheckError> {
        let pair = (token_id(token), key.clone());
        if let Some(v) = fresh(&self.rights, &pair) {
            return Ok(v);
        }
        let user = match fresh(&self.users, &pair.0) {
            Some(u) => u,
            None => {
                let u = self.authenticate(client, token, &pair.0, source).await?;
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

    fn spend(&self, budget: Budget) -> Result<(), CheckError> {
        let mut budgets = self.budgets.lock().unwrap_or_else(|e| e.into_inner());
        let allowed = match budget {
            Budget::Known => budgets.known(),
            Budget::Unknown(source) => budgets.unknown(source),
        };
        if allowed {
            Ok(())
        } else {
            Err(CheckError::TooMany)
        }
    }

    /// Whether the API server accepted the token `id` within [`SEEN_VALID_FOR`].
    fn seen_valid(&self, id: &TokenId) -> bool {
        let seen = self.seen_valid.lock().unwrap_or_else(|e| e.into_inner());
        seen.peek(id).is_some_and(|t| t.elapsed() < SEEN_VALID_FOR)
    }

    /// The token's user, or why the API server does not accept it.
    async fn authenticate(
        &self,
        client: &kube::Client,
        token: &str,
        id: &TokenId,
        source: Source,
    ) -> Result<Result<UserInfo, String>, CheckError> {
        self.spend(if self.seen_valid(id) {
            Budget::Known
        } else {
            Budget::Unknown(source)
        })?;
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
        let mut seen = self.seen_valid.lock().unwrap_or_else(|e| e.into_inner());
        Ok(match (status.authenticated, status.user) {
            (Some(true), Some(user)) => {
                seen.insert(*id, Instant::now());
                Ok(user)
            }
            _ => {
                seen.remove(id);
                Err(status
                    .error
                    .filter(|e| !e.is_empty())
                    .unwrap_or_else(|| "the token is not valid".to_string()))
            }
        })
    }

    async fn authorize(
        &self,
        client: &kube::Client,
        user: UserInfo,
        key: &BindingKey,
    ) -> Result<Verdict, CheckError> {
        self.spend(Budget::Known)?;
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
pub(crate) mod tests {
    use super::*;
    use std::net::SocketAddr;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// The reviews a fake API server was sent: all, and the TokenReviews of made-up tokens.
    #[derive(Debug, Default)]
    pub(crate) struct Reviews {
        pub all: AtomicUsize,
        pub made_up: AtomicUsize,
    }

    /// A client whose API server accepts the tokens `good` and `good-*` (user `alice`, who may
    /// get everything), and counts the reviews it is sent.
    pub(crate) fn client(reviews: Arc<Reviews>) -> kube::Client {
        let svc = tower::service_fn(move |req: http::Request<kube::client::Body>| {
            let reviews = reviews.clone();
            async move {
                reviews.all.fetch_add(1, Ordering::SeqCst);
                let path = req.uri().path().to_string();
                let body = req.into_body().collect_bytes().await.unwrap_or_default();
                let sent: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
                let mut answer = sent.clone();
                let token = sent["spec"]["token"].as_str().unwrap_or_default();
                answer["status"] = if path.ends_with("/tokenreviews") {
                    if token == "good" || token.starts_with("good-") {
                        serde_json::json!({"authenticated": true, "user": {"username": "alice"}})
                    } else {
                        if token.starts_with("made-up") {
                            reviews.made_up.fetch_add(1, Ordering::SeqCst);
                        }
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

    pub(crate) fn from(last: u8) -> Source {
        Source::of(Some(SocketAddr::from(([127, 0, 0, last], 4242))))
    }

    #[tokio::test(start_paused = true)]
    async fn verdicts_are_reused_for_their_lifetime_and_reviews_are_budgeted() {
        let reviews = Arc::new(Reviews::default());
        let client = client(reviews.clone());
        let guard = Guard::default();
        let rb = BindingKey::rb("ns", "b");
        let check = |token: &'static str| {
            let (guard, client, rb) = (&guard, &client, &rb);
            async move { guard.check(client, token, Source::of(None), rb).await }
        };
        assert_eq!(check("good").await.unwrap(), Verdict::Allowed);
        assert_eq!(reviews.all.load(Ordering::SeqCst), 2);
        let Verdict::Unauthenticated(why) = check("bad").await.unwrap() else {
            panic!("a bad token passed");
        };
        assert!(why.contains("invalid bearer token"), "{why}");
        assert_eq!(reviews.all.load(Ordering::SeqCst), 3);
        // Asked again: from the caches.
        assert_eq!(check("good").await.unwrap(), Verdict::Allowed);
        assert!(matches!(
            check("bad").await,
            Ok(Verdict::Unauthenticated(_))
        ));
        assert_eq!(reviews.all.load(Ordering::SeqCst), 3);
        // After their lifetime, asked again.
        tokio::time::advance(VERDICT_TTL).await;
        assert_eq!(check("good").await.unwrap(), Verdict::Allowed);
        assert_eq!(reviews.all.load(Ordering::SeqCst), 5);
        // Made-up tokens spend the review budget, then get "too many" without a review.
        let mut refused = 0;
        for i in 0..100 {
            let token: &'static str = Box::leak(format!("made-up-{i}").into_boxed_str());
            refused += usize::from(matches!(check(token).await, Err(CheckError::TooMany)));
        }
        assert!(refused >= 90, "{refused}");
        assert!(reviews.all.load(Ordering::SeqCst) <= 5 + 10, "{reviews:?}");
    }

    /// For 60 s, eight addresses and the reader's own send a new made-up token every 10 ms
    /// each. A new valid token from another address each second (once the flood has spent its
    /// bursts) is let through, the
    /// reader's token (seen valid before) each time its verdict has expired, and the made-up
    /// tokens cost at most the total for unknown tokens; a new token from the flooding
    /// address itself is refused, as documented.
    #[tokio::test(start_paused = true)]
    async fn made_up_tokens_lock_out_neither_known_callers_nor_other_addresses() {
        use crate::explain::budget::{UNKNOWN_BURST, UNKNOWN_QPS};
        let reviews = Arc::new(Reviews::default());
        let client = client(reviews.clone());
        let guard = Guard::default();
        let rb = BindingKey::rb("ns", "b");
        let check = |token: String, source: Source| {
            let (guard, client, rb) = (&guard, &client, &rb);
            async move { guard.check(client, &token, source, rb).await }
        };
        let reader = from(1);
        assert_eq!(
            check("good".into(), reader).await.unwrap(),
            Verdict::Allowed
        );
        let (mut n, mut fresh_from_reader) = (0, Vec::new());
        for tick in 0..6000 {
            for last in 1..10 {
                n += 1;
                let _ = check(format!("made-up-{n}"), from(last)).await;
            }
            // After the flood's first bursts (9 x 5 reviews, more than the total's 40).
            if tick >= 200 && tick % 100 == 50 {
                let elsewhere = from(100 + (tick / 100) as u8);
                let fresh = check(format!("good-{tick}"), elsewhere).await;
                assert_eq!(fresh.unwrap(), Verdict::Allowed, "tick {tick}");
                fresh_from_reader.push(check(format!("good-r{tick}"), reader).await);
            }
            if tick % 1100 == 1050 {
                let again = check("good".into(), reader).await;
                assert_eq!(again.unwrap(), Verdict::Allowed, "tick {tick}");
            }
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        let made_up = reviews.made_up.load(Ordering::SeqCst);
        assert!(
            made_up as f64 <= UNKNOWN_BURST + UNKNOWN_QPS * 60.0,
            "{made_up}"
        );
        // Nine addresses at their share: 9 x (5 + 0.5 x 60) at most, and they got most of it.
        assert!(made_up >= 9 * 25, "{made_up}");
        let let_through = fresh_from_reader.iter().filter(|r| r.is_ok()).count();
        assert_eq!(let_through, 0, "{fresh_from_reader:?}");
    }
}
