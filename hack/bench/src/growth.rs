//! `--growth-from a.json,b.json,...`: how CPU per binding and peak RSS grow with the number of
//! clusters, ours and Go, from the results of earlier `--estimators-only` runs (a later file's
//! scale replaces an earlier one's). Drawn on log-log axes with the n·log n line through our
//! smallest scale for reference; writes `growth.md`, `growth.json` and `growth.png`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::chart::{GO, RUST};
use crate::estload::EstBench;

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

/// Every scale found.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Growth {
    pub points: Vec<GrowthPoint>,
}

/// Reads the results files; a later file's scale replaces an earlier one's.
pub fn collect(files: &[PathBuf]) -> anyhow::Result<Growth> {
    let mut by: BTreeMap<usize, GrowthPoint> = BTreeMap::new();
    for f in files {
        let b: EstBench = crate::read_results(f)?;
        for s in &b.scales {
            let per = |i: usize| s.alone[i].cpu_s / s.alone_bindings.max(1) as f64;
            by.insert(
                s.clusters,
                GrowthPoint {
                    clusters: s.clusters,
                    cpu_per_binding_s: [per(0), per(1)],
                    peak_rss_mib: [
                        s.peak_rss_kib[0] as f64 / 1024.0,
                        s.peak_rss_kib[1] as f64 / 1024.0,
                    ],
                    rate_per_s: [
                        s.alone[0].phase.steady_rate_per_s.unwrap_or(0.0),
                        s.alone[1].phase.steady_rate_per_s.unwrap_or(0.0),
                    ],
                    source: format!(
                        "{} ({})",
                        f.file_name().unwrap_or_default().to_string_lossy(),
                        b.git_commit
                    ),
                },
            );
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
    let root = BitMapBackend::new(path, (1000, 480)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 2));
    let grey = RGBColor(150, 150, 150);
    for (k, panel) in panels.iter().enumerate() {
        let series = |i: usize| -> Vec<(f64, f64)> {
            g.points
                .iter()
                .map(|p| {
                    let v = if k == 0 {
                        p.cpu_per_binding_s[i]
                    } else {
                        p.peak_rss_mib[i]
                    };
                    (p.clusters as f64, v.max(1e-6))
                })
                .collect()
        };
        let (ours, go) = (series(0), series(1));
        let Some(&(x0, y0)) = ours.first() else {
            continue;
        };
        let reference: Vec<(f64, f64)> = g
            .points
            .iter()
            .map(|p| {
                (
                    p.clusters as f64,
                    nlogn_from(x0 as usize, y0, p.clusters).max(1e-6),
                )
            })
            .collect();
        let all = ours.iter().chain(&go).chain(&reference);
        let (xmin, xmax) = (
            x0 / 2.0,
            g.points.last().map_or(x0, |p| p.clusters as f64) * 2.0,
        );
        let ymin = all.clone().map(|p| p.1).fold(f64::MAX, f64::min) / 2.0;
        let ymax = all.map(|p| p.1).fold(0.0f64, f64::max) * 2.0;
        let mut chart = ChartBuilder::on(panel)
            .margin(20)
            .build_cartesian_2d((xmin..xmax).log_scale(), (ymin..ymax).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .disable_y_mesh()
            .x_labels(0)
            .y_labels(0)
            .draw()?;
        // Decade gridlines.
        let mut d = 10f64.powf(ymin.log10().ceil());
        while d < ymax {
            chart.draw_series(std::iter::once(PathElement::new(
                vec![(xmin, d), (xmax, d)],
                ShapeStyle::from(&RGBColor(220, 220, 220)).stroke_width(1),
            )))?;
            d *= 10.0;
        }
        chart.draw_series(std::iter::once(PathElement::new(
            reference,
            ShapeStyle::from(&grey).stroke_width(2),
        )))?;
        for (s, color) in [(go, GO), (ours, RUST)] {
            chart.draw_series(std::iter::once(PathElement::new(
                s.clone(),
                ShapeStyle::from(&color).stroke_width(3),
            )))?;
            chart.draw_series(s.into_iter().map(|p| Circle::new(p, 5, color.filled())))?;
        }
    }
    root.present()?;
    Ok(())
}

/// The Markdown report.
pub fn markdown(g: &Growth, png: &str) -> String {
    let mut out = String::from(
        "# Growth with the number of clusters: the estimator path, ours and Go v1.18.2\n\n\
         CPU seconds per binding and peak RSS of each scheduler alone on the same batch \
         (`hack/bench.sh --estimators-only`, stub estimators answering after 1 ms behind \
         `ExternalName` Services), per scale, from the results files named below; \
         `hack/bench.sh --growth-from <files>` redraws it.\n\n",
    );
    out.push_str(&format!(
        "![CPU seconds per binding (left) and peak RSS (right) against clusters]({png})\n\n\
         Chart: x is the number of clusters, y the figure, both logarithmic (gridlines every \
         decade of y); ours orange, Go blue, grey the n·log n line through our smallest scale.\n\n"
    ));
    out.push_str(
        "| clusters | CPU s / binding, ours | Go | Go / ours | n·log n from ours' first | peak RSS MiB, ours | Go | ours / Go | bindings/s alone, ours | Go | results |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n",
    );
    let first = g
        .points
        .first()
        .map(|p| (p.clusters, p.cpu_per_binding_s[0]));
    for p in &g.points {
        let nlogn = first.map_or(0.0, |(c, v)| nlogn_from(c, v, p.clusters));
        out.push_str(&format!(
            "| {} | {:.4} | {:.4} | {:.1}× | {:.4} | {:.1} | {:.1} | {:.2} | {:.2} | {:.2} | {} |\n",
            p.clusters,
            p.cpu_per_binding_s[0],
            p.cpu_per_binding_s[1],
            p.cpu_per_binding_s[1] / p.cpu_per_binding_s[0].max(1e-9),
            nlogn,
            p.peak_rss_mib[0],
            p.peak_rss_mib[1],
            p.peak_rss_mib[0] / p.peak_rss_mib[1].max(1e-9),
            p.rate_per_s[0],
            p.rate_per_s[1],
            p.source
        ));
    }
    out
}
