//! `karmada-scheduler simulate`: one scheduling pass over objects read from files.
//!
//! Clusters, ResourceBindings and ClusterResourceBindings are read from YAML/JSON files and every
//! binding is scheduled, in input order, against the same clusters, by the daemon's own
//! cycle writing to memory (`karmada_scheduler::cycle::memory`). The contract (flags, JSON shape, the stub
//! estimator's all-or-nothing rule) is written down in `docs/simulate.md`:
//!
//! ```text
//! karmada-scheduler simulate -f PATH [-f PATH ...] [--estimator-replicas CLUSTER=N ...]
//!     [--plugins LIST] [--enable-empty-workload-propagation] [--feature-gates LIST]
//!     [--scheduler-name NAME] [-o json|yaml|explain]
//!     [--enable-scheduler-estimator [--scheduler-estimator-* ...]]
//! ```
//!
//! With `--enable-scheduler-estimator`, the real estimators are dialled: their addresses come
//! from the Services (and EndpointSlices) in the input files, resolved by `estimator-client`
//! exactly as the daemon resolves them from the API server, so a placement can be tried
//! offline against live estimators.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use estimator_client::{
    ConnectionCache, EstimatorOptions, InMemoryServiceSource, SchedulerEstimator,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use karmada_api::cluster::Cluster;
use karmada_api::work::{
    ClusterResourceBinding, ResourceBinding, ResourceBindingSpec, ResourceBindingStatus,
    TargetCluster,
};
use scheduler_core::EstimatorError;
use scheduler_core::estimator::{BoxFuture, EstimateRequest, Estimates, Estimator};
use scheduler_core::features::FeatureGates;
use scheduler_core::general::GeneralEstimator;
use scheduler_core::schedule::{ScheduleConfig, Scheduler};
use scheduler_core::snapshot::Snapshot;
use scheduler_core::trace::{AttemptTrace, Verdict};
use serde::Serialize;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_scheduler::config::options::{self as daemon_options, Invocation};
use karmada_scheduler::cycle::Cycle;
use karmada_scheduler::cycle::assume::Assumptions;
use karmada_scheduler::cycle::events::MemoryRecorder;
use karmada_scheduler::cycle::memory::MemoryStore;
use karmada_scheduler::explain::{Explanation, explain};
use karmada_scheduler::model::binding::BindingKind;

const USAGE: &str = "\
Run one scheduling pass over objects read from files and print where each binding lands.

Usage:
  karmada-scheduler simulate -f PATH [-f PATH ...] [flags]

Flags:
  -f, --filename PATH                       a YAML/JSON file (several documents allowed), a
                                            directory (its *.yaml, *.yml and *.json files, sorted),
                                            or - for stdin; repeatable
      --estimator-replicas CLUSTER=N        stand-in for a connected scheduler-estimator that
                                            answers N for CLUSTER; repeatable. If a feasible
                                            cluster has no entry, all entries are ignored for that
                                            binding (upstream discards a partial answer)
      --plugins LIST                        --plugins of the daemon (default *)
      --enable-empty-workload-propagation   --enable-empty-workload-propagation of the daemon
      --feature-gates LIST                  --feature-gates of the daemon (Name=bool,...)
      --scheduler-name NAME                 --scheduler-name of the daemon (default
                                            default-scheduler): the daemon never queues a
                                            binding for another scheduler name, and the
                                            decision says so (the attempt is made anyway)
  -o, --output FORMAT                       json (default), yaml or explain
  -h, --help                                this text

Scheduler-estimator flags (those of the daemon, same names, defaults and value syntax):
      --enable-scheduler-estimator          dial the real estimators of the clusters, found
                                            through the Services (and EndpointSlices) of the
                                            input files; their answers join the general
                                            estimator's (and --estimator-replicas')
      --scheduler-estimator-timeout DURATION            (default 3s)
      --scheduler-estimator-service-namespace STRING    (default \"karmada-system\")
      --scheduler-estimator-service-prefix STRING       (default \"karmada-scheduler-estimator\")
      --scheduler-estimator-port INT                    (default 10352)
      --scheduler-estimator-cert-file, --scheduler-estimator-key-file,
      --scheduler-estimator-ca-file FILE
      --insecure-skip-estimator-verify
      --disable-scheduler-estimator-in-pull-mode
      --scheduler-estimator-tls-server-name STRING, --scheduler-estimator-endpoint-routing,
      --scheduler-estimator-failure-policy all|per-cluster   (this scheduler's own flags)
  Estimators that cannot be resolved or dialled are reported on stderr (Service, port,
  problem); as upstream (with the default failure policy), a binding asking such a cluster
  ignores all of that estimator's answers.

Kinds read: Cluster, ResourceBinding, ClusterResourceBinding (and Service and EndpointSlice,
for the estimator resolver; without metadata.namespace they are taken to be in
--scheduler-estimator-service-namespace); other kinds are skipped with a warning. Bindings are scheduled in
input order, each against the same clusters; logs and warnings go to stderr.
";

/// The simulate subcommand's flags.
#[derive(Clone, Debug, Default)]
struct Options {
    files: Vec<String>,
    estimator_replicas: BTreeMap<String, i32>,
    plugins: Option<Vec<String>>,
    enable_empty_workload_propagation: bool,
    gates: FeatureGates,
    /// The daemon's `--scheduler-name`, for its event filter.
    scheduler_name: String,
    output: OutputFormat,
    /// The daemon's estimator flags as given, handed to its own parser (see
    /// [`estimator_flag`]).
    estimator_flags: Vec<String>,
    /// `Some` with `--enable-scheduler-estimator`: the estimator client's options.
    estimator: Option<EstimatorOptions>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum OutputFormat {
    #[default]
    Json,
    Yaml,
    Explain,
}

/// Write to stdout; a closed pipe (`simulate ... | head`) ends the output quietly instead of
/// panicking.
pub(crate) fn out(text: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(text.as_bytes()).and_then(|()| o.flush());
}

/// A line on stderr, never a panic when stderr is closed.
pub(crate) fn err(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// Run `simulate` with the arguments after the subcommand name.
pub fn main(args: &[String]) -> ExitCode {
    let opts = match parse_args(args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            out(USAGE);
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            err(&format!("Error: {e:#}"));
            err("Run 'karmada-scheduler simulate --help' for usage.");
            return ExitCode::from(2);
        }
    };
    match run(&opts) {
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

fn parse_args(args: &[String]) -> anyhow::Result<Option<Options>> {
    let mut o = Options {
        scheduler_name: daemon_options::DEFAULT_SCHEDULER_NAME.to_string(),
        ..Options::default()
    };
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        i += 1;
        if arg == "-h" || arg == "--help" {
            return Ok(None);
        }
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) if n.starts_with('-') => (n, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        // Boolean flag: takes `=value` only.
        if name == "--enable-empty-workload-propagation" {
            o.enable_empty_workload_propagation = match inline.as_deref() {
                None | Some("true") | Some("1") | Some("t") | Some("T") | Some("TRUE")
                | Some("True") => true,
                Some("false") | Some("0") | Some("f") | Some("F") | Some("FALSE")
                | Some("False") => false,
                Some(v) => bail!("invalid argument {v:?} for {name}: expected a boolean"),
            };
            continue;
        }
        if let Some((flag, boolean)) = estimator_flag(name) {
            let v = match inline {
                None if boolean => "true".to_string(),
                inline => super::flag_value(args, &mut i, inline.as_deref(), name)?,
            };
            o.estimator_flags.push(format!("--{flag}={v}"));
            continue;
        }
        let mut value = || super::flag_value(args, &mut i, inline.as_deref(), name);
        match name {
            "-f" | "--filename" => o.files.push(value()?),
            "--estimator-replicas" => {
                for item in value()?.split(',').filter(|s| !s.is_empty()) {
                    let (cluster, n) = item.split_once('=').ok_or_else(|| {
                        anyhow!("--estimator-replicas {item:?}: expected CLUSTER=N")
                    })?;
                    let n: i32 = n.trim().parse().with_context(|| {
                        format!("--estimator-replicas {item:?}: N is not a 32-bit integer")
                    })?;
                    o.estimator_replicas.insert(cluster.trim().to_string(), n);
                }
            }
            "--plugins" => {
                let v = value()?;
                o.plugins
                    .get_or_insert_with(Vec::new)
                    .extend(v.split(',').map(str::to_string));
            }
            "--feature-gates" => {
                let v = value()?;
                o.gates
                    .set(&v)
                    .map_err(|e| anyhow!("invalid argument {v:?} for --feature-gates: {e}"))?;
            }
            "--scheduler-name" => {
                o.scheduler_name = value()?;
                if o.scheduler_name.is_empty() {
                    bail!("--scheduler-name: should not be empty");
                }
            }
            "-o" | "--output" => {
                o.output = match value()?.as_str() {
                    "json" => OutputFormat::Json,
                    "yaml" => OutputFormat::Yaml,
                    "explain" => OutputFormat::Explain,
                    other => bail!("unsupported output format {other:?} (json, yaml or explain)"),
                }
            }
            other if other.starts_with('-') && other != "-" => bail!("unknown flag: {other}"),
            other => bail!("unexpected argument {other:?}"),
        }
    }
    if o.files.is_empty() {
        bail!("at least one -f PATH is required");
    }
    o.estimator = estimator_options(&o.estimator_flags)?;
    Ok(Some(o))
}

/// Whether `name` (as typed, `--x`) is one of the daemon's estimator flags, with its
/// normalised name and whether it is a boolean. The daemon's flag table decides, so flags it
/// gains later (our extensions) are accepted here too.
fn estimator_flag(name: &str) -> Option<(String, bool)> {
    let flag = name.strip_prefix("--")?.replace('_', "-");
    if !flag.contains("estimator") || !daemon_options::flag_names().contains(flag.as_str()) {
        return None;
    }
    // pflag lets only booleans stand alone; ask the daemon's parser which kind this is.
    let boolean = daemon_options::parse(&[format!("--{flag}")]).is_ok();
    Some((flag, boolean))
}

/// Parses and validates the estimator flags with the daemon's own parser (Go durations and
/// integers, pflag booleans, the reference's validation messages) and maps them as the daemon
/// does. `None` unless `--enable-scheduler-estimator` is set.
fn estimator_options(flags: &[String]) -> anyhow::Result<Option<EstimatorOptions>> {
    let parsed = match daemon_options::parse(flags) {
        Ok(Invocation::Run(o)) => o,
        Ok(_) => bail!("unexpected estimator flags {flags:?}"),
        Err(e) => bail!("{}", e.message),
    };
    parsed.validate().map_err(|e| anyhow!("{e}"))?;
    Ok(parsed
        .enable_scheduler_estimator
        .then(|| karmada_scheduler::config::build::estimator_options(&parsed)))
}

/// Everything read from the input files.
#[derive(Default)]
struct Input {
    clusters: Vec<Cluster>,
    bindings: Vec<Binding>,
    /// For the accurate estimator's in-memory Service source (see [`accurate_estimator`]).
    services: Vec<Service>,
    /// Likewise, for headless estimator Services.
    endpoint_slices: Vec<EndpointSlice>,
}

/// One binding of either kind, with what the output needs.
pub(crate) struct Binding {
    pub(crate) kind: &'static str,
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) spec: ResourceBindingSpec,
    pub(crate) status: ResourceBindingStatus,
    /// The object as read, for the in-memory API server the daemon's cycle writes to.
    pub(crate) raw: serde_json::Value,
}

fn run(opts: &Options) -> anyhow::Result<String> {
    let input = load(&opts.files)?;
    let config = ScheduleConfig {
        enable_empty_workload_propagation: opts.enable_empty_workload_propagation,
        gates: opts.gates.clone(),
    };
    let plugins = opts
        .plugins
        .clone()
        .unwrap_or_else(|| vec!["*".to_string()]);
    let mut scheduler = Scheduler::from_plugins_flag(&plugins, config)?.with_estimator(Arc::new(
        GeneralEstimator::new(opts.gates.customized_cluster_resource_modeling()),
    ));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    if !opts.estimator_replicas.is_empty() {
        scheduler = scheduler.with_estimator(Arc::new(StubEstimator {
            // Both stand for the scheduler-estimator; keep them apart in `-o explain`.
            name: if opts.estimator.is_some() {
                STUB_NAME_BESIDE_REAL
            } else {
                STUB_NAME
            },
            replicas: opts.estimator_replicas.clone(),
        }));
    }
    if let Some(estimator) = &opts.estimator {
        let accurate = runtime.block_on(accurate_estimator(estimator, &input));
        scheduler = scheduler.with_estimator(accurate);
    }
    let snapshot = Snapshot::from_clusters(input.clusters);

    let want_trace = opts.output == OutputFormat::Explain;
    let mut results = Vec::with_capacity(input.bindings.len());
    let mut explained = String::new();
    // With `SchedulingOvercommitProtection`, what each binding gets is assumed for the ones
    // after it, as the daemon's cache assumes what it writes.
    let assumptions = opts
        .gates
        .scheduling_overcommit_protection()
        .then(Assumptions::default);
    // The daemon's own cycle, writing to memory: the decision, the algorithm, the result
    // and status patches and the events are the daemon's.
    let store = MemoryStore::default();
    let events = MemoryRecorder::default();
    let cycle = Cycle {
        scheduler: &scheduler,
        writer: &store,
        events: &events,
        workload_index: None,
        own_writes: None,
        assumptions: assumptions.as_ref(),
        want_trace,
    };
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    for b in &input.bindings {
        let kind = if b.kind == ResourceBinding::KIND {
            BindingKind::ResourceBinding
        } else {
            BindingKind::ClusterResourceBinding
        };
        let binding = store
            .insert(kind, b.raw.clone())
            .map_err(|e| anyhow!("{} {}: {}", b.kind, e.key.describe(), e.error))?;
        let e = runtime.block_on(explain(
            &cycle,
            &store,
            &events,
            &binding,
            &snapshot,
            now.clone(),
            &opts.scheduler_name,
        ));
        let element = to_output(b, &e);
        if want_trace {
            render(&mut explained, b, &e);
        }
        results.push(element);
    }
    Ok(match opts.output {
        OutputFormat::Json => serde_json::to_string_pretty(&results)? + "\n",
        OutputFormat::Yaml => serde_yaml::to_string(&results)?,
        OutputFormat::Explain => explained,
    })
}

/// `--enable-scheduler-estimator`: the daemon's estimator client, resolving estimator Services
/// from the input files instead of an API server. Every cluster is connected up front, as the
/// daemon does on start; failures are reported on stderr and not fatal: a binding that asks
/// such a cluster gets an error from this estimator and scheduler-core ignores all of its
/// answers for that binding (the reference's all-or-nothing merge).
async fn accurate_estimator(options: &EstimatorOptions, input: &Input) -> Arc<dyn Estimator> {
    // Objects written by hand often leave out the namespace: like `kubectl apply -n`, put them
    // in the estimator Service namespace rather than never matching.
    let ns = &options.service_namespace;
    let source = InMemoryServiceSource::with_objects(
        input.services.iter().cloned().map(|mut s| {
            s.metadata.namespace.get_or_insert_with(|| ns.clone());
            s
        }),
        input.endpoint_slices.iter().cloned().map(|mut s| {
            s.metadata.namespace.get_or_insert_with(|| ns.clone());
            s
        }),
    );
    let cache = Arc::new(ConnectionCache::new(options.clone(), Arc::new(source)));
    let connects = input.clusters.iter().map(|c| cache.ensure(c));
    let outcomes = futures::future::join_all(connects).await;
    for (cluster, outcome) in input.clusters.iter().zip(outcomes) {
        let name = cluster.name();
        let service = options.service_name(name);
        match outcome {
            Err(e) => err(&format!(
                "warning: scheduler-estimator of cluster {name}: Service {}/{service} port {}: {e}",
                options.service_namespace, options.port
            )),
            Ok(()) if cache.connection(name).is_none() => err(&format!(
                "warning: scheduler-estimator of cluster {name}: not connected (Pull cluster with --disable-scheduler-estimator-in-pull-mode)"
            )),
            Ok(()) => {}
        }
    }
    Arc::new(SchedulerEstimator::new(cache))
}

/// One element of the output array.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Output {
    pub(crate) kind: &'static str,
    pub(crate) namespace: String,
    pub(crate) name: String,
    pub(crate) result: &'static str,
    pub(crate) clusters: Vec<OutCluster>,
    pub(crate) message: String,
    /// The daemon's decision in words (its event filter's, then its ladder's).
    pub(crate) decision: String,
    /// Whether the daemon would act on the binding at all; when not, the result fields are
    /// those of an attempt made anyway.
    #[serde(rename = "daemonActs")]
    pub(crate) daemon_acts: bool,
}

#[derive(Clone, Debug, Serialize)]
pub(crate) struct OutCluster {
    name: String,
    replicas: i32,
}

fn sorted(clusters: &[TargetCluster]) -> Vec<OutCluster> {
    let mut out: Vec<OutCluster> = clusters
        .iter()
        .map(|t| OutCluster {
            name: t.name.to_string(),
            replicas: t.replicas,
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The element for `b`: the verdict of what the daemon's cycle wrote.
pub(crate) fn to_output(b: &Binding, e: &Explanation) -> Output {
    let v = e.verdict();
    Output {
        kind: b.kind,
        namespace: b.namespace.clone(),
        name: b.name.clone(),
        result: v.result,
        clusters: sorted(&v.clusters),
        message: v.message,
        decision: e.decision(),
        daemon_acts: e.daemon_acts(),
    }
}

/// The stub's name: it stands in for the scheduler-estimator.
const STUB_NAME: &str = "scheduler-estimator";
/// The stub's name when the real scheduler-estimator is also asked.
const STUB_NAME_BESIDE_REAL: &str = "estimator-replicas";

/// `--estimator-replicas`: a connected accurate estimator answering N for each named cluster.
/// Like upstream's gRPC estimator, it fails as a whole when it cannot answer for one cluster.
struct StubEstimator {
    name: &'static str,
    replicas: BTreeMap<String, i32>,
}

impl StubEstimator {
    fn answer(&self, clusters: &[&Cluster]) -> Result<Estimates, EstimatorError> {
        clusters
            .iter()
            .map(|c| match self.replicas.get(c.name()) {
                Some(n) => Ok((c.name().to_string(), *n)),
                None => Err(EstimatorError(format!(
                    "no --estimator-replicas entry for cluster {}",
                    c.name()
                ))),
            })
            .collect()
    }
}

impl Estimator for StubEstimator {
    fn name(&self) -> &str {
        self.name
    }

    fn max_available_replicas<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        _request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
        Box::pin(async move { self.answer(clusters) })
    }

    fn max_available_component_sets<'a>(
        &'a self,
        clusters: &'a [&'a Cluster],
        _request: EstimateRequest<'a>,
    ) -> BoxFuture<'a, Result<Estimates, EstimatorError>> {
        Box::pin(async move { self.answer(clusters) })
    }
}

// ---------------------------------------------------------------------------------------------
// Input

fn load(paths: &[String]) -> anyhow::Result<Input> {
    let mut input = Input::default();
    let mut stdin_read = false;
    for p in paths {
        if p == "-" {
            if stdin_read {
                bail!("-f - given more than once");
            }
            stdin_read = true;
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading stdin")?;
            read_documents(&mut input, "<stdin>", &text)?;
            continue;
        }
        let path = Path::new(p);
        let meta = std::fs::metadata(path).with_context(|| p.clone())?;
        let files: Vec<PathBuf> = if meta.is_dir() {
            let mut files = Vec::new();
            for entry in std::fs::read_dir(path).with_context(|| p.clone())? {
                let f = entry.with_context(|| p.clone())?.path();
                let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
                if f.is_file() && matches!(ext, "yaml" | "yml" | "json") {
                    files.push(f);
                }
            }
            files.sort();
            files
        } else {
            vec![path.to_path_buf()]
        };
        for f in files {
            let text = std::fs::read_to_string(&f).with_context(|| f.display().to_string())?;
            read_documents(&mut input, &f.display().to_string(), &text)?;
        }
    }
    Ok(input)
}

/// Decode every document of one file; errors name the file, the document (from 1) and the
/// field path.
fn read_documents(input: &mut Input, file: &str, text: &str) -> anyhow::Result<()> {
    use serde::Deserialize as _;
    for (i, doc) in serde_yaml::Deserializer::from_str(text).enumerate() {
        let n = i + 1;
        let value = serde_yaml::Value::deserialize(doc)
            .map_err(|e| anyhow!("{file}: document {n}: {e}"))?;
        if value.is_null() {
            continue;
        }
        let mut value = value;
        let serde_yaml::Value::Mapping(map) = &mut value else {
            bail!("{file}: document {n}: expected an object with apiVersion and kind");
        };
        let kind = map
            .get("kind")
            .and_then(|k| k.as_str())
            .unwrap_or("")
            .to_string();
        let kind = kind.as_str();
        // Go decodes a Cluster without `spec` (or `spec: null`) as an empty spec; so does
        // simulate.
        if kind == "Cluster" && map.get("spec").is_none_or(serde_yaml::Value::is_null) {
            map.insert(
                "spec".into(),
                serde_yaml::Value::Mapping(Default::default()),
            );
        }
        fill_condition_defaults(map);
        let doc_name = map
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(|v| v.as_str())
            .map(str::to_string);
        // Re-emit the document: anchors are resolved, and the typed decode keeps YAML's
        // leniency (an unquoted `pods: 110` is still a quantity string).
        let yaml =
            serde_yaml::to_string(&value).map_err(|e| anyhow!("{file}: document {n}: {e}"))?;
        let what = |name: Option<&str>| match name {
            Some(name) => format!("{file}: document {n} ({kind} {name:?})"),
            None => format!("{file}: document {n} ({kind})"),
        };
        match kind {
            "Cluster" => {
                let c: Cluster = karmada_api::from_yaml_str(&yaml)
                    .map_err(|e| anyhow!("{}: {e}", what(doc_name.as_deref())))?;
                if c.name().is_empty() {
                    bail!("{}: metadata.name: must be set", what(None));
                }
                input.clusters.push(c);
            }
            "ResourceBinding" => {
                let rb: ResourceBinding = karmada_api::from_yaml_str(&yaml)
                    .map_err(|e| anyhow!("{}: {e}", what(doc_name.as_deref())))?;
                input.bindings.push(Binding {
                    kind: ResourceBinding::KIND,
                    namespace: rb.metadata.namespace.clone().unwrap_or_default(),
                    name: rb.metadata.name.clone().unwrap_or_default(),
                    raw: serde_json::to_value(&rb)?,
                    spec: rb.spec,
                    status: rb.status,
                });
            }
            "ClusterResourceBinding" => {
                let crb: ClusterResourceBinding = karmada_api::from_yaml_str(&yaml)
                    .map_err(|e| anyhow!("{}: {e}", what(doc_name.as_deref())))?;
                input.bindings.push(Binding {
                    kind: ClusterResourceBinding::KIND,
                    namespace: String::new(),
                    name: crb.metadata.name.clone().unwrap_or_default(),
                    raw: serde_json::to_value(&crb)?,
                    spec: crb.spec,
                    status: crb.status,
                });
            }
            "Service" => {
                let s: Service = karmada_api::from_yaml_str(&yaml)
                    .map_err(|e| anyhow!("{}: {e}", what(doc_name.as_deref())))?;
                input.services.push(s);
            }
            "EndpointSlice" => {
                let s: EndpointSlice = karmada_api::from_yaml_str(&yaml)
                    .map_err(|e| anyhow!("{}: {e}", what(doc_name.as_deref())))?;
                input.endpoint_slices.push(s);
            }
            "" => err(&format!("warning: {file}: document {n}: no kind, skipped")),
            other => err(&format!(
                "warning: {file}: document {n}: kind {other} is not used by simulate, skipped"
            )),
        }
    }
    Ok(())
}

/// Go decodes a `metav1.Condition` with missing fields as zero values, while the Rust type
/// requires all of them; fill in the zero values (`""`, the Unix epoch) so that objects written
/// by hand or by Go's encoder (`lastTransitionTime: null`) decode as upstream decodes them.
fn fill_condition_defaults(object: &mut serde_yaml::Mapping) {
    let Some(serde_yaml::Value::Mapping(status)) = object.get_mut("status") else {
        return;
    };
    let Some(serde_yaml::Value::Sequence(conditions)) = status.get_mut("conditions") else {
        return;
    };
    for c in conditions {
        let serde_yaml::Value::Mapping(c) = c else {
            continue;
        };
        for key in ["type", "status", "reason", "message"] {
            if c.get(key).is_none_or(serde_yaml::Value::is_null) {
                c.insert(key.into(), "".into());
            }
        }
        if c.get("lastTransitionTime")
            .is_none_or(serde_yaml::Value::is_null)
        {
            c.insert("lastTransitionTime".into(), "1970-01-01T00:00:00Z".into());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// -o explain

/// `-o explain` (and `karmada-scheduler explain`'s text) for one binding.
pub(crate) fn render(out: &mut String, b: &Binding, e: &Explanation) {
    let element = to_output(b, e);
    let outcome = e.report.outcome.as_ref();
    let key = if b.namespace.is_empty() {
        b.name.clone()
    } else {
        format!("{}/{}", b.namespace, b.name)
    };
    let _ = writeln!(out, "{} {}: {}", b.kind, key, element.result);
    let _ = writeln!(out, "  decision: {}", element.decision);
    let _ = writeln!(out, "  message: {}", element.message);
    if element.result == "Scheduled" {
        let _ = writeln!(out, "  clusters: {}", format_targets(&element.clusters));
    }
    let Some(outcome) = outcome else {
        out.push('\n');
        return;
    };
    let spec = &b.spec;
    let strategy = describe_strategy(spec);
    let _ = writeln!(
        out,
        "  workload: {} {} replicas={} strategy={}{}",
        spec.resource.api_version,
        spec.resource.kind,
        spec.replicas,
        strategy,
        if spec.clusters.is_empty() {
            String::new()
        } else {
            format!(
                " previous=[{}]",
                spec.clusters
                    .iter()
                    .map(|t| format!("{}:{}", t.name, t.replicas))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    );
    if let Some(name) = &outcome.affinity_name {
        let _ = writeln!(out, "  clusterAffinities: term {name:?} succeeded");
    }
    for f in &outcome.failed_terms {
        let _ = writeln!(
            out,
            "  clusterAffinities: term {} {:?} failed: {}",
            f.index, f.affinity_name, f.error
        );
    }
    if let Some(trace) = &outcome.trace {
        if trace.attempts.is_empty() {
            let _ = writeln!(
                out,
                "  clusterAffinities is empty: nothing was tried, spec.clusters is left as it is"
            );
        }
        for a in &trace.attempts {
            explain_attempt(out, b, a);
        }
    }
    out.push('\n');
}

fn explain_attempt(out: &mut String, b: &Binding, a: &AttemptTrace) {
    match (&a.affinity_index, &a.affinity_name) {
        (Some(i), Some(n)) => {
            let _ = writeln!(out, "  attempt with clusterAffinities[{i}] {n:?}:");
        }
        _ => {
            let _ = writeln!(out, "  attempt:");
        }
    }
    let _ = writeln!(
        out,
        "    filters (in order): {}",
        a.filter_plugins.join(", ")
    );
    let width = a.clusters.iter().map(|c| c.name.len()).max().unwrap_or(0);
    for c in &a.clusters {
        let line = match &c.verdict {
            Verdict::Deleting => "deleting: skipped, still counted in 0/N".to_string(),
            Verdict::Rejected { plugin, reasons } => {
                format!("rejected by {plugin}: {}", reasons.join(", "))
            }
            Verdict::Feasible => {
                let mut s = String::from("feasible");
                if let Some(score) = c.score {
                    let parts: Vec<String> =
                        c.scores.iter().map(|(p, v)| format!("{p} {v}")).collect();
                    let _ = write!(s, ", score {score} ({})", parts.join(" + "));
                }
                if !c.estimates.is_empty() {
                    let parts: Vec<String> = c
                        .estimates
                        .iter()
                        .map(|(e, v)| {
                            format!("{e} {}", v.map_or("-".to_string(), |v| v.to_string()))
                        })
                        .collect();
                    let _ = write!(s, ", estimates [{}]", parts.join(", "));
                }
                if let (Some(alloc), Some(avail)) = (c.allocatable_replicas, c.available_replicas) {
                    let _ = write!(
                        s,
                        ", allocatable {}, available {avail}",
                        show_replicas(alloc)
                    );
                }
                if let Some(o) = c.overflow_order.filter(|o| *o != 0) {
                    let _ = write!(s, ", overflow tier {o}");
                }
                s
            }
        };
        let _ = writeln!(out, "    {:width$}  {line}", c.name);
    }
    for e in &a.estimators {
        if let Some(err) = &e.error {
            let _ = writeln!(
                out,
                "    estimator {} failed, its answers are ignored: {err}",
                e.name
            );
        }
    }
    if a.estimation_skipped {
        let _ = writeln!(
            out,
            "    estimators not asked: replicas 0 and no components (every cluster counts as unlimited)"
        );
    }
    if !a.canonical_order.is_empty() {
        let _ = writeln!(
            out,
            "    order (tier asc, score desc, available desc, name): {}",
            a.canonical_order.join(", ")
        );
    }
    for g in &a.regions {
        let _ = writeln!(
            out,
            "    region {}: score {}, available {}, clusters [{}]",
            g.name,
            g.score,
            g.available_replicas,
            g.clusters.join(", ")
        );
    }
    if !a.chosen_regions.is_empty() {
        let _ = writeln!(out, "    chosen regions: {}", a.chosen_regions.join(", "));
    }
    if !a.selected.is_empty() {
        let need = if a.need_replicas < 0 || !a.chosen_regions.is_empty() {
            "capacity not checked".to_string()
        } else {
            format!("needing {} replicas", a.need_replicas)
        };
        let _ = writeln!(out, "    selected ({need}): {}", a.selected.join(", "));
    }
    if a.result.is_some() {
        let _ = writeln!(out, "    division rule: {}", division_rule(b, a));
    }
    if let Some(r) = &a.result {
        let _ = writeln!(
            out,
            "    division: {}",
            r.iter()
                .map(|t| format!("{}:{}", t.name, t.replicas))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(e) = &a.error {
        let _ = writeln!(out, "    error: {e}");
    }
}

/// Which division rule divided the replicas, in words.
fn division_rule(b: &Binding, a: &AttemptTrace) -> String {
    use scheduler_core::assign::{Mode, Strategy, assignment_mode, strategy_of};
    let spec = &b.spec;
    if !((spec.replicas > 0 || spec.replica_requirements.is_some()) && spec.components.len() <= 1) {
        return "not a workload (replicas 0, no requirements): every candidate with 0 replicas"
            .to_string();
    }
    let Some(placement) = &spec.placement else {
        return "-".to_string();
    };
    let tiers = a
        .clusters
        .iter()
        .filter_map(|c| c.overflow_order)
        .any(|o| o != 0);
    let tiers = if tiers {
        "; overflow tiers are filled in order, each up to its available replicas"
    } else {
        ""
    };
    let rule = match strategy_of(placement) {
        Err(e) => e.to_string(),
        Ok(Strategy::Duplicated) => format!("Duplicated: every candidate gets {} replicas", spec.replicas),
        Ok(Strategy::StaticWeight) => {
            "static weights (Webster); clusters without a positive weight get nothing, capacity is not checked"
                .to_string()
        }
        Ok(strategy) => {
            let how = if strategy == Strategy::Aggregated {
                "on as few clusters as possible (largest first)"
            } else {
                "in proportion"
            };
            let previous: i64 = spec
                .clusters
                .iter()
                .filter(|t| a.selected.iter().any(|s| *s == t.name))
                .map(|t| i64::from(t.replicas))
                .sum();
            let want = i64::from(spec.replicas);
            if assignment_mode(spec, &b.status) == Mode::Fresh {
                format!(
                    "{} fresh (rescheduleTriggeredAt after lastScheduledTime): all {want} replicas divided {how} by allocatable + current replicas",
                    strategy.as_str()
                )
            } else if previous > want {
                format!(
                    "{} scale down from {previous} to {want}: divided {how} by the current replicas",
                    strategy.as_str()
                )
            } else if previous == 0 {
                format!(
                    "{} from scratch: {want} replicas divided {how} by allocatable replicas",
                    strategy.as_str()
                )
            } else if previous < want {
                format!(
                    "{} scale up from {previous} to {want}: the {} new replicas divided {how} by allocatable replicas and added to the current ones",
                    strategy.as_str(),
                    want - previous
                )
            } else {
                format!("{} steady: the candidates already hold {want} replicas, nothing moves", strategy.as_str())
            }
        }
    };
    format!("{rule}{tiers}")
}

fn show_replicas(v: i32) -> String {
    if v == i32::MAX {
        "unlimited".to_string()
    } else {
        v.to_string()
    }
}

fn format_targets(c: &[OutCluster]) -> String {
    if c.is_empty() {
        return "(none)".to_string();
    }
    c.iter()
        .map(|t| format!("{}:{}", t.name, t.replicas))
        .collect::<Vec<_>>()
        .join(", ")
}

fn describe_strategy(spec: &ResourceBindingSpec) -> String {
    let Some(p) = &spec.placement else {
        return "-".to_string();
    };
    let Some(rs) = &p.replica_scheduling else {
        return "Duplicated (no replicaScheduling)".to_string();
    };
    let t = rs.replica_scheduling_type.map_or("\"\"", |t| t.as_str());
    let pref = rs.replica_division_preference.map_or("", |p| p.as_str());
    let weights = match &rs.weight_preference {
        Some(wp) if wp.dynamic_weight.is_some() => "/dynamic",
        Some(wp) if !wp.static_weight_list.is_empty() => "/static",
        _ => "",
    };
    if pref.is_empty() {
        t.to_string()
    } else {
        format!("{t}/{pref}{weights}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &[&str]) -> Vec<String> {
        s.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn parses_flags() {
        let o = parse_args(&args(&[
            "-f",
            "a.yaml",
            "--filename=b",
            "--estimator-replicas",
            "m1=3",
            "--estimator-replicas=m2=4,m3=5",
            "--plugins=*,-ClusterLocality",
            "--enable-empty-workload-propagation",
            "--feature-gates",
            "WorkloadAffinity=true",
            "-o",
            "explain",
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(o.files, ["a.yaml", "b"]);
        assert_eq!(o.estimator_replicas.len(), 3);
        assert_eq!(o.estimator_replicas["m2"], 4);
        assert_eq!(o.plugins.as_deref().unwrap(), ["*", "-ClusterLocality"]);
        assert!(o.enable_empty_workload_propagation);
        assert!(o.gates.workload_affinity());
        assert_eq!(o.output, OutputFormat::Explain);

        assert!(parse_args(&args(&["--help"])).unwrap().is_none());
        assert!(parse_args(&args(&[])).is_err());
        assert!(parse_args(&args(&["-f", "x", "--nope"])).is_err());
        assert!(parse_args(&args(&["-f", "x", "--estimator-replicas", "m1"])).is_err());
        assert!(parse_args(&args(&["-f", "x", "--feature-gates", "Nope=true"])).is_err());
        assert!(parse_args(&args(&["-f", "x", "-o", "table"])).is_err());
        assert!(parse_args(&args(&["-f"])).is_err());
        let o = parse_args(&args(&[
            "-f",
            "-",
            "--enable-empty-workload-propagation=false",
        ]))
        .unwrap()
        .unwrap();
        assert!(!o.enable_empty_workload_propagation);
    }

    #[test]
    fn estimator_flags_use_the_daemon_parser_and_defaults() {
        let o = parse_args(&args(&["-f", "x"])).unwrap().unwrap();
        assert!(o.estimator.is_none());
        let o = parse_args(&args(&["-f", "x", "--enable-scheduler-estimator"]))
            .unwrap()
            .unwrap();
        assert_eq!(o.estimator, Some(EstimatorOptions::default()));
        let o = parse_args(&args(&[
            "-f",
            "x",
            "--enable-scheduler-estimator=T",
            "--scheduler-estimator-timeout",
            "1m",
            "--scheduler_estimator_port=0x10",
            "--scheduler-estimator-service-namespace=est",
            "--scheduler-estimator-service-prefix",
            "p",
            "--scheduler-estimator-ca-file=/ca",
            "--scheduler-estimator-cert-file=/c",
            "--scheduler-estimator-key-file=/k",
            "--insecure-skip-estimator-verify",
            "--disable-scheduler-estimator-in-pull-mode=true",
        ]))
        .unwrap()
        .unwrap();
        let e = o.estimator.unwrap();
        assert_eq!(e.timeout, std::time::Duration::from_secs(60));
        assert_eq!(e.port, 16);
        assert_eq!(e.service_namespace, "est");
        assert_eq!(e.service_name("m1"), "p-m1");
        assert_eq!(e.ca_file.as_deref(), Some(Path::new("/ca")));
        assert_eq!(e.cert_file.as_deref(), Some(Path::new("/c")));
        assert_eq!(e.key_file.as_deref(), Some(Path::new("/k")));
        assert!(e.insecure_skip_verify && e.disable_in_pull_mode);

        let err = parse_args(&args(&["-f", "x", "--enable-scheduler-estimator=maybe"]))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains(r#"invalid argument "maybe" for "--enable-scheduler-estimator" flag"#),
            "{err}"
        );
        assert!(parse_args(&args(&["-f", "x", "--scheduler-estimator-port"])).is_err());
        assert!(parse_args(&args(&["-f", "x", "--scheduler-estimator-timeout=-1s"])).is_err());
        // Daemon flags unrelated to the estimator are not simulate flags.
        assert!(parse_args(&args(&["-f", "x", "--kubeconfig=/k"])).is_err());
    }

    #[test]
    fn cluster_without_spec_and_endpoint_slices_are_read() {
        let mut input = Input::default();
        let text = "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: m1}\n---\n\
                    apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: m2}\nspec: null\n---\n\
                    apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\naddressType: IPv4\n\
                    metadata: {name: s1, namespace: karmada-system, labels: {kubernetes.io/service-name: e}}\n\
                    endpoints: [{addresses: [127.0.0.1]}]\nports: [{port: 8080}]\n";
        read_documents(&mut input, "in.yaml", text).unwrap();
        assert_eq!(input.clusters.len(), 2);
        assert_eq!(input.clusters[1].spec.sync_mode, "");
        assert_eq!(input.endpoint_slices.len(), 1);
    }

    #[test]
    fn decode_errors_name_file_document_and_field() {
        let mut input = Input::default();
        let text = "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: m1}\n---\n\
                    apiVersion: work.karmada.io/v1alpha2\nkind: ResourceBinding\nmetadata: {name: rb, namespace: ns}\n\
                    spec:\n  resource: {apiVersion: v1, kind: ConfigMap, name: c}\n  replicas: many\n";
        let err = read_documents(&mut input, "in.yaml", text)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("in.yaml: document 2 (ResourceBinding \"rb\"): spec.replicas: "),
            "{err}"
        );
        assert_eq!(input.clusters.len(), 1);
    }

    #[test]
    fn reads_kinds_and_skips_others() {
        let mut input = Input::default();
        let text = "---\nkind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n---\n\
                    apiVersion: v1\nkind: Service\nmetadata: {name: karmada-scheduler-estimator-m1, namespace: karmada-system}\n\
                    spec: {type: ExternalName, externalName: 10.0.0.1}\n---\n\
                    apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: m1}\n\
                    status: {resourceSummary: {allocatable: {pods: 110}}}\n---\n\
                    apiVersion: work.karmada.io/v1alpha2\nkind: ClusterResourceBinding\nmetadata: {name: crb}\n\
                    spec:\n  resource: {apiVersion: v1, kind: Namespace, name: n}\n  placement: {}\n";
        read_documents(&mut input, "in.yaml", text).unwrap();
        assert_eq!(input.services.len(), 1);
        assert_eq!(input.clusters.len(), 1);
        let pods = &input.clusters[0]
            .status
            .as_ref()
            .unwrap()
            .resource_summary
            .as_ref()
            .unwrap()
            .allocatable["pods"];
        assert_eq!(pods.0, "110");
        assert_eq!(input.bindings.len(), 1);
        assert_eq!(input.bindings[0].kind, "ClusterResourceBinding");
        assert_eq!(input.bindings[0].namespace, "");
    }

    #[test]
    fn conditions_decode_with_go_zero_values() {
        let mut input = Input::default();
        let text = "apiVersion: cluster.karmada.io/v1alpha1\nkind: Cluster\nmetadata: {name: m1}\n\
                    status:\n  conditions:\n  - {type: CompleteAPIEnablements, status: 'True'}\n  \
                    - {type: Ready, status: 'False', lastTransitionTime: null}\n";
        read_documents(&mut input, "in.yaml", text).unwrap();
        let conditions = &input.clusters[0].status.as_ref().unwrap().conditions;
        assert_eq!(conditions.len(), 2);
        assert_eq!(conditions[0].type_, "CompleteAPIEnablements");
        assert_eq!(conditions[1].reason, "");
    }

    #[test]
    fn stub_estimator_is_all_or_nothing() {
        let stub = StubEstimator {
            name: STUB_NAME,
            replicas: [("m1".to_string(), 3)].into_iter().collect(),
        };
        let m1 = Cluster::new("m1", Default::default());
        let m2 = Cluster::new("m2", Default::default());
        assert_eq!(stub.answer(&[&m1]).unwrap(), vec![("m1".to_string(), 3)]);
        assert!(stub.answer(&[&m1, &m2]).is_err());
    }
}
