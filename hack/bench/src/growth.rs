//! `render --growth a.json b.json …`: how CPU per binding and peak RSS grow with the number of
//! clusters, ours and Go, from the results of earlier `estimators` runs (a later file's
//! scale replaces an earlier one's). Drawn on log-log axes with the n·log n line through our
//! smallest scale for reference; writes `growth.md`, `growth.json` and `growth.png`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::style::RGBColor;
use serde::{Deserialize, Serialize};

use crate::chart::{GO, RUST, canvas};
use crate::estload::EstBench;
use crate::figures::{Row, fill, table};

/// One scale's figures.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct GrowthPoint {
    pub clusters: usize,
    /// CPU seconds per binding of the alone batches, `[ours, Go]`.
    pub cpu_per_binding_s: [f64; 2],
    /// Peak RSS over the scale, MiB, `[ours, Go]`.
    pub peak_rss_mib: [f64; 2],
    /// Bindings/s of the alone batches, `[ours, Go]`.
    pub rate_per_s: [f64; 2],
    /// The results file and its commit.
    pub source: String,
}

/// The n·log n line.
const GREY: RGBColor = RGBColor(150, 150, 150);
/// Decade gridlines.
const DECADE: RGBColor = RGBColor(220, 220, 220);

/// Every scale found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Growth {
    pub points: Vec<GrowthPoint>,
}

/// Reads the results files (named relative to `base` in the report); a later file's scale
/// replaces an earlier one's.
pub fn collect(files: &[PathBuf], base: &Path) -> anyhow::Result<Growth> {
    let mut by: BTreeMap<usize, GrowthPoint> = BTreeMap::new();
    for f in files {
        let b: EstBench = crate::read_results(f)?;
        for s in &b.scales {
            let alone = &s.alone;
            let point = GrowthPoint {
                clusters: s.clusters,
                cpu_per_binding_s: alone
                    .each_ref()
                    .map(|a| a.cpu_s / s.alone_bindings.max(1) as f64),
                peak_rss_mib: s.peak_rss_kib.map(|k| k as f64 / 1024.0),
                rate_per_s: alone
                    .each_ref()
                    .map(|a| a.phase.steady_rate_per_s.unwrap_or(0.0)),
                source: format!(
                    "{} ({})",
                    f.strip_prefix(base).unwrap_or(f).display(),
                    b.stamp.git_commit
                ),
            };
            by.insert(s.clusters, point);
        }
    }
    Ok(Growth {
        points: by.into_values().collect(),
    })
}

/// n·log n relative to the first scale: what a figure proportional to it would be at `n`.
fn nlogn_from(first: usize, value: f64, n: usize) -> f64 {
    let f = |x: usize| x as f64 * (x as f64).log2();
    value * f(n) / f(first)
}

/// The chart: left CPU seconds per binding, right peak RSS; x and y logarithmic; ours orange,
/// Go blue, n·log n through our smallest scale grey. Decade gridlines; no text (the bitmap
/// backend has no font here), the values are in the Markdown.
pub fn draw(path: &Path, g: &Growth) -> anyhow::Result<()> {
    let (Some(first), Some(last)) = (g.points.first(), g.points.last()) else {
        return Ok(());
    };
    canvas(path, (1, 2), 480, |k, frame| {
        let value = |p: &GrowthPoint, i: usize| [p.cpu_per_binding_s, p.peak_rss_mib][k][i];
        let (x0, y0) = (first.clusters, value(first, 0));
        let series = |v: &dyn Fn(&GrowthPoint) -> f64| -> Vec<(f64, f64)> {
            let xy = |p: &GrowthPoint| (p.clusters as f64, v(p).max(1e-6));
            g.points.iter().map(xy).collect()
        };
        let lines = [
            (
                series(&|p: &GrowthPoint| nlogn_from(x0, y0, p.clusters)),
                GREY,
                2,
            ),
            (series(&|p: &GrowthPoint| value(p, 1)), GO, 3),
            (series(&|p: &GrowthPoint| value(p, 0)), RUST, 3),
        ];
        let ys = || lines.iter().flat_map(|l| l.0.iter().map(|p| p.1));
        let (xmin, xmax) = (x0 as f64 / 2.0, last.clusters as f64 * 2.0);
        let ymin = ys().fold(f64::MAX, f64::min) / 2.0;
        let ymax = ys().fold(0.0, f64::max) * 2.0;
        let log = |v: f64, lo: f64, hi: f64| (v / lo).log10() / (hi / lo).log10();
        let mut d = 10f64.powf(ymin.log10().ceil());
        while d < ymax {
            let f = log(d, ymin, ymax);
            frame.line(&[(0.0, f), (1.0, f)], DECADE, 1)?;
            d *= 10.0;
        }
        for (n, (points, color, width)) in lines.into_iter().enumerate() {
            let at = |(x, y): (f64, f64)| (log(x, xmin, xmax), log(y, ymin, ymax));
            let points: Vec<(f64, f64)> = points.into_iter().map(at).collect();
            frame.line(&points, color, width)?;
            for p in points.into_iter().filter(|_| n > 0) {
                frame.dot(p, color)?;
            }
        }
        Ok(())
    })
}

/// The Markdown report: four rows a scale.
pub fn markdown(g: &Growth, png: &str) -> String {
    let first = g
        .points
        .first()
        .map(|p| (p.clusters, p.cpu_per_binding_s[0]));
    let rows = g.points.iter().flat_map(|p| {
        let c = p.clusters;
        let nlogn = first.map(|(f, v)| nlogn_from(f, v, c));
        let [cpu, rss, rate] =
            [p.cpu_per_binding_s, p.peak_rss_mib, p.rate_per_s].map(|v| v.map(Some));
        let nlogn_name = format!("{c} clusters: n·log n from our first (CPU seconds per binding)");
        [
            Row::of(format!("{c} clusters: CPU seconds per binding"), cpu, 4).lower(),
            Row::new(nlogn_name, nlogn, None, 4),
            Row::of(format!("{c} clusters: peak RSS (MiB)"), rss, 1).lower(),
            Row::of(format!("{c} clusters: bindings/s alone"), rate, 2).higher(),
        ]
    });
    let mut sources: Vec<&str> = g.points.iter().map(|p| p.source.as_str()).collect();
    sources.dedup();
    fill(
        include_str!("../templates/growth.md"),
        &[
            ("png", png.to_string()),
            ("figures", table(&rows.collect::<Vec<_>>())),
            ("sources", sources.join(", ")),
        ],
    )
}
