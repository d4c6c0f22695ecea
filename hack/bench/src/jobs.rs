//! Running many requests with a bounded number in flight.

use futures::StreamExt as _;

/// Runs `jobs` with `concurrency` of them in flight; the first error, once all have ended.
pub async fn in_flight<F>(jobs: impl Iterator<Item = F>, concurrency: usize) -> anyhow::Result<()>
where
    F: std::future::Future<Output = anyhow::Result<()>>,
{
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(jobs)
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    results.into_iter().collect()
}

/// Tries an object's apply this many times before the bench gives up.
const APPLY_TRIES: u32 = 5;

/// Whether a failed request may succeed when sent again: no answer (a closed or reset
/// connection), 429 or 5xx. Any other answer of the API server (an invalid object, a missing
/// kind) would only be given again.
fn transient(e: &anyhow::Error) -> bool {
    e.chain().all(|c| match c.downcast_ref::<kube::Error>() {
        Some(kube::Error::Api(a)) => a.code == 429 || a.code >= 500,
        _ => true,
    })
}

/// Applies `value` (`testenv::apply_value`: server-side apply, then the status as a merge
/// patch; both idempotent), trying again after a transient failure. Creating thousands of
/// large bindings on one API server now and then meets a pooled connection the server has
/// just closed (`connection closed before message completed`), which failed a whole run of
/// an hour.
pub async fn apply_retrying(
    client: &kube::Client,
    value: &serde_json::Value,
) -> anyhow::Result<()> {
    retrying(|| async { testenv::apply_value(client, value).await.map(|_| ()) }).await
}

/// Applies `values` ([`apply_retrying`]), `concurrency` at a time.
pub async fn apply_all(
    client: &kube::Client,
    values: Vec<serde_json::Value>,
    concurrency: usize,
) -> anyhow::Result<()> {
    let jobs = values
        .into_iter()
        .map(|v| async move { apply_retrying(client, &v).await });
    in_flight(jobs, concurrency).await
}

/// Runs the idempotent request `send` until it succeeds, fails for good or has been tried
/// [`APPLY_TRIES`] times. Between the timed phases of a run the API server is still busy
/// with what a phase left behind (etcd answered "request timed out" to a deletion after the
/// 1,000-cluster descheduler pass and lost a 25-minute run).
pub async fn retrying<F, Fut, T>(mut send: F) -> anyhow::Result<T>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<T>>,
{
    let mut tries = 0;
    loop {
        tries += 1;
        match send().await {
            Ok(t) => return Ok(t),
            Err(e) if tries < APPLY_TRIES && transient(&e) => {
                eprintln!("bench: try {tries} of {APPLY_TRIES} failed, trying again: {e:#}");
                tokio::time::sleep(std::time::Duration::from_millis(200 << tries)).await;
            }
            Err(e) => return Err(e.context(format!("after {tries} tries"))),
        }
    }
}

/// A `Normal` Event on `involved` as a bare client of the bench writes it (the API server
/// names it from `generate_name`): what a component's recorder would create.
pub fn normal_event(
    involved: k8s_openapi::api::core::v1::ObjectReference,
    generate_name: &str,
    reason: &str,
    message: &str,
    component: &str,
) -> k8s_openapi::api::core::v1::Event {
    use k8s_openapi::api::core::v1::{Event, EventSource};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    Event {
        metadata: ObjectMeta {
            generate_name: Some(generate_name.to_string()),
            namespace: Some(
                involved
                    .namespace
                    .clone()
                    .unwrap_or_else(|| "default".to_string()),
            ),
            ..Default::default()
        },
        involved_object: involved,
        reason: Some(reason.to_string()),
        message: Some(message.to_string()),
        type_: Some("Normal".to_string()),
        count: Some(1),
        first_timestamp: Some(now.clone()),
        last_timestamp: Some(now),
        source: Some(EventSource {
            component: Some(component.to_string()),
            host: None,
        }),
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::transient;

    fn answered(code: u16) -> anyhow::Error {
        let status = kube::core::Status {
            code,
            ..Default::default()
        };
        anyhow::Error::new(kube::Error::Api(Box::new(status))).context("applying Binding b")
    }

    #[test]
    fn only_lost_connections_429_and_5xx_are_tried_again() {
        assert!(transient(&anyhow::anyhow!(
            "connection closed before message completed"
        )));
        assert!(transient(&answered(429)));
        assert!(transient(&answered(503)));
        assert!(!transient(&answered(422)));
        assert!(!transient(&answered(404)));
    }
}
