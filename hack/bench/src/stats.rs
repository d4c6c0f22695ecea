//! Percentiles and rates over measured durations.

/// The `q` quantile (nearest rank) of `v`, which need not be sorted.
pub fn percentile(v: &[f64], q: f64) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let rank = ((q * s.len() as f64).ceil() as usize).clamp(1, s.len());
    Some(s[rank - 1])
}

/// Events per second between the `lo` and `hi` quantiles of `times` (seconds since a common
/// origin): the rate once started and before the tail, i.e. at steady state.
pub fn steady_rate(times: &[f64], lo: f64, hi: f64) -> Option<f64> {
    if times.len() < 10 {
        return whole_rate(times, 0.0);
    }
    let mut s = times.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let i = ((lo * s.len() as f64) as usize).min(s.len() - 1);
    let j = ((hi * s.len() as f64) as usize).min(s.len() - 1);
    let dt = s[j] - s[i];
    (dt > 0.0).then(|| (j - i) as f64 / dt)
}

/// Events per second from `start` to the last of `times`.
pub fn whole_rate(times: &[f64], start: f64) -> Option<f64> {
    let last = times.iter().copied().fold(f64::NAN, f64::max);
    let dt = last - start;
    (!times.is_empty() && dt > 0.0).then(|| times.len() as f64 / dt)
}

/// Least-squares slope of `points` `(seconds, value)`, per minute; `None` with fewer than two
/// distinct instants.
pub fn slope_per_minute(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() as f64;
    if points.len() < 2 {
        return None;
    }
    let mt = points.iter().map(|p| p.0).sum::<f64>() / n;
    let mv = points.iter().map(|p| p.1).sum::<f64>() / n;
    let stt: f64 = points.iter().map(|p| (p.0 - mt).powi(2)).sum();
    let stv: f64 = points.iter().map(|p| (p.0 - mt) * (p.1 - mv)).sum();
    (stt > 0.0).then(|| stv / stt * 60.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slope() {
        // 2 per second = 120 per minute, whatever the offset; noise around it averages out.
        let p: Vec<(f64, f64)> = (0..10)
            .map(|i| {
                (
                    f64::from(i),
                    5.0 + 2.0 * f64::from(i) + if i % 2 == 0 { 0.5 } else { -0.5 },
                )
            })
            .collect();
        let s = slope_per_minute(&p).unwrap();
        assert!((s - 120.0).abs() < 10.0, "{s}");
        assert_eq!(slope_per_minute(&[(1.0, 1.0)]), None);
        assert_eq!(slope_per_minute(&[(1.0, 1.0), (1.0, 2.0)]), None);
        assert_eq!(slope_per_minute(&[(0.0, 3.0), (60.0, 3.0)]), Some(0.0));
    }

    #[test]
    fn nearest_rank() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 0.5), Some(50.0));
        assert_eq!(percentile(&v, 0.99), Some(99.0));
        assert_eq!(percentile(&[], 0.5), None);
    }

    #[test]
    fn rates() {
        let t: Vec<f64> = (0..100).map(|i| f64::from(i) * 0.01).collect();
        let r = steady_rate(&t, 0.1, 0.9).unwrap();
        assert!((r - 100.0).abs() < 1.0, "{r}");
        assert!((whole_rate(&t, 0.0).unwrap() - 101.0).abs() < 1.5);
    }
}
