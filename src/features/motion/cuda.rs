//! Host side of `kernels/motion.cu`: the integer motion SAD of two consecutive reference
//! planes on the GPU.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_motion.c; oracle:
//! [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::params::MOTION_MAX_VAL;
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::DevPlane;
use crate::video::frame::SampleLayout;

/// Output tile of `motion_rows` (columns x rows).
const TILE: (usize, usize) = (64, 16);
const BLOCK: (u32, u32, u32) = (32, 8, 1);

/// The motion kernels and their per-row scratch for one geometry.
pub struct MotionGpu {
    rows: CudaFunction,
    total: CudaFunction,
    keep: CudaFunction,
    /// Per-row sums modulo 2^32 (libvmaf's `uint32_t` row accumulator), `height` words.
    row_sums: DeviceAlloc<u32>,
    width: usize,
    height: usize,
    bpc: u32,
}

impl MotionGpu {
    /// `u64` words [`MotionGpu::enqueue`] writes per frame: the SAD.
    pub const RESULT_WORDS: usize = 1;

    /// Loads the kernels and allocates the scratch (on `stream`) for `width` x `height`
    /// planes of `bpc` bits (`8..=16`; the caller checks the geometry, e.g. with
    /// [`super::cpu::Motion::new`]).
    ///
    /// Errors: [`CudaError::Driver`] (kernel lookup), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, CudaError> {
        let m = dev.modules().get("motion")?;
        let rows = function(m, "motion_rows", "cuModuleGetFunction(motion_rows)")?;
        let total = function(m, "motion_total", "cuModuleGetFunction(motion_total)")?;
        let keep = function(m, "motion_keep", "cuModuleGetFunction(motion_keep)")?;
        let row_sums = alloc_zeroed::<u32>(stream, height, "cuMemAlloc(motion row sums)")?;
        Ok(Self {
            rows,
            total,
            keep,
            row_sums,
            width,
            height,
            bpc,
        })
    }

    /// Enqueues on `stream` the SAD of `prev_ref` against `cur_ref` (`width * height` planes,
    /// see [`DevPlane`]'s contract) into `out[0]` (overwritten, no zeroing needed). Bit-identical to
    /// [`super::cpu::Motion::sad`].
    ///
    /// Errors: [`CudaError::Driver`] for a failed memset or launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        prev_ref: DevPlane,
        cur_ref: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        stream
            .memset_zeros(&mut *self.row_sums)
            .during("cuMemsetD8Async(motion row sums)")?;
        let (round, shift) = if self.bpc == 8 {
            (1i32 << 7, 8i32)
        } else {
            (1i32 << (self.bpc - 1), self.bpc as i32)
        };
        let mut w = self.width as i32;
        let mut h = self.height as i32;
        let (mut round, mut shift) = (round, shift);
        let (mut p_prev, mut p_cur) = (prev_ref, cur_ref);
        let mut p_rows = self.row_sums.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;
        let grid = (
            self.width.div_ceil(TILE.0) as u32,
            self.height.div_ceil(TILE.1) as u32,
            1,
        );
        // SAFETY: parameters match motion_rows(Plane, Plane, i32, i32, i32, i32,
        // u32*); the planes hold w * h samples and row_sums h words, all live until the
        // stream has run the kernel (the caller keeps them; we synchronise before freeing).
        unsafe {
            launch(
                stream,
                &self.rows,
                grid,
                BLOCK,
                &mut [
                    param(&mut p_prev),
                    param(&mut p_cur),
                    param(&mut w),
                    param(&mut h),
                    param(&mut round),
                    param(&mut shift),
                    param(&mut p_rows),
                ],
                "cuLaunchKernel(motion_rows)",
            )?;
            // SAFETY: motion_total(const u32*, i32, u64*); out holds >= 1 word.
            launch(
                stream,
                &self.total,
                (1, 1, 1),
                BLOCK,
                &mut [param(&mut p_rows), param(&mut h), param(&mut p_out)],
                "cuLaunchKernel(motion_total)",
            )
        }
    }

    /// The motion score of a SAD read back from [`MotionGpu::enqueue`]'s `words[0]`:
    /// `min(sad / 256 / (w * h), 10000)`, equal to [`super::cpu::Motion::score`].
    /// Returns 0.0 for an empty `words`.
    pub fn score(&self, words: &[u64]) -> f64 {
        let Some(&sad) = words.first() else {
            return 0.0;
        };
        let pixels = (self.width as u32).wrapping_mul(self.height as u32);
        let s = sad as f64 / 256.0 / f64::from(pixels);
        s.min(MOTION_MAX_VAL)
    }

    /// The plane size (width, height).
    pub fn size(&self) -> (usize, usize) {
        (self.width, self.height)
    }

    /// Enqueues on `stream` a copy of `src` (`width * height`, see [`DevPlane`]) into `dst`
    /// (`width * height` packed 16-bit samples holding the values the kernels read).
    ///
    /// Errors: [`CudaError::Driver`] for a failed launch.
    fn keep(
        &self,
        stream: &Arc<CudaStream>,
        src: DevPlane,
        dst: &mut DeviceAlloc<u16>,
    ) -> Result<(), CudaError> {
        let mut p_src = src;
        let mut w = self.width as i32;
        let mut h = self.height as i32;
        let mut p_dst = dst.device_ptr_mut(stream).0;
        let grid = (
            self.width.div_ceil(32) as u32,
            self.height.div_ceil(8) as u32,
            1,
        );
        // SAFETY: parameters match motion_keep(Plane, i32, i32, u16*); `src` holds w * h
        // samples (the caller's contract) and `dst` w * h words; both outlive the kernel.
        unsafe {
            launch(
                stream,
                &self.keep,
                grid,
                BLOCK,
                &mut [
                    param(&mut p_src),
                    param(&mut w),
                    param(&mut h),
                    param(&mut p_dst),
                ],
                "cuLaunchKernel(motion_keep)",
            )
        }
    }
}

/// The last two reference planes of a run, in device memory of the five-frame motion's own
/// (a reference plane of the backend is held for one frame only): two planes of
/// `width * height` packed 16-bit samples, allocated once.
pub struct History {
    ring: [DeviceAlloc<u16>; 2],
    /// The ring plane written next (it holds the reference two frames back).
    next: usize,
    /// References kept since the run started (capped at 2).
    kept: u8,
    width: usize,
}

impl History {
    /// Allocates the two planes on `stream`.
    ///
    /// Errors: [`CudaError::OutOfMemory`].
    pub fn new(stream: &Arc<CudaStream>, width: usize, height: usize) -> Result<Self, CudaError> {
        let n = width * height;
        Ok(Self {
            ring: [
                alloc_zeroed::<u16>(stream, n, "cuMemAlloc(motion history)")?,
                alloc_zeroed::<u16>(stream, n, "cuMemAlloc(motion history)")?,
            ],
            next: 0,
            kept: 0,
            width,
        })
    }

    /// Starts a new run: no reference is two frames back.
    pub fn restart(&mut self) {
        self.kept = 0;
        self.next = 0;
    }

    /// The reference two frames back, once two are kept.
    pub fn two_back(&self, stream: &Arc<CudaStream>) -> Option<DevPlane> {
        if self.kept < 2 {
            return None;
        }
        let ptr = self.ring[self.next].device_ptr(stream).0;
        Some(DevPlane::new(
            ptr,
            self.width * 2,
            SampleLayout::RIGHT_ALIGNED_U16,
        ))
    }

    /// Enqueues the copy of `reference` into the ring (after the kernels that read the plane
    /// it replaces, on the same stream).
    ///
    /// Errors: as [`MotionGpu::keep`].
    pub fn keep(
        &mut self,
        stream: &Arc<CudaStream>,
        gpu: &MotionGpu,
        reference: DevPlane,
    ) -> Result<(), CudaError> {
        gpu.keep(stream, reference, &mut self.ring[self.next])?;
        self.next ^= 1;
        self.kept = (self.kept + 1).min(2);
        Ok(())
    }
}
