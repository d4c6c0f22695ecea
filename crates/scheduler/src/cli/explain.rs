//! `karmada-scheduler explain NAME`: what the daemon would decide for one live binding, and
//! why. The Clusters, the binding and (with `--enable-scheduler-estimator`) the estimator
//! Services come from the control plane, the real estimators are asked, and the daemon's own
//! cycle runs against an in-memory copy of the binding (`karmada_scheduler::explain`; nothing
//! is written to the API server). Printed: whether the daemon would act at all, each
//! cluster's filter verdict with the plugin and reason, the scores, the groups chosen, the
//! replica division with the estimator answers behind it, the patches the daemon would send
//! and its events.
//!
//! ```text
//! karmada-scheduler explain NAME [-n NAMESPACE | --cluster-scoped] [-o text|json] [daemon flags]
//! ```
//!
//! The daemon flags (`--kubeconfig`, `--master`, `--enable-scheduler-estimator`, the
//! `--scheduler-estimator-*` flags, `--feature-gates`, `--plugins`, ...) have the daemon's
//! names, defaults and validation. The daemon's own assumption cache
//! (`SchedulingOvercommitProtection`) lives in its memory and is not seen here.

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use estimator_client::{ConnectionCache, KubeServiceSource, SchedulerEstimator};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::Cluster;
use karmada_api::work::{ClusterResourceBinding, ResourceBinding};
use kube::api::{Api, ApiResource, DynamicObject, ListParams};
use scheduler_core::Estimator;
use scheduler_core::snapshot::Snapshot;

use karmada_scheduler::config::options::{self as daemon_options, Invocation, Options};
use karmada_scheduler::cycle::Cycle;
use karmada_scheduler::cycle::events::MemoryRecorder;
use karmada_scheduler::cycle::memory::MemoryStore;
use karmada_scheduler::cycle::sink::Target;
use karmada_scheduler::explain::explain;
use karmada_scheduler::model::binding::BindingKind;

use crate::cli::simulate::{self, err, out};

const USAGE: &str = "\
Show what karmada-scheduler would decide for one binding of a live control plane, and why.
Nothing is written: the daemon's cycle runs against a copy of the binding in memory.

Usage:
  karmada-scheduler explain NAME [-n NAMESPACE | --cluster-scoped] [-o text|json] [flags]

Flags:
  -n, --namespace NAMESPACE   the ResourceBinding's namespace (default \"default\")
      --cluster-scoped        NAME is a ClusterResourceBinding
  -o, --output FORMAT         text (default) or json
  -h, --help                  this text

Every flag of the daemon is accepted with its name, default and validation (--kubeconfig,
--master, --enable-scheduler-estimator, --scheduler-estimator-*, --feature-gates, --plugins,
...): the estimators are reached through their Services exactly as the daemon reaches them.
";

struct Args {
    name: String,
    namespace: String,
    cluster_scoped: bool,
    json: bool,
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
    let mut namespace = "default".to_string();
    let mut cluster_scoped = false;
    let mut json = false;
    let mut rest = Vec::new();
    let mut i = 1;
    while i < args.len() {
        let arg = args[i].as_str();
        i += 1;
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with('-') => (f, Some(v.to_string())),
            _ => (arg, None),
        };
        let mut value = || super::flag_value(args, &mut i, inline.as_deref(), flag);
        match flag {
            "-h" | "--help" => return Ok(None),
            "-n" | "--namespace" => namespace = value()?,
            "--cluster-scoped" => cluster_scoped = true,
            "-o" | "--output" => {
                json = match value()?.as_str() {
                    "json" => true,
                    "text" => false,
                    other => bail!("unsupported output format {other:?} (text or json)"),
                }
            }
            _ => rest.push(arg.to_string()),
        }
    }
    let daemon = match daemon_options::parse(&rest) {
        Ok(Invocation::Run(o)) => *o,
        Ok(_) => bail!("unexpected arguments {rest:?}"),
        Err(e) => bail!("{}", e.message),
    };
    daemon.validate().map_err(|e| anyhow!("{e}"))?;
    Ok(Some(Args {
        name,
        namespace,
        cluster_scoped,
        json,
        daemon,
    }))
}

/// Run `explain` with the arguments after the subcommand name.
pub fn main(args: &[String]) -> ExitCode {
    let args = match parse_args(args) {
        Ok(Some(a)) => a,
        Ok(None) => {
            out(USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            err(&format!("Error: {e:#}"));
            err("Run 'karmada-scheduler explain --help' for usage.");
            return ExitCode::from(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            err(&format!("Error: {e}"));
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(&args)) {
        Ok(text) => {
            out(&text);
            ExitCode::SUCCESS
        }
        Err(e) => {
            err(&format!("Error: {e:#}"));
            ExitCode::FAILURE
        }
    }
}

async fn run(args: &Args) -> anyhow::Result<String> {
    let opts = &args.daemon;
    let config = component_base::client::rest_config(&opts.kube).await?;
    let client =
        component_base::client::build(config, opts.kube.kube_api_qps, opts.kube.kube_api_burst)?;

    let clusters_api: Api<DynamicObject> =
        Api::all_with(client.clone(), &ApiResource::erase::<Cluster>(&()));
    let mut clusters = Vec::new();
    for o in clusters_api
        .list(&ListParams::default())
        .await
        .context("listing Clusters")?
        .items
    {
        let name = o.metadata.name.clone().unwrap_or_default();
        match karmada_api::from_json_value::<Cluster>(serde_json::to_value(o)?) {
            Ok(c) => clusters.push(c),
            Err(e) => err(&format!(
                "warning: Cluster {name} does not decode, left out: {e}"
            )),
        }
    }
    let (kind, raw) = if args.cluster_scoped {
        let api: Api<DynamicObject> = Api::all_with(
            client.clone(),
            &ApiResource::erase::<ClusterResourceBinding>(&()),
        );
        let o = api
            .get(&args.name)
            .await
            .with_context(|| format!("reading ClusterResourceBinding {}", args.name))?;
        (
            BindingKind::ClusterResourceBinding,
            serde_json::to_value(o)?,
        )
    } else {
        let api: Api<DynamicObject> = Api::namespaced_with(
            client.clone(),
            &args.namespace,
            &ApiResource::erase::<ResourceBinding>(&()),
        );
        let o = api
            .get(&args.name)
            .await
            .with_context(|| format!("reading ResourceBinding {}/{}", args.namespace, args.name))?;
        (BindingKind::ResourceBinding, serde_json::to_value(o)?)
    };

    let accurate: Option<Arc<dyn Estimator>> = if opts.enable_scheduler_estimator {
        let source = Arc::new(
            KubeServiceSource::new(client.clone())
                .with_endpoint_routing(opts.estimator.endpoint_routing),
        );
        let options = karmada_scheduler::config::build::estimator_options(opts);
        let cache = Arc::new(ConnectionCache::new(options.clone(), source));
        for c in &clusters {
            if let Err(e) = cache.ensure(c).await {
                err(&format!(
                    "warning: scheduler-estimator of cluster {}: Service {}/{} port {}: {e}",
                    c.name(),
                    options.service_namespace,
                    options.service_name(c.name()),
                    options.port
                ));
            }
        }
        Some(Arc::new(SchedulerEstimator::new(cache)))
    } else {
        None
    };
    let scheduler = karmada_scheduler::config::build::build_scheduler(opts, accurate)?;
    let snapshot = Snapshot::from_clusters(clusters);

    let store = MemoryStore::default();
    let events = MemoryRecorder::default();
    let cycle = Cycle {
        scheduler: &scheduler,
        writer: &store,
        events: &events,
        workload_index: None,
        own_writes: None,
        assumptions: None,
        want_trace: true,
    };
    let binding = store
        .insert(kind, raw.clone())
        .map_err(|e| anyhow!("{}: {}", e.key.describe(), e.error))?;
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let e = explain(
        &cycle,
        &store,
        &events,
        &binding,
        &snapshot,
        now,
        &opts.scheduler_name,
    )
    .await;
    if args.json {
        return Ok(serde_json::to_string_pretty(&e.to_json(&binding))? + "\n");
    }
    let b = simulate::Binding {
        kind: binding.kind.kind(),
        namespace: binding.namespace().to_string(),
        name: binding.name().to_string(),
        spec: binding.spec.clone(),
        status: binding.status.clone(),
        raw,
    };
    let mut text = String::new();
    simulate::render(&mut text, &b, &e);
    text.push_str("  the daemon would write:\n");
    for (target, patch) in &e.patches {
        let t = if *target == Target::Main {
            "main"
        } else {
            "status"
        };
        text.push_str(&format!("    {t} {patch}\n"));
    }
    if e.patches.is_empty() {
        text.push_str("    nothing\n");
    }
    text.push_str("  events:\n");
    for ev in &e.events {
        text.push_str(&format!(
            "    {} {} on {} {}: {}\n",
            if ev.warning { "Warning" } else { "Normal" },
            ev.reason,
            ev.involved.kind.as_deref().unwrap_or_default(),
            ev.involved.name.as_deref().unwrap_or_default(),
            ev.message
        ));
    }
    Ok(text)
}
