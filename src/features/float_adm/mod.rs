//! libvmaf's float ADM (Additive Distortion Measure / Detail Loss Metric), the `float_adm`
//! extractor: `adm2`, `aim`, `adm3`, `adm_scale0..3` (what `vmaf_float_v0.6.1` reads as
//! `VMAF_feature_adm2_score`), in single precision with libvmaf's order of operations.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_adm.c, adm.c (`compute_adm`),
//! adm_tools.c / adm_tools.h (the Daubechies-2 DWT, decoupling, CSF, contrast masking) and
//! adm_options.h. The algorithm is the integer ADM's (`super::adm`) in `f32`: samples become
//! `sample / 2^(bpc - 8) - 128`, four levels of a db2 DWT with mirrored borders, the detail
//! bands split into a restored and an additive part, both weighted by the CSF, the restored
//! part masked by the additive one (DLM numerator, `adm2`) and the reverse (AIM numerator,
//! `aim`), each pooled as the p-norm (cube root of summed cubes) over the centre of the band.
//!
//! `config.rs` holds the options ([`FloatAdmConfig`]) and the CSF factors; `cpu.rs` the CPU
//! half ([`cpu::FloatAdm`], the reference); `cuda.rs` the CUDA host half
//! ([`cuda::FloatAdmGpu`]) of `kernels/float_adm.cu`.

mod config;
pub mod cpu;
pub mod cuda;

pub use config::FloatAdmConfig;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    indexed, CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;

/// The registry name.
const FEATURE: &str = "float_adm";
/// Number of DWT levels (scales).
pub const SCALES: usize = 4;

/// Smallest accepted plane side in samples. The contrast masking of every scale reads the
/// neighbours of a band's edge mirrored (row -1 is row 1), so the coarsest band (the side
/// halved, rounding up, four times) must be at least 2 wide: below that libvmaf reads outside
/// its buffers.
pub const MIN_SIZE: usize = 17;

/// libvmaf's `FLOAT_ONE_BY_30` (a `double` literal), the weight of a neighbour in the masking
/// threshold.
pub(crate) const ONE_BY_30: f64 = 0.0333333351;
/// libvmaf's `FLOAT_ONE_BY_15`, the weight of the centre in the masking threshold.
pub(crate) const ONE_BY_15: f64 = 0.0666666701;
/// The db2 analysis low-pass filter (`dwt2_db2_coeffs_lo_s`; libvmaf's literals as written).
#[allow(clippy::excessive_precision)]
pub(crate) const DB2_LO: [f32; 4] = [
    0.482962913144690,
    0.836516303737469,
    0.224143868041857,
    -0.129409522550921,
];
/// The db2 analysis high-pass filter (`dwt2_db2_coeffs_hi_s`).
#[allow(clippy::excessive_precision)]
pub(crate) const DB2_HI: [f32; 4] = [
    -0.129409522550921,
    -0.224143868041857,
    0.836516303737469,
    -0.482962913144690,
];

/// `cos(1 degree)^2` as libvmaf's `f32` (the decoupling's angle test).
pub(crate) fn cos_1deg_sq() -> f32 {
    let c = (std::f64::consts::PI / 180.0).cos();
    (c * c) as f32
}

/// The per-band noise floor `(area * weight)^(1/p)` libvmaf adds to each band's pooled value
/// (`get_noise_constant`), in `f32`.
pub(crate) fn noise_constant(area: usize, weight: f64, p_norm: f64) -> f32 {
    ((area as f64 * weight) as f32).powf((1.0 / p_norm) as f32)
}

/// One scale's pooled value from the band sums `accum` (h, v, d) over a scored region of
/// `area` coefficients: `sum over bands of accum^(1/p) + noise` in `f32`, libvmaf's order.
pub(crate) fn pool(accum: [f32; 3], area: usize, weight: f64, p_norm: f64) -> f32 {
    let e = (1.0 / p_norm) as f32;
    let noise = noise_constant(area, weight, p_norm);
    let v = accum.map(|a| a.powf(e) + noise);
    v[0] + v[1] + v[2]
}

/// `adm2`, `aim`, `adm3`, `adm_scale0..3` of a `width` x `height` frame from each scale's
/// (numerator, denominator, AIM numerator), libvmaf's `compute_adm` tail and `extract`: sums
/// in `f64`, values below `1e-10 * area / 1920x1080` cut to 0, `adm2 = num / den` (1 when
/// `den` is 0, `aim` then 0), `aim = min(aim_num / aim_den, 1)` without the scale
/// `adm_skip_aim_scale`, `adm3` the weighted (or harmonic) mix clipped below at
/// `adm_min_val`, and each scale's ratio. Shared by both halves.
pub(crate) fn finish(
    width: usize,
    height: usize,
    per_scale: &[(f32, f32, f32); SCALES],
    cfg: &FloatAdmConfig,
) -> [f64; 7] {
    let limit = 1e-10 * (width * height) as f64 / (1920.0 * 1080.0);
    let (mut num, mut den, mut aim_num, mut aim_den) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
    for (s, &(n, d, a)) in per_scale.iter().enumerate() {
        num += f64::from(n);
        den += f64::from(d);
        if cfg.skip_aim_scale != s as i64 {
            aim_den += f64::from(d);
            aim_num += f64::from(a);
        }
    }
    let num = if num < limit { 0.0 } else { num };
    let den = if den < limit { 0.0 } else { den };
    let (adm2, aim) = if den == 0.0 {
        (1.0, 0.0)
    } else {
        (num / den, (aim_num / aim_den).min(1.0))
    };
    let adm3 = if cfg.adm3_apply_hm {
        2.0 * adm2 * aim / (adm2 + aim)
    } else {
        adm2 * cfg.dlm_weight + (1.0 - aim) * (1.0 - cfg.dlm_weight)
    };
    let adm3 = if adm3 > cfg.min_val {
        adm3
    } else {
        cfg.min_val
    };
    let mut out = [adm2, aim, adm3, 0.0, 0.0, 0.0, 0.0];
    for (o, &(n, d, _)) in out[3..].iter_mut().zip(per_scale) {
        *o = f64::from(n) / f64::from(d);
    }
    out
}

/// The registry entry of `float_adm`.
#[derive(Debug)]
pub struct FloatAdmFeature;

/// [`FloatAdmFeature`], as [`super::REGISTRY`] lists it.
pub static FLOAT_ADM: FloatAdmFeature = FloatAdmFeature;

impl Feature for FloatAdmFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    fn section(&self) -> Section {
        Section::Core
    }

    fn accepts(&self, key: &str) -> bool {
        key.starts_with("adm_")
    }

    /// The float VMAF models' names: `VMAF_feature_adm2_score` is `adm2`, and likewise
    /// `aim`, `adm3` and `adm_scale0..3`.
    fn model_output(&self, model_name: &str) -> Option<String> {
        match model_name {
            "VMAF_feature_adm2_score" => Some("adm2".into()),
            "VMAF_feature_aim_score" => Some("aim".into()),
            "VMAF_feature_adm3_score" => Some("adm3".into()),
            _ => indexed(model_name, "VMAF_feature_adm_scale", SCALES)
                .map(|i| format!("adm_scale{i}")),
        }
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(FloatAdmInstance {
            cfg: FloatAdmConfig::from_options(options)?,
        }))
    }
}

/// `float_adm` with one option set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatAdmInstance {
    /// The options.
    pub cfg: FloatAdmConfig,
}

impl Instance for FloatAdmInstance {
    fn feature(&self) -> &'static dyn Feature {
        &FLOAT_ADM
    }

    fn key(&self) -> String {
        self.cfg.key()
    }

    fn outputs(&self) -> Vec<String> {
        let suffix = self.key();
        ["adm2", "aim", "adm3"]
            .into_iter()
            .map(|b| format!("{b}{suffix}"))
            .chain((0..SCALES).map(|i| format!("adm_scale{i}{suffix}")))
            .collect()
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_SIZE, MIN_SIZE)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        self.check(g)?;
        Ok(Box::new(FloatAdmCpu {
            adm: cpu::FloatAdm::new(g.width, g.height, g.bpc)?,
            cfg: self.cfg,
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        let module = dev.modules().get("float_adm")?;
        Ok(Box::new(FloatAdmCuda {
            gpu: cuda::FloatAdmGpu::new(module, stream, g.width, g.height, g.bpc, &self.cfg)?,
        }))
    }
}

struct FloatAdmCpu {
    adm: cpu::FloatAdm,
    cfg: FloatAdmConfig,
}

impl CpuExtractor for FloatAdmCpu {
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let v = self.adm.compute(f.reference, f.distorted, &self.cfg)?;
        out.iter_mut().zip(v).for_each(|(o, v)| *o = v);
        Ok(())
    }

    /// The reference's DWT and denominators once for all frames
    /// ([`cpu::FloatAdm::compute_ladder`]).
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        let Some((reference, distorted)) = super::api::ladder_lumas(frames) else {
            return Ok(());
        };
        let scores = self.adm.compute_ladder(reference, &distorted, &self.cfg)?;
        for (v, out) in scores.iter().zip(outs.iter_mut()) {
            out.iter_mut().zip(v).for_each(|(o, v)| *o = *v);
        }
        Ok(())
    }
}

struct FloatAdmCuda {
    gpu: cuda::FloatAdmGpu,
}

impl CudaExtractor for FloatAdmCuda {
    fn result_words(&self) -> usize {
        cuda::FloatAdmGpu::RESULT_WORDS
    }

    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        self.gpu.enqueue(stream, f.reference, f.distorted, out)
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        let v = self.gpu.scores(words);
        out.iter_mut().zip(v).for_each(|(o, v)| *o = v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            FLOAT_ADM.model_output("VMAF_feature_adm2_score").as_deref(),
            Some("adm2")
        );
        assert_eq!(
            FLOAT_ADM
                .model_output("VMAF_feature_adm_scale3_score")
                .as_deref(),
            Some("adm_scale3")
        );
        assert!(FLOAT_ADM
            .model_output("VMAF_integer_feature_adm2_score")
            .is_none());
        let i = FLOAT_ADM.configure(&Options::new(), false).unwrap();
        assert_eq!(
            i.outputs(),
            [
                "adm2",
                "aim",
                "adm3",
                "adm_scale0",
                "adm_scale1",
                "adm_scale2",
                "adm_scale3"
            ]
        );
    }
}
