//! Float ADM on the GPU: host side of `kernels/float_adm.cu`.
//!
//! Per frame, for each of the four scales, two kernels (`float_adm_dwt_*`: DWT, decoupling,
//! CSF and denominator terms, one thread per coefficient; `float_adm_cm`: masking and the
//! row sums, one block per scored row), then one `float_adm_finish` summing each scale's rows
//! in row order into the 36 result words; [`FloatAdmGpu::scores`] pools and combines them on
//! the host with the CPU half's functions. Nine launches, no host allocation, no
//! synchronisation. The values differ from the CPU half (`super::cpu`) by a few 1e-7: the
//! DWT is bit for bit the CPU's, the rest is `f32` in another summation order (see the
//! kernel's header).

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaModule, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::super::adm::Region;
use super::params::{cos_1deg_sq, finish, pool, MIN_SIZE, SCALES};
use super::FloatAdmConfig;
use crate::cuda::context::{launch, param};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::DevPlane;

/// Values per scale (and per row): den h, v, d, DLM h, v, d, AIM h, v, d.
const VALUES: usize = 9;
/// Band planes in the multi-plane buffer (`kernels/float_adm.cu`, "Plane storage").
const PLANES: usize = 9;
/// Integer and float parameters per scale (`INT_PARAMS`, `FLOAT_PARAMS` in the kernel).
const INT_PARAMS: usize = 16;
const FLOAT_PARAMS: usize = 8;
const Q_IN_W: usize = 0;
const Q_IN_H: usize = 1;
const Q_W: usize = 2;
const Q_H: usize = 3;
const Q_EXT: usize = 4;
const Q_REG: usize = 8;
const Q_LO_ONLY: usize = 12;
const Q_CUBE: usize = 13;
const Q_BYPASS: usize = 14;
const Q_ROWS_AT: usize = 15;
const F_RF: usize = 0;
const F_GAIN: usize = 3;
const F_COS_SQ: usize = 4;
const F_P: usize = 5;
const F_SCALE_IN: usize = 6;
/// Threads of the per-row kernel (`CM_THREADS`).
const CM_THREADS: u32 = 256;
/// Block of the per-coefficient kernels.
const TILE: (u32, u32) = (32, 8);

/// An invalid argument, reported as `CUDA_ERROR_INVALID_VALUE` of `call`.
fn invalid(call: &'static str) -> CudaError {
    CudaError::Driver {
        call,
        code: "CUDA_ERROR_INVALID_VALUE".to_owned(),
    }
}

/// `u32` of a launch dimension.
fn dim(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// Float ADM on the GPU for one frame geometry and option set: kernels and all device
/// scratch.
///
/// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/adm.c (`compute_adm`), through the CPU
/// half `super::cpu`.
pub struct FloatAdmGpu {
    width: usize,
    height: usize,
    cfg: FloatAdmConfig,
    /// `dims[s]`: DWT input of scale `s`; `dims[s + 1]` its bands.
    dims: [(usize, usize); SCALES + 1],
    /// Floats between two planes of `bands` (one scale-0 band).
    plane_len: usize,
    dwt_s0: CudaFunction,
    dwt_s123: CudaFunction,
    cm: CudaFunction,
    finish: CudaFunction,
    /// Per-scale parameter tables.
    q: DeviceAlloc<i64>,
    f: DeviceAlloc<f32>,
    /// Approximation bands, ping-pong between scales (scale `s` writes `a[s % 2]`).
    a_ref: [DeviceAlloc<f32>; 2],
    a_dis: [DeviceAlloc<f32>; 2],
    /// The [`PLANES`] band planes of the current scale.
    bands: DeviceAlloc<f32>,
    /// Row sums of every scale, [`VALUES`] per scored row.
    rows: DeviceAlloc<f32>,
}

impl FloatAdmGpu {
    /// `u64` words per frame: per scale the 9 sums (den, DLM, AIM of h, v, d) as `f32` bits.
    pub const RESULT_WORDS: usize = SCALES * VALUES;

    /// Loads the kernels from `module` (the PTX of `kernels/float_adm.cu`) and allocates the
    /// scratch for `width` x `height` luma planes of `bpc` bits with the options `cfg`, on
    /// `stream`: 13 floats per scale-0 coefficient (27 MB at 1920x1080).
    ///
    /// Errors: `Driver` (`CUDA_ERROR_INVALID_VALUE`) for a frame below 17x17 or a `bpc`
    /// outside `8..=16`; `Driver` naming the kernel when the module lacks it; `OutOfMemory` /
    /// `Driver` for a failed allocation or upload.
    pub fn new(
        module: &Arc<CudaModule>,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
        cfg: &FloatAdmConfig,
    ) -> Result<Self, CudaError> {
        if width < MIN_SIZE || height < MIN_SIZE {
            return Err(invalid("FloatAdmGpu::new (frame smaller than 17x17)"));
        }
        if !(8..=16).contains(&bpc) {
            return Err(invalid("FloatAdmGpu::new (bpc outside 8..=16)"));
        }
        let mut dims = [(width, height); SCALES + 1];
        for s in 1..=SCALES {
            let (w, h) = dims[s - 1];
            dims[s] = (w.div_ceil(2), h.div_ceil(2));
        }
        let plane_len = dims[1].0 * dims[1].1;
        let mut q = [0i64; SCALES * INT_PARAMS];
        let mut f = [0f32; SCALES * FLOAT_PARAMS];
        let mut rows_at = 0usize;
        for s in 0..SCALES {
            let (bw, bh) = dims[s + 1];
            let ext = Region::extended(bw, bh);
            let reg = Region::scored(bw, bh);
            let qs = &mut q[s * INT_PARAMS..(s + 1) * INT_PARAMS];
            qs[Q_IN_W] = dims[s].0 as i64;
            qs[Q_IN_H] = dims[s].1 as i64;
            qs[Q_W] = bw as i64;
            qs[Q_H] = bh as i64;
            for (base, r) in [(Q_EXT, ext), (Q_REG, reg)] {
                for (o, v) in [r.top, r.bottom, r.left, r.right].into_iter().enumerate() {
                    qs[base + o] = v as i64;
                }
            }
            qs[Q_LO_ONLY] = i64::from(s == 0 && cfg.skip_scale0);
            qs[Q_CUBE] = i64::from(cfg.p_norm == 3.0);
            qs[Q_BYPASS] = i64::from(cfg.bypass_cm != 0);
            qs[Q_ROWS_AT] = rows_at as i64;
            rows_at += reg.height();
            let fs = &mut f[s * FLOAT_PARAMS..(s + 1) * FLOAT_PARAMS];
            fs[F_RF..F_RF + 3].copy_from_slice(&cfg.rfactor(s));
            fs[F_GAIN] = cfg.enhn_gain_limit as f32;
            fs[F_COS_SQ] = cos_1deg_sq();
            fs[F_P] = cfg.p_norm as f32;
            fs[F_SCALE_IN] = 1.0 / (1u32 << (bpc - 8)) as f32;
        }
        let load = |name: &'static str| module.load_function(name).during(name);
        let what = "FloatAdmGpu scratch";
        Ok(Self {
            width,
            height,
            cfg: *cfg,
            dims,
            plane_len,
            dwt_s0: load("float_adm_dwt_s0")?,
            dwt_s123: load("float_adm_dwt_s123")?,
            cm: load("float_adm_cm")?,
            finish: load("float_adm_finish")?,
            q: alloc_copy(stream, &q[..], "FloatAdmGpu params")?,
            f: alloc_copy(stream, &f[..], "FloatAdmGpu params")?,
            a_ref: [
                alloc_zeroed(stream, plane_len, what)?,
                alloc_zeroed(stream, plane_len, what)?,
            ],
            a_dis: [
                alloc_zeroed(stream, plane_len, what)?,
                alloc_zeroed(stream, plane_len, what)?,
            ],
            bands: alloc_zeroed(stream, PLANES * plane_len, what)?,
            rows: alloc_zeroed(stream, (rows_at * VALUES).max(1), what)?,
        })
    }

    /// Enqueues float ADM of one frame pair on `stream`: `reference`, `distorted` are luma
    /// planes of the geometry given to [`FloatAdmGpu::new`] (see [`DevPlane`]'s contract).
    /// Writes the first [`FloatAdmGpu::RESULT_WORDS`] words of `out`; read them back after the
    /// stream has passed this point and give them to [`FloatAdmGpu::scores`].
    ///
    /// Errors: `Driver` (`CUDA_ERROR_INVALID_VALUE`) for an `out` shorter than
    /// `RESULT_WORDS`; `Driver` naming the kernel for a failed launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        let mut out = out
            .try_slice_mut(..Self::RESULT_WORDS)
            .ok_or_else(|| invalid("FloatAdmGpu::enqueue (out shorter than RESULT_WORDS)"))?;
        let q0 = self.q.device_ptr(stream).0;
        let f0 = self.f.device_ptr(stream).0;
        let mut bands = self.bands.device_ptr_mut(stream).0;
        let mut rows = self.rows.device_ptr_mut(stream).0;
        let mut plane_len = self.plane_len as i64;
        let a_ref = self.a_ref.each_mut().map(|a| a.device_ptr_mut(stream).0);
        let a_dis = self.a_dis.each_mut().map(|a| a.device_ptr_mut(stream).0);
        for s in 0..SCALES {
            let (bw, bh) = self.dims[s + 1];
            let mut qs = q0 + (s * INT_PARAMS * 8) as u64;
            let mut fs = f0 + (s * FLOAT_PARAMS * 4) as u64;
            let mut dst_ref = a_ref[s % 2];
            let mut dst_dis = a_dis[s % 2];
            let grid = (dim(bw).div_ceil(TILE.0), dim(bh).div_ceil(TILE.1), 1);
            let block = (TILE.0, TILE.1, 1);
            let (mut in_ref, mut in_dis) = (reference, distorted);
            let (mut src_ref, mut src_dis) = (a_ref[1 - s % 2], a_dis[1 - s % 2]);
            let (func, first, second, call) = if s == 0 {
                (
                    &self.dwt_s0,
                    param(&mut in_ref),
                    param(&mut in_dis),
                    "cuLaunchKernel(float_adm_dwt_s0)",
                )
            } else {
                (
                    &self.dwt_s123,
                    param(&mut src_ref),
                    param(&mut src_dis),
                    "cuLaunchKernel(float_adm_dwt_s123)",
                )
            };
            // SAFETY: float_adm_dwt_s0(Plane ref, Plane dis, ...) / float_adm_dwt_s123(const
            // float* src_ref, const float* src_dis, ...), both then (float* a_ref, float*
            // a_dis, float* bands, int64_t plane_len, const int64_t* q, const float* f): the
            // planes hold the geometry's samples (caller's contract); the sources are the
            // other ping-pong buffers, holding the previous scale's dims[s] bands (<=
            // plane_len floats); a_* hold plane_len >= bw * bh floats; bands holds PLANES *
            // plane_len floats; q and f point at this scale's INT_PARAMS i64 and
            // FLOAT_PARAMS f32. The locals outlive the launch.
            unsafe {
                launch(
                    stream,
                    func,
                    grid,
                    block,
                    &mut [
                        first,
                        second,
                        param(&mut dst_ref),
                        param(&mut dst_dis),
                        param(&mut bands),
                        param(&mut plane_len),
                        param(&mut qs),
                        param(&mut fs),
                    ],
                    call,
                )
            }?;
            let reg = Region::scored(bw, bh);
            if (s == 0 && self.cfg.skip_scale0) || reg.width() == 0 || reg.height() == 0 {
                continue;
            }
            // SAFETY: float_adm_cm(const float* bands, int64_t plane_len, const int64_t* q,
            // const float* f, float* rows): bands as above; one block per scored row, each
            // writing VALUES floats at row slot Q_ROWS_AT + blockIdx.x < the rows buffer's
            // length / VALUES (sized in `new` as the sum of the scored heights).
            unsafe {
                launch(
                    stream,
                    &self.cm,
                    (dim(reg.height()), 1, 1),
                    (CM_THREADS, 1, 1),
                    &mut [
                        param(&mut bands),
                        param(&mut plane_len),
                        param(&mut qs),
                        param(&mut fs),
                        param(&mut rows),
                    ],
                    "cuLaunchKernel(float_adm_cm)",
                )
            }?;
        }
        let mut q = q0;
        let mut o = out.device_ptr_mut(stream).0;
        // SAFETY: float_adm_finish(const float* rows, const int64_t* q, unsigned long long*
        // out): rows and q as above (all SCALES tables), out holds RESULT_WORDS = 36 words,
        // one per thread of the single 64-thread block (threads >= 36 return).
        unsafe {
            launch(
                stream,
                &self.finish,
                (1, 1, 1),
                (64, 1, 1),
                &mut [param(&mut rows), param(&mut q), param(&mut o)],
                "cuLaunchKernel(float_adm_finish)",
            )
        }
    }

    /// `adm2`, `aim`, `adm3`, `adm_scale0..3` from the words [`FloatAdmGpu::enqueue`] wrote:
    /// each scale's sums pooled ([`super::pool`]) and combined ([`super::finish`]) as the CPU
    /// half does. All zero when `words` is shorter than `RESULT_WORDS`.
    pub fn scores(&self, words: &[u64]) -> [f64; 7] {
        let Some(words) = words.get(..Self::RESULT_WORDS) else {
            return [0.0; 7];
        };
        let cfg = &self.cfg;
        let mut per_scale = [(0.0f32, 0.0f32, 0.0f32); SCALES];
        for (s, (slot, w)) in per_scale
            .iter_mut()
            .zip(words.chunks_exact(VALUES))
            .enumerate()
        {
            if s == 0 && cfg.skip_scale0 {
                *slot = (0.0, 1e-10, 0.0);
                continue;
            }
            let v = |k: usize| f32::from_bits(w[k] as u32);
            let (bw, bh) = self.dims[s + 1];
            let area = Region::scored(bw, bh).area() as usize;
            let den = pool([v(0), v(1), v(2)], area, cfg.noise_weight, cfg.p_norm);
            let num = pool([v(3), v(4), v(5)], area, cfg.noise_weight, cfg.p_norm);
            let aim = pool([v(6), v(7), v(8)], area, 0.0, cfg.p_norm);
            *slot = (num, den, aim);
        }
        finish(self.width, self.height, &per_scale, cfg)
    }
}
