//! Host side of `kernels/float_motion.cu`: libvmaf's `float_motion` score on the GPU.
//!
//! Both reference planes are blurred per frame (no state between frames); every blurred value
//! and absolute difference is the CPU half's bits (explicitly rounded `f32` operations in the
//! same order), the sum is taken per block in `f64` and the blocks added in a fixed order
//! (the CPU adds `f32` row sums, as libvmaf does), so scores differ from the CPU's by about
//! 1e-7 relative and are the same bits on every run. Two launches per frame.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_motion.c, motion.c; oracle:
//! [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::params::{FEATURE, MIN_SIZE};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, DevPlane};

const BLOCK: (u32, u32, u32) = (32, 8, 1);
/// Output tile of `fmotion_sad` (columns x rows).
const TILE: (usize, usize) = (32, 16);

/// `struct Taps` of the kernel (24 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Taps {
    f: [f32; 5],
    n: i32,
}

const _: () = assert!(std::mem::size_of::<Taps>() == 24);

/// The float motion kernels and their per-block scratch for one geometry.
pub struct FloatMotionGpu {
    sad: CudaFunction,
    total: CudaFunction,
    partial: DeviceAlloc<f64>,
    taps: Taps,
    width: usize,
    height: usize,
    scale: f32,
}

impl FloatMotionGpu {
    /// Result words per frame: the sum of `|blur(prev) - blur(cur)|` as `f64` bits.
    pub const RESULT_WORDS: usize = 1;

    /// Loads the kernels and allocates the scratch (on `stream`) for `width` x `height`
    /// planes of `bpc` bits, blurred with `filter` (`None`: not blurred; at most 5 taps).
    ///
    /// Errors: [`CudaError::Geometry`] below 3x3; [`CudaError::Driver`] (kernel lookup);
    /// [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
        filter: Option<Vec<f32>>,
    ) -> Result<Self, CudaError> {
        check_size(FEATURE, (width, height, bpc), MIN_SIZE)?;
        let mut taps = Taps {
            f: [1.0, 0.0, 0.0, 0.0, 0.0],
            n: 1,
        };
        if let Some(f) = filter.filter(|f| f.len() <= 5) {
            taps.f[..f.len()].copy_from_slice(&f);
            taps.n = f.len() as i32;
        }
        let m = dev.modules().get("float_motion")?;
        let sad = function(m, "fmotion_sad", "cuModuleGetFunction(fmotion_sad)")?;
        let total = function(m, "fmotion_total", "cuModuleGetFunction(fmotion_total)")?;
        let blocks = width.div_ceil(TILE.0) * height.div_ceil(TILE.1);
        let partial = alloc_zeroed::<f64>(stream, blocks, "cuMemAlloc(float_motion sums)")?;
        Ok(Self {
            sad,
            total,
            partial,
            taps,
            width,
            height,
            scale: super::super::float_vif::cpu::sample_scale(bpc),
        })
    }

    /// Enqueues the sum for `prev_ref` against `cur_ref` into `out[0]` (overwritten).
    ///
    /// Errors: [`CudaError::Driver`] for a failed launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        prev_ref: DevPlane,
        cur_ref: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        let grid = (
            self.width.div_ceil(TILE.0) as u32,
            self.height.div_ceil(TILE.1) as u32,
            1,
        );
        let mut blocks = (grid.0 * grid.1) as i32;
        let (mut p_prev, mut p_cur) = (prev_ref, cur_ref);
        let (mut w, mut h) = (self.width as i32, self.height as i32);
        let mut scale = self.scale;
        let mut taps = self.taps;
        let mut p_partial = self.partial.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;
        // SAFETY: parameters match fmotion_sad(Plane, Plane, i32, i32, float, Taps, double*)
        // and fmotion_total(const double*, i32, u64*); the planes hold w * h samples,
        // `partial` one double per block, `out` one word; all live until the kernels ran.
        unsafe {
            launch(
                stream,
                &self.sad,
                grid,
                BLOCK,
                &mut [
                    param(&mut p_prev),
                    param(&mut p_cur),
                    param(&mut w),
                    param(&mut h),
                    param(&mut scale),
                    param(&mut taps),
                    param(&mut p_partial),
                ],
                "cuLaunchKernel(fmotion_sad)",
            )?;
            launch(
                stream,
                &self.total,
                (1, 1, 1),
                BLOCK,
                &mut [param(&mut p_partial), param(&mut blocks), param(&mut p_out)],
                "cuLaunchKernel(fmotion_total)",
            )
        }
    }

    /// The mean absolute difference (libvmaf's `float` score) from the read-back
    /// `words[0]`; `None` without a word.
    pub fn sad(&self, words: &[u64]) -> Option<f32> {
        let sum = f64::from_bits(*words.first()?) as f32;
        Some(sum / (self.width * self.height) as f32)
    }
}
