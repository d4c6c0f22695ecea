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

/// Applies `value` (`testenv::apply_value`: server-side apply, then the status as a merge
/// patch; both idempotent), trying again after a failure. Creating thousands of large bindings
/// on one API server now and then meets a pooled connection the server has just closed
/// (`connection closed before message completed`), which failed a whole run of an hour.
pub async fn apply_retrying(
    client: &kube::Client,
    value: &serde_json::Value,
) -> anyhow::Result<()> {
    let mut tries = 0;
    loop {
        tries += 1;
        match testenv::apply_value(client, value).await {
            Ok(_) => return Ok(()),
            Err(e) if tries < APPLY_TRIES => {
                eprintln!("bench: try {tries} of {APPLY_TRIES} failed, trying again: {e:#}");
                tokio::time::sleep(std::time::Duration::from_millis(200 << tries)).await;
            }
            Err(e) => return Err(e.context(format!("after {tries} tries"))),
        }
    }
}
