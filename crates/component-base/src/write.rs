//! The writes a daemon makes to its own objects (a scheduler's or descheduler's bindings): one
//! [`ObjectApi`] trait for the kube client and the in-memory fakes of tests, one [`WriteGate`]
//! that owns a daemon's API and lends it only under a leadership [`Permit`] (as a
//! [`Permitted`] view that checks the permit right before each write), and one bounded merge
//! patch through the kube client ([`merge_patch`]).

use std::fmt::Debug;
use std::sync::Arc;
use std::time::Duration;

use futures::future::Either;
use kube::api::{Api, Patch, PatchParams};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::BoxFuture;
use crate::api::{ApiFailure, bounded};
use crate::fence::Permit;

/// Which endpoint a patch goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// The object (`spec`, `metadata`).
    Main,
    /// Its `status` subresource.
    Status,
}

/// Writes (JSON merge patches, whole replacements) and reads of objects named by `K`, decoded
/// as `O`, over the API. An implementation offers what its daemon sends (and its RBAC grants);
/// the others refuse without a request, so a daemon can never send a verb it does not use.
pub trait ObjectApi<K: ?Sized, O: Send + 'static>: Send + Sync {
    /// Merge-patch the object (or its status); the object the server stored.
    fn patch<'a>(
        &'a self,
        _key: &'a K,
        _target: Target,
        _patch: Value,
    ) -> BoxFuture<'a, Result<O, ApiFailure>> {
        unsupported("patch")
    }

    /// Replace the object (PUT), guarded by the `metadata.resourceVersion` it carries; the
    /// object the server stored.
    fn replace<'a>(&'a self, _key: &'a K, _object: O) -> BoxFuture<'a, Result<O, ApiFailure>> {
        unsupported("replace")
    }

    /// The object as the server has it now.
    fn get<'a>(&'a self, _key: &'a K) -> BoxFuture<'a, Result<O, ApiFailure>> {
        unsupported("get")
    }
}

/// What an API answers for an operation it does not implement: refused, nothing sent.
fn unsupported<'a, O: Send + 'static>(operation: &str) -> BoxFuture<'a, Result<O, ApiFailure>> {
    let failure = ApiFailure {
        code: 405,
        reason: "MethodNotAllowed".into(),
        message: format!("this API does not {operation} objects"),
    };
    Box::pin(std::future::ready(Err(failure)))
}

/// The one door of a daemon's object writes: it owns the daemon's [`ObjectApi`] and offers
/// no way to it but [`WriteGate::under`] a permit. A daemon builds its kube API straight into
/// a gate, so no write of its objects can skip the lease check.
pub struct WriteGate<A: ?Sized>(Arc<A>);

impl<A: ?Sized> WriteGate<A> {
    pub fn new(api: Arc<A>) -> Self {
        Self(api)
    }

    /// The API for one piece of work decided under `permit`.
    pub fn under<'a>(&'a self, permit: &'a Permit) -> Permitted<'a, A> {
        Permitted {
            inner: &self.0,
            permit,
        }
    }
}

/// A daemon's API lent by its [`WriteGate`] for one piece of work decided under `permit`: each
/// write is sent only if the permit still holds right before it goes out (same leadership
/// term, deadline not passed); otherwise it fails with a fenced [`ApiFailure`] and nothing is
/// sent. Reads pass.
pub struct Permitted<'a, W: ?Sized> {
    inner: &'a W,
    permit: &'a Permit,
}

impl<K, O, W> ObjectApi<K, O> for Permitted<'_, W>
where
    K: ?Sized + Sync,
    O: Send + 'static,
    W: ObjectApi<K, O> + ?Sized,
{
    fn patch<'a>(
        &'a self,
        key: &'a K,
        target: Target,
        patch: Value,
    ) -> BoxFuture<'a, Result<O, ApiFailure>> {
        match self.permit.check() {
            Ok(()) => self.inner.patch(key, target, patch),
            Err(fenced) => Box::pin(std::future::ready(Err(fenced.into()))),
        }
    }

    fn replace<'a>(&'a self, key: &'a K, object: O) -> BoxFuture<'a, Result<O, ApiFailure>> {
        match self.permit.check() {
            Ok(()) => self.inner.replace(key, object),
            Err(fenced) => Box::pin(std::future::ready(Err(fenced.into()))),
        }
    }

    fn get<'a>(&'a self, key: &'a K) -> BoxFuture<'a, Result<O, ApiFailure>> {
        self.inner.get(key)
    }
}

/// One JSON merge patch of `name` (or its status) through `api`, bounded by `limit`;
/// `what` describes the request when it times out.
pub async fn merge_patch<T>(
    api: &Api<T>,
    name: &str,
    target: Target,
    patch: &Value,
    what: impl FnOnce() -> String,
    limit: Duration,
) -> Result<T, ApiFailure>
where
    T: Clone + DeserializeOwned + Debug,
{
    let params = PatchParams::default();
    let merge = Patch::Merge(patch);
    let request = match target {
        Target::Main => Either::Left(api.patch(name, &params, &merge)),
        Target::Status => Either::Right(api.patch_status(name, &params, &merge)),
    };
    bounded(what, limit, request).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fence::Fence;
    use std::sync::Mutex;

    /// Records what reached it.
    #[derive(Default)]
    struct Recording(Mutex<Vec<(String, Target)>>);

    impl ObjectApi<str, String> for Recording {
        fn patch<'a>(
            &'a self,
            key: &'a str,
            target: Target,
            _patch: Value,
        ) -> BoxFuture<'a, Result<String, ApiFailure>> {
            self.0.lock().unwrap().push((key.to_string(), target));
            Box::pin(std::future::ready(Ok(key.to_string())))
        }

        fn replace<'a>(
            &'a self,
            key: &'a str,
            object: String,
        ) -> BoxFuture<'a, Result<String, ApiFailure>> {
            self.0.lock().unwrap().push((key.to_string(), Target::Main));
            Box::pin(std::future::ready(Ok(object)))
        }

        fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<String, ApiFailure>> {
            Box::pin(std::future::ready(Ok(key.to_string())))
        }
    }

    /// An API that does not implement an operation refuses it, as a failure no caller
    /// retries.
    #[tokio::test]
    async fn operations_an_api_lacks_are_refused() {
        struct ReadsNothing;
        impl ObjectApi<str, String> for ReadsNothing {}
        let failures = [
            ReadsNothing.patch("a", Target::Main, Value::Null).await,
            ReadsNothing.replace("a", String::new()).await,
            ReadsNothing.get("a").await,
        ];
        for failure in failures {
            let failure = failure.unwrap_err();
            assert_eq!(failure.code, 405, "{failure:?}");
            assert!(!failure.is_transient() && !failure.is_fenced());
        }
    }

    /// A patch or replacement under a permit of the current term is sent; once the term ends
    /// (leadership lost), the same view sends nothing and answers with a fenced failure,
    /// while reads still pass.
    #[tokio::test]
    async fn patches_go_out_only_while_the_permit_holds() {
        let fence = Fence::closed();
        fence.renewed(fence.now(), Duration::from_secs(60));
        let permit = fence.permit().expect("open fence gives a permit");
        let inner = Arc::new(Recording::default());
        let gate = WriteGate::new(inner.clone());
        let api = gate.under(&permit);
        assert_eq!(
            api.patch("a", Target::Status, Value::Null).await,
            Ok("a".to_string())
        );
        assert_eq!(
            api.replace("r", "whole".to_string()).await,
            Ok("whole".to_string())
        );
        fence.close();
        let refused = api.patch("b", Target::Main, Value::Null).await;
        assert!(refused.is_err_and(|e| e.is_fenced()));
        let refused = api.replace("d", "whole".to_string()).await;
        assert!(refused.is_err_and(|e| e.is_fenced()));
        assert_eq!(api.get("c").await, Ok("c".to_string()));
        assert_eq!(
            *inner.0.lock().unwrap(),
            vec![
                ("a".to_string(), Target::Status),
                ("r".to_string(), Target::Main)
            ]
        );
    }
}
