//! Scaling a stream to the scoring size, as VMAF users do it with FFmpeg
//! (`scale=W:H:flags=bicubic+accurate_rnd`), before any feature sees the frames.
//!
//! The arithmetic is FFmpeg libswscale's exact C path (Netflix's recommended practice scales
//! with it, so scores agree with `ffmpeg scale + libvmaf`):
//! - filter design ([`FilterBank::new`]): libswscale/utils.c `initFilter` (FFmpeg 9.0):
//!   the source position of each output sample in 1/2^17 units, the kernel evaluated in
//!   64-bit fixed point (bicubic with B = 0, C = 0.6 as `flags=bicubic` uses; bilinear;
//!   Lanczos with 3 lobes), near-zero taps trimmed, taps outside the plane folded onto its
//!   edge samples, and each output's taps normalised with error diffusion to sum to
//!   2^14 (horizontal) or 2^12 (vertical);
//! - horizontal pass: `hScale8To15_c` / `hScale16To15_c` (libswscale/swscale.c): the taps'
//!   sum shifted right by `bpc - 1` into a 15-bit intermediate (clipped at 32767);
//! - vertical pass: `yuv2planeX_8_c` / `yuv2planeX_10_c_template` (libswscale/output.c):
//!   rounding constant `2^(26 - bpc)`, shift `27 - bpc`, clipped to `0..2^bpc - 1`. For an
//!   8-bit source swscale's ordered dither is the flat 64 (`should_dither` is false), which is
//!   the same rounding.
//!
//! x86 filter padding (4 horizontal taps, 2 vertical, `filterAlign` with MMX) is reproduced,
//! since the error diffusion runs over the padded taps. Both backends use the same
//! [`FilterBank`]s (the CUDA half uploads them), so GPU and CPU scale bit for bit alike.
//!
//! A stream in the other colour range than the one it is scored in ([`range`]) is converted
//! in the same pass, as swscale does: on each row of the 15-bit intermediate, between the
//! horizontal and the vertical pass ([`range::RangeMap`]); a stream converted but not scaled
//! goes through the same passes with one-tap filters (swscale's unscaled shortcuts are off
//! when the ranges differ), so its samples are FFmpeg's too.
//!
//! Samples are scaled at the scoring depth: a stream raised from 8 to 10 bits is shifted first
//! and scaled with 10-bit arithmetic, which gives the same 15-bit intermediate as swscale's
//! 8-bit input path into 10-bit output (`hScale8To15` then `yuv2planeX_10`).

pub mod cpu;
pub mod cuda;
pub mod range;

use std::fmt;
use std::sync::Arc;

use range::{RangeConversion, RangeMap};

/// The filter that resamples a stream of another size (the `scale-method` property).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub enum ScaleMethod {
    /// FFmpeg swscale's `bicubic` (B = 0, C = 0.6), what `scale=W:H:flags=bicubic` uses.
    #[default]
    Bicubic,
    /// swscale's `bilinear` (triangle filter widened for downscaling).
    Bilinear,
    /// swscale's `lanczos` (3 lobes).
    Lanczos,
    /// No scaling: pads of different sizes are refused.
    None,
}

impl ScaleMethod {
    /// The name used by the property, the summary and the log (`"bicubic"`, ...).
    pub fn name(self) -> &'static str {
        match self {
            ScaleMethod::Bicubic => "bicubic",
            ScaleMethod::Bilinear => "bilinear",
            ScaleMethod::Lanczos => "lanczos",
            ScaleMethod::None => "none",
        }
    }

    /// The FFmpeg `flags=` value that gives the same result through `scale`.
    pub fn ffmpeg_flags(self) -> &'static str {
        match self {
            ScaleMethod::Bicubic => "bicubic+accurate_rnd+full_chroma_int",
            ScaleMethod::Bilinear => "bilinear+accurate_rnd+full_chroma_int",
            ScaleMethod::Lanczos => "lanczos+accurate_rnd+full_chroma_int",
            ScaleMethod::None => "",
        }
    }
}

impl fmt::Display for ScaleMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a plane cannot be scaled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScaleError {
    /// `scale-method=none`, or a zero dimension.
    #[error("cannot scale {from_w}x{from_h} to {to_w}x{to_h} with method {method}")]
    Unsupported {
        /// Source size.
        from_w: usize,
        /// Source height.
        from_h: usize,
        /// Target width.
        to_w: usize,
        /// Target height.
        to_h: usize,
        /// The method asked for.
        method: ScaleMethod,
    },
    /// A ratio beyond swscale's single-pass filters (it cascades two contexts there; we refuse).
    #[error(
        "scaling {from}->{to} samples needs a {taps}-tap filter, more than the 255 that one \
         pass allows (downscale by at most 60x)"
    )]
    TooSteep {
        /// Source samples along the axis.
        from: usize,
        /// Target samples.
        to: usize,
        /// Taps the filter would need.
        taps: usize,
    },
}

/// Chroma siting along one axis, in swscale's units (1/256 of a chroma sample from the left
/// or top edge of the luma sample grid; see libswscale/utils.c `get_local_pos`).
///
/// `None` means swscale's default for the axis (centred between the luma samples it covers),
/// as with FFmpeg frames of unspecified chroma location.
pub type ChromaPos = Option<i32>;

/// One axis's resampling filter: for output sample `i`, `taps` coefficients applied to source
/// samples `pos[i] .. pos[i] + taps` (always inside the source).
///
/// Coefficients are fixed point: they sum to `one` (2^14 horizontally, 2^12 vertically).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterBank {
    /// Source samples along the axis.
    pub src: usize,
    /// Output samples along the axis.
    pub dst: usize,
    /// Coefficients per output sample.
    pub taps: usize,
    /// First source sample of each output sample (`dst` entries).
    pub pos: Vec<i32>,
    /// `dst * taps` coefficients, output-major.
    pub coeffs: Vec<i16>,
}

/// The fraction of a filter's weight below which edge taps are dropped (swscale's
/// `SWS_MAX_REDUCE_CUTOFF`).
const REDUCE_CUTOFF: f64 = 0.002;

fn rounded_div(a: i64, b: i64) -> i64 {
    if a >= 0 {
        (a + (b >> 1)) / b
    } else {
        (a - (b >> 1)) / b
    }
}

fn log2_floor(v: i64) -> i64 {
    if v <= 0 {
        0
    } else {
        63 - i64::from(v.leading_zeros())
    }
}

impl FilterBank {
    /// Designs the filter that resamples `src` samples to `dst` along one axis, exactly as
    /// swscale's `initFilter` does for `method` (see the module docs), with `align` taps of
    /// padding granularity (4 horizontally, 2 vertically on x86) and taps summing to `one`.
    /// `src_pos` / `dst_pos`: sample siting in 1/256 units as `get_local_pos` returns it (128
    /// for luma).
    ///
    /// Errors: [`ScaleError::Unsupported`] for a zero size or [`ScaleMethod::None`],
    /// [`ScaleError::TooSteep`] beyond one pass's 255 taps.
    pub fn new(
        method: ScaleMethod,
        src: usize,
        dst: usize,
        align: usize,
        one: i64,
        src_pos: i32,
        dst_pos: i32,
    ) -> Result<Self, ScaleError> {
        let unsupported = || ScaleError::Unsupported {
            from_w: src,
            from_h: 1,
            to_w: dst,
            to_h: 1,
            method,
        };
        if src == 0 || dst == 0 || method == ScaleMethod::None {
            return Err(unsupported());
        }
        if src > 1 << 20 || dst > 1 << 20 {
            return Err(unsupported());
        }
        let (src_w, dst_w) = (src as i64, dst as i64);
        let x_inc = ((src_w << 16) + (dst_w >> 1)) / dst_w;
        let fone: i64 = 1i64 << (54 - log2_floor(src_w / dst_w).min(8));
        let (src_pos, dst_pos) = (i64::from(src_pos), i64::from(dst_pos));

        // Step 0: the raw filter.
        let (mut filter, mut pos, mut size): (Vec<i64>, Vec<i64>, i64);
        if (x_inc - 0x10000).abs() < 10 && src_pos == dst_pos {
            size = 1;
            filter = vec![fone; dst];
            pos = (0..dst_w).collect();
        } else {
            let size_factor: i64 = match method {
                ScaleMethod::Bicubic => 4,
                ScaleMethod::Bilinear => 2,
                ScaleMethod::Lanczos => 6,
                ScaleMethod::None => return Err(unsupported()),
            };
            size = if x_inc <= 1 << 16 {
                1 + size_factor
            } else {
                1 + (size_factor * src_w + dst_w - 1) / dst_w
            };
            size = size.min(src_w - 2).max(1);
            filter = vec![0; dst * size as usize];
            pos = vec![0; dst];
            let mut x_dst_in_src = ((dst_pos * x_inc) >> 7) - ((src_pos * 0x10000) >> 7);
            for i in 0..dst {
                let xx0 = (x_dst_in_src - (size - 2) * (1i64 << 16)) / (1 << 17);
                pos[i] = xx0;
                for (j, xx) in (xx0..).take(size as usize).enumerate() {
                    let mut d = ((xx * (1 << 17)) - x_dst_in_src).abs() << 13;
                    if x_inc > 1 << 16 {
                        d = d * dst_w / src_w;
                    }
                    let floatd = d as f64 * (1.0 / (1u64 << 30) as f64);
                    let coeff: i64 = match method {
                        ScaleMethod::Bicubic => {
                            let b: i64 = 0;
                            let c: i64 = (0.6 * (1u64 << 24) as f64) as i64;
                            let mut v: i64 = if d >= 1i64 << 31 {
                                0
                            } else {
                                let dd = (d * d) >> 30;
                                let ddd = (dd * d) >> 30;
                                if d < 1i64 << 30 {
                                    (12 * (1 << 24) - 9 * b - 6 * c) * ddd
                                        + (-18 * (1 << 24) + 12 * b + 6 * c) * dd
                                        + (6 * (1 << 24) - 2 * b) * (1 << 30)
                                } else {
                                    (-b - 6 * c) * ddd
                                        + (6 * b + 30 * c) * dd
                                        + (-12 * b - 48 * c) * d
                                        + (8 * b + 24 * c) * (1 << 30)
                                }
                            };
                            v /= (1i64 << 54) / fone;
                            v
                        }
                        ScaleMethod::Bilinear => {
                            let v = ((1i64 << 30) - d).max(0);
                            v * (fone >> 30)
                        }
                        ScaleMethod::Lanczos => {
                            let p = 3.0f64;
                            let pi = std::f64::consts::PI;
                            let v = if d != 0 {
                                (floatd * pi).sin() * (floatd * pi / p).sin()
                                    / (floatd * floatd * pi * pi / p)
                            } else {
                                1.0
                            };
                            if floatd > p {
                                0
                            } else {
                                (v * fone as f64) as i64
                            }
                        }
                        ScaleMethod::None => 0,
                    };
                    filter[i * size as usize + j] = coeff;
                }
                x_dst_in_src += 2 * x_inc;
            }
        }
        let size = size as usize;
        // No source / destination filter vectors: filter2 is the filter itself.

        // Step 1: trim near-zero taps on the left (shifting), count those on the right.
        let cutoff = (REDUCE_CUTOFF * fone as f64) as i64;
        let mut min_size = 0usize;
        for i in (0..dst).rev() {
            let row = &mut filter[i * size..(i + 1) * size];
            let mut min = size;
            let mut cut: i64 = 0;
            for _ in 0..size {
                cut += row[0].abs();
                if cut > cutoff {
                    break;
                }
                if i < dst - 1 && pos[i] >= pos[i + 1] {
                    break;
                }
                row.copy_within(1.., 0);
                row[size - 1] = 0;
                pos[i] += 1;
            }
            cut = 0;
            for j in (1..size).rev() {
                cut += row[j].abs();
                if cut > cutoff {
                    break;
                }
                min -= 1;
            }
            min_size = min_size.max(min);
        }
        let mut align = align.max(1);
        // x86 with MMX: a vertical filter of one tap is not padded to two.
        if min_size == 1 && align == 2 {
            align = 1;
        }
        let taps = min_size.div_ceil(align) * align;
        if taps >= 256 {
            return Err(ScaleError::TooSteep {
                from: src,
                to: dst,
                taps,
            });
        }
        // Step 2: the reduced filter.
        let mut out = vec![0i64; dst * taps];
        for i in 0..dst {
            for j in 0..taps.min(size) {
                out[i * taps + j] = filter[i * size + j];
            }
        }
        // Fold taps outside the source onto its edges.
        for i in 0..dst {
            let row = &mut out[i * taps..(i + 1) * taps];
            if pos[i] < 0 {
                for j in 1..taps {
                    let left = (j as i64 + pos[i]).max(0) as usize;
                    let v = row[j];
                    row[left] += v;
                    row[j] = 0;
                }
                pos[i] = 0;
            }
            if pos[i] + taps as i64 > src_w {
                let shift = pos[i] + (taps as i64 - src_w).min(0);
                let mut acc = 0i64;
                for j in (0..taps).rev() {
                    if pos[i] + j as i64 >= src_w {
                        acc += row[j];
                        row[j] = 0;
                    }
                }
                for j in (0..taps).rev() {
                    if (j as i64) < shift {
                        row[j] = 0;
                    } else {
                        row[j] = row[j - shift as usize];
                    }
                }
                pos[i] -= shift;
                let last = (src_w - 1 - pos[i]) as usize;
                if let Some(v) = row.get_mut(last) {
                    *v += acc;
                }
            }
            if pos[i] < 0 || pos[i] >= src_w {
                return Err(unsupported());
            }
        }
        // Normalise with error diffusion.
        let mut coeffs = vec![0i16; dst * taps];
        for i in 0..dst {
            let row = &out[i * taps..(i + 1) * taps];
            let mut sum: i64 = row.iter().sum();
            sum = (sum + one / 2) / one;
            if sum == 0 {
                sum = 1;
            }
            let mut error = 0i64;
            for j in 0..taps {
                let v = row[j] + error;
                let iv = rounded_div(v, sum);
                coeffs[i * taps + j] = iv as i16;
                error = v - iv * sum;
            }
        }
        // A source narrower than the filter (tiny planes): taps beyond it carry no weight,
        // but keep every read inside the plane.
        for i in 0..dst {
            for j in 0..taps {
                if pos[i] + j as i64 >= src_w && coeffs[i * taps + j] != 0 {
                    return Err(unsupported());
                }
            }
        }
        Ok(Self {
            src,
            dst,
            taps,
            pos: pos.iter().map(|&p| p as i32).collect(),
            coeffs,
        })
    }

    /// The coefficients of output sample `i`.
    #[inline]
    pub fn taps_of(&self, i: usize) -> &[i16] {
        &self.coeffs[i * self.taps..(i + 1) * self.taps]
    }

    /// Taps that read inside the source for output `i`: `min(taps, src - pos[i])` (the rest
    /// are zero by construction).
    #[inline]
    pub fn live_taps(&self, i: usize) -> usize {
        self.taps.min(self.src - self.pos[i] as usize)
    }
}

/// swscale's `get_local_pos`: the siting of a plane's samples in 1/256 units relative to the
/// ideal left (top) edge, for a plane subsampled by `2^subsample` along the axis, given the
/// chroma position `pos` in 1/256 of a luma sample (`None`: swscale's default, centred).
pub fn local_pos(subsample: u32, pos: ChromaPos) -> i32 {
    let mut p = match pos {
        Some(p) if p != -1 && p > -513 => p,
        _ => (128 << subsample) - 128,
    };
    p += 128;
    p >> subsample
}

/// The two filters of one plane: `src_w x src_h` samples to `dst_w x dst_h`, and the range
/// conversion applied between them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlaneScaler {
    /// Horizontal filter (taps sum to 2^14).
    pub h: FilterBank,
    /// Vertical filter (taps sum to 2^12).
    pub v: FilterBank,
    /// The colour range conversion on the intermediate (`None`: none).
    pub range: Option<RangeConversion>,
    /// Whether the plane is chroma (its range conversion uses chroma's 16-240).
    pub chroma: bool,
}

/// Where a plane's samples sit, for one axis each: the subsampling shift and the chroma
/// position (`None` for luma, which swscale sites at 128 whatever the chroma location).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Siting {
    /// Horizontal subsampling shift (0 for luma and 4:4:4, 1 for 4:2:0 / 4:2:2 chroma).
    pub h_sub: u32,
    /// Vertical subsampling shift (1 for 4:2:0 chroma).
    pub v_sub: u32,
    /// Horizontal chroma position (see [`ChromaPos`]); ignored for luma.
    pub h_pos: ChromaPos,
    /// Vertical chroma position; ignored for luma.
    pub v_pos: ChromaPos,
    /// Whether this is a chroma plane.
    pub chroma: bool,
}

impl PlaneScaler {
    /// The filters that scale a plane of `src` size to `dst` size with `method`, sited as
    /// `siting` says (luma: `Siting::default()`).
    ///
    /// Errors: as [`FilterBank::new`].
    pub fn new(
        method: ScaleMethod,
        (src_w, src_h): (usize, usize),
        (dst_w, dst_h): (usize, usize),
        siting: Siting,
    ) -> Result<Self, ScaleError> {
        let refuse = || ScaleError::Unsupported {
            from_w: src_w,
            from_h: src_h,
            to_w: dst_w,
            to_h: dst_h,
            method,
        };
        let (hp, vp) = if siting.chroma {
            (
                local_pos(siting.h_sub, siting.h_pos),
                local_pos(siting.v_sub, siting.v_pos),
            )
        } else {
            (local_pos(0, Some(0)), local_pos(0, Some(0)))
        };
        let h = FilterBank::new(method, src_w, dst_w, 4, 1 << 14, hp, hp).map_err(|e| match e {
            ScaleError::Unsupported { .. } => refuse(),
            other => other,
        })?;
        let v = FilterBank::new(method, src_h, dst_h, 2, 1 << 12, vp, vp).map_err(|e| match e {
            ScaleError::Unsupported { .. } => refuse(),
            other => other,
        })?;
        Ok(Self {
            h,
            v,
            range: None,
            chroma: siting.chroma,
        })
    }

    /// The range map for samples of `bpc` bits: `Ok(None)` without a conversion, `Err(())`
    /// for a conversion at a depth outside `8..=14`.
    #[allow(clippy::result_unit_err)]
    pub fn range_map(&self, bpc: u32) -> Result<Option<RangeMap>, ()> {
        match self.range {
            None => Ok(None),
            Some(c) => RangeMap::new(c, self.chroma, bpc).map(Some).ok_or(()),
        }
    }

    /// Source size.
    pub fn src(&self) -> (usize, usize) {
        (self.h.src, self.v.src)
    }

    /// Output size.
    pub fn dst(&self) -> (usize, usize) {
        (self.h.dst, self.v.dst)
    }
}

/// The horizontal pass's right shift into the 15-bit intermediate for `bpc`-bit samples.
pub fn h_shift(bpc: u32) -> u32 {
    bpc - 1
}

/// The vertical pass's right shift from the intermediate to `bpc`-bit output.
pub fn v_shift(bpc: u32) -> u32 {
    27 - bpc
}

/// A stream's chroma planes to scale: their source size, their target size and their siting.
pub type ChromaScaling = ((usize, usize), (usize, usize), Siting);

/// What a stream is scaled with: the luma filters and, when a metric reads chroma, those of
/// the chroma planes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamScaler {
    /// The method, for reports.
    pub method: ScaleMethod,
    /// Luma filters.
    pub luma: PlaneScaler,
    /// Chroma filters (`None`: no chroma scaled).
    pub chroma: Option<PlaneScaler>,
}

impl StreamScaler {
    /// Filters for a stream of luma size `src` scaled to `dst`; with `chroma` (the source and
    /// target chroma plane sizes and their siting) the chroma planes' too.
    ///
    /// Errors: as [`PlaneScaler::new`].
    pub fn new(
        method: ScaleMethod,
        src: (usize, usize),
        dst: (usize, usize),
        chroma: Option<ChromaScaling>,
    ) -> Result<Self, ScaleError> {
        let luma = PlaneScaler::new(method, src, dst, Siting::default())?;
        let chroma = chroma
            .map(|(s, d, siting)| PlaneScaler::new(method, s, d, siting))
            .transpose()?;
        Ok(Self {
            method,
            luma,
            chroma,
        })
    }

    /// The stream's samples converted by `range` as well (fused with the scaling; `None`
    /// leaves them as they are).
    pub fn with_range(mut self, range: Option<RangeConversion>) -> Self {
        self.luma.range = range;
        if let Some(c) = self.chroma.as_mut() {
            c.range = range;
        }
        self
    }

    /// The range conversion the stream goes through, if any.
    pub fn range(&self) -> Option<RangeConversion> {
        self.luma.range
    }

    /// Whether the stream changes size (a stream only converted keeps its size).
    pub fn resizes(&self) -> bool {
        self.luma.src() != self.luma.dst()
    }
}

/// How each stream of a pair reaches the scoring size: `None` for a stream already at it.
///
/// The pair form of [`Scaling`] (one rendition), kept for callers that name the two streams
/// ([`crate::engine::CpuBackend::with_scaling`] and [`crate::engine::CudaBackend::new_scaled`]
/// take either, through `Into<Scaling>`). A scaled stream's planes arrive at the scaler's
/// source size, the others at the scoring size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InputScaling {
    /// The reference's scaler (only with a fixed scoring size other than its own).
    pub reference: Option<Arc<StreamScaler>>,
    /// The distorted stream's scaler (shared with the CPU pool's frames in flight).
    pub distorted: Option<Arc<StreamScaler>>,
}

impl InputScaling {
    /// Whether neither stream is scaled.
    pub fn is_identity(&self) -> bool {
        self.reference.is_none() && self.distorted.is_none()
    }

    /// The luma size each stream arrives at, given the scoring size.
    pub fn input_sizes(&self, scoring: (usize, usize)) -> [(usize, usize); 2] {
        let of = |s: &Option<Arc<StreamScaler>>| s.as_ref().map_or(scoring, |s| s.luma.src());
        [of(&self.reference), of(&self.distorted)]
    }

    /// The chroma size each stream arrives at, given the scoring chroma size.
    pub fn chroma_sizes(&self, scoring: Option<(usize, usize)>) -> [Option<(usize, usize)>; 2] {
        let of = |s: &Option<Arc<StreamScaler>>| match s.as_ref().and_then(|s| s.chroma.as_ref()) {
            Some(c) => Some(c.src()),
            None => scoring,
        };
        [of(&self.reference), of(&self.distorted)]
    }
}

impl From<InputScaling> for Scaling {
    /// The scaling of one rendition: the pair's distorted stream is rendition 0.
    fn from(s: InputScaling) -> Self {
        Self {
            reference: s.reference,
            renditions: vec![s.distorted],
        }
    }
}

/// How the streams of a frame set reach the scoring size: the reference's scaler (only with
/// a fixed scoring size other than its own) and one per rendition (`None` for a rendition at
/// the scoring size), in the order of the backend's rendition slots. Its number of
/// renditions is the number of slots a backend made with it scores (1: a pair).
///
/// Both backends take one ([`crate::engine::CpuBackend::with_scaling`],
/// [`crate::engine::CudaBackend::new_scaled`]) and scale before any feature reads the frames;
/// a scaled stream's planes arrive at the scaler's source size, the others at the scoring
/// size.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scaling {
    /// The reference's scaler.
    pub reference: Option<Arc<StreamScaler>>,
    /// Each rendition's scaler; its length is the number of renditions the backend scores.
    pub renditions: Vec<Option<Arc<StreamScaler>>>,
}

/// The former name of [`Scaling`] (a ladder's scaling: any number of renditions).
pub type LadderScaling = Scaling;

impl Scaling {
    /// One rendition, no stream scaled (a pair at the scoring size).
    pub fn unscaled_pair() -> Self {
        InputScaling::default().into()
    }

    /// Whether no stream is scaled.
    pub fn is_identity(&self) -> bool {
        self.reference.is_none() && self.renditions.iter().all(Option::is_none)
    }

    /// Rendition `k`'s scaler (`None` for a rendition at the scoring size or outside the
    /// set).
    pub fn rendition(&self, k: usize) -> Option<&Arc<StreamScaler>> {
        self.renditions.get(k).and_then(Option::as_ref)
    }

    /// The luma size rendition `k` arrives at, given the scoring size.
    pub fn rendition_size(&self, k: usize, scoring: (usize, usize)) -> (usize, usize) {
        self.rendition(k).map_or(scoring, |s| s.luma.src())
    }

    /// The pair scaling of rendition `k` (its scaler beside the reference's).
    pub fn pair(&self, k: usize) -> InputScaling {
        InputScaling {
            reference: self.reference.clone(),
            distorted: self.rendition(k).cloned(),
        }
    }
}
