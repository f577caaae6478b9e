//! What PSNR-HVS's definition and its two halves share: the registry name and output names, the
//! block step, the CSF and masking tables, Daala's integer DCT and the arithmetic from block sums
//! to scores.

/// The registry name.
pub(super) const FEATURE: &str = "psnr_hvs";

/// The output names, in libvmaf's order.
pub(super) const OUTPUTS: [&str; 4] = ["psnr_hvs_y", "psnr_hvs_cb", "psnr_hvs_cr", "psnr_hvs"];

/// Distance in samples between the top-left corners of neighbouring 8x8 blocks, across and
/// down (libvmaf's `_step`): 7, so blocks overlap by one row / column.
pub const STEP: usize = 7;

/// Most bits per sample libvmaf's `psnr_hvs` takes (its `init` refuses more; the 32-bit
/// integer DCT has no headroom for 16-bit samples).
pub const MAX_BPC: u32 = 12;

/// The factor that turns a CSF weight into its masking weight (`mask = (csf * k)^2`), in
/// double precision as libvmaf's source writes it.
const MASK_SCALE: f64 = 0.3885746225901003;

/// Contrast sensitivity weights of the 8x8 DCT coefficients (row: vertical frequency,
/// column: horizontal), luma: Xiph's normalised inverse quantisation matrix at the point of
/// transparency, as published in Daala's `tools/dump_psnrhvs.c` and libvmaf's
/// `third_party/xiph/psnr_hvs.c` (`csf_y`). Kept as the decimal literals of the source and
/// rounded to `f32` through `f64` ([`Tables::new`]), as a C `float` initialiser is.
#[rustfmt::skip]
pub const CSF_Y: [f64; 64] = [
    1.6193873005, 2.2901594831, 2.08509755623, 1.48366094411, 1.00227514334, 0.678296995242, 0.466224900598, 0.3265091542,
    2.2901594831, 1.94321815382, 2.04793073064, 1.68731108984, 1.2305666963, 0.868920337363, 0.61280991668, 0.436405793551,
    2.08509755623, 2.04793073064, 1.34329019223, 1.09205635862, 0.875748795257, 0.670882927016, 0.501731932449, 0.372504254596,
    1.48366094411, 1.68731108984, 1.09205635862, 0.772819797575, 0.605636379554, 0.48309405692, 0.380429446972, 0.295774038565,
    1.00227514334, 1.2305666963, 0.875748795257, 0.605636379554, 0.448996256676, 0.352889268808, 0.283006984131, 0.226951348204,
    0.678296995242, 0.868920337363, 0.670882927016, 0.48309405692, 0.352889268808, 0.27032073436, 0.215017739696, 0.17408067321,
    0.466224900598, 0.61280991668, 0.501731932449, 0.380429446972, 0.283006984131, 0.215017739696, 0.168869545842, 0.136153931001,
    0.3265091542, 0.436405793551, 0.372504254596, 0.295774038565, 0.226951348204, 0.17408067321, 0.136153931001, 0.109083846276,
];

/// As [`CSF_Y`] for Cb (`csf_cb420`). libvmaf uses it for Cb whatever the subsampling.
#[rustfmt::skip]
pub const CSF_CB: [f64; 64] = [
    1.91113096927, 2.46074210438, 1.18284184739, 1.14982565193, 1.05017074788, 0.898018824055, 0.74725392039, 0.615105596242,
    2.46074210438, 1.58529308355, 1.21363250036, 1.38190029285, 1.33100189972, 1.17428548929, 0.996404342439, 0.830890433625,
    1.18284184739, 1.21363250036, 0.978712413627, 1.02624506078, 1.03145147362, 0.960060382087, 0.849823426169, 0.731221236837,
    1.14982565193, 1.38190029285, 1.02624506078, 0.861317501629, 0.801821139099, 0.751437590932, 0.685398513368, 0.608694761374,
    1.05017074788, 1.33100189972, 1.03145147362, 0.801821139099, 0.676555426187, 0.605503172737, 0.55002013668, 0.495804539034,
    0.898018824055, 1.17428548929, 0.960060382087, 0.751437590932, 0.605503172737, 0.514674450957, 0.454353482512, 0.407050308965,
    0.74725392039, 0.996404342439, 0.849823426169, 0.685398513368, 0.55002013668, 0.454353482512, 0.389234902883, 0.342353999733,
    0.615105596242, 0.830890433625, 0.731221236837, 0.608694761374, 0.495804539034, 0.407050308965, 0.342353999733, 0.295530605237,
];

/// As [`CSF_Y`] for Cr (`csf_cr420`). libvmaf uses it for Cr whatever the subsampling.
#[rustfmt::skip]
pub const CSF_CR: [f64; 64] = [
    2.03871978502, 2.62502345193, 1.26180942886, 1.11019789803, 1.01397751469, 0.867069376285, 0.721500455585, 0.593906509971,
    2.62502345193, 1.69112867013, 1.17180569821, 1.3342742857, 1.28513006198, 1.13381474809, 0.962064122248, 0.802254508198,
    1.26180942886, 1.17180569821, 0.944981930573, 0.990876405848, 0.995903384143, 0.926972725286, 0.820534991409, 0.706020324706,
    1.11019789803, 1.3342742857, 0.990876405848, 0.831632933426, 0.77418706195, 0.725539939514, 0.661776842059, 0.587716619023,
    1.01397751469, 1.28513006198, 0.995903384143, 0.77418706195, 0.653238524286, 0.584635025748, 0.531064164893, 0.478717061273,
    0.867069376285, 1.13381474809, 0.926972725286, 0.725539939514, 0.584635025748, 0.496936637883, 0.438694579826, 0.393021669543,
    0.721500455585, 0.962064122248, 0.820534991409, 0.661776842059, 0.531064164893, 0.438694579826, 0.375820256136, 0.330555063063,
    0.593906509971, 0.802254508198, 0.706020324706, 0.587716619023, 0.478717061273, 0.393021669543, 0.330555063063, 0.285345396658,
];

/// One plane's weights in single precision, as both halves use them (row-major 8x8, index
/// `8 * vertical + horizontal` frequency).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tables {
    /// CSF weights.
    pub csf: [f32; 64],
    /// Masking weights `(csf * MASK_SCALE)^2` (computed in `f64`, rounded to `f32`), with 0 for
    /// the DC coefficient, which the masking energy leaves out.
    pub mask: [f32; 64],
    /// The masking weights again as divisors of the masking threshold, with `+inf` for the DC
    /// coefficient, whose error is never masked (`threshold / inf = 0`).
    pub divisor: [f32; 64],
}

impl Tables {
    /// The tables of plane `plane` (0: Y, 1: Cb, 2: Cr; above 2 as Cr).
    pub fn new(plane: usize) -> Self {
        let src = match plane {
            0 => &CSF_Y,
            1 => &CSF_CB,
            _ => &CSF_CR,
        };
        let mut t = Self {
            csf: [0.0; 64],
            mask: [0.0; 64],
            divisor: [0.0; 64],
        };
        for (k, &c) in src.iter().enumerate() {
            let csf = c as f32;
            let m = f64::from(csf) * MASK_SCALE;
            let mask = (m * m) as f32;
            t.csf[k] = csf;
            t.mask[k] = mask;
            t.divisor[k] = mask;
        }
        t.mask[0] = 0.0;
        t.divisor[0] = f32::INFINITY;
        t
    }
}

/// Halves `a`, rounding towards zero (Daala's `OD_DCT_RSHIFT(a, 1)`), lane by lane.
#[inline(always)]
fn half<const N: usize>(a: [i32; N]) -> [i32; N] {
    a.map(|a| (((a as u32) >> 31) as i32).wrapping_add(a) >> 1)
}

/// `(a * m + 2^(s-1)) >> s` in wrapping 32-bit arithmetic, lane by lane: one lifting step's
/// rounded fixed-point product.
#[inline(always)]
fn lift<const N: usize>(a: [i32; N], m: i32, s: u32) -> [i32; N] {
    a.map(|a| a.wrapping_mul(m).wrapping_add(1 << (s - 1)) >> s)
}

#[inline(always)]
fn add<const N: usize>(a: [i32; N], b: [i32; N]) -> [i32; N] {
    std::array::from_fn(|l| a[l].wrapping_add(b[l]))
}

#[inline(always)]
fn sub<const N: usize>(a: [i32; N], b: [i32; N]) -> [i32; N] {
    std::array::from_fn(|l| a[l].wrapping_sub(b[l]))
}

/// Daala's 8-point integer type-II DCT (`od_bin_fdct8`) of `N` independent vectors side by
/// side (`x[k][lane]`: input `k` of each): lifting steps in 32-bit integers, orthonormal to
/// within rounding (the DC output is about `sum / sqrt(8)`). Inputs of up to 12 bits (or
/// their first-pass outputs) cannot overflow; the arithmetic wraps otherwise.
/// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/third_party/xiph/psnr_hvs.c.
#[inline(always)]
pub fn fdct8<const N: usize>(x: [[i32; N]; 8]) -> [[i32; N]; 8] {
    // The inputs in the order of the butterflies.
    let (mut t0, mut t4, mut t2, mut t6) = (x[0], x[1], x[2], x[3]);
    let (mut t7, mut t3, mut t5, mut t1) = (x[4], x[5], x[6], x[7]);
    // Sum / difference pairs.
    t1 = sub(t0, t1);
    let t1h = half(t1);
    t0 = sub(t0, t1h);
    t4 = add(t4, t5);
    let t4h = half(t4);
    t5 = sub(t5, t4h);
    t3 = sub(t2, t3);
    t2 = sub(t2, half(t3));
    t6 = add(t6, t7);
    let t6h = half(t6);
    t7 = sub(t6h, t7);
    // The even half: a 4-point DCT.
    t0 = add(t0, t6h);
    t6 = sub(t0, t6);
    t2 = sub(t4h, t2);
    t4 = sub(t2, t4);
    // Its 2-point DCT (a pi/4 rotation in three lifts).
    t0 = sub(t0, lift(t4, 13573, 15));
    t4 = add(t4, lift(t0, 11585, 14));
    t0 = sub(t0, lift(t4, 13573, 15));
    // Its 2-point DST-IV (a 3pi/8 rotation).
    t6 = sub(t6, lift(t2, 21895, 15));
    t2 = add(t2, lift(t6, 15137, 14));
    t6 = sub(t6, lift(t2, 21895, 15));
    // The odd half: a 4-point DST-IV.
    t3 = add(t3, lift(t5, 19195, 15));
    t5 = add(t5, lift(t3, 11585, 14));
    t3 = sub(t3, lift(t5, 7489, 13));
    t7 = sub(half(t5), t7);
    t5 = sub(t5, t7);
    t3 = sub(t1h, t3);
    t1 = sub(t1, t3);
    // pi/16 rotation.
    t7 = add(t7, lift(t1, 3227, 15));
    t1 = sub(t1, lift(t7, 6393, 15));
    t7 = add(t7, lift(t1, 3227, 15));
    // 3pi/16 rotation.
    t5 = add(t5, lift(t3, 2485, 13));
    t3 = sub(t3, lift(t5, 18205, 15));
    t5 = add(t5, lift(t3, 2485, 13));
    [t0, t1, t2, t3, t4, t5, t6, t7]
}

/// The 8x8 integer DCT of a row-major block (Daala's `od_bin_fdct8x8`): [`fdct8`] down each
/// column, then along each row of that result. Output index `8 * vertical + horizontal`
/// frequency; `out[0]` is the DC, about `sum / 8`.
#[inline(always)]
pub fn fdct8x8(x: &[i32; 64]) -> [i32; 64] {
    let mut z = [0i32; 64];
    for c in 0..8 {
        let col = fdct8::<1>(std::array::from_fn(|k| [x[8 * k + c]]));
        for (k, v) in col.into_iter().enumerate() {
            z[8 * c + k] = v[0];
        }
    }
    let mut y = [0i32; 64];
    for i in 0..8 {
        let row = fdct8::<1>(std::array::from_fn(|k| [z[8 * k + i]]));
        for (k, v) in row.into_iter().enumerate() {
            y[8 * i + k] = v[0];
        }
    }
    y
}

/// 8x8 blocks of a `len`-sample side at [`STEP`]: `(len - 8) / 7 + 1`, 0 below 8.
pub fn blocks(len: usize) -> usize {
    if len < 8 {
        0
    } else {
        (len - 8) / STEP + 1
    }
}

/// A plane's PSNR-HVS score (a normalised weighted mean squared error, >= 0) from the
/// single-precision `sum` of its blocks' squared weighted errors over `blocks` 8x8 blocks at
/// `bpc` bits: `sum / (64 * blocks) / (2^bpc - 1)^2`, each division in `f32` as libvmaf's
/// `calc_psnrhvs` does (`blocks` 0 gives NaN, as libvmaf; the instance refuses such planes).
pub fn plane_score(sum: f32, blocks: usize, bpc: u32) -> f64 {
    let pixels = (64 * blocks) as i32 as f32;
    let peak = (1i32 << bpc.min(16)) - 1;
    let r = sum / pixels;
    f64::from(r / peak.wrapping_mul(peak) as f32)
}

/// The dB value of a score: `-10 log10(score)`; `+inf` for 0.
pub fn db(score: f64) -> f64 {
    10.0 * -score.log10()
}

/// `psnr_hvs`'s score from the plane scores: `0.8 * y + 0.1 * (cb + cr)` ([`db`] of it is the
/// output).
pub fn combined(y: f64, cb: f64, cr: f64) -> f64 {
    y * 0.8 + 0.1 * (cb + cr)
}

/// The four outputs `[psnr_hvs_y, psnr_hvs_cb, psnr_hvs_cr, psnr_hvs]` in dB from the plane
/// scores.
pub fn outputs(score: [f64; 3]) -> [f64; 4] {
    [
        db(score[0]),
        db(score[1]),
        db(score[2]),
        db(combined(score[0], score[1], score[2])),
    ]
}
