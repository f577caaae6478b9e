//! Host side of `kernels/vif.cu`: integer VIF at four scales on the GPU.
//!
//! The kernels add four 64-bit integer sums per scale; [`VifGpu::scores`] turns them into
//! libvmaf's `float` numerator and denominator with the same expression, in the same order and
//! precision, as the CPU path, so the scores are bit-identical.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_vif.c; oracle:
//! [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::{VifConfig, VifScores};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::DevPlane;

/// Output tile of the VIF kernels (columns x rows) and their block shape.
const TILE: (usize, usize) = (32, 16);
const BLOCK: (u32, u32, u32) = (32, 8, 1);

/// The VIF kernels, the log2 table and the decimated planes of scales 1..=3 for one geometry.
pub struct VifGpu {
    stat0_narrow: CudaFunction,
    stat: [CudaFunction; 4],
    sub: [CudaFunction; 3],
    /// `log2_table[i] = round(log2f(i) * 2048)` for `i >= 32767`, 0 below (65536 entries).
    log2_table: DeviceAlloc<u16>,
    /// Reference / distorted planes of scales 1..=3, packed, `(w >> s) * (h >> s)` samples.
    scaled_ref: [DeviceAlloc<u16>; 3],
    scaled_dis: [DeviceAlloc<u16>; 3],
    width: usize,
    height: usize,
    bpc: u32,
}

/// libvmaf's log2 table, computed exactly as [`super::cpu`] computes it.
fn log2_table() -> Vec<u16> {
    let mut t = vec![0u16; 65536];
    for (i, v) in t.iter_mut().enumerate().skip(32767) {
        let l = (i as f64).log2() as f32 * 2048.0f32;
        *v = f64::from(l).round() as u16;
    }
    t
}

fn grid(w: usize, h: usize) -> (u32, u32, u32) {
    (w.div_ceil(TILE.0) as u32, h.div_ceil(TILE.1) as u32, 1)
}

impl VifGpu {
    /// `u64` words [`VifGpu::enqueue`] writes per frame: for each scale 0..=3 the sums
    /// `num_log`, `den_log`, `num_non_log`, `den_non_log` (two's complement `i64`).
    pub const RESULT_WORDS: usize = 16;

    /// Loads the kernels, uploads the log2 table and allocates the scaled planes (on
    /// `stream`, which is synchronised before returning) for `width` x `height` planes of
    /// `bpc` bits. The caller checks the geometry (at least
    /// [`super::MIN_WIDTH`] x [`super::MIN_HEIGHT`], `bpc` in `8..=16`).
    ///
    /// Errors: [`CudaError::Driver`] (kernel lookup, copy), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, CudaError> {
        let m = dev.modules().get("vif")?;
        let stat0_narrow = function(
            m,
            "vif_stat0_narrow",
            "cuModuleGetFunction(vif_stat0_narrow)",
        )?;
        let stat = [
            function(m, "vif_stat0", "cuModuleGetFunction(vif_stat0)")?,
            function(m, "vif_stat1", "cuModuleGetFunction(vif_stat1)")?,
            function(m, "vif_stat2", "cuModuleGetFunction(vif_stat2)")?,
            function(m, "vif_stat3", "cuModuleGetFunction(vif_stat3)")?,
        ];
        let sub = [
            function(m, "vif_sub1", "cuModuleGetFunction(vif_sub1)")?,
            function(m, "vif_sub2", "cuModuleGetFunction(vif_sub2)")?,
            function(m, "vif_sub3", "cuModuleGetFunction(vif_sub3)")?,
        ];
        let table = log2_table();
        let log2_table = alloc_copy(stream, &table[..], "cuMemAlloc(vif log2 table)")?;
        let plane = |s: usize| -> Result<DeviceAlloc<u16>, CudaError> {
            alloc_zeroed::<u16>(
                stream,
                (width >> s) * (height >> s),
                "cuMemAlloc(vif scaled plane)",
            )
        };
        let scaled_ref = [plane(1)?, plane(2)?, plane(3)?];
        let scaled_dis = [plane(1)?, plane(2)?, plane(3)?];
        // The table's host copy is freed on return: the upload must be done.
        stream
            .synchronize()
            .during("cuStreamSynchronize(vif init)")?;
        Ok(Self {
            stat0_narrow,
            stat,
            sub,
            log2_table,
            scaled_ref,
            scaled_dis,
            width,
            height,
            bpc,
        })
    }

    /// Enqueues on `stream` the four scales of VIF of `distorted` against `reference`
    /// (`width * height` planes, see [`DevPlane`]'s contract) into `out[0..16]` (zeroed first). Bit-identical to
    /// [`super::cpu::Vif::compute`] after [`VifGpu::scores`].
    ///
    /// Errors: [`CudaError::Driver`] for a failed memset or launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        cfg: &VifConfig,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        stream
            .memset_zeros(out)
            .during("cuMemsetD8Async(vif sums)")?;
        let mut limit = cfg.enhn_gain_limit;
        let mut tab = self.log2_table.device_ptr(stream).0;
        let out_base = out.device_ptr_mut(stream).0;
        let bpc = self.bpc;

        // Scale 0 from the input planes.
        let (mut p_ref, mut p_dis) = (reference, distorted);
        let (mut w, mut h) = (self.width as i32, self.height as i32);
        let mut acc = out_base;
        if bpc == 8 {
            // SAFETY: vif_stat0_narrow(Plane, Plane, i32, i32, const u16*, f64, u64*); the
            // planes hold w * h samples (the caller's contract), table of 65536, acc of 4
            // words, all live until the stream has run (the owner synchronises before freeing).
            unsafe {
                launch(
                    stream,
                    &self.stat0_narrow,
                    grid(self.width, self.height),
                    BLOCK,
                    &mut [
                        param(&mut p_ref),
                        param(&mut p_dis),
                        param(&mut w),
                        param(&mut h),
                        param(&mut tab),
                        param(&mut limit),
                        param(&mut acc),
                    ],
                    "cuLaunchKernel(vif_stat0_narrow)",
                )?;
            }
        } else {
            let sq = 2 * (bpc - 8);
            self.stat_wide(
                stream,
                0,
                (p_ref, p_dis),
                (self.width, self.height),
                (1 << (bpc - 1), bpc, 1 << (sq - 1), sq),
                limit,
                out_base,
            )?;
        }

        // Scales 1..=3: subsample the previous scale, then the statistic.
        let (mut sw, mut sh) = (self.width, self.height);
        for s in 1..4usize {
            let (round, shift) = if s == 1 {
                (1u32 << (bpc - 1), bpc)
            } else {
                (32768, 16)
            };
            let (mut round, mut shift) = (round, shift);
            let mut o_ref = self.scaled_ref[s - 1].device_ptr_mut(stream).0;
            let mut o_dis = self.scaled_dis[s - 1].device_ptr_mut(stream).0;
            let (next_ref, next_dis) = (
                DevPlane::packed_u16(&self.scaled_ref[s - 1], sw / 2, stream),
                DevPlane::packed_u16(&self.scaled_dis[s - 1], sw / 2, stream),
            );
            let (mut w, mut h) = (sw as i32, sh as i32);
            // SAFETY: vif_subN(Plane, Plane, i32, i32, u32, u32, u16*, u16*); the
            // inputs hold w * h samples, the outputs (w / 2) * (h / 2), all owned by self or
            // the caller and live until the stream has run.
            unsafe {
                launch(
                    stream,
                    &self.sub[s - 1],
                    grid(sw / 2, sh / 2),
                    BLOCK,
                    &mut [
                        param(&mut p_ref),
                        param(&mut p_dis),
                        param(&mut w),
                        param(&mut h),
                        param(&mut round),
                        param(&mut shift),
                        param(&mut o_ref),
                        param(&mut o_dis),
                    ],
                    "cuLaunchKernel(vif_sub)",
                )?;
            }
            sw /= 2;
            sh /= 2;
            p_ref = next_ref;
            p_dis = next_dis;
            self.stat_wide(
                stream,
                s,
                (p_ref, p_dis),
                (sw, sh),
                (32768, 16, 32768, 16),
                limit,
                out_base + (s * 4 * 8) as u64,
            )?;
        }
        Ok(())
    }

    /// Launches `vif_stat{scale}` on raw device pointers.
    #[allow(clippy::too_many_arguments)]
    fn stat_wide(
        &self,
        stream: &Arc<CudaStream>,
        scale: usize,
        planes: (DevPlane, DevPlane),
        size: (usize, usize),
        rounding: (u32, u32, u64, u32),
        limit: f64,
        acc: u64,
    ) -> Result<(), CudaError> {
        let (mut p_ref, mut p_dis) = planes;
        let (mut w, mut h) = (size.0 as i32, size.1 as i32);
        let (mut mu_round, mut mu_shift, mut sq_round, mut sq_shift) = rounding;
        let mut limit = limit;
        let mut acc = acc;
        let mut tab = self.log2_table.device_ptr(stream).0;
        let Some(f) = self.stat.get(scale) else {
            return Ok(());
        };
        // SAFETY: vif_statN(Plane, Plane, i32, i32, const u16*, f64, u32, u32, u64,
        // u32, u64*); planes of w * h samples, table of 65536, acc of 4 words, live until the
        // stream has run.
        unsafe {
            launch(
                stream,
                f,
                grid(size.0, size.1),
                BLOCK,
                &mut [
                    param(&mut p_ref),
                    param(&mut p_dis),
                    param(&mut w),
                    param(&mut h),
                    param(&mut tab),
                    param(&mut limit),
                    param(&mut mu_round),
                    param(&mut mu_shift),
                    param(&mut sq_round),
                    param(&mut sq_shift),
                    param(&mut acc),
                ],
                "cuLaunchKernel(vif_stat)",
            )
        }
    }

    /// Finishes one frame on the host from the [`VifGpu::RESULT_WORDS`] words read back:
    /// per scale `num = num_log / 2048 + (den_non_log - num_non_log / 16384 / 65025)` and
    /// `den = den_log / 2048 + den_non_log` in `f64`, rounded to `f32`, and their `f32`
    /// quotient, as libvmaf (and [`super::cpu`]) do. `cfg` is not needed for this
    /// step (the gain limit acts per pixel) and is taken for symmetry with the other
    /// extractors. Missing words count as 0.
    pub fn scores(&self, words: &[u64], _cfg: &VifConfig) -> VifScores {
        let mut scores = VifScores::default();
        for s in 0..4 {
            let w = |k: usize| words.get(s * 4 + k).copied().unwrap_or(0) as i64;
            let (num_log, den_log, num_non_log, den_non_log) = (w(0), w(1), w(2), w(3));
            let num = num_log as f64 / 2048.0
                + (den_non_log as f64 - (num_non_log as f64 / 16384.0) / 65025.0);
            let den = den_log as f64 / 2048.0 + den_non_log as f64;
            let (num, den) = (num as f32, den as f32);
            scores.num[s] = f64::from(num);
            scores.den[s] = f64::from(den);
            scores.scale[s] = f64::from(num / den);
        }
        scores
    }
}
