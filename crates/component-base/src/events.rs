//! core/v1 Events, recorded as client-go's recorder records them.
//!
//! A small version of client-go's recorder: events are queued; identical events (same object,
//! type, reason, message) within 10 minutes are aggregated into one object whose `count` grows;
//! a token bucket per object and event type (burst 25, one token per 5 minutes) drops floods,
//! as client-go's spam filter.
//!
//! client-go writes with one goroutine, which keeps up with the reference's one binding at a
//! time; with concurrent cycles that single writer would fall behind and the queue would drop
//! events. Events are therefore written by [`WRITERS`] tasks, each owning the objects that hash
//! to it, so that one object's events (and its aggregation and spam state) stay in order.
//!
//! Nor do the daemons drop events when writes come faster than the API server takes Events: a
//! worker waits for [`EventSink::room`] before it starts on a binding, so no more than
//! [`QUEUE`] events (client-go's queue length) wait to be written and the binding writes, the
//! ones that carry state, go first while their events follow. Only a producer that does not
//! wait can fill a writer's channel ([`QUEUE`] places each); past that an event is dropped with
//! a warning, as client-go drops them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;

use crate::BoxFuture;
use crate::lru::Lru;
use crate::ratelimit::TokenBucket;

/// Events waiting to be written that make [`EventSink::room`] wait: client-go's queue length.
pub const QUEUE: usize = 1000;
/// Writer tasks; each has [`QUEUE`] places, so a waiting producer never finds one full.
pub const WRITERS: usize = 8;
const AGGREGATE_WINDOW: Duration = Duration::from_secs(600);
/// Objects remembered by the spam filter, and identical events by the aggregation, over all
/// writers: client-go's `maxLruCacheEntries`.
pub const LRU_ENTRIES: usize = 4096;
/// Each writer's share of [`LRU_ENTRIES`]: objects spread evenly over the writers.
const WRITER_LRU_ENTRIES: usize = LRU_ENTRIES / WRITERS;
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

/// A reference to an object, as client-go builds the `involvedObject` of an Event: each
/// empty part left out, as Go's JSON omits empty strings, so that the Event the API server
/// stores is the reference's to the byte.
pub fn reference(
    api_version: &str,
    kind: &str,
    namespace: &str,
    name: &str,
    uid: &str,
    resource_version: &str,
) -> ObjectReference {
    let part = |s: &str| (!s.is_empty()).then(|| s.to_string());
    ObjectReference {
        api_version: part(api_version),
        kind: part(kind),
        namespace: part(namespace),
        name: part(name),
        uid: part(uid),
        resource_version: part(resource_version),
        ..Default::default()
    }
}

/// A reference to a stored object of this type, as client-go's `ref.GetReference` makes one
/// (name, namespace, uid and resourceVersion from its metadata).
pub fn reference_to(api_version: &str, kind: &str, meta: &ObjectMeta) -> ObjectReference {
    let field = |f: &Option<String>| f.as_deref().unwrap_or_default().to_string();
    reference(
        api_version,
        kind,
        &field(&meta.namespace),
        &field(&meta.name),
        &field(&meta.uid),
        &field(&meta.resource_version),
    )
}

/// The two objects the reference's scheduler and descheduler record a binding's event on:
/// the binding (of kind `kind`) and its resource template, whose reference is built from
/// `spec.resource` as it stands (no resourceVersion).
pub fn binding_references(
    kind: &str,
    meta: &ObjectMeta,
    template: &karmada_api::work::ObjectReference,
) -> [ObjectReference; 2] {
    let t = template;
    [
        reference_to(karmada_api::work::API_VERSION, kind, meta),
        reference(&t.api_version, &t.kind, &t.namespace, &t.name, &t.uid, ""),
    ]
}

/// Handle to the recorder; cheap to clone.
#[derive(Clone, Debug)]
pub struct Recorder {
    writers: Arc<[mpsc::Sender<PendingEvent>]>,
    backlog: Arc<Backlog>,
}

/// Events sent and not yet written, and a wake-up each time one is.
#[derive(Debug, Default)]
struct Backlog {
    pending: AtomicUsize,
    drained: Notify,
}

impl Backlog {
    /// Events waiting to be written.
    fn pending(&self) -> usize {
        self.pending.load(Ordering::Acquire)
    }

    fn add(&self) {
        self.pending.fetch_add(1, Ordering::AcqRel);
    }

    /// One event left the queue (written, refused or dropped).
    fn done(&self) {
        self.pending.fetch_sub(1, Ordering::AcqRel);
        self.drained.notify_waiters();
    }

    /// Until fewer than `limit` events wait.
    async fn below(&self, limit: usize) {
        loop {
            let drained = self.drained.notified();
            tokio::pin!(drained);
            // Registered before the check, so a write finishing in between still wakes us.
            drained.as_mut().enable();
            if self.pending() < limit {
                return;
            }
            drained.await;
        }
    }
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
        self.backlog.add();
        if self.writers[w].try_send(e).is_err() {
            self.backlog.done();
            tracing::warn!("event queue full, dropping event {reason}");
        }
    }

    /// Events sent and not yet written.
    pub fn pending(&self) -> usize {
        self.backlog.pending()
    }
}

/// Where a component's Events go: the API server ([`Recorder`]) or memory ([`MemoryEvents`]).
/// The one event sink of both daemons.
pub trait EventSink: Send + Sync {
    fn record(&self, event: PendingEvent);

    /// Resolves once the sink takes more events without dropping any: a worker awaits it
    /// before it starts on an object, so that events are written, late if need be, instead
    /// of dropped when the API server falls behind.
    fn room(&self) -> BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

impl EventSink for Recorder {
    fn record(&self, event: PendingEvent) {
        self.send(event);
    }

    fn room(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.backlog.below(QUEUE))
    }
}

/// Events kept in memory, in the order recorded (tests, and runs that write nothing).
#[derive(Clone, Debug, Default)]
pub struct MemoryEvents(pub Arc<std::sync::Mutex<Vec<PendingEvent>>>);

impl EventSink for MemoryEvents {
    fn record(&self, event: PendingEvent) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).push(event);
    }
}

/// The Event written for an identical earlier event, which a repeat within the window
/// patches instead of creating another.
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
    let backlog = Arc::new(Backlog::default());
    let writers = (0..WRITERS)
        .map(|_| {
            let (tx, rx) = mpsc::channel::<PendingEvent>(QUEUE);
            tokio::spawn(write_events(
                client.clone(),
                component.clone(),
                rx,
                backlog.clone(),
            ));
            tx
        })
        .collect();
    Recorder { writers, backlog }
}

/// Spam-filter key: client-go's (source, object, event type).
type BucketKey = (String, String, String, String, String, bool);

fn bucket_key(e: &PendingEvent) -> BucketKey {
    let o = &e.involved;
    (
        o.kind.clone().unwrap_or_default(),
        e.namespace.clone(),
        o.name.clone().unwrap_or_default(),
        o.uid.clone().unwrap_or_default(),
        o.api_version.clone().unwrap_or_default(),
        e.warning,
    )
}

/// One writer's memory of the objects it wrote events for: the spam filter's token buckets
/// and the Events that repeats are aggregated into. Both are keyed by involved object, so a
/// daemon that sees bindings come and go would keep every one it ever saw: each is an LRU of
/// [`WRITER_LRU_ENTRIES`] (client-go bounds the same caches with LRUs of
/// [`LRU_ENTRIES`]), and entries that no longer change anything are dropped early: an
/// aggregation past its window, a bucket refilled to its burst (the same as no bucket).
#[derive(Debug)]
struct Correlator {
    seen: Lru<SeenKey, Seen>,
    /// The spam filter's buckets, one per object (client-go's `spamRecord`).
    buckets: Lru<BucketKey, TokenBucket>,
}

impl Correlator {
    fn new(entries: usize) -> Self {
        Self {
            seen: Lru::new(entries),
            buckets: Lru::new(entries),
        }
    }

    /// Whether the spam filter lets `e` through at `now`, taking one of its object's tokens.
    fn admit(&mut self, e: &PendingEvent, now: Instant) -> bool {
        let key = bucket_key(e);
        if self.buckets.peek(&key).is_none() {
            // Buckets are used in time order, so the oldest are the first to be full again.
            self.buckets.expire_oldest(|b| b.is_full_at(now));
        }
        let mut bucket = self
            .buckets
            .remove(&key)
            .unwrap_or_else(|| TokenBucket::new_at(SPAM_REFILL_PER_SEC, SPAM_BURST, now));
        let admitted = bucket.allow_at(now);
        self.buckets.insert(key, bucket);
        admitted
    }

    /// The Event an identical event within the window was written as: its name and count.
    fn aggregated(&mut self, key: &SeenKey, now: Instant) -> Option<(String, i32)> {
        // Entries are used only when written, so their use order is their time order.
        self.seen
            .expire_oldest(|s| now.saturating_duration_since(s.at) >= AGGREGATE_WINDOW);
        self.seen.peek(key).map(|s| (s.name.clone(), s.count))
    }

    /// The aggregated Event of `key` was patched to `count` at `now`.
    fn patched(&mut self, key: &SeenKey, count: i32, now: Instant) {
        if let Some(s) = self.seen.get_mut(key) {
            s.count = count;
            s.at = now;
        }
    }

    /// A new Event `name` was created for `key` at `now`.
    fn created(&mut self, key: SeenKey, name: String, now: Instant) {
        self.seen.insert(
            key,
            Seen {
                name,
                count: 1,
                at: now,
            },
        );
    }
}

/// One writer task: its objects' events, in order.
async fn write_events(
    client: kube::Client,
    component: String,
    mut rx: mpsc::Receiver<PendingEvent>,
    backlog: Arc<Backlog>,
) {
    let mut memory = Correlator::new(WRITER_LRU_ENTRIES);
    while let Some(e) = rx.recv().await {
        write_event(&client, &component, &mut memory, e).await;
        backlog.done();
    }
}

/// Writes `e` (or counts it into an identical earlier Event), unless the spam filter drops it.
async fn write_event(
    client: &kube::Client,
    component: &str,
    memory: &mut Correlator,
    e: PendingEvent,
) {
    let now = Instant::now();
    let o = &e.involved;
    if !memory.admit(&e, now) {
        return;
    }
    let api: Api<Event> = Api::namespaced(client.clone(), &e.namespace);
    let ts = Time(Timestamp::now());
    let key = seen_key(&e);
    if let Some((name, count)) = memory.aggregated(&key, now) {
        let patch = serde_json::json!({"count": count + 1, "lastTimestamp": ts});
        let sent = tokio::time::timeout(
            EVENT_REQUEST_TIMEOUT,
            api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch)),
        )
        .await;
        if matches!(sent, Ok(Ok(_))) {
            memory.patched(&key, count + 1, now);
            return;
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
            component: Some(component.to_string()),
            host: None,
        }),
        reporting_component: Some(component.to_string()),
        reporting_instance: Some(String::new()),
        ..Default::default()
    };
    match create_event(&api, &event).await {
        Ok(()) => memory.created(key, name, now),
        // A missing RBAC rule is reported once per interval by the client
        // (`forbidden`), not once per event.
        Err(kube::Error::Api(s)) if s.code == 403 => {
            tracing::debug!(reason = %e.reason, "Server rejected event: {s}")
        }
        // The fence already said so, once per refused request.
        Err(err) if crate::fence::FencedRequest::is_cause_of(&err) => {
            tracing::debug!(reason = %e.reason, "Event not written: {err}")
        }
        Err(err) => tracing::warn!(reason = %e.reason, "Server rejected event: {err}"),
    }
}

/// Create `event`, trying again while the API server does not answer (a lost response, a
/// restart, a hang), as client-go's recorder does; not when the write fence refused it. The
/// name is fixed before the first try, so a try whose response was lost makes the next one find
/// the Event already there: it is written once. The writer task owns only Events: no binding
/// write waits for one.
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
            // The lease lapsed: this term's events are not written, and trying again would
            // only hold the queue (and the workers waiting for room) behind them.
            Ok(Err(e)) if crate::fence::FencedRequest::is_cause_of(&e) => return Err(e),
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

    /// The involved objects serialize as Go's `corev1.ObjectReference` does: a namespaced
    /// binding with all of its metadata, a template without a uid, and a cluster-scoped binding
    /// whose metadata holds empty strings, each empty part omitted from the JSON.
    #[test]
    fn binding_references_omit_empty_parts_as_go_does() {
        let meta = ObjectMeta {
            name: Some("b".into()),
            namespace: Some("ns".into()),
            uid: Some("u1".into()),
            resource_version: Some("7".into()),
            ..Default::default()
        };
        let template = karmada_api::work::ObjectReference {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "ns".into(),
            name: "d".into(),
            resource_version: "99".into(),
            ..Default::default()
        };
        let [binding, on_template] = binding_references("ResourceBinding", &meta, &template);
        assert_eq!(
            serde_json::to_value(&binding).unwrap(),
            serde_json::json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
                "namespace": "ns", "name": "b", "uid": "u1", "resourceVersion": "7"})
        );
        assert_eq!(
            serde_json::to_value(&on_template).unwrap(),
            serde_json::json!({"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "ns", "name": "d"})
        );
        let cluster_scoped = ObjectMeta {
            name: Some("c".into()),
            namespace: Some(String::new()),
            uid: Some(String::new()),
            ..Default::default()
        };
        let [crb, namespace] = binding_references(
            "ClusterResourceBinding",
            &cluster_scoped,
            &karmada_api::work::ObjectReference {
                api_version: "v1".into(),
                kind: "Namespace".into(),
                ..Default::default()
            },
        );
        assert_eq!(
            serde_json::to_value(&crb).unwrap(),
            serde_json::json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": "ClusterResourceBinding", "name": "c"})
        );
        assert_eq!(
            serde_json::to_value(&namespace).unwrap(),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace"})
        );
        assert_eq!(PendingEvent::on(crb, false, "r", "m").namespace, "default");
    }

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

    fn on(name: &str, uid: &str, reason: &str) -> PendingEvent {
        PendingEvent::on(
            ObjectReference {
                api_version: Some("work.karmada.io/v1alpha2".into()),
                kind: Some("ResourceBinding".into()),
                namespace: Some("ns".into()),
                name: Some(name.into()),
                uid: Some(uid.into()),
                ..Default::default()
            },
            false,
            reason,
            "Binding has been scheduled successfully.",
        )
    }

    /// Objects that come and go (a binding scheduled, then deleted) leave at most the LRU's
    /// entries behind, however many there were; the same drive kept every one of them when
    /// both caches were plain maps.
    #[tokio::test(start_paused = true)]
    async fn churned_objects_leave_a_bounded_memory() {
        let mut c = Correlator::new(WRITER_LRU_ENTRIES);
        for i in 0..10_000 {
            let e = on(
                &format!("b{i}"),
                &format!("uid-{i}"),
                "ScheduleBindingSucceed",
            );
            let now = Instant::now();
            assert!(c.admit(&e, now), "a new object has its whole burst");
            let key = seen_key(&e);
            assert_eq!(c.aggregated(&key, now), None);
            c.created(key, format!("b{i}.1"), now);
            tokio::time::advance(Duration::from_millis(10)).await;
        }
        assert_eq!(c.buckets.len(), WRITER_LRU_ENTRIES);
        assert_eq!(c.seen.len(), WRITER_LRU_ENTRIES);
        assert_eq!(WRITER_LRU_ENTRIES * WRITERS, LRU_ENTRIES);
    }

    /// An aggregation is forgotten once its window has passed, and a bucket once it has
    /// refilled, without waiting for the LRU to fill up.
    #[tokio::test(start_paused = true)]
    async fn entries_past_their_window_are_dropped() {
        let mut c = Correlator::new(WRITER_LRU_ENTRIES);
        let first = on("a", "u-a", "R");
        let now = Instant::now();
        assert!(c.admit(&first, now));
        c.created(seen_key(&first), "a.1".into(), now);
        // A repeat within the window is aggregated into the same Event.
        tokio::time::advance(Duration::from_secs(60)).await;
        let now = Instant::now();
        assert!(c.admit(&first, now));
        assert_eq!(
            c.aggregated(&seen_key(&first), now),
            Some(("a.1".into(), 1))
        );
        c.patched(&seen_key(&first), 2, now);
        // Ten minutes after its last write, it is new again and no longer held.
        tokio::time::advance(AGGREGATE_WINDOW).await;
        let now = Instant::now();
        let other = on("b", "u-b", "R");
        assert!(c.admit(&other, now));
        assert_eq!(c.aggregated(&seen_key(&other), now), None);
        assert_eq!(c.seen.len(), 0);
        // `a` spent two tokens 10 minutes ago: refilled, so its bucket went when `b` came.
        assert_eq!(c.buckets.len(), 1);
        assert!(c.buckets.peek(&bucket_key(&other)).is_some());
    }

    /// The spam filter is client-go's: a burst of 25 per object, then one every 5 minutes;
    /// forgetting a refilled bucket changes nothing.
    #[tokio::test(start_paused = true)]
    async fn the_spam_filter_allows_a_burst_then_one_per_five_minutes() {
        let mut c = Correlator::new(WRITER_LRU_ENTRIES);
        let e = on("a", "u-a", "R");
        let admitted = (0..30).filter(|_| c.admit(&e, Instant::now())).count();
        assert_eq!(admitted, 25);
        tokio::time::advance(Duration::from_secs(299)).await;
        assert!(!c.admit(&e, Instant::now()));
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(c.admit(&e, Instant::now()));
        assert!(!c.admit(&e, Instant::now()));
        // Another object is not limited by this one.
        assert!(c.admit(&on("b", "u-b", "R"), Instant::now()));
    }
}
