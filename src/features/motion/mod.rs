//! Integer motion, libvmaf's `motion` extractor: the blurred SAD between consecutive reference
//! frames (`VMAF_integer_feature_motion_sad_score`) and its post-processing once the next
//! frame is in (`integer_motion2`, `integer_motion3`).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_motion.c (`extract`, `flush`).
//!
//! - `cpu.rs`: the CPU half ([`cpu::Motion`]), the reference;
//! - `cuda.rs`: the CUDA host half ([`cuda::MotionGpu`]) of `kernels/motion.cu`.

pub mod cpu;
pub mod cuda;

use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::{
    CpuExtractor, CudaExtractor, DevFrame, Feature, Geometry, HostFrame, Instance, Needs, Options,
    Section,
};
use crate::cuda::{CudaError, GpuDevice};
use crate::video::frame::FeatureError;

/// Name reported in [`FeatureError`]s and the registry.
const FEATURE: &str = "motion";

/// Smallest plane the mirrored 5-tap filter is defined on.
pub const MIN_WIDTH: usize = 3;
/// Smallest plane the mirrored 5-tap filter is defined on.
pub const MIN_HEIGHT: usize = 3;

/// libvmaf's default clip for motion scores (`DEFAULT_MOTION_MAX_VAL`).
pub const MOTION_MAX_VAL: f64 = 10000.0;
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
        options.only(&[])?;
        Ok(Arc::new(MotionInstance))
    }
}

/// Motion with libvmaf's default options (three-frame window, no moving average, scores
/// clipped to [`MOTION_MAX_VAL`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MotionInstance;

impl Instance for MotionInstance {
    fn feature(&self) -> &'static dyn Feature {
        &MOTION
    }

    fn key(&self) -> String {
        String::new()
    }

    fn needs(&self) -> Needs {
        Needs {
            chroma: false,
            previous: true,
        }
    }

    fn outputs(&self) -> Vec<String> {
        vec!["VMAF_integer_feature_motion_sad_score".into()]
    }

    fn late_outputs(&self) -> Vec<String> {
        vec!["integer_motion2".into(), "integer_motion3".into()]
    }

    /// libvmaf 3.x `flush()`: `motion2[0] = 0`, `motion2[i] = min(sad[i], sad[i+1])`, the
    /// last frame keeps `sad[i]`; `motion3` (blend factor 1, no moving average) is `motion2`
    /// clipped to [`MOTION_MAX_VAL`], except the first frame, which takes `sad[1]`.
    fn finish(&self, raw: &[f64], next: Option<&[f64]>, first: bool, out: &mut [f64]) {
        let sad = raw.first().copied().unwrap_or(0.0);
        let next_sad = next.map(|n| n.first().copied().unwrap_or(0.0));
        let motion2 = match (first, next_sad) {
            (true, _) => 0.0,
            (_, Some(next)) => sad.min(next),
            (_, None) => sad,
        };
        let motion3 = if first {
            next_sad.map_or(0.0, |s| s.min(MOTION_MAX_VAL))
        } else {
            motion2.min(MOTION_MAX_VAL)
        };
        out.iter_mut()
            .zip([motion2, motion3])
            .for_each(|(o, v)| *o = v);
    }

    fn min_size(&self) -> (usize, usize) {
        (MIN_WIDTH, MIN_HEIGHT)
    }

    fn cpu(&self, g: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError> {
        Ok(Box::new(cpu::Motion::new(g.width, g.height, g.bpc)?))
    }

    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        g: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError> {
        self.check(g)?;
        Ok(Box::new(cuda::MotionGpu::new(
            dev, stream, g.width, g.height, g.bpc,
        )?))
    }
}

impl CpuExtractor for cpu::Motion {
    /// 0 without a previous frame.
    fn extract(&mut self, f: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError> {
        let score = match f.previous {
            Some(prev) => {
                let sad = self.sad(prev, f.reference)?;
                self.score(sad)
            }
            None => 0.0,
        };
        if let Some(o) = out.first_mut() {
            *o = score;
        }
        Ok(())
    }
}

impl CudaExtractor for cuda::MotionGpu {
    fn result_words(&self) -> usize {
        cuda::MotionGpu::RESULT_WORDS
    }

    /// Enqueues nothing without a previous frame (the backend then does not read it back).
    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        match f.previous {
            Some(prev) => cuda::MotionGpu::enqueue(self, stream, prev, f.reference, out),
            None => Ok(()),
        }
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        if let Some(o) = out.first_mut() {
            *o = self.score(words);
        }
    }
}
