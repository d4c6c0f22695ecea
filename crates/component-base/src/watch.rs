//! Watches as the daemons consume them: a backoff that comes back quickly after an API server
//! restart, and a driver that turns a watcher stream into upserts and removals.

use std::borrow::Cow;
use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt as _;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource};
use kube::runtime::WatchStreamExt as _;
use kube::runtime::watcher::{self, Event};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;

use crate::key::ObjectKey;
use crate::store::Reflect;

pub use crate::store::WatchEnded;

/// The key of a watched object.
pub fn key_of<K: kube::Resource>(o: &K) -> ObjectKey {
    ObjectKey::of(o.meta())
}

/// A watched object kept compact until its consumer decodes it: its key fields, and the
/// object as JSON text without `metadata.managedFields` (which no daemon reads).
///
/// kube's list type buffers a whole page (it flattens its type fields), and a page decoded as
/// `DynamicObject`s, JSON values held per page, was 17 MiB for 100 bindings of 10 clusters: 35
/// times their text. Kept as text, a page is about its wire size; each object is decoded
/// once more, alone, when it is handed on.
///
/// The text is taken as serde_json's `RawValue`, which is scanned without recursion, and only
/// the top level and `metadata` are split into fields: an object nested deeper than
/// serde_json's recursion limit (the API server keeps member statuses of any depth in a
/// binding) passes through the list and the watch like any other, and its consumer decodes
/// what it needs of it.
#[derive(Clone, Debug)]
pub struct RawObject {
    metadata: ObjectMeta,
    json: Box<str>,
}

impl RawObject {
    /// The object as JSON text.
    pub fn json(&self) -> &str {
        &self.json
    }

    /// The object from its JSON text (an object whose top level and `metadata` are objects).
    pub fn from_json(text: &str) -> serde_json::Result<Self> {
        let mut metadata = ObjectMeta::default();
        let mut json = String::with_capacity(text.len());
        json.push('{');
        let top: Entries<'_> = serde_json::from_str(text)?;
        for (i, (key, value)) in top.0.iter().enumerate() {
            if i > 0 {
                json.push(',');
            }
            json.push_str(&serde_json::to_string(key)?);
            json.push(':');
            if key != "metadata" {
                json.push_str(value.get());
                continue;
            }
            let meta: Entries<'_> = serde_json::from_str(value.get())?;
            json.push('{');
            let mut first = true;
            for (k, v) in &meta.0 {
                let text = || {
                    serde_json::from_str::<Option<String>>(v.get())
                        .ok()
                        .flatten()
                };
                match k.as_str() {
                    "managedFields" => continue,
                    "name" => metadata.name = text(),
                    "namespace" => metadata.namespace = text(),
                    "resourceVersion" => metadata.resource_version = text(),
                    "uid" => metadata.uid = text(),
                    _ => {}
                }
                if !first {
                    json.push(',');
                }
                first = false;
                json.push_str(&serde_json::to_string(k)?);
                json.push(':');
                json.push_str(v.get());
            }
            json.push('}');
        }
        json.push('}');
        Ok(RawObject {
            metadata,
            json: json.into_boxed_str(),
        })
    }
}

/// The fields of one JSON object in order, each value as its raw text.
struct Entries<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for Entries<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Fields;
        impl<'de> serde::de::Visitor<'de> for Fields {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(Fields)
    }
}

impl<'de> Deserialize<'de> for RawObject {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(d)?;
        RawObject::from_json(raw.get()).map_err(serde::de::Error::custom)
    }
}

impl kube::Resource for RawObject {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Objects per page of a watch's list. client-go pages by 500; kube decodes a whole page at
/// once (see [`RawObject`]), so 100 keeps that transient at a fifth for a few more list
/// requests at start and on relists.
pub const LIST_PAGE_SIZE: u32 = 100;

/// The watcher configuration of [`watch_all`]: the defaults with [`LIST_PAGE_SIZE`].
pub fn list_config() -> watcher::Config {
    watcher::Config::default().page_size(LIST_PAGE_SIZE)
}

/// Watches every object of `resource` (all namespaces) with [`WatchBackoff`] into `cache`,
/// driven by [`drive`] (each object handed on as its text, decoded by the cache, so that one
/// malformed object costs only itself). The cache is told when the first list is complete
/// ([`Reflect::synced`]); the task runs until aborted.
pub fn watch_all<C>(
    client: kube::Client,
    resource: &ApiResource,
    cache: C,
) -> tokio::task::JoinHandle<()>
where
    C: Reflect<RawObject> + Send + 'static,
{
    let api: Api<RawObject> = Api::all_with(client, resource);
    let what = resource.plural.clone();
    tokio::spawn(async move {
        let stream = watcher::watcher(api, list_config()).backoff(WatchBackoff::default());
        drive(stream, &what, cache).await;
    })
}

/// Waits for `ready` (the daemon's stores), failing when one of `watches` ends first (a watch
/// task that panicked would otherwise leave its cache unready for good).
pub async fn until_ready(
    ready: impl std::future::Future<Output = Result<(), WatchEnded>>,
    watches: &mut [tokio::task::JoinHandle<()>],
) -> Result<(), WatchEnded> {
    if watches.is_empty() {
        return ready.await;
    }
    tokio::select! {
        r = ready => r,
        _ = futures::future::select_all(watches.iter_mut()) => Err(WatchEnded),
    }
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

/// Applies a watcher stream to `cache`: a relist's objects as they arrive (not held until the
/// list is complete, next to the cache's own copies), then what the cache holds and the list
/// did not have is deleted. Tells the cache after each complete list ([`Reflect::synced`]).
pub async fn drive<K: kube::Resource, C: Reflect<K>>(
    stream: impl futures::Stream<Item = Result<Event<K>, watcher::Error>>,
    what: &str,
    mut cache: C,
) {
    futures::pin_mut!(stream);
    // Keys of the list in progress.
    let mut listing: HashSet<ObjectKey> = HashSet::new();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(Event::Init) => listing.clear(),
            Ok(Event::InitApply(o)) => {
                listing.insert(key_of(&o));
                cache.upsert(o);
            }
            Ok(Event::InitDone) => {
                for gone in cache.held().into_iter().filter(|k| !listing.contains(k)) {
                    cache.delete(&gone);
                }
                listing = HashSet::new();
                cache.synced();
            }
            Ok(Event::Apply(o)) => cache.upsert(o),
            Ok(Event::Delete(o)) => cache.delete(&key_of(&o)),
            // A missing RBAC rule is reported once a minute by the client (`forbidden`), not
            // at each retry.
            Err(e) if crate::forbidden::is_forbidden_watch(&e) => {
                tracing::debug!("watch of {what} failed, retrying with backoff: {e}")
            }
            Err(e) => tracing::warn!("watch of {what} failed, retrying with backoff: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// `depth` nested arrays around a number, as JSON text (built iteratively).
    pub(crate) fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    /// A binding whose member status nests 10,000 levels (Go's decoder limit; serde_json's
    /// own is 128) lists and watches like any other, text unchanged, and its neighbours with it.
    #[test]
    fn a_deeply_nested_object_passes_through_the_list_and_the_watch() {
        let deep = format!(
            r#"{{"apiVersion":"work.karmada.io/v1alpha2","kind":"ResourceBinding","metadata":{{"name":"deep","namespace":"d","resourceVersion":"3"}},"status":{{"aggregatedStatus":[{{"clusterName":"m1","status":{{"x":{}}}}}]}}}}"#,
            nested(10_000)
        );
        let plain = r#"{"metadata":{"name":"plain","namespace":"d"}}"#;
        let list = format!(r#"{{"metadata":{{"resourceVersion":"9"}},"items":[{deep},{plain}]}}"#);
        let listed: kube::core::ObjectList<RawObject> = serde_json::from_str(&list).unwrap();
        assert_eq!(listed.items.len(), 2);
        assert_eq!(listed.items[0].json(), deep);
        assert_eq!(key_of(&listed.items[0]).to_string(), "d/deep");
        assert_eq!(key_of(&listed.items[1]).to_string(), "d/plain");
        let event = format!(r#"{{"type":"ADDED","object":{deep}}}"#);
        let watched: kube::core::WatchEvent<RawObject> = serde_json::from_str(&event).unwrap();
        let kube::core::WatchEvent::Added(watched) = watched else {
            panic!("not an addition")
        };
        assert_eq!(watched.json(), deep);
        assert_eq!(watched.metadata.resource_version.as_deref(), Some("3"));
    }

    /// Listed (through kube's list type, which buffers its page) and watched (an event), an
    /// object keeps everything but its managed fields, and its key fields.
    #[test]
    fn raw_objects_keep_the_object_without_managed_fields() {
        let object = serde_json::json!({
            "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7",
                         "uid": "u-1", "labels": {"a": "b"},
                         "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]},
            "spec": {"clusters": [{"name": "m1", "replicas": 2}]},
            "status": {"aggregatedStatus": [{"clusterName": "m1", "status": {"replicas": 2}}]}
        });
        let mut want = object.clone();
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List",
            "metadata": {"resourceVersion": "9", "continue": "x"}, "items": [object.clone()]});
        let listed: kube::core::ObjectList<RawObject> =
            serde_json::from_str(&list.to_string()).unwrap();
        let event = serde_json::json!({"type": "MODIFIED", "object": object});
        let watched: kube::core::WatchEvent<RawObject> =
            serde_json::from_str(&event.to_string()).unwrap();
        let kube::core::WatchEvent::Modified(watched) = watched else {
            panic!("not a modification")
        };
        for o in [&listed.items[0], &watched] {
            assert_eq!(serde_json::from_str::<Value>(o.json()).unwrap(), want);
            assert_eq!(key_of(o).to_string(), "default/web");
            assert_eq!(o.metadata.resource_version.as_deref(), Some("7"));
            assert_eq!(o.metadata.uid.as_deref(), Some("u-1"));
        }
    }

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
    async fn relists_are_diffed_against_what_is_held() {
        use k8s_openapi::api::core::v1::ConfigMap;
        use std::sync::{Arc, Mutex};
        let cm = |name: &str, v: u32| {
            let mut c = ConfigMap::default();
            c.metadata.name = Some(name.into());
            c.data = Some([("v".to_string(), v.to_string())].into());
            c
        };
        let events: Vec<Result<Event<ConfigMap>, watcher::Error>> = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(cm("a", 1))),
            Ok(Event::InitApply(cm("b", 1))),
            Ok(Event::InitDone),
            Ok(Event::Apply(cm("c", 1))),
            Ok(Event::Delete(cm("a", 1))),
            // Disconnect, 410, relist: b changed, c deleted meanwhile, d added.
            Ok(Event::Init),
            Ok(Event::InitApply(cm("b", 2))),
            Ok(Event::InitApply(cm("d", 1))),
            Ok(Event::InitDone),
        ];
        /// Logs each call; holds what it was given.
        struct Log(
            std::collections::BTreeSet<ObjectKey>,
            Arc<Mutex<Vec<String>>>,
        );
        impl Reflect<ConfigMap> for Log {
            fn upsert(&mut self, o: ConfigMap) {
                let (key, v) = (key_of(&o), &o.data.as_ref().unwrap()["v"]);
                self.1.lock().unwrap().push(format!("upsert {key}@{v}"));
                self.0.insert(key);
            }
            fn delete(&mut self, k: &ObjectKey) {
                self.1.lock().unwrap().push(format!("remove {k}"));
                self.0.remove(k);
            }
            fn held(&self) -> Vec<ObjectKey> {
                self.0.iter().cloned().collect()
            }
            fn synced(&mut self) {
                self.1.lock().unwrap().push("synced".into());
            }
        }
        let log = Arc::new(Mutex::new(Vec::new()));
        let cache = Log(Default::default(), log.clone());
        drive(futures::stream::iter(events), "test", cache).await;
        assert_eq!(
            *log.lock().unwrap(),
            [
                "upsert a@1",
                "upsert b@1",
                "synced",
                "upsert c@1",
                "remove a",
                "upsert b@2",
                "upsert d@1",
                "remove c",
                "synced"
            ]
        );
    }
}
