//! Pooling of per-frame metrics over a stream, as libvmaf's `vmaf_feature_score_pooled`.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/libvmaf.c (`vmaf_feature_score_pooled`): mean is
//! `sum / n`, harmonic mean is `n / sum(1 / (x + 1)) - 1`, accumulated in frame order.

use std::sync::Arc;

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
        }
    }

    /// Frames pooled.
    pub fn count(&self) -> u64 {
        self.count
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
        let n = self.count as f64;
        self.names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                (
                    name.as_str(),
                    Pooled {
                        min: self.min[i],
                        max: self.max[i],
                        mean: self.sum[i] / n,
                        harmonic_mean: n / self.inv_sum[i] - 1.0,
                    },
                )
            })
            .collect()
    }

    /// Pooled statistics of metric `name`.
    pub fn get(&self, name: &str) -> Option<Pooled> {
        self.pooled()
            .into_iter()
            .find(|(n, _)| *n == name)
            .map(|(_, p)| p)
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
}
