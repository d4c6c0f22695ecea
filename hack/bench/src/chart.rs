//! The charts, panels of one frame each ([`canvas`], [`Frame`]): the per-scale chart,
//! throughput (left) and p99 latency (right), Rust vs Go, one pair of bars per scale; the
//! time-series panels of the churn bench; the growth chart's log-log panels. Drawn without
//! any text (the bitmap backend has no font here); the legend and the gridline values are in
//! the Markdown report.

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
    let max_rate = points
        .iter()
        .flat_map(|p| [p.rust_rate, p.go_rate])
        .fold(1.0f64, f64::max)
        * 1.1;
    let step = linear_step(max_rate);
    let top = (max_rate / step).ceil() * step;
    // Right: log10 latency, 1 ms .. 1000 s (1e6 ms), a gridline per decade.
    let decades = 6.0;
    let norm = |ms: f64| ms.max(1.0).log10() / decades;
    let drawn = canvas(path, (1, 2), 480, |k, frame| {
        let (grid, value): (f64, fn(&Point) -> [f64; 2]) = match k {
            // Left: linear throughput.
            0 => (step / top, |p| [p.rust_rate, p.go_rate]),
            _ => (1.0 / decades, |p| [p.rust_p99_ms, p.go_p99_ms]),
        };
        frame.grid(grid, 0.0)?;
        frame.axes()?;
        // A third of each scale's width for each side's bar.
        let group = 1.0 / points.len().max(1) as f64;
        for (n, p) in points.iter().enumerate() {
            for (i, (v, color)) in value(p).into_iter().zip([RUST, GO]).enumerate() {
                let y = if k == 0 { v / top } else { norm(v) };
                let x = (n as f64 + 1.0 / 6.0 + i as f64 / 3.0) * group;
                frame.bar((x, x + group / 3.0), y, color)?;
            }
        }
        Ok(())
    });
    drawn.map(|()| step)
}

/// A panel drawing area.
type Area<'a> = DrawingArea<BitMapBackend<'a>, plotters::coord::Shift>;

/// The PNG at `path`: `rows` × `cols` panels 500 pixels wide and `panel_h` high, each drawn
/// by `panel` (its index, its frame).
pub fn canvas(
    path: &Path,
    (rows, cols): (usize, usize),
    panel_h: u32,
    mut panel: impl FnMut(usize, Frame<'_, '_>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let size = (500 * cols as u32, panel_h * rows as u32);
    let root = BitMapBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE)?;
    for (k, area) in root.split_evenly((rows, cols)).iter().enumerate() {
        panel(k, Frame { area })?;
    }
    root.present()?;
    Ok(())
}

/// A panel's plot inside fixed margins, its points given as fractions of its axes (0..1).
pub struct Frame<'a, 'b> {
    area: &'b Area<'a>,
}

/// Margins: left, right, top, bottom.
const MARGINS: (i32, i32, i32, i32) = (30, 20, 20, 30);
/// Gridlines.
const GRID: RGBColor = RGBColor(210, 210, 210);

impl Frame<'_, '_> {
    fn px(&self, (x, y): (f64, f64)) -> (i32, i32) {
        let (left, right, top, bottom) = MARGINS;
        let (w, h) = self.area.dim_in_pixel();
        let (w, h) = (w as i32 - left - right, h as i32 - top - bottom);
        let at = |f: f64, n: i32| (f.clamp(0.0, 1.0) * f64::from(n)) as i32;
        (left + at(x, w), top + h - at(y, h))
    }

    /// A line through `points`.
    pub fn line(&self, points: &[(f64, f64)], color: RGBColor, width: u32) -> anyhow::Result<()> {
        let pts: Vec<(i32, i32)> = points.iter().map(|&p| self.px(p)).collect();
        let style = ShapeStyle::from(&color).stroke_width(width);
        self.area.draw(&PathElement::new(pts, style))?;
        Ok(())
    }

    /// A dot at `p`.
    pub fn dot(&self, p: (f64, f64), color: RGBColor) -> anyhow::Result<()> {
        self.area
            .draw(&Circle::new(self.px(p), 5, color.filled()))?;
        Ok(())
    }

    /// A bar from `x.0` to `x.1`, `y` high.
    fn bar(&self, x: (f64, f64), y: f64, color: RGBColor) -> anyhow::Result<()> {
        let corners = [self.px((x.0, y)), self.px((x.1, 0.0))];
        self.area.draw(&Rectangle::new(corners, color.filled()))?;
        Ok(())
    }

    /// Gridlines every `dy` of the height and every `dx` of the width (none when 0).
    pub fn grid(&self, dy: f64, dx: f64) -> anyhow::Result<()> {
        let steps = |d: f64| (1..).map(move |k| f64::from(k) * d);
        let steps = |d: f64| steps(d).take_while(move |f| d > 0.0 && *f <= 1.0 + 1e-9);
        for f in steps(dy) {
            self.line(&[(0.0, f), (1.0, f)], GRID, 1)?;
        }
        for f in steps(dx) {
            self.line(&[(f, 0.0), (f, 1.0)], GRID, 1)?;
        }
        Ok(())
    }

    /// The axes.
    pub fn axes(&self) -> anyhow::Result<()> {
        self.line(&[(0.0, 1.0), (0.0, 0.0), (1.0, 0.0)], BLACK, 2)
    }
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
    let mut axes = Vec::new();
    let x_max = x_max.max(1e-9);
    canvas(path, (rows, cols), 300, |k, frame| {
        let Some(panel) = panels.get(k) else {
            return Ok(());
        };
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
        frame.grid(step / top, x_step / x_max)?;
        for &m in marks {
            frame.line(&[(m / x_max, 1.0), (m / x_max, 0.0)], MARK, 1)?;
        }
        frame.axes()?;
        for line in &panel.lines {
            let pts: Vec<(f64, f64)> = line
                .points
                .iter()
                .map(|&(t, v)| (t / x_max, v / top))
                .collect();
            frame.line(&pts, line.color, line.width)?;
        }
        Ok(())
    })?;
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
