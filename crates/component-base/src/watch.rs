//! Watches as the daemons consume them: a backoff that comes back quickly after an API server
//! restart, and a driver that turns a watcher stream into upserts and removals.

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;
use tokio::sync::watch as tokio_watch;

/// A watch ended before its first complete list.
#[derive(Debug, thiserror::Error)]
#[error("a watch ended before syncing")]
pub struct WatchEnded;

/// `namespace/name` of an object (`/name` for cluster-scoped ones).
pub fn key_of(o: &DynamicObject) -> String {
    format!(
        "{}/{}",
        o.metadata.namespace.as_deref().unwrap_or_default(),
        o.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Watches every object of `resource` (all namespaces) with [`WatchBackoff`], driven by
/// [`drive`]: `upsert` gets each object as JSON (decoded by the caller, so that one malformed
/// object costs only itself), `remove` its [`key_of`]. Returns the task and a receiver that
/// turns `true` after the first complete list.
pub fn watch_all(
    client: kube::Client,
    resource: &ApiResource,
    what: &'static str,
    mut upsert: impl FnMut(Value) + Send + 'static,
    remove: impl FnMut(&str) + Send + 'static,
) -> (tokio::task::JoinHandle<()>, tokio_watch::Receiver<bool>) {
    let api: Api<DynamicObject> = Api::all_with(client, resource);
    let (tx, rx) = tokio_watch::channel(false);
    let task = tokio::spawn(async move {
        let stream =
            watcher::watcher(api, watcher::Config::default()).backoff(WatchBackoff::default());
        drive(
            stream,
            what,
            key_of,
            move |o: DynamicObject| match serde_json::to_value(o) {
                Ok(raw) => upsert(raw),
                Err(e) => tracing::error!("encoding a watched object of {what}: {e}"),
            },
            remove,
            tx,
        )
        .await;
    });
    (task, rx)
}

/// Waits until every watch has listed completely once.
pub async fn all_synced(synced: Vec<tokio_watch::Receiver<bool>>) -> Result<(), WatchEnded> {
    for mut rx in synced {
        rx.wait_for(|v| *v).await.map_err(|_| WatchEnded)?;
    }
    Ok(())
}

/// Backoff of the watches after an error: 800 ms doubling to at most 5 s, reset by the next
/// event. client-go's reflector (and kube's default) grow to 30 s, so after a few API server
/// restarts in a row a watch could stay away for half a minute after the server is back, and
/// bindings created meanwhile would wait for it.
#[derive(Debug)]
pub struct WatchBackoff {
    next: Duration,
}

impl WatchBackoff {
    const FIRST: Duration = Duration::from_millis(800);
    const MAX: Duration = Duration::from_secs(5);
}

impl Default for WatchBackoff {
    fn default() -> Self {
        Self { next: Self::FIRST }
    }
}

impl Iterator for WatchBackoff {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        let d = self.next;
        self.next = (d * 2).min(Self::MAX);
        Some(d)
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.next = Self::FIRST;
    }
}

/// Turns a watcher stream into upserts and removals, diffing every relist against what the
/// consumer holds. Marks `synced` after the first complete list.
pub async fn drive<K, FU, FR>(
    stream: impl futures::Stream<Item = Result<Event<K>, watcher::Error>>,
    what: &str,
    key_of: impl Fn(&K) -> String,
    mut upsert: FU,
    mut remove: FR,
    synced: tokio_watch::Sender<bool>,
) where
    FU: FnMut(K),
    FR: FnMut(&str),
{
    futures::pin_mut!(stream);
    let mut buffer: Vec<K> = Vec::new();
    let mut known: HashSet<String> = HashSet::new();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(Event::Init) => buffer.clear(),
            Ok(Event::InitApply(o)) => buffer.push(o),
            Ok(Event::InitDone) => {
                let listed: HashSet<String> = buffer.iter().map(&key_of).collect();
                for gone in known.difference(&listed) {
                    remove(gone);
                }
                known = listed;
                for o in buffer.drain(..) {
                    upsert(o);
                }
                let _ = synced.send(true);
            }
            Ok(Event::Apply(o)) => {
                known.insert(key_of(&o));
                upsert(o);
            }
            Ok(Event::Delete(o)) => {
                let k = key_of(&o);
                known.remove(&k);
                remove(&k);
            }
            Err(e) => tracing::warn!("watch of {what} failed, retrying with backoff: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn watches_come_back_within_five_seconds() {
        use kube::runtime::utils::Backoff as _;
        let mut b = WatchBackoff::default();
        let first: Vec<u64> = (&mut b).take(6).map(|d| d.as_millis() as u64).collect();
        assert_eq!(first, [800, 1600, 3200, 5000, 5000, 5000]);
        b.reset();
        assert_eq!(b.next(), Some(Duration::from_millis(800)));
    }

    #[tokio::test]
    async fn relists_are_diffed_against_what_is_known() {
        use std::sync::Mutex;
        let events: Vec<Result<Event<(String, u32)>, watcher::Error>> = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(("a".into(), 1))),
            Ok(Event::InitApply(("b".into(), 1))),
            Ok(Event::InitDone),
            Ok(Event::Apply(("c".into(), 1))),
            Ok(Event::Delete(("a".into(), 1))),
            // Disconnect, 410, relist: b changed, c deleted meanwhile, d added.
            Ok(Event::Init),
            Ok(Event::InitApply(("b".into(), 2))),
            Ok(Event::InitApply(("d".into(), 1))),
            Ok(Event::InitDone),
        ];
        let log = Mutex::new(Vec::new());
        let (tx, rx) = tokio_watch::channel(false);
        drive(
            futures::stream::iter(events),
            "test",
            |o: &(String, u32)| o.0.clone(),
            |o| log.lock().unwrap().push(format!("upsert {}@{}", o.0, o.1)),
            |k| log.lock().unwrap().push(format!("remove {k}")),
            tx,
        )
        .await;
        assert!(*rx.borrow());
        assert_eq!(
            log.into_inner().unwrap(),
            [
                "upsert a@1",
                "upsert b@1",
                "upsert c@1",
                "remove a",
                "remove c",
                "upsert b@2",
                "upsert d@1"
            ]
        );
    }
}
