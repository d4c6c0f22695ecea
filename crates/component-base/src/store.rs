//! Reflector-style caches, after kube-runtime's reflector: one [`Writer`] owns every change of
//! a cache (`&mut self`), readers hold a [`Store`], a cheap clone with no mutators. A watch
//! feeds its cache through [`Reflect`] ([`crate::watch::drive`]), which after a relist tells
//! what it holds: what the list no longer has is deleted.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, RwLock};

use crate::key::ObjectKey;

/// What one watch writes: every object added or changed (listed or live), every key deleted.
pub trait Reflect<O> {
    fn upsert(&mut self, o: O);
    fn delete(&mut self, key: &ObjectKey);
    /// The keys of what it holds of this watch.
    fn held(&self) -> Vec<ObjectKey>;
}

/// The read-only side of a cache.
#[derive(Clone)]
pub struct Store<K, V>(Arc<RwLock<HashMap<K, V>>>);

impl<K: Hash + Eq, V: Clone> Store<K, V> {
    pub fn get(&self, key: &K) -> Option<V> {
        self.read(|m| m.get(key).cloned())
    }

    /// Read the whole cache under its lock (scans).
    pub fn read<R>(&self, f: impl FnOnce(&HashMap<K, V>) -> R) -> R {
        f(&self.0.read().unwrap_or_else(|p| p.into_inner()))
    }
}

/// The one writer of a cache (not `Clone`): whoever owns it owns every change.
pub struct Writer<K, V>(Store<K, V>);

impl<K, V> Default for Writer<K, V> {
    fn default() -> Self {
        Self(Store(Arc::default()))
    }
}

impl<K: Hash + Eq + Clone, V: Clone> Writer<K, V> {
    /// A read-only handle on what this writer writes.
    pub fn store(&self) -> Store<K, V> {
        self.0.clone()
    }

    /// Change the cache under its lock.
    pub fn write<R>(&mut self, f: impl FnOnce(&mut HashMap<K, V>) -> R) -> R {
        f(&mut (self.0).0.write().unwrap_or_else(|p| p.into_inner()))
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
        self.0
            .read(|m| m.keys().filter(|k| pick(k)).cloned().collect())
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
