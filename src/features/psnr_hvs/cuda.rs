//! Host side of `kernels/psnr_hvs.cu`: libvmaf's PSNR-HVS on the GPU.
//!
//! `psnr_hvs_blocks` scores every 8x8 block of the three planes (one thread per block, the
//! block's arithmetic as the CPU half's: the same integer DCT, the same single-precision
//! statistics, masking and weighted errors, so the 64 terms of each block are the CPU's bit
//! for bit). libvmaf adds all terms of a plane into one running `f32`, whose rounding moves a
//! 1080p score by about 1.6e-3 dB from the exact sum, so the GPU reproduces that sum rather
//! than compute a better one: `psnr_hvs_emulate` adds each block's terms in `f32` to an
//! estimate of the running sum at the block's start (then its increments round to libvmaf's
//! grid), twice (the second pass starts from the first's increments), and `psnr_hvs_total`
//! adds the increments per plane. Only rounding ties and terms within about 1e-6 of a power
//! of two of the running sum can round otherwise; a few 1e-7 dB on real content.
//! [`PsnrHvsGpu::scores`] then applies libvmaf's final divisions ([`super::plane_score`]).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/third_party/xiph/psnr_hvs.c; oracle:
//! [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::params::{blocks, plane_score, Tables, FEATURE};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, ChromaDev, DevPlane};
use crate::video::frame::FeatureError;

/// Threads (8x8 blocks) per thread block of `psnr_hvs_blocks` (`THREADS` in the kernel).
const THREADS: usize = 64;
/// Threads of `psnr_hvs_total`.
const TOTAL_THREADS: u32 = 256;

/// The planes of one frame pair and their weights as `psnr_hvs_blocks` takes them (`struct
/// HvsPlanes` in `kernels/psnr_hvs.cu`, same layout: 2528 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct HvsPlanes {
    reference: [DevPlane; 3],
    distorted: [DevPlane; 3],
    nx: [i32; 3],
    ny: [i32; 3],
    csf: [[f32; 64]; 3],
    mask: [[f32; 64]; 3],
    divisor: [[f32; 64]; 3],
    var64: f32,
    var16: f32,
}

const _: () = assert!(std::mem::size_of::<HvsPlanes>() == 2528);

/// The PSNR-HVS kernels and their scratch for one geometry.
pub struct PsnrHvsGpu {
    blocks: CudaFunction,
    emulate: CudaFunction,
    total: CudaFunction,
    /// Every block's 64 terms, `3 * 64 * slots` floats (plane, coefficient, block).
    terms: DeviceAlloc<f32>,
    /// Per block (`3 * slots`) and per thread block (`3 * grid`) sums: the exact sums, the
    /// first pass's increments, the second's.
    per_block: [DeviceAlloc<f64>; 3],
    per_group: [DeviceAlloc<f64>; 3],
    /// Thread blocks per plane of the kernels.
    grid: usize,
    /// The launch parameters but the planes' pointers (set per frame).
    params: HvsPlanes,
    /// The planes' sizes (luma, then libvmaf's chroma size twice).
    planes: [(usize, usize); 3],
    bpc: u32,
}

impl PsnrHvsGpu {
    /// `u64` words [`PsnrHvsGpu::enqueue`] writes per frame, each an `f64`'s bits: the three
    /// planes' sums of squared weighted errors as libvmaf's running `f32` sum gives them (Y,
    /// Cb, Cr), then their exact sums ([`super::cpu::plane_sum_f64`] to within `f64`
    /// rounding; for tests).
    pub const RESULT_WORDS: usize = 6;

    /// Loads the kernels and allocates the scratch (on `stream`) for planes of `planes`
    /// (width, height): luma, then Cb and Cr at libvmaf's chroma size; `bpc` bits (8..=12).
    ///
    /// Errors: [`CudaError::Geometry`] for a plane without a whole 8x8 block, a side above
    /// 65536 or a `bpc` outside `8..=16`; [`CudaError::Driver`] (kernel lookup);
    /// [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        planes: [(usize, usize); 3],
        bpc: u32,
    ) -> Result<Self, CudaError> {
        for &(w, h) in &planes {
            check_size(FEATURE, (w, h, bpc), 8)?;
        }
        let m = dev.modules().get("psnr_hvs")?;
        let blocks_fn = function(m, "psnr_hvs_blocks", "cuModuleGetFunction(psnr_hvs_blocks)")?;
        let emulate = function(
            m,
            "psnr_hvs_emulate",
            "cuModuleGetFunction(psnr_hvs_emulate)",
        )?;
        let total = function(m, "psnr_hvs_total", "cuModuleGetFunction(psnr_hvs_total)")?;
        let most = planes
            .iter()
            .map(|&(w, h)| blocks(w) * blocks(h))
            .max()
            .unwrap_or(0);
        let grid = most.div_ceil(THREADS).max(1);
        let slots = grid * THREADS;
        let terms = alloc_zeroed::<f32>(stream, 3 * 64 * slots, "cuMemAlloc(psnr_hvs terms)")?;
        let sums = |what| alloc_zeroed::<f64>(stream, 3 * slots, what);
        let per_block = [
            sums("cuMemAlloc(psnr_hvs block sums)")?,
            sums("cuMemAlloc(psnr_hvs block sums)")?,
            sums("cuMemAlloc(psnr_hvs block sums)")?,
        ];
        let sums = |what| alloc_zeroed::<f64>(stream, 3 * grid, what);
        let per_group = [
            sums("cuMemAlloc(psnr_hvs group sums)")?,
            sums("cuMemAlloc(psnr_hvs group sums)")?,
            sums("cuMemAlloc(psnr_hvs group sums)")?,
        ];
        let mut params = HvsPlanes {
            reference: [DevPlane::default(); 3],
            distorted: [DevPlane::default(); 3],
            nx: [0; 3],
            ny: [0; 3],
            csf: [[0.0; 64]; 3],
            mask: [[0.0; 64]; 3],
            divisor: [[0.0; 64]; 3],
            var64: super::cpu::VAR64,
            var16: super::cpu::VAR16,
        };
        for (p, &(w, h)) in planes.iter().enumerate() {
            let t = Tables::new(p);
            params.nx[p] = blocks(w) as i32;
            params.ny[p] = blocks(h) as i32;
            params.csf[p] = t.csf;
            params.mask[p] = t.mask;
            params.divisor[p] = t.divisor;
        }
        Ok(Self {
            blocks: blocks_fn,
            emulate,
            total,
            terms,
            per_block,
            per_group,
            grid,
            params,
            planes,
            bpc,
        })
    }

    /// Enqueues on `stream` the three planes' sums of `distorted` against `reference` (luma,
    /// see [`DevPlane`]'s contract) and of `chroma`'s Cb and Cr planes (their top-left part of
    /// libvmaf's chroma size) into `out[0..6]` (all six words overwritten, no host
    /// synchronisation). Four launches: `psnr_hvs_blocks` and `psnr_hvs_emulate` twice (grid
    /// `ceil(most blocks / 64)` x 3), `psnr_hvs_total` (one block).
    ///
    /// Errors: [`CudaError::Geometry`] without chroma or with chroma planes smaller than
    /// libvmaf's chroma size; [`CudaError::Driver`] for an `out` shorter than
    /// [`PsnrHvsGpu::RESULT_WORDS`] or a failed launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        chroma: Option<&ChromaDev>,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "psnr_hvs enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let (cw, ch) = self.planes[1];
        let c = chroma
            .filter(|c| c.width >= cw && c.height >= ch)
            .ok_or_else(|| {
                CudaError::Geometry(FeatureError::wrong_size(
                    FEATURE,
                    (cw, ch, self.bpc),
                    chroma.map_or((0, 0), |c| (c.width, c.height)),
                ))
            })?;
        let mut params = self.params;
        params.reference = [reference, c.reference[0], c.reference[1]];
        params.distorted = [distorted, c.distorted[0], c.distorted[1]];
        let grid = (self.grid as u32, 3, 1);
        let threads = (THREADS as u32, 1, 1);
        let mut blocks = self.grid as i32;
        let mut p_terms = self.terms.device_ptr_mut(stream).0;
        let [b0, b1, b2] = &mut self.per_block;
        let [g0, g1, g2] = &mut self.per_group;
        let mut block_sums = [
            b0.device_ptr_mut(stream).0,
            b1.device_ptr_mut(stream).0,
            b2.device_ptr_mut(stream).0,
        ];
        let mut group_sums = [
            g0.device_ptr_mut(stream).0,
            g1.device_ptr_mut(stream).0,
            g2.device_ptr_mut(stream).0,
        ];
        let mut p_out = out.device_ptr_mut(stream).0;
        // SAFETY: psnr_hvs_blocks(HvsPlanes, float*, double*, double*): every plane holds the
        // samples of its nx x ny blocks (7 * (n - 1) + 8 <= its size: the caller's contract
        // for luma, checked above for chroma); `terms` holds 3 * 64 * slots floats, the sums
        // 3 * slots and 3 * grid doubles; all stay live until the stream has run (the owner
        // synchronises before freeing).
        unsafe {
            launch(
                stream,
                &self.blocks,
                grid,
                threads,
                &mut [
                    param(&mut params),
                    param(&mut p_terms),
                    param(&mut block_sums[0]),
                    param(&mut group_sums[0]),
                ],
                "cuLaunchKernel(psnr_hvs_blocks)",
            )?;
        }
        for pass in 0..2 {
            let (mut src, mut src_sum) = (block_sums[pass], group_sums[pass]);
            let (mut delta, mut delta_sum) = (block_sums[pass + 1], group_sums[pass + 1]);
            // SAFETY: psnr_hvs_emulate(const float*, const double*, const double*, double*,
            // double*): the buffers as above, the source pair written by the launch before
            // on the same stream.
            unsafe {
                launch(
                    stream,
                    &self.emulate,
                    grid,
                    threads,
                    &mut [
                        param(&mut p_terms),
                        param(&mut src),
                        param(&mut src_sum),
                        param(&mut delta),
                        param(&mut delta_sum),
                    ],
                    "cuLaunchKernel(psnr_hvs_emulate)",
                )?;
            }
        }
        // SAFETY: psnr_hvs_total(const double*, const double*, i32, double*); `out` holds >= 6
        // words (checked above), the group sums 3 * grid doubles each.
        unsafe {
            launch(
                stream,
                &self.total,
                (1, 1, 1),
                (TOTAL_THREADS, 1, 1),
                &mut [
                    param(&mut group_sums[2]),
                    param(&mut group_sums[0]),
                    param(&mut blocks),
                    param(&mut p_out),
                ],
                "cuLaunchKernel(psnr_hvs_total)",
            )
        }
    }

    /// The three plane scores ([`plane_score`]: Y, Cb, Cr) from the words read back after
    /// [`PsnrHvsGpu::enqueue`]: each plane's emulated running sum rounded to `f32`, then
    /// libvmaf's divisions. Missing words count as 0.
    pub fn scores(&self, words: &[u64]) -> [f64; 3] {
        std::array::from_fn(|p| {
            let sum = f64::from_bits(words.get(p).copied().unwrap_or(0));
            let (w, h) = self.planes[p];
            plane_score(sum as f32, blocks(w) * blocks(h), self.bpc)
        })
    }
}
