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
