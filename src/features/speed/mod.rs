//! libvmaf's SpEED chroma, the `speed_chroma` extractor (`speed_chroma_u`, `speed_chroma_v`,
//! `speed_chroma_uv`): a spatial entropic difference of the Cb and Cr planes, read by the
//! VMAF v1 models (`Speed_chroma_feature_speed_chroma_uv_score`).
//!
//! Per chroma plane and frame: the plane as floats (`sample / 2^(bpc - 8) - 128`),
//! optionally rescaled (`speed_prescale`), low-passed with a Gaussian and decimated by 16,
//! less its local mean (a 3-tap Gaussian); then a Gaussian scale mixture fit on 5x5 blocks
//! (the 25x25 covariance matrix of the block's samples, its eigenvalues, and a linear solve
//! for every block's variance) gives each block an entropy and a variance. The score is the
//! mean over blocks of `|ent_ref * log2(1 + var_ref) - ent_dis * log2(1 + w(var))|`.
//! Libvmaf does all of it in `float` with a few `double` steps; both halves here follow its
//! operation order and types so that the printed six decimals match.
//!
//! `cpu.rs` is the CPU half (only the decimated samples are filtered: libvmaf filters the
//! whole plane and keeps one sample in 256), `linalg.rs` the 25x25 eigenvalue and QR
//! solvers, `cuda.rs` the CUDA host half of `kernels/speed.cu`.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c (`vmaf_fex_speed_chroma`), and
//! libvmaf/src/feature/vif_tools.c (filters, decimation, rescaling),
//! libvmaf/src/feature/picture_copy.c (sample to float). The temporal extractor of speed.c,
//! `speed_temporal`, is [`super::speed_temporal`]: the same filters and fit on luma frame
//! differences ([`cpu::Difference`]).

pub mod cpu;
pub mod cuda;
pub mod linalg;
mod params;

use std::sync::Arc;

use cudarc::driver::CudaStream;

use super::api::{
    CpuExtractor, CudaExtractor, Feature, Geometry, HostFrame, Instance, Needs, Section,
};
use super::options::Options;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
use params::OPTIONS;
pub use params::{
    antialias_filter, combine, filter_size, local_mean_filter, plane_size, Dims, Prescale,
    SpeedConfig, BLOCK, EIGEN_EPS, EIGEN_MAX_ITERS, FEATURE, N, SCALES,
};

/// The registry entry of SpEED chroma.
#[derive(Debug)]
pub struct SpeedFeature;

/// [`SpeedFeature`], as [`super::REGISTRY`] lists it.
pub static SPEED_CHROMA: SpeedFeature = SpeedFeature;

impl Feature for SpeedFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    /// libvmaf's v1 logs list the SpEED values among VMAF's features (after CAMBI, before
    /// ADM: the models' feature order).
    fn section(&self) -> Section {
        Section::Core
    }

    fn reads_chroma(&self) -> bool {
        true
    }

    fn accepts(&self, key: &str) -> bool {
        OPTIONS.iter().any(|(n, _)| *n == key)
    }

    fn model_output(&self, model_name: &str) -> Option<String> {
        let plane = model_name
            .strip_prefix("Speed_chroma_feature_speed_chroma_")?
            .strip_suffix("_score")?;
        ["u", "v", "uv"]
            .contains(&plane)
            .then(|| format!("speed_chroma_{plane}"))
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(SpeedInstance {
            cfg: SpeedConfig::from_options(options)?,
        }))
    }
}

/// SpEED chroma with its options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SpeedInstance {
    /// The options.
    pub cfg: SpeedConfig,
}

impl SpeedInstance {
    /// The chroma plane size libvmaf reads for `g`, and its [`Dims`].
    ///
    /// Errors: [`FeatureError::WrongGeometry`] without chroma planes (libvmaf refuses grey
    /// formats), [`FeatureError::FrameTooSmall`] when fewer than 5x5 samples are left after
    /// rescaling and decimation by 16.
    pub fn dims(&self, g: &Geometry) -> Result<Dims, FeatureError> {
        FeatureError::check_new(FEATURE, g.triple(), (1, 1))?;
        let Some(chroma) = g.chroma else {
            return Err(FeatureError::wrong_size(
                FEATURE,
                (g.width, g.height, g.bpc),
                (0, 0),
            ));
        };
        let (w, h) = plane_size((g.width, g.height), chroma);
        let d = Dims::new(w, h, self.cfg.prescale);
        if d.blocks_x == 0 || d.blocks_y == 0 {
            // The smallest chroma plane that leaves one block after the prescale's rounding
            // and the decimation (libvmaf's edge exactly: 159 samples at prescale 0.5), as
            // luma samples in this subsampling.
            let prescale = self.cfg.prescale;
            let plane = (1..=1usize << 20)
                .find(|&n| Dims::new(n, n, prescale).blocks_x > 0)
                .unwrap_or(usize::MAX);
            let need = |luma: usize, c: usize| plane.saturating_mul(luma.div_ceil(c.max(1)));
            return Err(FeatureError::FrameTooSmall {
                feature: FEATURE,
                width: g.width,
                height: g.height,
                min_width: need(g.width, chroma.0),
                min_height: need(g.height, chroma.1),
            });
        }
        Ok(d)
    }
}

impl Instance for SpeedInstance {
    fn feature(&self) -> &'static dyn Feature {
        &SPEED_CHROMA
    }

    fn key(&self) -> String {
        self.cfg.key()
    }

    fn needs(&self) -> Needs {
        Needs {
            chroma: true,
            previous: false,
            ..Needs::default()
        }
    }

    fn outputs(&self) -> Vec<String> {
        let k = self.key();
        ["u", "v", "uv"]
            .iter()
            .map(|p| format!("speed_chroma_{p}{k}"))
            .collect()
    }

    /// The 4:4:4 minimum (80 samples after rescaling); subsampled formats need more,
    /// which [`Instance::check`] says.
    fn min_size(&self) -> (usize, usize) {
        let n = (80.0 / self.cfg.prescale).ceil() as usize;
        (n, n)
    }

    fn check(&self, g: &Geometry) -> Result<(), FeatureError> {
        self.dims(g).map(|_| ())
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        let dims = self.dims(g)?;
        Ok(Box::new(SpeedCpu {
            speed: cpu::Speed::new(dims, self.cfg),
            luma: (g.width, g.height),
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        let dims = self.dims(g)?;
        Ok(Box::new(cuda::SpeedGpu::new(
            dev,
            stream,
            dims,
            (g.width, g.height),
            g.bpc,
            self.cfg,
        )?))
    }
}

/// The CPU half and the luma size (for libvmaf's chroma crop).
struct SpeedCpu {
    speed: cpu::Speed,
    luma: (usize, usize),
}

impl CpuExtractor for SpeedCpu {
    /// `speed_chroma_u`, `_v`, `_uv`.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for a frame without chroma or with planes of
    /// another size.
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let planes = self.planes(f)?;
        let v = self.speed.scores(&planes);
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
        Ok(())
    }

    /// The reference's chroma parameters once for all frames ([`cpu::Speed::scores_ladder`]).
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        let Some(first) = frames.first() else {
            return Ok(());
        };
        let [[ru, _], [rv, _]] = self.planes(first)?;
        let mut distorted = Vec::with_capacity(frames.len());
        for f in frames {
            let [[_, du], [_, dv]] = self.planes(f)?;
            distorted.push([du, dv]);
        }
        let scores = self.speed.scores_ladder(&[ru, rv], &distorted);
        for (v, out) in scores.into_iter().zip(outs.iter_mut()) {
            out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
        }
        Ok(())
    }
}

impl SpeedCpu {
    /// The frame's `[reference, distorted]` Cb and Cr planes, cropped to libvmaf's size.
    ///
    /// Errors: [`FeatureError::WrongGeometry`] for a frame without chroma or with planes of
    /// another size.
    fn planes<'a>(
        &self,
        f: &HostFrame<'_, 'a>,
    ) -> Result<[[crate::video::frame::LumaPlane<'a>; 2]; 2], FeatureError> {
        let d = self.speed.dims();
        let Some(c) = f.chroma else {
            return Err(FeatureError::wrong_size(
                FEATURE,
                (d.width, d.height, f.reference.bpc),
                (0, 0),
            ));
        };
        let mut planes = [
            [c.reference[0], c.distorted[0]],
            [c.reference[1], c.distorted[1]],
        ];
        for pair in &mut planes {
            let (r, s) = (&pair[0], &pair[1]);
            FeatureError::check_plane(FEATURE, (r.width, r.height, r.bpc), s)?;
            let (w, h) = plane_size(self.luma, (r.width, r.height));
            if (w, h) != (d.width, d.height) {
                return Err(FeatureError::wrong_size(
                    FEATURE,
                    (d.width, d.height, r.bpc),
                    (w, h),
                ));
            }
            for p in pair.iter_mut() {
                p.width = w;
                p.height = h;
            }
        }
        Ok(planes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::features::options::{fmt_g, OptionValue};

    #[test]
    fn key_of_the_v1_models() {
        let mut o = Options::new();
        o.set("speed_kernelscale", OptionValue::Number(1.0));
        o.set("speed_nn_floor", OptionValue::Number(0.1));
        o.set("speed_sigma_nn", OptionValue::Number(0.19));
        o.set("speed_weight_var_mode", OptionValue::Number(5.0));
        o.set("speed_max_val", OptionValue::Number(45.0));
        let c = SpeedConfig::from_options(&o).unwrap();
        assert_eq!(c.key(), "_mxv_45_nnf_0.1_snn_0.19_wvm_5");
        o.set("speed_prescale", OptionValue::Number(0.6));
        o.set(
            "speed_prescale_method",
            OptionValue::Text("bilinear".into()),
        );
        let c = SpeedConfig::from_options(&o).unwrap();
        assert_eq!(
            c.key(),
            "_mxv_45_nnf_0.1_ps_0.6_psm_bilinear_snn_0.19_wvm_5"
        );
        assert_eq!(SpeedConfig::default().key(), "");
    }

    #[test]
    fn refuses_unknown_and_out_of_range() {
        let mut o = Options::new();
        o.set("speed_foo", OptionValue::Number(1.0));
        assert!(SpeedConfig::from_options(&o)
            .unwrap_err()
            .contains("speed_foo"));
        let mut o = Options::new();
        o.set("speed_kernelscale", OptionValue::Number(1.3));
        assert!(SpeedConfig::from_options(&o).is_err());
        let mut o = Options::new();
        o.set("speed_prescale_method", OptionValue::Text("bicubic".into()));
        assert!(SpeedConfig::from_options(&o).is_err());
    }

    #[test]
    fn printf_g() {
        assert_eq!(fmt_g(45.0), "45");
        assert_eq!(fmt_g(0.19), "0.19");
        assert_eq!(fmt_g(1.0 / 3.0), "0.333333");
        assert_eq!(fmt_g(1e-5), "1e-05");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
        assert_eq!(fmt_g(100000.0), "100000");
    }

    #[test]
    fn model_names() {
        let f = &SPEED_CHROMA;
        assert_eq!(
            f.model_output("Speed_chroma_feature_speed_chroma_uv_score")
                .as_deref(),
            Some("speed_chroma_uv")
        );
        assert_eq!(
            f.model_output("Speed_chroma_feature_speed_chroma_w_score"),
            None
        );
    }
}
