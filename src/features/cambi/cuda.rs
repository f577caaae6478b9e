//! Host side of `kernels/cambi.cu`: CAMBI of the distorted luma on the GPU.
//!
//! Per frame, on one stream: `cambi_preprocess` (resize, 10 bits, anti-dithering),
//! `cambi_mask` (7x7 spatial mask), then per scale `cambi_mode` (decimation + 3x3 mode
//! filter) and `cambi_cvalues` (per-pixel window histograms from a shared tile, c-values in
//! float as the CPU computes them), and the exact pooling of all five scales at once: a
//! three-digit radix select of each scale's k-th largest c-value (`cambi_hist` +
//! `cambi_select`, 12/12/8 bits of the float), `cambi_sum` of the values above it and
//! `cambi_finish`. The five top-k sums (integers, units of 2^-24) are the result words;
//! [`CambiGpu::score`] combines them with the CPU's [`super::score_from_sums`], so scores
//! are bit-identical to [`super::cpu::Cambi`].
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/cambi.c; oracle: [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::params::{score_from_sums, FEATURE, NUM_SCALES};
use super::params::{CambiConfig, Params, CONTRAST_WEIGHTS, MAX_DIFFS};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, DevPlane};

/// Block of the per-pixel kernels (`BLOCK_X` x `BLOCK_Y` in `kernels/common.cuh`).
const BLOCK: (u32, u32, u32) = (32, 8, 1);
/// Threads of the 1-D pooling kernels.
const LINEAR: (u32, u32, u32) = (256, 1, 1);
/// Histogram words per scale (`HIST_PER_SCALE`: three digits of 4096, 4096, 256 bins).
const HIST_PER_SCALE: usize = 4096 + 4096 + 256;
/// Largest window half-width the c-value kernel's tile holds (`MAX_PAD`).
const MAX_PAD: usize = 32;

/// `struct Const` of `kernels/cambi.cu` (same layout, 76 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct CambiConst {
    enc_w: i32,
    enc_h: i32,
    bpc: i32,
    anti_dither: i32,
    use_map: i32,
    mask_index: u32,
    pad: i32,
    num_diffs: i32,
    band_base: i32,
    band_size: i32,
    vlt_luma: i32,
    tvi: [i32; MAX_DIFFS],
    weight: [i32; MAX_DIFFS],
}

const _: () = assert!(std::mem::size_of::<CambiConst>() == 76);

/// `struct Segs` of `kernels/cambi.cu` (60 bytes): each scale's offset in the c-value buffer,
/// its element count and how many of them are pooled.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Segs {
    offset: [u32; NUM_SCALES],
    n: [u32; NUM_SCALES],
    k: [u32; NUM_SCALES],
}

const _: () = assert!(std::mem::size_of::<Segs>() == 60);

/// The CAMBI kernels and device scratch for one geometry and option set.
pub struct CambiGpu {
    p: Params,
    consts: CambiConst,
    segs: Segs,
    preprocess: CudaFunction,
    mask_fn: CudaFunction,
    mode: CudaFunction,
    cvalues: CudaFunction,
    hist_fn: CudaFunction,
    select: CudaFunction,
    sum: CudaFunction,
    finish: CudaFunction,
    /// Source column / row of each encode column / row (one unused word without a resize).
    xmap: DeviceAlloc<u32>,
    ymap: DeviceAlloc<u32>,
    /// Preprocessed 10-bit image at the encode size.
    img: DeviceAlloc<u16>,
    /// Spatial mask at the encode size.
    mask: DeviceAlloc<u8>,
    /// Each scale's mode-filtered image.
    scales: Vec<DeviceAlloc<u16>>,
    /// C-values (float bits) of all scales, back to back.
    cv: DeviceAlloc<u32>,
    /// `1/i` table.
    lut: DeviceAlloc<f32>,
    /// Radix histograms, [`HIST_PER_SCALE`] words per scale.
    hist: DeviceAlloc<u32>,
    /// Per scale: selected prefix, remaining k.
    state: DeviceAlloc<u32>,
    /// Per scale: sum of the c-values above the selected one.
    acc: DeviceAlloc<u64>,
    /// Grid of the 1-D pooling kernels (blocks per scale).
    pool_blocks: u32,
}

/// Grid covering `w` x `h` with [`BLOCK`].
fn grid(w: usize, h: usize) -> (u32, u32, u32) {
    (w.div_ceil(32) as u32, h.div_ceil(8) as u32, 1)
}

impl CambiGpu {
    /// `u64` words [`CambiGpu::enqueue`] writes per frame: each scale's exact top-k sum of
    /// c-values in units of 2^-24.
    pub const RESULT_WORDS: usize = NUM_SCALES;

    /// Loads the kernels and allocates the scratch (on `stream`) for `width` x `height`
    /// planes of `bpc` bits with options `cfg`.
    ///
    /// Errors: [`CudaError::Geometry`] as [`Params::new`] or for a side above 65536,
    /// [`CudaError::Driver`] (kernel lookup, table uploads), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        cfg: &CambiConfig,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, CudaError> {
        check_size(FEATURE, (width, height, bpc), 1)?;
        let p = Params::new(cfg, width, height, bpc)?;
        let pad = p.window / 2;
        if pad > MAX_PAD || p.num_diffs > MAX_DIFFS {
            return Err(CudaError::Driver {
                call: "cambi window or contrast beyond the kernel's tile",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        let m = dev.modules().get("cambi")?;
        let f = |name: &str, call: &'static str| function(m, name, call);
        let (ew, eh) = p.enc;
        let mut segs = Segs::default();
        let mut total = 0usize;
        for s in 0..NUM_SCALES {
            let (w, h) = p.scales[s];
            segs.offset[s] = total as u32;
            segs.n[s] = (w * h) as u32;
            segs.k[s] = p.topk_count(s) as u32;
            total += w * h;
        }
        let mut tvi = [0i32; MAX_DIFFS];
        let mut weight = [0i32; MAX_DIFFS];
        for d in 0..p.num_diffs {
            tvi[d] = i32::from(p.tvi[d]);
            weight[d] = CONTRAST_WEIGHTS[d];
        }
        let consts = CambiConst {
            enc_w: ew as i32,
            enc_h: eh as i32,
            bpc: bpc as i32,
            anti_dither: i32::from(p.anti_dither),
            use_map: i32::from(p.maps.is_some()),
            mask_index: p.mask_index,
            pad: pad as i32,
            num_diffs: p.num_diffs as i32,
            band_base: i32::from(p.band_base),
            band_size: i32::from(p.band_size),
            vlt_luma: i32::from(p.vlt_luma),
            tvi,
            weight,
        };
        let (xmap, ymap) = match &p.maps {
            Some((xs, ys)) => (
                alloc_copy(stream, xs, "cuMemAlloc(cambi column map)")?,
                alloc_copy(stream, ys, "cuMemAlloc(cambi row map)")?,
            ),
            None => (
                alloc_zeroed(stream, 1, "cuMemAlloc(cambi column map)")?,
                alloc_zeroed(stream, 1, "cuMemAlloc(cambi row map)")?,
            ),
        };
        let mut scales = Vec::with_capacity(NUM_SCALES);
        for &(w, h) in &p.scales {
            scales.push(alloc_zeroed(stream, w * h, "cuMemAlloc(cambi scale)")?);
        }
        let largest = p.scales[0].0 * p.scales[0].1;
        Ok(Self {
            preprocess: f("cambi_preprocess", "cuModuleGetFunction(cambi_preprocess)")?,
            mask_fn: f("cambi_mask", "cuModuleGetFunction(cambi_mask)")?,
            mode: f("cambi_mode", "cuModuleGetFunction(cambi_mode)")?,
            cvalues: f("cambi_cvalues", "cuModuleGetFunction(cambi_cvalues)")?,
            hist_fn: f("cambi_hist", "cuModuleGetFunction(cambi_hist)")?,
            select: f("cambi_select", "cuModuleGetFunction(cambi_select)")?,
            sum: f("cambi_sum", "cuModuleGetFunction(cambi_sum)")?,
            finish: f("cambi_finish", "cuModuleGetFunction(cambi_finish)")?,
            xmap,
            ymap,
            img: alloc_zeroed(stream, ew * eh, "cuMemAlloc(cambi image)")?,
            mask: alloc_zeroed(stream, ew * eh, "cuMemAlloc(cambi mask)")?,
            scales,
            cv: alloc_zeroed(stream, total, "cuMemAlloc(cambi c-values)")?,
            lut: alloc_copy(stream, &p.lut, "cuMemAlloc(cambi reciprocal table)")?,
            hist: alloc_zeroed(
                stream,
                NUM_SCALES * HIST_PER_SCALE,
                "cuMemAlloc(cambi histograms)",
            )?,
            state: alloc_zeroed(stream, 2 * NUM_SCALES, "cuMemAlloc(cambi select state)")?,
            acc: alloc_zeroed(stream, NUM_SCALES, "cuMemAlloc(cambi sums)")?,
            pool_blocks: largest.div_ceil(256 * 8).clamp(1, 256) as u32,
            consts,
            segs,
            p,
        })
    }

    /// The resolved parameters.
    pub fn params(&self) -> &Params {
        &self.p
    }

    /// Enqueues on `stream` CAMBI of `plane` (the distorted luma, the geometry given to
    /// [`CambiGpu::new`], see [`DevPlane`]'s contract) into `out[0..5]` (all five words
    /// overwritten; no host synchronisation). 20 launches and two memsets, no allocation.
    ///
    /// Errors: [`CudaError::Driver`] for an `out` shorter than [`CambiGpu::RESULT_WORDS`],
    /// a failed memset or launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        plane: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        if out.len() < Self::RESULT_WORDS {
            return Err(CudaError::Driver {
                call: "cambi enqueue(output words)",
                code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
            });
        }
        stream
            .memset_zeros(&mut *self.hist)
            .during("cuMemsetD8Async(cambi histograms)")?;
        stream
            .memset_zeros(&mut *self.acc)
            .during("cuMemsetD8Async(cambi sums)")?;
        let (ew, eh) = self.p.enc;
        let mut plane = plane;
        let mut consts = self.consts;
        let mut segs = self.segs;
        let mut p_xmap = self.xmap.device_ptr(stream).0;
        let mut p_ymap = self.ymap.device_ptr(stream).0;
        let mut p_img = self.img.device_ptr_mut(stream).0;
        let mut p_mask = self.mask.device_ptr_mut(stream).0;
        let mut p_cv = self.cv.device_ptr_mut(stream).0;
        let mut p_lut = self.lut.device_ptr(stream).0;
        let mut p_hist = self.hist.device_ptr_mut(stream).0;
        let mut p_state = self.state.device_ptr_mut(stream).0;
        let mut p_acc = self.acc.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;
        let mut scale_ptrs = [0u64; NUM_SCALES];
        for (ptr, buf) in scale_ptrs.iter_mut().zip(self.scales.iter_mut()) {
            *ptr = buf.device_ptr_mut(stream).0;
        }
        // SAFETY (every launch below): the parameters match the kernels' lists in
        // kernels/cambi.cu in number, order and type; every buffer was sized in `new` for
        // this geometry (image and mask ew x eh, scale s w_s x h_s, c-values the sum of the
        // scales, histograms 5 x 8448 words, state 10, sums 5, `out` >= 5 words, checked
        // above), the input plane holds the geometry (the caller's contract), and all stay
        // live until the stream has run (the owner synchronises before freeing).
        unsafe {
            launch(
                stream,
                &self.preprocess,
                grid(ew, eh),
                BLOCK,
                &mut [
                    param(&mut plane),
                    param(&mut consts),
                    param(&mut p_xmap),
                    param(&mut p_ymap),
                    param(&mut p_img),
                ],
                "cuLaunchKernel(cambi_preprocess)",
            )?;
            launch(
                stream,
                &self.mask_fn,
                grid(ew, eh),
                BLOCK,
                &mut [param(&mut p_img), param(&mut consts), param(&mut p_mask)],
                "cuLaunchKernel(cambi_mask)",
            )?;
            let (mut src, mut src_w, mut prev) = (p_img, ew as i32, (ew, eh));
            for (s, &scale_ptr) in scale_ptrs.iter().enumerate() {
                let (w, h) = self.p.scales[s];
                let mut step: i32 = if (w, h) == prev { 1 } else { 2 };
                let (mut wi, mut hi) = (w as i32, h as i32);
                let mut dst = scale_ptr;
                launch(
                    stream,
                    &self.mode,
                    grid(w, h),
                    BLOCK,
                    &mut [
                        param(&mut src),
                        param(&mut src_w),
                        param(&mut step),
                        param(&mut wi),
                        param(&mut hi),
                        param(&mut dst),
                    ],
                    "cuLaunchKernel(cambi_mode)",
                )?;
                let mut mshift = (s + usize::from(self.p.speedup)) as i32;
                let mut cv_s = p_cv + 4 * u64::from(self.segs.offset[s]);
                launch(
                    stream,
                    &self.cvalues,
                    grid(w, h),
                    BLOCK,
                    &mut [
                        param(&mut dst),
                        param(&mut wi),
                        param(&mut hi),
                        param(&mut p_mask),
                        param(&mut mshift),
                        param(&mut consts),
                        param(&mut p_lut),
                        param(&mut cv_s),
                    ],
                    "cuLaunchKernel(cambi_cvalues)",
                )?;
                (src, src_w, prev) = (dst, wi, (w, h));
            }
            for level in 0..3i32 {
                let mut level = level;
                launch(
                    stream,
                    &self.hist_fn,
                    (self.pool_blocks, NUM_SCALES as u32, 1),
                    LINEAR,
                    &mut [
                        param(&mut p_cv),
                        param(&mut segs),
                        param(&mut level),
                        param(&mut p_state),
                        param(&mut p_hist),
                    ],
                    "cuLaunchKernel(cambi_hist)",
                )?;
                launch(
                    stream,
                    &self.select,
                    (NUM_SCALES as u32, 1, 1),
                    LINEAR,
                    &mut [
                        param(&mut segs),
                        param(&mut level),
                        param(&mut p_hist),
                        param(&mut p_state),
                    ],
                    "cuLaunchKernel(cambi_select)",
                )?;
            }
            launch(
                stream,
                &self.sum,
                (self.pool_blocks, NUM_SCALES as u32, 1),
                LINEAR,
                &mut [
                    param(&mut p_cv),
                    param(&mut segs),
                    param(&mut p_state),
                    param(&mut p_acc),
                ],
                "cuLaunchKernel(cambi_sum)",
            )?;
            launch(
                stream,
                &self.finish,
                (1, 1, 1),
                (32, 1, 1),
                &mut [param(&mut p_state), param(&mut p_acc), param(&mut p_out)],
                "cuLaunchKernel(cambi_finish)",
            )
        }
    }

    /// The score (in `[0, cambi_max_val]`) from the [`CambiGpu::RESULT_WORDS`] words read
    /// back after [`CambiGpu::enqueue`]; bit-identical to [`super::cpu::Cambi::score`] on the
    /// same plane. Missing words count as 0.
    pub fn score(&self, words: &[u64]) -> f64 {
        let sums: [u64; NUM_SCALES] = std::array::from_fn(|s| words.get(s).copied().unwrap_or(0));
        score_from_sums(
            &sums,
            &self.p.topk_counts(),
            self.p.window_pixels(),
            self.p.max_val,
        )
    }
}
