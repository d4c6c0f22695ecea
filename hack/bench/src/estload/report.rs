//! The estimator bench's report and chart: each scale's phases side by side, the ceilings and
//! the fair share, where the alone batches' time went, and the fault rows.

use std::collections::BTreeMap;

use super::{
    ESTIMATOR_TIMEOUT_S, EstBench, PASSES, SERVICE_NAMESPACE, SERVICE_PREFIX, Scale, SideFigures,
};
use crate::figures::{list, met, num, ratio};
use crate::promtext::E2E;
use crate::results::Phase;

/// The chart's bars of one scale: alone bindings/s and alone p99 latency.
pub fn chart_point(s: &Scale) -> crate::chart::Point {
    crate::chart::Point {
        rust_rate: s.alone[0].phase.steady_rate_per_s.unwrap_or(0.0),
        go_rate: s.alone[1].phase.steady_rate_per_s.unwrap_or(0.0),
        rust_p99_ms: s.alone[0].phase.latency_p99_ms.unwrap_or(0.0),
        go_p99_ms: s.alone[1].phase.latency_p99_ms.unwrap_or(0.0),
    }
}

/// The best of the ceilings measured (by requests in flight).
fn best(ceilings: &BTreeMap<String, f64>) -> Option<f64> {
    ceilings.values().copied().reduce(f64::max)
}

/// `ours / ceiling`, when both are known.
fn share_of(ours: Option<f64>, ceiling: Option<f64>) -> Option<f64> {
    match (ours, ceiling) {
        (Some(a), Some(c)) if c > 0.0 => Some(a / c),
        _ => None,
    }
}

impl Scale {
    /// Ours alone (after the last creation, else the steady rate) over the best fair ceiling.
    pub fn fair_share(&self) -> Option<f64> {
        let r = &self.alone[0].phase;
        share_of(
            r.rate_after_creation_per_s.or(r.steady_rate_per_s),
            best(&self.fair_ceiling),
        )
    }
}

/// Bindings our scheduler schedules at once in this bench (it runs with the default).
const CONCURRENT_SYNCS: usize = 16;

/// Where the alone batches' time went, per scale with a measured split: the arithmetic behind
/// a missed throughput or memory target, from the run's own figures.
fn misses(b: &EstBench) -> String {
    let mut out = String::new();
    for s in &b.scales {
        let (r, g) = (&s.alone[0], &s.alone[1]);
        let (Some(e2e), Some(rate)) = (r.attempt_ms.get("e2e"), r.phase.steady_rate_per_s) else {
            continue;
        };
        if out.is_empty() {
            out.push_str("\n## Where the time goes\n\n");
        }
        let select = r.attempt_ms.get("Select").copied().unwrap_or(0.0);
        let call = r.attempt_ms.get("estimator call").copied().unwrap_or(0.0);
        let passes = r.attempts.get(PASSES).copied().unwrap_or(0.0);
        let attempts = r.attempts_made();
        let used: f64 = r.cpu_by_process.values().sum();
        let go_attempts = g.attempts_made();
        out.push_str(&format!(
            "- **{} clusters.** Ours alone works on up to {CONCURRENT_SYNCS} bindings at once \
             (`--concurrent-binding-syncs`' default) and an attempt took {e2e:.0} ms on average \
             (the e2e histogram: from taking the binding off the queue to its written status): \
             by Little's law about {:.1} bindings/s with every worker busy; measured {rate:.1}/s \
             (10–90 % window). \
             Of the attempt, {select:.0} ms were the estimator fan-out (Select; one call took \
             {call:.1} ms on average{}) and most of the rest the writes, which queue at the \
             apiserver. The machine was busy: {used:.1} \
             of the {:.1} CPU-seconds two cores offer in the {:.1} s phase ({}). {}Go made \
             {go_attempts:.0} attempts in its window (its echo attempts queue behind the \
             batch's first attempts, one binding at a time, and some fall after the last \
             binding is decided); estimator RPCs per binding in the window: Go {:.1}, ours {:.1}.\n",
            s.clusters,
            CONCURRENT_SYNCS as f64 * 1000.0 / e2e,
            if s.estimators.starts_with("stub") {
                format!(
                    " where the stub answers after {:.0} ms: the rest is waiting for a core",
                    b.latency_ms
                )
            } else {
                String::new()
            },
            2.0 * r.wall_s,
            r.wall_s,
            list(r.cpu_by_process.iter().map(|(p, c)| format!("{p} {c:.1}"))),
            if passes > 0.0 {
                format!(
                    "{passes:.0} algorithm passes ran for {attempts:.0} attempts of {} \
                     bindings: the extra passes are the echo pass of Duplicated and \
                     non-workload bindings, which the reference runs as a second attempt on \
                     the watch event of its own write. ",
                    r.phase.bindings
                )
            } else {
                String::new()
            },
            g.rpcs_per_binding.unwrap_or(0.0),
            r.rpcs_per_binding.unwrap_or(0.0),
        ));
    }
    out
}

/// The Markdown report.
pub fn markdown(b: &EstBench, chart: Option<(&str, f64)>) -> String {
    let mut out = format!(
        "# The estimator path: ours vs Go v1.18.2 with the accurate estimators on\n\n\
         {} · {} · commit {}\n\n\
         Both schedulers run with `--enable-scheduler-estimator=true` against one local \
         kube-apiserver; every cluster's estimator is published as an `ExternalName` Service \
         `{SERVICE_PREFIX}-<cluster>` in `{SERVICE_NAMESPACE}` (externalName `127.0.0.1`, the \
         estimator's port in `targetPort`). Small scales use the members' real Go \
         karmada-scheduler-estimator; larger ones a stub of the bench serving one port per \
         cluster that answers `MaxAvailableReplicas`/`MaxAvailableComponentSets` with 4–63 \
         (a hash of the cluster name) after {:.0} ms. *Together*: both at once, each on half of \
         the workload. *Alone*: each on the same batch while the other is idle; agreement \
         compares the two batches. Latency runs from the bench's POST to `Scheduled=True`. \
         Estimator RPCs are the calls the estimators answered during the alone phase, per \
         binding; connections are the most established TCP connections from the scheduler \
         process to estimator ports seen in a phase.\n\n",
        b.date, b.machine, b.git_commit, b.latency_ms
    );
    out.push_str("## Targets\n\n| scale | target | measured | verdict |\n|---|---|---|---|\n");
    for s in &b.scales {
        let mut row = |target: &str, measured: String, ok: bool| {
            let verdict = met(ok);
            let c = s.clusters;
            out.push_str(&format!(
                "| {c} clusters | {target} | {measured} | {verdict} |\n"
            ));
        };
        let (r, g) = (&s.alone[0].phase, &s.alone[1].phase);
        let (rr, gr) = (r.steady_rate_per_s, g.steady_rate_per_s);
        if s.clusters >= 100 {
            let x = share_of(rr, gr);
            let measured = format!("alone {} vs {} /s = {}×", num(rr, 1), num(gr, 1), num(x, 1));
            row(
                "≥ 10× Go's bindings/s",
                measured,
                x.is_some_and(|x| x >= 10.0),
            );
            let ours = r.rate_after_creation_per_s.or(rr);
            let of = |ceiling: Option<f64>, share: Option<f64>| {
                let (ours, ceiling) = (num(ours, 1), num(ceiling, 1));
                let share = num(share.map(|s| s * 100.0), 0);
                format!("{ours} /s after the last creation vs {ceiling} /s: {share} %")
            };
            if let Some(fair) = s.fair_share() {
                row(
                    "≥ 90 % of the fair ceiling (the same estimator calls and writes)",
                    of(best(&s.fair_ceiling), Some(fair)),
                    fair >= 0.9,
                );
            }
            let ceiling = best(&s.replay_ceiling);
            let share = share_of(ours, ceiling);
            let beside = if s.fair_ceiling.is_empty() {
                ""
            } else {
                "(beside it) "
            };
            row(
                &format!("{beside}≥ 90 % of the replay ceiling (writes only)"),
                of(ceiling, share),
                share.is_some_and(|s| s >= 0.9),
            );
        }
        let [ours, go] = s.peak_rss_kib.map(|k| k as f64 / 1024.0);
        let mem = s.peak_rss_kib[0] as f64 / s.peak_rss_kib[1].max(1) as f64;
        let measured = format!("{ours:.1} vs {go:.1} MiB = {mem:.2}");
        row("peak RSS ≤ 1/3 of Go's", measured, mem <= 1.0 / 3.0);
        let measured = format!("{}/{}", s.agree, s.pairs);
        row("100 % placement agreement", measured, s.agree == s.pairs);
        let fault = |fault: &str| {
            (s.faults.iter()).find(|f| f.fault.starts_with(fault) && f.scheduler == "ours")
        };
        if let (Some(h), Some(r)) = (fault("1 estimator hung"), fault("none")) {
            // At most one timeout more than the same batch without the fault (each binding
            // alone in the queue), and every other estimator's answer still asked for.
            let bound = r.decide_max_s.map(|p| p + ESTIMATOR_TIMEOUT_S);
            let time_ok = matches!((h.decide_max_s, bound), (Some(p), Some(b)) if p <= b);
            let answers_ok = h.healthy_answers_per_binding >= r.healthy_answers_per_binding;
            row(
                &format!(
                    "1 hung estimator of {} costs ≤ 1 estimator timeout ({ESTIMATOR_TIMEOUT_S:.0} s) per cycle, and no other cluster's answers",
                    s.clusters
                ),
                format!(
                    "slowest creation→decision {} s vs {} s without the fault (bound {} s); {:.1} answers/binding from the other estimators vs {:.1} without the fault; {}/{} placements as without it",
                    num(h.decide_max_s, 2),
                    num(r.decide_max_s, 2),
                    num(bound, 2),
                    h.healthy_answers_per_binding,
                    r.healthy_answers_per_binding,
                    h.same_as_fault_free,
                    h.phase.bindings,
                ),
                time_ok && answers_ok,
            );
        }
    }
    out.push_str(&misses(b));
    if let Some((path, step)) = chart {
        out.push_str(&format!(
            "\n![alone bindings/s (left) and alone p99 latency (right) per scale]({path})\n\n\
             Chart: per scale (left to right: {}), ours (orange) and Go (blue); left, alone \
             bindings/s (gridlines every {step}); right, alone p99 latency on a log scale.\n",
            list(b.scales.iter().map(|s| format!("{} clusters", s.clusters)))
        ));
    }
    for s in &b.scales {
        out.push_str(&format!(
            "\n## {} clusters ({}), {} bindings together, {} alone\n\n\
             | figure | ours | Go | ratio |\n|---|---:|---:|---:|\n",
            s.clusters, s.estimators, s.bindings, s.alone_bindings
        ));
        let row =
            |out: &mut String, name: &str, a: Option<f64>, b: Option<f64>, d: usize, inv: bool| {
                let r = if inv { ratio(b, a) } else { ratio(a, b) };
                let r = if inv && r != "–" {
                    format!("{r} (Go/ours)")
                } else {
                    r
                };
                out.push_str(&format!(
                    "| {name} | {} | {} | {r} |\n",
                    num(a, d),
                    num(b, d)
                ));
            };
        let mib = |k: u64| Some(k as f64 / 1024.0);
        // One row a line: name, ours, Go, decimals, whether lower is better (the ratio is then
        // Go's over ours).
        macro_rules! rows {
            ($($name:expr, $a:expr, $b:expr, $d:expr, $low:expr;)*) => {
                $(row(&mut out, &$name, $a, $b, $d, $low);)*
            };
        }
        for (title, [a, b]) in [("together", &s.together), ("alone", &s.alone)] {
            let (p, q) = (&a.phase, &b.phase);
            let decided = |p: &Phase| Some(p.done as f64 / p.bindings.max(1) as f64);
            rows!(
                format!("{title}: bindings/s (10–90 %)"), p.steady_rate_per_s, q.steady_rate_per_s, 1, false;
                format!("{title}: p50 creation→Scheduled (ms)"), p.latency_p50_ms, q.latency_p50_ms, 0, true;
                format!("{title}: p99 creation→Scheduled (ms)"), p.latency_p99_ms, q.latency_p99_ms, 0, true;
                format!("{title}: decided / bindings"), decided(p), decided(q), 2, false;
                format!("{title}: CPU seconds"), Some(a.cpu_s), Some(b.cpu_s), 2, true;
                format!("{title}: open estimator connections (max)"), Some(a.connections as f64), Some(b.connections as f64), 0, false;
            );
        }
        let [a, b] = &s.alone;
        rows!(
            "alone: bindings/s after the last creation", a.phase.rate_after_creation_per_s, b.phase.rate_after_creation_per_s, 1, false;
            "alone: estimator RPCs per binding", a.rpcs_per_binding, b.rpcs_per_binding, 1, false;
            "RSS connected, idle (MiB)", mib(s.idle_rss_kib[0]), mib(s.idle_rss_kib[1]), 1, true;
            "peak RSS (MiB)", mib(s.peak_rss_kib[0]), mib(s.peak_rss_kib[1]), 1, true;
        );
        for (who, f) in [("ours", &s.alone[0]), ("Go", &s.alone[1])] {
            if f.wall_s > 0.0 {
                out.push_str(&format!(
                    "\nWhere the time goes, {who} alone ({:.1} s wall, {:.1} CPU seconds available on 2 cores): {}.\n",
                    f.wall_s,
                    2.0 * f.wall_s,
                    list(f.cpu_by_process.iter().map(|(p, c)| format!("{p} {c:.1} s")))
                ));
            }
            if !f.attempt_ms.is_empty() {
                out.push_str(&format!(
                    "Mean per attempt from {who}'s own histograms over the batch (ms): {}.\n",
                    list(f.attempt_ms.iter().map(|(k, v)| format!("{k} {v:.1}")))
                ));
            }
            if !f.attempts.is_empty() {
                out.push_str(&format!(
                    "Attempts and queued bindings over the batch ({who}'s counters): {}.\n",
                    list(f.attempts.iter().map(|(k, v)| format!("{k} {v:.0}")))
                ));
            }
            if let Some(p) = &f.profile {
                out.push_str(&format!(
                    "\n<details><summary>perf profile of our scheduler, alone batch</summary>\n\n```text\n{p}\n```\n</details>\n"
                ));
            }
        }
        let rates = |m: &BTreeMap<String, f64>| {
            list(
                m.iter()
                    .map(|(c, r)| format!("{r:.1}/s with {c} bindings in flight")),
            )
        };
        out.push_str(&format!(
            "\nReplay ceiling (a bare client writing our alone batch's results): {}. ",
            rates(&s.replay_ceiling)
        ));
        if !s.fair_ceiling.is_empty() {
            out.push_str(&format!(
                "Fair ceiling (the same writes, each binding first making its share of the \
                 {} estimator calls our batch made, {:.1} per binding, replayed to the same \
                 stub all at once): {}; ours after the last creation: {} % of it. ",
                s.fair_ceiling_calls,
                s.fair_ceiling_calls as f64 / s.alone_bindings.max(1) as f64,
                rates(&s.fair_ceiling),
                num(s.fair_share().map(|x| x * 100.0), 0)
            ));
        }
        out.push_str(&format!(
            "Placement agreement of the alone batches: {}/{}. 1-minute load average of the \
             machine: {:.2} before our alone batch, {:.2} at the end of the scale.\n",
            s.agree, s.pairs, s.load_1m[0], s.load_1m[1]
        ));
        for d in &s.disagreements {
            out.push_str(&format!("- {d}\n"));
        }
        let reasons =
            |f: &SideFigures| list(f.phase.by_reason.iter().map(|(r, n)| format!("{r} {n}")));
        out.push_str(&format!(
            "`Scheduled` condition reasons at the end of the alone batches: ours {}; Go {}. \
             A binding that does not fit is retried with backoff by both, so its failed \
             attempts count in the attempt figures above.\n",
            reasons(&s.alone[0]),
            reasons(&s.alone[1])
        ));
        if !s.faults.is_empty() {
            out.push_str(&format!(
                "\n### Faults at {} clusters\n\n\
                 Each row: one scheduler alone on the same {} Divided bindings, the other \
                 idle. The reference and hung rows create them one at a time (each once the \
                 previous one was decided), so that creation→decision is one attempt; the \
                 others at once (the moved VIPs: half before the move, half after). *Attempt* \
                 is the scheduler's own `{E2E}` over the row (bucket resolution); *healthy \
                 answers* are answers from the estimators the fault did not touch, *faulty \
                 answers* from the others (the hung one, the refusing tenth, the moved tenth at \
                 either address); *as without* counts placements equal to the fault-free alone \
                 batch's (a missing answer makes a scheduler fall back to the general estimate \
                 for that cluster). The faulty clusters are those our alone batch asked most \
                 (the hung one) and every tenth of them in that order. The estimator timeout is \
                 {ESTIMATOR_TIMEOUT_S:.0} s (both defaults). The VIPs move during our row; Go's \
                 row runs after it, against the moved addresses.\n\n\
                 | fault | scheduler | decided | bindings/s | creation→decision p50 / max (s) | attempt p50 / p99 (s, histogram) | healthy answers / binding | faulty answers / binding | hung calls / binding | as without |\n\
                 |---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
                s.clusters,
                s.faults.first().map_or(0, |f| f.phase.bindings),
            ));
            for f in &s.faults {
                out.push_str(&format!(
                    "| {}{} | {} | {}/{} | {} | {} / {} | {} / {} | {:.1} | {:.1} | {:.1} | {}/{} |\n",
                    f.fault,
                    if f.sequential { " (one at a time)" } else { "" },
                    f.scheduler,
                    f.phase.done,
                    f.phase.bindings,
                    num(f.phase.whole_rate_per_s, 1),
                    num(f.decide_p50_s, 2),
                    num(f.decide_max_s, 2),
                    num(f.attempt_p50_s, 2),
                    num(f.attempt_p99_s, 2),
                    f.healthy_answers_per_binding,
                    f.faulty_answers_per_binding,
                    f.hung_calls_per_binding,
                    f.same_as_fault_free,
                    f.phase.bindings
                ));
            }
        }
    }
    out
}
