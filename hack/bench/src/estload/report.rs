//! The estimator bench's report and chart: each scale's phases side by side, the ceilings and
//! the fair share, where the alone batches' time went, and the fault rows.

use std::collections::BTreeMap;

use super::{
    ESTIMATOR_TIMEOUT_S, EstBench, PASSES, SERVICE_NAMESPACE, SERVICE_PREFIX, Scale, SideFigures,
};
use crate::figures::{Row, fill, fill_stamped, list, num, side_rows, table, verdict};
use crate::promtext::E2E;

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
    let chart = chart.map_or(String::new(), |(path, step)| {
        let scales = list(b.scales.iter().map(|s| format!("{} clusters", s.clusters)));
        format!(
            "\n![alone bindings/s (left) and alone p99 latency (right) per scale]({path})\n\n\
             Chart: per scale (left to right: {scales}), ours (orange) and Go (blue); left, \
             alone bindings/s (gridlines every {step}); right, alone p99 latency on a log scale.\n"
        )
    });
    fill_stamped(
        include_str!("../../templates/estimators.md"),
        &b.stamp,
        &[
            ("prefix", SERVICE_PREFIX.into()),
            ("namespace", SERVICE_NAMESPACE.into()),
            ("latency_ms", format!("{:.0}", b.latency_ms)),
            (
                "targets",
                table(&b.scales.iter().flat_map(target_rows).collect::<Vec<_>>()),
            ),
            ("hung", b.scales.iter().filter_map(hung_target).collect()),
            ("misses", misses(b)),
            ("chart", chart),
            ("scales", b.scales.iter().map(scale_section).collect()),
        ],
    )
}

/// A scale's rows held to the issue's targets.
fn target_rows(s: &Scale) -> Vec<Row> {
    let c = s.clusters;
    let (r, g) = (&s.alone[0].phase, &s.alone[1].phase);
    let mut rows = Vec::new();
    if c >= 100 {
        let (rr, gr) = (r.steady_rate_per_s, g.steady_rate_per_s);
        let tenfold = share_of(rr, gr).is_some_and(|x| x >= 10.0);
        let name = format!("{c} clusters: bindings/s alone (target ≥ 10× Go's)");
        rows.push(Row::new(name, rr, gr, 2).higher().target(tenfold));
        if let Some(fair) = s.fair_share() {
            let name = format!(
                "{c} clusters: % of the fair ceiling, the same estimator calls and writes (target ≥ 90)"
            );
            rows.push(Row::new(name, Some(fair * 100.0), None, 0).target(fair >= 0.9));
        }
        let ours = r.rate_after_creation_per_s.or(rr);
        let share = share_of(ours, best(&s.replay_ceiling));
        let name = format!("{c} clusters: % of the replay ceiling, writes only (target ≥ 90)");
        rows.push(
            Row::new(name, share.map(|x| x * 100.0), None, 0)
                .target(share.is_some_and(|s| s >= 0.9)),
        );
    }
    let [ours, go] = s.peak_rss_kib.map(|k| Some(k as f64 / 1024.0));
    let third = s.peak_rss_kib[0] as f64 <= s.peak_rss_kib[1] as f64 / 3.0;
    let name = format!("{c} clusters: peak RSS, MiB (target ≤ 1/3 of Go's)");
    rows.push(Row::new(name, ours, go, 1).lower().target(third));
    let name = format!(
        "{c} clusters: pairs placed alike, of {} (target: all)",
        s.pairs
    );
    rows.push(Row::new(name, Some(s.agree as f64), None, 0).target(s.agree == s.pairs));
    rows
}

/// The hung-estimator target of a scale with fault rows: at most one timeout more than the
/// same batch without the fault (each binding alone in the queue), and every other
/// estimator's answer still asked for.
fn hung_target(s: &Scale) -> Option<String> {
    let fault = |fault: &str| {
        (s.faults.iter()).find(|f| f.fault.starts_with(fault) && f.scheduler == "ours")
    };
    let (h, r) = (fault("1 estimator hung")?, fault("none")?);
    let bound = r.decide_max_s.map(|p| p + ESTIMATOR_TIMEOUT_S);
    let time_ok = matches!((h.decide_max_s, bound), (Some(p), Some(b)) if p <= b);
    let answers_ok = h.healthy_answers_per_binding >= r.healthy_answers_per_binding;
    let (hh, rh) = (h.healthy_answers_per_binding, r.healthy_answers_per_binding);
    Some(format!(
        "\n{c} clusters, 1 hung estimator of {c} (target: it costs ≤ 1 estimator timeout, {ESTIMATOR_TIMEOUT_S:.0} s, per cycle, and no other cluster's answers): slowest creation→decision {} s vs {} s without the fault (bound {} s); {hh:.1} answers/binding from the other estimators vs {rh:.1} without the fault; {}/{} placements as without it — {}.\n",
        num(h.decide_max_s, 2),
        num(r.decide_max_s, 2),
        num(bound, 2),
        h.same_as_fault_free,
        h.phase.bindings,
        verdict(time_ok && answers_ok),
        c = s.clusters,
    ))
}

/// A scale's figures, where its alone batches' time went, its ceilings and fault rows.
fn scale_section(s: &Scale) -> String {
    let mut out = format!(
        "\n## {} clusters ({}), {} bindings together, {} alone\n\n",
        s.clusters, s.estimators, s.bindings, s.alone_bindings
    );
    let mut rows = Vec::new();
    for (title, [a, b]) in [("together", &s.together), ("alone", &s.alone)] {
        let decided = |f: &SideFigures| Some(f.phase.done as f64 / f.phase.bindings.max(1) as f64);
        rows.extend(side_rows!(a, b;
            format!("{title}: bindings/s (10–90 %)"), |f| f.phase.steady_rate_per_s, 1, Higher;
            format!("{title}: p50 creation→Scheduled (ms)"), |f| f.phase.latency_p50_ms, 0, Lower;
            format!("{title}: p99 creation→Scheduled (ms)"), |f| f.phase.latency_p99_ms, 0, Lower;
            format!("{title}: decided / bindings"), |f| decided(f), 2, Neither;
            format!("{title}: CPU seconds"), |f| Some(f.cpu_s), 2, Lower;
            format!("{title}: open estimator connections (max)"), |f| Some(f.connections as f64), 0, Neither;
        ));
    }
    let [a, b] = &s.alone;
    rows.extend(side_rows!(a, b;
        "alone: bindings/s after the last creation", |f| f.phase.rate_after_creation_per_s, 1, Higher;
        "alone: estimator RPCs per binding", |f| f.rpcs_per_binding, 1, Neither;
    ));
    // Both sides' RSS, zero shown as measured.
    let rss = |name, kib: [u64; 2]| Row::of(name, kib.map(|k| Some(k as f64 / 1024.0)), 1).lower();
    rows.extend([
        rss("RSS connected, idle (MiB)", s.idle_rss_kib),
        rss("peak RSS (MiB)", s.peak_rss_kib),
    ]);
    out += &table(&rows);
    for (who, f) in [("ours", &s.alone[0]), ("Go", &s.alone[1])] {
        out += &time_spent(who, f);
    }
    out += &ceilings(s);
    if !s.faults.is_empty() {
        out += &faults_section(s);
    }
    out
}

/// Where one side's alone batch spent its time, from the process CPU and its own metrics.
fn time_spent(who: &str, f: &SideFigures) -> String {
    let mut out = String::new();
    if f.wall_s > 0.0 {
        let cpu = list(
            f.cpu_by_process
                .iter()
                .map(|(p, c)| format!("{p} {c:.1} s")),
        );
        let (wall, cores) = (f.wall_s, 2.0 * f.wall_s);
        out += &format!(
            "\nWhere the time goes, {who} alone ({wall:.1} s wall, {cores:.1} CPU seconds available on 2 cores): {cpu}.\n"
        );
    }
    if !f.attempt_ms.is_empty() {
        let means = list(f.attempt_ms.iter().map(|(k, v)| format!("{k} {v:.1}")));
        out += &format!(
            "Mean per attempt from {who}'s own histograms over the batch (ms): {means}.\n"
        );
    }
    if !f.attempts.is_empty() {
        let counts = list(f.attempts.iter().map(|(k, v)| format!("{k} {v:.0}")));
        out +=
            &format!("Attempts and queued bindings over the batch ({who}'s counters): {counts}.\n");
    }
    if let Some(p) = &f.profile {
        out += &format!(
            "\n<details><summary>perf profile of our scheduler, alone batch</summary>\n\n```text\n{p}\n```\n</details>\n"
        );
    }
    out
}

/// The ceilings, the alone batches' agreement and the condition reasons at the end.
fn ceilings(s: &Scale) -> String {
    let rates = |m: &BTreeMap<String, f64>| {
        list(
            m.iter()
                .map(|(c, r)| format!("{r:.1}/s with {c} bindings in flight")),
        )
    };
    let mut out = format!(
        "\nReplay ceiling (a bare client writing our alone batch's results): {}. ",
        rates(&s.replay_ceiling)
    );
    if !s.fair_ceiling.is_empty() {
        let calls = s.fair_ceiling_calls;
        let per = calls as f64 / s.alone_bindings.max(1) as f64;
        let share = num(s.fair_share().map(|x| x * 100.0), 0);
        out += &format!(
            "Fair ceiling (the same writes, each binding first making its share of the {calls} \
             estimator calls our batch made, {per:.1} per binding, replayed to the same stub all \
             at once): {}; ours after the last creation: {share} % of it. ",
            rates(&s.fair_ceiling)
        );
    }
    // Results from before the bench read the load average have none.
    let load = match s.load_1m {
        [0.0, 0.0] => String::new(),
        [before, end] => format!(
            " 1-minute load average of the machine: {before:.2} before our alone batch, \
             {end:.2} at the end of the scale."
        ),
    };
    out += &format!(
        "Placement agreement of the alone batches: {}/{}.{load}\n",
        s.agree, s.pairs
    );
    out += &s
        .disagreements
        .iter()
        .map(|d| format!("- {d}\n"))
        .collect::<String>();
    let reasons = |f: &SideFigures| list(f.phase.by_reason.iter().map(|(r, n)| format!("{r} {n}")));
    out + &format!(
        "`Scheduled` condition reasons at the end of the alone batches: ours {}; Go {}. \
         A binding that does not fit is retried with backoff by both, so its failed \
         attempts count in the attempt figures above.\n",
        reasons(&s.alone[0]),
        reasons(&s.alone[1])
    )
}

/// The fault rows of a scale.
fn faults_section(s: &Scale) -> String {
    let rows = s.faults.iter().map(|f| {
        let one = if f.sequential { " (one at a time)" } else { "" };
        let p = &f.phase;
        format!(
            "| {}{one} | {} | {}/{} | {} | {} / {} | {} / {} | {:.1} | {:.1} | {:.1} | {}/{} |\n",
            f.fault,
            f.scheduler,
            p.done,
            p.bindings,
            num(p.whole_rate_per_s, 1),
            num(f.decide_p50_s, 2),
            num(f.decide_max_s, 2),
            num(f.attempt_p50_s, 2),
            num(f.attempt_p99_s, 2),
            f.healthy_answers_per_binding,
            f.faulty_answers_per_binding,
            f.hung_calls_per_binding,
            f.same_as_fault_free,
            p.bindings
        )
    });
    fill(
        include_str!("../../templates/estimators-faults.md"),
        &[
            ("clusters", s.clusters.to_string()),
            (
                "bindings",
                s.faults.first().map_or(0, |f| f.phase.bindings).to_string(),
            ),
            ("e2e", E2E.into()),
            ("timeout", format!("{ESTIMATOR_TIMEOUT_S:.0}")),
            ("rows", rows.collect()),
        ],
    )
}
