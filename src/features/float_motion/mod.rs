//! Float motion, libvmaf's `float_motion` extractor: the mean absolute difference between the
//! blurred luma of consecutive reference frames (`motion`, libvmaf's debug output, on by
//! default), and once the next frame is in, `motion2` (the smaller of this frame's and the
//! next frame's, the model name `VMAF_feature_motion2_score` of `vmaf_float_v0.6.1`) and
//! `motion3` (`motion2` blended and clipped).
//!
//! Per frame: the reference luma as floats (`sample / 2^(bpc - 8) - 128`), blurred with a
//! 5-tap Gaussian (separable, mirrored borders, `f32`); the score is the sum over the plane of
//! `|blur(prev) - blur(cur)|` in `f32` (row sums, then over rows) divided by the pixel count.
//!
//! - `cpu.rs`: the CPU half ([`cpu::FloatMotion`]), bit-identical to libvmaf's C code;
//! - `cuda.rs`: the CUDA host half of `kernels/float_motion.cu`.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_motion.c (options, `extract`,
//! `flush`), motion.c (`vmaf_image_sad_c`), motion_tools.h (filters), motion_blend_tools.h,
//! common/convolution.c and convolution_avx.c.

pub mod cpu;
pub mod cuda;
mod params;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::api::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Needs, Section,
    Window,
};
use super::options::{fmt_g, suffix, Options, SuffixPart};
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
pub use params::{FEATURE, MIN_SIZE};

/// libvmaf's 5-tap blur (`FILTER_5_s`), the decimal constants rounded to `double` then to
/// `float` as C's initialiser does.
const FILTER_5: [f64; 5] = [
    0.054488685,
    0.244201342,
    0.402619947,
    0.244201342,
    0.054488685,
];
/// libvmaf's 3-tap blur (`FILTER_3_s`, `motion_filter_size` 3).
const FILTER_3: [f64; 3] = [0.166378498, 0.667243004, 0.166378498];

/// The options of libvmaf 3.2.0's float motion; [`Default`] gives libvmaf's defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FloatMotionOptions {
    /// `motion_force_zero` (`force_0`): every score is 0.
    pub force_zero: bool,
    /// `motion_fps_weight` (`mfw`), 0..=5, default 1: multiplies the scores.
    pub fps_weight: f64,
    /// `motion_blend_factor` (`mbf`), 0..=1, default 1: `motion3 = m * f + (1 - f) *
    /// min(offset, m)`.
    pub blend_factor: f64,
    /// `motion_blend_offset` (`mbo`), 0..=1000, default 40.
    pub blend_offset: f64,
    /// `motion_filter_size` (`mfs`), 0..=9, default 5: 1 leaves the plane unfiltered, 3 takes
    /// the 3-tap blur, any other value the 5-tap one.
    pub filter_size: u32,
    /// `motion_max_val` (`mmxv`), 0..=10000, default 10000: the scores' upper clip.
    pub max_val: f64,
    /// `motion_add_scale1` (`mdc`), default false: adds the mean absolute difference of the
    /// blurred planes halved with bilinear interpolation (CPU only).
    pub add_scale1: bool,
}

impl Default for FloatMotionOptions {
    fn default() -> Self {
        Self {
            force_zero: false,
            fps_weight: 1.0,
            blend_factor: 1.0,
            blend_offset: 40.0,
            filter_size: 5,
            max_val: 10000.0,
            add_scale1: false,
        }
    }
}

/// The option names [`FloatMotionFeature`] takes; `motion_add_uv` is accepted only at its
/// default (false).
const OPTION_KEYS: &[&str] = &[
    "motion_force_zero",
    "motion_fps_weight",
    "motion_blend_factor",
    "motion_blend_offset",
    "motion_filter_size",
    "motion_max_val",
    "motion_add_scale1",
    "motion_add_uv",
];

impl FloatMotionOptions {
    /// Reads libvmaf's option names.
    ///
    /// Errors: an unknown option, a value outside libvmaf's range, a non-integer filter
    /// size, or `motion_add_uv` set (not supported).
    pub fn from_options(o: &Options) -> Result<Self, String> {
        o.only(OPTION_KEYS)?;
        if o.flag("motion_add_uv", false)? {
            return Err(
                "option 'motion_add_uv' is not supported by vmafcompare's float_motion".to_owned(),
            );
        }
        let d = Self::default();
        let fs = o.number("motion_filter_size", f64::from(d.filter_size), 0.0..=9.0)?;
        if fs.fract() != 0.0 {
            return Err(format!(
                "option 'motion_filter_size' = {fs} must be an integer"
            ));
        }
        Ok(Self {
            force_zero: o.flag("motion_force_zero", d.force_zero)?,
            fps_weight: o.number("motion_fps_weight", d.fps_weight, 0.0..=5.0)?,
            blend_factor: o.number("motion_blend_factor", d.blend_factor, 0.0..=1.0)?,
            blend_offset: o.number("motion_blend_offset", d.blend_offset, 0.0..=1000.0)?,
            filter_size: fs as u32,
            max_val: o.number("motion_max_val", d.max_val, 0.0..=10000.0)?,
            add_scale1: o.flag("motion_add_scale1", d.add_scale1)?,
        })
    }

    /// libvmaf's option suffix of the output names (`""` at the defaults).
    pub fn key(&self) -> String {
        let d = Self::default();
        let mut parts: Vec<SuffixPart> = Vec::new();
        let mut num = |name, alias, v: f64, dv: f64| {
            if v != dv {
                parts.push((name, alias, Some(fmt_g(v))));
            }
        };
        num("motion_fps_weight", "mfw", self.fps_weight, d.fps_weight);
        num(
            "motion_blend_factor",
            "mbf",
            self.blend_factor,
            d.blend_factor,
        );
        num(
            "motion_blend_offset",
            "mbo",
            self.blend_offset,
            d.blend_offset,
        );
        num("motion_max_val", "mmxv", self.max_val, d.max_val);
        if self.filter_size != d.filter_size {
            parts.push((
                "motion_filter_size",
                "mfs",
                Some(self.filter_size.to_string()),
            ));
        }
        if self.force_zero {
            parts.push(("motion_force_zero", "force_0", None));
        }
        if self.add_scale1 {
            parts.push(("motion_add_scale1", "mdc", None));
        }
        suffix(parts)
    }

    /// The blur's taps (`None`: no blur, `motion_filter_size` 1).
    pub fn filter(&self) -> Option<Vec<f32>> {
        match self.filter_size {
            1 => None,
            3 => Some(FILTER_3.iter().map(|&c| c as f32).collect()),
            _ => Some(FILTER_5.iter().map(|&c| c as f32).collect()),
        }
    }

    /// The logged score of a frame from the mean absolute difference `sad` (libvmaf's
    /// `float` score widened): `min(sad * fps_weight, max_val)`; 0 with `force_zero`.
    pub fn score(&self, sad: f32) -> f64 {
        if self.force_zero {
            return 0.0;
        }
        let m = f64::from(sad) * self.fps_weight;
        if m < self.max_val {
            m
        } else {
            self.max_val
        }
    }

    /// `motion_blend` then the clip to `max_val`.
    fn processed(&self, m: f64) -> f64 {
        let f = self.blend_factor;
        let lo = if self.blend_offset < m {
            self.blend_offset
        } else {
            m
        };
        let b = m * f + (1.0 - f) * lo;
        if b < self.max_val {
            b
        } else {
            self.max_val
        }
    }

    /// libvmaf's `motion2` and `motion3` of the frame at run position `position`, from the
    /// logged scores around it (`score(offset)`: `offset` frames away, `None` outside the
    /// run). Frame 0: `motion2 = 0`, `motion3` the next frame's score processed (0 without
    /// one); later frames: `motion2 = min(score, next score)` (its own score at the end of the
    /// run), `motion3 = min(blend(motion2), max_val)`. Equal to libvmaf's values unless a
    /// score was clipped by a `motion_max_val` below it with a blend factor below 1 (libvmaf
    /// blends the unclipped score there).
    pub fn late(&self, position: u64, score: impl Fn(i64) -> Option<f64>) -> [f64; 2] {
        let next = score(1);
        if position == 0 {
            return [0.0, next.map(|n| self.processed(n)).unwrap_or(0.0)];
        }
        let own = score(0).unwrap_or(0.0);
        let m2 = match next {
            Some(n) if n < own => n,
            _ => own,
        };
        [m2, self.processed(m2)]
    }
}

/// The registry entry of `float_motion`.
#[derive(Debug)]
pub struct FloatMotionFeature;

/// [`FloatMotionFeature`], as [`super::REGISTRY`] lists it.
pub static FLOAT_MOTION: FloatMotionFeature = FloatMotionFeature;

impl Feature for FloatMotionFeature {
    fn name(&self) -> &'static str {
        FEATURE
    }

    fn section(&self) -> Section {
        Section::Core
    }

    fn accepts(&self, key: &str) -> bool {
        key.starts_with("motion_")
    }

    fn model_output(&self, model_name: &str) -> Option<String> {
        match model_name {
            "VMAF_feature_motion_score" => Some("motion".into()),
            "VMAF_feature_motion2_score" => Some("motion2".into()),
            "VMAF_feature_motion3_score" => Some("motion3".into()),
            _ => None,
        }
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(FloatMotionInstance {
            opts: FloatMotionOptions::from_options(options)?,
        }))
    }
}

/// `float_motion` with its options.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct FloatMotionInstance {
    /// The options.
    pub opts: FloatMotionOptions,
}

impl Instance for FloatMotionInstance {
    fn feature(&self) -> &'static dyn Feature {
        &FLOAT_MOTION
    }

    fn key(&self) -> String {
        self.opts.key()
    }

    fn needs(&self) -> Needs {
        Needs {
            chroma: false,
            previous: true,
            reference_only: true,
        }
    }

    /// `motion` (libvmaf's `debug` output, on by default).
    fn outputs(&self) -> Vec<String> {
        vec![format!("motion{}", self.key())]
    }

    fn late_outputs(&self) -> Vec<String> {
        let key = self.key();
        vec![format!("motion2{key}"), format!("motion3{key}")]
    }

    /// See [`FloatMotionOptions::late`].
    fn finish(&self, w: &Window, out: &mut [f64]) {
        let v = self.opts.late(w.position, |rel| w.value(rel, 0));
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_SIZE, MIN_SIZE)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        Ok(Box::new(FloatMotionCpu {
            motion: cpu::FloatMotion::new(g.width, g.height, g.bpc, self.opts.filter())?
                .with_scale1(self.opts.add_scale1),
            opts: self.opts,
        }))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        if self.opts.add_scale1 {
            return Err(CudaError::Driver {
                call: "float_motion on CUDA (motion_add_scale1 is computed with backend=cpu only)",
                code: "CUDA_ERROR_NOT_SUPPORTED".to_owned(),
            });
        }
        Ok(Box::new(FloatMotionCuda {
            gpu: cuda::FloatMotionGpu::new(
                dev,
                stream,
                g.width,
                g.height,
                g.bpc,
                self.opts.filter(),
            )?,
            opts: self.opts,
        }))
    }
}

/// The CPU half with its options.
struct FloatMotionCpu {
    motion: cpu::FloatMotion,
    opts: FloatMotionOptions,
}

impl CpuExtractor for FloatMotionCpu {
    /// 0 on the first frame of a run (no previous reference) and with `force_zero`.
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let score = match f.previous {
            Some(prev) if !self.opts.force_zero => {
                self.opts.score(self.motion.sad(prev, f.reference)?)
            }
            _ => 0.0,
        };
        if let Some(o) = out.first_mut() {
            *o = score;
        }
        Ok(())
    }
}

/// The CUDA half with its options.
struct FloatMotionCuda {
    gpu: cuda::FloatMotionGpu,
    opts: FloatMotionOptions,
}

impl CudaExtractor for FloatMotionCuda {
    fn result_words(&self) -> usize {
        cuda::FloatMotionGpu::RESULT_WORDS
    }

    /// Enqueues nothing without a previous frame or with `force_zero` (the backend then
    /// does not read it back).
    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        match f.previous {
            Some(prev) if !self.opts.force_zero => self.gpu.enqueue(stream, prev, f.reference, out),
            _ => Ok(()),
        }
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        if let (Some(o), Some(sad)) = (out.first_mut(), self.gpu.sad(words)) {
            *o = self.opts.score(sad);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_values_follow_libvmafs_flush() {
        let o = FloatMotionOptions::default();
        let s = [0.0, 4.0, 3.0, 5.0];
        let at = |i: usize| {
            o.late(i as u64, |rel| {
                let j = i as i64 + rel;
                (j >= 0 && (j as usize) < s.len()).then(|| s[j as usize])
            })
        };
        assert_eq!(at(0), [0.0, 4.0]);
        assert_eq!(at(1), [3.0, 3.0]);
        assert_eq!(at(2), [3.0, 3.0]);
        assert_eq!(at(3), [5.0, 5.0]);
        let single = o.late(0, |rel| (rel == 0).then_some(0.0));
        assert_eq!(single, [0.0, 0.0]);
        let blend = FloatMotionOptions {
            blend_factor: 0.5,
            blend_offset: 2.0,
            ..o
        };
        assert_eq!(blend.processed(4.0), 3.0);
    }

    #[test]
    fn option_suffixes_are_libvmafs() {
        let o = FloatMotionOptions {
            force_zero: true,
            filter_size: 3,
            fps_weight: 2.0,
            add_scale1: true,
            ..FloatMotionOptions::default()
        };
        assert_eq!(o.key(), "_mdc_mfs_3_force_0_mfw_2");
        assert_eq!(FloatMotionOptions::default().key(), "");
    }
}
