//! A map with a fixed number of entries that forgets the least recently used one to make room.
//!
//! client-go bounds its per-object caches (the event spam filter, aggregator and logger) with
//! LRUs, so that a process seeing an endless stream of distinct objects keeps only the most
//! recent ones; the caches here that play the same roles use this map, with the same sizes.
//! Every operation is `O(log n)`: the recency order is a `BTreeMap` from a use counter to the
//! key, next to the `HashMap` holding the values.

use std::collections::{BTreeMap, HashMap};
use std::hash::Hash;

/// A map of at most `capacity` entries, evicting the least recently used.
#[derive(Debug)]
pub struct Lru<K, V> {
    capacity: usize,
    /// The next use stamp; strictly increasing, so stamps order the uses.
    clock: u64,
    entries: HashMap<K, (V, u64)>,
    /// Keys by the stamp of their last use: the first is the least recently used.
    order: BTreeMap<u64, K>,
}

impl<K: Hash + Eq + Clone, V> Lru<K, V> {
    /// An empty map holding at most `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity: capacity.max(1),
            clock: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// The most entries the map holds.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn stamp(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// The value of `key`, marking it used.
    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let now = self.stamp();
        let (_, used) = self.entries.get_mut(key)?;
        let old = std::mem::replace(used, now);
        if let Some(k) = self.order.remove(&old) {
            self.order.insert(now, k);
        }
        self.entries.get_mut(key).map(|(v, _)| v)
    }

    /// The value of `key`, without marking it used.
    pub fn peek(&self, key: &K) -> Option<&V> {
        self.entries.get(key).map(|(v, _)| v)
    }

    /// Insert or replace `key`, marking it used; when the map is full and `key` is new, the
    /// least recently used entry is dropped first. The value replaced, if any.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        let now = self.stamp();
        if let Some((v, used)) = self.entries.get_mut(&key) {
            let old = std::mem::replace(used, now);
            let previous = std::mem::replace(v, value);
            if let Some(k) = self.order.remove(&old) {
                self.order.insert(now, k);
            }
            return Some(previous);
        }
        while self.entries.len() >= self.capacity {
            if self.pop_oldest().is_none() {
                break;
            }
        }
        self.order.insert(now, key.clone());
        self.entries.insert(key, (value, now));
        None
    }

    /// Remove `key`; its value, if it was there.
    pub fn remove(&mut self, key: &K) -> Option<V> {
        let (v, used) = self.entries.remove(key)?;
        self.order.remove(&used);
        Some(v)
    }

    /// The least recently used entry, without marking it used.
    pub fn oldest(&self) -> Option<(&K, &V)> {
        let (_, k) = self.order.first_key_value()?;
        self.entries.get_key_value(k).map(|(k, (v, _))| (k, v))
    }

    /// Remove and return the least recently used entry.
    pub fn pop_oldest(&mut self) -> Option<(K, V)> {
        let (_, k) = self.order.pop_first()?;
        self.entries.remove(&k).map(|(v, _)| (k, v))
    }

    /// Drop, oldest first, the entries for which `expired` holds, stopping at the first that
    /// does not: cheap expiry for maps whose use order is also their time order.
    pub fn expire_oldest(&mut self, mut expired: impl FnMut(&V) -> bool) {
        while self.oldest().is_some_and(|(_, v)| expired(v)) {
            self.pop_oldest();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_entry_makes_room() {
        let mut m = Lru::new(3);
        m.insert("a", 1);
        m.insert("b", 2);
        m.insert("c", 3);
        // `a` used: `b` is now the oldest.
        *m.get_mut(&"a").unwrap() += 10;
        assert_eq!(m.insert("d", 4), None);
        assert_eq!(m.len(), 3);
        assert_eq!(m.peek(&"b"), None);
        assert_eq!(m.peek(&"a"), Some(&11));
        // Replacing marks used and does not evict.
        assert_eq!(m.insert("c", 30), Some(3));
        assert_eq!(m.len(), 3);
        assert_eq!(m.pop_oldest(), Some(("a", 11)));
        assert_eq!(m.remove(&"d"), Some(4));
        assert_eq!(m.oldest(), Some((&"c", &30)));
        // Peeking does not mark used.
        m.insert("e", 5);
        m.peek(&"c");
        m.insert("f", 6);
        m.insert("g", 7);
        assert_eq!(m.peek(&"c"), None);
    }

    #[test]
    fn many_distinct_keys_stay_within_capacity() {
        let mut m = Lru::new(100);
        for i in 0..10_000 {
            m.insert(i, i);
            assert!(m.len() <= 100);
        }
        assert_eq!(m.len(), 100);
        assert_eq!(m.order.len(), 100, "the recency order is bounded too");
        assert_eq!(m.oldest(), Some((&9_900, &9_900)));
    }

    #[test]
    fn expiry_stops_at_the_first_live_entry() {
        let mut m = Lru::new(10);
        for i in 0..5 {
            m.insert(i, i);
        }
        m.expire_oldest(|v| *v < 3);
        assert_eq!(m.len(), 2);
        assert_eq!(m.oldest(), Some((&3, &3)));
        m.expire_oldest(|_| true);
        assert!(m.is_empty());
    }
}
