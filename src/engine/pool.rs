//! Pooling of per-frame metrics over a stream, as libvmaf's `vmaf_feature_score_pooled`, plus
//! the lows people ask for (the 1st, 5th and 10th percentiles).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/libvmaf.c (`vmaf_feature_score_pooled`): mean is
//! `sum / n`, harmonic mean is `n / sum(1 / (x + 1)) - 1`, accumulated in frame order. The
//! percentiles use libvmaf's own definition (libvmaf/src/predict.c, `percentile`: linear
//! interpolation between the sorted values at rank `p * (n - 1) / 100`).
//!
//! Memory stays bounded on long runs: the values of the first [`EXACT_FRAMES`] frames are kept
//! and their percentiles are exact; past that, every value goes into a t-digest (the `tdigest`
//! crate, 256 centroids per metric) and the percentiles are estimates ([`Pool::exact`] says
//! which).

use std::sync::Arc;

use tdigest::TDigest;

/// Frames whose values are kept for exact percentiles (512 KiB per metric); a longer stream
/// switches to a t-digest.
pub const EXACT_FRAMES: usize = 1 << 16;

/// Centroids of the t-digest of a metric past [`EXACT_FRAMES`].
const DIGEST_SIZE: usize = 256;

/// The `p`-th percentile (`p` in `[0, 100]`) of ascending `sorted` values by libvmaf's
/// definition: linear interpolation between the values at ranks `floor(r)` and `ceil(r)`,
/// `r = p * (n - 1) / 100`. NaN for no values. Source: Netflix/vmaf v3.2.0,
/// libvmaf/src/predict.c (`percentile`).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    let Some(last) = sorted.len().checked_sub(1) else {
        return f64::NAN;
    };
    let r = p.clamp(0.0, 100.0) * last as f64 / 100.0;
    let (l, h) = (r.floor(), r.ceil());
    let (il, ih) = ((l as usize).min(last), (h as usize).min(last));
    if il == ih {
        sorted[il]
    } else {
        sorted[il] * (h - r) + sorted[ih] * (r - l)
    }
}

/// Pooled statistics of one metric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pooled {
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// libvmaf's harmonic mean, `n / sum(1 / (x + 1)) - 1`.
    pub harmonic_mean: f64,
    /// 1st percentile (the "1% low"), see [`percentile`]; NaN values are left out, and it is
    /// NaN when every value was NaN.
    pub percentile_1: f64,
    /// 5th percentile (the "5% low").
    pub percentile_5: f64,
    /// 10th percentile (the "10% low").
    pub percentile_10: f64,
}

/// The values of one metric for its percentiles.
#[derive(Debug, Clone)]
enum Values {
    /// Every finite value so far (at most [`EXACT_FRAMES`]).
    Exact(Vec<f64>),
    /// Past [`EXACT_FRAMES`]: an estimate.
    Digest(TDigest),
}

impl Values {
    fn add(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        match self {
            Values::Exact(all) if all.len() < EXACT_FRAMES => all.push(v),
            Values::Exact(all) => {
                let mut d = TDigest::new_with_size(DIGEST_SIZE);
                d.extend_values(all.drain(..));
                d.push(v);
                *self = Values::Digest(d);
            }
            Values::Digest(d) => d.push(v),
        }
    }

    /// The 1st, 5th and 10th percentiles.
    fn lows(&self) -> [f64; 3] {
        const P: [f64; 3] = [1.0, 5.0, 10.0];
        match self {
            Values::Exact(all) => {
                let mut s = all.clone();
                s.sort_unstable_by(f64::total_cmp);
                P.map(|p| percentile(&s, p))
            }
            Values::Digest(d) => {
                let mut d = d.clone();
                d.flush();
                P.map(|p| d.estimate_quantile(p / 100.0).unwrap_or(f64::NAN))
            }
        }
    }
}

/// Running sums for every metric of a stream.
#[derive(Debug, Clone)]
pub struct Pool {
    names: Arc<[String]>,
    count: u64,
    sum: Vec<f64>,
    inv_sum: Vec<f64>,
    min: Vec<f64>,
    max: Vec<f64>,
    values: Vec<Values>,
}

impl Pool {
    /// An empty pool for the metrics `names`.
    pub fn new(names: Arc<[String]>) -> Self {
        let n = names.len();
        Self {
            names,
            count: 0,
            sum: vec![0.0; n],
            inv_sum: vec![0.0; n],
            min: vec![f64::INFINITY; n],
            max: vec![f64::NEG_INFINITY; n],
            values: vec![Values::Exact(Vec::new()); n],
        }
    }

    /// Adds one frame's values (same order as `names`).
    pub fn add(&mut self, values: &[f64]) {
        self.count += 1;
        for (i, &v) in values.iter().enumerate().take(self.names.len()) {
            self.sum[i] += v;
            self.inv_sum[i] += 1.0 / (v + 1.0);
            if v < self.min[i] {
                self.min[i] = v;
            }
            if v > self.max[i] {
                self.max[i] = v;
            }
            self.values[i].add(v);
        }
    }

    /// Frames pooled.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether the percentiles are exact (at most [`EXACT_FRAMES`] frames pooled), not
    /// t-digest estimates.
    pub fn exact(&self) -> bool {
        self.count <= EXACT_FRAMES as u64
    }

    /// Metric names.
    pub fn names(&self) -> &Arc<[String]> {
        &self.names
    }

    /// Pooled statistics per metric, in name order; empty when no frame was pooled.
    pub fn pooled(&self) -> Vec<(&str, Pooled)> {
        if self.count == 0 {
            return Vec::new();
        }
        self.names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.as_str(), self.pooled_at(i)))
            .collect()
    }

    /// Pooled statistics of metric `name`; `None` for an unknown name or no frame pooled.
    pub fn get(&self, name: &str) -> Option<Pooled> {
        let i = self.names.iter().position(|n| n == name)?;
        (self.count > 0).then(|| self.pooled_at(i))
    }

    /// Pooled statistics of the metric at `i` (`count > 0`).
    fn pooled_at(&self, i: usize) -> Pooled {
        let n = self.count as f64;
        let [percentile_1, percentile_5, percentile_10] = self.values[i].lows();
        Pooled {
            min: self.min[i],
            max: self.max[i],
            mean: self.sum[i] / n,
            harmonic_mean: n / self.inv_sum[i] - 1.0,
            percentile_1,
            percentile_5,
            percentile_10,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_like_libvmaf() {
        let mut p = Pool::new(vec!["a".to_owned()].into());
        for v in [1.0, 3.0] {
            p.add(&[v]);
        }
        let a = p.get("a");
        assert_eq!(a.map(|a| (a.min, a.max, a.mean)), Some((1.0, 3.0, 2.0)));
        let h = a.map_or(f64::NAN, |a| a.harmonic_mean);
        assert!((h - (2.0 / (0.5 + 0.25) - 1.0)).abs() < 1e-15);
    }

    #[test]
    fn percentiles_interpolate_as_libvmaf() {
        // 101 values 0..=100 in a shuffled order: the p-th percentile is p.
        let mut p = Pool::new(vec!["a".to_owned()].into());
        for i in 0..=100u32 {
            p.add(&[f64::from((i * 37) % 101)]);
        }
        let a = p.get("a").expect("pooled");
        assert_eq!(
            (a.percentile_1, a.percentile_5, a.percentile_10),
            (1.0, 5.0, 10.0)
        );
        // Ten values 10, 20, ..., 100: rank 0.09 for the 1st percentile.
        let mut q = Pool::new(vec!["b".to_owned()].into());
        for i in 1..=10u32 {
            q.add(&[f64::from(11 - i) * 10.0]);
        }
        let b = q.get("b").expect("pooled");
        assert!((b.percentile_1 - 10.9).abs() < 1e-12, "{}", b.percentile_1);
        assert!((b.percentile_5 - 14.5).abs() < 1e-12, "{}", b.percentile_5);
        assert!(
            (b.percentile_10 - 19.0).abs() < 1e-12,
            "{}",
            b.percentile_10
        );
        assert!(q.exact());
    }

    #[test]
    fn nan_values_are_left_out_of_the_percentiles() {
        let mut p = Pool::new(vec!["a".to_owned()].into());
        for v in [f64::NAN, 2.0, f64::NAN, 4.0] {
            p.add(&[v]);
        }
        let a = p.get("a").expect("pooled");
        assert_eq!(a.percentile_1, 2.0 + 2.0 * 0.01);
        let mut all_nan = Pool::new(vec!["a".to_owned()].into());
        all_nan.add(&[f64::NAN]);
        assert!(all_nan.get("a").expect("pooled").percentile_5.is_nan());
    }

    #[test]
    fn long_streams_estimate_with_bounded_memory() {
        // Past EXACT_FRAMES the t-digest's low percentiles stay within a small fraction of
        // the exact ones (a ramp 0..n, each value once).
        let n = EXACT_FRAMES * 3;
        let mut p = Pool::new(vec!["a".to_owned()].into());
        for i in 0..n {
            p.add(&[((i * 7919) % n) as f64]);
        }
        assert!(!p.exact());
        let a = p.get("a").expect("pooled");
        let last = (n - 1) as f64;
        for (got, q) in [
            (a.percentile_1, 0.01),
            (a.percentile_5, 0.05),
            (a.percentile_10, 0.10),
        ] {
            assert!(
                (got - q * last).abs() < 0.002 * last,
                "{q}: {got} vs {}",
                q * last
            );
        }
        assert_eq!(a.min, 0.0);
        assert_eq!(a.max, last);
    }
}
