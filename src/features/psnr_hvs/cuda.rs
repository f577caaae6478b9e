//! Host side of `kernels/psnr_hvs.cu`: libvmaf's PSNR-HVS on the GPU.
//!
//! One launch scores every 8x8 block of the three planes (one thread per block, the block's
//! arithmetic as the CPU half's: the same integer DCT, the same single-precision statistics,
//! masking and weighted errors) and leaves one double-precision partial sum per thread block;
//! a second launch adds them per plane in a fixed order. [`PsnrHvsGpu::scores`] rounds each
//! plane's sum to `f32` and applies libvmaf's final divisions ([`super::plane_score`]). The
//! only difference from the CPU half (libvmaf's running `f32` sum over the plane) is the
//! order and precision of that sum; a few 1e-6 relative at most on real content.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/third_party/xiph/psnr_hvs.c; oracle:
//! [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::{blocks, plane_score, Tables, FEATURE};
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

/// The PSNR-HVS kernels and their per-block scratch for one geometry.
pub struct PsnrHvsGpu {
    blocks: CudaFunction,
    total: CudaFunction,
    /// Per-thread-block sums (`f64`): `3 * grid` words, plane-major.
    partial: DeviceAlloc<f64>,
    /// Thread blocks per plane of `psnr_hvs_blocks`.
    grid: usize,
    /// The launch parameters but the planes' pointers (set per frame).
    params: HvsPlanes,
    /// The planes' sizes (luma, then libvmaf's chroma size twice).
    planes: [(usize, usize); 3],
    bpc: u32,
}

impl PsnrHvsGpu {
    /// `u64` words [`PsnrHvsGpu::enqueue`] writes per frame: each plane's sum of squared
    /// weighted errors, an `f64`'s bits (Y, Cb, Cr).
    pub const RESULT_WORDS: usize = 3;

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
        let total = function(m, "psnr_hvs_total", "cuModuleGetFunction(psnr_hvs_total)")?;
        let most = planes
            .iter()
            .map(|&(w, h)| blocks(w) * blocks(h))
            .max()
            .unwrap_or(0);
        let grid = most.div_ceil(THREADS).max(1);
        let partial = alloc_zeroed::<f64>(stream, 3 * grid, "cuMemAlloc(psnr_hvs block sums)")?;
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
            total,
            partial,
            grid,
            params,
            planes,
            bpc,
        })
    }

    /// Enqueues on `stream` the three planes' sums of `distorted` against `reference` (luma,
    /// see [`DevPlane`]'s contract) and of `chroma`'s Cb and Cr planes (their top-left part of
    /// libvmaf's chroma size) into `out[0..3]` (all three words overwritten, no host
    /// synchronisation). Two launches: `psnr_hvs_blocks` (grid `ceil(most blocks / 64)` x 3)
    /// and `psnr_hvs_total` (one block).
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
        let mut blocks = self.grid as i32;
        let mut p_partial = self.partial.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;
        // SAFETY: psnr_hvs_blocks(HvsPlanes, double*): every plane holds the samples of its
        // nx x ny blocks (7 * (n - 1) + 8 <= its size: the caller's contract for luma, checked
        // above for chroma); `partial` holds 3 * grid doubles; all stay live until the stream
        // has run (the owner synchronises before freeing).
        unsafe {
            launch(
                stream,
                &self.blocks,
                (self.grid as u32, 3, 1),
                (THREADS as u32, 1, 1),
                &mut [param(&mut params), param(&mut p_partial)],
                "cuLaunchKernel(psnr_hvs_blocks)",
            )?;
            // SAFETY: psnr_hvs_total(const double*, i32, double*); `out` holds >= 3 words
            // (checked above).
            launch(
                stream,
                &self.total,
                (1, 1, 1),
                (TOTAL_THREADS, 1, 1),
                &mut [param(&mut p_partial), param(&mut blocks), param(&mut p_out)],
                "cuLaunchKernel(psnr_hvs_total)",
            )
        }
    }

    /// The three plane scores ([`plane_score`]: Y, Cb, Cr) from the words read back after
    /// [`PsnrHvsGpu::enqueue`]: each sum rounded to `f32`, then libvmaf's divisions. Missing
    /// words count as 0.
    pub fn scores(&self, words: &[u64]) -> [f64; 3] {
        std::array::from_fn(|p| {
            let sum = f64::from_bits(words.get(p).copied().unwrap_or(0));
            let (w, h) = self.planes[p];
            plane_score(sum as f32, blocks(w) * blocks(h), self.bpc)
        })
    }
}
