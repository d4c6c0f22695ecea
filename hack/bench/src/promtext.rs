//! Just enough of the Prometheus text format to read counters and histograms from both
//! schedulers' `/metrics`, whatever order they print labels in.

use std::collections::BTreeMap;

/// The scheduler metrics the scenarios read (the reference's names).
pub const ALGO: &str = "karmada_scheduler_scheduling_algorithm_duration_seconds";
pub const E2E: &str = "karmada_scheduler_e2e_scheduling_duration_seconds";
pub const ATTEMPTS: &str = "karmada_scheduler_schedule_attempts_total";
/// Our estimator client's call latency (the Go scheduler has none).
pub const ESTIMATOR_CALL: &str = "karmada_scheduler_estimator_client_request_duration_seconds";

/// One sample line.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub value: f64,
}

/// Parses every sample line (comments and malformed lines are skipped).
pub fn parse(text: &str) -> Vec<Sample> {
    text.lines().filter_map(parse_line).collect()
}

fn parse_line(line: &str) -> Option<Sample> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return None;
    }
    let (name, labels, rest) = match line.find('{') {
        Some(open) => {
            let close = line.rfind('}')?;
            (
                &line[..open],
                parse_labels(&line[open + 1..close])?,
                &line[close + 1..],
            )
        }
        None => {
            let sp = line.find(char::is_whitespace)?;
            (&line[..sp], BTreeMap::new(), &line[sp..])
        }
    };
    let value = match rest.split_whitespace().next()? {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        v => v.parse().ok()?,
    };
    Some(Sample {
        name: name.to_string(),
        labels,
        value,
    })
}

fn parse_labels(s: &str) -> Option<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    let mut chars = s.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            return Some(out);
        }
        let mut key = String::new();
        for c in chars.by_ref() {
            if c == '=' {
                break;
            }
            key.push(c);
        }
        if chars.next()? != '"' {
            return None;
        }
        let mut val = String::new();
        loop {
            match chars.next()? {
                '\\' => match chars.next()? {
                    'n' => val.push('\n'),
                    c => val.push(c),
                },
                '"' => break,
                c => val.push(c),
            }
        }
        out.insert(key.trim().to_string(), val);
    }
}

/// Sum of the samples named `name` whose labels include `filter`.
pub fn sum(samples: &[Sample], name: &str, filter: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|s| s.name == name && matches(s, filter))
        .map(|s| s.value)
        .sum()
}

fn matches(s: &Sample, filter: &[(&str, &str)]) -> bool {
    filter
        .iter()
        .all(|(k, v)| s.labels.get(*k).is_some_and(|x| x == v))
}

/// A histogram: cumulative bucket counts by upper bound, plus sum and count.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Histogram {
    pub buckets: Vec<(f64, f64)>,
    pub sum: f64,
    pub count: f64,
}

impl Histogram {
    /// The histogram `name` (without `_bucket`), summed over series matching `filter`.
    pub fn read(samples: &[Sample], name: &str, filter: &[(&str, &str)]) -> Histogram {
        let mut by_le: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        for s in samples
            .iter()
            .filter(|s| s.name == format!("{name}_bucket") && matches(s, filter))
        {
            let Some(le) = s.labels.get("le").and_then(|l| match l.as_str() {
                "+Inf" => Some(f64::INFINITY),
                l => l.parse::<f64>().ok(),
            }) else {
                continue;
            };
            let e = by_le.entry(le.to_bits()).or_insert((le, 0.0));
            e.1 += s.value;
        }
        let mut buckets: Vec<(f64, f64)> = by_le.into_values().collect();
        buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
        Histogram {
            buckets,
            sum: sum(samples, &format!("{name}_sum"), filter),
            count: sum(samples, &format!("{name}_count"), filter),
        }
    }

    /// Mean observation, seconds.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// Quantile `q` by linear interpolation inside the bucket (Prometheus'
    /// `histogram_quantile`); the highest finite bound when it falls in `+Inf`.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        let total = self.buckets.last()?.1;
        if total <= 0.0 {
            return None;
        }
        let rank = q * total;
        let mut prev = (0.0, 0.0);
        for &(le, c) in &self.buckets {
            if c >= rank {
                if le.is_infinite() {
                    return Some(prev.0);
                }
                let width = le - prev.0;
                let inside = c - prev.1;
                let frac = if inside > 0.0 {
                    (rank - prev.1) / inside
                } else {
                    1.0
                };
                return Some(prev.0 + width * frac);
            }
            prev = (le, c);
        }
        Some(prev.0)
    }
}

/// Sums of the samples named `name` by the key `key` gives each (samples it gives none are
/// left out).
pub fn sums_by(
    samples: &[Sample],
    name: &str,
    key: impl Fn(&Sample) -> Option<String>,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    for s in samples.iter().filter(|s| s.name == name) {
        if let Some(k) = key(s) {
            *out.entry(k).or_insert(0.0) += s.value;
        }
    }
    out
}

/// What grew between two readings of the same counters: `after - before` per key, the keys
/// that did not grow left out.
pub fn growth(
    before: &BTreeMap<String, f64>,
    after: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    let was = |k: &String| before.get(k).copied().unwrap_or(0.0);
    (after.iter().map(|(k, v)| (k.clone(), v - was(k))))
        .filter(|(_, d)| *d > 0.0)
        .collect()
}

impl Sample {
    /// The value of label `k` ("" when absent).
    pub fn label(&self, k: &str) -> &str {
        self.labels.get(k).map_or("", String::as_str)
    }
}

impl Histogram {
    /// The observations since `before` (an earlier reading of the same histogram), bucket by
    /// bucket.
    pub fn since(&self, before: &Histogram) -> Histogram {
        let was = |le: f64| {
            let b = before
                .buckets
                .iter()
                .find(|(l, _)| l.to_bits() == le.to_bits());
            b.map_or(0.0, |(_, c)| *c)
        };
        Histogram {
            buckets: self
                .buckets
                .iter()
                .map(|&(le, c)| (le, c - was(le)))
                .collect(),
            sum: self.sum - before.sum,
            count: self.count - before.count,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO: &str = r#"# HELP x
# TYPE karmada_scheduler_scheduling_algorithm_duration_seconds histogram
karmada_scheduler_scheduling_algorithm_duration_seconds_bucket{schedule_step="Filter",le="0.001"} 8
karmada_scheduler_scheduling_algorithm_duration_seconds_bucket{schedule_step="Filter",le="0.002"} 10
karmada_scheduler_scheduling_algorithm_duration_seconds_bucket{schedule_step="Filter",le="+Inf"} 10
karmada_scheduler_scheduling_algorithm_duration_seconds_sum{schedule_step="Filter"} 0.005
karmada_scheduler_scheduling_algorithm_duration_seconds_count{schedule_step="Filter"} 10
karmada_scheduler_schedule_attempts_total{result="scheduled",schedule_type="ReconcileSchedule"} 7
"#;

    #[test]
    fn reads_histograms_and_counters() {
        let s = parse(GO);
        let h = Histogram::read(
            &s,
            "karmada_scheduler_scheduling_algorithm_duration_seconds",
            &[("schedule_step", "Filter")],
        );
        assert_eq!(h.count, 10.0);
        assert_eq!(h.buckets.len(), 3);
        assert!((h.quantile(0.5).unwrap() - 0.000625).abs() < 1e-9);
        assert!((h.quantile(0.9).unwrap() - 0.0015).abs() < 1e-9);
        assert_eq!(h.mean(), Some(0.0005));
        assert_eq!(
            sum(&s, "karmada_scheduler_schedule_attempts_total", &[]),
            7.0
        );
        assert_eq!(Histogram::default().quantile(0.5), None);
    }

    #[test]
    fn label_order_and_escapes() {
        let s = parse(r#"m{le="0.5",a="x\"y"} 3"#);
        assert_eq!(s[0].labels["a"], "x\"y");
        assert_eq!(s[0].labels["le"], "0.5");
    }
}
