//! The one figures model of every report: rows of ours against Go with which way is better and
//! the target they are held to, one renderer for them, and the reports' prose in template
//! files (`templates/*.md`) whose `{{name}}` places are filled from the results.

use std::fmt::Write as _;

use crate::results::Stamp;

/// Which way a figure is better.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Better {
    Higher,
    Lower,
    /// Neither: a count or a setting, shown without a comparison.
    Neither,
}

/// One figure of both sides.
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub ours: Option<f64>,
    pub go: Option<f64>,
    /// Decimals shown.
    pub digits: usize,
    pub better: Better,
    /// A target the figure is held to: met or not.
    pub target: Option<bool>,
}

impl Row {
    pub fn new(name: impl Into<String>, ours: Option<f64>, go: Option<f64>, digits: usize) -> Self {
        Self {
            name: name.into(),
            ours,
            go,
            digits,
            better: Better::Neither,
            target: None,
        }
    }

    /// A row of `[ours, Go]`.
    pub fn of(name: impl Into<String>, [ours, go]: [Option<f64>; 2], digits: usize) -> Self {
        Self::new(name, ours, go, digits)
    }

    pub fn better(mut self, better: Better) -> Self {
        self.better = better;
        self
    }

    pub fn higher(mut self) -> Self {
        self.better = Better::Higher;
        self
    }

    pub fn lower(mut self) -> Self {
        self.better = Better::Lower;
        self
    }

    pub fn target(mut self, met: bool) -> Self {
        self.target = Some(met);
        self
    }

    /// How many times better ours is (above 1: ours is better).
    pub fn factor(&self) -> Option<f64> {
        let (o, g) = (self.ours?, self.go?);
        let f = match self.better {
            Better::Higher => o / g,
            Better::Lower => g / o,
            Better::Neither => return None,
        };
        f.is_finite().then_some(f)
    }
}

/// Rows of one figure of each side, one a line: `name, |side| figure, digits, Better;`.
macro_rules! side_rows {
    ($ours:expr, $go:expr; $($name:expr, |$s:ident| $fig:expr, $d:expr, $b:ident;)*) => {
        [$($crate::figures::side_row(
            ($ours, $go), $name, |$s| $fig, $d, $crate::figures::Better::$b
        )),*]
    };
}
pub(crate) use side_rows;

/// The row of one figure of each side.
pub fn side_row<S>(
    (ours, go): (&S, &S),
    name: impl Into<String>,
    figure: impl Fn(&S) -> Option<f64>,
    digits: usize,
    better: Better,
) -> Row {
    Row::new(name, figure(ours), figure(go), digits).better(better)
}

/// A figure with `digits` decimals, "–" when unknown.
pub fn num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "–".into(),
    }
}

/// A target's verdict.
pub fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "**missed**" }
}

/// The rows as a Markdown table: figure, ours, Go, how many times better ours is, and the
/// target's verdict where a row has one.
pub fn table(rows: &[Row]) -> String {
    let targets = rows.iter().any(|r| r.target.is_some());
    let mut s = String::from("| figure | ours | Go | ours better by |");
    s += if targets {
        " target |\n|---|---:|---:|---:|---|\n"
    } else {
        "\n|---|---:|---:|---:|\n"
    };
    for r in rows {
        let factor = r.factor().map_or(String::new(), |f| format!("{f:.2}×"));
        let _ = write!(
            s,
            "| {} | {} | {} | {factor} |",
            r.name,
            num(r.ours, r.digits),
            num(r.go, r.digits)
        );
        if targets {
            let _ = write!(s, " {} |", r.target.map_or("", verdict));
        }
        s.push('\n');
    }
    s
}

/// A template with each `{{name}}` replaced by its value. A place without a value is a bug in
/// the report, caught by the render test.
pub fn fill(template: &str, values: &[(&str, String)]) -> String {
    let mut out = template.to_string();
    for (name, value) in values {
        out = out.replace(&format!("{{{{{name}}}}}"), value);
    }
    assert!(!out.contains("{{"), "a place left unfilled in:\n{out}");
    out
}

/// [`fill`] with the run's stamp: `{{date}}`, `{{machine}}` and `{{commit}}`.
pub fn fill_stamped(template: &str, stamp: &Stamp, values: &[(&str, String)]) -> String {
    let mut all = vec![
        ("date", stamp.date.clone()),
        ("machine", stamp.machine.clone()),
        ("commit", stamp.git_commit.clone()),
    ];
    all.extend_from_slice(values);
    fill(template, &all)
}

/// Items joined with ", ".
pub fn list(items: impl Iterator<Item = String>) -> String {
    items.collect::<Vec<_>>().join(", ")
}

/// `a / b` as "1.23×", "–" when either is unknown.
pub fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 && a.is_finite() && b.is_finite() => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// MiB of KiB, unknown when zero (not measured).
pub fn mib(kib: u64) -> Option<f64> {
    (kib > 0).then(|| kib as f64 / 1024.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_say_how_much_better_ours_is_and_their_verdict() {
        let rows = [
            Row::new("rate", Some(30.0), Some(10.0), 1).higher(),
            Row::new("latency (ms)", Some(5.0), Some(20.0), 0)
                .lower()
                .target(true),
            Row::new("attempts", Some(3.0), None, 0),
        ];
        assert_eq!(
            table(&rows),
            "| figure | ours | Go | ours better by | target |\n|---|---:|---:|---:|---|\n\
             | rate | 30.0 | 10.0 | 3.00× |  |\n\
             | latency (ms) | 5 | 20 | 4.00× | met |\n\
             | attempts | 3 | – |  |  |\n"
        );
    }

    #[test]
    fn fill_replaces_every_place() {
        let t = "a {{x}} b {{y}} {{x}}";
        assert_eq!(
            fill(t, &[("x", "1".into()), ("y", "2".into())]),
            "a 1 b 2 1"
        );
    }

    #[test]
    #[should_panic(expected = "unfilled")]
    fn fill_refuses_a_place_left_open() {
        fill("{{x}} {{z}}", &[("x", "1".into())]);
    }
}
