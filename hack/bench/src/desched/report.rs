//! The descheduling pass's report: both passes, the fair ceilings, the API server's requests
//! and the targets.

use std::collections::BTreeMap;

use super::{DeschedBench, DeschedSide, EVENTS_PER_WRITE, READY, REPLICAS, SUCCEED};
use crate::figures::{met, ratio};

/// The Markdown report.
pub fn markdown(b: &DeschedBench) -> String {
    let secs = |s: &DeschedSide| {
        s.pass_s
            .map_or("did not finish".to_string(), |v| format!("{v:.2} s"))
    };
    let mib = |s: &DeschedSide| s.peak_rss_kib as f64 / 1024.0;
    let per = |s: &DeschedSide| s.estimator_calls as f64 / b.bindings.max(1) as f64;
    let DeschedBench {
        bindings,
        clusters,
        date,
        machine,
        git_commit,
        latency_ms,
        expected_writes,
        ..
    } = b;
    let mut out = format!(
        "# Descheduling pass: {bindings} bindings × {clusters} clusters\n\n\
         {date} · {machine} · commit {git_commit}\n\n\
         One pass of the Go karmada-descheduler v1.18.2 and of ours, in turn, on one local \
         kube-apiserver. Every binding is a Deployment divided `Aggregated` over all {clusters} clusters \
         ({REPLICAS} replicas each, {READY} ready), so every cluster is asked `GetUnschedulableReplicas`; a stub \
         estimator behind {clusters} `ExternalName` Services answers 0–2 from a hash of cluster and \
         workload after {latency_ms:.0} ms. {expected_writes} bindings get replicas back. The time runs from the process \
         start to the last of those writes as a watch of the bench sees it (cache sync and estimator connections included).\n\n",
    );
    out.push_str("| | ours | Go | Go / ours |\n| --- | ---: | ---: | ---: |\n");
    // A row: each side's figure as text, and Go / ours of the numbers `n` gives, if any.
    type Num<'a> = Option<&'a dyn Fn(&DeschedSide) -> Option<f64>>;
    let mut row = |what: &str, cell: &dyn Fn(&DeschedSide) -> String, n: Num| {
        let ratio = n.map_or(" ".into(), |n| format!(" {} ", ratio(n(&b.go), n(&b.rust))));
        let (r, g) = (cell(&b.rust), cell(&b.go));
        out.push_str(&format!("| {what} | {r} | {g} |{ratio}|\n"));
    };
    let opt_s = |v: Option<f64>, d: usize| v.map_or("–".to_string(), |v| format!("{v:.d$} s"));
    // One row a line: name, |side| cell[, |side| number for Go / ours].
    macro_rules! rows {
        ($($what:expr, |$s:ident| $cell:expr $(, |$t:ident| $n:expr)?;)*) => {
            $(row(&$what, &|$s: &DeschedSide| $cell, None $(.or(Some(&|$t: &DeschedSide| $n)))?);)*
        };
    }
    let last_stored = |s: &DeschedSide| s.stored_deciles.get(3).copied();
    let expected_events = b.expected_writes * EVENTS_PER_WRITE;
    rows!(
        "pass time", |s| secs(s), |s| s.pass_s;
        "bindings written", |s| s.written.to_string();
        "estimator calls per binding", |s| format!("{:.1}", per(s)), |s| Some(per(s));
        "peak RSS", |s| format!("{:.1} MiB", mib(s)), |s| Some(mib(s));
        "CPU seconds", |s| format!("{:.2}", s.cpu_s), |s| Some(s.cpu_s);
        "first write seen (start-up, caches, connections)", |s| opt_s(s.first_write_s, 2);
        "kube-apiserver + etcd CPU seconds during the pass, Events included",
            |s| format!("{:.2}", s.control_plane_cpu_s);
        format!("`{SUCCEED}` Events written (of {expected_events})"), |s| s.events.to_string();
        "every write seen, Events included", |s| opt_s(s.all_writes_s(), 2), |s| s.all_writes_s();
        "10 / 50 / 90 % of the binding writes seen", |s| deciles_cell(&s.write_deciles, 2);
        "10 / 50 / 90 % of the binding writes stored (the API server's `managedFields` times, whole seconds)",
            |s| deciles_cell(&s.stored_deciles, 0);
        "last binding write stored (within a second)", |s| opt_s(last_stored(s), 0), |s| last_stored(s);
    );
    out.push_str(&format!(
        "\nBoth wrote the same `spec.clusters`, the one the reference's rules give, for {} of {} bindings.\n",
        b.agree, b.bindings
    ));
    out.push_str(&own_time(&b.rust));
    if !b.ceilings.is_empty() {
        out.push_str(
            "\nFair ceiling: a bare client in the bench does a pass's work and nothing else (connects a \
             channel per cluster, lists the bindings, asks every cluster of each binding at once, \
             PUTs each binding with its new `spec.clusters` from the answers and creates the \
             binding's two Events) while the bench watches as during a pass, \
             on fresh copies of the same bindings; ours is compared by the time every write of its \
             pass, Events included, was seen:\n\n\
             | bindings in flight | ceiling pass | estimator calls | kube-apiserver + etcd CPU seconds | ours / ceiling time |\n| ---: | ---: | ---: | ---: | ---: |\n",
        );
        for c in &b.ceilings {
            let (n, pass, calls) = (c.concurrency, c.pass_s, c.estimator_calls);
            let cpu = c.control_plane_cpu_s;
            let ours = ratio(b.rust.all_writes_s(), Some(pass));
            out.push_str(&format!(
                "| {n} | {pass:.2} s | {calls} | {cpu:.2} | {ours} |\n"
            ));
        }
    }
    // How much of the machine the API server took: its CPU seconds grow with a pass's length
    // as much as with its writes (the same writes cost it 22 and 29 CPU seconds in two
    // ceilings of one run), so they say where the cores went, not what the writes must cost.
    let busy = |cpu: f64, secs: Option<f64>| match secs {
        Some(t) if t > 0.0 => format!("{:.2}", cpu / t),
        _ => "–".into(),
    };
    out.push_str(&format!(
        "\nCores the kube-apiserver and etcd kept busy on average (of {}): {} during ours, {} during \
         Go's{}.\n",
        b.cpus,
        busy(b.rust.control_plane_cpu_s, b.rust.all_writes_s()),
        busy(b.go.control_plane_cpu_s, b.go.all_writes_s()),
        b.ceilings
            .iter()
            .filter(|c| c.control_plane_cpu_s > 0.0)
            .map(|c| format!(
                ", {} during the bare client's with {} in flight",
                busy(c.control_plane_cpu_s, Some(c.pass_s)),
                c.concurrency
            ))
            .collect::<String>(),
    ));
    out.push_str(&requests_table(b));
    out.push_str(&format!(
        "\n1-minute load average of the machine before the first pass: {:.2}.\n",
        b.load_before
    ));
    out.push_str(&targets(b));
    out
}

/// "a / b / c s" from the first three of `times` (the 10/50/90 % write times) with
/// `decimals` places; "–" when a side has none.
pub(super) fn deciles_cell(times: &[f64], decimals: usize) -> String {
    match times {
        [a, m, z, ..] => format!("{a:.decimals$} / {m:.decimals$} / {z:.decimals$} s"),
        _ => "–".to_string(),
    }
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

/// The targets for a pass: at least 5× Go's speed, at most half its peak RSS.
fn targets(b: &DeschedBench) -> String {
    let mut out = String::from("\n| target | measured | verdict |\n| --- | --- | --- |\n");
    let mut row = |target: &str, measured: String, ok: bool| {
        let verdict = met(ok);
        out.push_str(&format!("| {target} | {measured} | {verdict} |\n"));
    };
    if let (Some(g), Some(r)) = (b.go.pass_s, b.rust.pass_s) {
        let x = g / r;
        row("pass ≥ 5× faster than Go", format!("{x:.2}×"), x >= 5.0);
    }
    if b.go.peak_rss_kib > 0 {
        let r = b.rust.peak_rss_kib as f64 / b.go.peak_rss_kib as f64;
        row("peak RSS ≤ 1/2 of Go's", format!("{r:.2}"), r <= 0.5);
    }
    let (agree, all) = (b.agree, b.bindings);
    let same = "same writes as the reference's rules";
    row(same, format!("{agree}/{all}"), agree == all);
    let (events, expected) = (b.rust.events, b.expected_writes * EVENTS_PER_WRITE);
    let every = "every Event written, none dropped";
    row(every, format!("{events}/{expected}"), events == expected);
    out
}
