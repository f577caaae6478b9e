//! Integer ADM on the GPU: host side of `kernels/adm.cu`.
//!
//! Bit-identical to [`super::cpu::Adm`] (itself bit-exact to Netflix/vmaf v3.2.0,
//! `libvmaf/src/feature/integer_adm.c`): the device computes every integer stage (DWT,
//! decouple, CSF, contrast masking, denominator) and reduces each scale to nine wrapping 64-bit
//! integer sums, which no reduction order can change; [`AdmGpu::scores`] then does the
//! floating-point finish (per-band cube roots, per-scale and total ratios) on the host in the
//! CPU's order and precision.
//!
//! Per frame: one memset and, for each of the four scales, three kernels (`adm_dwt_*`,
//! `adm_decouple_*`, `adm_cm_*`) on the caller's stream; no host allocation, no
//! synchronisation.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaModule, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut, LaunchConfig,
};

use super::config::{AdmConfig, Csf, CsfMode};
use super::params::{
    ceil_u32, cm_shifts, den_finish, finish_scores, AdmScores, Region, MIN_HEIGHT, MIN_WIDTH,
};
use crate::cuda::context::{launch, param};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::DevPlane;

/// Number of scales.
pub const SCALES: usize = 4;
/// Result words per scale: `[den h, v, d, dlm h, v, d, aim h, v, d]`.
const WORDS_PER_SCALE: usize = 9;
/// `i64` entries per scale in the device parameter table (layout: `P_*` in `kernels/adm.cu`).
const PARAMS: usize = 32;
const P_W: usize = 0;
const P_H: usize = 1;
const P_IN_W: usize = 2;
const P_IN_H: usize = 3;
const P_EXT: usize = 4; // top, bottom, left, right
const P_REG: usize = 8; // top, bottom, left, right
const P_IRF: usize = 12;
const P_SUB: usize = 15;
const P_SQ: usize = 18;
const P_CUB: usize = 21;
const P_SHIFT_INNER: usize = 24;
const P_DEN_SHIFT_SQ: usize = 25;
const P_DEN_SHIFT_CUB: usize = 26;
const P_DEN_SHIFT_ROW: usize = 27;
const P_SCALE: usize = 28;
const P_BPC: usize = 29;

/// Threads of a block in the per-row kernel (`ADM_ROW_THREADS` in `kernels/adm.cu`).
const ROW_THREADS: u32 = 256;
/// 2-D block of the per-coefficient kernels.
const TILE: (u32, u32) = (32, 8);

/// Everything the host finish of one scale needs.
#[derive(Debug, Clone, Copy, Default)]
struct ScaleConsts {
    /// CSF factors of bands h, v, d ([`Csf::rf`]).
    rf: [f32; 3],
    /// Area of the scored region, in coefficients.
    area: i64,
    /// Divisor of the denominator's integer sums (`2^(18 - shift)` or `2^e`).
    den_div: f64,
    /// CM cube shifts of bands h, v, d and the per-row shift.
    cub: [u32; 3],
    shift_inner: u32,
}

/// Final floating-point part of a CM numerator (`adm_cm` / `i4_adm_cm`).
fn cm_finish(accum: [i64; 3], scale: usize, c: &ScaleConsts, noise_weight: f64) -> f32 {
    let f_accum: [f32; 3] = if scale == 0 {
        let e = |cub: u32, base: u32| {
            2.0f64.powf(base.wrapping_sub(cub).wrapping_sub(c.shift_inner) as f64)
        };
        [
            (accum[0] as f64 / e(c.cub[0], 52)) as f32,
            (accum[1] as f64 / e(c.cub[1], 52)) as f32,
            (accum[2] as f64 / e(c.cub[2], 57)) as f32,
        ]
    } else {
        let base = [45u32, 39, 36]
            .get(scale.wrapping_sub(1))
            .copied()
            .unwrap_or(36);
        let fs = 2.0f64.powf(base.wrapping_sub(c.cub[0]).wrapping_sub(c.shift_inner) as f64) as f32;
        [
            accum[0] as f32 / fs,
            accum[1] as f32 / fs,
            accum[2] as f32 / fs,
        ]
    };
    let noise = ((c.area as f64 * noise_weight) as f32).powf(1.0f32 / 3.0);
    let n = f_accum.map(|a| a.powf(1.0f32 / 3.0) + noise);
    n[0] + n[1] + n[2]
}

/// An invalid argument, reported as `CUDA_ERROR_INVALID_VALUE` of `call`.
fn invalid(call: &'static str) -> CudaError {
    CudaError::Driver {
        call,
        code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
    }
}

/// `u32` of a launch dimension (sizes here are far below `u32::MAX`).
fn dim(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Integer ADM on the GPU for one frame geometry: kernel handles and all device scratch.
///
/// Source: Netflix/vmaf v3.2.0, `libvmaf/src/feature/integer_adm.c` (`integer_compute_adm`),
/// through the CPU reference `super::cpu`.
pub struct AdmGpu {
    width: usize,
    height: usize,
    /// `dims[s]`: (width, height) of the DWT input at scale `s`; `dims[s + 1]` its bands.
    dims: [(usize, usize); 5],
    /// Coefficients of one scale-0 band (`dims[1].0 * dims[1].1`) rounded up to even: the
    /// stride, in `i16`, between the bands of the multi-band buffers at scale 0; scales 1..3
    /// use `band_len / 2` `i32` (see `kernels/adm.cu`, "Band storage").
    band_len: usize,
    /// `f32` value of cos(1 degree)^2 as libvmaf computes it.
    cos_1deg_sq: f32,
    /// The CSF options the parameter table was built for (`adm_csf_mode`,
    /// `adm_norm_view_dist`, `adm_ref_display_height`).
    csf_options: (CsfMode, f64, u32),
    consts: [ScaleConsts; SCALES],
    dwt_s0: CudaFunction,
    dwt_s1: CudaFunction,
    dwt_s23: CudaFunction,
    decouple_s0: CudaFunction,
    decouple_s123: CudaFunction,
    cm_s0: CudaFunction,
    cm_s123: CudaFunction,
    /// Per-scale parameter table, `SCALES * PARAMS` `i64`.
    params: DeviceAlloc<i64>,
    /// Approximation bands, ping-pong between scales: scale 0 writes `a0` as `i16`
    /// (`band_len`), scale 1 `a1` as `i32` (`dims[2]`), scale 2 `a0` and scale 3 `a1` as `i32`.
    a0_ref: DeviceAlloc<i16>,
    a0_dis: DeviceAlloc<i16>,
    a1_ref: DeviceAlloc<i32>,
    a1_dis: DeviceAlloc<i32>,
    /// Detail bands h, v, d (`3 * band_len` `i16`, holding `3 * band_len / 2` `i32` at scales
    /// 1..3).
    hvd_ref: DeviceAlloc<i16>,
    hvd_dis: DeviceAlloc<i16>,
    /// Restored and additive parts, laid out as the detail bands.
    dec_r: DeviceAlloc<i16>,
    dec_a: DeviceAlloc<i16>,
    /// Per-coefficient masking sums `F_dlm, C_dlm, F_aim, C_aim` (`4 * band_len` `i32`).
    fc: DeviceAlloc<i32>,
    /// A ladder's reference detail bands of scales 1..3 (scale 0's are `hvd_ref`), laid out
    /// as `hvd_ref`; allocated by the first [`AdmGpu::enqueue_ladder`] (a pair never needs
    /// them).
    ref_bands: Option<[DeviceAlloc<i16>; 3]>,
    /// The batched kernels of a ladder's renditions (`adm_*_ladder`): DWT s0, s1, s23,
    /// decouple s0, s123, masking s0, s123.
    ladder_fns: [CudaFunction; 7],
    /// A ladder's distorted scratch for up to [`LADDER_MAX`] renditions at once
    /// ([`AdmGpu::prepare_renditions`]).
    renditions: Option<RenditionScratch>,
}

/// Renditions of one batched launch (`ADM_LADDER_MAX` in `kernels/adm.cu`).
pub const LADDER_MAX: usize = 8;

/// The distorted scratch of `n` renditions, each rendition's `z`-th share of every buffer
/// laid out as a pair's (`a0_dis`, `a1_dis`, `hvd_dis`, `dec_r`, `dec_a`, `fc`).
struct RenditionScratch {
    n: usize,
    a0: DeviceAlloc<i16>,
    a1: DeviceAlloc<i32>,
    hvd: DeviceAlloc<i16>,
    dec_r: DeviceAlloc<i16>,
    dec_a: DeviceAlloc<i16>,
    fc: DeviceAlloc<i32>,
}

/// `AdmLadderPlanes` / `AdmLadderAccs` of `kernels/adm.cu`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct LadderPlanes([DevPlane; LADDER_MAX]);
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct LadderAccs([u64; LADDER_MAX]);

/// What a DWT launch reads: the input planes (scale 0) or the previous scale's `i16` / `i32`
/// approximation bands (device addresses), of the launch's first and second frame.
#[derive(Clone, Copy)]
enum DwtSrc {
    Planes(DevPlane, DevPlane),
    Bands(u64, u64),
}

impl AdmGpu {
    /// `u64` words written per frame into `out` by [`AdmGpu::enqueue`]: for each of the four
    /// scales, the denominator sums of bands h, v, d, then the DLM and the AIM contrast-masking
    /// sums of h, v, d (wrapping two's-complement integers).
    pub const RESULT_WORDS: usize = SCALES * WORDS_PER_SCALE;

    /// Loads the kernel handles from `module` (the PTX of `kernels/adm.cu`) and allocates all
    /// scratch for `width` x `height` luma planes of `bpc` bits, on `stream`, with the CSF
    /// weights of `cfg` (its `csf_mode`, `norm_view_dist` and `ref_display_height`; they enter
    /// the kernels as per-scale constants of the parameter table, so every option set runs
    /// the same kernels at the same speed). Per scale-0
    /// coefficient (`ceil(width/2) * ceil(height/2)` of them) 12 `i16` detail, restored and
    /// additive bands, 4 `i32` masking sums and about 5 bytes of approximation bands, 46 bytes
    /// in all (23.8 MB at 1920x1080, 95 MB at 3840x2160).
    ///
    /// Errors: `Driver` (`CUDA_ERROR_INVALID_VALUE`) for a frame below 33x33, a `bpc` outside
    /// `8..=16` or a `cfg` that [`AdmConfig::validate`] refuses; `Driver` naming the kernel when the module lacks it; `OutOfMemory` / `Driver`
    /// for a failed allocation or parameter upload.
    pub fn new(
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
        cfg: &AdmConfig,
    ) -> Result<Self, CudaError> {
        let csf = cfg
            .csf()
            .ok_or_else(|| invalid("AdmGpu::new (unsupported ADM CSF options)"))?;
        if width < MIN_WIDTH || height < MIN_HEIGHT {
            return Err(invalid("AdmGpu::new (frame smaller than 33x33)"));
        }
        if !(8..=16).contains(&bpc) {
            return Err(invalid("AdmGpu::new (bpc outside 8..=16)"));
        }
        let mut dims = [(width, height); 5];
        for s in 1..5 {
            let (w, h) = dims[s - 1];
            dims[s] = (w.div_ceil(2), h.div_ceil(2));
        }
        let band_len = (dims[1].0 * dims[1].1).next_multiple_of(2);
        if dims[2].0 * dims[2].1 > band_len / 2 {
            // Cannot happen for bands of 3 or more coefficients a side (33x33 frames and up).
            return Err(invalid(
                "AdmGpu::new (scale-1 bands exceed half the scale-0 stride)",
            ));
        }
        let c = (1.0f64 * std::f64::consts::PI / 180.0).cos();
        let cos_1deg_sq = (c * c) as f32;

        let mut table = [0i64; SCALES * PARAMS];
        let mut consts = [ScaleConsts::default(); SCALES];
        for (s, (p, k)) in table
            .chunks_exact_mut(PARAMS)
            .zip(consts.iter_mut())
            .enumerate()
        {
            Self::scale_params(s, dims[s], dims[s + 1], bpc, &csf, p, k);
        }

        let load = |name: &'static str| module.load_function(name).during(name);
        let dwt_s0 = load("adm_dwt_s0")?;
        let dwt_s1 = load("adm_dwt_s1")?;
        let dwt_s23 = load("adm_dwt_s23")?;
        let decouple_s0 = load("adm_decouple_s0")?;
        let decouple_s123 = load("adm_decouple_s123")?;
        let cm_s0 = load("adm_cm_s0")?;
        let cm_s123 = load("adm_cm_s123")?;
        let ladder_fns = [
            load("adm_dwt_s0_ladder")?,
            load("adm_dwt_s1_ladder")?,
            load("adm_dwt_s23_ladder")?,
            load("adm_decouple_s0_ladder")?,
            load("adm_decouple_s123_ladder")?,
            load("adm_cm_s0_ladder")?,
            load("adm_cm_s123_ladder")?,
        ];

        let params = alloc_copy(stream, &table[..], "AdmGpu params")?;
        let a0_ref = alloc_zeroed::<i16>(stream, band_len, "AdmGpu approximation band")?;
        let a0_dis = alloc_zeroed::<i16>(stream, band_len, "AdmGpu approximation band")?;
        let a1_len = dims[2].0 * dims[2].1;
        let a1_ref = alloc_zeroed::<i32>(stream, a1_len, "AdmGpu approximation band")?;
        let a1_dis = alloc_zeroed::<i32>(stream, a1_len, "AdmGpu approximation band")?;
        let hvd_ref = alloc_zeroed::<i16>(stream, 3 * band_len, "AdmGpu detail bands")?;
        let hvd_dis = alloc_zeroed::<i16>(stream, 3 * band_len, "AdmGpu detail bands")?;
        let dec_r = alloc_zeroed::<i16>(stream, 3 * band_len, "AdmGpu restored bands")?;
        let dec_a = alloc_zeroed::<i16>(stream, 3 * band_len, "AdmGpu additive bands")?;
        let fc = alloc_zeroed::<i32>(stream, 4 * band_len, "AdmGpu masking sums")?;
        Ok(Self {
            width,
            height,
            dims,
            band_len,
            cos_1deg_sq,
            csf_options: (cfg.csf_mode, cfg.norm_view_dist, cfg.ref_display_height),
            consts,
            dwt_s0,
            dwt_s1,
            dwt_s23,
            decouple_s0,
            decouple_s123,
            cm_s0,
            cm_s123,
            params,
            a0_ref,
            a0_dis,
            a1_ref,
            a1_dis,
            hvd_ref,
            hvd_dis,
            dec_r,
            dec_a,
            fc,
            ref_bands: None,
            ladder_fns,
            renditions: None,
        })
    }

    /// Fills the device parameters `p` and host constants `k` of scale `s`, whose DWT input is
    /// `input` and whose bands are `band` (width, height).
    fn scale_params(
        s: usize,
        input: (usize, usize),
        band: (usize, usize),
        bpc: u32,
        csf: &Csf,
        p: &mut [i64],
        k: &mut ScaleConsts,
    ) {
        let (w, h) = band;
        let ext = Region::extended(w, h);
        let reg = Region::scored(w, h);
        let rf = csf.rf.get(s).copied().unwrap_or_default();
        let (sub, sq, cub, shift_inner) = cm_shifts(s == 0, w, h);
        let irf = csf.irf(s);
        let area = reg.area();
        let (den_sq, den_cub, den_row, den_div) = if s == 0 {
            let shift = ((area as f64).log2() - 20.0).ceil().max(0.0) as u32;
            (0, 0, shift, 2.0f64.powf((18 - shift as i32) as f64))
        } else {
            let shift_sq = [31u32, 30, 31].get(s - 1).copied().unwrap_or(31);
            let shift_cub = ceil_u32((reg.width() as f64).log2());
            let shift_acc = ceil_u32((reg.height() as f64).log2());
            let conv = [32u32, 27, 23].get(s - 1).copied().unwrap_or(23);
            let e = conv.wrapping_sub(shift_acc).wrapping_sub(shift_cub);
            (shift_sq, shift_cub, shift_acc, 2.0f64.powf(e as f64))
        };
        let vals: [(usize, i64); 10] = [
            (P_W, w as i64),
            (P_H, h as i64),
            (P_IN_W, input.0 as i64),
            (P_IN_H, input.1 as i64),
            (P_SHIFT_INNER, shift_inner as i64),
            (P_DEN_SHIFT_SQ, den_sq as i64),
            (P_DEN_SHIFT_CUB, den_cub as i64),
            (P_DEN_SHIFT_ROW, den_row as i64),
            (P_SCALE, s as i64),
            (P_BPC, bpc as i64),
        ];
        let rects = [(P_EXT, ext), (P_REG, reg)];
        for (i, v) in vals {
            if let Some(x) = p.get_mut(i) {
                *x = v;
            }
        }
        for (base, r) in rects {
            for (o, v) in [r.top, r.bottom, r.left, r.right].into_iter().enumerate() {
                if let Some(x) = p.get_mut(base + o) {
                    *x = v as i64;
                }
            }
        }
        for b in 0..3 {
            for (base, v) in [
                (P_IRF, irf[b]),
                (P_SUB, sub[b] as i64),
                (P_SQ, sq[b] as i64),
                (P_CUB, cub[b] as i64),
            ] {
                if let Some(x) = p.get_mut(base + b) {
                    *x = v;
                }
            }
        }
        *k = ScaleConsts {
            rf,
            area,
            den_div,
            cub,
            shift_inner,
        };
    }

    /// Enqueues ADM of one frame pair on `stream`.
    ///
    /// `reference`, `distorted`: luma planes of `width * height` samples at `bpc` bits (the
    /// geometry given to [`AdmGpu::new`]; see [`DevPlane`]'s contract). Writes the first
    /// [`AdmGpu::RESULT_WORDS`] words of `out` (integer sums; see [`AdmGpu::scores`]); the rest
    /// of `out` is untouched. No host allocation, no synchronisation: read `out` back after the
    /// stream has passed this point. `cfg` gives the enhancement gain limit; its CSF options
    /// must be those given to [`AdmGpu::new`].
    ///
    /// Errors: `Driver` (`CUDA_ERROR_INVALID_VALUE`) for an `out` shorter than `RESULT_WORDS`
    /// or a `cfg` with other CSF options than `new`'s; `Driver` naming the kernel for a failed
    /// launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        cfg: &AdmConfig,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        self.check_cfg(cfg)?;
        let mut out = Self::zeroed_out(stream, out)?;
        let hvd_ref = self.hvd_ref.device_ptr_mut(stream).0;
        let hvd_dis = self.hvd_dis.device_ptr_mut(stream).0;
        for s in 0..SCALES {
            // DWT of reference and distorted in one launch (grid z = 0, 1).
            let (src_ref, dst_ref) = self.approximations(stream, s, true);
            let (src_dis, dst_dis) = self.approximations(stream, s, false);
            let src = match s {
                0 => DwtSrc::Planes(reference, distorted),
                _ => DwtSrc::Bands(src_ref, src_dis),
            };
            self.dwt(stream, s, src, [dst_ref, dst_dis], [hvd_ref, hvd_dis], 2)?;
            self.decouple_cm(stream, s, hvd_ref, cfg, &mut out)?;
        }
        Ok(())
    }

    /// The reference's detail bands of scales 1..3 a ladder keeps (made once; a pair never
    /// needs them). Called by a ladder backend when it is made.
    ///
    /// Errors: [`CudaError`] from the allocations.
    pub fn prepare_ladder(&mut self, stream: &Arc<CudaStream>) -> Result<(), CudaError> {
        if self.ref_bands.is_none() {
            let what = "AdmGpu reference detail bands";
            let n = 3 * self.band_len;
            self.ref_bands = Some([
                alloc_zeroed::<i16>(stream, n, what)?,
                alloc_zeroed::<i16>(stream, n, what)?,
                alloc_zeroed::<i16>(stream, n, what)?,
            ]);
        }
        Ok(())
    }

    /// [`AdmGpu::enqueue`] of one reference against several distorted planes (a ladder's
    /// renditions), `distorted[i]`'s words into `outs[i]`: the reference's DWT runs once,
    /// every scale of it kept (scale 0's detail bands where the pair path keeps them, scales
    /// 1..3 in the bands of [`AdmGpu::prepare_ladder`], made by the first call if the backend
    /// did not), then each distorted plane's DWT, decoupling
    /// and masking read it. The same kernels on the same coefficients as the pair path: each
    /// `outs[i]` is bit for bit what `enqueue(reference, distorted[i])` writes.
    ///
    /// Errors: as [`AdmGpu::enqueue`]; `Driver` (`CUDA_ERROR_INVALID_VALUE`) when `outs` and
    /// `distorted` differ in length; `OutOfMemory` / `Driver` for the first call's allocation.
    pub fn enqueue_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: &[DevPlane],
        cfg: &AdmConfig,
        outs: &mut [CudaViewMut<u64>],
    ) -> Result<(), CudaError> {
        self.check_cfg(cfg)?;
        if outs.len() != distorted.len() {
            return Err(invalid(
                "AdmGpu::enqueue_ladder (one output per distorted plane)",
            ));
        }
        let ref_hvd = self.enqueue_reference(stream, reference)?;
        for (&dis, out) in distorted.iter().zip(outs.iter_mut()) {
            let mut out = Self::zeroed_out(stream, out)?;
            self.enqueue_rendition(stream, &ref_hvd, dis, cfg, &mut out)?;
        }
        Ok(())
    }

    /// The reference half of [`AdmGpu::enqueue_ladder`]: the reference's DWT of every scale
    /// on `stream`, scale 0's detail bands where the pair path keeps them and scales 1..3 in
    /// the bands of [`AdmGpu::prepare_ladder`] (made here if the backend did not). Returns the
    /// device addresses of the four scales' reference detail bands, for
    /// [`AdmGpu::enqueue_rendition`] (of this or another `AdmGpu` of the same geometry and
    /// CSF options), valid until the next call.
    ///
    /// Errors: `Driver` naming the kernel for a failed launch; `OutOfMemory` / `Driver` for
    /// the first call's allocation.
    pub fn enqueue_reference(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
    ) -> Result<[u64; SCALES], CudaError> {
        self.prepare_ladder(stream)?;
        let mut ref_hvd = [0u64; SCALES];
        ref_hvd[0] = self.hvd_ref.device_ptr_mut(stream).0;
        if let Some(bands) = self.ref_bands.as_mut() {
            for (p, b) in ref_hvd.iter_mut().skip(1).zip(bands.iter_mut()) {
                *p = b.device_ptr_mut(stream).0;
            }
        }
        // Every scale (grid z = 0 only: the reference's arguments).
        for (s, &hvd) in ref_hvd.iter().enumerate() {
            let (src, dst) = self.approximations(stream, s, true);
            let src = match s {
                0 => DwtSrc::Planes(reference, reference),
                _ => DwtSrc::Bands(src, src),
            };
            self.dwt(stream, s, src, [dst, dst], [hvd, hvd], 1)?;
        }
        Ok(ref_hvd)
    }

    /// Allocates the distorted scratch of `n` renditions (at most [`LADDER_MAX`]) for
    /// [`AdmGpu::enqueue_renditions`], on `stream`: a pair's distorted share per rendition
    /// (about 20 MB at 1080p, 80 MB at 2160p). Called by a ladder backend when it is made.
    ///
    /// Errors: [`CudaError`] from the allocations.
    pub fn prepare_renditions(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> Result<(), CudaError> {
        let n = n.clamp(1, LADDER_MAX);
        if self.renditions.as_ref().is_some_and(|r| r.n >= n) {
            return Ok(());
        }
        let a1_len = self.dims[2].0 * self.dims[2].1;
        let bl = self.band_len;
        let what = "AdmGpu rendition scratch";
        self.renditions = Some(RenditionScratch {
            n,
            a0: alloc_zeroed::<i16>(stream, n * bl, what)?,
            a1: alloc_zeroed::<i32>(stream, n * a1_len, what)?,
            hvd: alloc_zeroed::<i16>(stream, n * 3 * bl, what)?,
            dec_r: alloc_zeroed::<i16>(stream, n * 3 * bl, what)?,
            dec_a: alloc_zeroed::<i16>(stream, n * 3 * bl, what)?,
            fc: alloc_zeroed::<i32>(stream, n * 4 * bl, what)?,
        });
        Ok(())
    }

    /// Whether [`AdmGpu::prepare_renditions`] made scratch.
    pub fn has_renditions(&self) -> bool {
        self.renditions.is_some()
    }

    /// The rendition half of [`AdmGpu::enqueue_ladder`] for all `distorted` planes at once, on
    /// `stream`: per scale one DWT, one decoupling and one masking launch over up to
    /// [`AdmGpu::prepare_renditions`]' count of renditions (grid z = rendition), each in its
    /// share of the scratch, against the reference's bands at `ref_hvd`
    /// ([`AdmGpu::enqueue_reference`], enqueued before on `stream`). Adds to the first
    /// [`AdmGpu::RESULT_WORDS`] words of each `outs[i]`, which must be zero. The same kernel
    /// bodies on the same coefficients as [`AdmGpu::enqueue_rendition`]: the same bits.
    ///
    /// Errors: as [`AdmGpu::enqueue`]; `Driver` (`CUDA_ERROR_INVALID_VALUE`) without
    /// prepared scratch or when `outs` and `distorted` differ in length.
    pub fn enqueue_renditions(
        &mut self,
        stream: &Arc<CudaStream>,
        ref_hvd: &[u64; SCALES],
        distorted: &[DevPlane],
        cfg: &AdmConfig,
        outs: &mut [CudaViewMut<u64>],
    ) -> Result<(), CudaError> {
        self.check_cfg(cfg)?;
        if outs.len() != distorted.len() {
            return Err(invalid(
                "AdmGpu::enqueue_renditions (one output per distorted plane)",
            ));
        }
        let Some(group) = self.renditions.as_ref().map(|r| r.n) else {
            return Err(invalid("AdmGpu::enqueue_renditions (no rendition scratch)"));
        };
        for (dis, outs) in distorted.chunks(group).zip(outs.chunks_mut(group)) {
            let mut accs = LadderAccs::default();
            for (a, out) in accs.0.iter_mut().zip(outs.iter_mut()) {
                if out.len() < Self::RESULT_WORDS {
                    return Err(invalid("AdmGpu::enqueue (out shorter than RESULT_WORDS)"));
                }
                *a = out.device_ptr_mut(stream).0;
            }
            let mut planes = LadderPlanes::default();
            planes.0.iter_mut().zip(dis).for_each(|(p, d)| *p = *d);
            for (s, &hvd_ref) in ref_hvd.iter().enumerate() {
                self.renditions_scale(stream, s, &planes, dis.len(), hvd_ref, cfg, &accs)?;
            }
        }
        Ok(())
    }

    /// One scale of [`AdmGpu::enqueue_renditions`] for `n` renditions: DWT, decoupling and
    /// masking launches with grid z = `n`.
    #[allow(clippy::too_many_arguments)]
    fn renditions_scale(
        &self,
        stream: &Arc<CudaStream>,
        s: usize,
        planes: &LadderPlanes,
        n: usize,
        hvd_ref: u64,
        cfg: &AdmConfig,
        accs: &LadderAccs,
    ) -> Result<(), CudaError> {
        let Some(r) = self.renditions.as_ref() else {
            return Err(invalid("AdmGpu::enqueue_renditions (no rendition scratch)"));
        };
        let z = u32::try_from(n.min(r.n)).unwrap_or(1);
        let (w, h) = self.dims[s + 1];
        let bl = self.band_len as i64;
        let a1_len = (self.dims[2].0 * self.dims[2].1) as i64;
        // Band stride in elements of the scale's type (i16 at scale 0, i32 after), as the
        // pair kernels take it; one rendition's detail / restored / additive bands are three
        // of them, its masking sums 4 * band_len i32 at every scale.
        let mut stride = if s == 0 { bl } else { bl / 2 };
        let mut dis_stride = 3 * stride;
        let mut fc_stride = 4 * bl;
        let params = self
            .params
            .try_slice(s * PARAMS..(s + 1) * PARAMS)
            .ok_or_else(|| invalid("AdmGpu::enqueue (parameter table)"))?;
        let mut p = params.device_ptr(stream).0;
        let a0 = r.a0.device_ptr(stream).0;
        let a1 = r.a1.device_ptr(stream).0;
        let mut hvd = r.hvd.device_ptr(stream).0;
        let mut dec_r = r.dec_r.device_ptr(stream).0;
        let mut dec_a = r.dec_a.device_ptr(stream).0;
        let mut fc = r.fc.device_ptr(stream).0;
        let [dwt0, dwt1, dwt23, dec0, dec123, cm0, cm123] = &self.ladder_fns;

        // 1. DWT: scale s reads the approximation band scale s - 1 wrote (a0 at s = 1, 3;
        // a1 at s = 2) and writes the other one (a0 at s = 0, 2; a1 at s = 1, 3), strides in
        // elements of each band's type: a0 is band_len i16 (band_len / 2 i32) per rendition,
        // a1 a1_len i32.
        let grid = (dim(w).div_ceil(TILE.0), dim(h).div_ceil(TILE.1), z);
        let block = (TILE.0, TILE.1, 1);
        let (mut a_out, mut a_stride) = if s.is_multiple_of(2) {
            (a0, if s == 0 { bl } else { bl / 2 })
        } else {
            (a1, a1_len)
        };
        let (mut src, mut src_stride) = match s {
            1 => (a0, bl),
            2 => (a1, a1_len),
            _ => (a0, bl / 2),
        };
        let mut band_len = stride;
        let mut planes = *planes;
        let mut hvd_stride = dis_stride;
        // SAFETY: adm_dwt_s0_ladder(AdmLadderPlanes dis, int16_t* a, int64_t a_stride,
        // int16_t* hvd, int64_t hvd_stride, int64_t band_len, const int64_t* params) and
        // adm_dwt_s1_ladder / _s23_ladder(const T* src, int64_t src_stride, int32_t* a,
        // int64_t a_stride, int32_t* hvd, int64_t hvd_stride, int64_t band_len,
        // const int64_t* p): block z < n <= r.n touches rendition z's share only; the first
        // n planes hold width * height samples (the caller's contract); each share is sized
        // as a pair's buffer (prepare_renditions); params PARAMS i64.
        unsafe {
            if s == 0 {
                launch(
                    stream,
                    dwt0,
                    grid,
                    block,
                    &mut [
                        param(&mut planes),
                        param(&mut a_out),
                        param(&mut a_stride),
                        param(&mut hvd),
                        param(&mut hvd_stride),
                        param(&mut band_len),
                        param(&mut p),
                    ],
                    "cuLaunchKernel(adm_dwt_s0_ladder)",
                )?;
            } else {
                launch(
                    stream,
                    if s == 1 { dwt1 } else { dwt23 },
                    grid,
                    block,
                    &mut [
                        param(&mut src),
                        param(&mut src_stride),
                        param(&mut a_out),
                        param(&mut a_stride),
                        param(&mut hvd),
                        param(&mut hvd_stride),
                        param(&mut band_len),
                        param(&mut p),
                    ],
                    "cuLaunchKernel(adm_dwt_ladder)",
                )?;
            }
        }

        // 2. Decouple and CSF over the extended region.
        let gain = cfg.enhn_gain_limit;
        let mut int_gain: i32 = (gain.fract() == 0.0 && (1.0..=1048576.0).contains(&gain)).into();
        let mut gain_i = gain as i64;
        let mut gain = gain;
        let mut cos_sq = self.cos_1deg_sq as f64;
        let mut hvd_ref = hvd_ref;
        let ext = Region::extended(w, h);
        if ext.width() > 0 && ext.height() > 0 {
            let grid = (
                dim(ext.width()).div_ceil(TILE.0),
                dim(ext.height()).div_ceil(TILE.1),
                z,
            );
            // SAFETY: adm_decouple_s0_ladder / _s123_ladder(const T* hvd_ref,
            // const T* hvd_dis, T* dec_r, T* dec_a, int64_t dis_stride, int32_t* fc,
            // int64_t fc_stride, int64_t band_len, const int64_t* p, double cos_sq,
            // double gain, int64_t gain_i, int32_t int_gain): rendition z's bands
            // z * dis_stride T and its sums z * fc_stride i32 past each base, within the
            // shares prepare_renditions made; hvd_ref this scale's reference bands.
            unsafe {
                launch(
                    stream,
                    if s == 0 { dec0 } else { dec123 },
                    grid,
                    block,
                    &mut [
                        param(&mut hvd_ref),
                        param(&mut hvd),
                        param(&mut dec_r),
                        param(&mut dec_a),
                        param(&mut dis_stride),
                        param(&mut fc),
                        param(&mut fc_stride),
                        param(&mut stride),
                        param(&mut p),
                        param(&mut cos_sq),
                        param(&mut gain),
                        param(&mut gain_i),
                        param(&mut int_gain),
                    ],
                    "cuLaunchKernel(adm_decouple_ladder)",
                )?;
            }
        }

        // 3. CM numerators and denominator, one block per scored row and rendition.
        let reg = Region::scored(w, h);
        if reg.width() > 0 && reg.height() > 0 {
            let threads = dim(reg.width()).div_ceil(32).clamp(1, ROW_THREADS / 32) * 32;
            let mut accs = *accs;
            for a in accs.0.iter_mut().take(z as usize) {
                *a += (s * WORDS_PER_SCALE * 8) as u64;
            }
            let mut count = z as i32;
            // SAFETY: adm_cm_s0_ladder / _s123_ladder(const T* hvd_ref, const T* dec_r,
            // const T* dec_a, int64_t dis_stride, const int32_t* fc, int64_t fc_stride,
            // int64_t band_len, const int64_t* p, AdmLadderAccs acc, int32_t n): scratch as
            // above; acc.p[z] (z < n) the 9 u64 words of this scale in rendition z's output
            // (`outs`, at least RESULT_WORDS each, alive until the stream has run; block
            // z = 0 adds the reference's denominator to all n of them); blockDim.x is a
            // multiple of 32 <= 256.
            unsafe {
                launch(
                    stream,
                    if s == 0 { cm0 } else { cm123 },
                    (dim(reg.height()), 1, z),
                    (threads, 1, 1),
                    &mut [
                        param(&mut hvd_ref),
                        param(&mut dec_r),
                        param(&mut dec_a),
                        param(&mut dis_stride),
                        param(&mut fc),
                        param(&mut fc_stride),
                        param(&mut stride),
                        param(&mut p),
                        param(&mut accs),
                        param(&mut count),
                    ],
                    "cuLaunchKernel(adm_cm_ladder)",
                )?;
            }
        }
        Ok(())
    }

    /// The rendition half of [`AdmGpu::enqueue_ladder`] for one distorted plane, in this
    /// `AdmGpu`'s distorted scratch, on `stream`: its DWT (passed as the launch's first frame),
    /// then the decoupling and masking of each scale against the reference's bands at
    /// `ref_hvd` ([`AdmGpu::enqueue_reference`], which `stream` must have waited for), added
    /// to the first [`AdmGpu::RESULT_WORDS`] words of `out`, which must be zero (as
    /// [`AdmGpu::enqueue`] writes them from zero). Renditions on different streams each need
    /// an `AdmGpu` of their own: the scratch is used in `stream`'s order.
    ///
    /// Errors: as [`AdmGpu::enqueue`].
    pub fn enqueue_rendition(
        &mut self,
        stream: &Arc<CudaStream>,
        ref_hvd: &[u64; SCALES],
        distorted: DevPlane,
        cfg: &AdmConfig,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        self.check_cfg(cfg)?;
        let hvd_dis = self.hvd_dis.device_ptr_mut(stream).0;
        let mut out = out
            .try_slice_mut(..Self::RESULT_WORDS)
            .ok_or_else(|| invalid("AdmGpu::enqueue (out shorter than RESULT_WORDS)"))?;
        for (s, &hvd_ref) in ref_hvd.iter().enumerate() {
            let (src, dst) = self.approximations(stream, s, false);
            let src = match s {
                0 => DwtSrc::Planes(distorted, distorted),
                _ => DwtSrc::Bands(src, src),
            };
            self.dwt(stream, s, src, [dst, dst], [hvd_dis, hvd_dis], 1)?;
            self.decouple_cm(stream, s, hvd_ref, cfg, &mut out)?;
        }
        Ok(())
    }

    /// `Driver` (`CUDA_ERROR_INVALID_VALUE`) for a `cfg` with other CSF options than `new`'s.
    fn check_cfg(&self, cfg: &AdmConfig) -> Result<(), CudaError> {
        if (cfg.csf_mode, cfg.norm_view_dist, cfg.ref_display_height) != self.csf_options {
            return Err(invalid(
                "AdmGpu::enqueue (CSF options differ from those given to AdmGpu::new)",
            ));
        }
        Ok(())
    }

    /// The first `RESULT_WORDS` words of `out`, zeroed on `stream`.
    fn zeroed_out<'a>(
        stream: &Arc<CudaStream>,
        out: &'a mut CudaViewMut<u64>,
    ) -> Result<CudaViewMut<'a, u64>, CudaError> {
        let mut out = out
            .try_slice_mut(..Self::RESULT_WORDS)
            .ok_or_else(|| invalid("AdmGpu::enqueue (out shorter than RESULT_WORDS)"))?;
        stream
            .memset_zeros(&mut out)
            .during("cuMemsetD8Async(adm results)")?;
        Ok(out)
    }

    /// The approximation bands scale `s` reads (scales 1..3; unused at scale 0) and writes,
    /// of the reference (`reference`) or the distorted frame: scale s writes a0 (even s) or
    /// a1 (odd s) and reads the other one.
    fn approximations(
        &mut self,
        stream: &Arc<CudaStream>,
        s: usize,
        reference: bool,
    ) -> (u64, u64) {
        let (a0, a1) = if reference {
            (&mut self.a0_ref, &mut self.a1_ref)
        } else {
            (&mut self.a0_dis, &mut self.a1_dis)
        };
        if s % 2 == 1 {
            (a0.device_ptr(stream).0, a1.device_ptr_mut(stream).0)
        } else {
            (a1.device_ptr(stream).0, a0.device_ptr_mut(stream).0)
        }
    }

    /// One DWT launch of scale `s` over `frames` (1 or 2) frames: frame `z` reads `src`'s
    /// `z`-th plane or band and writes `a[z]` and `hvd[z]`.
    fn dwt(
        &self,
        stream: &Arc<CudaStream>,
        s: usize,
        src: DwtSrc,
        a: [u64; 2],
        hvd: [u64; 2],
        frames: u32,
    ) -> Result<(), CudaError> {
        let (w, h) = self.dims[s + 1];
        let band_len = self.band_len as i64;
        // Band stride in elements of the scale's type (i16 at scale 0, i32 after).
        let stride = if s == 0 { band_len } else { band_len / 2 };
        let params = self
            .params
            .try_slice(s * PARAMS..(s + 1) * PARAMS)
            .ok_or_else(|| invalid("AdmGpu::enqueue (parameter table)"))?;
        let grid = LaunchConfig {
            grid_dim: (
                dim(w).div_ceil(TILE.0),
                dim(h).div_ceil(TILE.1),
                frames.clamp(1, 2),
            ),
            block_dim: (TILE.0, TILE.1, 1),
            shared_mem_bytes: 0,
        };
        // Scale 0 reads the input planes (`Plane` descriptors), scale 1 the `i16` band of
        // scale 0 and scales 2-3 the `i32` band before; otherwise the kernels take the same
        // arguments.
        let (mut in_ref, mut in_dis, mut p_ref, mut p_dis) = match src {
            DwtSrc::Planes(r, d) => (r, d, 0u64, 0u64),
            DwtSrc::Bands(r, d) => (DevPlane::default(), DevPlane::default(), r, d),
        };
        let (f, a0, a1, call) = match s {
            0 => (
                &self.dwt_s0,
                param(&mut in_ref),
                param(&mut in_dis),
                "cuLaunchKernel(adm_dwt_s0)",
            ),
            1 => (
                &self.dwt_s1,
                param(&mut p_ref),
                param(&mut p_dis),
                "cuLaunchKernel(adm_dwt_s1)",
            ),
            _ => (
                &self.dwt_s23,
                param(&mut p_ref),
                param(&mut p_dis),
                "cuLaunchKernel(adm_dwt_s23)",
            ),
        };
        let [mut a2, mut a3] = a;
        let [mut a4, mut a5] = hvd;
        let mut a6 = stride;
        let mut a7 = params.device_ptr(stream).0;
        // SAFETY: adm_dwt_s0(Plane ref, Plane dis, int16_t* a_ref, int16_t* a_dis,
        // int16_t* hvd_ref, int16_t* hvd_dis, ...), adm_dwt_s1(const int16_t* src_ref,
        // const int16_t* src_dis, int32_t* a_ref, int32_t* a_dis, int32_t* hvd_ref,
        // int32_t* hvd_dis, ...) and adm_dwt_s23 (as s1 with int32_t sources), all ending
        // (int64_t band_len, const int64_t* params); block z reads and writes only the z-th
        // of each pair (z < frames): the input planes hold width*height samples (the
        // caller's contract); the approximation outputs a0_* hold band_len i16 (scale 0's
        // band, or dims[3] <= band_len / 2 i32), a1_* dims[2] i32 (scale 1's band or
        // dims[4]); the source is the other buffer; each hvd output holds 3*band_len i16 =
        // 3*stride elements of the scale's type, each band at most stride coefficients
        // (checked in `new`); params PARAMS i64. a0/a1 point at locals that outlive the
        // launch.
        unsafe {
            launch(
                stream,
                f,
                grid.grid_dim,
                grid.block_dim,
                &mut [
                    a0,
                    a1,
                    param(&mut a2),
                    param(&mut a3),
                    param(&mut a4),
                    param(&mut a5),
                    param(&mut a6),
                    param(&mut a7),
                ],
                call,
            )
        }
    }

    /// Decoupling, CSF and masking sums of scale `s` of the distorted frame whose detail
    /// bands are in `hvd_dis` against the reference's at device address `hvd_ref`, into
    /// `out`'s words of that scale.
    fn decouple_cm(
        &mut self,
        stream: &Arc<CudaStream>,
        s: usize,
        hvd_ref: u64,
        cfg: &AdmConfig,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        let gain = cfg.enhn_gain_limit;
        let int_gain: i32 = (gain.fract() == 0.0 && (1.0..=1048576.0).contains(&gain)).into();
        let gain_i = gain as i64;
        let cos_sq = self.cos_1deg_sq as f64;
        let band_len = self.band_len as i64;
        let (w, h) = self.dims[s + 1];
        let stride = if s == 0 { band_len } else { band_len / 2 };
        let params = self
            .params
            .try_slice(s * PARAMS..(s + 1) * PARAMS)
            .ok_or_else(|| invalid("AdmGpu::enqueue (parameter table)"))?;
        let mut acc = out
            .try_slice_mut(s * WORDS_PER_SCALE..(s + 1) * WORDS_PER_SCALE)
            .ok_or_else(|| invalid("AdmGpu::enqueue (out shorter than RESULT_WORDS)"))?;

        // 2. Decouple and CSF over the extended region.
        let ext = Region::extended(w, h);
        if ext.width() > 0 && ext.height() > 0 {
            let grid = LaunchConfig {
                grid_dim: (
                    dim(ext.width()).div_ceil(TILE.0),
                    dim(ext.height()).div_ceil(TILE.1),
                    1,
                ),
                block_dim: (TILE.0, TILE.1, 1),
                shared_mem_bytes: 0,
            };
            let f = if s == 0 {
                &self.decouple_s0
            } else {
                &self.decouple_s123
            };
            let mut a0 = hvd_ref;
            let mut a1 = self.hvd_dis.device_ptr(stream).0;
            let mut a2 = self.dec_r.device_ptr_mut(stream).0;
            let mut a3 = self.dec_a.device_ptr_mut(stream).0;
            let mut a4 = self.fc.device_ptr_mut(stream).0;
            let mut a5 = stride;
            let mut a6 = params.device_ptr(stream).0;
            let mut a7 = cos_sq;
            let mut a8 = gain;
            let mut a9 = gain_i;
            let mut a10 = int_gain;
            // SAFETY: adm_decouple_s0/_s123(const T* hvd_ref, const T* hvd_dis, T* dec_r,
            // T* dec_a, int32_t* fc, int64_t band_len, const int64_t* params,
            // double cos_sq, double gain, int64_t gain_i, int32_t int_gain), T = int16_t at
            // scale 0 and int32_t after: hvd_ref (this scale's reference bands: `hvd_ref`
            // or a ladder's `ref_bands`), hvd_dis, dec_* hold 3*stride T and fc 4*band_len
            // >= 4*stride i32; the kernel touches only the extended region of this scale's
            // w x h (<= stride) bands.
            unsafe {
                launch(
                    stream,
                    f,
                    grid.grid_dim,
                    grid.block_dim,
                    &mut [
                        param(&mut a0),
                        param(&mut a1),
                        param(&mut a2),
                        param(&mut a3),
                        param(&mut a4),
                        param(&mut a5),
                        param(&mut a6),
                        param(&mut a7),
                        param(&mut a8),
                        param(&mut a9),
                        param(&mut a10),
                    ],
                    "cuLaunchKernel(adm_decouple)",
                )
            }?;
        }

        // 3. CM numerators and denominator, one block per scored row.
        let reg = Region::scored(w, h);
        if reg.width() > 0 && reg.height() > 0 {
            let threads = dim(reg.width()).div_ceil(32).clamp(1, ROW_THREADS / 32) * 32;
            let grid = LaunchConfig {
                grid_dim: (dim(reg.height()), 1, 1),
                block_dim: (threads, 1, 1),
                shared_mem_bytes: 0,
            };
            let f = if s == 0 { &self.cm_s0 } else { &self.cm_s123 };
            let mut a0 = hvd_ref;
            let mut a1 = self.dec_r.device_ptr(stream).0;
            let mut a2 = self.dec_a.device_ptr(stream).0;
            let mut a3 = self.fc.device_ptr(stream).0;
            let mut a4 = stride;
            let mut a5 = params.device_ptr(stream).0;
            let mut a6 = acc.device_ptr_mut(stream).0;
            // SAFETY: adm_cm_s0/_s123(const T* hvd_ref, const T* dec_r, const T* dec_a,
            // const int32_t* fc, int64_t band_len,
            // const int64_t* params, unsigned long long* acc): buffers as above, acc is
            // the 9 u64 words of this scale; blockDim.x is a multiple of 32 <= 256.
            unsafe {
                launch(
                    stream,
                    f,
                    grid.grid_dim,
                    grid.block_dim,
                    &mut [
                        param(&mut a0),
                        param(&mut a1),
                        param(&mut a2),
                        param(&mut a3),
                        param(&mut a4),
                        param(&mut a5),
                        param(&mut a6),
                    ],
                    "cuLaunchKernel(adm_cm)",
                )
            }?;
        }
        Ok(())
    }

    /// Host-side finish from the [`AdmGpu::RESULT_WORDS`] words read back from `out`:
    /// bit-identical to `super::cpu::Adm::compute` for the same frame pair and `cfg` (whose
    /// noise weight, DLM weight and minimum apply here; its CSF options are `new`'s).
    ///
    /// Returns all-zero scores if `words` is shorter than `RESULT_WORDS`.
    pub fn scores(&self, words: &[u64], cfg: &AdmConfig) -> AdmScores {
        let Some(words) = words.get(..Self::RESULT_WORDS) else {
            return AdmScores::default();
        };
        let mut per_scale = [(0.0f32, 0.0f32, 0.0f32); 4];
        for (s, (w, c)) in words
            .chunks_exact(WORDS_PER_SCALE)
            .zip(self.consts.iter())
            .enumerate()
        {
            let den_acc = [w[0], w[1], w[2]];
            let dlm_acc = [w[3] as i64, w[4] as i64, w[5] as i64];
            let aim_acc = [w[6] as i64, w[7] as i64, w[8] as i64];
            let d = den_finish(den_acc, c.den_div, c.rf, c.area, cfg.noise_weight);
            let n = cm_finish(dlm_acc, s, c, cfg.noise_weight);
            let a = cm_finish(aim_acc, s, c, 0.0);
            if let Some(slot) = per_scale.get_mut(s) {
                *slot = (n, d, a);
            }
        }

        finish_scores(self.width, self.height, per_scale, cfg)
    }
}
