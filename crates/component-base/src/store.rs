//! Reflector-style caches, after kube-runtime's reflector: one [`Writer`] owns every change of
//! a cache (`&mut self`), readers hold a [`Store`], a cheap clone with no mutators, which also
//! says whether the cache is ready (its first complete list is in). A watch feeds its cache
//! through [`Reflect`] ([`crate::watch::drive`]), which after a relist tells what it holds:
//! what the list no longer has is deleted.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::watch;

use crate::key::ObjectKey;

/// What one watch writes: every object added or changed (listed or live), every key deleted.
pub trait Reflect<O> {
    fn upsert(&mut self, o: O);
    fn delete(&mut self, key: &ObjectKey);
    /// The keys of what it holds of this watch.
    fn held(&self) -> Vec<ObjectKey>;
    /// The watch's first complete list is in (called once it is applied).
    fn synced(&mut self) {}
}

/// A cache's writer went away before the cache was ready: its watch ended.
#[derive(Debug, thiserror::Error)]
#[error("a watch ended before syncing")]
pub struct WatchEnded;

/// The read-only side of a cache.
pub struct Store<K, V> {
    map: Arc<RwLock<HashMap<K, V>>>,
    ready: watch::Receiver<bool>,
}

impl<K, V> Clone for Store<K, V> {
    fn clone(&self) -> Self {
        Self {
            map: self.map.clone(),
            ready: self.ready.clone(),
        }
    }
}

impl<K, V> Store<K, V> {
    /// Whether the cache holds a complete list (its writer was told [`Writer::mark_ready`]).
    pub fn is_ready(&self) -> bool {
        *self.ready.borrow()
    }

    /// Resolves once the cache is ready; fails if its writer is dropped first.
    pub async fn wait_until_ready(&self) -> Result<(), WatchEnded> {
        let mut ready = self.ready.clone();
        ready
            .wait_for(|r| *r)
            .await
            .map(|_| ())
            .map_err(|_| WatchEnded)
    }
}

impl<K: Hash + Eq, V: Clone> Store<K, V> {
    pub fn get(&self, key: &K) -> Option<V> {
        self.read(|m| m.get(key).cloned())
    }

    /// Read the whole cache under its lock (scans).
    pub fn read<R>(&self, f: impl FnOnce(&HashMap<K, V>) -> R) -> R {
        f(&self.map.read().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The one writer of a cache (not `Clone`): whoever owns it owns every change.
pub struct Writer<K, V> {
    store: Store<K, V>,
    ready: watch::Sender<bool>,
}

impl<K, V> Default for Writer<K, V> {
    fn default() -> Self {
        let (ready, rx) = watch::channel(false);
        Self {
            store: Store {
                map: Arc::default(),
                ready: rx,
            },
            ready,
        }
    }
}

impl<K, V> Writer<K, V> {
    /// The cache holds a complete list: its stores are ready from now on.
    pub fn mark_ready(&mut self) {
        self.ready.send_replace(true);
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Writer<K, V> {
    /// A read-only handle on what this writer writes.
    pub fn store(&self) -> Store<K, V> {
        self.store.clone()
    }

    /// Change the cache under its lock.
    pub fn write<R>(&mut self, f: impl FnOnce(&mut HashMap<K, V>) -> R) -> R {
        f(&mut self.store.map.write().unwrap_or_else(|p| p.into_inner()))
    }

    /// Insert or replace; the previous value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        self.write(|m| m.insert(key, value))
    }

    pub fn remove(&mut self, key: &K) -> Option<V> {
        self.write(|m| m.remove(key))
    }

    /// The keys held that `pick` accepts.
    pub fn keys(&self, pick: impl Fn(&K) -> bool) -> Vec<K> {
        (self.store).read(|m| m.keys().filter(|k| pick(k)).cloned().collect())
    }
}

/// A cache of whole objects, as the watch delivers them.
impl<O: kube::Resource> Reflect<O> for Writer<ObjectKey, Arc<O>> {
    fn upsert(&mut self, o: O) {
        self.insert(ObjectKey::of(o.meta()), Arc::new(o));
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.remove(key);
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.keys(|_| true)
    }

    fn synced(&mut self) {
        self.mark_ready();
    }
}

/// A writer shared by its watch and its owner's own writes: each change under the lock.
impl<O, R: Reflect<O>> Reflect<O> for Arc<Mutex<R>> {
    fn upsert(&mut self, o: O) {
        self.lock().unwrap_or_else(|p| p.into_inner()).upsert(o)
    }

    fn delete(&mut self, key: &ObjectKey) {
        self.lock().unwrap_or_else(|p| p.into_inner()).delete(key)
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.lock().unwrap_or_else(|p| p.into_inner()).held()
    }

    fn synced(&mut self) {
        self.lock().unwrap_or_else(|p| p.into_inner()).synced()
    }
}

/// A watch whose consumer keeps no cache and only reacts: `changed` is told what `of` reads
/// from every object added, changed or deleted, held here for deletions and relists.
pub struct OnChange<Q, F, C>(HashMap<ObjectKey, Q>, F, C);

impl<Q, F, C> OnChange<Q, F, C> {
    pub fn new(of: F, changed: C) -> Self {
        Self(HashMap::new(), of, changed)
    }
}

impl<O: kube::Resource, Q, F: Fn(&O) -> Q, C: FnMut(&Q)> Reflect<O> for OnChange<Q, F, C> {
    fn upsert(&mut self, o: O) {
        let q = (self.1)(&o);
        (self.2)(&q);
        self.0.insert(ObjectKey::of(o.meta()), q);
    }

    fn delete(&mut self, key: &ObjectKey) {
        if let Some(q) = self.0.remove(key) {
            (self.2)(&q);
        }
    }

    fn held(&self) -> Vec<ObjectKey> {
        self.0.keys().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A store is ready once its writer says the first list is in, and stays so; a writer
    /// dropped before that fails the wait instead of leaving it hanging.
    #[tokio::test]
    async fn readiness_follows_the_writer() {
        let mut writer = Writer::<ObjectKey, u32>::default();
        let store = writer.store();
        assert!(!store.is_ready());
        let waiting = tokio::spawn({
            let store = store.clone();
            async move { store.wait_until_ready().await }
        });
        writer.insert(ObjectKey::new("", "a"), 1);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        writer.mark_ready();
        waiting.await.unwrap().unwrap();
        assert!(store.is_ready() && writer.store().is_ready());

        let gone = Writer::<ObjectKey, u32>::default();
        let orphan = gone.store();
        drop(gone);
        assert!(orphan.wait_until_ready().await.is_err());
    }
}
