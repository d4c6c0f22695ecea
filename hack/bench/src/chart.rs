//! The per-scale chart: throughput (left) and p99 latency (right), Rust vs Go, one pair of
//! bars per scale; and time-series panels (the churn bench). Drawn without any text (the
//! bitmap backend has no font here); the legend and the gridline values are in the Markdown
//! report.

use std::path::Path;

use plotters::prelude::*;

use crate::results::Run;

/// Rust bars.
pub const RUST: RGBColor = RGBColor(222, 98, 43);
/// Go bars.
pub const GO: RGBColor = RGBColor(0, 173, 216);

/// One group of bars.
pub struct Point {
    pub rust_rate: f64,
    pub go_rate: f64,
    pub rust_p99_ms: f64,
    pub go_p99_ms: f64,
}

impl Point {
    pub fn of(r: &Run) -> Point {
        Point {
            rust_rate: r.rust.load.steady_rate_per_s.unwrap_or(0.0),
            go_rate: r.go.load.steady_rate_per_s.unwrap_or(0.0),
            rust_p99_ms: r.rust.stream.latency_p99_ms.unwrap_or(0.0),
            go_p99_ms: r.go.stream.latency_p99_ms.unwrap_or(0.0),
        }
    }
}

/// A "nice" gridline step (1, 2 or 5 times a power of ten) for a linear axis up to `max`.
pub fn linear_step(max: f64) -> f64 {
    let raw = (max / 5.0).max(1e-9);
    let p = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * p >= raw {
            return m * p;
        }
    }
    10.0 * p
}

/// Draws `points` (ordered by scale) into a PNG at `path`; returns the throughput gridline step.
pub fn draw(path: &Path, points: &[Point]) -> anyhow::Result<f64> {
    let (w, h) = (1000u32, 480u32);
    let root = BitMapBackend::new(path, (w, h)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, 2));
    let max_rate = points
        .iter()
        .flat_map(|p| [p.rust_rate, p.go_rate])
        .fold(1.0f64, f64::max)
        * 1.1;
    let step = linear_step(max_rate);
    let top = (max_rate / step).ceil() * step;
    // Left: linear throughput.
    bars(
        &panels[0],
        points,
        |p| (p.rust_rate / top, p.go_rate / top),
        |i| {
            let v = i as f64 * step;
            (v <= top).then_some(v / top)
        },
    )?;
    // Right: log10 latency, 1 ms .. 1000 s, a gridline per decade.
    let lo = 0.0; // log10(1 ms)
    let hi = 6.0; // log10(1e6 ms)
    let norm = |ms: f64| ((ms.max(1.0).log10() - lo) / (hi - lo)).clamp(0.0, 1.0);
    bars(
        &panels[1],
        points,
        |p| (norm(p.rust_p99_ms), norm(p.go_p99_ms)),
        |i| (i as f64 <= hi).then(|| i as f64 / hi),
    )?;
    root.present()?;
    Ok(step)
}

fn bars(
    area: &DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>,
    points: &[Point],
    value: impl Fn(&Point) -> (f64, f64),
    grid: impl Fn(usize) -> Option<f64>,
) -> anyhow::Result<()> {
    let (w, h) = area.dim_in_pixel();
    let (w, h) = (w as i32, h as i32);
    let (left, right, top, bottom) = (30, 20, 20, 30);
    let plot_h = h - top - bottom;
    let y = |frac: f64| bottom_y(h, bottom) - (frac * plot_h as f64) as i32;
    // Gridlines.
    let mut i = 0;
    while let Some(f) = grid(i) {
        area.draw(&PathElement::new(
            vec![(left, y(f)), (w - right, y(f))],
            ShapeStyle::from(&RGBColor(210, 210, 210)).stroke_width(1),
        ))?;
        i += 1;
    }
    // Axes.
    area.draw(&PathElement::new(
        vec![(left, top), (left, y(0.0)), (w - right, y(0.0))],
        ShapeStyle::from(&BLACK).stroke_width(2),
    ))?;
    let n = points.len().max(1) as i32;
    let group = (w - left - right) / n;
    let bar = (group / 3).max(2);
    for (k, p) in points.iter().enumerate() {
        let (r, g) = value(p);
        let x0 = left + k as i32 * group + group / 6;
        area.draw(&Rectangle::new(
            [(x0, y(r)), (x0 + bar, y(0.0))],
            RUST.filled(),
        ))?;
        area.draw(&Rectangle::new(
            [(x0 + bar, y(g)), (x0 + 2 * bar, y(0.0))],
            GO.filled(),
        ))?;
    }
    Ok(())
}

fn bottom_y(h: i32, bottom: i32) -> i32 {
    h - bottom
}

/// One line of a time-series panel: `(seconds, value)` points, in time order.
pub struct Line {
    pub color: RGBColor,
    pub width: u32,
    pub points: Vec<(f64, f64)>,
}

/// One panel of a time-series chart; its lines share a y axis from 0.
pub struct Panel {
    pub lines: Vec<Line>,
}

/// A panel's y axis as drawn: gridline step and top.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Axis {
    pub step: f64,
    pub top: f64,
}

/// Fault marks.
const MARK: RGBColor = RGBColor(200, 40, 40);

/// Draws `panels` over time, `cols` per row, into a PNG at `path`, without text like
/// [`draw`]: a vertical gridline every `x_step` seconds up to `x_max`, a red vertical line at
/// each of `marks` (seconds). Returns each panel's y axis, for the report's legend.
pub fn timeseries(
    path: &Path,
    panels: &[Panel],
    cols: usize,
    x_max: f64,
    x_step: f64,
    marks: &[f64],
) -> anyhow::Result<Vec<Axis>> {
    let cols = cols.max(1);
    let rows = panels.len().div_ceil(cols).max(1);
    let (w, h) = (500 * cols as u32, 300 * rows as u32);
    let root = BitMapBackend::new(path, (w, h)).into_drawing_area();
    root.fill(&WHITE)?;
    let areas = root.split_evenly((rows, cols));
    let mut axes = Vec::new();
    for (panel, area) in panels.iter().zip(&areas) {
        let max = panel
            .lines
            .iter()
            .flat_map(|l| l.points.iter().map(|p| p.1))
            .fold(0.0f64, f64::max)
            .max(1.0)
            * 1.1;
        let step = linear_step(max);
        let top = (max / step).ceil() * step;
        axes.push(Axis { step, top });
        let (pw, ph) = area.dim_in_pixel();
        let (pw, ph) = (pw as i32, ph as i32);
        let (left, right, top_px, bottom) = (30, 20, 20, 30);
        let x = |t: f64| {
            left + ((t / x_max.max(1e-9)).clamp(0.0, 1.0) * f64::from(pw - left - right)) as i32
        };
        let y = |v: f64| {
            bottom_y(ph, bottom)
                - ((v / top).clamp(0.0, 1.0) * f64::from(ph - top_px - bottom)) as i32
        };
        let grid = ShapeStyle::from(&RGBColor(210, 210, 210)).stroke_width(1);
        let mut k = 1.0;
        while k * step <= top + 1e-9 {
            area.draw(&PathElement::new(
                vec![(left, y(k * step)), (pw - right, y(k * step))],
                grid,
            ))?;
            k += 1.0;
        }
        let mut t = x_step;
        while x_step > 0.0 && t <= x_max + 1e-9 {
            area.draw(&PathElement::new(
                vec![(x(t), top_px), (x(t), y(0.0))],
                grid,
            ))?;
            t += x_step;
        }
        for &m in marks {
            area.draw(&PathElement::new(
                vec![(x(m), top_px), (x(m), y(0.0))],
                ShapeStyle::from(&MARK).stroke_width(1),
            ))?;
        }
        area.draw(&PathElement::new(
            vec![(left, top_px), (left, y(0.0)), (pw - right, y(0.0))],
            ShapeStyle::from(&BLACK).stroke_width(2),
        ))?;
        for line in &panel.lines {
            let pts: Vec<(i32, i32)> = line.points.iter().map(|&(t, v)| (x(t), y(v))).collect();
            area.draw(&PathElement::new(
                pts,
                ShapeStyle::from(&line.color).stroke_width(line.width),
            ))?;
        }
    }
    root.present()?;
    Ok(axes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_steps() {
        assert_eq!(linear_step(100.0), 20.0);
        assert_eq!(linear_step(1200.0), 500.0);
        assert_eq!(linear_step(7.0), 2.0);
    }

    #[test]
    fn draws_a_png() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let p = dir.join("c.png");
        let pts = vec![Point {
            rust_rate: 500.0,
            go_rate: 50.0,
            rust_p99_ms: 20.0,
            go_p99_ms: 4000.0,
        }];
        draw(&p, &pts).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(&bytes[1..4], b"PNG");
        let q = dir.join("t.png");
        let line = |color, k: f64| Line {
            color,
            width: 2,
            points: (0..20)
                .map(|i| (f64::from(i) * 15.0, k * f64::from(i)))
                .collect(),
        };
        let panels = vec![
            Panel {
                lines: vec![line(RUST, 1.0), line(GO, 3.0)],
            },
            Panel {
                lines: vec![line(RUST, 0.0)],
            },
        ];
        let axes = timeseries(&q, &panels, 2, 285.0, 60.0, &[100.0]).unwrap();
        assert_eq!(axes.len(), 2);
        // Go's line reaches 57: the axis ends above it, on a gridline.
        assert!(
            axes[0].top >= 57.0 && (axes[0].top / axes[0].step).fract() == 0.0,
            "{axes:?}"
        );
        assert_eq!(&std::fs::read(&q).unwrap()[1..4], b"PNG");
    }
}
