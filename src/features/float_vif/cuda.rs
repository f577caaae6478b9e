//! Host side of `kernels/float_vif.cu`: libvmaf's `float_vif` on the GPU.
//!
//! The kernels compute every per-pixel value exactly as the CPU half does (explicitly rounded
//! `f32` operations in the same order, the statistic's `double` steps, the polynomial log2),
//! so the filtered planes and each pixel's `num` and `den` are the CPU's bits; the sums over
//! a scale are taken per block in `f64` and added in a fixed order (the CPU adds `f32` row
//! sums, as libvmaf does). Scores differ from the CPU's by the rounding of libvmaf's `f32`
//! sums, about 1e-6 at most, and are the same bits on every run.
//!
//! Per frame (no allocation, no host synchronisation): `fvif_stats` for scale 0, then per
//! scale 1..3 `fvif_decimate` and `fvif_stats`, then `fvif_reduce` (8 launches).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/vif.c, vif_tools.c; oracle: [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::params::{FloatVifConfig, Scales, FEATURE, SCALES};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{check_size, DevPlane};

const BLOCK: (u32, u32, u32) = (32, 8, 1);
/// Output tile of both kernels (columns x rows).
const TILE: (usize, usize) = (32, 16);
/// Largest filter the kernels' shared tiles hold (`MAXTAPS`).
const MAX_TAPS: usize = 17;

/// `struct Src` of the kernel (48 bytes): the input plane when `img == 0`, else a packed
/// `f32` image.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Src {
    plane: DevPlane,
    img: u64,
    scale: f32,
    pad: u32,
}

/// `struct Taps` (72 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Taps {
    f: [f32; MAX_TAPS],
    n: i32,
}

/// `struct Stat` (16 bytes).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Stat {
    sigma_nsq: f64,
    egl: f32,
    sigma_max_inv: f32,
}

/// `struct Ranges` (32 bytes): each scale's first block and block count in `partial`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct Ranges {
    first: [i32; SCALES],
    blocks: [i32; SCALES],
}

const _: () = {
    assert!(std::mem::size_of::<Src>() == 48);
    assert!(std::mem::size_of::<Taps>() == 72);
    assert!(std::mem::size_of::<Stat>() == 16);
    assert!(std::mem::size_of::<Ranges>() == 32);
};

fn grid((w, h): (usize, usize)) -> (u32, u32, u32) {
    (w.div_ceil(TILE.0) as u32, h.div_ceil(TILE.1) as u32, 1)
}

/// The float VIF kernels and their scratch for one geometry and option set.
pub struct FloatVifGpu {
    stats: CudaFunction,
    decimate: CudaFunction,
    reduce: CudaFunction,
    /// Scales 1..3 as packed `f32` images (reference, distorted).
    levels: Vec<[DeviceAlloc<f32>; 2]>,
    /// Per-block (num, den) of every scale.
    partial: DeviceAlloc<f64>,
    dims: [(usize, usize); SCALES],
    taps: [Taps; SCALES],
    stat: Stat,
    ranges: Ranges,
    skip_scale0: bool,
    scale: f32,
}

impl FloatVifGpu {
    /// Result words per frame: `num`, `den` of each scale as `f64` bits.
    pub const RESULT_WORDS: usize = 2 * SCALES;

    /// Loads the kernels and allocates the scratch (on `stream`) for `width` x `height`
    /// planes of `bpc` bits with the options `cfg`.
    ///
    /// Errors: [`CudaError::Geometry`] below [`FloatVifConfig::min_size`];
    /// [`CudaError::Driver`] for filters longer than 17 taps (`vif_kernelscale` above 1) or
    /// a rescaling `vif_prescale` (both CPU only), or a kernel lookup;
    /// [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
        cfg: &FloatVifConfig,
    ) -> Result<Self, CudaError> {
        let (min, _) = cfg.min_size();
        check_size(FEATURE, (width, height, bpc), min)?;
        if cfg.scaled_size(width, height) != (width, height) {
            return Err(CudaError::Driver {
                call: "float_vif on CUDA (vif_prescale is computed with backend=cpu only)",
                code: "CUDA_ERROR_NOT_SUPPORTED".to_owned(),
            });
        }
        let mut taps = [Taps::default(); SCALES];
        for (s, t) in taps.iter_mut().enumerate() {
            let f = cfg.filter(s);
            if f.len() > MAX_TAPS {
                return Err(CudaError::Driver {
                    call: "float_vif on CUDA (filters above 17 taps, vif_kernelscale above 1, \
                           are computed with backend=cpu only)",
                    code: "CUDA_ERROR_NOT_SUPPORTED".to_owned(),
                });
            }
            t.f[..f.len()].copy_from_slice(&f);
            t.n = f.len() as i32;
        }
        let m = dev.modules().get("float_vif")?;
        let stats = function(m, "fvif_stats", "cuModuleGetFunction(fvif_stats)")?;
        let decimate = function(m, "fvif_decimate", "cuModuleGetFunction(fvif_decimate)")?;
        let reduce = function(m, "fvif_reduce", "cuModuleGetFunction(fvif_reduce)")?;
        let dims: [(usize, usize); SCALES] = std::array::from_fn(|s| (width >> s, height >> s));
        let mut levels = Vec::with_capacity(SCALES - 1);
        for &(w, h) in &dims[1..] {
            levels.push([
                alloc_zeroed::<f32>(stream, w * h, "cuMemAlloc(float_vif scale)")?,
                alloc_zeroed::<f32>(stream, w * h, "cuMemAlloc(float_vif scale)")?,
            ]);
        }
        let mut ranges = Ranges::default();
        let mut total = 0usize;
        for (s, &d) in dims.iter().enumerate() {
            let (gx, gy, _) = grid(d);
            let blocks = if s == 0 && cfg.skip_scale0 {
                0
            } else {
                (gx * gy) as usize
            };
            ranges.first[s] = total as i32;
            ranges.blocks[s] = blocks as i32;
            total += blocks;
        }
        let partial = alloc_zeroed::<f64>(stream, 2 * total.max(1), "cuMemAlloc(float_vif sums)")?;
        let p = cfg.stat_params();
        Ok(Self {
            stats,
            decimate,
            reduce,
            levels,
            partial,
            dims,
            taps,
            stat: Stat {
                sigma_nsq: p.sigma_nsq,
                egl: p.egl,
                sigma_max_inv: p.sigma_max_inv,
            },
            ranges,
            skip_scale0: cfg.skip_scale0,
            scale: super::cpu::sample_scale(bpc),
        })
    }

    /// Scale `s`'s planes as kernel sources (`input`: the frame's planes for scale 0).
    fn srcs(&self, stream: &CudaStream, s: usize, input: (DevPlane, DevPlane)) -> (Src, Src) {
        if s == 0 {
            let src = |plane| Src {
                plane,
                scale: self.scale,
                ..Src::default()
            };
            return (src(input.0), src(input.1));
        }
        let [a, b] = &self.levels[s - 1];
        let img = |x: &DeviceAlloc<f32>| Src {
            img: x.device_ptr(stream).0,
            ..Src::default()
        };
        (img(a), img(b))
    }

    /// Enqueues one frame's sums into `out` (8 words, overwritten).
    ///
    /// Errors: [`CudaError::Driver`] for a failed launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        let input = (reference, distorted);
        let mut p_partial = self.partial.device_ptr_mut(stream).0;
        for s in 0..SCALES {
            if s > 0 {
                let (mut a, mut b) = self.srcs(stream, s - 1, input);
                let (w, h) = self.dims[s - 1];
                let (nw, nh) = self.dims[s];
                let (mut w, mut h, mut nw32, mut nh32) = (w as i32, h as i32, nw as i32, nh as i32);
                let mut taps = self.taps[s];
                let [oa, ob] = &mut self.levels[s - 1];
                let mut p_a = oa.device_ptr_mut(stream).0;
                let mut p_b = ob.device_ptr_mut(stream).0;
                // SAFETY: parameters match fvif_decimate(Src, Src, i32, i32, Taps, float*,
                // float*, i32, i32); the sources hold w * h samples, the outputs nw * nh
                // floats, all live until the stream has run the kernel.
                unsafe {
                    launch(
                        stream,
                        &self.decimate,
                        grid((nw, nh)),
                        BLOCK,
                        &mut [
                            param(&mut a),
                            param(&mut b),
                            param(&mut w),
                            param(&mut h),
                            param(&mut taps),
                            param(&mut p_a),
                            param(&mut p_b),
                            param(&mut nw32),
                            param(&mut nh32),
                        ],
                        "cuLaunchKernel(fvif_decimate)",
                    )?;
                }
            }
            if s == 0 && self.skip_scale0 {
                continue;
            }
            let (mut a, mut b) = self.srcs(stream, s, input);
            let (w, h) = self.dims[s];
            let (mut w32, mut h32) = (w as i32, h as i32);
            let mut taps = self.taps[s];
            let mut stat = self.stat;
            let mut p_out = p_partial + 16 * self.ranges.first[s] as u64;
            // SAFETY: parameters match fvif_stats(Src, Src, i32, i32, Taps, Stat, double*);
            // the sources hold w * h samples and `partial` 2 doubles for each of the scale's
            // blocks from `first[s]` on.
            unsafe {
                launch(
                    stream,
                    &self.stats,
                    grid((w, h)),
                    BLOCK,
                    &mut [
                        param(&mut a),
                        param(&mut b),
                        param(&mut w32),
                        param(&mut h32),
                        param(&mut taps),
                        param(&mut stat),
                        param(&mut p_out),
                    ],
                    "cuLaunchKernel(fvif_stats)",
                )?;
            }
        }
        let mut ranges = self.ranges;
        let mut p_words = out.device_ptr_mut(stream).0;
        // SAFETY: fvif_reduce(const double*, Ranges, u64*); `partial` holds every range's
        // blocks, `out` at least 8 words.
        unsafe {
            launch(
                stream,
                &self.reduce,
                (1, 1, 1),
                BLOCK,
                &mut [
                    param(&mut p_partial),
                    param(&mut ranges),
                    param(&mut p_words),
                ],
                "cuLaunchKernel(fvif_reduce)",
            )
        }
    }

    /// The per-scale sums from the read-back words, rounded to `f32` as libvmaf stores
    /// them (zeros for missing words).
    pub fn sums(words: &[u64]) -> Scales {
        let at = |i: usize| f64::from(f64::from_bits(words.get(i).copied().unwrap_or(0)) as f32);
        Scales {
            num: std::array::from_fn(|s| at(2 * s)),
            den: std::array::from_fn(|s| at(2 * s + 1)),
        }
    }
}
