//! Cells every report writes the same way: figures, lists, ratios and verdicts.

/// A figure with `digits` decimals, "–" when unknown.
pub fn num(v: Option<f64>, digits: usize) -> String {
    match v {
        Some(x) if x.is_finite() => format!("{x:.digits$}"),
        _ => "–".into(),
    }
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

/// A target's verdict, as the estimator and descheduler reports write it.
pub fn met(ok: bool) -> &'static str {
    if ok { "met" } else { "missed" }
}
