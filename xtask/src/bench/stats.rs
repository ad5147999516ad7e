//! Order statistics over samples, and the number formats the tables use.

use std::time::Duration;

/// Order statistics of one series of samples.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Summary {
    /// How many samples.
    pub(crate) n: usize,
    /// The median (mean of the two middle samples when `n` is even).
    pub(crate) median: f64,
    /// The 90th percentile (nearest rank).
    pub(crate) p90: f64,
    /// The 99th percentile (nearest rank).
    pub(crate) p99: f64,
    /// The largest sample.
    pub(crate) max: f64,
}

impl Summary {
    /// The statistics of `samples`; `None` when there are none (or one is NaN).
    pub(crate) fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|v| v.is_nan()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        Some(Summary {
            n,
            median,
            p90: nearest_rank(&sorted, 90.0),
            p99: nearest_rank(&sorted, 99.0),
            max: sorted[n - 1],
        })
    }
}

/// The `p`-th percentile of sorted, non-empty `sorted` by the nearest-rank method.
pub(crate) fn nearest_rank(sorted: &[f64], p: f64) -> f64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Microseconds in `d`.
pub(crate) fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Milliseconds in `d`.
pub(crate) fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// `v` with `decimals` decimals.
pub(crate) fn num(v: f64, decimals: usize) -> String {
    format!("{v:.decimals$}")
}

/// `median / p90` with `decimals` decimals, or `-` for no samples.
pub(crate) fn median_p90(s: Option<Summary>, decimals: usize) -> String {
    match s {
        Some(s) => format!("{} / {}", num(s.median, decimals), num(s.p90, decimals)),
        None => "-".into(),
    }
}

/// `a / b` as a ratio with two decimals, or `-` when it is undefined.
pub(crate) fn ratio(a: Option<Summary>, b: Option<Summary>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.median > 0.0 => format!("{:.2}×", a.median / b.median),
        _ => "-".into(),
    }
}
