//! Host side of `kernels/ssim.cu`: libvmaf's `float_ssim` and `float_ms_ssim` on the GPU.
//!
//! Every per-pixel step runs on the GPU. The filters take the CPU path's taps in its order, but
//! each tap is a single-precision FMA into a float sum where libvmaf (and the CPU path) rounds
//! the product to float and adds in double: widening every product bounded the kernels. The
//! SSIM terms repeat the CPU path's float/double mix rounding for rounding, and the frame sums
//! are added in another (fixed) order. The kernels write, per evaluation (one SSIM pass over
//! one scale), the frame sums of `l * c * s`, `l`, `c` and `s` as `f64` bits;
//! [`SsimGpu::scores`] takes the means and combines them as the CPU does. Scores agree with
//! the CPU within 1e-5 (measured: at most 3.1e-6 with the CPU path switched to the same FMA
//! sums, on flat frames, bars, noise, a checkerboard and a banded ramp at 1080p; about 1e-7
//! on natural content) and are the same bits on every run.
//!
//! Per frame (no allocation, no host synchronisation): up to four `ssim_decimate` launches
//! (MS-SSIM's scales 1..=4, float_ssim's box down-scaling fused into the first), one
//! `ssim_stats` launch for all scales, one `ssim_reduce` launch.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_ssim.c, float_ms_ssim.c, ssim.c,
//! ms_ssim.c and iqa/; oracle: [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::params::{
    box_tap, decimated, float_ssim_scale, ms_ssim_combine, ms_ssim_fits, ms_ssim_too_small,
    ssim_constants, GAUSS_LEN, MS_SSIM_SCALES,
};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::check_size;
use crate::cuda::plane::DevPlane;

/// Block shape of the three kernels.
const BLOCK: (u32, u32, u32) = (32, 8, 1);
/// Output tile of `ssim_decimate` (columns x rows).
const DEC_TILE: (usize, usize) = (32, 16);
/// Output tile of `ssim_stats` (columns x rows of the valid region).
const STATS_TILE: (usize, usize) = (32, 32);
/// Evaluations (output slots) of `ssim_stats` / `ssim_reduce`: float_ssim, then MS-SSIM's
/// five scales.
const SLOTS: usize = 1 + MS_SSIM_SCALES;
/// Jobs one `ssim_decimate` launch takes.
const MAX_DEC_JOBS: usize = 2;

/// Where a kernel reads an image (`struct Src` in `kernels/ssim.cu`, 48 bytes): the input
/// plane when `img == 0` (samples times `scale`), else a packed `f32` image.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Src {
    plane: DevPlane,
    img: u64,
    scale: f32,
    pad: u32,
}

/// One decimation of both images (`struct DecJob`, 152 bytes). `kind` 0: MS-SSIM's 9x9
/// low-pass and halving; 1: a `factor` x `factor` box of `tap` weights.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct DecJob {
    reference: Src,
    distorted: Src,
    dst_ref: u64,
    dst_dis: u64,
    sw: i32,
    sh: i32,
    dw: i32,
    dh: i32,
    kind: i32,
    factor: i32,
    tap: f32,
    tiles_x: i32,
    first_block: i32,
    pad: i32,
}

/// The jobs of one `ssim_decimate` launch (`struct DecJobs`, 312 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct DecJobs {
    job: [DecJob; MAX_DEC_JOBS],
    count: i32,
    pad: i32,
}

/// One SSIM evaluation over the valid region of `w` x `h` images (`struct SsimEval`,
/// 112 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct SsimEval {
    reference: Src,
    distorted: Src,
    w: i32,
    h: i32,
    tiles_x: i32,
    first_block: i32,
}

/// The evaluations of the `ssim_stats` launch (`struct SsimJobs`, 688 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct SsimJobs {
    eval: [SsimEval; SLOTS],
    count: i32,
    c1: f32,
    c2: f32,
    c3: f32,
}

/// Which block sums each output slot adds (`struct Slots`, 48 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Slots {
    first_block: [i32; SLOTS],
    blocks: [i32; SLOTS],
}

const _: () = {
    assert!(std::mem::size_of::<Src>() == 48);
    assert!(std::mem::size_of::<DecJob>() == 152);
    assert!(std::mem::size_of::<DecJobs>() == 312);
    assert!(std::mem::size_of::<SsimEval>() == 112);
    assert!(std::mem::size_of::<SsimJobs>() == 688);
    assert!(std::mem::size_of::<Slots>() == 48);
};

/// A pair of packed `f32` images (reference, distorted) of `w` x `h`.
struct ImagePair {
    reference: DeviceAlloc<f32>,
    distorted: DeviceAlloc<f32>,
    w: usize,
    h: usize,
}

impl ImagePair {
    fn new(stream: &Arc<CudaStream>, (w, h): (usize, usize)) -> Result<Self, CudaError> {
        Ok(Self {
            reference: alloc_zeroed(stream, w * h, "cuMemAlloc(ssim scaled image)")?,
            distorted: alloc_zeroed(stream, w * h, "cuMemAlloc(ssim scaled image)")?,
            w,
            h,
        })
    }

    /// The two images as kernel sources.
    fn srcs(&self, stream: &CudaStream) -> (Src, Src) {
        let img = |a: &DeviceAlloc<f32>| Src {
            img: a.device_ptr(stream).0,
            scale: 1.0,
            ..Src::default()
        };
        (img(&self.reference), img(&self.distorted))
    }

    /// The two images as decimation outputs.
    fn dsts(&self, stream: &CudaStream) -> (u64, u64) {
        (
            self.reference.device_ptr(stream).0,
            self.distorted.device_ptr(stream).0,
        )
    }
}

/// The SSIM kernels, the scaled images and the per-block scratch for one geometry, with the
/// launches of a frame planned once.
pub struct SsimGpu {
    decimate: CudaFunction,
    stats: CudaFunction,
    reduce: CudaFunction,
    /// MS-SSIM's scales 1..=4 (empty without `float_ms_ssim`); kept for the pointers in
    /// `dec_launches` / `stats_jobs`.
    _pyramid: Vec<ImagePair>,
    /// float_ssim's down-scaled pair (when its scale factor is above 1).
    _boxed: Option<ImagePair>,
    /// Per-block sums of `ssim_stats`, 4 `f64` per block.
    partial: DeviceAlloc<f64>,
    /// `ssim_decimate` launches in order, with their block counts (planes filled in per
    /// frame where a source has `img == 0`).
    dec_launches: Vec<(DecJobs, u32)>,
    /// The `ssim_stats` launch and its block count (0: no launch).
    stats_jobs: SsimJobs,
    stats_blocks: u32,
    slots: Slots,
    /// Valid-region pixels of each slot (the divisor of its means; 0 for an unused slot).
    slot_pixels: [usize; SLOTS],
    ssim: bool,
    ms_ssim: bool,
}

/// An evaluation being planned: output slot, (reference, distorted) sources, image size.
type Planned = (usize, (Src, Src), (usize, usize));

/// The input plane as a source whose plane is filled in per frame.
fn input_src(bpc: u32) -> Src {
    Src {
        scale: 1.0 / (1u32 << bpc.saturating_sub(8)) as f32,
        ..Src::default()
    }
}

/// `src` with the frame's plane where it reads the input plane.
fn with_plane(src: Src, plane: DevPlane) -> Src {
    if src.img == 0 {
        Src { plane, ..src }
    } else {
        src
    }
}

/// A decimation job of `src` (`sw` x `sh`) into `dst`; `factor` 0 means MS-SSIM's LPF.
fn dec_job(
    srcs: (Src, Src),
    from: (usize, usize),
    dst: &ImagePair,
    stream: &CudaStream,
    factor: usize,
) -> DecJob {
    let (dst_ref, dst_dis) = dst.dsts(stream);
    let (kind, factor, tap) = if factor == 0 {
        (0, 2, 0.0)
    } else {
        (1, factor as i32, box_tap(factor))
    };
    DecJob {
        reference: srcs.0,
        distorted: srcs.1,
        dst_ref,
        dst_dis,
        sw: from.0 as i32,
        sh: from.1 as i32,
        dw: dst.w as i32,
        dh: dst.h as i32,
        kind,
        factor,
        tap,
        tiles_x: dst.w.div_ceil(DEC_TILE.0) as i32,
        first_block: 0,
        pad: 0,
    }
}

/// Blocks of a decimation into a `w` x `h` image.
fn dec_blocks(w: usize, h: usize) -> usize {
    w.div_ceil(DEC_TILE.0) * h.div_ceil(DEC_TILE.1)
}

/// One `ssim_decimate` launch of `jobs` (1..=2), block offsets filled in.
fn dec_launch(jobs: &[DecJob]) -> (DecJobs, u32) {
    let mut out = DecJobs::default();
    let mut first = 0usize;
    for (slot, job) in out.job.iter_mut().zip(jobs) {
        *slot = DecJob {
            first_block: first as i32,
            ..*job
        };
        first += dec_blocks(job.dw as usize, job.dh as usize);
    }
    out.count = jobs.len().min(MAX_DEC_JOBS) as i32;
    (out, first as u32)
}

impl SsimGpu {
    /// `u64` words [`SsimGpu::enqueue`] writes per frame: six groups of four `f64` bit
    /// patterns, the frame sums of `l * c * s`, `l`, `c` and `s` over an evaluation's valid
    /// region. Group 0: `float_ssim` (after its down-scaling); groups 1..=5: MS-SSIM's scales
    /// 0..=4. A disabled metric's groups are zeros.
    pub const RESULT_WORDS: usize = 4 * SLOTS;

    /// Loads the kernels, allocates every scaled image and the scratch (on `stream`) and
    /// plans the launches for `width` x `height` luma planes of `bpc` bits (`8..=16`),
    /// computing `float_ssim` when `ssim` and `float_ms_ssim` when `ms_ssim`.
    /// [`SsimGpu::enqueue`] and [`SsimGpu::scores`] allocate nothing.
    ///
    /// Errors: [`CudaError::Geometry`] with the CPU's error for a frame it refuses:
    /// [`super::ms_ssim_too_small`] below 176x176 with `ms_ssim`,
    /// [`super::float_ssim_scale`]'s error below 11x11 with `ssim`; also for a
    /// side above 65536 or a `bpc` outside `8..=16`. [`CudaError::Driver`] (kernel lookup),
    /// [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
        ssim: bool,
        ms_ssim: bool,
    ) -> Result<Self, CudaError> {
        if ms_ssim && !ms_ssim_fits(width, height) {
            return Err(ms_ssim_too_small(width, height).into());
        }
        let box_scale = if ssim {
            float_ssim_scale(width, height)?
        } else {
            1
        };
        let feature = if ssim { "float_ssim" } else { "float_ms_ssim" };
        check_size(feature, (width, height, bpc), 1)?;

        let m = dev.modules().get("ssim")?;
        let decimate = function(m, "ssim_decimate", "cuModuleGetFunction(ssim_decimate)")?;
        let stats = function(m, "ssim_stats", "cuModuleGetFunction(ssim_stats)")?;
        let reduce = function(m, "ssim_reduce", "cuModuleGetFunction(ssim_reduce)")?;

        let input = input_src(bpc);
        // MS-SSIM's pyramid: scale i is scale i - 1 halved (IQA's size rounding).
        let mut sizes = [(width, height); MS_SSIM_SCALES];
        for i in 1..MS_SSIM_SCALES {
            sizes[i] = (decimated(sizes[i - 1].0, 2), decimated(sizes[i - 1].1, 2));
        }
        let mut pyramid = Vec::new();
        if ms_ssim {
            for &size in &sizes[1..] {
                pyramid.push(ImagePair::new(stream, size)?);
            }
        }
        let boxed = if ssim && box_scale > 1 {
            Some(ImagePair::new(
                stream,
                (decimated(width, box_scale), decimated(height, box_scale)),
            )?)
        } else {
            None
        };

        // Decimations: scale 1 and the box from the input plane in one launch, then
        // scales 2..=4.
        let mut dec_launches = Vec::new();
        let mut first: Vec<DecJob> = Vec::new();
        if let Some(p1) = pyramid.first() {
            first.push(dec_job((input, input), (width, height), p1, stream, 0));
        }
        if let Some(b) = &boxed {
            first.push(dec_job(
                (input, input),
                (width, height),
                b,
                stream,
                box_scale,
            ));
        }
        if !first.is_empty() {
            dec_launches.push(dec_launch(&first));
        }
        for pair in pyramid.windows(2) {
            let job = dec_job(
                pair[0].srcs(stream),
                (pair[0].w, pair[0].h),
                &pair[1],
                stream,
                0,
            );
            dec_launches.push(dec_launch(&[job]));
        }

        // Evaluations, largest first (the small ones fill the tail of the launch):
        // (slot, sources, size).
        let mut evals: Vec<Planned> = Vec::new();
        if ms_ssim {
            evals.push((1, (input, input), (width, height)));
            for (i, p) in pyramid.iter().enumerate() {
                evals.push((2 + i, p.srcs(stream), (p.w, p.h)));
            }
        }
        if ssim {
            match &boxed {
                Some(b) => evals.push((0, b.srcs(stream), (b.w, b.h))),
                // Same images as MS-SSIM's scale 0: slot 0 reuses that evaluation.
                None if ms_ssim => {}
                None => evals.push((0, (input, input), (width, height))),
            }
        }
        evals.sort_by_key(|&(_, _, (w, h))| std::cmp::Reverse(w * h));
        let (c1, c2, c3) = ssim_constants();
        let mut stats_jobs = SsimJobs {
            c1,
            c2,
            c3,
            ..SsimJobs::default()
        };
        let mut slots = Slots::default();
        let mut slot_pixels = [0usize; SLOTS];
        let mut blocks = 0usize;
        for (eval, &(slot, (r, d), (w, h))) in stats_jobs.eval.iter_mut().zip(&evals) {
            let (vw, vh) = (w + 1 - GAUSS_LEN, h + 1 - GAUSS_LEN);
            let n = vw.div_ceil(STATS_TILE.0) * vh.div_ceil(STATS_TILE.1);
            *eval = SsimEval {
                reference: r,
                distorted: d,
                w: w as i32,
                h: h as i32,
                tiles_x: vw.div_ceil(STATS_TILE.0) as i32,
                first_block: blocks as i32,
            };
            slots.first_block[slot] = blocks as i32;
            slots.blocks[slot] = n as i32;
            slot_pixels[slot] = vw * vh;
            blocks += n;
        }
        stats_jobs.count = evals.len() as i32;
        if ssim && boxed.is_none() && ms_ssim {
            slots.first_block[0] = slots.first_block[1];
            slots.blocks[0] = slots.blocks[1];
            slot_pixels[0] = slot_pixels[1];
        }
        let partial = alloc_zeroed::<f64>(stream, 4 * blocks, "cuMemAlloc(ssim block sums)")?;
        Ok(Self {
            decimate,
            stats,
            reduce,
            _pyramid: pyramid,
            _boxed: boxed,
            partial,
            dec_launches,
            stats_jobs,
            stats_blocks: blocks as u32,
            slots,
            slot_pixels,
            ssim,
            ms_ssim,
        })
    }

    /// Enqueues on `stream` the SSIM sums of `distorted` against `reference` (luma,
    /// `width` x `height` planes, see [`DevPlane`]'s contract) into
    /// `out[0..RESULT_WORDS]` (all words overwritten; no zeroing needed, no allocation, no
    /// host synchronisation). Launches: `ssim_decimate` once per MS-SSIM scale 1..=4 (the
    /// box down-scaling of `float_ssim` rides on the first; only the box without MS-SSIM),
    /// `ssim_stats` once, `ssim_reduce` once.
    ///
    /// Errors: [`CudaError::Driver`] for an `out` shorter than [`SsimGpu::RESULT_WORDS`] or a
    /// failed launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "ssim enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        for &(jobs, blocks) in &self.dec_launches {
            let mut jobs = jobs;
            for j in &mut jobs.job {
                j.reference = with_plane(j.reference, reference);
                j.distorted = with_plane(j.distorted, distorted);
            }
            // SAFETY: ssim_decimate(DecJobs) by value; the planes hold width x height
            // samples (the caller's contract), every destination image is owned by self with
            // the size its job names; all live until the stream has run (the owner
            // synchronises before freeing).
            unsafe {
                launch(
                    stream,
                    &self.decimate,
                    (blocks, 1, 1),
                    BLOCK,
                    &mut [param(&mut jobs)],
                    "cuLaunchKernel(ssim_decimate)",
                )?;
            }
        }
        let mut p_partial = self.partial.device_ptr_mut(stream).0;
        if self.stats_blocks > 0 {
            let mut jobs = self.stats_jobs;
            for e in &mut jobs.eval {
                e.reference = with_plane(e.reference, reference);
                e.distorted = with_plane(e.distorted, distorted);
            }
            // SAFETY: ssim_stats(SsimJobs, f64*); sources as above, `partial` holds 4 words
            // per block of this launch.
            unsafe {
                launch(
                    stream,
                    &self.stats,
                    (self.stats_blocks, 1, 1),
                    BLOCK,
                    &mut [param(&mut jobs), param(&mut p_partial)],
                    "cuLaunchKernel(ssim_stats)",
                )?;
            }
        }
        let mut slots = self.slots;
        let mut p_out = out.device_ptr_mut(stream).0;
        // SAFETY: ssim_reduce(Slots, const f64*, u64*); the slots name blocks of the stats
        // launch only, `out` holds >= RESULT_WORDS words (checked above).
        unsafe {
            launch(
                stream,
                &self.reduce,
                (SLOTS as u32, 1, 1),
                BLOCK,
                &mut [param(&mut slots), param(&mut p_partial), param(&mut p_out)],
                "cuLaunchKernel(ssim_reduce)",
            )
        }
    }

    /// `(float_ssim, float_ms_ssim)` from the [`SsimGpu::RESULT_WORDS`] words read back after
    /// [`SsimGpu::enqueue`]: `float_ssim` in [-1, 1], `float_ms_ssim` in [0, 1] for natural
    /// content (1 for identical planes; NaN where the CPU gives NaN), each within 1e-5 of
    /// [`super::cpu::Ssim`]'s. A metric not enabled in [`SsimGpu::new`] is 0.0;
    /// missing words count as 0.
    pub fn scores(&self, words: &[u64]) -> (f64, f64) {
        let mean = |slot: usize, k: usize| -> f32 {
            let sum = f64::from_bits(words.get(4 * slot + k).copied().unwrap_or(0));
            (sum / self.slot_pixels[slot].max(1) as f64) as f32
        };
        let ssim = if self.ssim {
            f64::from(mean(0, 0))
        } else {
            0.0
        };
        let ms_ssim = if self.ms_ssim {
            let mut means = [[0.0f32; 3]; MS_SSIM_SCALES];
            for (i, m) in means.iter_mut().enumerate() {
                *m = [mean(1 + i, 1), mean(1 + i, 2), mean(1 + i, 3)];
            }
            ms_ssim_combine(&means)
        } else {
            0.0
        };
        (ssim, ms_ssim)
    }
}
