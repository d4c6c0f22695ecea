//! core/v1 Events, recorded as client-go's recorder records them.
//!
//! A small version of client-go's recorder: events are queued (1000 at most, dropped when
//! full); identical events (same object, type, reason, message) within 10 minutes are
//! aggregated into one object whose `count` grows; a token bucket per object and event type
//! (burst 25, one token per 5 minutes) drops floods, as client-go's spam filter.
//!
//! client-go writes with one goroutine, which keeps up with the reference's one binding at a
//! time; with concurrent cycles that single writer would fall behind and the queue would drop
//! events. Events are therefore written by [`WRITERS`] tasks, each owning the objects that hash
//! to it, so that one object's events (and its aggregation and spam state) stay in order.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::mpsc;
use tokio::time::Instant;

const QUEUE: usize = 1000;
/// Writer tasks; each has `QUEUE / WRITERS` places.
pub const WRITERS: usize = 8;
const AGGREGATE_WINDOW: Duration = Duration::from_secs(600);
const SPAM_BURST: f64 = 25.0;
const SPAM_REFILL_PER_SEC: f64 = 1.0 / 300.0;
/// client-go's `maxTriesPerEvent`: an Event write that finds no API server is tried again.
const EVENT_TRIES: u32 = 12;
/// First pause between tries, doubled up to [`EVENT_RETRY_MAX`] (client-go sleeps 10 s).
const EVENT_RETRY_FIRST: Duration = Duration::from_millis(500);
const EVENT_RETRY_MAX: Duration = Duration::from_secs(10);
/// Longest wait for the answer to one Event write.
const EVENT_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// One event to write.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingEvent {
    pub namespace: String,
    pub involved: ObjectReference,
    pub warning: bool,
    pub reason: String,
    pub message: String,
}

impl PendingEvent {
    /// An event on `involved`, in its namespace (`default` for cluster-scoped objects, where
    /// client-go puts theirs).
    pub fn on(involved: ObjectReference, warning: bool, reason: &str, message: &str) -> Self {
        Self {
            namespace: involved
                .namespace
                .clone()
                .unwrap_or_else(|| "default".to_string()),
            involved,
            warning,
            reason: reason.to_string(),
            message: message.to_string(),
        }
    }
}

/// Handle to the recorder; cheap to clone.
#[derive(Clone, Debug)]
pub struct Recorder {
    writers: Arc<[mpsc::Sender<PendingEvent>]>,
}

/// The writer of an event: by its involved object, so that one object's events are written
/// in order by one task.
fn writer_of(e: &PendingEvent, writers: usize) -> usize {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    let o = &e.involved;
    (&e.namespace, &o.kind, &o.name, &o.uid).hash(&mut h);
    (h.finish() % writers.max(1) as u64) as usize
}

impl Recorder {
    /// Queue `e`; dropped (with a warning) when its writer's queue is full, as client-go
    /// drops events it cannot keep up with.
    pub fn send(&self, e: PendingEvent) {
        let w = writer_of(&e, self.writers.len());
        let reason = e.reason.clone();
        if self.writers[w].try_send(e).is_err() {
            tracing::warn!("event queue full, dropping event {reason}");
        }
    }
}

#[derive(Debug)]
struct Seen {
    name: String,
    count: i32,
    at: Instant,
}

type SeenKey = (String, String, String, String, bool, String, String);

fn seen_key(e: &PendingEvent) -> SeenKey {
    let o = &e.involved;
    (
        e.namespace.clone(),
        o.kind.clone().unwrap_or_default(),
        o.name.clone().unwrap_or_default(),
        o.uid.clone().unwrap_or_default(),
        e.warning,
        e.reason.clone(),
        e.message.clone(),
    )
}

/// Start the recorder writing with `client`; `component` is the events' `source.component`.
pub fn start(client: kube::Client, component: String) -> Recorder {
    let writers = (0..WRITERS)
        .map(|_| {
            let (tx, rx) = mpsc::channel::<PendingEvent>(QUEUE / WRITERS);
            tokio::spawn(write_events(client.clone(), component.clone(), rx));
            tx
        })
        .collect();
    Recorder { writers }
}

/// Spam-filter key: client-go's (source, object, event type).
type BucketKey = (String, String, String, String, String, bool);

/// One writer task: its objects' events, in order.
async fn write_events(
    client: kube::Client,
    component: String,
    mut rx: mpsc::Receiver<PendingEvent>,
) {
    let mut seen: HashMap<SeenKey, Seen> = HashMap::new();
    let mut buckets: HashMap<BucketKey, (f64, Instant)> = HashMap::new();
    while let Some(e) = rx.recv().await {
        let now = Instant::now();
        let o = &e.involved;
        let bucket_key = (
            o.kind.clone().unwrap_or_default(),
            e.namespace.clone(),
            o.name.clone().unwrap_or_default(),
            o.uid.clone().unwrap_or_default(),
            o.api_version.clone().unwrap_or_default(),
            e.warning,
        );
        let (tokens, last) = buckets.entry(bucket_key).or_insert((SPAM_BURST, now));
        *tokens = (*tokens + now.duration_since(*last).as_secs_f64() * SPAM_REFILL_PER_SEC)
            .min(SPAM_BURST);
        *last = now;
        if *tokens < 1.0 {
            continue;
        }
        *tokens -= 1.0;
        seen.retain(|_, s| now.duration_since(s.at) < AGGREGATE_WINDOW);
        let api: Api<Event> = Api::namespaced(client.clone(), &e.namespace);
        let ts = Time(Timestamp::now());
        let key = seen_key(&e);
        if let Some(s) = seen.get_mut(&key) {
            let patch = serde_json::json!({"count": s.count + 1, "lastTimestamp": ts});
            let sent = tokio::time::timeout(
                EVENT_REQUEST_TIMEOUT,
                api.patch(&s.name, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await;
            if matches!(sent, Ok(Ok(_))) {
                s.count += 1;
                s.at = now;
                continue;
            }
        }
        let name = format!(
            "{}.{:x}",
            o.name.clone().unwrap_or_default(),
            Timestamp::now().as_nanosecond()
        );
        let event = Event {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(e.namespace.clone()),
                ..Default::default()
            },
            involved_object: e.involved.clone(),
            reason: Some(e.reason.clone()),
            message: Some(e.message.clone()),
            first_timestamp: Some(ts.clone()),
            last_timestamp: Some(ts.clone()),
            count: Some(1),
            type_: Some(if e.warning { "Warning" } else { "Normal" }.to_string()),
            source: Some(EventSource {
                component: Some(component.clone()),
                host: None,
            }),
            reporting_component: Some(component.clone()),
            reporting_instance: Some(String::new()),
            ..Default::default()
        };
        match create_event(&api, &event).await {
            Ok(()) => {
                seen.insert(
                    key,
                    Seen {
                        name,
                        count: 1,
                        at: now,
                    },
                );
            }
            Err(err) => tracing::warn!(reason = %e.reason, "Server rejected event: {err}"),
        }
    }
}

/// Create `event`, trying again while the API server does not answer (a lost response, a
/// restart, a hang), as client-go's recorder does. The name is fixed before the first try, so a
/// try whose response was lost makes the next one find the Event already there: it is written
/// once. The writer task owns only Events; a binding's writes never wait for this.
async fn create_event(api: &Api<Event>, event: &Event) -> Result<(), kube::Error> {
    let mut pause = EVENT_RETRY_FIRST;
    let mut tries = 0;
    loop {
        tries += 1;
        let sent = tokio::time::timeout(
            EVENT_REQUEST_TIMEOUT,
            api.create(&PostParams::default(), event),
        )
        .await;
        let err = match sent {
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code == 409 && tries > 1 => return Ok(()),
            Ok(Err(kube::Error::Api(s))) if s.code < 500 && s.code != 429 => {
                return Err(kube::Error::Api(s));
            }
            Ok(Err(e)) => e,
            Err(_) => kube::Error::Service(
                format!("no answer within {}s", EVENT_REQUEST_TIMEOUT.as_secs()).into(),
            ),
        };
        if tries >= EVENT_TRIES {
            return Err(err);
        }
        tracing::debug!("writing an Event failed (try {tries} of {EVENT_TRIES}): {err}");
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(EVENT_RETRY_MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One object's events always go to the same writer (its aggregation and spam state live
    /// there, and its events stay in order); different objects spread over the writers.
    #[test]
    fn an_objects_events_share_one_writer() {
        let ev = |name: &str, reason: &str| PendingEvent {
            namespace: "ns".into(),
            involved: ObjectReference {
                kind: Some("Deployment".into()),
                name: Some(name.into()),
                ..Default::default()
            },
            warning: false,
            reason: reason.into(),
            message: "m".into(),
        };
        assert_eq!(
            writer_of(&ev("d1", "A"), WRITERS),
            writer_of(&ev("d1", "B"), WRITERS)
        );
        let used: std::collections::BTreeSet<usize> = (0..200)
            .map(|i| writer_of(&ev(&format!("d{i}"), "A"), WRITERS))
            .collect();
        assert!(used.iter().all(|w| *w < WRITERS));
        assert_eq!(used.len(), WRITERS, "200 objects use every writer");
    }
}
