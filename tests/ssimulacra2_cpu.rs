//! SSIMULACRA2 on the CPU (`gstvmafcompare::cpu::ssimulacra2`) on Netflix's src01 576x324
//! pair (../shared/vmaf-reference): a golden value, the oracle against the `ssimulacra2`
//! crate's own YUV route (yuvxyb 0.4.2), and the wiring into `CpuBackend`.
//!
//! `cargo test --release --test ssimulacra2_cpu -- --nocapture` prints the measured
//! differences.

mod common;

use gstvmafcompare::engine::colour::{Matrix, Transfer, YuvToRgb};
use gstvmafcompare::engine::frame::{ChromaPair, LumaPlane};
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::engine::{FeatureSet, Geometry, Model, ScorePlan};
use gstvmafcompare::features::adm::AdmConfig;
use gstvmafcompare::features::ssimulacra2::cpu::{to_linear_rgb, Ssimulacra2};
use gstvmafcompare::features::vif::VifConfig;
use ssimulacra2::{
    compute_frame_ssimulacra2, ColorPrimaries, Frame, LinearRgb, MatrixCoefficients, Plane, Rgb,
    TransferCharacteristic, Yuv, YuvConfig,
};

const W: usize = 576;
const H: usize = 324;
const CW: usize = W / 2;
const CH: usize = H / 2;

/// Regression value: SSIMULACRA2 of frame 0 of src01 576x324 8-bit (I420, BT.709 matrix,
/// limited range, BT.709 transfer) computed once by this implementation; the conversion is
/// cross-checked against yuvxyb's by `oracle_matches_yuvxyb_matrix_range_and_chroma`.
const GOLDEN_8BIT_FRAME0: f64 = 46.227_372_199;

/// BT.709, limited range, BT.709 transfer: the colorimetry of the src01 pair (and the default).
const BT709: YuvToRgb = YuvToRgb {
    matrix: Matrix::Bt709,
    full_range: false,
    transfer: Transfer::Bt709,
    defaulted: false,
};

/// One I420 frame as `u16` planes `[Y, Cb, Cr]`.
struct Yuv420 {
    planes: [Vec<u16>; 3],
    bpc: u32,
}

impl Yuv420 {
    fn luma(&self) -> LumaPlane<'_> {
        LumaPlane::packed(&self.planes[0], W, H, self.bpc).unwrap()
    }

    fn chroma(&self) -> [LumaPlane<'_>; 2] {
        [1, 2].map(|i| LumaPlane::packed(&self.planes[i], CW, CH, self.bpc).unwrap())
    }

    /// Samples outside the nominal limited range, per plane.
    fn out_of_range(&self) -> [usize; 3] {
        let s = 1u16 << (self.bpc - 8);
        let count = |v: &[u16], hi: u16| v.iter().filter(|&&x| x < 16 * s || x > hi * s).count();
        [
            count(&self.planes[0], 235),
            count(&self.planes[1], 240),
            count(&self.planes[2], 240),
        ]
    }
}

/// Frame `index` of the src01 576x324 file `which` (`"ref"`, `"dis"`) at 8 or 10 bits.
fn read_frame(which: &str, bpc: u32, index: usize) -> Yuv420 {
    let tag = if bpc == 8 { "420p8" } else { "420p10" };
    let path = common::reference_dir().join(format!("src01_{which}_{W}x{H}_{tag}_3f.yuv"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let bytes_per = if bpc == 8 { 1 } else { 2 };
    let frame = (W * H + 2 * CW * CH) * bytes_per;
    assert_eq!(bytes.len(), 3 * frame, "{}", path.display());
    let data = &bytes[index * frame..(index + 1) * frame];
    let samples: Vec<u16> = if bpc == 8 {
        data.iter().map(|&b| u16::from(b)).collect()
    } else {
        data.chunks_exact(2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .collect()
    };
    let (y, c) = samples.split_at(W * H);
    let (u, v) = c.split_at(CW * CH);
    Yuv420 {
        planes: [y.to_vec(), u.to_vec(), v.to_vec()],
        bpc,
    }
}

fn pair(bpc: u32, index: usize) -> (Yuv420, Yuv420) {
    (read_frame("ref", bpc, index), read_frame("dis", bpc, index))
}

/// Our score of a frame pair with conversion `conv`.
fn ours(r: &Yuv420, d: &Yuv420, conv: &YuvToRgb) -> f64 {
    let chroma = ChromaPair {
        reference: r.chroma(),
        distorted: d.chroma(),
    };
    Ssimulacra2::new()
        .score(&r.luma(), &d.luma(), Some(&chroma), conv)
        .unwrap()
}

/// The frame as yuvxyb's 4:2:0 `Yuv<u8>` (8-bit only), BT.709 matrix and primaries, limited
/// range, transfer `transfer`.
fn to_yuvxyb(f: &Yuv420, transfer: TransferCharacteristic) -> Yuv<u8> {
    assert_eq!(f.bpc, 8);
    let plane = |i: usize, w: usize, h: usize, dec: usize| {
        let mut p = Plane::new(w, h, dec, dec, 0, 0);
        let bytes: Vec<u8> = f.planes[i].iter().map(|&v| v as u8).collect();
        p.copy_from_raw_u8(&bytes, w, 1);
        p
    };
    let frame = Frame {
        planes: [plane(0, W, H, 0), plane(1, CW, CH, 1), plane(2, CW, CH, 1)],
    };
    let config = YuvConfig {
        bit_depth: 8,
        subsampling_x: 1,
        subsampling_y: 1,
        full_range: false,
        matrix_coefficients: MatrixCoefficients::BT709,
        transfer_characteristics: transfer,
        color_primaries: ColorPrimaries::BT709,
    };
    Yuv::new(frame, config).unwrap()
}

/// colour.rs step 4, BT.709 inverse OETF, written out again here.
fn bt709_inverse_oetf(c: f32) -> f32 {
    if c < 0.081 {
        c / 4.5
    } else {
        ((c + 0.099) / 1.099).powf(1.0 / 0.45)
    }
}

/// yuvxyb's R'G'B' (its normalisation, its 4:2:0 chroma lookup `(x >> 1, y >> 1)`, its
/// inverted matrix), then our clamp to [0, 1] and our transfer.
fn yuvxyb_then_our_transfer(f: &Yuv420) -> Vec<[f32; 3]> {
    let yuv = to_yuvxyb(f, TransferCharacteristic::Linear);
    let rgb = Rgb::try_from(&yuv).unwrap();
    rgb.data()
        .iter()
        .map(|p| p.map(|c| bt709_inverse_oetf(c.clamp(0.0, 1.0))))
        .collect()
}

fn our_rgb(f: &Yuv420, conv: &YuvToRgb) -> Vec<[f32; 3]> {
    let c = f.chroma();
    let mut out = Vec::new();
    to_linear_rgb(&f.luma(), Some([&c[0], &c[1]]), conv, &mut out);
    out
}

fn max_abs_diff(a: &[[f32; 3]], b: &[[f32; 3]]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .flat_map(|(p, q)| (0..3).map(move |c| (p[c] - q[c]).abs()))
        .fold(0.0, f32::max)
}

fn score_rgb(a: Vec<[f32; 3]>, b: Vec<[f32; 3]>) -> f64 {
    compute_frame_ssimulacra2(
        LinearRgb::new(a, W, H).unwrap(),
        LinearRgb::new(b, W, H).unwrap(),
    )
    .unwrap()
}

#[test]
fn golden_frame0_8bit() {
    let (r, d) = pair(8, 0);
    let score = ours(&r, &d, &BT709);
    eprintln!("src01 576x324 8-bit frame 0: ssimulacra2 = {score:.9}");
    assert!(
        (score - GOLDEN_8BIT_FRAME0).abs() < 1e-6,
        "{score:.9} vs golden {GOLDEN_8BIT_FRAME0:.9}"
    );
}

/// The oracle: where yuvxyb's conversion and ours must agree (matrix, range, 4:2:0 nearest
/// chroma at even sizes), they do. yuvxyb gives R'G'B' (transfer `Linear` = none); the clamp
/// to [0, 1] and the BT.709 transfer, where the two differ by design, are applied here as
/// colour.rs says. What remains is f32 rounding: yuvxyb normalises with `Y * scale + offset`
/// (ours `(Y - off) / range`) and uses the inverse of its RGB -> YUV matrix (ours the `Kr`,
/// `Kb` formulas). (yuvxyb also clamps Y' to [0, 1] and Cb', Cr' to [-0.5, 0.5] before the
/// matrix where we clamp R'G'B' after it; src01 has no sample outside 16..235 / 16..240, so
/// that difference does not act here, which the test checks.)
///
/// Tolerances: per pixel, 2e-6 on linear RGB (a few f32 ulps; measured 5.4e-7). On the
/// score, 1e-2: the metric core is ill-conditioned in f32 (its variances are
/// `blur(x^2) - blur(x)^2` against C2 = 0.0009, and the coarse-scale SSIM means carry
/// weights up to 225), so a 1-ulp change of every RGB value alone moves the score by a few
/// 1e-3; the test prints that noise floor beside the measured difference (3.5e-3).
#[test]
fn oracle_matches_yuvxyb_matrix_range_and_chroma() {
    let (r, d) = pair(8, 0);
    assert_eq!(r.out_of_range(), [0; 3]);
    assert_eq!(d.out_of_range(), [0; 3]);
    let (theirs_r, theirs_d) = (yuvxyb_then_our_transfer(&r), yuvxyb_then_our_transfer(&d));
    let (ours_r, ours_d) = (our_rgb(&r, &BT709), our_rgb(&d, &BT709));
    let px = max_abs_diff(&ours_r, &theirs_r).max(max_abs_diff(&ours_d, &theirs_d));
    let differing = ours_r
        .iter()
        .zip(&theirs_r)
        .chain(ours_d.iter().zip(&theirs_d))
        .flat_map(|(p, q)| (0..3).map(move |c| p[c] != q[c]))
        .filter(|&x| x)
        .count();
    let s_ours = ours(&r, &d, &BT709);
    assert_eq!(s_ours, score_rgb(ours_r.clone(), ours_d.clone()));
    let s_theirs = score_rgb(theirs_r, theirs_d);
    let diff = (s_ours - s_theirs).abs();
    // The noise floor: every nonzero RGB value of both frames moved by one ulp (up or down).
    let nudge = |v: &[[f32; 3]]| -> Vec<[f32; 3]> {
        let mut k = 0u32;
        v.iter()
            .map(|p| {
                p.map(|c| {
                    k = k.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    match (c > 0.0, k >> 31) {
                        (false, _) => c,
                        (true, 0) => f32::from_bits(c.to_bits() - 1),
                        (true, _) => f32::from_bits(c.to_bits() + 1),
                    }
                })
            })
            .collect()
    };
    let noise = (score_rgb(nudge(&ours_r), nudge(&ours_d)) - s_ours).abs();
    eprintln!(
        "oracle: max |linear RGB diff| {px:.3e} ({differing} of {} values differ); \
         ours {s_ours:.9}, yuvxyb matrix/range/chroma {s_theirs:.9}, |diff| {diff:.3e}; \
         1-ulp noise floor of the score {noise:.3e}",
        6 * W * H
    );
    assert!(px < 2e-6, "{px}");
    assert!(diff < 1e-2, "{diff}");
}

/// Our 4:2:0 route equals our route on 4:4:4 planes made by nearest upsampling (the sample
/// `(x * cw / w, y * ch / h)` = `(x / 2, y / 2)` at even sizes, yuvxyb's `x >> 1`).
#[test]
fn chroma_420_equals_nearest_upsampled_444() {
    let (r, d) = pair(8, 0);
    let up = |f: &Yuv420| {
        let c = |i: usize| -> Vec<u16> {
            (0..W * H)
                .map(|k| f.planes[i][(k / W / 2) * CW + (k % W) / 2])
                .collect()
        };
        [c(1), c(2)]
    };
    let (ru, du) = (up(&r), up(&d));
    fn full(p: &[u16]) -> LumaPlane<'_> {
        LumaPlane::packed(p, W, H, 8).unwrap()
    }
    let chroma = ChromaPair {
        reference: [full(&ru[0]), full(&ru[1])],
        distorted: [full(&du[0]), full(&du[1])],
    };
    let s444 = Ssimulacra2::new()
        .score(&r.luma(), &d.luma(), Some(&chroma), &BT709)
        .unwrap();
    let s420 = ours(&r, &d, &BT709);
    eprintln!("4:2:0 {s420:.9}, nearest-upsampled 4:4:4 {s444:.9}");
    assert_eq!(s420, s444);
}

/// yuvxyb's full route (`compute_frame_ssimulacra2(Yuv, Yuv)`) against ours, for the record:
/// with BT.709 video yuvxyb linearises with the BT.1886 EOTF (`c^2.4`, ours: the BT.709
/// inverse OETF), with sRGB with its own constants (alpha 1.0550107, linear below 0.0392935;
/// ours: 1.055, 0.04045), and it does not clamp R'G'B'. The scores differ accordingly; only
/// their finiteness and rough agreement (same content, same metric core) are asserted.
#[test]
fn yuvxyb_full_route_for_the_record() {
    let (r, d) = pair(8, 0);
    for (ours_conv, theirs_tf, label) in [
        (
            BT709,
            TransferCharacteristic::BT1886,
            "BT.709 (ours) vs BT.1886 (yuvxyb)",
        ),
        (
            YuvToRgb {
                transfer: Transfer::Srgb,
                ..BT709
            },
            TransferCharacteristic::SRGB,
            "sRGB (ours) vs sRGB (yuvxyb)",
        ),
    ] {
        let s_ours = ours(&r, &d, &ours_conv);
        let s_theirs =
            compute_frame_ssimulacra2(to_yuvxyb(&r, theirs_tf), to_yuvxyb(&d, theirs_tf)).unwrap();
        eprintln!(
            "full yuvxyb route, {label}: ours {s_ours:.6}, yuvxyb {s_theirs:.6}, diff {:+.6}",
            s_ours - s_theirs
        );
        assert!(s_ours.is_finite() && s_theirs.is_finite());
        assert!((s_ours - s_theirs).abs() < 10.0);
    }
}

/// The 10-bit file of the pair holds the 8-bit samples times 4, and the conversion scales
/// exactly with the depth (`(4 Y - 64) / 876` is `(Y - 16) / 219` in f32: powers of two), so
/// the 10-bit score equals the 8-bit one.
#[test]
fn ten_bit_equals_eight_bit() {
    let (r8, d8) = pair(8, 0);
    let (r10, d10) = pair(10, 0);
    for (a, b) in [(&r8, &r10), (&d8, &d10)] {
        for i in 0..3 {
            assert!(a.planes[i]
                .iter()
                .zip(&b.planes[i])
                .all(|(x, y)| x << 2 == *y));
        }
    }
    let s8 = ours(&r8, &d8, &BT709);
    let s10 = ours(&r10, &d10, &BT709);
    eprintln!("frame 0: 8-bit {s8:.9}, 10-bit {s10:.9}");
    assert_eq!(s8, s10);
}

/// `CpuBackend` fills the `ssimulacra2` value with `Ssimulacra2::score` under the
/// conversion given by `with_colour` (BT.709 limited by default), grey without chroma.
#[test]
fn cpu_backend_wiring() {
    let (r, d) = pair(8, 1);
    let features = FeatureSet::parse("ssimulacra2").unwrap();
    let model = Model::load("vmaf_v0.6.1").unwrap();
    let plan = ScorePlan::for_model(&model, features, true).unwrap();
    let backend = |conv: Option<YuvToRgb>| {
        let b = CpuBackend::new(plan.layout(), Geometry::luma(W, H, 8)).unwrap();
        match conv {
            Some(c) => b.with_colour(c).unwrap(),
            None => b,
        }
    };
    let chroma = ChromaPair {
        reference: r.chroma(),
        distorted: d.chroma(),
    };
    let full = YuvToRgb {
        matrix: Matrix::Bt601,
        full_range: true,
        transfer: Transfer::Srgb,
        defaulted: false,
    };
    let mut s = Ssimulacra2::new();
    for conv in [None, Some(BT709), Some(full)] {
        let c = conv.unwrap_or_default();
        let mut b = backend(conv);
        let raw = b
            .extract_frame(&r.luma(), &d.luma(), Some(&chroma), true)
            .unwrap();
        let want = s.score(&r.luma(), &d.luma(), Some(&chroma), &c).unwrap();
        assert_eq!(raw.get("ssimulacra2"), Some(want), "{c}");
        let grey = b.extract(&r.luma(), &d.luma(), true).unwrap();
        let want_grey = s.score(&r.luma(), &d.luma(), None, &c).unwrap();
        assert_eq!(grey.get("ssimulacra2"), Some(want_grey), "{c}");
        eprintln!("frame 1, {c}: ssimulacra2 {want:.6} (grey {want_grey:.6})");
    }
    // Not asked for: not computed, not in the values.
    let mut plain = CpuBackend::vmaf(W, H, 8, VifConfig::default(), AdmConfig::default()).unwrap();
    let raw = plain
        .extract_frame(&r.luma(), &d.luma(), Some(&chroma), true)
        .unwrap();
    assert_eq!(raw.get("ssimulacra2"), None);
    assert!(raw.get("integer_adm2").is_some());
}
