//! The descheduling pass's report: both passes, the fair ceilings, the API server's requests
//! and the targets.

use std::collections::BTreeMap;

use super::{DeschedBench, DeschedSide, EVENTS_PER_WRITE, READY, REPLICAS, SUCCEED};
use crate::figures::{fill, fill_stamped, ratio, side_rows, table, verdict};

/// The Markdown report.
pub fn markdown(b: &DeschedBench) -> String {
    let mib = |s: &DeschedSide| s.peak_rss_kib as f64 / 1024.0;
    let per = |s: &DeschedSide| s.estimator_calls as f64 / b.bindings.max(1) as f64;
    let decile = |v: &[f64], i: usize| v.get(i).copied();
    let expected_events = b.expected_writes * EVENTS_PER_WRITE;
    let events = format!("`{SUCCEED}` Events written (of {expected_events})");
    let (r, g) = (&b.rust, &b.go);
    let mut rows = side_rows!(r, g;
        "pass time (s)", |s| s.pass_s, 2, Lower;
        "bindings written", |s| Some(s.written as f64), 0, Neither;
        "estimator calls per binding", |s| Some(per(s)), 1, Lower;
        "peak RSS (MiB)", |s| Some(mib(s)), 1, Lower;
        "CPU seconds", |s| Some(s.cpu_s), 2, Lower;
        "first write seen (s; start-up, caches, connections)", |s| s.first_write_s, 2, Lower;
        "kube-apiserver + etcd CPU seconds during the pass, Events included", |s| Some(s.control_plane_cpu_s), 2, Neither;
        events, |s| Some(s.events as f64), 0, Neither;
        "every write seen, Events included (s)", |s| s.all_writes_s(), 2, Lower;
        "10 % of the binding writes seen (s)", |s| decile(&s.write_deciles, 0), 2, Lower;
        "50 % of the binding writes seen (s)", |s| decile(&s.write_deciles, 1), 2, Lower;
        "90 % of the binding writes seen (s)", |s| decile(&s.write_deciles, 2), 2, Lower;
        "10 % of the binding writes stored (s)", |s| decile(&s.stored_deciles, 0), 0, Lower;
        "50 % of the binding writes stored (s)", |s| decile(&s.stored_deciles, 1), 0, Lower;
        "90 % of the binding writes stored (s)", |s| decile(&s.stored_deciles, 2), 0, Lower;
        "last binding write stored (s)", |s| decile(&s.stored_deciles, 3), 0, Lower;
    );
    if let (Some(gp), Some(rp)) = (g.pass_s, r.pass_s) {
        rows[0] = rows[0].clone().target(gp / rp >= 5.0);
    }
    if g.peak_rss_kib > 0 {
        rows[3] = rows[3]
            .clone()
            .target(r.peak_rss_kib as f64 <= 0.5 * g.peak_rss_kib as f64);
    }
    fill_stamped(
        include_str!("../../templates/desched.md"),
        &b.stamp,
        &[
            ("bindings", b.bindings.to_string()),
            ("clusters", b.clusters.to_string()),
            ("replicas", REPLICAS.to_string()),
            ("ready", READY.to_string()),
            ("latency_ms", format!("{:.0}", b.latency_ms)),
            ("expected", b.expected_writes.to_string()),
            ("agree", b.agree.to_string()),
            ("agree_verdict", verdict(b.agree == b.bindings).into()),
            ("events", r.events.to_string()),
            ("expected_events", expected_events.to_string()),
            (
                "events_verdict",
                verdict(r.events == expected_events).into(),
            ),
            ("figures", table(&rows)),
            ("own", own_time(r)),
            ("ceilings", ceilings(b)),
            ("cpus", b.cpus.to_string()),
            ("busy", busy(b)),
            ("requests", requests_table(b)),
            ("load", format!("{:.2}", b.load_before)),
        ],
    )
}

/// The bare client's passes, against ours.
fn ceilings(b: &DeschedBench) -> String {
    if b.ceilings.is_empty() {
        return String::new();
    }
    let rows = b.ceilings.iter().map(|c| {
        let (n, pass, calls, cpu) = (
            c.concurrency,
            c.pass_s,
            c.estimator_calls,
            c.control_plane_cpu_s,
        );
        let ours = ratio(b.rust.all_writes_s(), Some(pass));
        format!("| {n} | {pass:.2} s | {calls} | {cpu:.2} | {ours} |\n")
    });
    fill(
        include_str!("../../templates/desched-ceilings.md"),
        &[("rows", rows.collect())],
    )
}

/// How much of the machine the API server took: its CPU seconds grow with a pass's length as
/// much as with its writes (the same writes cost it 22 and 29 CPU seconds in two ceilings of
/// one run), so they say where the cores went, not what the writes must cost.
fn busy(b: &DeschedBench) -> String {
    let busy = |cpu: f64, secs: Option<f64>| match secs {
        Some(t) if t > 0.0 => format!("{:.2}", cpu / t),
        _ => "–".into(),
    };
    let (r, g) = (&b.rust, &b.go);
    let ours = busy(r.control_plane_cpu_s, r.all_writes_s());
    let go = busy(g.control_plane_cpu_s, g.all_writes_s());
    let bare = (b.ceilings.iter().filter(|c| c.control_plane_cpu_s > 0.0)).map(|c| {
        let cores = busy(c.control_plane_cpu_s, Some(c.pass_s));
        format!(
            ", {cores} during the bare client's with {} in flight",
            c.concurrency
        )
    });
    format!(
        "{ours} during ours, {go} during Go's{}",
        bare.collect::<String>()
    )
}

/// Where ours spent its pass, from its own histograms (empty for results taken before the
/// bench read them): by Little's law, the bindings in work on average are the work's
/// seconds over the pass's.
fn own_time(s: &DeschedSide) -> String {
    let (Some(own), Some(pass)) = (&s.own, s.pass_s) else {
        return String::new();
    };
    let call = if own.call_count > 0.0 {
        format!(
            ", an estimator call {:.1} ms on average ({:.0} calls)",
            own.call_sum_s / own.call_count * 1000.0,
            own.call_count
        )
    } else {
        String::new()
    };
    format!(
        "\nWhere ours spent its pass (its own `workqueue_work_duration_seconds` and estimator \
         histograms): {:.0} bindings worked on, {:.1} ms each on average (fan-out, rules and \
         write){call}; {:.1} bindings in work on average over the {pass:.2} s.\n",
        own.work_count,
        own.work_sum_s / own.work_count.max(1.0) * 1000.0,
        own.work_sum_s / pass.max(f64::EPSILON),
    )
}

/// The requests each pass made the API server serve, by verb and resource (empty for results
/// taken before the bench read them).
fn requests_table(b: &DeschedBench) -> String {
    let mut columns: Vec<(String, &BTreeMap<String, u64>)> = vec![
        ("ours".into(), &b.rust.requests),
        ("Go".into(), &b.go.requests),
    ];
    for c in &b.ceilings {
        columns.push((format!("ceiling, {} in flight", c.concurrency), &c.requests));
    }
    let keys: std::collections::BTreeSet<&String> =
        columns.iter().flat_map(|(_, r)| r.keys()).collect();
    if keys.is_empty() {
        return String::new();
    }
    let mut out = String::from(
        "\nRequests the API server served during each pass (`apiserver_request_total`, the bench's \
         own watches included; a watch is counted when it ends):\n\n| verb resource |",
    );
    for (name, _) in &columns {
        out.push_str(&format!(" {name} |"));
    }
    out.push_str(&format!("\n| --- |{}\n", " ---: |".repeat(columns.len())));
    for key in keys {
        out.push_str(&format!("| {key} |"));
        for (_, r) in &columns {
            out.push_str(&format!(" {} |", r.get(key).copied().unwrap_or(0)));
        }
        out.push('\n');
    }
    out
}
