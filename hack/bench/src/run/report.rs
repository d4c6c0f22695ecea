//! The side-by-side run's Markdown report, and the console summary (the same tables).

use std::fmt::Write as _;

use crate::figures::{list, num, ratio};
use crate::results::{Agreement, Hist, Phase, Run, Side};

fn ms(s: Option<f64>) -> Option<f64> {
    s.map(|x| x * 1000.0)
}

fn mib(kib: u64) -> Option<f64> {
    (kib > 0).then(|| kib as f64 / 1024.0)
}

/// The p99 used for the algorithm-latency target: the sum of the per-step p99s (an upper
/// bound of the p99 of a whole attempt; the histograms are per step).
pub fn algo_p99_sum(h: &std::collections::BTreeMap<String, Hist>) -> Option<f64> {
    let v: Vec<f64> = h.values().filter_map(|x| x.p99_s).collect();
    (!v.is_empty()).then(|| v.iter().sum())
}

/// The slowest step's p99: a lower bound of the p99 of a whole attempt.
pub fn algo_p99_max(h: &std::collections::BTreeMap<String, Hist>) -> Option<f64> {
    h.values().filter_map(|x| x.p99_s).reduce(f64::max)
}

/// The Rust algorithm's p99 and mean per attempt, and where they come from: the daemon's own
/// histogram when it has observations, else the in-process timing of the same workload.
pub fn rust_algo(run: &Run) -> (Option<f64>, Option<f64>, &'static str) {
    let r = &run.rust;
    if r.algorithm.values().any(|h| h.count > 0.0) {
        (
            algo_p99_sum(&r.algorithm),
            r.algorithm_mean_total_s,
            "daemon histogram, sum of the steps' p99s",
        )
    } else {
        let h = &run.rust_algorithm_in_process;
        (
            h.p99_s,
            h.mean_s,
            "`schedule_binding` timed in-process on the same workload: the daemon observes the histogram, but it had no observations in this run (not scraped, or nothing scheduled)",
        )
    }
}

/// `a / b`, NaN unless `b` is positive.
fn div(a: f64, b: f64) -> f64 {
    if b > 0.0 { a / b } else { f64::NAN }
}

/// The verdict of a "≥ 10×" target and by how much it was met or missed.
fn tenfold(x: f64) -> String {
    let by = if x >= 10.0 { x / 10.0 } else { 10.0 / x };
    format!("{} (by {by:.1}×)", verdict(x >= 10.0))
}

/// A row of the figures table.
type Row = (String, Option<f64>, Option<f64>, usize, bool);

/// The figures table: one row per figure, `(name, Rust, Go, digits, ratio as Rust/Go)`;
/// the ratio is printed as Go/Rust where smaller is better.
fn table(rows: &[Row]) -> String {
    let mut s = String::from("| figure | Rust | Go | ratio |\n|---|---:|---:|---:|\n");
    for (what, r, g, digits, rust_over_go) in rows {
        let rt = if *rust_over_go {
            ratio(*r, *g)
        } else {
            format!("{} (Go/Rust)", ratio(*g, *r))
        };
        let _ = writeln!(
            s,
            "| {what} | {} | {} | {rt} |",
            num(*r, *digits),
            num(*g, *digits)
        );
    }
    s
}

/// One figure of a side.
type Figure<'a> = &'a dyn Fn(&Side) -> Option<f64>;
/// Adds a row: name, figure, digits, ratio as Rust/Go.
type Add<'a> = &'a mut dyn FnMut(String, Figure, usize, bool);

/// Adds figure rows, one a line: `name, |side| figure, digits, ratio as Rust/Go;`.
macro_rules! rows {
    ($add:ident: $($name:expr, |$s:ident| $fig:expr, $d:expr, $up:expr;)*) => {
        $($add($name.into(), &|$s: &Side| $fig, $d, $up);)*
    };
}

fn phase_rows(add: Add, name: &str, p: fn(&Side) -> &Phase) {
    rows!(add:
        format!("{name}: completions/s, steady (10–90 %)"), |s| p(s).steady_rate_per_s, 1, true;
        format!("{name}: completions/s, whole phase"), |s| p(s).whole_rate_per_s, 1, true;
        format!("{name}: latency p50 (ms)"), |s| p(s).latency_p50_ms, 1, false;
        format!("{name}: latency p99 (ms)"), |s| p(s).latency_p99_ms, 1, false;
        format!("{name}: done / bindings"), |s| Some(p(s).done as f64), 0, true;
    );
}

/// The main comparison table (Markdown).
pub fn figures(run: &Run) -> String {
    let (r, g) = (&run.rust, &run.go);
    let mut rows = Vec::new();
    let mut add = |what: String, fig: Figure, digits: usize, rust_over_go: bool| {
        rows.push((what, fig(r), fig(g), digits, rust_over_go));
    };
    phase_rows(&mut add, "load", |s| &s.load);
    phase_rows(&mut add, "mirror", |s| &s.mirror);
    let stream = format!("stream ({:.1}/s)", run.stream_rate_per_s);
    phase_rows(&mut add, &stream, |s| &s.stream);
    if r.solo.bindings > 0 {
        phase_rows(&mut add, "solo (each alone)", |s| &s.solo);
        rows!(add:
            "solo: completions/s after the last creation", |s| s.solo.rate_after_creation_per_s, 1, true;
            "solo: binding writes per binding", |s| Some(s.solo_binding_writes_per_binding), 2, true;
            "solo: event writes per binding", |s| Some(s.solo_event_writes_per_binding), 2, true;
        );
    }
    phase_rows(&mut add, "churn/scale", |s| &s.scale);
    rows!(add:
        "churn/taint: attempts", |s| Some(s.taint.attempts), 0, true;
        "churn/taint: settle (s)", |s| s.taint.settle_s, 2, false;
        "churn/delete: attempts", |s| Some(s.delete.attempts), 0, true;
        "churn/delete: settle (s)", |s| s.delete.settle_s, 2, false;
    );
    for step in r.algorithm.keys() {
        let h = |s: &Side| s.algorithm.get(step).cloned().unwrap_or_default();
        rows!(add:
            format!("algorithm {step}: p50 (ms)"), |s| ms(h(s).p50_s), 3, false;
            format!("algorithm {step}: p99 (ms)"), |s| ms(h(s).p99_s), 3, false;
            format!("algorithm {step}: mean (ms)"), |s| ms(h(s).mean_s), 4, false;
        );
    }
    rows!(add:
        "algorithm, sum of step p99s (ms)", |s| ms(algo_p99_sum(&s.algorithm)), 3, false;
        "algorithm, mean per attempt (ms)", |s| ms(s.algorithm_mean_total_s), 4, false;
        "e2e scheduling p50 (ms)", |s| ms(s.e2e.p50_s), 2, false;
        "e2e scheduling p99 (ms)", |s| ms(s.e2e.p99_s), 2, false;
        "scheduling attempts (whole run)", |s| Some(s.attempts_total), 0, true;
        "binding writes per binding (load)", |s| Some(s.binding_writes_per_binding), 2, true;
        "event writes per binding (load)", |s| Some(s.event_writes_per_binding), 2, true;
        "CPU seconds, load phase", |s| Some(s.cpu_load_s), 2, true;
        "CPU seconds, whole run", |s| Some(s.cpu_total_s), 2, true;
        "peak RSS (MiB, VmHWM)", |s| mib(s.rss_peak_kib), 1, true;
        "steady RSS at rest (MiB, VmRSS)", |s| mib(s.rss_steady_kib), 1, true;
    );
    table(&rows)
}

/// The agreement row: every pair agrees, or each listed difference after churn is explained
/// by the pair's history (replayed through the oracle).
fn agreement_target(run: &Run) -> String {
    let (f, a) = (&run.agreement_fresh, &run.agreement_after_churn);
    let explained = a.replays.iter().filter(|r| r.explained).count();
    let after_ok = a.disagree == 0 || (explained == a.disagree && a.replays.len() == a.disagree);
    let after = if a.disagree == 0 {
        String::new()
    } else {
        format!(
            "; {explained} of the {} differences after churn explained by the pair's history (replayed through the reference, see below)",
            a.disagree
        )
    };
    format!(
        "| 100 % placement agreement, or a reason per difference | fresh {}/{} ({:.2} %), after churn {}/{} ({:.2} %){after} | {} |\n",
        f.agree,
        f.pairs,
        f.ratio() * 100.0,
        a.agree,
        a.pairs,
        a.ratio() * 100.0,
        verdict(f.disagree == 0 && after_ok)
    )
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}

/// CPU seconds during a solo phase, when recorded: who was busy while the Rust scheduler ran
/// alone.
fn solo_cpu(side: &crate::results::Side) -> String {
    match side.solo_cpu_s.as_slice() {
        [rust, go, apiserver, etcd, rest @ ..] => format!(
            " (meanwhile, over {:.0} s, CPU seconds: Rust scheduler {rust:.1}, Go scheduler {go:.1}, kube-apiserver {apiserver:.1}, etcd {etcd:.1}{})",
            side.solo_wall_s,
            rest.first()
                .map(|b| format!(", the bench (creator and watches) {b:.1}"))
                .unwrap_or_default()
        ),
        _ => " (CPU use during the phase was not recorded in this run)".to_string(),
    }
}

/// The targets of issue 6, measured in this run.
pub fn targets(run: &Run) -> String {
    let (r, g) = (&run.rust, &run.go);
    let mut s = String::from("| target | measured | verdict |\n|---|---|---|\n");
    s += &agreement_target(run);
    let rr = r.load.steady_rate_per_s.unwrap_or(0.0);
    let gr = g.load.steady_rate_per_s.unwrap_or(0.0);
    let x = div(rr, gr);
    // Alone on the apiserver: the rate after the creator stopped (else the steady rate), and
    // every write the scheduler made per binding, binding PATCHes and Events.
    let solo_rate = |p: &crate::results::Phase| {
        p.rate_after_creation_per_s
            .or(p.steady_rate_per_s)
            .unwrap_or(0.0)
    };
    let (rs, gs) = (solo_rate(&r.solo), solo_rate(&g.solo));
    let has_solo = r.solo.bindings > 0 && g.solo.bindings > 0;
    let solo_writes = r.solo_binding_writes_per_binding + r.solo_event_writes_per_binding;
    let bound = div(run.patch_ceiling_per_s, solo_writes);
    // With a replay ceiling (a bare client writing these very results), that is the bound:
    // at 1,000 clusters a binding's PATCH carries a large placement, costlier for the
    // apiserver than the small status PATCH of the raw ceiling.
    let small_share = rs / bound;
    let share = match run.replay_ceiling() {
        Some(c) if c > 0.0 => rs / c,
        _ => small_share,
    };
    let xs = div(rs, gs);
    if has_solo {
        let apiserver_bound = share >= 0.9;
        let _ = writeln!(
            s,
            "| ≥ 10× the Go scheduler's bindings/s (equal QPS settings) when the apiserver is not the limit | each alone: {xs:.2}× ({rs:.1} vs {gs:.1}/s); both at once (load): {x:.2}× ({rr:.1} vs {gr:.1}/s). {} | {} |",
            if apiserver_bound {
                format!(
                    "Alone, the Rust scheduler reached {:.0} % of what the apiserver can take of its writes (next line): the apiserver is its limit at this scale",
                    share * 100.0
                )
            } else {
                format!(
                    "Alone, the Rust scheduler used {:.0} % of what the apiserver can take of its writes{}",
                    share * 100.0,
                    solo_cpu(r)
                )
            },
            if xs >= 10.0 || !apiserver_bound {
                tenfold(xs)
            } else {
                "not applicable (apiserver-bound)".to_string()
            }
        );
        let patches_only = run.patch_ceiling_per_s / r.solo_binding_writes_per_binding.max(1e-9);
        let small = format!(
            "{rs:.1}/s vs {:.0} small PATCHes/s / {solo_writes:.2} writes ({:.2} binding PATCHes + {:.2} Event writes) = {bound:.1}/s: {:.0} % (counting binding PATCHes only: {:.0} % of {patches_only:.0}/s)",
            run.patch_ceiling_per_s,
            r.solo_binding_writes_per_binding,
            r.solo_event_writes_per_binding,
            small_share * 100.0,
            rs / patches_only * 100.0,
        );
        let measured = match run.replay_ceiling() {
            Some(c) if c > 0.0 => format!(
                "alone: {rs:.1}/s vs {c:.1}/s, the rate of a bare client writing the same results (its PATCHes and Events, in order per binding; {}): {:.0} %. Against the raw ceiling of small status PATCHes: {small}",
                list(
                    run.replay_ceiling_by_concurrency
                        .iter()
                        .map(|(k, v)| format!("{v:.1}/s with {k} in flight"))
                ),
                share * 100.0
            ),
            _ => format!("alone: {small}"),
        };
        let _ = writeln!(
            s,
            "| ≥ 90 % of PATCH ceiling / writes per binding | {measured} | {} |",
            verdict(share >= 0.9)
        );
    } else {
        let _ = writeln!(
            s,
            "| ≥ 10× the Go scheduler's bindings/s (equal QPS settings) | {x:.2}× ({rr:.1} vs {gr:.1}/s), both at once; no solo phase in this run | {} |",
            tenfold(x)
        );
        let wpb = r.binding_writes_per_binding + r.event_writes_per_binding;
        let bound = run.patch_ceiling_per_s / wpb.max(1e-9);
        let _ = writeln!(
            s,
            "| ≥ 90 % of PATCH ceiling / writes per binding | {rr:.1}/s vs {:.0} / {wpb:.2} writes = {bound:.1}/s ({:.0} %), with the apiserver shared with the Go scheduler; no solo phase in this run | {} |",
            run.patch_ceiling_per_s,
            rr / bound * 100.0,
            verdict(rr >= 0.9 * bound)
        );
    }
    let (rp, rm, src) = rust_algo(run);
    let glo = algo_p99_max(&g.algorithm);
    let ghi = algo_p99_sum(&g.algorithm);
    let gm = g.algorithm_mean_total_s;
    let px = div(glo.unwrap_or(f64::NAN), rp.unwrap_or(0.0));
    let mx = div(gm.unwrap_or(f64::NAN), rm.unwrap_or(0.0));
    let _ = writeln!(
        s,
        "| p99 algorithm latency ≥ 10× lower | Rust p99 {} ms ({src}) vs Go p99 ≥ {} ms (slowest step's p99; ≤ {} ms, the sum of the steps' p99s): {px:.1}× lower at least; means {} vs {} ms: {mx:.1}× lower | {} |",
        num(ms(rp), 4),
        num(ms(glo), 3),
        num(ms(ghi), 3),
        num(ms(rm), 4),
        num(ms(gm), 4),
        verdict(px >= 10.0)
    );
    let mr = div(r.rss_peak_kib as f64, g.rss_peak_kib as f64);
    let at = run.clusters == 1000 && run.bindings == 10000;
    let _ = writeln!(
        s,
        "| ≤ 1/3 of Go's peak RSS (at 1,000 clusters × 10,000 bindings) | {:.2} ({} vs {} MiB){} | {} |",
        mr,
        num(mib(r.rss_peak_kib), 1),
        num(mib(g.rss_peak_kib), 1),
        if at {
            ""
        } else {
            " — at this scale, for information"
        },
        verdict(mr <= 1.0 / 3.0)
    );
    s
}

fn agreement(title: &str, a: &Agreement) -> String {
    let mut s = format!(
        "### {title}\n\n{}/{} pairs agree ({:.2} %); {} of them differ only in the order of `spec.clusters`, {} only in the `Scheduled` reason.\n\n",
        a.agree,
        a.pairs,
        a.ratio() * 100.0,
        a.order_only,
        a.condition_differs
    );
    if !a.disagreements.is_empty() {
        s += "| binding | strategy | only in Rust's | only in Go's | Rust | Go | Rust condition | Go condition |\n|---|---|---|---|---|---|---|---|\n";
        for d in a.disagreements.iter().take(50) {
            let _ = writeln!(
                s,
                "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
                d.binding,
                d.strategy,
                d.only_rust,
                d.only_go,
                d.rust,
                d.go,
                d.rust_condition.replace('|', "\\|"),
                d.go_condition.replace('|', "\\|")
            );
        }
        if a.disagree > 50 {
            let _ = writeln!(
                s,
                "\n… and {} more (the first {} are in the JSON results).",
                a.disagree - 50,
                a.disagreements.len()
            );
        }
        s.push('\n');
    }
    if !a.replays.is_empty() {
        s += &replays(&a.replays);
    }
    if !a.order_differences.is_empty() {
        s += "Pairs with the same clusters in a different order (binding, strategy, then Rust's and Go's `spec.clusters` in full):\n\n";
        for d in a.order_differences.iter().take(20) {
            let _ = writeln!(
                s,
                "* `{}` ({}): Rust {}; Go {}",
                d.binding, d.strategy, d.rust, d.go
            );
        }
        s.push('\n');
    }
    s
}

/// The replay of disagreeing pairs' histories (see hack/bench/src/replay.rs).
fn replays(rs: &[crate::replay::PairReplay]) -> String {
    let explained = rs.iter().filter(|r| r.explained).count();
    let mut s = format!(
        "#### Replay of the disagreeing pairs\n\n\
        Each placement change of each member during churn was replayed offline: the binding with \
        the placement it had before the change, against the clusters as they were after the \
        first *k* churn operations (taints, then deletions), for the largest *k* the member could \
        have seen, then smaller ones. The upstream scheduler (the oracle, `hack/oracle`) and \
        `karmada-scheduler simulate` ran on the same inputs. A pair is explained when the oracle \
        reproduces every change of both members, each member's in states no older than its \
        previous change's: given the cluster states that member saw, the reference lands where \
        it landed.\n\n\
        **{explained} of {} pair(s) explained by their histories.**\n\n",
        rs.len()
    );
    for r in rs {
        let _ = writeln!(
            s,
            "`{}`: {}{}
",
            r.binding,
            if r.explained {
                "explained"
            } else {
                "**not explained**"
            },
            r.error
                .as_ref()
                .map(|e| format!(" (replay failed: {e})"))
                .unwrap_or_default()
        );
        if r.sides.is_empty() {
            continue;
        }
        s += "| member | at (s after churn began) | replicas | removed | added | churn ops begun by then | oracle reproduces it after | simulate reproduces it after |\n|---|---:|---:|---|---|---:|---|---|\n";
        for side in &r.sides {
            for c in &side.changes {
                let _ = writeln!(
                    s,
                    "| {} | {:.2} | {} | {} | {} | {} | {} | {} |",
                    side.scheduler,
                    c.at_s,
                    c.replicas,
                    c.removed,
                    c.added,
                    c.ops_before,
                    match c.oracle_ops {
                        Some(k) => format!("{k} ops ({})", c.seen),
                        None => "**no state tried**".into(),
                    },
                    match c.simulate_ops {
                        Some(k) => format!("{k} ops"),
                        None => "**no state tried**".into(),
                    }
                );
            }
        }
        s.push('\n');
    }
    s
}

/// The whole Markdown report.
pub fn markdown(run: &Run, chart_file: &str, step: f64, scales: &[String]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# karmada-scheduler: Rust vs Go v1.18.2 — {} clusters × {} bindings\n",
        run.clusters, run.bindings
    );
    let _ = writeln!(
        s,
        "Run {} on {} (commit `{}`), seed {}. Both schedulers ran at the same time against one kube-apiserver \
        with `--kube-api-qps={} --kube-api-burst={} --enable-scheduler-estimator={}`{}; each owned half of the bindings \
        through `--scheduler-name` (`bench-rust`, `bench-go`). Reproduce: `hack/bench.sh run --clusters {} --bindings {} --seed {}`.\n",
        run.date,
        run.machine,
        run.git_commit,
        run.seed,
        run.kube_api_qps,
        run.kube_api_burst,
        run.estimator,
        if run.extra_flags.is_empty() {
            String::new()
        } else {
            format!(" `{}`", run.extra_flags.join(" "))
        },
        run.clusters,
        run.bindings,
        run.seed
    );
    s += "## Targets\n\n";
    s += &targets(run);
    s += "\n## Figures (Rust vs Go, same run)\n\n";
    s += &figures(run);
    let _ = writeln!(
        s,
        "\nApiserver ceiling: {:.0} status PATCHes/s with a tight client ({}). \
        Creator: {:.0} bindings/s. Load phase: {:.1} s wall; CPU seconds used meanwhile: kube-apiserver {:.1}, etcd {:.1}, \
        Rust scheduler {:.1}, Go scheduler {:.1}.\n",
        run.patch_ceiling_per_s,
        list(
            run.patch_ceiling_by_concurrency
                .iter()
                .map(|(c, r)| format!("{r:.0}/s with {c} in flight"))
        ),
        run.create_rate_per_s,
        run.load_wall_s,
        run.apiserver_cpu_load_s,
        run.etcd_cpu_load_s,
        run.rust.cpu_load_s,
        run.go.cpu_load_s
    );
    s += "## Placement agreement\n\n";
    s += "After the load phase settled, every binding was created again with the same spec for the other scheduler \
        (name suffix `-m`), and the two `spec.clusters` compared as sets of (cluster, replicas). The churn was then \
        applied to both members of each pair, and the pairs compared again.\n\n";
    s += &agreement("Fresh placements", &run.agreement_fresh);
    s += &agreement("After churn", &run.agreement_after_churn);
    let _ = writeln!(
        s,
        "Churn: {} pairs scaled, then {} clusters tainted (`NoSchedule`), then {} clusters deleted \
        (held terminating by a finalizer), each step settled before the next.\n",
        run.churn.scaled_pairs, run.churn.tainted_clusters, run.churn.deleted_clusters
    );
    s += "## Chart\n\n";
    let _ = writeln!(s, "![throughput and p99 latency per scale]({chart_file})\n");
    let _ = writeln!(
        s,
        "Orange: Rust; blue: Go. One pair of bars per scale, left to right: {}. Left panel: load-phase \
        bindings/s (steady, 10–90 %), linear, a gridline every {step} bindings/s. Right panel: stream-phase (paced) p99 latency \
        from creation to `Scheduled=True`, log scale, a gridline per decade from 1 ms (bottom) to 1000 s (top).\n",
        scales.join(", ")
    );
    s += "## Method\n\n";
    s += METHOD;
    if let Some(p) = &run.profile_rust {
        let _ = writeln!(
            s,
            "\n## Profile of the Rust scheduler during the load phase (`perf`, self time)\n\n```\n{p}\n```\n"
        );
    }
    if let Some(p) = &run.profile_apiserver {
        let _ = writeln!(
            s,
            "\n## Profile of kube-apiserver during the load phase (`perf`, self time)\n\n```\n{p}\n```\n"
        );
    }
    s
}

const METHOD: &str = "\
* Control plane: `crates/testenv` (hack/local-up.sh) — etcd and kube-apiserver on loopback with the Karmada CRDs and \
the project's Cluster CRD. Clusters are created directly, with their status through the status subresource; no member \
clusters run unless `--estimator` is given.
* Workload: `hack/bench/src/workload.rs`, seeded: clusters with providers, regions, zones, env/tier/team labels, \
taints of the three effects, resource summaries in several quantity formats, resource models on some; bindings \
(ResourceBindings and ClusterResourceBindings) for Deployments, StatefulSets, Jobs, a CRD kind and non-workloads, with \
Duplicated, Aggregated, static-weight, dynamic-weight and plain Weighted division, cluster affinities (label and \
field selectors, names, exclusions), ordered affinity terms, spread constraints by cluster/region/zone/provider, \
tolerations and workload affinity groups.
* Load: the bench creates all bindings as fast as its creator goes (the two halves interleaved) while both \
schedulers run, and watches them. A binding is *done* when its `Scheduled` condition first appears; latency is from \
just before its POST to the watch event showing `Scheduled=True`. Steady throughput is the completion rate between \
the 10th and 90th percentile of completion times.
* Writes per binding: watch events on the binding after its creation (every PATCH that changed it) plus Event writes \
(sum of `count` of the Events whose `source` is the scheduler), in the load phase. The apiserver ceiling is the best \
rate of status merge-PATCHes (each one a real change) from a client without rate limit, measured before the \
schedulers start.
* Churn: `spec.replicas` changed on both members of some pairs (done when `status.schedulerObservedGeneration` \
reaches the new generation); a `NoSchedule` taint added to some clusters; some clusters deleted while a finalizer \
holds them. Taint and deletion steps are timed until the bindings are quiet; attempts come from \
`karmada_scheduler_schedule_attempts_total`.
* Algorithm latency: for Go, `karmada_scheduler_scheduling_algorithm_duration_seconds` (per step) scraped from its \
`/metrics` at the end; quantiles are interpolated inside the buckets (0.001 s × 2^k, as upstream), so values under \
1 ms are bucket-bound, while the means (`_sum / _count`) are exact. A whole attempt's p99 lies between the slowest \
step's p99 and the sum of the steps' p99s; the target uses the lower bound. For Rust, the same histogram from the \
daemon's `/metrics`; the bench also times `Scheduler::schedule_binding` in-process on the same clusters and bindings \
after the control plane stopped (two passes, the second timed), at full precision.
* Solo: after the mirrors, each scheduler in turn gets a batch of bindings of its own (`--solo-count`, same specs for \
both) while the other has nothing to do, so that it has the apiserver to itself; the rate counted is the completion \
rate after the last creation (the creator no longer competing). The PATCH-ceiling target divides the ceiling by all \
of the scheduler's writes per binding in that phase (binding PATCHes and Event writes). The batch is deleted \
afterwards, so the churn phases meet the same bindings.
* Replay ceiling: right after the Rust solo batch, a client without rate limit creates copies of those bindings \
for no scheduler and writes, binding after binding, what the Rust scheduler wrote for them (the spec PATCH with \
`spec.clusters` and the applied-placement annotation, the status PATCH, two Events), in order per binding, with 16 \
and then 64 bindings in flight. Its best rate is the ceiling for these very writes; when measured, the PATCH-ceiling \
target is judged against it (the raw ceiling divided by the writes per binding is shown too).
* History replay: during churn the bench keeps every binding's placement history. For each pair that disagrees \
after churn, every placement change of each member is replayed offline: the binding with its previous placement \
and observing-affinity name, against the clusters as they were after the first *k* churn operations (the largest \
*k* begun before the change was seen, then up to 40 smaller ones), through the oracle (`hack/oracle`, the upstream \
scheduler in-process) and `karmada-scheduler simulate`.
* Memory: VmHWM (peak) from `/proc/<pid>/status` and VmRSS sampled every 250 ms; steady is the mean over 3 s at rest \
at the end of the run.
";
