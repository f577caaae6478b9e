//! What the integer VIF's CPU extractor (`mod.rs`), its filters (`filters.rs`) and its SIMD
//! kernels (`simd.rs`) share: the filter taps, padding and block sizes, the row buffers, images
//! and accumulators they pass each other, and the row and chunk helpers.

/// 1-D filter taps per scale (Q16, each sums to 65536), libvmaf `vif_filter1d_table`.
pub(super) const FILTER0: [u16; 17] = [
    489, 935, 1640, 2640, 3896, 5274, 6547, 7455, 7784, 7455, 6547, 5274, 3896, 2640, 1640, 935,
    489,
];

pub(super) const FILTER1: [u16; 9] = [1244, 3663, 7925, 12590, 14692, 12590, 7925, 3663, 1244];

pub(super) const FILTER2: [u16; 5] = [3571, 16004, 26386, 16004, 3571];

pub(super) const FILTER3: [u16; 3] = [10904, 43728, 10904];

/// Left/right margin of the padded row buffers (largest half filter width).
pub(super) const PAD: usize = 8;

/// Column block processed with accumulators kept in registers.
pub(super) const BLOCK: usize = 8;

/// `sigma_nsq` of libvmaf: the noise variance 2.0 in Q16.
pub(super) const SIGMA_NSQ: i32 = 65536 << 1;

/// Row scratch shared by the statistic and the subsampling passes: vertically filtered
/// means and second moments of one row.
pub(super) struct RowBuffers {
    pub(super) mu1: Vec<u16>,
    pub(super) mu2: Vec<u16>,
    pub(super) ref_sq: Vec<u32>,
    pub(super) dis_sq: Vec<u32>,
    pub(super) ref_dis: Vec<u32>,
    /// A ladder's reference half of one output row of the statistic (no margins): the
    /// horizontally filtered mean (the Q32 sum, modulo 2^32) and `sigma1_sq`.
    pub(super) ref_m1: Vec<u32>,
    pub(super) ref_s1: Vec<i32>,
}

/// Which quantities a pass of the statistic computes: [`BOTH`] planes' (a pair), the
/// reference's only ([`REF`]: its mean and variance, into [`RowBuffers::ref_m1`] /
/// [`RowBuffers::ref_s1`]) or the distorted plane's and the covariance ([`DIS`], reading the
/// reference's from a [`REF`] pass of the same row). A [`REF`] pass and a [`DIS`] pass give
/// each quantity the value a [`BOTH`] pass gives it: the same arithmetic on the same samples.
pub(super) const BOTH: u8 = 0;

pub(super) const REF: u8 = 1;

pub(super) const DIS: u8 = 2;

impl RowBuffers {
    /// Length of the shortest of the five rows.
    pub(super) fn shortest(&self) -> usize {
        let means = self.mu1.len().min(self.mu2.len());
        let moments = self
            .ref_sq
            .len()
            .min(self.dis_sq.len())
            .min(self.ref_dis.len());
        means.min(moments)
    }
}

/// One luma plane as the filters see it.
#[derive(Clone, Copy)]
pub(super) struct Image<'a> {
    pub(super) data: &'a [u16],
    pub(super) stride: usize,
    pub(super) width: usize,
    pub(super) height: usize,
}

impl<'a> Image<'a> {
    /// Row `y` mirrored into the image (`-1 -> 1`, `h -> h - 2`), exactly `width` long.
    #[inline]
    pub(super) fn mirrored_row(&self, y: isize) -> &'a [u16] {
        let last = self.height.saturating_sub(1) as isize;
        let y = if y < 0 {
            -y
        } else if y > last {
            2 * last - y
        } else {
            y
        };
        let y = y.clamp(0, last) as usize;
        let start = y * self.stride;
        self.data.get(start..start + self.width).unwrap_or(&[])
    }
}

/// Fixed-point accumulators of one scale (libvmaf's `accum_*`).
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Accum {
    pub(super) num_log: i64,
    pub(super) den_log: i64,
    pub(super) num_non_log: i64,
    pub(super) den_non_log: i64,
}

/// Rounding of the vertical pass of the statistic.
#[derive(Clone, Copy)]
pub(super) enum VpShift {
    /// 8-bit scale 0: means `(sum + 128) >> 8`, second moments unshifted (sums fit `u32`).
    Narrow,
    /// Everything else: second moments summed in 64 bits, then rounded and shifted
    /// (`sq_shift <= 16`, `sq_round = 1 << (sq_shift - 1)`).
    Wide {
        mu_round: u32,
        mu_shift: u32,
        sq_round: u32,
        sq_shift: u32,
    },
}

impl VpShift {
    pub(super) const SCALED: Self = Self::Wide {
        mu_round: 32768,
        mu_shift: 16,
        sq_round: 32768,
        sq_shift: 16,
    };

    /// `(mu_round, mu_shift, sq_round, sq_shift)`; the `sq_*` pair is unused for `Narrow`.
    pub(super) fn params(self) -> (u32, u32, u32, u32) {
        match self {
            Self::Narrow => (128, 8, 0, 0),
            Self::Wide {
                mu_round,
                mu_shift,
                sq_round,
                sq_shift,
            } => (mu_round, mu_shift, sq_round, sq_shift),
        }
    }
}

/// Tap rows for output row `center`: mirrored rows `center - N / 2 ..= center + N / 2`.
#[inline(always)]
pub(super) fn gather_rows<'a, const N: usize>(img: Image<'a>, center: usize) -> [&'a [u16]; N] {
    let half = (N / 2) as isize;
    core::array::from_fn(|k| img.mirrored_row(center as isize - half + k as isize))
}

/// Mirrors `half` samples around both ends of `buf[PAD..PAD + w]` (`-f -> f`,
/// `w - 1 + f -> w - 1 - f`), libvmaf's `PADDING_SQ_DATA`.
#[inline]
pub(super) fn mirror_pad<T: Copy>(buf: &mut [T], w: usize, half: usize) {
    for f in 1..=half {
        if let Some(&v) = buf.get(PAD + f) {
            if let Some(d) = buf.get_mut(PAD - f) {
                *d = v;
            }
        }
        if let Some(&v) = buf.get(PAD + w - 1 - f) {
            if let Some(d) = buf.get_mut(PAD + w - 1 + f) {
                *d = v;
            }
        }
    }
}

/// Fixed-size view `s[at..at + N]`.
#[inline(always)]
pub(super) fn chunk<T, const N: usize>(s: &[T], at: usize) -> Option<&[T; N]> {
    s.get(at..).and_then(|t| t.first_chunk::<N>())
}

#[inline(always)]
pub(super) fn chunk_mut<T, const N: usize>(s: &mut [T], at: usize) -> Option<&mut [T; N]> {
    s.get_mut(at..).and_then(|t| t.first_chunk_mut::<N>())
}

/// Stand-in for the x86-64 SIMD scratch elsewhere (never made).
#[cfg(not(target_arch = "x86_64"))]
pub(super) enum Wide {}
