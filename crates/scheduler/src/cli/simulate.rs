//! `karmada-scheduler simulate`: one scheduling pass over objects read from files.
//!
//! Clusters, ResourceBindings and ClusterResourceBindings are read from YAML/JSON files and every
//! binding is scheduled, in input order, against the same clusters, by the daemon's own
//! cycle writing to memory (`karmada_scheduler::explain::ReadOnly`). The contract (flags, JSON
//! shape, the stub estimator's all-or-nothing rule) is written down in `docs/simulate.md`; the
//! flags are [`FLAGS`] and the daemon flags [`COMMAND`] takes (its `--help` lists both).
//!
//! With `--enable-scheduler-estimator`, the real estimators are dialled: their addresses come
//! from the Services (and EndpointSlices) in the input files, resolved by `estimator-client`
//! exactly as the daemon resolves them from the API server, so a placement can be tried
//! offline against live estimators.

use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use component_base::flags::{self, FlagDef, Kind, flag};
use component_base::setter;
use estimator_client::{
    ConnectionCache, EstimatorOptions, InMemoryServiceSource, SchedulerEstimator,
};
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use karmada_api::cluster::Cluster;
use karmada_api::work::{ClusterResourceBinding, ResourceBinding, TargetCluster};
use scheduler_core::EstimatorError;
use scheduler_core::estimator::{BoxFuture, EstimateRequest, Estimates, Estimator};
use scheduler_core::snapshot::Snapshot;
use serde::Serialize;

use karmada_scheduler::config::build::{build_scheduler, estimator_options};
use karmada_scheduler::explain::{Explanation, ReadOnly, render};
use karmada_scheduler::model::binding::BindingKind;

use super::{Subcommand, err};

/// The `--help` section of simulate's own flags.
const SECTION: &str = "Simulate";

/// simulate's own flags, with their setters; [`COMMAND`] adds the daemon's it takes.
static FLAGS: &[FlagDef] = &[
    flag(
        SECTION,
        "filename",
        Kind::Str,
        "",
        "a YAML/JSON file (several documents allowed), a directory (its *.yaml, *.yml and *.json files, sorted), or - for stdin; repeatable, at least one",
    )
    .short('f')
    .set(setter!(Flags, |o, v| o.files.push(v.to_string()))),
    flag(
        SECTION,
        "estimator-replicas",
        Kind::Strings,
        "[]",
        "CLUSTER=N[,CLUSTER=N...]: a stand-in for a connected scheduler-estimator that answers N for CLUSTER; repeatable. If a feasible cluster has no entry, all entries are ignored for that binding (upstream discards a partial answer)",
    )
    .set(setter!(Flags, |o, v| {
        for item in v.split(',').filter(|s| !s.is_empty()) {
            let (cluster, n) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?}: expected CLUSTER=N"))?;
            let n: i32 = n
                .trim()
                .parse()
                .map_err(|_| format!("{item:?}: N is not a 32-bit integer"))?;
            o.estimator_replicas.insert(cluster.trim().to_string(), n);
        }
    })),
    flag(
        SECTION,
        "output",
        Kind::Str,
        "json",
        "json, yaml or explain (the decisions for people: filter verdicts, scores, estimates, division)",
    )
    .short('o')
    .set(setter!(Flags, |o, v| {
        o.output = match v {
            "json" => OutputFormat::Json,
            "yaml" => OutputFormat::Yaml,
            "explain" => OutputFormat::Explain,
            other => {
                return Err(format!(
                    "unsupported output format {other:?} (json, yaml or explain)"
                ));
            }
        }
    })),
];

/// The daemon flags simulate takes: those of the pipeline and the event filter, and every
/// estimator flag (flags the daemon gains later, our extensions, are taken too).
fn takes(name: &str) -> bool {
    matches!(
        name,
        "plugins"
            | "enable-empty-workload-propagation"
            | "feature-gates"
            | "scheduler-name"
            | "reschedule-keeps-affinity-term"
            | "omit-component-results"
    ) || name.contains("estimator")
}

/// simulate's command line.
pub(crate) static COMMAND: Subcommand = Subcommand {
    name: "simulate",
    about: "Run one scheduling pass over objects read from files and print where each binding lands.\n",
    synopsis: "simulate -f PATH [-f PATH ...] [flags]",
    own: FLAGS,
    takes,
    notes: "\
The daemon flags have the daemon's names, defaults, value syntax and validation. With
--enable-scheduler-estimator the real estimators of the clusters are dialled, found through
the Services (and EndpointSlices) of the input files; their answers join the general
estimator's (and --estimator-replicas'). Estimators that cannot be resolved or dialled are
reported on stderr (Service, port, problem); as upstream (with the default failure policy), a
binding asking such a cluster ignores all of that estimator's answers.

Kinds read: Cluster, ResourceBinding, ClusterResourceBinding (and Service and EndpointSlice,
for the estimator resolver; without metadata.namespace they are taken to be in
--scheduler-estimator-service-namespace); other kinds are skipped with a warning. Bindings are
scheduled in input order, each against the same clusters, with every input binding in view of
the workload group filters (--feature-gates=WorkloadAffinity=true); logs and warnings go to
stderr.
",
};

/// simulate's own flags' values.
#[derive(Clone, Debug)]
struct Flags {
    files: Vec<String>,
    estimator_replicas: BTreeMap<String, i32>,
    output: OutputFormat,
}

impl Default for Flags {
    /// The defaults of [`FLAGS`].
    fn default() -> Self {
        let blank = Self {
            files: Vec::new(),
            estimator_replicas: BTreeMap::new(),
            output: OutputFormat::Json,
        };
        flags::with_defaults(blank, &[FLAGS])
    }
}

/// A checked command line.
#[derive(Clone, Debug)]
struct Options {
    flags: Flags,
    /// The daemon's options: the flags simulate takes, every other one at its default.
    daemon: karmada_scheduler::config::options::Options,
    /// `Some` with `--enable-scheduler-estimator`: the estimator client's options.
    estimator: Option<EstimatorOptions>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OutputFormat {
    Json,
    Yaml,
    Explain,
}

/// Run `simulate` with the arguments after the subcommand name.
pub fn main(args: &[String]) -> ExitCode {
    COMMAND.main(parse_args(args), |o| run(&o))
}

fn parse_args(args: &[String]) -> anyhow::Result<Option<Options>> {
    let Some(parsed) = COMMAND.parse(Flags::default(), args)? else {
        return Ok(None);
    };
    if let Some(other) = parsed.positionals.first() {
        bail!("unexpected argument {other:?}");
    }
    if parsed.own.files.is_empty() {
        bail!("at least one -f PATH is required");
    }
    let daemon = parsed.daemon;
    Ok(Some(Options {
        flags: parsed.own,
        estimator: daemon
            .enable_scheduler_estimator
            .then(|| estimator_options(&daemon)),
        daemon,
    }))
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

/// One binding of either kind, as read.
struct Binding {
    kind: BindingKind,
    namespace: String,
    name: String,
    /// The object as read, for the in-memory API server the daemon's cycle writes to.
    raw: serde_json::Value,
}

fn run(opts: &Options) -> anyhow::Result<String> {
    let input = load(&opts.flags.files)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // The daemon's pipeline; beside the general estimator, the stub of --estimator-replicas
    // and the real estimators.
    let mut estimators: Vec<Arc<dyn Estimator>> = Vec::new();
    if !opts.flags.estimator_replicas.is_empty() {
        estimators.push(Arc::new(StubEstimator {
            // Both stand for the scheduler-estimator; keep them apart in `-o explain`.
            name: if opts.estimator.is_some() {
                STUB_NAME_BESIDE_REAL
            } else {
                STUB_NAME
            },
            replicas: opts.flags.estimator_replicas.clone(),
        }));
    }
    if let Some(estimator) = &opts.estimator {
        estimators.push(runtime.block_on(accurate_estimator(estimator, &input)));
    }
    let scheduler = build_scheduler(&opts.daemon, estimators)?;
    let snapshot = Snapshot::from_clusters(input.clusters);

    let want_trace = opts.flags.output == OutputFormat::Explain;
    // The daemon's own cycle, writing to memory: the decision, the algorithm, the result
    // and status patches and the events are the daemon's. With
    // `SchedulingOvercommitProtection`, what each binding gets is assumed for the ones after
    // it, as the daemon's cache assumes what it writes.
    let run = ReadOnly::new(&scheduler, &opts.daemon.scheduler_name, want_trace);
    let insert = |b: &Binding| {
        run.store
            .insert(b.kind, b.raw.clone())
            .map_err(|e| anyhow!("{} {}: {}", b.kind.kind(), e.key.describe(), e.error))
    };
    // The workload group filters see every input binding, as the daemon's see its cache.
    if run.reads_peers() {
        for b in &input.bindings {
            insert(b)?;
        }
    }
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let mut results = Vec::with_capacity(input.bindings.len());
    let mut explained = String::new();
    for b in &input.bindings {
        // Each binding is scheduled from the object as read (a peer's result written before
        // it stays in view).
        let binding = insert(b)?;
        let e = runtime.block_on(run.explain(&binding, &snapshot, now.clone()));
        if want_trace {
            render::attempt(&mut explained, &binding, &e);
        }
        results.push(to_output(b, &e));
    }
    Ok(match opts.flags.output {
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
    for warning in cache.ensure_all(&input.clusters).await {
        err(&format!("warning: {warning}"));
    }
    Arc::new(SchedulerEstimator::new(cache))
}

/// One element of the output array.
#[derive(Clone, Debug, Serialize)]
struct Output {
    kind: &'static str,
    namespace: String,
    name: String,
    result: &'static str,
    clusters: Vec<OutCluster>,
    message: String,
    /// The daemon's decision in words (its event filter's, then its ladder's).
    decision: String,
    /// Whether the daemon would act on the binding at all; when not, the result fields are
    /// those of an attempt made anyway.
    #[serde(rename = "daemonActs")]
    daemon_acts: bool,
}

#[derive(Clone, Debug, Serialize)]
struct OutCluster {
    name: String,
    replicas: i32,
    /// v1.19's per-component result (`MultiplePodTemplatesScheduling`); absent when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    components: Vec<karmada_api::work::TargetComponent>,
}

fn sorted(clusters: &[TargetCluster]) -> Vec<OutCluster> {
    let mut out: Vec<OutCluster> = clusters
        .iter()
        .map(|t| OutCluster {
            name: t.name.to_string(),
            replicas: t.replicas,
            components: t.components(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// The element for `b`: the verdict of what the daemon's cycle wrote.
fn to_output(b: &Binding, e: &Explanation) -> Output {
    let v = e.verdict();
    Output {
        kind: b.kind.kind(),
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

    /// Replicas and component sets alike.
    fn estimate<'a>(
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
                    kind: BindingKind::ResourceBinding,
                    namespace: rb.metadata.namespace.clone().unwrap_or_default(),
                    name: rb.metadata.name.clone().unwrap_or_default(),
                    raw: serde_json::to_value(&rb)?,
                });
            }
            "ClusterResourceBinding" => {
                let crb: ClusterResourceBinding = karmada_api::from_yaml_str(&yaml)
                    .map_err(|e| anyhow!("{}: {e}", what(doc_name.as_deref())))?;
                input.bindings.push(Binding {
                    kind: BindingKind::ClusterResourceBinding,
                    namespace: String::new(),
                    name: crb.metadata.name.clone().unwrap_or_default(),
                    raw: serde_json::to_value(&crb)?,
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
        assert_eq!(o.flags.files, ["a.yaml", "b"]);
        assert_eq!(o.flags.estimator_replicas.len(), 3);
        assert_eq!(o.flags.estimator_replicas["m2"], 4);
        assert_eq!(o.daemon.plugins, ["*", "-ClusterLocality"]);
        assert!(o.daemon.enable_empty_workload_propagation);
        assert!(o.daemon.feature_gates.workload_affinity());
        assert_eq!(o.flags.output, OutputFormat::Explain);

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
        assert!(!o.daemon.enable_empty_workload_propagation);
        // The defaults are the daemon's and the table's.
        let o = parse_args(&args(&["-f", "x"])).unwrap().unwrap();
        assert_eq!(o.daemon.plugins, ["*"]);
        assert_eq!(o.daemon.scheduler_name, "default-scheduler");
        assert_eq!(o.flags.output, OutputFormat::Json);
        assert!(parse_args(&args(&["-f", "x", "--scheduler-name="])).is_err());
        assert!(parse_args(&args(&["-f", "x", "extra"])).is_err());
    }

    #[test]
    fn every_flag_has_a_setter_and_help_lists_each_once() {
        let mut sink = Flags::default();
        struct Own<'a>(&'a mut Flags);
        impl flags::FlagSink for Own<'_> {
            fn set(&mut self, name: &str, value: &str, first: bool) -> Result<(), String> {
                flags::apply(&[FLAGS], &mut [&mut *self.0], name, value, first)
            }
        }
        assert_eq!(
            flags::unknown_to(&mut Own(&mut sink), &[FLAGS]),
            Vec::<&str>::new()
        );
        let help = COMMAND.help_text();
        let flag_lines = help.strip_suffix(COMMAND.notes).unwrap();
        for name in [
            "filename",
            "estimator-replicas",
            "output",
            "help",
            "plugins",
            "feature-gates",
            "scheduler-name",
            "enable-empty-workload-propagation",
            "enable-scheduler-estimator",
            "scheduler-estimator-timeout",
            "scheduler-estimator-failure-policy",
        ] {
            let lines = flag_lines
                .lines()
                .filter(|l| l.trim_start().starts_with('-') && l.contains(&format!("--{name} ")))
                .count();
            assert_eq!(lines, 1, "{name}:\n{help}");
        }
        // The daemon's defaults, from its table.
        assert!(help.contains("(default [*])"), "{help}");
        assert!(help.contains("(default \"default-scheduler\")"), "{help}");
        assert!(help.contains("(default 3s)"), "{help}");
        assert!(!help.contains("--kubeconfig"), "{help}");
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
        assert_eq!(input.bindings[0].kind.kind(), "ClusterResourceBinding");
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
