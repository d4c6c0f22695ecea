//! The scheduling queue, shared by several workers with per-key exclusivity.
//!
//! Two modes, as the reference:
//! - **legacy** (default): FIFO with deduplication; a failed key comes back after
//!   `max(base·2^failures capped at max, token-bucket delay)` from the `--rate-limiter-*` flags;
//!   success resets its failure count.
//! - **priority** (gate `PriorityBasedScheduling`, on by default since v1.19): highest
//!   `spec.schedulePriority.priority` first, then oldest; failures wait in a backoff queue (1 s
//!   doubling to 10 s, counted from the last activation); unschedulable bindings are parked
//!   until an event moves them or 5 minutes pass. As the reference, the two are flushed on
//!   periodic ticks (every 1 s and every 30 s from the queue's start), and each flushed batch
//!   enters the active queue sorted by priority, then by age (v1.19's `sortBindingsByPriority`;
//!   v1.18.2 pushed it in backoff-expiry or map order). The `--rate-limiter-*` flags only act
//!   on the legacy queue.
//!
//! In both modes a key popped by one worker is never handed to another until [`done`] is
//! called; an event for it meanwhile marks it dirty and it is re-queued on `done`, so one
//! binding's writes stay ordered while different bindings are scheduled concurrently (the
//! reference runs one worker).
//!
//! [`done`]: SchedulingQueue::done

use std::cmp::Ordering;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::config::options::{Options, RateLimiterOptions};
use crate::metrics::{Metrics, SCHEDULER_QUEUE, WorkToken, WorkqueueMetrics};
use crate::model::binding::BindingKey;
use component_base::ratelimit::TokenBucket;

/// Backoff of the priority queue: 1 s initial, doubling, capped at 10 s.
const PQ_INITIAL_BACKOFF: Duration = Duration::from_secs(1);
const PQ_MAX_BACKOFF: Duration = Duration::from_secs(10);
/// Longest stay in the unschedulable pool without an event.
const PQ_MAX_UNSCHEDULABLE: Duration = Duration::from_secs(300);
/// Periods of the reference's two flushes (`flushBackoffQCompleted`,
/// `flushUnschedulableBindingsLeftover`): a key is moved at the first tick that finds it due.
const PQ_BACKOFF_FLUSH: Duration = Duration::from_secs(1);
const PQ_UNSCHEDULABLE_FLUSH: Duration = Duration::from_secs(30);
/// A key that finds no API server again right after being released (the server answers its
/// probe, but this binding's writes keep failing, e.g. a webhook answering 500) waits this long
/// after the next release, doubling up to [`UNAVAILABLE_MAX_DELAY`].
const UNAVAILABLE_FIRST_DELAY: Duration = Duration::from_millis(500);
const UNAVAILABLE_MAX_DELAY: Duration = Duration::from_secs(10);

/// How an attempt ended, for routing the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Done; forget failure history.
    Success,
    /// Not enough replicas anywhere: park (priority mode) or retry with backoff (legacy).
    Unschedulable,
    /// Any other error: retry with backoff.
    Failure,
    /// A write found no API server to judge it (no answer, 429, 5xx): not the binding's
    /// failure, so neither the per-key backoff nor the shared bucket is charged. The key waits
    /// until [`SchedulingQueue::release_waiting`] (the API server answers again) or an event
    /// queues it, and is then retried at once: it can never be given up while its writes are
    /// owed.
    Unavailable,
}

/// A popped key with the bookkeeping the queue needs back in [`SchedulingQueue::done`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    pub key: BindingKey,
    pub priority: i32,
    /// Attempts so far, this one included.
    pub attempts: u32,
    timestamp: Instant,
}

#[derive(Clone, Debug)]
struct Entry {
    key: BindingKey,
    priority: i32,
    timestamp: Instant,
    attempts: u32,
    seq: u64,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Entry {
    /// Max-heap order: higher priority first, then earlier timestamp, then insertion order.
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.timestamp.cmp(&self.timestamp))
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// What the two queues share: the active heap, per-key exclusivity, delays, keys waiting for
/// the API server, and the workqueue metrics.
#[derive(Debug, Default)]
struct Keys {
    seq: u64,
    active: BinaryHeap<Entry>,
    /// Keys waiting in `active` or to be re-queued after processing, with their entry.
    dirty: HashMap<BindingKey, Entry>,
    processing: HashSet<BindingKey>,
    /// Delayed keys (legacy rate-limited adds, priority backoff, parked keys' expiry).
    delayed: BTreeMap<(Instant, u64), BindingKey>,
    delayed_at: HashMap<BindingKey, (Instant, u64)>,
    /// Entries of delayed keys that backed off, to be queued with them when due.
    backoff: HashMap<BindingKey, Entry>,
    /// Keys whose writes wait for the API server to answer again.
    waiting: HashMap<BindingKey, Entry>,
    /// Consecutive attempts of a key that ended [`Outcome::Unavailable`].
    unavailable_streak: HashMap<BindingKey, u32>,
    shut_down: bool,
    /// client-go's workqueue metrics, when attached: when each waiting key was added, and the
    /// token of each key being processed.
    metrics: Option<Arc<WorkqueueMetrics>>,
    added_at: HashMap<BindingKey, std::time::Instant>,
    working: HashMap<BindingKey, WorkToken>,
}

/// A delayed key whose time has come.
struct Due {
    at: Instant,
    seq: u64,
    key: BindingKey,
    priority: i32,
    /// Its last activation.
    timestamp: Instant,
    attempts: u32,
    /// The timestamp it enters the active queue with.
    stamp: Instant,
}

/// What differs between the legacy and the priority queue.
trait Policy: std::fmt::Debug + Send {
    /// The priority entries are ordered by.
    fn rank(&self, priority: i32) -> i32;
    /// Route an attempt that ended `outcome` (never [`Outcome::Unavailable`]), and queue the
    /// key again if an event came meanwhile.
    fn finished(&mut self, keys: &mut Keys, item: &Item, outcome: Outcome, now: Instant);
    /// Order a batch of keys due together and stamp them.
    fn order(&self, due: &mut [Due], now: Instant);
    /// Take the entry of a key parked as unschedulable.
    fn unpark(&mut self, key: &BindingKey) -> Option<Entry>;
    /// How many keys are parked.
    fn parked(&self) -> usize;
    fn forget_parked(&mut self);
    /// Entries the policy holds per key (tests).
    #[cfg(test)]
    fn held(&self) -> usize;
}

/// client-go's rate-limited FIFO work queue (the reference without `PriorityBasedScheduling`).
#[derive(Debug)]
struct Legacy {
    limiter: RateLimiterOptions,
    bucket: TokenBucket,
    /// Failure counts per key.
    failures: HashMap<BindingKey, u32>,
}

impl Policy for Legacy {
    fn rank(&self, _priority: i32) -> i32 {
        // A FIFO work queue does not read priorities.
        0
    }

    fn finished(&mut self, keys: &mut Keys, item: &Item, outcome: Outcome, now: Instant) {
        if outcome == Outcome::Success {
            self.failures.remove(&item.key);
        } else {
            let n = self.failures.entry(item.key.clone()).or_insert(0);
            let exp = legacy_backoff(self.limiter, *n);
            *n += 1;
            let bucket = self.bucket.reserve_at(now);
            keys.schedule_delay(item.key.clone(), now + exp.max(bucket));
        }
        if let Some(e) = keys.dirty.get(&item.key).cloned() {
            keys.active.push(e);
        }
    }

    fn order(&self, due: &mut [Due], now: Instant) {
        // In due order, stamped now.
        for d in due {
            d.stamp = now;
        }
    }

    fn unpark(&mut self, _key: &BindingKey) -> Option<Entry> {
        None
    }

    fn parked(&self) -> usize {
        0
    }

    fn forget_parked(&mut self) {}

    #[cfg(test)]
    fn held(&self) -> usize {
        self.failures.len()
    }
}

/// The reference's priority queue (`PriorityBasedScheduling`).
#[derive(Debug)]
struct Priority {
    /// When the flush ticks start.
    epoch: Instant,
    /// Keys parked as unschedulable (also delayed, until their expiry).
    unschedulable: HashMap<BindingKey, Entry>,
}

impl Policy for Priority {
    fn rank(&self, priority: i32) -> i32 {
        priority
    }

    fn finished(&mut self, keys: &mut Keys, item: &Item, outcome: Outcome, now: Instant) {
        let dirty = keys.dirty.contains_key(&item.key);
        let entry = Entry {
            key: item.key.clone(),
            priority: item.priority,
            timestamp: item.timestamp,
            attempts: item.attempts,
            seq: 0,
        };
        match outcome {
            Outcome::Success => {
                keys.backoff.remove(&item.key);
            }
            Outcome::Unschedulable if !dirty && !keys.backoff.contains_key(&item.key) => {
                // Moved by the first 30 s tick at which it has waited more than 5 minutes.
                let at = tick_after(
                    self.epoch,
                    item.timestamp + PQ_MAX_UNSCHEDULABLE,
                    PQ_UNSCHEDULABLE_FLUSH,
                );
                keys.schedule_delay(item.key.clone(), at);
                self.unschedulable.insert(item.key.clone(), entry);
            }
            Outcome::Failure if !dirty && !self.unschedulable.contains_key(&item.key) => {
                // Moved by the first 1 s tick at which its backoff has completed.
                let done = (item.timestamp + pq_backoff(item.attempts)).max(now);
                let at = tick_at_or_after(self.epoch, done, PQ_BACKOFF_FLUSH);
                keys.schedule_delay(item.key.clone(), at);
                keys.backoff.insert(item.key.clone(), entry);
            }
            _ => {}
        }
        if let Some(mut e) = keys.dirty.remove(&item.key) {
            // Re-queue the popped entry (attempts kept) with a fresh timestamp.
            e.attempts = item.attempts;
            e.timestamp = now;
            keys.seq += 1;
            e.seq = keys.seq;
            keys.dirty.insert(item.key.clone(), e.clone());
            keys.active.push(e);
        }
    }

    fn order(&self, due: &mut [Due], _now: Instant) {
        // Keys due at the same flush tick form one batch, pushed in the order of the active
        // queue (priority, then the timestamp of their last activation), each stamped with
        // the tick, as v1.19's flush pushes its sorted batch.
        due.sort_by(|a, b| {
            a.at.cmp(&b.at)
                .then_with(|| b.priority.cmp(&a.priority))
                .then_with(|| a.timestamp.cmp(&b.timestamp))
                .then_with(|| a.seq.cmp(&b.seq))
        });
        for d in due {
            d.stamp = d.at;
        }
    }

    fn unpark(&mut self, key: &BindingKey) -> Option<Entry> {
        self.unschedulable.remove(key)
    }

    fn parked(&self) -> usize {
        self.unschedulable.len()
    }

    fn forget_parked(&mut self) {
        self.unschedulable.clear();
    }

    #[cfg(test)]
    fn held(&self) -> usize {
        self.unschedulable.len()
    }
}

#[derive(Debug)]
struct State {
    keys: Keys,
    policy: Box<dyn Policy>,
}

/// The queue. Cheap to share behind an `Arc`.
#[derive(Debug)]
pub struct SchedulingQueue {
    state: Mutex<State>,
    notify: Notify,
}

impl SchedulingQueue {
    /// A queue in legacy (`priority_mode == false`) or priority mode.
    pub fn new(priority_mode: bool, limiter: RateLimiterOptions) -> Self {
        let limiter = limiter.with_defaults();
        let now = Instant::now();
        let policy: Box<dyn Policy> = if priority_mode {
            Box::new(Priority {
                epoch: now,
                unschedulable: HashMap::new(),
            })
        } else {
            Box::new(Legacy {
                bucket: TokenBucket::new_at(limiter.qps as f64, limiter.bucket_size as f64, now),
                limiter,
                failures: HashMap::new(),
            })
        };
        Self {
            state: Mutex::new(State {
                keys: Keys::default(),
                policy,
            }),
            notify: Notify::new(),
        }
    }

    /// Report to client-go's workqueue metrics as a workqueue does: an add for each key that
    /// becomes waiting (a key already waiting is not added twice), the wait until a worker
    /// takes it, the time the worker takes, a retry for each attempt that did not succeed.
    pub fn with_metrics(self, metrics: Arc<WorkqueueMetrics>) -> Self {
        self.lock().keys.metrics = Some(metrics);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// An event asks for the key to be scheduled: queue it now (dropping any pending backoff or
    /// parking). A key already waiting is not queued twice.
    pub fn add(&self, key: BindingKey, priority: i32) {
        let mut s = self.lock();
        if s.keys.shut_down {
            return;
        }
        s.keys.cancel_delay(&key);
        s.policy.unpark(&key);
        s.keys.backoff.remove(&key);
        s.keys.waiting.remove(&key);
        let now = Instant::now();
        s.push_active(key, priority, now, 0);
        drop(s);
        self.notify.notify_waiters();
    }

    /// Wait for the next key; `None` once the queue is shut down.
    pub async fn pop(&self) -> Option<Item> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let wake_at = {
                let mut s = self.lock();
                if s.keys.shut_down {
                    return None;
                }
                s.promote_due(Instant::now());
                let k = &mut s.keys;
                if let Some(e) = k.active.pop() {
                    k.dirty.remove(&e.key);
                    k.processing.insert(e.key.clone());
                    if let Some(m) = k.metrics.clone() {
                        let added = k.added_at.remove(&e.key);
                        k.working.insert(e.key.clone(), m.started(added));
                    }
                    let attempts = e.attempts + 1;
                    return Some(Item {
                        key: e.key,
                        priority: e.priority,
                        attempts,
                        timestamp: e.timestamp,
                    });
                }
                k.delayed.keys().next().map(|(t, _)| *t)
            };
            match wake_at {
                Some(t) => {
                    tokio::select! {
                        _ = &mut notified => {}
                        _ = tokio::time::sleep_until(t) => {}
                    }
                }
                None => notified.await,
            }
        }
    }

    /// Finish processing `item`, routing it by `outcome`.
    pub fn done(&self, item: Item, outcome: Outcome) {
        let mut s = self.lock();
        let State { keys, policy } = &mut *s;
        keys.processing.remove(&item.key);
        if let Some(m) = keys.metrics.clone() {
            if let Some(token) = keys.working.remove(&item.key) {
                m.finished(token);
            }
            if outcome != Outcome::Success {
                m.retried();
            }
        }
        if outcome == Outcome::Unavailable {
            keys.unavailable(&item);
        } else {
            keys.unavailable_streak.remove(&item.key);
            policy.finished(keys, &item, outcome, Instant::now());
        }
        drop(s);
        self.notify.notify_waiters();
    }

    /// Give back a popped key that was not processed (this replica stopped leading meanwhile):
    /// it is waiting again as it was, its attempt, backoff and retry counts untouched.
    pub fn hand_back(&self, item: Item) {
        let mut s = self.lock();
        let k = &mut s.keys;
        k.processing.remove(&item.key);
        if let (Some(m), Some(token)) = (k.metrics.clone(), k.working.remove(&item.key)) {
            m.finished(token);
        }
        // An event meanwhile left it dirty: its entry is pushed as `done` would push it.
        match k.dirty.get(&item.key).cloned() {
            Some(e) => k.active.push(e),
            None => s.push_active(
                item.key,
                item.priority,
                item.timestamp,
                item.attempts.saturating_sub(1),
            ),
        }
        drop(s);
        self.notify.notify_waiters();
    }

    /// The API server answers again: every key waiting for it is queued at once, in its
    /// original order (priority, then age); a key whose writes also failed after the last
    /// release waits a little longer each time (the server is up, this binding is not).
    pub fn release_waiting(&self) -> usize {
        let mut s = self.lock();
        let waiting: Vec<Entry> = s.keys.waiting.drain().map(|(_, e)| e).collect();
        let n = waiting.len();
        let now = Instant::now();
        for e in waiting {
            let streak = s.keys.unavailable_streak.get(&e.key).copied().unwrap_or(0);
            if streak <= 1 {
                s.push_active(e.key, e.priority, e.timestamp, e.attempts);
            } else {
                let d = UNAVAILABLE_FIRST_DELAY
                    .saturating_mul(1 << (streak - 2).min(16))
                    .min(UNAVAILABLE_MAX_DELAY);
                s.keys.schedule_delay(e.key.clone(), now + d);
                s.keys.backoff.insert(e.key.clone(), e);
            }
        }
        drop(s);
        self.notify.notify_waiters();
        n
    }

    /// How many keys wait for the API server.
    pub fn waiting_len(&self) -> usize {
        self.lock().keys.waiting.len()
    }

    /// Stop handing out keys; pending [`pop`](Self::pop) calls return `None`.
    pub fn shutdown(&self) {
        let mut s = self.lock();
        s.keys.shut_down = true;
        s.policy.forget_parked();
        drop(s);
        self.notify.notify_waiters();
    }

    /// Entries held for keys in every per-key structure of the queue (tests: a key that was
    /// processed for the last time must leave none).
    #[cfg(test)]
    fn held(&self) -> usize {
        let s = self.lock();
        let k = &s.keys;
        k.active.len()
            + k.dirty.len()
            + k.processing.len()
            + k.delayed.len()
            + k.delayed_at.len()
            + k.backoff.len()
            + k.waiting.len()
            + k.unavailable_streak.len()
            + k.added_at.len()
            + k.working.len()
            + s.policy.held()
    }

    /// Keys waiting to be popped now, waiting on a delay, and parked (for metrics and tests).
    pub fn lengths(&self) -> QueueLengths {
        let s = self.lock();
        let parked = s.policy.parked();
        QueueLengths {
            active: s.keys.active.len(),
            backoff: s.keys.delayed.len() - parked + s.keys.waiting.len(),
            unschedulable: parked,
        }
    }
}

/// Sizes of the three parts of the queue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueLengths {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
}

/// The queue for these flags: the priority queue with `PriorityBasedScheduling`, else the
/// legacy queue with its workqueue metrics.
pub fn for_options(opts: &Options, metrics: &Metrics) -> SchedulingQueue {
    let priority_mode = opts
        .feature_gates
        .enabled(scheduler_core::features::PRIORITY_BASED_SCHEDULING);
    let mut queue = SchedulingQueue::new(priority_mode, opts.rate_limiter);
    if !priority_mode {
        // The reference's priority queue registers no workqueue metrics; its legacy one does.
        queue = queue.with_metrics(metrics.workqueue(SCHEDULER_QUEUE));
    }
    queue
}

/// The first tick (`epoch + n·period`) at or after `t`.
fn tick_at_or_after(epoch: Instant, t: Instant, period: Duration) -> Instant {
    let since = t.saturating_duration_since(epoch);
    let n = since.as_nanos().div_ceil(period.as_nanos());
    epoch + period * u32::try_from(n).unwrap_or(u32::MAX)
}

/// The first tick strictly after `t`.
fn tick_after(epoch: Instant, t: Instant, period: Duration) -> Instant {
    let since = t.saturating_duration_since(epoch);
    let n = since.as_nanos() / period.as_nanos() + 1;
    epoch + period * u32::try_from(n).unwrap_or(u32::MAX)
}

fn pq_backoff(attempts: u32) -> Duration {
    if attempts == 0 {
        return Duration::ZERO;
    }
    let mut d = PQ_INITIAL_BACKOFF;
    for _ in 1..attempts {
        d *= 2;
        if d >= PQ_MAX_BACKOFF {
            return PQ_MAX_BACKOFF;
        }
    }
    d.min(PQ_MAX_BACKOFF)
}

/// client-go's `ItemExponentialFailureRateLimiter`: `base·2^failures`, capped.
fn legacy_backoff(limiter: RateLimiterOptions, failures: u32) -> Duration {
    let base = limiter.base_delay.to_std();
    let max = limiter.max_delay.to_std();
    let factor = 2f64.powi(failures.min(62) as i32);
    let d = base.as_secs_f64() * factor;
    if d > max.as_secs_f64() {
        max
    } else {
        Duration::from_secs_f64(d)
    }
}

impl Keys {
    fn schedule_delay(&mut self, key: BindingKey, at: Instant) {
        self.cancel_delay(&key);
        self.seq += 1;
        let slot = (at, self.seq);
        self.delayed.insert(slot, key.clone());
        self.delayed_at.insert(key, slot);
    }

    fn cancel_delay(&mut self, key: &BindingKey) {
        if let Some(slot) = self.delayed_at.remove(key) {
            self.delayed.remove(&slot);
        }
    }

    /// The attempt found no API server: retried at once if an event came meanwhile, else it
    /// waits for the server, this attempt not counted against it.
    fn unavailable(&mut self, item: &Item) {
        *self.unavailable_streak.entry(item.key.clone()).or_insert(0) += 1;
        if let Some(e) = self.dirty.get(&item.key).cloned() {
            self.active.push(e);
        } else {
            let entry = Entry {
                key: item.key.clone(),
                priority: item.priority,
                timestamp: item.timestamp,
                attempts: item.attempts.saturating_sub(1),
                seq: 0,
            };
            self.waiting.insert(item.key.clone(), entry);
        }
    }
}

impl State {
    fn push_active(&mut self, key: BindingKey, priority: i32, now: Instant, attempts: u32) {
        let priority = self.policy.rank(priority);
        let k = &mut self.keys;
        if k.dirty.contains_key(&key) {
            return;
        }
        if let Some(m) = &k.metrics {
            let at = m.added();
            k.added_at.entry(key.clone()).or_insert(at);
        }
        k.seq += 1;
        let e = Entry {
            key: key.clone(),
            priority,
            timestamp: now,
            attempts,
            seq: k.seq,
        };
        k.dirty.insert(key.clone(), e.clone());
        if k.processing.contains(&key) {
            return;
        }
        k.active.push(e);
    }

    /// Move every delayed key whose time has come to the active queue, in the policy's order.
    fn promote_due(&mut self, now: Instant) {
        let mut due: Vec<Due> = Vec::new();
        while let Some((&slot, _)) = self.keys.delayed.iter().next() {
            if slot.0 > now {
                break;
            }
            let key = self
                .keys
                .delayed
                .remove(&slot)
                .unwrap_or_else(|| unreachable!());
            self.keys.delayed_at.remove(&key);
            let parked = self
                .policy
                .unpark(&key)
                .or_else(|| self.keys.backoff.remove(&key));
            let (priority, timestamp, attempts) =
                parked.map_or((0, slot.0, 0), |e| (e.priority, e.timestamp, e.attempts));
            due.push(Due {
                at: slot.0,
                seq: slot.1,
                key,
                priority,
                timestamp,
                attempts,
                stamp: slot.0,
            });
        }
        self.policy.order(&mut due, now);
        for d in due {
            self.push_active(d.key, d.priority, d.stamp, d.attempts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn k(n: &str) -> BindingKey {
        BindingKey::rb("ns", n)
    }

    fn legacy() -> SchedulingQueue {
        SchedulingQueue::new(false, RateLimiterOptions::default())
    }

    /// client-go's accounting: an add per key that becomes waiting (not per event), depth of
    /// the waiting keys, one wait and one work time per attempt, a retry per failed attempt.
    #[tokio::test(start_paused = true)]
    async fn workqueue_metrics_count_as_client_go() {
        let metrics = crate::metrics::Metrics::new();
        let q = legacy().with_metrics(metrics.workqueue(crate::metrics::SCHEDULER_QUEUE));
        let value = |family: &str| {
            let text = metrics.encode().unwrap();
            text.lines()
                .find(|l| l.starts_with(family) && l.contains(r#"name="scheduler-queue""#))
                .and_then(|l| l.rsplit(' ').next())
                .map(str::to_string)
                .unwrap_or_else(|| panic!("{family}: {text}"))
        };
        q.add(k("a"), 0);
        q.add(k("a"), 0);
        q.add(k("b"), 0);
        assert_eq!(value("workqueue_adds_total{"), "2");
        assert_eq!(value("workqueue_depth{"), "2");
        let a = q.pop().await.unwrap();
        assert_eq!(value("workqueue_depth{"), "1");
        assert_eq!(value("workqueue_queue_duration_seconds_count{"), "1");
        // An event while `a` is processed: added again, handed out after `done`.
        q.add(k("a"), 0);
        assert_eq!(value("workqueue_adds_total{"), "3");
        q.done(a, Outcome::Failure);
        assert_eq!(value("workqueue_retries_total{"), "1");
        assert_eq!(value("workqueue_work_duration_seconds_count{"), "1");
        let b = q.pop().await.unwrap();
        q.done(b, Outcome::Success);
        let a = q.pop().await.unwrap();
        q.done(a, Outcome::Unavailable);
        assert_eq!(value("workqueue_retries_total{"), "2");
        assert_eq!(value("workqueue_depth{"), "0");
        assert_eq!(value("workqueue_work_duration_seconds_count{"), "3");
        // Released: waiting again, so added again.
        q.release_waiting();
        assert_eq!(value("workqueue_adds_total{"), "4");
        assert_eq!(value("workqueue_depth{"), "1");
    }

    #[tokio::test(start_paused = true)]
    async fn dedups_and_keeps_fifo_order() {
        let q = legacy();
        q.add(k("a"), 0);
        q.add(k("b"), 0);
        q.add(k("a"), 0);
        assert_eq!(q.pop().await.unwrap().key, k("a"));
        assert_eq!(q.pop().await.unwrap().key, k("b"));
        assert_eq!(q.lengths().active, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_in_flight_is_not_handed_out_twice() {
        let q = Arc::new(legacy());
        q.add(k("a"), 0);
        let first = q.pop().await.unwrap();
        q.add(k("a"), 0); // event while processing: dirty
        q.add(k("b"), 0);
        let second = q.pop().await.unwrap();
        assert_eq!(second.key, k("b"), "a is being processed");
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { q.pop().await })
        };
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        q.done(first, Outcome::Success);
        assert_eq!(waiter.await.unwrap().unwrap().key, k("a"));
    }

    #[tokio::test(start_paused = true)]
    async fn legacy_failures_back_off_exponentially_and_success_resets() {
        let q = legacy();
        q.add(k("a"), 0);
        let start = Instant::now();
        let mut delays = Vec::new();
        for _ in 0..4 {
            let item = q.pop().await.unwrap();
            let t = Instant::now();
            delays.push(t - start);
            q.done(item, Outcome::Failure);
        }
        // Popped at 0, then after 5ms, 10ms, 20ms (cumulative 5, 15, 35).
        assert_eq!(
            delays,
            vec![
                Duration::ZERO,
                Duration::from_millis(5),
                Duration::from_millis(15),
                Duration::from_millis(35)
            ]
        );
        let item = q.pop().await.unwrap();
        q.done(item, Outcome::Success);
        q.add(k("a"), 0);
        let item = q.pop().await.unwrap();
        let t0 = Instant::now();
        q.done(item, Outcome::Failure);
        q.pop().await.unwrap();
        assert_eq!(
            Instant::now() - t0,
            Duration::from_millis(5),
            "failures were forgotten"
        );
    }

    /// A key whose writes found no API server waits, uncharged, until the server answers
    /// again; then it is retried at once and its backoff is where it was.
    #[tokio::test(start_paused = true)]
    async fn keys_waiting_for_the_api_server_are_released_at_once_and_not_charged() {
        for priority_mode in [false, true] {
            let q = SchedulingQueue::new(priority_mode, RateLimiterOptions::default());
            q.add(k("a"), 0);
            q.add(k("b"), 0);
            for _ in 0..50 {
                let item = q.pop().await.unwrap();
                q.done(item, Outcome::Unavailable);
                let item = q.pop().await.unwrap();
                q.done(item, Outcome::Unavailable);
                assert_eq!(q.waiting_len(), 2);
                assert_eq!(q.lengths().active, 0);
                // Nothing comes back by itself, however long the outage.
                let popped = tokio::time::timeout(Duration::from_secs(3600), q.pop()).await;
                assert!(
                    popped.is_err(),
                    "mode {priority_mode}: a waiting key came back"
                );
                assert_eq!(q.release_waiting(), 2);
            }
            // Fifty outages later the first real failure still backs off from the start.
            let item = q.pop().await.unwrap();
            let t0 = Instant::now();
            q.done(item, Outcome::Failure);
            let other = q.pop().await.unwrap();
            q.done(other, Outcome::Success);
            q.pop().await.unwrap();
            let expected = if priority_mode {
                // The first backoff, then at most one flush period.
                PQ_INITIAL_BACKOFF + PQ_BACKOFF_FLUSH
            } else {
                Duration::from_millis(5)
            };
            assert!(
                Instant::now() - t0 <= expected,
                "mode {priority_mode}: backed off {:?}",
                Instant::now() - t0
            );
            // An event for a waiting key queues it without waiting for the release.
            q.add(k("c"), 0);
            let item = q.pop().await.unwrap();
            assert_eq!(item.key, k("c"));
            q.done(item, Outcome::Unavailable);
            q.add(k("c"), 0);
            assert_eq!(q.waiting_len(), 0);
            assert_eq!(q.pop().await.unwrap().key, k("c"));
        }
    }

    /// A binding whose writes fail again each time the API server is back (the server is
    /// up, the binding is not) is released later each time, up to 10 s; success resets it.
    #[tokio::test(start_paused = true)]
    async fn repeated_unavailability_of_one_key_backs_off_to_ten_seconds() {
        let q = legacy();
        q.add(k("a"), 0);
        let mut waits = Vec::new();
        for _ in 0..8 {
            let item = q.pop().await.unwrap();
            q.done(item, Outcome::Unavailable);
            q.release_waiting();
            let t = Instant::now();
            let item = q.pop().await.unwrap();
            waits.push((Instant::now() - t).as_millis() as u64);
            q.done(item, Outcome::Unavailable);
            q.release_waiting();
            let t = Instant::now();
            let item = q.pop().await.unwrap();
            waits.push((Instant::now() - t).as_millis() as u64);
            q.done(item, Outcome::Success);
            q.add(k("a"), 0);
        }
        // After a success the first release is immediate again, the second waits 0.5 s.
        assert_eq!(waits, [0, 500].repeat(8));
        let mut waits = Vec::new();
        for _ in 0..7 {
            let item = q.pop().await.unwrap();
            q.done(item, Outcome::Unavailable);
            q.release_waiting();
            let t = Instant::now();
            let item = q.pop().await.unwrap();
            waits.push((Instant::now() - t).as_millis() as u64);
            q.done(item, Outcome::Unavailable);
            q.release_waiting();
            q.add(k("a"), 0); // keeps the streak
        }
        assert_eq!(waits, [0, 1000, 4000, 10000, 10000, 10000, 10000]);
    }

    /// A key handed back unprocessed comes out again as it was: same attempt count, no
    /// backoff, no retry counted.
    #[tokio::test(start_paused = true)]
    async fn a_key_handed_back_is_popped_again_unchanged() {
        let metrics = crate::metrics::Metrics::new();
        let q = legacy().with_metrics(metrics.workqueue(crate::metrics::SCHEDULER_QUEUE));
        q.add(k("a"), 0);
        let first = q.pop().await.unwrap();
        assert_eq!(first.attempts, 1);
        q.hand_back(first);
        let again = q.pop().await.unwrap();
        assert_eq!((again.key.clone(), again.attempts), (k("a"), 1));
        q.done(again, Outcome::Success);
        let text = metrics.encode().unwrap();
        assert!(
            text.lines()
                .any(|l| l.starts_with("workqueue_retries_total{")
                    && l.contains(r#"name="scheduler-queue""#)
                    && l.ends_with(" 0")),
            "{text}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn an_event_cancels_a_pending_backoff() {
        let q = legacy();
        q.add(k("a"), 0);
        let item = q.pop().await.unwrap();
        q.done(item, Outcome::Failure);
        assert_eq!(q.lengths().backoff, 1);
        q.add(k("a"), 0);
        assert_eq!(
            q.lengths(),
            QueueLengths {
                active: 1,
                backoff: 0,
                unschedulable: 0
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn priority_mode_orders_by_priority_then_age() {
        let q = SchedulingQueue::new(true, RateLimiterOptions::default());
        q.add(k("low"), 1);
        tokio::time::advance(Duration::from_millis(1)).await;
        q.add(k("high"), 10);
        tokio::time::advance(Duration::from_millis(1)).await;
        q.add(k("low2"), 1);
        let order: Vec<String> = [q.pop().await, q.pop().await, q.pop().await]
            .into_iter()
            .map(|i| i.unwrap().key.object.name)
            .collect();
        assert_eq!(order, vec!["high", "low", "low2"]);
    }

    #[tokio::test(start_paused = true)]
    async fn priority_mode_parks_unschedulable_until_an_event_or_five_minutes() {
        let q = SchedulingQueue::new(true, RateLimiterOptions::default());
        q.add(k("a"), 0);
        let item = q.pop().await.unwrap();
        let t0 = item.timestamp;
        q.done(item, Outcome::Unschedulable);
        assert_eq!(q.lengths().unschedulable, 1);
        let item = q.pop().await.unwrap();
        // Not at exactly 5 minutes: at the first 30 s flush tick after them.
        assert_eq!(
            Instant::now() - t0,
            PQ_MAX_UNSCHEDULABLE + PQ_UNSCHEDULABLE_FLUSH
        );
        assert_eq!(item.attempts, 2);
        q.done(item, Outcome::Unschedulable);
        q.add(k("a"), 0);
        assert_eq!(
            q.lengths(),
            QueueLengths {
                active: 1,
                backoff: 0,
                unschedulable: 0
            }
        );
    }

    #[tokio::test(start_paused = true)]
    async fn priority_backoff_doubles_to_ten_seconds() {
        assert_eq!(
            (1..=6).map(pq_backoff).collect::<Vec<_>>(),
            [1, 2, 4, 8, 10, 10].map(Duration::from_secs).to_vec()
        );
        let q = SchedulingQueue::new(true, RateLimiterOptions::default());
        q.add(k("a"), 0);
        let item = q.pop().await.unwrap();
        let t0 = Instant::now();
        q.done(item, Outcome::Failure);
        let item = q.pop().await.unwrap();
        assert_eq!(Instant::now() - t0, Duration::from_secs(1));
        q.done(item, Outcome::Failure);
        let t1 = Instant::now();
        q.pop().await.unwrap();
        assert_eq!(Instant::now() - t1, Duration::from_secs(2));
    }

    /// v1.19's flush: keys whose backoff completes before the same 1 s tick enter the active
    /// queue as one batch sorted by priority (then by age), whatever order their backoffs
    /// completed in; with the gate off (legacy queue, v1.18.2's default) they come back in the
    /// order they failed.
    #[tokio::test(start_paused = true)]
    async fn a_flushed_backoff_batch_is_popped_by_priority() {
        let q = SchedulingQueue::new(true, RateLimiterOptions::default());
        for (name, prio) in [("low", 1), ("high", 9), ("mid", 5), ("mid-later", 5)] {
            tokio::time::advance(Duration::from_millis(100)).await;
            q.add(k(name), prio);
        }
        // Scheduled (and failing) in priority order; each backoff completes 1 s after the
        // key's activation, so "low" completes first.
        let mut popped = Vec::new();
        for _ in 0..4 {
            let item = q.pop().await.unwrap();
            popped.push(item.key.clone());
            q.done(item, Outcome::Failure);
        }
        assert_eq!(popped, [k("high"), k("mid"), k("mid-later"), k("low")]);
        let start = Instant::now();
        let mut again = Vec::new();
        for _ in 0..4 {
            let item = q.pop().await.unwrap();
            again.push(item.key.clone());
            q.done(item, Outcome::Success);
        }
        // All four at the 2 s tick (their backoffs end between 1.1 s and 1.4 s).
        assert_eq!(Instant::now() - start, Duration::from_millis(1600));
        assert_eq!(again, [k("high"), k("mid"), k("mid-later"), k("low")]);

        let q = legacy();
        for name in ["low", "high", "mid"] {
            q.add(k(name), 0);
        }
        for _ in 0..3 {
            let item = q.pop().await.unwrap();
            q.done(item, Outcome::Failure);
        }
        let mut order = Vec::new();
        for _ in 0..3 {
            let item = q.pop().await.unwrap();
            order.push(item.key.clone());
            q.done(item, Outcome::Success);
        }
        assert_eq!(order, [k("low"), k("high"), k("mid")]);
    }

    /// Replays one vector of `tests/conformance/queue/` (format in its README); `Err` says
    /// what differed.
    async fn replay_queue_vector(v: &serde_yaml::Value) -> Result<(), String> {
        let mode = v["queue"].as_str().ok_or("no queue mode")?;
        let q = SchedulingQueue::new(mode == "priority", RateLimiterOptions::default());
        let start = Instant::now();
        let mut got: Vec<Vec<String>> = Vec::new();
        let mut got_at: Vec<u64> = Vec::new();
        for step in v["steps"].as_sequence().ok_or("no steps")? {
            if let Some(key) = step["add"].as_str() {
                let at = Duration::from_millis(step["at"].as_u64().ok_or("add without at")?);
                let now = Instant::now() - start;
                if at > now {
                    tokio::time::advance(at - now).await;
                }
                let prio = step["priority"].as_i64().unwrap_or(0) as i32;
                q.add(k(key), prio);
            } else if let Some(n) = step["pop"].as_u64() {
                let outcome = match step["outcome"].as_str() {
                    Some("Success") => Outcome::Success,
                    Some("Failure") => Outcome::Failure,
                    Some("Unschedulable") => Outcome::Unschedulable,
                    other => return Err(format!("unknown outcome {other:?}")),
                };
                let mut keys = Vec::new();
                for _ in 0..n {
                    let item = q.pop().await.ok_or("queue shut down")?;
                    keys.push(item.key.object.name.clone());
                    q.done(item, outcome);
                }
                got.push(keys);
                got_at.push((Instant::now() - start).as_millis() as u64);
            } else {
                return Err(format!("unknown step {step:?}"));
            }
        }
        let want: Vec<Vec<String>> =
            serde_yaml::from_value(v["expect"].clone()).map_err(|e| e.to_string())?;
        if got != want {
            return Err(format!("popped {got:?}, want {want:?}"));
        }
        if let Some(at) = v.get("expectAt") {
            let want_at: Vec<u64> =
                serde_yaml::from_value(at.clone()).map_err(|e| e.to_string())?;
            if got_at != want_at {
                return Err(format!("popped at {got_at:?} ms, want {want_at:?}"));
            }
        }
        Ok(())
    }

    /// Every scheduling-queue conformance vector (`tests/conformance/queue/*.yaml`).
    #[test]
    fn queue_vectors() {
        let dir =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/conformance/queue");
        let mut files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        files.sort();
        assert!(files.len() >= 3, "{files:?}");
        let mut failures = Vec::new();
        for f in &files {
            let v: serde_yaml::Value =
                serde_yaml::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_time()
                .start_paused(true)
                .build()
                .unwrap();
            if let Err(e) = rt.block_on(replay_queue_vector(&v)) {
                failures.push(format!("{}: {e}", f.display()));
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[tokio::test(start_paused = true)]
    async fn shutdown_releases_waiters() {
        let q = Arc::new(legacy());
        let waiter = {
            let q = q.clone();
            tokio::spawn(async move { q.pop().await })
        };
        tokio::task::yield_now().await;
        q.shutdown();
        assert_eq!(waiter.await.unwrap(), None);
    }

    #[test]
    fn legacy_backoff_is_capped() {
        let l = RateLimiterOptions::default();
        assert_eq!(legacy_backoff(l, 0), Duration::from_millis(5));
        assert_eq!(legacy_backoff(l, 3), Duration::from_millis(40));
        assert_eq!(legacy_backoff(l, 40), Duration::from_secs(1000));
    }

    /// Bindings that fail, are unschedulable, find no API server or are scheduled, and are
    /// then deleted, leave nothing in the queue once their last attempt is done: as in the
    /// reference, a deleted key stays until it is due (its backoff, its parking, the server
    /// answering), is popped once more, finds no binding and succeeds, which forgets it.
    /// The worker's `process` answers `Success` for a binding no longer cached.
    #[tokio::test(start_paused = true)]
    async fn deleted_bindings_leave_no_entry() {
        for priority_mode in [false, true] {
            let metrics = crate::metrics::Metrics::new();
            let q = SchedulingQueue::new(priority_mode, RateLimiterOptions::default())
                .with_metrics(metrics.workqueue(crate::metrics::SCHEDULER_QUEUE));
            let outcomes = [
                Outcome::Failure,
                Outcome::Unschedulable,
                Outcome::Unavailable,
                Outcome::Success,
            ];
            let n = 10_000;
            for i in 0..n {
                q.add(k(&format!("b{i}")), 0);
            }
            for i in 0..n {
                let item = q.pop().await.unwrap();
                if i % 7 == 0 {
                    // An event while it is being worked on.
                    q.add(item.key.clone(), 0);
                }
                q.done(item, outcomes[i % outcomes.len()]);
            }
            // Every binding is deleted now: each further attempt finds none.
            q.release_waiting();
            while let Ok(Some(item)) =
                tokio::time::timeout(Duration::from_secs(3600), q.pop()).await
            {
                q.done(item, Outcome::Success);
            }
            assert_eq!(q.held(), 0, "mode {priority_mode}");
        }
    }
}
