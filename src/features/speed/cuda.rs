//! Host side of `kernels/speed.cu`: SpEED chroma on the GPU.
//!
//! Five launches per frame on the extractor's side stream: `speed_decimate` (a thread per
//! decimated sample of the four planes: Cb and Cr of both frames), `speed_cov` (a block per
//! plane: local mean, covariance matrix), `speed_factor` (two blocks per plane running side by
//! side: eigenvalues; QR solve), `speed_entropy` (a block per plane: variances, entropies) and
//! `speed_score` (the two chroma scores). The kernels do the CPU half's float and double operations in its order with
//! explicit roundings (no FMA contraction), so the values are the CPU's except where CUDA's
//! `log2` (within 1 ulp in double, then rounded to float) differs from glibc's; the GPU test
//! allows 1e-5 per output.
//!
//! Everything is allocated in [`SpeedGpu::new`]; a frame allocates nothing.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c; oracle: [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtrMut};

use super::cpu::taps;
use super::params::{
    antialias_filter, combine, local_mean_filter, plane_size, Dims, SpeedConfig, FEATURE, N,
};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::DevPlane;
use crate::features::api::{CudaExtractor, DevFrame};
use crate::video::frame::FeatureError;

const MAX_TAPS: usize = 40;
const MAX_LOCAL: usize = 12;
const DECIMATE_THREADS: u32 = 128;
const STATS_THREADS: u32 = 256;

/// `speed_decimate`'s parameters (`struct DecimateParams` in `kernels/speed.cu`, same
/// layout: 328 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct DecimateParams {
    planes: [DevPlane; 4],
    scaled_w: i32,
    scaled_h: i32,
    op_w: i32,
    op_h: i32,
    direct: i32,
    taps: i32,
    width: i32,
    height: i32,
    inv: f32,
    filter: [f32; MAX_TAPS],
}
const _: () = assert!(std::mem::size_of::<DecimateParams>() == 328);

/// The parameters of `speed_cov`, `speed_factor` and `speed_entropy` (`struct StatsParams`,
/// 80 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct StatsParams {
    op_w: i32,
    op_h: i32,
    blocks_x: i32,
    blocks_y: i32,
    local_taps: i32,
    sigma_nn: f32,
    local: [f32; MAX_LOCAL],
    pad: [i32; 2],
}
const _: () = assert!(std::mem::size_of::<StatsParams>() == 80);

/// `speed_score`'s parameters (`struct ScoreParams`, 16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
struct ScoreParams {
    blocks: i32,
    weight_var_mode: i32,
    sigma_nn: f32,
    nn_floor: f32,
}
const _: () = assert!(std::mem::size_of::<ScoreParams>() == 16);

/// The SpEED chroma kernels and their scratch for one geometry and option set; also SpEED
/// temporal's ([`SpeedGpu::for_differences`]: two problems of frame differences).
pub struct SpeedGpu {
    /// `speed_decimate`, or `speed_decimate_diff` for frame differences.
    decimate: CudaFunction,
    /// Problems per frame: 4 (Cb and Cr of both frames) or 2 (the two frame differences).
    problems: usize,
    cov: CudaFunction,
    factor: CudaFunction,
    entropy: CudaFunction,
    score: CudaFunction,
    /// Rescaling tables: `[i1, i2, frac bits]` x scaled width, then x scaled height.
    taps: DeviceAlloc<u32>,
    /// Decimated planes and the local mean's pass: `4 * op_width * op_height` each.
    plane: DeviceAlloc<f32>,
    tmp: DeviceAlloc<f32>,
    /// Covariance matrices `4 * 25 * 25`, eigenvalues `4 * 25`, solve flags 4.
    kmat: DeviceAlloc<f32>,
    eig: DeviceAlloc<f32>,
    ok: DeviceAlloc<i32>,
    /// Independent term, solution, rotated right-hand side: `4 * 25 * blocks` each.
    yterm: DeviceAlloc<f32>,
    xsol: DeviceAlloc<f32>,
    rhs: DeviceAlloc<f32>,
    /// Entropies and variances: `4 * blocks` each; singular flags: 4.
    ent: DeviceAlloc<f32>,
    var: DeviceAlloc<f32>,
    singular: DeviceAlloc<i32>,
    decimate_params: DecimateParams,
    stats_params: StatsParams,
    score_params: ScoreParams,
    dims: Dims,
    luma: (usize, usize),
    bpc: u32,
    max_val: f64,
}

impl SpeedGpu {
    /// `u64` words per frame: Cb's score (`f32` bits), Cb's singular flag, Cr's score, Cr's
    /// flag.
    pub const RESULT_WORDS: usize = 4;

    /// Loads the kernels and allocates everything (on `stream`, synchronised before
    /// returning) for chroma planes of `dims` (checked by [`super::SpeedInstance::dims`]) of a
    /// `luma`-sized frame at `bpc` bits.
    ///
    /// Errors: [`CudaError::Driver`] (kernel lookup, copy), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        dims: Dims,
        luma: (usize, usize),
        bpc: u32,
        cfg: SpeedConfig,
    ) -> Result<Self, CudaError> {
        Self::build(dev, stream, dims, luma, bpc, cfg, 4)
    }

    /// SpEED temporal's state: two problems, each the difference of two luma planes of
    /// `dims` at `bpc` bits ([`SpeedGpu::enqueue_differences`]); `cfg.weight_var_mode` 0.
    ///
    /// Errors: as [`SpeedGpu::new`].
    pub fn for_differences(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        dims: Dims,
        bpc: u32,
        cfg: SpeedConfig,
    ) -> Result<Self, CudaError> {
        Self::build(dev, stream, dims, (dims.width, dims.height), bpc, cfg, 2)
    }

    /// [`SpeedGpu::new`] for `problems` problems (4: chroma planes; 2: frame differences).
    fn build(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        dims: Dims,
        luma: (usize, usize),
        bpc: u32,
        cfg: SpeedConfig,
        problems: usize,
    ) -> Result<Self, CudaError> {
        let m = dev.modules().get("speed")?;
        let decimate = if problems == 4 {
            function(m, "speed_decimate", "cuModuleGetFunction(speed_decimate)")?
        } else {
            function(
                m,
                "speed_decimate_diff",
                "cuModuleGetFunction(speed_decimate_diff)",
            )?
        };
        let cov = function(m, "speed_cov", "cuModuleGetFunction(speed_cov)")?;
        let factor = function(m, "speed_factor", "cuModuleGetFunction(speed_factor)")?;
        let entropy = function(m, "speed_entropy", "cuModuleGetFunction(speed_entropy)")?;
        let score = function(m, "speed_score", "cuModuleGetFunction(speed_score)")?;
        let mut table = Vec::with_capacity(3 * (dims.scaled_width + dims.scaled_height));
        for t in [
            taps(dims.width, dims.scaled_width, &cfg),
            taps(dims.height, dims.scaled_height, &cfg),
        ] {
            table.extend(t.iter().map(|t| t.i1));
            table.extend(t.iter().map(|t| t.i2));
            table.extend(t.iter().map(|t| t.frac.to_bits()));
        }
        let taps = alloc_copy(stream, &table, "cuMemAlloc(speed rescaling taps)")?;
        let pr = problems;
        let area = pr * dims.op_width * dims.op_height;
        let nb = dims.blocks();
        let f32s = |n: usize, what| alloc_zeroed::<f32>(stream, n, what);
        let plane = f32s(area, "cuMemAlloc(speed decimated planes)")?;
        let tmp = f32s(area, "cuMemAlloc(speed local mean)")?;
        let kmat = f32s(pr * N * N, "cuMemAlloc(speed covariance matrices)")?;
        let eig = f32s(pr * N, "cuMemAlloc(speed eigenvalues)")?;
        let ok = alloc_zeroed::<i32>(stream, pr, "cuMemAlloc(speed solve flags)")?;
        let yterm = f32s(pr * N * nb, "cuMemAlloc(speed independent term)")?;
        let xsol = f32s(pr * N * nb, "cuMemAlloc(speed solution)")?;
        let rhs = f32s(pr * N * nb, "cuMemAlloc(speed right-hand side)")?;
        let ent = f32s(pr * nb, "cuMemAlloc(speed entropies)")?;
        let var = f32s(pr * nb, "cuMemAlloc(speed variances)")?;
        let singular = alloc_zeroed::<i32>(stream, pr, "cuMemAlloc(speed singular flags)")?;
        // The tables' host copy is freed on return: the upload must be done.
        stream
            .synchronize()
            .during("cuStreamSynchronize(speed init)")?;

        let aa = antialias_filter(cfg.kernelscale);
        let mut filter = [0f32; MAX_TAPS];
        filter[..aa.len()].copy_from_slice(&aa);
        let lm = local_mean_filter(cfg.kernelscale);
        let mut local = [0f32; MAX_LOCAL];
        local[..lm.len()].copy_from_slice(&lm);
        let decimate_params = DecimateParams {
            planes: [DevPlane::default(); 4],
            scaled_w: dims.scaled_width as i32,
            scaled_h: dims.scaled_height as i32,
            op_w: dims.op_width as i32,
            op_h: dims.op_height as i32,
            direct: i32::from(!cfg.rescales()),
            taps: aa.len() as i32,
            width: dims.width as i32,
            height: dims.height as i32,
            inv: 1.0 / (1u32 << bpc.saturating_sub(8)) as f32,
            filter,
        };
        let stats_params = StatsParams {
            op_w: dims.op_width as i32,
            op_h: dims.op_height as i32,
            blocks_x: dims.blocks_x as i32,
            blocks_y: dims.blocks_y as i32,
            local_taps: lm.len() as i32,
            sigma_nn: cfg.sigma_nn as f32,
            local,
            pad: [0; 2],
        };
        let score_params = ScoreParams {
            blocks: nb as i32,
            weight_var_mode: cfg.weight_var_mode as i32,
            sigma_nn: cfg.sigma_nn as f32,
            nn_floor: cfg.nn_floor as f32,
        };
        Ok(Self {
            decimate,
            problems,
            cov,
            factor,
            entropy,
            score,
            taps,
            plane,
            tmp,
            kmat,
            eig,
            ok,
            yterm,
            xsol,
            rhs,
            ent,
            var,
            singular,
            decimate_params,
            stats_params,
            score_params,
            dims,
            luma,
            bpc,
            max_val: cfg.max_val,
        })
    }

    /// The three outputs (`u`, `v`, `uv`, clipped to `speed_max_val`) from the
    /// [`SpeedGpu::RESULT_WORDS`] words read back; missing words count as 0.
    pub fn scores(&self, words: &[u64]) -> [f64; 3] {
        let word = |i: usize| words.get(i).copied().unwrap_or(0);
        let plane = |i: usize| (f32::from_bits(word(2 * i) as u32), word(2 * i + 1) != 0);
        combine(plane(0), plane(1), self.max_val)
    }
}

impl CudaExtractor for SpeedGpu {
    fn result_words(&self) -> usize {
        Self::RESULT_WORDS
    }

    /// Latency-bound (one block per plane for the statistics): beside the compute stream.
    fn side_stream(&self) -> bool {
        true
    }

    /// Its statistics run in 4 to 8 blocks (the CPU's sums in their order), a chain of
    /// about 0.45 ms at 1080p: ahead of CAMBI's and ADM's wide grids it overlaps them.
    fn high_priority(&self) -> bool {
        true
    }

    /// Errors: [`CudaError::Geometry`] for a frame without chroma or with chroma planes of
    /// another size, [`CudaError::Driver`] for an `out` shorter than
    /// [`SpeedGpu::RESULT_WORDS`] or a failed launch.
    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        f: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        let d = self.dims;
        let wrong = |size| {
            CudaError::Geometry(FeatureError::wrong_size(
                FEATURE,
                (d.width, d.height, self.bpc),
                size,
            ))
        };
        let c = f.chroma.ok_or_else(|| wrong((0, 0)))?;
        let size = plane_size(self.luma, (c.width, c.height));
        if size != (d.width, d.height) {
            return Err(wrong(size));
        }
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "speed enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let mut p_out = out.device_ptr_mut(stream).0;
        self.launch(
            stream,
            [
                c.reference[0],
                c.distorted[0],
                c.reference[1],
                c.distorted[1],
            ],
            &mut p_out,
        )
    }

    fn read(&self, words: &[u64], _chroma: bool, out: &mut [f64]) {
        let v = self.scores(words);
        out.iter_mut().zip(v).for_each(|(o, x)| *o = x);
    }
}

impl SpeedGpu {
    /// SpEED temporal's frame: problem 0 is `planes[0] - planes[1]` (the reference
    /// difference), problem 1 `planes[2] - planes[3]` (the distorted one), each plane of the
    /// dims given to [`SpeedGpu::for_differences`] (the caller checks); writes 2 words to
    /// `out` at `out_ptr`: the score's `f32` bits, and 1 when a covariance was singular.
    ///
    /// Errors: [`CudaError::Driver`] for a failed launch, or a state made by
    /// [`SpeedGpu::new`].
    pub fn enqueue_differences(
        &mut self,
        stream: &Arc<CudaStream>,
        planes: [DevPlane; 4],
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if self.problems != 2 || out.len() < 2 {
            return Err(CudaError::Driver {
                call: "speed enqueue_differences",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let mut p_out = out.device_ptr_mut(stream).0;
        self.launch(stream, planes, &mut p_out)
    }

    /// The five launches of one frame on `planes` (4 chroma planes, or the 2 x 2 planes of
    /// the frame differences), the scores into the words at `p_out` (2 per score).
    fn launch(
        &mut self,
        stream: &Arc<CudaStream>,
        planes: [DevPlane; 4],
        p_out: &mut u64,
    ) -> Result<(), CudaError> {
        let d = self.dims;
        let pr = self.problems as u32;
        let mut dp = self.decimate_params;
        dp.planes = planes;
        let mut sp = self.stats_params;
        let mut scp = self.score_params;
        let mut p_taps = self.taps.device_ptr_mut(stream).0;
        let mut p_plane = self.plane.device_ptr_mut(stream).0;
        let mut p_tmp = self.tmp.device_ptr_mut(stream).0;
        let mut p_k = self.kmat.device_ptr_mut(stream).0;
        let mut p_eig = self.eig.device_ptr_mut(stream).0;
        let mut p_ok = self.ok.device_ptr_mut(stream).0;
        let mut p_y = self.yterm.device_ptr_mut(stream).0;
        let mut p_x = self.xsol.device_ptr_mut(stream).0;
        let mut p_rhs = self.rhs.device_ptr_mut(stream).0;
        let mut p_ent = self.ent.device_ptr_mut(stream).0;
        let mut p_var = self.var.device_ptr_mut(stream).0;
        let mut p_sing = self.singular.device_ptr_mut(stream).0;
        let points = (d.op_width * d.op_height) as u32;
        // SAFETY: speed_decimate(_diff)(DecimateParams, const u32*, f32*): the four planes
        // hold width x height samples (checked by the callers; the DevPlane contract), the
        // taps table 3 * (scaled_w + scaled_h) words, `plane` problems * op_w * op_h floats
        // (sized at init for these dims); all outlive the stream's work (the owner
        // synchronises before freeing). Every per-problem buffer below holds `problems`
        // problems, as the grids launch.
        unsafe {
            launch(
                stream,
                &self.decimate,
                (points.div_ceil(DECIMATE_THREADS), pr, 1),
                (DECIMATE_THREADS, 1, 1),
                &mut [param(&mut dp), param(&mut p_taps), param(&mut p_plane)],
                "cuLaunchKernel(speed_decimate)",
            )?;
            // SAFETY: speed_cov(StatsParams, f32* x 4): plane, tmp (4 * op_w * op_h), kmat
            // (4 * 625), yterm (4 * 25 * blocks), all sized at init for these dims.
            launch(
                stream,
                &self.cov,
                (pr, 1, 1),
                (STATS_THREADS, 1, 1),
                &mut [
                    param(&mut sp),
                    param(&mut p_plane),
                    param(&mut p_tmp),
                    param(&mut p_k),
                    param(&mut p_y),
                ],
                "cuLaunchKernel(speed_cov)",
            )?;
            // SAFETY: speed_factor(StatsParams, const f32* x 2, f32* x 3, i32*): kmat, yterm,
            // rhs, xsol (4 * 25 * blocks), eig (4 * 25), ok (4), sized at init.
            launch(
                stream,
                &self.factor,
                (2 * pr, 1, 1),
                (STATS_THREADS, 1, 1),
                &mut [
                    param(&mut sp),
                    param(&mut p_k),
                    param(&mut p_y),
                    param(&mut p_rhs),
                    param(&mut p_x),
                    param(&mut p_eig),
                    param(&mut p_ok),
                ],
                "cuLaunchKernel(speed_factor)",
            )?;
            // SAFETY: speed_entropy(StatsParams, const f32* x 3, const i32*, f32* x 2, i32*):
            // yterm, xsol, eig, ok, ent and var (4 * blocks), singular (4), sized at init.
            launch(
                stream,
                &self.entropy,
                (pr, 1, 1),
                (STATS_THREADS, 1, 1),
                &mut [
                    param(&mut sp),
                    param(&mut p_y),
                    param(&mut p_x),
                    param(&mut p_eig),
                    param(&mut p_ok),
                    param(&mut p_ent),
                    param(&mut p_var),
                    param(&mut p_sing),
                ],
                "cuLaunchKernel(speed_entropy)",
            )?;
            // SAFETY: speed_score(ScoreParams, const f32*, const f32*, const i32*, u64*);
            // `out` holds 2 words per score (>= 4 for chroma, >= 2 for the differences,
            // checked by the callers).
            launch(
                stream,
                &self.score,
                (1, 1, 1),
                // One thread per score: 2 for chroma (threads past 2 return), 1 for the
                // frame differences (problems 0 and 1 only).
                (if pr == 4 { 32 } else { 1 }, 1, 1),
                &mut [
                    param(&mut scp),
                    param(&mut p_ent),
                    param(&mut p_var),
                    param(&mut p_sing),
                    param(p_out),
                ],
                "cuLaunchKernel(speed_score)",
            )
        }
    }
}
