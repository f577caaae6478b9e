//! Host side of `kernels/ciede.cu`: libvmaf's `ciede2000` on the GPU in one pass.
//!
//! `ciede_blocks` converts both frames to CIELAB and takes the CIEDE2000 difference of each
//! pixel in `f32` (fast intrinsics), reading chroma as libvmaf does ([`super::ChromaRead`]),
//! and writes one `f64` sum per block; `ciede_total` adds the block sums in a fixed order
//! (deterministic). [`CiedeGpu::score`] applies the CPU's formula
//! ([`super::score_from_sum`]). Expected difference from the CPU half ([`super::cpu`]): about
//! 1e-5 on the score.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/ciede.c.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::params::{score_from_sum, ChromaRead, Subsampling, FEATURE};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, DevPlane};
use crate::features::api::DevFrame;
use crate::video::frame::FeatureError;

/// Threads per block: 32 x 8; each thread scores [`ROWS_PER_THREAD`] pixels of a column.
const BLOCK: (u32, u32, u32) = (32, 8, 1);
const ROWS_PER_THREAD: usize = 4;
/// Rows a block covers.
const TILE_ROWS: usize = 8 * ROWS_PER_THREAD;

/// The frame pair and libvmaf's chroma reading as `ciede_blocks` takes them (`struct
/// CiedeArgs` in `kernels/ciede.cu`, same layout: 232 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct CiedeArgs {
    /// Reference Y, Cb, Cr.
    reference: [DevPlane; 3],
    /// Distorted Y, Cb, Cr.
    distorted: [DevPlane; 3],
    width: i32,
    height: i32,
    /// 0: 4:4:4, 1: 4:2:0, 2: 4:2:2.
    mode: i32,
    /// libvmaf's chroma width, height and row stride in samples.
    chroma_width: i32,
    chroma_height: i32,
    chroma_stride: i32,
    /// `16 << (bpc - 8)`, `1 / (219 << (bpc - 8))`, `128 << (bpc - 8)`,
    /// `1 / (224 << (bpc - 8))`.
    y_offset: f32,
    y_scale: f32,
    c_offset: f32,
    c_scale: f32,
}

const _: () = assert!(std::mem::size_of::<CiedeArgs>() == 232);

/// The `ciede` kernels and their per-block sums for one geometry.
pub struct CiedeGpu {
    blocks_fn: CudaFunction,
    total_fn: CudaFunction,
    /// Per-block sums (`f64` bits), `grid.0 * grid.1` words.
    partial: DeviceAlloc<u64>,
    grid: (u32, u32, u32),
    width: usize,
    height: usize,
    bpc: u32,
    read: ChromaRead,
}

impl CiedeGpu {
    /// `u64` words [`CiedeGpu::enqueue_frame`] writes per frame: the sum of the per-pixel
    /// differences as `f64` bits.
    pub const RESULT_WORDS: usize = 1;

    /// Loads the kernels and allocates the block sums (on `stream`) for `width` x `height`
    /// frames of `bpc` bits whose chroma libvmaf reads as `read`.
    ///
    /// Errors: [`CudaError::Geometry`] for a zero size or a side above 65536,
    /// [`CudaError::Driver`] (kernel lookup), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
        read: ChromaRead,
    ) -> Result<Self, CudaError> {
        check_size(FEATURE, (width, height, bpc), 1)?;
        let m = dev.modules().get("ciede")?;
        let blocks_fn = function(m, "ciede_blocks", "cuModuleGetFunction(ciede_blocks)")?;
        let total_fn = function(m, "ciede_total", "cuModuleGetFunction(ciede_total)")?;
        let grid = (
            width.div_ceil(32) as u32,
            height.div_ceil(TILE_ROWS) as u32,
            1,
        );
        let partial = alloc_zeroed::<u64>(
            stream,
            (grid.0 * grid.1) as usize,
            "cuMemAlloc(ciede block sums)",
        )?;
        Ok(Self {
            blocks_fn,
            total_fn,
            partial,
            grid,
            width,
            height,
            bpc,
            read,
        })
    }

    /// Enqueues on `stream` the sum of the per-pixel CIEDE2000 differences of `f` into
    /// `out[0]` (`f64` bits): `ciede_blocks` (grid `ceil(w / 32)` x `ceil(h / 32)`) and
    /// `ciede_total` (one block).
    ///
    /// Errors: [`CudaError::Geometry`] for a frame without chroma or with chroma smaller than
    /// libvmaf reads, [`CudaError::Driver`] for a short `out` or a failed launch.
    pub fn enqueue_frame(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "ciede enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let g = (self.width, self.height, self.bpc);
        let Some(c) = f.chroma else {
            return Err(CudaError::Geometry(FeatureError::wrong_size(
                FEATURE,
                g,
                (0, 0),
            )));
        };
        let r = self.read;
        if c.width < r.width || c.height < r.height || c.width > self.width {
            return Err(CudaError::Geometry(FeatureError::wrong_size(
                FEATURE,
                (r.width, r.height, self.bpc),
                (c.width, c.height),
            )));
        }
        let s = (1u32 << (self.bpc - 8)) as f32;
        let mut args = CiedeArgs {
            reference: [f.reference, c.reference[0], c.reference[1]],
            distorted: [f.distorted, c.distorted[0], c.distorted[1]],
            width: self.width as i32,
            height: self.height as i32,
            mode: match r.mode {
                Subsampling::Full => 0,
                Subsampling::Both => 1,
                Subsampling::Horizontal => 2,
            },
            chroma_width: r.width as i32,
            chroma_height: r.height as i32,
            chroma_stride: r.stride.max(1) as i32,
            y_offset: 16.0 * s,
            y_scale: 1.0 / (219.0 * s),
            c_offset: 128.0 * s,
            c_scale: 1.0 / (224.0 * s),
        };
        let mut blocks = (self.grid.0 * self.grid.1) as i32;
        let mut p_partial = self.partial.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;
        // SAFETY: ciede_blocks(CiedeArgs, u64*): the planes hold width x height luma samples
        // and the chroma rows and columns libvmaf reads (checked above; the kernel reads no
        // chroma outside chroma_width x chroma_height), `partial` holds one word per block;
        // everything stays live until the stream has run (the owner synchronises before
        // freeing).
        unsafe {
            launch(
                stream,
                &self.blocks_fn,
                self.grid,
                BLOCK,
                &mut [param(&mut args), param(&mut p_partial)],
                "cuLaunchKernel(ciede_blocks)",
            )?;
            // SAFETY: ciede_total(const u64*, i32, u64*): `partial` holds `blocks` words,
            // `out` at least one (checked above).
            launch(
                stream,
                &self.total_fn,
                (1, 1, 1),
                BLOCK,
                &mut [param(&mut p_partial), param(&mut blocks), param(&mut p_out)],
                "cuLaunchKernel(ciede_total)",
            )
        }
    }

    /// `ciede2000` from the word read back after [`CiedeGpu::enqueue_frame`] (0 when
    /// missing, giving +infinity).
    pub fn score(&self, words: &[u64]) -> f64 {
        let sum = f64::from_bits(words.first().copied().unwrap_or(0));
        score_from_sum(sum, self.width * self.height)
    }
}
