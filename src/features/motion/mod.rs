//! Integer motion, libvmaf's `motion` extractor: the blurred SAD between consecutive reference
//! frames (`VMAF_integer_feature_motion_sad_score`; two frames apart with the HFR five-frame
//! window) and its post-processing once the next frames are in (`integer_motion2`,
//! `integer_motion3`), with libvmaf 3.2.0's options (`motion_max_val`, the five-frame window
//! and moving average of the VMAF v1 `_hfr_` models, blend, fps weight).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_motion.c (`extract`, `flush`).
//!
//! - `cpu.rs`: the CPU half ([`cpu::Motion`]), the reference;
//! - `cuda.rs`: the CUDA host half ([`cuda::MotionGpu`]) of `kernels/motion.cu`.

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
use crate::cuda::error::DriverResultExt;
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;
pub use params::{MIN_HEIGHT, MIN_WIDTH, MOTION_MAX_VAL};

/// Name reported in [`FeatureError`]s and the registry.
const FEATURE: &str = "motion";

/// The options of libvmaf 3.2.0's integer motion, its defaults by [`Default`]. Source:
/// Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_motion.c (option table, `extract`,
/// `flush`) and motion_blend_tools.h.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MotionOptions {
    /// `motion_max_val` (alias `mmxv`), 0..=10000: scores above it are clipped to it (VMAF v1
    /// models: 18).
    pub max_val: f64,
    /// `motion_five_frame_window` (`mffw`): the SAD is taken against the reference two frames
    /// back (frames i-2, i, and i+2 through `motion2`), for high frame rates (the `_hfr_` v1
    /// models).
    pub five_frame_window: bool,
    /// `motion_moving_average` (`mma`): `motion3` is the mean of this frame's and the
    /// previous frame's clipped `motion2` (the `_hfr_` v1 models).
    pub moving_average: bool,
    /// `motion_blend_factor` (`mbf`), 0..=1: `motion3` is `m * f + (1 - f) * min(offset, m)`.
    pub blend_factor: f64,
    /// `motion_blend_offset` (`mbo`), 0..=1000.
    pub blend_offset: f64,
    /// `motion_fps_weight` (`mfw`), 0..=5: multiplies the SAD score.
    pub fps_weight: f64,
    /// `motion_force_zero` (`force_0`): every SAD score is 0.
    pub force_zero: bool,
}

impl Default for MotionOptions {
    fn default() -> Self {
        Self {
            max_val: MOTION_MAX_VAL,
            five_frame_window: false,
            moving_average: false,
            blend_factor: 1.0,
            blend_offset: 40.0,
            fps_weight: 1.0,
            force_zero: false,
        }
    }
}

/// The option names [`MotionFeature`] takes.
const OPTION_KEYS: &[&str] = &[
    "motion_max_val",
    "motion_five_frame_window",
    "motion_moving_average",
    "motion_blend_factor",
    "motion_blend_offset",
    "motion_fps_weight",
    "motion_force_zero",
];

impl MotionOptions {
    /// Reads libvmaf's option names (a model's `feature_opts_dicts` entry).
    ///
    /// Errors: an unknown option, or a value outside libvmaf's range.
    pub fn from_options(o: &Options) -> Result<Self, String> {
        o.only(OPTION_KEYS)?;
        let d = Self::default();
        Ok(Self {
            max_val: o.number("motion_max_val", d.max_val, 0.0..=10000.0)?,
            five_frame_window: o.flag("motion_five_frame_window", d.five_frame_window)?,
            moving_average: o.flag("motion_moving_average", d.moving_average)?,
            blend_factor: o.number("motion_blend_factor", d.blend_factor, 0.0..=1.0)?,
            blend_offset: o.number("motion_blend_offset", d.blend_offset, 0.0..=1000.0)?,
            fps_weight: o.number("motion_fps_weight", d.fps_weight, 0.0..=5.0)?,
            force_zero: o.flag("motion_force_zero", d.force_zero)?,
        })
    }

    /// libvmaf's option suffix of the output names: `""` at the defaults, `_mmxv_18` for the
    /// v1 models, `_mffw_mmxv_18_mma` for the HFR ones.
    pub fn key(&self) -> String {
        let d = Self::default();
        let mut parts: Vec<SuffixPart> = Vec::new();
        let mut num = |name, alias, v: f64, dv: f64| {
            if v != dv {
                parts.push((name, alias, Some(fmt_g(v))));
            }
        };
        num("motion_max_val", "mmxv", self.max_val, d.max_val);
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
        num("motion_fps_weight", "mfw", self.fps_weight, d.fps_weight);
        for (name, alias, on) in [
            ("motion_five_frame_window", "mffw", self.five_frame_window),
            ("motion_moving_average", "mma", self.moving_average),
            ("motion_force_zero", "force_0", self.force_zero),
        ] {
            if on {
                parts.push((name, alias, None));
            }
        }
        suffix(parts)
    }

    /// How many frames back the SAD's other reference is: 2 with the five-frame window, else
    /// 1 (also libvmaf's first frame with a SAD, `min_idx`).
    pub fn distance(&self) -> u64 {
        if self.five_frame_window {
            2
        } else {
            1
        }
    }

    /// The SAD score libvmaf logs (`VMAF_integer_feature_motion_sad_score`) from the blurred
    /// SAD `sad` of `width` x `height` planes: `min(sad / 256 / (w * h) * fps_weight,
    /// max_val)` (`w * h` as libvmaf's 32-bit unsigned product); 0 with `force_zero`.
    pub fn score(&self, sad: u64, width: usize, height: usize) -> f64 {
        if self.force_zero {
            return 0.0;
        }
        let pixels = (width as u32).wrapping_mul(height as u32);
        (sad as f64 / 256.0 / f64::from(pixels) * self.fps_weight).min(self.max_val)
    }

    /// libvmaf's `motion_blend` then the clip to `max_val`.
    fn processed(&self, m: f64) -> f64 {
        let f = self.blend_factor;
        (m * f + (1.0 - f) * self.blend_offset.min(m)).min(self.max_val)
    }

    /// libvmaf 3.2.0's `flush` for one frame: `[motion2, motion3]` from the SAD scores of the
    /// frames around it (`sad(offset)`: the score `offset` frames away in the run, `None`
    /// outside it) at run position `position`.
    ///
    /// With `d` = [`MotionOptions::distance`]: frames before `d` have `motion2` 0; later ones
    /// `min(sad[i - d + 1], sad[i + 1])` (`sad[i + 1]` alone at `i == d` in the five-frame
    /// window, `sad[i]` for the last frame of the run). `motion3` is `motion2` blended and
    /// clipped, averaged with the previous frame's with `moving_average`; frames before `d`
    /// take the blended, clipped `sad[d]` (0 when the run is shorter).
    pub fn late(&self, position: u64, sad: impl Fn(i64) -> Option<f64>) -> [f64; 2] {
        let d = self.distance();
        let motion2 = |rel: i64| -> f64 {
            let abs = position as i64 + rel;
            if abs < d as i64 {
                return 0.0;
            }
            let own = sad(rel).unwrap_or(0.0);
            match sad(rel + 1) {
                None => own,
                Some(hi) => {
                    let lo_rel = rel - (d as i64 - 1);
                    if position as i64 + lo_rel >= d as i64 {
                        sad(lo_rel).unwrap_or(0.0).min(hi)
                    } else {
                        hi
                    }
                }
            }
        };
        let stamp = sad(d as i64 - position as i64)
            .map(|s| self.processed(s))
            .unwrap_or(0.0);
        if position < d {
            return [0.0, stamp];
        }
        let m2 = motion2(0);
        let processed = self.processed(m2);
        let motion3 = if self.moving_average {
            let prev = if position - 1 < d {
                stamp
            } else {
                self.processed(motion2(-1))
            };
            (processed + prev) / 2.0
        } else {
            processed
        };
        [m2, motion3]
    }
}

/// The registry entry of motion.
#[derive(Debug)]
pub struct MotionFeature;

/// [`MotionFeature`], as [`super::REGISTRY`] lists it.
pub static MOTION: MotionFeature = MotionFeature;

impl Feature for MotionFeature {
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
            "VMAF_integer_feature_motion2_score" => Some("integer_motion2".into()),
            "VMAF_integer_feature_motion3_score" => Some("integer_motion3".into()),
            _ => None,
        }
    }

    fn configure(&self, options: &Options, _chroma: bool) -> Result<Arc<dyn Instance>, String> {
        Ok(Arc::new(MotionInstance {
            opts: MotionOptions::from_options(options)?,
        }))
    }
}

/// Motion with its options (libvmaf's defaults: three-frame window, no moving average,
/// scores clipped to [`MOTION_MAX_VAL`]).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MotionInstance {
    /// The options.
    pub opts: MotionOptions,
}

impl Instance for MotionInstance {
    fn feature(&self) -> &'static dyn Feature {
        &MOTION
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

    fn outputs(&self) -> Vec<String> {
        vec![format!(
            "VMAF_integer_feature_motion_sad_score{}",
            self.key()
        )]
    }

    fn late_outputs(&self) -> Vec<String> {
        let key = self.key();
        vec![
            format!("integer_motion2{key}"),
            format!("integer_motion3{key}"),
        ]
    }

    fn window(&self) -> (usize, usize) {
        if self.opts.five_frame_window || self.opts.moving_average {
            (2, 2)
        } else {
            (0, 1)
        }
    }

    /// See [`MotionOptions::late`].
    fn finish(&self, w: &Window, out: &mut [f64]) {
        let v = self.opts.late(w.position, |rel| w.value(rel, 0));
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_WIDTH, MIN_HEIGHT)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        Ok(Box::new(MotionCpu {
            motion: cpu::Motion::new(g.width, g.height, g.bpc)?,
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
        Ok(Box::new(MotionCuda {
            gpu: cuda::MotionGpu::new(dev, stream, g.width, g.height, g.bpc)?,
            opts: self.opts,
            history: if self.opts.five_frame_window {
                Some(cuda::History::new(stream, g.width, g.height)?)
            } else {
                None
            },
        }))
    }
}

/// The CPU half with its options.
struct MotionCpu {
    motion: cpu::Motion,
    opts: MotionOptions,
}

impl CpuExtractor for MotionCpu {
    /// 0 without the frame [`MotionOptions::distance`] back.
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let other = if self.opts.five_frame_window {
            f.previous2
        } else {
            f.previous
        };
        let score = match other {
            Some(prev) if !self.opts.force_zero => {
                let sad = self.motion.sad(prev, f.reference)?;
                self.opts.score(sad, f.reference.width, f.reference.height)
            }
            _ => 0.0,
        };
        if let Some(o) = out.first_mut() {
            *o = score;
        }
        Ok(())
    }
}

/// The CUDA half with its options; with the five-frame window it keeps the last two
/// references in device memory of its own.
struct MotionCuda {
    gpu: cuda::MotionGpu,
    opts: MotionOptions,
    history: Option<cuda::History>,
}

impl CudaExtractor for MotionCuda {
    fn result_words(&self) -> usize {
        cuda::MotionGpu::RESULT_WORDS
    }

    /// Enqueues nothing without a previous frame (the backend then does not read it back);
    /// with the five-frame window, the SAD against the reference two frames back (a zero
    /// SAD on the second frame of a run), then this reference into the history.
    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        match &mut self.history {
            None => match f.previous {
                Some(prev) => self.gpu.enqueue(stream, prev, f.reference, out),
                None => Ok(()),
            },
            Some(h) => {
                if f.previous.is_none() {
                    h.restart();
                }
                match h.two_back(stream) {
                    Some(prev) => self.gpu.enqueue(stream, prev, f.reference, out)?,
                    None => stream
                        .memset_zeros(out)
                        .during("cuMemsetD8Async(motion five-frame start)")?,
                }
                h.keep(stream, &self.gpu, f.reference)
            }
        }
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        if let (Some(o), Some(&sad)) = (out.first_mut(), words.first()) {
            let (w, h) = self.gpu.size();
            *o = self.opts.score(sad, w, h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libvmaf's `flush` over a whole run at once, written from its description: the
    /// reference the windowed [`MotionOptions::late`] must equal.
    fn flush_whole(o: &MotionOptions, sad: &[f64]) -> Vec<[f64; 2]> {
        let d = o.distance() as usize;
        let n = sad.len();
        let stamp = if n > d { o.processed(sad[d]) } else { 0.0 };
        let mut prev = 0.0;
        let mut out = Vec::new();
        for i in 0..n {
            let m2 = if i < d {
                0.0
            } else if i + 1 >= n {
                sad[i]
            } else {
                let lo = i + 1 - d;
                if lo >= d {
                    sad[lo].min(sad[i + 1])
                } else {
                    sad[i + 1]
                }
            };
            let m3 = if i < d {
                prev = stamp;
                stamp
            } else {
                let p = o.processed(m2);
                let m3 = if o.moving_average {
                    (p + prev) / 2.0
                } else {
                    p
                };
                prev = p;
                m3
            };
            out.push([m2, m3]);
        }
        out
    }

    #[test]
    fn windowed_flush_equals_whole_run() {
        let sads = [3.5, 0.0, 7.25, 19.0, 2.0, 11.0, 30.0, 4.5, 6.0];
        for (ffw, mma, max) in [
            (false, false, MOTION_MAX_VAL),
            (false, false, 18.0),
            (true, true, 18.0),
            (true, false, 18.0),
            (false, true, 5.0),
        ] {
            let o = MotionOptions {
                max_val: max,
                five_frame_window: ffw,
                moving_average: mma,
                ..MotionOptions::default()
            };
            let inst = MotionInstance { opts: o };
            let (behind, ahead) = inst.window();
            for n in 1..=sads.len() {
                let run = &sads[..n];
                let want = flush_whole(&o, run);
                for (i, w) in want.iter().enumerate() {
                    let got = o.late(i as u64, |rel| {
                        let j = i as i64 + rel;
                        let inside = rel >= -(behind as i64) && rel <= ahead as i64;
                        (inside && j >= 0 && (j as usize) < n).then(|| run[j as usize])
                    });
                    assert_eq!(&got, w, "ffw {ffw} mma {mma} n {n} frame {i}");
                }
            }
        }
    }

    #[test]
    fn option_suffixes_are_libvmafs() {
        let v1 = MotionOptions {
            max_val: 18.0,
            ..MotionOptions::default()
        };
        assert_eq!(v1.key(), "_mmxv_18");
        let hfr = MotionOptions {
            five_frame_window: true,
            moving_average: true,
            ..v1
        };
        assert_eq!(hfr.key(), "_mffw_mmxv_18_mma");
        assert_eq!(MotionOptions::default().key(), "");
    }
}
