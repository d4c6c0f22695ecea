//! `whole`: the user's path end to end in one whole Karmada
//! (`hack/karmada-up.sh`), with our scheduler and descheduler and then with Go's, swapped on
//! the running Karmada between rounds. Each round creates the Deployments and policies of
//! `driver` and waits until every member holds its Deployment with the replicas
//! the binding gives it; reported: Deployments/s, p50/p99 from creation to scheduled and to
//! the members, the steps in between, and each process's CPU during the round.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, bail};
use serde::{Deserialize, Serialize};
use testenv::whole::WholeKarmada;

use self::driver::Round;
use tokio::time::Instant;

use crate::plane::log;
use crate::procs::cpu_seconds;
use crate::promtext;

mod driver;
mod report;
pub use report::markdown;

/// What the flags ask for.
#[derive(Clone, Debug)]
pub struct WholeFlags {
    pub deployments: usize,
    /// `ours` and `go`, in the order to run.
    pub rounds: Vec<String>,
    pub rate: f64,
    pub concurrency: usize,
    pub timeout: Duration,
    /// A running whole Karmada to use (left running); else one is started and stopped.
    pub state_dir: Option<PathBuf>,
    pub scheduler: PathBuf,
    pub descheduler: PathBuf,
}

/// One round with the CPU each process spent during it and the controller-manager's work.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct RoundRun {
    pub round: Round,
    /// CPU seconds per process of the whole Karmada, from the first creation to the end.
    pub cpu: BTreeMap<String, f64>,
    pub controller_manager: CmWork,
    /// The machine's 1-minute load average as the round began (other work on it shows here).
    pub load_before: f64,
}

/// What karmada-controller-manager did during a round, from its `/metrics`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CmWork {
    /// Its client flags (`--kube-api-qps`, `--kube-api-burst`) as it runs; none: the defaults.
    pub flags: Vec<String>,
    /// Requests to the Karmada API server, by method.
    pub karmada_requests: BTreeMap<String, f64>,
    /// Requests to the members' API servers.
    pub member_requests: f64,
    /// Per controller queue: items done, seconds they waited in the queue, seconds being
    /// worked on (both summed over items).
    pub queues: BTreeMap<String, Queue>,
}

/// One controller queue's figures over a round.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Queue {
    pub items: f64,
    pub waited: f64,
    pub worked: f64,
}

async fn cm_metrics(k: &WholeKarmada) -> anyhow::Result<Vec<promtext::Sample>> {
    let port = k.port("CM_METRICS")?;
    crate::procs::scrape(&format!("127.0.0.1:{port}")).await
}

/// The controller-manager's client flags, from its command line.
fn cm_flags(k: &WholeKarmada) -> Vec<String> {
    k.processes()
        .get("karmada-controller-manager")
        .and_then(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).ok())
        .map(|c| {
            c.split(|b| *b == 0)
                .map(|a| String::from_utf8_lossy(a).into_owned())
                .filter(|a| a.starts_with("--kube-api-"))
                .collect()
        })
        .unwrap_or_default()
}

/// The controller-manager's work between two scrapes.
fn cm_work(before: &[promtext::Sample], after: &[promtext::Sample], karmada_host: &str) -> CmWork {
    let delta = |name: &str, filter: &[(&str, &str)]| {
        promtext::sum(after, name, filter) - promtext::sum(before, name, filter)
    };
    let mut w = CmWork::default();
    for s in after
        .iter()
        .filter(|s| s.name == "rest_client_requests_total")
    {
        let was = before
            .iter()
            .find(|b| b.name == s.name && b.labels == s.labels)
            .map_or(0.0, |b| b.value);
        let n = s.value - was;
        match (s.labels.get("host"), s.labels.get("method")) {
            (Some(host), Some(method)) if host == karmada_host => {
                *w.karmada_requests.entry(method.clone()).or_default() += n;
            }
            _ => w.member_requests += n,
        }
    }
    let names: std::collections::BTreeSet<&String> = after
        .iter()
        .filter(|s| s.name == "workqueue_work_duration_seconds_count")
        .filter_map(|s| s.labels.get("name"))
        .collect();
    for name in names {
        let f = [("name", name.as_str())];
        let items = delta("workqueue_work_duration_seconds_count", &f);
        if items > 0.0 {
            w.queues.insert(
                name.clone(),
                Queue {
                    items,
                    waited: delta("workqueue_queue_duration_seconds_sum", &f),
                    worked: delta("workqueue_work_duration_seconds_sum", &f),
                },
            );
        }
    }
    w
}

/// The whole run.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct WholeBench {
    #[serde(flatten)]
    pub stamp: crate::results::Stamp,
    pub deployments: usize,
    pub rounds: Vec<RoundRun>,
}

fn cpu_now(k: &WholeKarmada) -> BTreeMap<String, f64> {
    k.processes()
        .into_iter()
        .filter_map(|(name, pid)| Some((name, cpu_seconds(pid)?)))
        .collect()
}

/// Runs the rounds.
pub async fn run(f: &WholeFlags) -> anyhow::Result<WholeBench> {
    let t0 = Instant::now();
    for kind in &f.rounds {
        if kind != "ours" && kind != "go" {
            bail!("--whole-rounds: {kind} is neither ours nor go");
        }
    }
    let tools = testenv::Tools::ensure().map_err(|e| anyhow::anyhow!("{e}"))?;
    let k = match &f.state_dir {
        Some(dir) => WholeKarmada::attach(dir, &tools)?,
        None => {
            log!(t0, "starting a whole Karmada (hack/karmada-up.sh)");
            tokio::task::block_in_place(|| {
                WholeKarmada::start("whole-bench", &tools, &f.scheduler, &f.descheduler)
            })?
            .context("the Go binaries of hack/karmada-up.sh are not built")?
        }
    };
    log!(t0, "whole Karmada in {}", k.state_dir().display());
    driver::ensure_namespace(&k).await?;
    let items = driver::mix(f.deployments);
    let karmada_host = format!("127.0.0.1:{}", k.port("KARMADA_APISERVER")?);
    let mut rounds = Vec::new();
    for kind in &f.rounds {
        if k.scheduler_kind()? != *kind {
            log!(t0, "swapping in the {kind} scheduler and descheduler");
            tokio::task::block_in_place(|| k.set_scheduler(kind, &f.scheduler, &f.descheduler))?;
        }
        driver::clear(&k, f.timeout).await?;
        // A quiet start: the new scheduler's caches filled, the last round's deletions
        // through the members, the Clusters' status written again.
        tokio::time::sleep(Duration::from_secs(15)).await;
        log!(
            t0,
            "round {}: {} Deployments, {kind}",
            rounds.len() + 1,
            items.len()
        );
        let load_before = crate::procs::load_1m();
        let cm_before = cm_metrics(&k).await?;
        let before = cpu_now(&k);
        let round = driver::run_round(&k, kind, &items, f.rate, f.concurrency, f.timeout).await?;
        let after = cpu_now(&k);
        let mut controller_manager = cm_work(&cm_before, &cm_metrics(&k).await?, &karmada_host);
        controller_manager.flags = cm_flags(&k);
        let cpu = after
            .iter()
            .filter_map(|(n, a)| Some((n.clone(), a - before.get(n)?)))
            .collect();
        log!(
            t0,
            "round {}: {}/{} on their members in {:.1}s ({:.2} Deployments/s)",
            rounds.len() + 1,
            round.complete,
            round.deployments,
            round.seconds,
            throughput(&round)
        );
        rounds.push(RoundRun {
            round,
            cpu,
            controller_manager,
            load_before,
        });
    }
    driver::clear(&k, f.timeout).await?;
    Ok(WholeBench {
        deployments: f.deployments,
        rounds,
        ..Default::default()
    })
}

/// Deployments on their members per second, from the first creation to the last arrival.
fn throughput(r: &Round) -> f64 {
    if r.seconds > 0.0 {
        r.complete as f64 / r.seconds
    } else {
        0.0
    }
}

/// The report's file name: `whole-karmada-<N>d`, with `-cm-qps<Q>` when the
/// controller-manager ran with `--kube-api-qps=<Q>`.
pub fn stem(b: &WholeBench) -> String {
    let qps = b
        .rounds
        .iter()
        .flat_map(|r| r.controller_manager.flags.iter())
        .find_map(|f| f.strip_prefix("--kube-api-qps="));
    match qps {
        Some(q) => format!("whole-karmada-{}d-cm-qps{q}", b.deployments),
        None => format!("whole-karmada-{}d", b.deployments),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controller_manager_work_is_the_difference_between_scrapes() {
        let before = promtext::parse(
            "rest_client_requests_total{code=\"200\",host=\"127.0.0.1:1\",method=\"PUT\"} 10\n\
             rest_client_requests_total{code=\"201\",host=\"127.0.0.1:2\",method=\"POST\"} 4\n\
             workqueue_work_duration_seconds_count{name=\"binding-controller\"} 5\n\
             workqueue_work_duration_seconds_sum{name=\"binding-controller\"} 1\n\
             workqueue_queue_duration_seconds_sum{name=\"binding-controller\"} 2\n",
        );
        let after = promtext::parse(
            "rest_client_requests_total{code=\"200\",host=\"127.0.0.1:1\",method=\"PUT\"} 15\n\
             rest_client_requests_total{code=\"409\",host=\"127.0.0.1:1\",method=\"PUT\"} 3\n\
             rest_client_requests_total{code=\"201\",host=\"127.0.0.1:2\",method=\"POST\"} 6\n\
             workqueue_work_duration_seconds_count{name=\"binding-controller\"} 9\n\
             workqueue_work_duration_seconds_sum{name=\"binding-controller\"} 3\n\
             workqueue_queue_duration_seconds_sum{name=\"binding-controller\"} 10\n\
             workqueue_work_duration_seconds_count{name=\"idle\"} 0\n",
        );
        let w = cm_work(&before, &after, "127.0.0.1:1");
        assert_eq!(
            w.karmada_requests,
            BTreeMap::from([("PUT".to_string(), 8.0)])
        );
        assert_eq!(w.member_requests, 2.0);
        let q = &w.queues["binding-controller"];
        assert_eq!((q.items, q.waited, q.worked), (4.0, 8.0, 2.0));
        assert!(!w.queues.contains_key("idle"));
    }
}
