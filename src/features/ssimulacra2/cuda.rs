//! Host side of `kernels/ssimulacra2.cu`: SSIMULACRA2 of a frame pair on the GPU.
//!
//! Once per geometry, for samples of up to 10 bits: `s2_lut` makes the tables of the YUV ->
//! linear RGB step (the normalised samples, and the linear R of each (Y, Cr) and B of each
//! (Y, Cb) pair), which replace five of its seven divisions and two of its three `powf` per
//! pixel.
//!
//! Per frame pair, all on one stream and without host or device allocations:
//! 1. `s2_xyb`: YUV -> linear RGB (the conversion of [`crate::engine::colour`]) -> XYB of
//!    scale 0, and for each scale `k >= 1` the 2x2 box average of scale `k - 1`'s linear RGB
//!    -> XYB, all in one launch (a block covers the same 64 x 64 scale-0 tile at every
//!    scale, the linear RGB of scales 1.. stays in shared memory);
//! 2. `s2_hblur`: the horizontal pass of the recursive Gaussian (sigma 1.5) of the 15 planes of
//!    every scale (3 XYB channels x {img1, img2, img1^2, img2^2, img1 img2}) in one launch;
//! 3. `s2_vblur`: the vertical pass of every scale in one launch, fused with the SSIM and
//!    edge-difference error maps: per block, 6 double sums per channel;
//! 4. `s2_total`: the 108 sums (6 scales x 3 channels x 6) in a fixed order, as `u64` words.
//!
//! [`Ssimulacra2Gpu::score`] turns the words into the score on the host.
//!
//! Sources: Cloudinary libjxl `tools/ssimulacra2.cc` (the metric); rust-av `ssimulacra2`
//! 0.5.1 (`src/lib.rs`, `src/blur/gaussian.rs`, `build.rs`) and `yuvxyb` 0.4.2
//! (`src/rgb_xyb.rs`), which the kernels follow operation by operation: the XYB planes and
//! the blurred planes equal the crate's bit for bit for the same linear RGB input, and the
//! sums differ from the crate's only by summation order.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::CudaError;
use crate::cuda::memory::{alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::{ChromaDev, DevPlane};
use crate::video::colour::{Transfer, YuvToRgb};
use crate::video::frame::FeatureError;

use super::params::FEATURE;

/// Most scales SSIMULACRA2 scores (1:1 to 1:32).
pub const MAX_SCALES: usize = 6;
/// Sums per scale and channel: SSIM error `d`, `d^4`, ringing `a`, `a^4`, blurring `b`, `b^4`.
const SUMS: usize = 6;
/// Rows per tile of the kernels' T32 scratch layout (one `s2_hblur` block per tile and plane)
/// and columns per `s2_vblur` block (kernels' `T32`, `VCOLS`).
const T32: usize = 32;
const VCOLS: usize = 32;
/// Deepest samples the YUV -> linear RGB tables serve (kernel's `LUT_BITS`): 8 MiB of tables
/// at 10 bits; deeper samples are converted pixel by pixel.
const LUT_BITS: u32 = 10;
/// Scale-0 pixels per `s2_xyb` block side (kernel's `XTILE`).
const XTILE: usize = 64;
const XYB_BLOCK: (u32, u32, u32) = (32, 8, 1);
/// `s2_hblur`: one warp per block (32 rows of one of the 15 planes).
const HBLUR_BLOCK: (u32, u32, u32) = (32, 1, 1);
/// `s2_vblur`: five warps per block (the 5 planes of 32 columns of one channel).
const VBLUR_BLOCK: (u32, u32, u32) = (160, 1, 1);
const TOTAL_BLOCK: (u32, u32, u32) = (128, 1, 1);

/// The final weights of ssimulacra2 0.5.1 (`Msssim::score`): 3 channels x the scales present
/// x 2 norms x {SSIM, ringing, blurring}, consumed in that order.
#[allow(clippy::unreadable_literal)]
const WEIGHT: [f64; 108] = [
    0.0,
    0.0007376606707406586,
    0.0,
    0.0,
    0.0007793481682867309,
    0.0,
    0.0,
    0.0004371155730107379,
    0.0,
    1.1041726426657346,
    0.00066284834129271,
    0.00015231632783718752,
    0.0,
    0.0016406437456599754,
    0.0,
    1.8422455520539298,
    11.441172603757666,
    0.0,
    0.0007989109436015163,
    0.000176816438078653,
    0.0,
    1.8787594979546387,
    10.94906990605142,
    0.0,
    0.0007289346991508072,
    0.9677937080626833,
    0.0,
    0.00014003424285435884,
    0.9981766977854967,
    0.00031949755934435053,
    0.0004550992113792063,
    0.0,
    0.0,
    0.0013648766163243398,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    7.466890328078848,
    0.0,
    17.445833984131262,
    0.0006235601634041466,
    0.0,
    0.0,
    6.683678146179332,
    0.00037724407979611296,
    1.027889937768264,
    225.20515300849274,
    0.0,
    0.0,
    19.213238186143016,
    0.0011401524586618361,
    0.001237755635509985,
    176.39317598450694,
    0.0,
    0.0,
    24.43300999870476,
    0.28520802612117757,
    0.0004485436923833408,
    0.0,
    0.0,
    0.0,
    34.77906344483772,
    44.835625328877896,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0008680556573291698,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0005313191874358747,
    0.0,
    0.00016533814161379112,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0,
    0.0004179171803251336,
    0.0017290828234722833,
    0.0,
    0.0020827005846636437,
    0.0,
    0.0,
    8.826982764996862,
    23.19243343998926,
    0.0,
    95.1080498811086,
    0.9863978034400682,
    0.9834382792465353,
    0.0012286405048278493,
    171.2667255897307,
    0.9807858872435379,
    0.0,
    0.0,
    0.0,
    0.0005130064588990679,
    0.0,
    0.00010854057858411537,
];

/// The YUV -> linear RGB constants of one caps (`struct S2Conv` in the kernel, same layout:
/// six `f32` and two `i32`, 32 bytes). Steps 2-3 of [`crate::engine::colour`]:
/// `y' = (Y - off_y) / div_y`, `c' = (C - off_c) / div_c`, then the matrix `(kr, kb)`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct ConvParams {
    kr: f32,
    kb: f32,
    off_y: f32,
    div_y: f32,
    off_c: f32,
    div_c: f32,
    srgb: i32,
    pad: i32,
}

impl ConvParams {
    /// The constants for samples of `bpc` bits (8..=16): every value is an integer below
    /// 2^17, exact in `f32`.
    fn new(conv: YuvToRgb, bpc: u32) -> Self {
        let (kr, kb) = conv.matrix.kr_kb();
        let full = ((1u32 << bpc) - 1) as f32;
        let s = (1u32 << (bpc - 8)) as f32;
        let (off_y, div_y, off_c, div_c) = if conv.full_range {
            (0.0, full, (1u32 << (bpc - 1)) as f32, full)
        } else {
            (16.0 * s, 219.0 * s, 128.0 * s, 224.0 * s)
        };
        Self {
            kr,
            kb,
            off_y,
            div_y,
            off_c,
            div_c,
            srgb: i32::from(conv.transfer == Transfer::Srgb),
            pad: 0,
        }
    }
}

/// The scales ssimulacra2 0.5.1 scores for a `width` x `height` frame (both >= 8): scale 0 is
/// the frame, scale `k` is `ceil(w_{k-1} / 2) x ceil(h_{k-1} / 2)` and is scored when scale
/// `k - 1` is at least 8 x 8 (the crate checks the size before downscaling, so the last scale
/// may be 4..7 samples on a side), at most [`MAX_SCALES`].
fn scale_sizes(width: usize, height: usize) -> ([(usize, usize); MAX_SCALES], usize) {
    let mut sizes = [(0, 0); MAX_SCALES];
    sizes[0] = (width, height);
    let mut n = 1;
    while n < MAX_SCALES {
        let (w, h) = sizes[n - 1];
        if w < 8 || h < 8 {
            break;
        }
        sizes[n] = (w.div_ceil(2), h.div_ceil(2));
        n += 1;
    }
    (sizes, n)
}

/// `v` as a kernel `int`, or `WrongGeometry` (a frame no kernel index can address).
fn as_i32(v: usize, width: usize, height: usize, bpc: u32) -> Result<i32, CudaError> {
    i32::try_from(v).map_err(|_| {
        CudaError::Geometry(FeatureError::wrong_size(
            FEATURE,
            (width, height, bpc),
            (width, height),
        ))
    })
}

/// The SSIMULACRA2 kernels and their scratch for one geometry (caps).
///
/// Scratch, allocated once in [`Ssimulacra2Gpu::new`] (`P` = the pixels of all scored scales,
/// about 4/3 of the frame's, each scale's height rounded up to whole 32-row tiles of the
/// kernels' T32 layout): XYB planes `6 P` f32, horizontally blurred planes `15 P` f32,
/// 6 f64 per vertical-pass block: about 114 bytes per frame pixel (235 MB, 225 MiB at
/// 1920x1080); and for samples of up to 10 bits the conversion tables, `2 * 2^bpc + 2 * 4^bpc`
/// f32 (0.5 MiB at 8 bits, 8 MiB at 10).
pub struct Ssimulacra2Gpu {
    xyb_all: CudaFunction,
    /// The YUV -> linear RGB tables for `bpc <= LUT_BITS` (made in `new` by `s2_lut`).
    lut: Option<DeviceAlloc<f32>>,
    hblur: CudaFunction,
    vblur: CudaFunction,
    total: CudaFunction,
    xyb: DeviceAlloc<f32>,
    hbl: DeviceAlloc<f32>,
    partial: DeviceAlloc<f64>,
    width: usize,
    height: usize,
    bpc: u32,
    chroma: Option<(usize, usize)>,
    conv: ConvParams,
    sizes: [(usize, usize); MAX_SCALES],
    scales: usize,
    hblocks: u32,
    vblocks: u32,
}

impl Ssimulacra2Gpu {
    /// `u64` words [`Ssimulacra2Gpu::enqueue`] writes per frame pair: for scale `k < 6`,
    /// channel `c` (X, Y, B) and sum `j`, word `18 k + 6 c + j` holds the bits of an `f64`
    /// sum over the scale's pixels of: `j = 0` the SSIM error `d = max(0, 1 - SSIM')`, `1`
    /// `d^4`, `2` ringing `max(0, e)`, `3` its 4th power, `4` blurring `max(0, -e)`, `5` its
    /// 4th power (`e` the edge-difference ratio minus 1). Words of scales not scored are 0.
    pub const RESULT_WORDS: usize = MAX_SCALES * 3 * SUMS;

    /// Loads the kernels and allocates the scratch (on `stream`) for `width` x `height` frames
    /// of `bpc` bits (8..=16; the depth the luma planes are read at and the chroma planes are
    /// stored at). `chroma`: the chroma plane size (`cw` x `ch`, e.g. `ceil(w / 2)` x
    /// `ceil(h / 2)` for 4:2:0), `None` for grey frames (R = G = B from luma). `conv`: the
    /// YUV -> linear RGB conversion ([`crate::engine::colour`]).
    ///
    /// Errors: [`CudaError::Geometry`] with [`FeatureError::FrameTooSmall`] below 8x8 (the
    /// metric's minimum), `WrongGeometry` for a `bpc` outside 8..=16, an empty chroma plane or
    /// a frame too large for the kernels' 32-bit indices; [`CudaError::Driver`] (kernel
    /// lookup), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
        chroma: Option<(usize, usize)>,
        conv: YuvToRgb,
    ) -> Result<Self, CudaError> {
        FeatureError::check_new(FEATURE, (width, height, bpc), (8, 8))?;
        if let Some((cw, ch)) = chroma {
            if cw == 0 || ch == 0 {
                return Err(
                    FeatureError::wrong_size(FEATURE, (width, height, bpc), (cw, ch)).into(),
                );
            }
            as_i32(cw, width, height, bpc)?;
            as_i32(ch, width, height, bpc)?;
        }
        // Kernel indices: coordinates and block counts are `int`, offsets 64-bit.
        as_i32(width.saturating_mul(2), width, height, bpc)?;
        as_i32(height.saturating_mul(2), width, height, bpc)?;
        let (sizes, scales) = scale_sizes(width, height);
        // Each plane in the T32 layout: its height padded to whole 32-row tiles.
        let pixels: usize = sizes[..scales]
            .iter()
            .map(|&(w, h)| w * h.next_multiple_of(T32))
            .sum();
        let hblocks: usize = sizes[..scales]
            .iter()
            .map(|&(_, h)| h.div_ceil(T32) * 15)
            .sum();
        let vblocks: usize = sizes[..scales]
            .iter()
            .map(|&(w, _)| w.div_ceil(VCOLS) * 3)
            .sum();
        let hblocks = u32::try_from(hblocks).map_err(|_| {
            FeatureError::wrong_size(FEATURE, (width, height, bpc), (width, height))
        })?;
        let vblocks = u32::try_from(vblocks).map_err(|_| {
            FeatureError::wrong_size(FEATURE, (width, height, bpc), (width, height))
        })?;

        let m = dev.modules().get("ssimulacra2")?;
        let xyb_all = function(m, "s2_xyb", "cuModuleGetFunction(s2_xyb)")?;
        let conv = ConvParams::new(conv, bpc);
        let lut = if bpc <= LUT_BITS {
            let make = function(m, "s2_lut", "cuModuleGetFunction(s2_lut)")?;
            let n1 = 1usize << bpc;
            let mut lut = alloc_zeroed::<f32>(
                stream,
                2 * n1 + 2 * n1 * n1,
                "cuMemAlloc(ssimulacra2 tables)",
            )?;
            let mut p_lut = lut.device_ptr_mut(stream).0;
            let mut bits = bpc as i32;
            let mut c = conv;
            // SAFETY: s2_lut(S2Conv, int, float*); `lut` holds the 2 * 2^bits + 2 * 4^bits
            // floats it writes (grid-stride).
            unsafe {
                launch(
                    stream,
                    &make,
                    (256, 1, 1),
                    XYB_BLOCK,
                    &mut [param(&mut c), param(&mut bits), param(&mut p_lut)],
                    "cuLaunchKernel(s2_lut)",
                )?;
            }
            Some(lut)
        } else {
            None
        };
        let hblur = function(m, "s2_hblur", "cuModuleGetFunction(s2_hblur)")?;
        let vblur = function(m, "s2_vblur", "cuModuleGetFunction(s2_vblur)")?;
        let total = function(m, "s2_total", "cuModuleGetFunction(s2_total)")?;
        let xyb = alloc_zeroed::<f32>(stream, 6 * pixels, "cuMemAlloc(ssimulacra2 xyb)")?;
        let hbl = alloc_zeroed::<f32>(stream, 15 * pixels, "cuMemAlloc(ssimulacra2 blur)")?;
        let partial = alloc_zeroed::<f64>(
            stream,
            SUMS * vblocks as usize,
            "cuMemAlloc(ssimulacra2 partial sums)",
        )?;
        Ok(Self {
            xyb_all,
            lut,
            hblur,
            vblur,
            total,
            xyb,
            hbl,
            partial,
            width,
            height,
            bpc,
            chroma,
            conv,
            sizes,
            scales,
            hblocks,
            vblocks,
        })
    }

    /// The sizes of the scales scored (scale 0 first; 1 to 6 entries).
    pub fn scales(&self) -> &[(usize, usize)] {
        &self.sizes[..self.scales]
    }

    /// Enqueues on `stream` the SSIMULACRA2 sums of `distorted` against `reference` into
    /// `out[0..RESULT_WORDS)` (overwritten, no zeroing needed; layout at
    /// [`Ssimulacra2Gpu::RESULT_WORDS`]). No allocation, no synchronisation; the same inputs
    /// give the same bits on every run.
    ///
    /// `reference`, `distorted`: luma planes of `width` x `height` samples (see
    /// [`DevPlane`]'s contract) at `bpc` bits; `chroma`: the Cb/Cr planes of both frames,
    /// packed `u16` at `bpc` bits, of the size given to [`Ssimulacra2Gpu::new`] (ignored when
    /// that was `None`). Everything must stay valid until the stream has run the kernels.
    ///
    /// Errors: [`CudaError::Geometry`] (`WrongGeometry`) when `chroma` is missing or of
    /// another size than `new` was given, or `out` holds fewer than `RESULT_WORDS` words;
    /// [`CudaError::Driver`] for a failed launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        chroma: Option<&ChromaDev>,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        let geometry = (self.width, self.height, self.bpc);
        if out.len() < Self::RESULT_WORDS {
            return Err(FeatureError::wrong_size(FEATURE, geometry, (out.len(), 1)).into());
        }
        let (planes, mut cw, mut ch) = match (self.chroma, chroma) {
            (None, _) => ([DevPlane::default(); 4], 0i32, 0i32),
            (Some((cw, ch)), Some(c)) if c.width == cw && c.height == ch => (
                [
                    c.reference[0],
                    c.reference[1],
                    c.distorted[0],
                    c.distorted[1],
                ],
                // Checked to fit in `new`.
                cw as i32,
                ch as i32,
            ),
            (Some(_), Some(c)) => {
                return Err(FeatureError::wrong_size(FEATURE, geometry, (c.width, c.height)).into())
            }
            (Some(_), None) => {
                return Err(FeatureError::wrong_size(FEATURE, geometry, (0, 0)).into());
            }
        };
        let [mut cb_ref, mut cr_ref, mut cb_dis, mut cr_dis] = planes;
        let (mut p_ref, mut p_dis) = (reference, distorted);
        let mut conv = self.conv;
        // 0 (no tables: the kernel converts each pixel) above LUT_BITS.
        let mut p_lut = self.lut.as_ref().map_or(0, |l| l.device_ptr(stream).0);
        let mut bits = self.bpc as i32;
        // All fit in i32: checked in `new`.
        let mut w0 = self.width as i32;
        let mut h0 = self.height as i32;
        let mut n = self.scales as i32;
        let mut p_xyb = self.xyb.device_ptr_mut(stream).0;
        let mut p_hbl = self.hbl.device_ptr_mut(stream).0;
        let mut p_partial = self.partial.device_ptr_mut(stream).0;
        let mut p_out = out.device_ptr_mut(stream).0;

        // SAFETY (all launches below): the parameters match the kernels' lists in number,
        // order and types (Plane = DevPlane, S2Conv = ConvParams, int32_t = i32, pointers =
        // u64 device addresses); the scratch buffers hold the sizes computed in `new` for this
        // geometry, `out` at least RESULT_WORDS words (checked above), and the input planes
        // are the caller's to keep alive until the stream has run (see above).
        unsafe {
            launch(
                stream,
                &self.xyb_all,
                xyb_grid(self.width, self.height),
                XYB_BLOCK,
                &mut [
                    param(&mut p_ref),
                    param(&mut p_dis),
                    param(&mut cb_ref),
                    param(&mut cr_ref),
                    param(&mut cb_dis),
                    param(&mut cr_dis),
                    param(&mut cw),
                    param(&mut ch),
                    param(&mut conv),
                    param(&mut p_lut),
                    param(&mut bits),
                    param(&mut w0),
                    param(&mut h0),
                    param(&mut n),
                    param(&mut p_xyb),
                ],
                "cuLaunchKernel(s2_xyb)",
            )?;
        }
        // SAFETY: s2_hblur(int, int, int, const float*, float*), s2_vblur(int, int, int,
        // const float*, const float*, double*), s2_total(int, int, int, const double*,
        // unsigned long long*); grids as the kernels' block-to-scale mapping expects.
        unsafe {
            launch(
                stream,
                &self.hblur,
                (self.hblocks, 1, 1),
                HBLUR_BLOCK,
                &mut [
                    param(&mut w0),
                    param(&mut h0),
                    param(&mut n),
                    param(&mut p_xyb),
                    param(&mut p_hbl),
                ],
                "cuLaunchKernel(s2_hblur)",
            )?;
            launch(
                stream,
                &self.vblur,
                (self.vblocks, 1, 1),
                VBLUR_BLOCK,
                &mut [
                    param(&mut w0),
                    param(&mut h0),
                    param(&mut n),
                    param(&mut p_xyb),
                    param(&mut p_hbl),
                    param(&mut p_partial),
                ],
                "cuLaunchKernel(s2_vblur)",
            )?;
            launch(
                stream,
                &self.total,
                (1, 1, 1),
                TOTAL_BLOCK,
                &mut [
                    param(&mut w0),
                    param(&mut h0),
                    param(&mut n),
                    param(&mut p_partial),
                    param(&mut p_out),
                ],
                "cuLaunchKernel(s2_total)",
            )
        }
    }

    /// The SSIMULACRA2 score of the words [`Ssimulacra2Gpu::enqueue`] wrote: 100 for
    /// identical frames, lower is worse (below 0 for very poor quality). The per-scale
    /// averages, the weighted sum of the 108 sub-scores (over the scales present) and the
    /// final transform are ssimulacra2 0.5.1's `Msssim::score`, in `f64` with `mul_add` where
    /// the crate has it. Returns NaN when `words` holds fewer than
    /// [`Ssimulacra2Gpu::RESULT_WORDS`] words.
    pub fn score(&self, words: &[u64]) -> f64 {
        if words.len() < Self::RESULT_WORDS {
            return f64::NAN;
        }
        let mut ssim = 0.0f64;
        let mut i = 0usize;
        for c in 0..3 {
            for (k, &(w, h)) in self.sizes[..self.scales].iter().enumerate() {
                let one_per_pixels = 1.0f64 / (w * h) as f64;
                let base = k * 3 * SUMS + c * SUMS;
                let sum = |j: usize| f64::from_bits(words[base + j]);
                let avg_ssim = [
                    one_per_pixels * sum(0),
                    (one_per_pixels * sum(1)).sqrt().sqrt(),
                ];
                let avg_edge = [
                    one_per_pixels * sum(2),
                    (one_per_pixels * sum(3)).sqrt().sqrt(),
                    one_per_pixels * sum(4),
                    (one_per_pixels * sum(5)).sqrt().sqrt(),
                ];
                for norm in 0..2 {
                    ssim = WEIGHT[i].mul_add(avg_ssim[norm].abs(), ssim);
                    i += 1;
                    ssim = WEIGHT[i].mul_add(avg_edge[norm].abs(), ssim);
                    i += 1;
                    ssim = WEIGHT[i].mul_add(avg_edge[norm + 2].abs(), ssim);
                    i += 1;
                }
            }
        }
        ssim *= 0.956_238_261_683_484_4_f64;
        ssim = (6.248_496_625_763_138e-5 * ssim * ssim).mul_add(
            ssim,
            2.326_765_642_916_932f64.mul_add(ssim, -0.020_884_521_182_843_837 * ssim * ssim),
        );
        if ssim > 0.0f64 {
            ssim.powf(0.627_633_646_783_138_7)
                .mul_add(-10.0f64, 100.0f64)
        } else {
            100.0f64
        }
    }
}

/// Grid of `s2_xyb`: one block of 32 x 8 threads per 64 x 64 pixels of scale 0 (`XTILE`).
fn xyb_grid(w: usize, h: usize) -> (u32, u32, u32) {
    (w.div_ceil(XTILE) as u32, h.div_ceil(XTILE) as u32, 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales_follow_the_crates_loop() {
        let (s, n) = scale_sizes(160, 90);
        assert_eq!(&s[..n], &[(160, 90), (80, 45), (40, 23), (20, 12), (10, 6)]);
        let (s, n) = scale_sizes(1920, 1080);
        assert_eq!(n, 6);
        assert_eq!(s[5], (60, 34));
        let (s, n) = scale_sizes(8, 8);
        assert_eq!(&s[..n], &[(8, 8), (4, 4)]);
        let (_, n) = scale_sizes(9, 8);
        assert_eq!(n, 2);
    }

    #[test]
    fn conv_params_are_exact() {
        let c = ConvParams::new(YuvToRgb::default(), 10);
        assert_eq!(
            (c.off_y, c.div_y, c.off_c, c.div_c),
            (64.0, 876.0, 512.0, 896.0)
        );
        let full = YuvToRgb {
            full_range: true,
            transfer: Transfer::Srgb,
            ..YuvToRgb::default()
        };
        let c = ConvParams::new(full, 8);
        assert_eq!(
            (c.off_y, c.div_y, c.off_c, c.div_c, c.srgb),
            (0.0, 255.0, 128.0, 255.0, 1)
        );
        assert_eq!(std::mem::size_of::<ConvParams>(), 32);
    }

    #[test]
    fn weights_match_the_crate_count() {
        assert_eq!(WEIGHT.len(), Ssimulacra2Gpu::RESULT_WORDS);
    }
}
