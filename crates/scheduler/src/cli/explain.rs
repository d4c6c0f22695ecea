//! `karmada-scheduler explain NAME`: what the daemon would decide for one live binding, and
//! why. The Clusters, the binding, (with `--enable-scheduler-estimator`) the estimator
//! Services and (with the `WorkloadAffinity` gate) the ResourceBindings the workload group
//! filters read come from the control plane, the real estimators are asked, and the daemon's
//! own cycle runs against an in-memory copy of the binding
//! (`karmada_scheduler::explain::ReadOnly`; nothing is written to the API server). Printed:
//! whether the daemon would act at all, each cluster's filter verdict with the plugin and
//! reason, the scores, the groups chosen, the replica division with the estimator answers
//! behind it, the patches the daemon would send and its events.
//!
//! The flags are [`FLAGS`] and every daemon flag, with the daemon's names, defaults and
//! validation (`--help` lists them). The daemon's own assumption cache
//! (`SchedulingOvercommitProtection`) lives in its memory and is not seen here: the attempt
//! starts from an empty one.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use component_base::flags::{self, FlagDef, Kind, flag};
use component_base::watch::RawObject;
use component_base::{goparse, setter};
use estimator_client::{ConnectionCache, SchedulerEstimator};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::Cluster;
use karmada_api::work::{ClusterResourceBinding, ResourceBinding};
use kube::api::{Api, ApiResource, ListParams};
use scheduler_core::Estimator;
use scheduler_core::snapshot::Snapshot;

use karmada_scheduler::config::build::{build_scheduler, estimator_options};
use karmada_scheduler::config::options::Options;
use karmada_scheduler::explain::{ReadOnly, render};
use karmada_scheduler::model::binding::{BindingKey, BindingKind};

use super::{Subcommand, err};

/// The `--help` section of explain's own flags.
const SECTION: &str = "Explain";

/// explain's own flags, with their setters; [`COMMAND`] adds every daemon flag.
static FLAGS: &[FlagDef] = &[
    flag(
        SECTION,
        "namespace",
        Kind::Str,
        "default",
        "the ResourceBinding's namespace",
    )
    .short('n')
    .set(setter!(Flags, |o, v| o.namespace = v.to_string())),
    flag(
        SECTION,
        "cluster-scoped",
        Kind::Bool,
        "false",
        "NAME is a ClusterResourceBinding",
    )
    .set(setter!(Flags, |o, v| o.cluster_scoped = goparse::parse_bool(v)?)),
    flag(SECTION, "output", Kind::Str, "text", "text or json")
        .short('o')
        .set(setter!(Flags, |o, v| {
            o.json = match v {
                "json" => true,
                "text" => false,
                other => {
                    return Err(format!(
                        "unsupported output format {other:?} (text or json)"
                    ));
                }
            }
        })),
];

/// explain's command line.
pub(crate) static COMMAND: Subcommand = Subcommand {
    name: "explain",
    about: "\
Show what karmada-scheduler would decide for one binding of a live control plane, and why.
Nothing is written: the daemon's cycle runs against a copy of the binding in memory.
",
    synopsis: "explain NAME [-n NAMESPACE | --cluster-scoped] [-o text|json] [flags]",
    own: FLAGS,
    takes: |_| true,
    notes: "\
Every flag of the daemon is taken with its name, default and validation: the estimators are
reached through their Services exactly as the daemon reaches them, and with
--feature-gates=WorkloadAffinity=true the workload group filters read the control plane's
ResourceBindings, as the daemon's read its cache.
",
};

/// explain's own flags' values.
#[derive(Clone, Debug)]
struct Flags {
    namespace: String,
    cluster_scoped: bool,
    json: bool,
}

impl Default for Flags {
    /// The defaults of [`FLAGS`].
    fn default() -> Self {
        let blank = Self {
            namespace: String::new(),
            cluster_scoped: false,
            json: false,
        };
        flags::with_defaults(blank, &[FLAGS])
    }
}

struct Args {
    name: String,
    flags: Flags,
    daemon: Options,
}

fn parse_args(args: &[String]) -> anyhow::Result<Option<Args>> {
    if args.is_empty() || matches!(args[0].as_str(), "-h" | "--help") {
        return Ok(None);
    }
    let name = args[0].clone();
    if name.starts_with('-') {
        bail!("the binding's NAME comes first");
    }
    let Some(parsed) = COMMAND.parse(Flags::default(), &args[1..])? else {
        return Ok(None);
    };
    if let Some(other) = parsed.positionals.first() {
        bail!("unexpected argument {other:?}");
    }
    Ok(Some(Args {
        name,
        flags: parsed.own,
        daemon: parsed.daemon,
    }))
}

/// Run `explain` with the arguments after the subcommand name.
pub fn main(args: &[String]) -> ExitCode {
    COMMAND.main(parse_args(args), |args| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(run(&args))
    })
}

/// An object as JSON, its containers deeper than [`karmada_api::SHALLOW_DEPTH`] levels left
/// out (null): a member status nested past what a JSON value holds does not stop the
/// explanation, which never reads it.
fn json_of(o: &RawObject) -> serde_json::Value {
    karmada_api::shallow_value(o.json(), karmada_api::SHALLOW_DEPTH).unwrap_or_default()
}

/// Every object `api` lists, as JSON ([`json_of`]).
async fn list(api: &Api<RawObject>, what: &str) -> anyhow::Result<Vec<serde_json::Value>> {
    Ok(api
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing {what}"))?
        .items
        .iter()
        .map(json_of)
        .collect())
}

async fn run(args: &Args) -> anyhow::Result<String> {
    let opts = &args.daemon;
    let config = component_base::client::rest_config(&opts.common.kube).await?;
    let client = component_base::client::build(
        config,
        opts.common.kube.kube_api_qps,
        opts.common.kube.kube_api_burst,
    )?;

    let clusters_api: Api<RawObject> =
        Api::all_with(client.clone(), &ApiResource::erase::<Cluster>(&()));
    let mut clusters = Vec::new();
    for o in list(&clusters_api, "Clusters").await? {
        let name = o
            .pointer("/metadata/name")
            .and_then(|n| n.as_str())
            .unwrap_or_default()
            .to_string();
        match karmada_api::from_json_value::<Cluster>(o) {
            Ok(c) => clusters.push(c),
            Err(e) => err(&format!(
                "warning: Cluster {name} does not decode, left out: {e}"
            )),
        }
    }
    let rbs = ApiResource::erase::<ResourceBinding>(&());
    let (kind, raw) = if args.flags.cluster_scoped {
        let api: Api<RawObject> = Api::all_with(
            client.clone(),
            &ApiResource::erase::<ClusterResourceBinding>(&()),
        );
        let o = api
            .get(&args.name)
            .await
            .with_context(|| format!("reading ClusterResourceBinding {}", args.name))?;
        (BindingKind::ClusterResourceBinding, json_of(&o))
    } else {
        let ns = &args.flags.namespace;
        let api: Api<RawObject> = Api::namespaced_with(client.clone(), ns, &rbs);
        let o = api
            .get(&args.name)
            .await
            .with_context(|| format!("reading ResourceBinding {ns}/{}", args.name))?;
        (BindingKind::ResourceBinding, json_of(&o))
    };

    let accurate: Option<Arc<dyn Estimator>> = if opts.enable_scheduler_estimator {
        let cache = Arc::new(ConnectionCache::over_api(
            estimator_options(opts),
            client.clone(),
        ));
        for warning in cache.ensure_all(&clusters).await {
            err(&format!("warning: {warning}"));
        }
        Some(Arc::new(SchedulerEstimator::new(cache)))
    } else {
        None
    };
    let scheduler = build_scheduler(opts, accurate)?;
    let snapshot = Snapshot::from_clusters(clusters);

    let run = ReadOnly::new(&scheduler, &opts.scheduler_name, true);
    let binding = run
        .store
        .insert(kind, raw)
        .map_err(|e| anyhow!("{}: {}", e.key.describe(), e.error))?;
    // The workload group filters read every ResourceBinding, as the daemon's read its cache
    // (one that does not decode is left out, as there).
    if run.reads_peers() {
        let all: Api<RawObject> = Api::all_with(client.clone(), &rbs);
        for peer in list(&all, "ResourceBindings").await? {
            let field = |f: &str| {
                peer.pointer(&format!("/metadata/{f}"))
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string()
            };
            if BindingKey::rb(&field("namespace"), &field("name")) != binding.key() {
                let _ = run.store.insert(BindingKind::ResourceBinding, peer);
            }
        }
    }
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let e = run.explain(&binding, &snapshot, now).await;
    if args.flags.json {
        return Ok(serde_json::to_string_pretty(&e.to_json(&binding))? + "\n");
    }
    Ok(render::explanation(&binding, &e))
}
