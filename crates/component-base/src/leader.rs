//! Lease-based leader election, interoperable with client-go's `leaderelection`.
//!
//! The Lease `coordination.k8s.io/v1` is read and written exactly as client-go's `LeaseLock`
//! does (`holderIdentity`, `leaseDurationSeconds`, `acquireTime`, `renewTime`,
//! `leaseTransitions`; updates are PUTs guarded by resourceVersion), and the timing rules are
//! client-go's: a lease is valid while *our observation* of its last change is younger than its
//! `leaseDurationSeconds` (no trust in remote clocks); candidates retry every retry period
//! (jittered by up to 1.2×); the leader renews every retry period and gives up when it could not
//! renew within the renew deadline. So a Go scheduler and this one can hold the same Lease in
//! turn and a fleet can be migrated one replica at a time.
//!
//! Improvement: on shutdown the leader releases the Lease the way client-go's
//! `ReleaseOnCancel` does (empty holder, `leaseDurationSeconds: 1`), so a standby takes over
//! after one retry period instead of a whole lease duration.
//!
//! Improvement: every successful renewal extends the process's write [`Fence`] to its start
//! plus the renew deadline, on a clock that counts through stalls (see [`crate::fence`]). The
//! renew loop watches that deadline: after a freeze it finds the lapse at once and reports the
//! lease lost, instead of sending a renewal and waiting for it to time out while the work goes
//! on. Seeing another holder while leading also ends leading at once.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, PostParams};
use tokio::time::Instant;

use crate::BoxFuture;
use crate::api::{ApiFailure, api_failure};
use crate::cancel::CancellationToken;
use crate::fence::Fence;

/// How often the renew loop looks at the fence's deadline between renewals: after a suspend
/// (which tokio's monotonic timers do not see) the lapse is noticed within this.
const LAPSE_CHECK: Duration = Duration::from_millis(250);

/// Lease access, so tests can run the state machine against an in-memory Lease.
pub trait LeaseApi: Send + Sync {
    fn get(&self) -> BoxFuture<'_, Result<Option<Lease>, ApiFailure>>;
    fn create(&self, lease: Lease) -> BoxFuture<'_, Result<Lease, ApiFailure>>;
    /// PUT; fails with 409 when `metadata.resourceVersion` is stale.
    fn replace(&self, lease: Lease) -> BoxFuture<'_, Result<Lease, ApiFailure>>;
}

/// The Lease through the kube client.
pub struct KubeLease {
    api: Api<Lease>,
    name: String,
}

impl KubeLease {
    pub fn new(client: kube::Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            name: name.to_string(),
        }
    }
}

impl LeaseApi for KubeLease {
    fn get(&self) -> BoxFuture<'_, Result<Option<Lease>, ApiFailure>> {
        Box::pin(async move { self.api.get_opt(&self.name).await.map_err(api_failure) })
    }

    fn create(&self, lease: Lease) -> BoxFuture<'_, Result<Lease, ApiFailure>> {
        Box::pin(async move {
            self.api
                .create(&PostParams::default(), &lease)
                .await
                .map_err(api_failure)
        })
    }

    fn replace(&self, lease: Lease) -> BoxFuture<'_, Result<Lease, ApiFailure>> {
        Box::pin(async move {
            self.api
                .replace(&self.name, &PostParams::default(), &lease)
                .await
                .map_err(api_failure)
        })
    }
}

/// Election parameters (the `--leader-elect-*` flags and the identity).
#[derive(Clone, Debug)]
pub struct ElectionConfig {
    pub namespace: String,
    pub name: String,
    /// `<hostname>_<uuid>`.
    pub identity: String,
    pub lease_duration: Duration,
    pub renew_deadline: Duration,
    pub retry_period: Duration,
}

/// client-go's `LeaderElectionRecord`.
#[derive(Clone, Debug, PartialEq)]
struct Record {
    holder: String,
    lease_duration_seconds: i32,
    acquire_time: Option<MicroTime>,
    renew_time: Option<MicroTime>,
    transitions: i32,
}

impl Record {
    fn from_spec(spec: &LeaseSpec) -> Self {
        Self {
            holder: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or_default(),
            acquire_time: spec.acquire_time.clone(),
            renew_time: spec.renew_time.clone(),
            transitions: spec.lease_transitions.unwrap_or_default(),
        }
    }

    /// Into the Lease spec, keeping fields client-go's lock keeps (strategy, preferred holder).
    fn apply_to(&self, spec: &mut LeaseSpec) {
        spec.holder_identity = Some(self.holder.clone());
        spec.lease_duration_seconds = Some(self.lease_duration_seconds);
        spec.acquire_time = self.acquire_time.clone();
        spec.renew_time = self.renew_time.clone();
        spec.lease_transitions = Some(self.transitions);
    }
}

/// How leading ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LeadingEnded {
    /// The lease could not be renewed within the renew deadline.
    Lost,
    /// Shutdown was requested (the lease has been released).
    Stopped,
}

/// The elector: one per process.
pub struct Elector {
    cfg: ElectionConfig,
    api: Arc<dyn LeaseApi>,
    observed: Option<Record>,
    observed_raw: Option<String>,
    observed_at: Instant,
    lease: Option<Lease>,
    /// Opened and extended by successful renewals, closed when leading ends.
    fence: Fence,
}

impl Elector {
    pub fn new(cfg: ElectionConfig, api: Arc<dyn LeaseApi>) -> Self {
        Self {
            cfg,
            api,
            observed: None,
            observed_raw: None,
            observed_at: Instant::now(),
            lease: None,
            fence: Fence::closed(),
        }
    }

    /// Drive `fence` (closed until the Lease is acquired) instead of a private one.
    pub fn with_fence(mut self, fence: Fence) -> Self {
        fence.close();
        self.fence = fence;
        self
    }

    /// The fence this elector opens while it leads.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// A renewal that started at `started` succeeded.
    fn renewed(&mut self, record: Record, started: u64) {
        self.set_observed(record);
        self.fence.renewed(started, self.cfg.renew_deadline);
    }

    pub fn identity(&self) -> &str {
        &self.cfg.identity
    }

    /// Whether the last observed record names us.
    pub fn is_leader(&self) -> bool {
        self.observed
            .as_ref()
            .is_some_and(|r| r.holder == self.cfg.identity)
    }

    fn lease_valid(&self, now: Instant) -> bool {
        let secs = self
            .observed
            .as_ref()
            .map_or(0, |r| r.lease_duration_seconds.max(0));
        self.observed_at + Duration::from_secs(secs as u64) > now
    }

    fn set_observed(&mut self, r: Record) {
        self.observed = Some(r);
        self.observed_at = Instant::now();
    }

    fn now_micro() -> MicroTime {
        MicroTime(Timestamp::now())
    }

    async fn update(&mut self, record: &Record) -> Result<(), ApiFailure> {
        let Some(mut lease) = self.lease.clone() else {
            return Err(ApiFailure {
                code: 0,
                reason: String::new(),
                message: "lease not initialized, call get or create first".into(),
            });
        };
        let spec = lease.spec.get_or_insert_with(Default::default);
        record.apply_to(spec);
        let stored = self.api.replace(lease).await?;
        self.lease = Some(stored);
        Ok(())
    }

    /// client-go's `tryAcquireOrRenew`.
    pub async fn try_acquire_or_renew(&mut self) -> bool {
        let started = self.fence.now();
        let now = Self::now_micro();
        let mut record = Record {
            holder: self.cfg.identity.clone(),
            lease_duration_seconds: self.cfg.lease_duration.as_secs() as i32,
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            transitions: 0,
        };
        // Fast path: the leader renews optimistically against the lease it last wrote.
        if self.is_leader() && self.lease_valid(Instant::now()) {
            let old = self.observed.clone().unwrap_or_else(|| record.clone());
            record.acquire_time = old.acquire_time;
            record.transitions = old.transitions;
            match self.update(&record).await {
                Ok(()) => {
                    self.renewed(record, started);
                    return true;
                }
                Err(e) => tracing::error!(
                    "Failed to update lock optimistically: {e}, falling back to slow path"
                ),
            }
        }
        let lease = match self.api.get().await {
            Ok(Some(l)) => l,
            Ok(None) => {
                let mut spec = LeaseSpec::default();
                record.apply_to(&mut spec);
                let lease = Lease {
                    metadata: ObjectMeta {
                        name: Some(self.cfg.name.clone()),
                        namespace: Some(self.cfg.namespace.clone()),
                        ..Default::default()
                    },
                    spec: Some(spec),
                };
                return match self.api.create(lease).await {
                    Ok(stored) => {
                        self.lease = Some(stored);
                        self.renewed(record, started);
                        true
                    }
                    Err(e) => {
                        tracing::error!("error initially creating leader election record: {e}");
                        false
                    }
                };
            }
            Err(e) => {
                tracing::error!(
                    "error retrieving resource lock {}/{}: {e}",
                    self.cfg.namespace,
                    self.cfg.name
                );
                return false;
            }
        };
        let old = Record::from_spec(lease.spec.as_ref().unwrap_or(&LeaseSpec::default()));
        let raw = serde_json::to_string(&lease.spec).unwrap_or_default();
        self.lease = Some(lease);
        if self.observed_raw.as_deref() != Some(raw.as_str()) {
            self.set_observed(old.clone());
            self.observed_raw = Some(raw);
        }
        if !old.holder.is_empty() && self.lease_valid(Instant::now()) && !self.is_leader() {
            tracing::debug!("lock is held by {} and has not yet expired", old.holder);
            // Held by another: whatever we believed, we do not lead.
            self.fence.close();
            return false;
        }
        if self.is_leader() {
            record.acquire_time = old.acquire_time;
            record.transitions = old.transitions;
        } else {
            record.transitions = old.transitions + 1;
        }
        match self.update(&record).await {
            Ok(()) => {
                self.renewed(record, started);
                true
            }
            Err(e) => {
                tracing::error!("Failed to update lock: {e}");
                false
            }
        }
    }

    fn jittered(&self) -> Duration {
        let jitter = random_fraction() * 1.2;
        self.cfg.retry_period.mul_f64(1.0 + jitter)
    }

    /// Campaign until leader (`true`) or `stop` (`false`).
    pub async fn acquire(&mut self, stop: &CancellationToken) -> bool {
        tracing::info!(
            "attempting to acquire leader lease {}/{}...",
            self.cfg.namespace,
            self.cfg.name
        );
        loop {
            if stop.is_cancelled() {
                return false;
            }
            if self.try_acquire_or_renew().await {
                tracing::info!(
                    "successfully acquired lease {}/{}",
                    self.cfg.namespace,
                    self.cfg.name
                );
                return true;
            }
            let wait = self.jittered();
            tokio::select! {
                _ = stop.cancelled() => return false,
                _ = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// Keep renewing until the lease is lost or `stop` fires (then release it).
    ///
    /// Lost means: the fence's deadline (start of the last successful renewal plus the renew
    /// deadline, on a clock that counts through stalls) passed without a renewal, or the Lease
    /// is seen held by another replica. The fence is closed before this returns.
    pub async fn renew(&mut self, stop: &CancellationToken) -> LeadingEnded {
        loop {
            if stop.is_cancelled() {
                self.release().await;
                return LeadingEnded::Stopped;
            }
            if !self.fence.is_valid_now() {
                return self.lost("no successful renewal within the renew deadline");
            }
            // A renewal may take only what is left of the deadline.
            let left = self.fence.remaining();
            let renewed: bool = tokio::time::timeout(left, self.try_acquire_or_renew())
                .await
                .unwrap_or_default();
            if !renewed && !self.is_leader() {
                return self.lost("the lease is held by another replica");
            }
            let pause = if renewed {
                self.cfg.retry_period
            } else {
                self.cfg.retry_period.min(self.fence.remaining())
            };
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep(pause) => {}
                _ = self.fence_lapses() => {}
            }
        }
    }

    /// Resolves once the fence's deadline has passed (checked every [`LAPSE_CHECK`]).
    async fn fence_lapses(&self) {
        loop {
            tokio::time::sleep(LAPSE_CHECK).await;
            if !self.fence.is_valid_now() {
                return;
            }
        }
    }

    fn lost(&mut self, why: &str) -> LeadingEnded {
        self.fence.close();
        tracing::info!(
            "failed to renew lease {}/{}: {why}",
            self.cfg.namespace,
            self.cfg.name
        );
        LeadingEnded::Lost
    }

    /// client-go's `release`: empty holder, 1-second lease, transitions kept.
    pub async fn release(&mut self) -> bool {
        // No write of ours after this point, whether or not the release itself lands.
        self.fence.close();
        if !self.is_leader() {
            return true;
        }
        let now = Self::now_micro();
        let record = Record {
            holder: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(now.clone()),
            renew_time: Some(now),
            transitions: self.observed.as_ref().map_or(0, |r| r.transitions),
        };
        let result = tokio::time::timeout(self.cfg.renew_deadline, self.update(&record)).await;
        match result {
            Ok(Ok(())) => {
                self.set_observed(record);
                tracing::info!("released lease {}/{}", self.cfg.namespace, self.cfg.name);
                true
            }
            Ok(Err(e)) => {
                tracing::error!("Failed to release lock: {e}");
                false
            }
            Err(_) => {
                tracing::error!("Failed to release lock: timed out");
                false
            }
        }
    }
}

/// A fraction in [0, 1) from the OS's randomness (jitter only).
fn random_fraction() -> f64 {
    let mut b = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read as _;
        let _ = f.read_exact(&mut b);
    }
    (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64
}

/// `<hostname>_<random UUID v4>`, as the reference builds its identity. Go's `os.Hostname`
/// reads `/proc/sys/kernel/hostname` on Linux.
pub fn identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "localhost".to_string());
    format!("{host}_{}", uuid_v4())
}

fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read as _;
        let _ = f.read_exact(&mut b);
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// One Lease in memory with resourceVersion checks, like the API server.
    #[derive(Default)]
    struct MemLease {
        lease: Mutex<Option<Lease>>,
        rv: Mutex<u64>,
        down: Mutex<bool>,
    }

    impl MemLease {
        fn spec(&self) -> LeaseSpec {
            self.lease.lock().unwrap().clone().unwrap().spec.unwrap()
        }
    }

    impl LeaseApi for MemLease {
        fn get(&self) -> BoxFuture<'_, Result<Option<Lease>, ApiFailure>> {
            Box::pin(async move {
                if *self.down.lock().unwrap() {
                    return Err(ApiFailure {
                        code: 0,
                        reason: String::new(),
                        message: "connection refused".into(),
                    });
                }
                Ok(self.lease.lock().unwrap().clone())
            })
        }
        fn create(&self, mut lease: Lease) -> BoxFuture<'_, Result<Lease, ApiFailure>> {
            Box::pin(async move {
                let mut l = self.lease.lock().unwrap();
                if l.is_some() {
                    return Err(ApiFailure {
                        code: 409,
                        reason: "AlreadyExists".into(),
                        message: "exists".into(),
                    });
                }
                let mut rv = self.rv.lock().unwrap();
                *rv += 1;
                lease.metadata.resource_version = Some(rv.to_string());
                *l = Some(lease.clone());
                Ok(lease)
            })
        }
        fn replace(&self, mut lease: Lease) -> BoxFuture<'_, Result<Lease, ApiFailure>> {
            Box::pin(async move {
                if *self.down.lock().unwrap() {
                    return Err(ApiFailure {
                        code: 0,
                        reason: String::new(),
                        message: "connection refused".into(),
                    });
                }
                let mut l = self.lease.lock().unwrap();
                let mut rv = self.rv.lock().unwrap();
                if lease.metadata.resource_version != Some(rv.to_string()) {
                    return Err(ApiFailure {
                        code: 409,
                        reason: "Conflict".into(),
                        message: "conflict".into(),
                    });
                }
                *rv += 1;
                lease.metadata.resource_version = Some(rv.to_string());
                *l = Some(lease.clone());
                Ok(lease)
            })
        }
    }

    /// An elector whose fence runs on tokio's (pausable) clock.
    fn elector(id: &str, api: &Arc<MemLease>) -> Elector {
        let base = Instant::now();
        let clock: crate::fence::Clock =
            Arc::new(move || Instant::now().duration_since(base).as_nanos() as u64 + 1);
        Elector::new(cfg(id), api.clone()).with_fence(Fence::closed_with_clock(clock))
    }

    fn cfg(id: &str) -> ElectionConfig {
        ElectionConfig {
            namespace: "karmada-system".into(),
            name: "karmada-scheduler".into(),
            identity: id.into(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn first_candidate_creates_the_lease_second_waits_for_expiry() {
        let api = Arc::new(MemLease::default());
        let mut a = elector("a", &api);
        let mut b = elector("b", &api);
        assert!(a.try_acquire_or_renew().await);
        let spec = api.spec();
        assert_eq!(spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(spec.lease_duration_seconds, Some(15));
        assert_eq!(spec.lease_transitions, Some(0));
        assert!(!b.try_acquire_or_renew().await, "held and fresh");
        // a renews: acquireTime and transitions kept.
        let acquired = spec.acquire_time.clone();
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(a.try_acquire_or_renew().await);
        assert_eq!(api.spec().acquire_time, acquired);
        // a stops renewing; b takes over once its own observation is 15 s old.
        assert!(!b.try_acquire_or_renew().await);
        tokio::time::advance(Duration::from_secs(14)).await;
        assert!(!b.try_acquire_or_renew().await);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert!(b.try_acquire_or_renew().await);
        let spec = api.spec();
        assert_eq!(spec.holder_identity.as_deref(), Some("b"));
        assert_eq!(spec.lease_transitions, Some(1));
        // a notices it lost: its optimistic update conflicts, the slow path sees b.
        assert!(!a.try_acquire_or_renew().await);
        assert!(!a.is_leader());
    }

    #[tokio::test(start_paused = true)]
    async fn release_lets_a_standby_in_after_one_second() {
        let api = Arc::new(MemLease::default());
        let mut a = elector("a", &api);
        let mut b = elector("b", &api);
        assert!(a.try_acquire_or_renew().await);
        assert!(!b.try_acquire_or_renew().await);
        assert!(a.release().await);
        let spec = api.spec();
        assert_eq!(spec.holder_identity.as_deref(), Some(""));
        assert_eq!(spec.lease_duration_seconds, Some(1));
        // An empty holder can be taken at once.
        assert!(b.try_acquire_or_renew().await);
        assert_eq!(api.spec().lease_transitions, Some(1));
    }

    #[tokio::test(start_paused = true)]
    async fn leader_gives_up_after_the_renew_deadline() {
        let api = Arc::new(MemLease::default());
        let mut a = elector("a", &api);
        let stop = CancellationToken::new();
        assert!(a.acquire(&stop).await);
        *api.down.lock().unwrap() = true;
        let start = Instant::now();
        assert_eq!(a.renew(&stop).await, LeadingEnded::Lost);
        let took = Instant::now() - start;
        // One retry period of normal renewal, then up to the renew deadline of failures.
        assert!(took <= Duration::from_secs(12), "{took:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_frozen_leader_finds_the_lapse_at_once_and_its_old_work_stays_refused() {
        let api = Arc::new(MemLease::default());
        let mut a = elector("a", &api);
        let stop = CancellationToken::new();
        assert!(a.acquire(&stop).await);
        let before = a.fence().permit().expect("leading");
        // Frozen for longer than the renew deadline (nobody else campaigns): on waking the
        // fence is already closed to writes, and the renew loop reports the loss without
        // sending a request and waiting for its timeout.
        tokio::time::advance(Duration::from_secs(12)).await;
        assert!(before.check().is_err());
        let start = Instant::now();
        assert_eq!(a.renew(&stop).await, LeadingEnded::Lost);
        assert_eq!(Instant::now() - start, Duration::ZERO);
        assert!(!*a.fence().leading().borrow());
        // Campaigning again wins (the lease is still ours), in a new term.
        assert!(a.acquire(&stop).await);
        let after = a.fence().permit().expect("leading again");
        assert!(after.check().is_ok());
        assert!(before.check().is_err(), "work of the old term is dropped");
        assert!(after.term() > before.term());
    }

    #[tokio::test(start_paused = true)]
    async fn another_holder_ends_leading_at_once() {
        let api = Arc::new(MemLease::default());
        let mut a = elector("a", &api);
        let stop = CancellationToken::new();
        assert!(a.acquire(&stop).await);
        // Someone else writes the Lease (e.g. after a partition only we saw).
        {
            let mut l = api.lease.lock().unwrap();
            let lease = l.as_mut().unwrap();
            lease.spec.as_mut().unwrap().holder_identity = Some("b".into());
            let mut rv = api.rv.lock().unwrap();
            *rv += 1;
            lease.metadata.resource_version = Some(rv.to_string());
        }
        let start = Instant::now();
        assert_eq!(a.renew(&stop).await, LeadingEnded::Lost);
        assert!(
            Instant::now() - start <= Duration::from_secs(2),
            "one retry period at most"
        );
        assert!(a.fence().permit().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn stop_releases() {
        let api = Arc::new(MemLease::default());
        let mut a = elector("a", &api);
        let stop = CancellationToken::new();
        assert!(a.acquire(&stop).await);
        let s2 = stop.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(5)).await;
            s2.cancel();
        });
        assert_eq!(a.renew(&stop).await, LeadingEnded::Stopped);
        assert_eq!(api.spec().holder_identity.as_deref(), Some(""));
    }

    #[test]
    fn identity_shape() {
        let id = identity();
        let (host, uuid) = id.rsplit_once('_').unwrap();
        assert!(!host.is_empty());
        assert_eq!(uuid.len(), 36);
        assert_eq!(&uuid[14..15], "4");
    }
}
