//! Watches as the daemons consume them: a backoff that comes back quickly after an API server
//! restart, and a driver that turns a watcher stream into upserts and removals.

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt as _;
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch as tokio_watch;

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
