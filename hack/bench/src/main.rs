//! `karmada-bench`: this karmada-scheduler and the Go v1.18.2 one, side by side on one
//! kube-apiserver. Normally run through `hack/bench.sh`, which builds everything first.
//!
//! One subcommand (`cli`) is one [`scenario::Scenario`] run by a module of its own; the engine
//! below stamps its results, renders the report (`figures`, prose in `templates/`) and writes
//! `<stem>.md` and `.json`; `render` reads results back and writes their reports again. The
//! steps the scenarios share are in `plane`, `observe`, `procs`, `promtext`, `ceiling` and
//! `replay`.

mod algo;
mod ceiling;
mod chart;
mod churn;
mod cli;
mod desched;
mod estload;
mod faults;
mod figures;
mod growth;
mod jobs;
mod memory;
mod observe;
mod overcommit;
mod plane;
mod procs;
mod promtext;
mod replay;
mod results;
mod run;
mod scenario;
mod stats;
mod whole;
mod workload;

use std::path::Path;

use anyhow::Context as _;
use clap::Parser;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cli::{Cli, Command, Common, Global, Phases, RenderArgs};
use crate::results::{Run, Stamp};

fn sh(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default()
}

fn stamp(root: &Path) -> Stamp {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("model name"))?;
            Some(l.split_once(':')?.1.trim().to_string())
        })
        .unwrap_or_default();
    let root = root.to_string_lossy();
    Stamp {
        date: sh("date", &["-u", "+%Y-%m-%d %H:%M UTC"]),
        machine: format!(
            "{} CPUs ({cpu}), {}",
            sh("nproc", &[]),
            sh("uname", &["-sr"])
        ),
        git_commit: sh(
            "git",
            &["-C", &root, "describe", "--always", "--dirty", "--abbrev=7"],
        ),
    }
}

/// Results written by an earlier run (`render`).
pub(crate) fn read_results<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let bytes = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    serde_json::from_slice(&bytes).with_context(|| format!("decoding {}", path.display()))
}

/// What the engine needs of a scenario's results: where its stamp goes, its file names and
/// its report.
trait Report: Serialize + DeserializeOwned {
    fn stamp(&mut self, s: Stamp);
    /// `<stem>.md` and `<stem>.json` under the output directory.
    fn stem(&self) -> String;
    /// The JSON's stem when it differs from the report's.
    fn json_stem(&self) -> String {
        self.stem()
    }
    /// The Markdown report; charts are drawn into `out` when it is given.
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String>;
    /// What the console shows.
    fn console(&self, md: &str) -> String {
        md.to_string()
    }
}

macro_rules! stamped {
    () => {
        fn stamp(&mut self, s: Stamp) {
            self.stamp = s;
        }
    };
}

impl Report for Run {
    stamped!();
    fn stem(&self) -> String {
        format!("report-{}c-{}b", self.clusters, self.bindings)
    }
    fn json_stem(&self) -> String {
        format!("results-{}c-{}b", self.clusters, self.bindings)
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        // One chart of every scale with results in the output directory.
        let runs = out.map(|o| all_runs(o, self)).unwrap_or_default();
        let points: Vec<chart::Point> = runs.iter().map(chart::Point::of).collect();
        let scales: Vec<String> = runs
            .iter()
            .map(|r| format!("{} clusters × {} bindings", r.clusters, r.bindings))
            .collect();
        let step = match out {
            Some(o) => chart::draw(&o.join("chart.png"), &points)?,
            None => 0.0,
        };
        Ok(run::report::markdown(self, "chart.png", step, &scales))
    }
    fn console(&self, _md: &str) -> String {
        let mut s = format!(
            "{}\n{}",
            run::report::targets(self),
            run::report::figures(self)
        );
        for (title, a) in [
            ("fresh", &self.agreement_fresh),
            ("after churn", &self.agreement_after_churn),
        ] {
            s += &format!(
                "agreement ({title}): {}/{} = {:.2}%\n",
                a.agree,
                a.pairs,
                a.ratio() * 100.0
            );
            for d in &a.disagreements {
                s += &format!(
                    "  {} [{}]\n    rust: {}  ({})\n    go:   {}  ({})\n",
                    d.binding, d.strategy, d.rust, d.rust_condition, d.go, d.go_condition
                );
            }
        }
        s
    }
}

/// A report without a chart: its stem from the results, its Markdown from its renderer.
macro_rules! plain_report {
    ($t:ty, $stem:expr, $markdown:path) => {
        impl Report for $t {
            stamped!();
            fn stem(&self) -> String {
                let stem: fn(&$t) -> String = $stem;
                stem(self)
            }
            fn render(&self, _: Option<&Path>) -> anyhow::Result<String> {
                Ok($markdown(self))
            }
        }
    };
}

plain_report!(
    memory::MemoryRun,
    |b| format!("memory-{}c-{}b", b.clusters, b.bindings),
    memory::markdown
);
plain_report!(
    faults::FaultBench,
    |b| format!("faults-{}k-{}b", b.kills, b.bindings),
    faults::markdown
);
plain_report!(
    overcommit::OvercommitBench,
    |b| format!("overcommit-{}m", b.members),
    overcommit::markdown
);
plain_report!(
    desched::DeschedBench,
    |b| format!("descheduler-{}c-{}b", b.clusters, b.bindings),
    desched::markdown
);
plain_report!(whole::WholeBench, whole::stem, whole::markdown);

impl Report for estload::EstBench {
    stamped!();
    fn stem(&self) -> String {
        format!("estimators-{}ms", self.latency_ms)
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        let png = format!("{}.png", self.stem());
        let points: Vec<chart::Point> = self.scales.iter().map(estload::chart_point).collect();
        let step = out
            .map(|o| chart::draw(&o.join(&png), &points))
            .transpose()?;
        Ok(estload::markdown(self, step.map(|s| (png.as_str(), s))))
    }
}

impl Report for growth::Growth {
    fn stamp(&mut self, _: Stamp) {}
    fn stem(&self) -> String {
        "growth".into()
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        if let Some(o) = out {
            growth::draw(&o.join("growth.png"), self)?;
        }
        Ok(growth::markdown(self, "growth.png"))
    }
}

impl Report for churn::ChurnRun {
    stamped!();
    fn stem(&self) -> String {
        let faults = if self.faults_enabled { "-faults" } else { "" };
        format!("churn-{}m{faults}", self.minutes)
    }
    fn render(&self, out: Option<&Path>) -> anyhow::Result<String> {
        let png = format!("{}.png", self.stem());
        let chart = out.map(|o| churn::chart(&o.join(&png), self)).transpose()?;
        let chart = chart.as_ref();
        Ok(churn::markdown(
            self,
            chart.map(|(axes, step)| (png.as_str(), axes.as_slice(), *step)),
        ))
    }
}

/// The engine: run the scenario, stamp, render, print and write.
async fn engine<R, F>(g: &Global, root: &Path, started: Stamp, run: F) -> anyhow::Result<()>
where
    R: Report,
    F: Future<Output = anyhow::Result<R>>,
{
    let mut r = run.await?;
    r.stamp(started);
    let out = g.out_dir.clone().unwrap_or_else(|| root.join("docs/bench"));
    if !g.no_write {
        std::fs::create_dir_all(&out)?;
        let json = out.join(format!("{}.json", r.json_stem()));
        std::fs::write(&json, serde_json::to_string_pretty(&r)? + "\n")
            .with_context(|| format!("writing {}", json.display()))?;
        println!("wrote {}", json.display());
    }
    write_report(g, Rendered::of(&r, (!g.no_write).then_some(&out))?, &out)
}

/// A report: its file's stem, its Markdown and what the console shows.
struct Rendered {
    stem: String,
    md: String,
    console: String,
}

impl Rendered {
    /// `r`'s report; its charts are drawn into `out` when given.
    fn of<R: Report>(r: &R, out: Option<&Path>) -> anyhow::Result<Self> {
        let md = r.render(out)?;
        let console = r.console(&md);
        Ok(Self {
            stem: r.stem(),
            md,
            console,
        })
    }

    /// The report of the results in `path`, by the scenario its name gives.
    fn of_file(path: &Path, out: Option<&Path>) -> anyhow::Result<Self> {
        fn one<R: Report>(path: &Path, out: Option<&Path>) -> anyhow::Result<Rendered> {
            Rendered::of(&read_results::<R>(path)?, out)
        }
        // The scenario, by the file name's prefix (the side-by-side run's is `results-`).
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let is = |prefix: &str| name.starts_with(prefix);
        match () {
            _ if is("memory-") => one::<memory::MemoryRun>(path, out),
            _ if is("faults-") => one::<faults::FaultBench>(path, out),
            _ if is("overcommit-") => one::<overcommit::OvercommitBench>(path, out),
            _ if is("descheduler-") => one::<desched::DeschedBench>(path, out),
            _ if is("estimators-") => one::<estload::EstBench>(path, out),
            _ if is("churn-") => one::<churn::ChurnRun>(path, out),
            _ if is("whole-karmada-") => one::<whole::WholeBench>(path, out),
            _ => one::<Run>(path, out),
        }
    }
}

/// Prints a report and writes it into `out`, unless told to write nothing.
fn write_report(g: &Global, r: Rendered, out: &Path) -> anyhow::Result<()> {
    println!("\n{}", r.console);
    if !g.no_write {
        let md_path = out.join(format!("{}.md", r.stem));
        std::fs::write(&md_path, r.md).with_context(|| format!("writing {}", md_path.display()))?;
        println!("wrote {}", md_path.display());
    }
    Ok(())
}

/// `render`: each file's report again, beside it unless `--out-dir` says otherwise.
fn render(g: &Global, args: &RenderArgs) -> anyhow::Result<()> {
    let out = |f: &Path| {
        (g.out_dir.clone()).unwrap_or_else(|| f.parent().unwrap_or(Path::new(".")).to_path_buf())
    };
    let charts = |out: &Path| (!g.no_write).then(|| out.to_path_buf());
    if args.growth {
        let out = out(&args.files[0]);
        let base = args.files[0].parent().unwrap_or(Path::new("."));
        let growth = growth::collect(&args.files, base)?;
        return write_report(g, Rendered::of(&growth, charts(&out).as_deref())?, &out);
    }
    for f in &args.files {
        let out = out(f);
        write_report(g, Rendered::of_file(f, charts(&out).as_deref())?, &out)?;
    }
    Ok(())
}

/// Results already in `dir` (one per scale), plus `run`, ordered by scale.
fn all_runs(dir: &Path, run: &Run) -> Vec<Run> {
    let mut runs: Vec<Run> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().to_string();
            n.starts_with("results-") && n.ends_with(".json")
        })
        .filter_map(|e| serde_json::from_slice(&std::fs::read(e.path()).ok()?).ok())
        .filter(|r: &Run| !(r.clusters == run.clusters && r.bindings == run.bindings))
        .collect();
    runs.push(run.clone());
    runs.sort_by_key(|r| (r.clusters, r.bindings));
    runs
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let root = testenv::repo_root();
    let (g, r, s) = (&cli.global, root.as_path(), stamp(&root));
    let sc = |common: &Common| g.scenario(common, r);
    match &cli.command {
        Command::Run(a) => {
            let mut sc = sc(&a.common);
            a.apply(&mut sc);
            match a.phases {
                Phases::All => engine(g, r, s, run::run(&sc)).await,
                Phases::Memory => engine(g, r, s, memory::run(&sc)).await,
            }
        }
        Command::Faults(c) => engine(g, r, s, faults::run(&sc(c))).await,
        Command::Overcommit(a) => {
            let mut sc = sc(&a.common);
            sc.estimators.members = a.members;
            engine(g, r, s, overcommit::run(&sc)).await
        }
        Command::Descheduler(a) => {
            let mut sc = sc(&a.common);
            (sc.workload.clusters, sc.workload.bindings) = (a.clusters, a.bindings);
            engine(g, r, s, desched::run(&sc)).await
        }
        Command::Estimators(a) => {
            let mut sc = sc(&a.common);
            a.apply(&mut sc);
            engine(g, r, s, estload::run(&sc)).await
        }
        Command::Churn(a) => {
            let mut sc = sc(&a.common);
            a.apply(&mut sc);
            engine(g, r, s, churn::run(&sc)).await
        }
        Command::Whole(a) => {
            let f = a.flags(&g.bins(r));
            engine(g, r, s, whole::run(&f)).await
        }
        Command::Render(a) => render(g, a),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    /// Every file under `dir`, depth first: a directory's own files before its folders'.
    fn files_under(dir: &Path) -> Vec<PathBuf> {
        let mut files = vec![];
        let mut dirs = vec![dir.to_path_buf()];
        while let Some(d) = dirs.pop() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&d)
                .unwrap()
                .flatten()
                .map(|e| e.path())
                .collect();
            entries.sort();
            files.extend(entries.iter().filter(|p| !p.is_dir()).cloned());
            dirs.extend(entries.into_iter().filter(|p| p.is_dir()).rev());
        }
        files
    }

    /// `render` of every committed results file renders the committed report byte for byte,
    /// and so does `render --growth` of the estimator
    /// results under each growth report's folder; the report of every scenario is among them.
    #[test]
    fn committed_results_render_to_their_reports() {
        let docs = testenv::repo_root().join("docs/bench");
        let files = files_under(&docs);
        let name = |p: &Path| p.file_name().unwrap().to_string_lossy().to_string();
        let mut same = std::collections::BTreeSet::new();
        for f in &files {
            let out = tempfile::tempdir().unwrap();
            let r = if name(f) == "growth.md" {
                let dir = f.parent().unwrap();
                let est: Vec<PathBuf> = files_under(dir)
                    .into_iter()
                    .filter(|p| name(p).starts_with("estimators-") && name(p).ends_with(".json"))
                    .collect();
                Rendered::of(&growth::collect(&est, dir).unwrap(), Some(out.path()))
            } else if f.extension().is_some_and(|x| x == "json") {
                // The side-by-side report lists every scale with results beside it.
                for e in files.iter().filter(|p| p.parent() == f.parent()) {
                    if name(e).starts_with("results-") {
                        std::fs::copy(e, out.path().join(name(e))).unwrap();
                    }
                }
                Rendered::of_file(f, Some(out.path()))
            } else {
                continue;
            };
            let r = r.unwrap_or_else(|e| panic!("{}: {e:#}", f.display()));
            let rel = f.strip_prefix(&docs).unwrap().to_string_lossy().to_string();
            let report = f.with_file_name(format!("{}.md", r.stem));
            let committed = std::fs::read_to_string(&report).unwrap();
            assert!(
                r.md == committed,
                "{} differs from {rel} rendered",
                report.display()
            );
            same.insert(r.stem.split('-').next().unwrap().to_string());
        }
        // report (results), memory, faults, overcommit, descheduler, estimators, growth, churn,
        // whole
        assert!(same.len() >= 9, "{same:?}");
    }
}
