//! VIF bit-exactness against libvmaf 3.2.0's own JSON output, plus size and option checks.
use gstvmafcompare::engine::frame::{FeatureError, LumaPlane};
use gstvmafcompare::features::vif::cpu::*;
use gstvmafcompare::features::vif::*;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference");

/// Luma planes of every frame of a raw I420 / I420_10LE file.
fn read_luma(path: &str, w: usize, h: usize, bpc: u32) -> Vec<Vec<u16>> {
    let bytes = std::fs::read(path).expect("read yuv");
    let bps = if bpc > 8 { 2 } else { 1 };
    let chroma = w.div_ceil(2) * h.div_ceil(2);
    let frame = (w * h + 2 * chroma) * bps;
    assert_eq!(bytes.len() % frame, 0);
    bytes
        .chunks_exact(frame)
        .map(|f| {
            let y = &f[..w * h * bps];
            if bps == 1 {
                y.iter().map(|&b| u16::from(b)).collect()
            } else {
                y.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect()
            }
        })
        .collect()
}

fn json_scales(path: &str) -> Vec<[f64; 4]> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    v["frames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let m = &f["metrics"];
            std::array::from_fn(|i| m[format!("integer_vif_scale{i}")].as_f64().unwrap())
        })
        .collect()
}

/// Returns per-frame scores and the max |diff| against the JSON.
fn run_pair(
    size: &str,
    fmt: &str,
    n: usize,
    w: usize,
    h: usize,
    bpc: u32,
) -> (Vec<VifScores>, f64) {
    let r = read_luma(&format!("{DIR}/src01_ref_{size}_{fmt}_{n}f.yuv"), w, h, bpc);
    let d = read_luma(&format!("{DIR}/src01_dis_{size}_{fmt}_{n}f.yuv"), w, h, bpc);
    let expected = json_scales(&format!("{DIR}/libvmaf-3.2.0_src01_{size}_{fmt}_{n}f.json"));
    assert_eq!(r.len(), n);
    assert_eq!(expected.len(), n);
    let mut vif = Vif::new(w, h, bpc).unwrap();
    let cfg = VifConfig::default();
    let mut max_diff = 0.0f64;
    let mut out = Vec::new();
    for (fi, ((rf, df), exp)) in r.iter().zip(&d).zip(&expected).enumerate() {
        let rp = LumaPlane::packed(rf, w, h, bpc).unwrap();
        let dp = LumaPlane::packed(df, w, h, bpc).unwrap();
        let s = vif.compute(&rp, &dp, &cfg).unwrap();
        for (i, (ours, theirs)) in s.scale.iter().zip(exp.iter()).enumerate() {
            let diff = (ours - theirs).abs();
            max_diff = max_diff.max(diff);
            assert!(
                diff <= 1e-6,
                "{size} {fmt} frame {fi} scale {i}: ours {ours} libvmaf {theirs}"
            );
        }
        out.push(s);
    }
    eprintln!("{size} {fmt}: max |diff| = {max_diff:e}");
    (out, max_diff)
}

fn mean0(s: &[VifScores]) -> f64 {
    s.iter().map(|x| x.scale[0]).sum::<f64>() / s.len() as f64
}

#[test]
fn matches_libvmaf_160x90_8bit() {
    let (s, _) = run_pair("160x90", "420p8", 48, 160, 90, 8);
    // golden.md: quality_runner_test.py:1291, places=4.
    assert!(
        (mean0(&s) - 0.6895391472210215).abs() < 5e-5,
        "{}",
        mean0(&s)
    );
}

#[test]
fn matches_libvmaf_576x324_10bit() {
    let (s, _) = run_pair("576x324", "420p10", 3, 576, 324, 10);
    // golden.md: vmafexec_test.py:429, places=4.
    assert!(
        (mean0(&s) - 0.4330893333333334).abs() < 5e-5,
        "{}",
        mean0(&s)
    );
}

#[test]
fn matches_libvmaf_576x324_8bit() {
    let (s8, _) = run_pair("576x324", "420p8", 3, 576, 324, 8);
    assert!(
        (mean0(&s8) - 0.4330893333333334).abs() < 5e-5,
        "{}",
        mean0(&s8)
    );
}

#[test]
fn sizes_around_minimum() {
    let cfg = VifConfig::default();
    for bpc in [8u32, 10] {
        let max = (1u32 << bpc) - 1;
        for h in 1..=40usize {
            for w in 1..=40usize {
                let mut seed = (w * 131 + h * 7) as u32;
                let mut next = || {
                    seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
                    ((seed >> 8) % (max + 1)) as u16
                };
                let r: Vec<u16> = (0..w * h).map(|_| next()).collect();
                let d: Vec<u16> = r.iter().map(|&x| x / 2 + next() / 4).collect();
                let made = Vif::new(w, h, bpc);
                if w < MIN_WIDTH || h < MIN_HEIGHT {
                    assert!(
                        matches!(made, Err(FeatureError::FrameTooSmall { .. })),
                        "{w}x{h}"
                    );
                    continue;
                }
                let mut vif = made.unwrap();
                let rp = LumaPlane::packed(&r, w, h, bpc).unwrap();
                let dp = LumaPlane::packed(&d, w, h, bpc).unwrap();
                let s = vif.compute(&rp, &dp, &cfg).unwrap();
                for i in 0..4 {
                    assert!(
                        s.scale[i].is_finite() && s.num[i].is_finite() && s.den[i] > 0.0,
                        "{w}x{h} {s:?}"
                    );
                }
                // Identical planes: VIF is 1 at every scale, up to the fixed-point
                // rounding of libvmaf's arithmetic.
                let same = vif.compute(&rp, &rp, &cfg).unwrap();
                for i in 0..4 {
                    assert!((same.scale[i] - 1.0).abs() < 1e-4, "{w}x{h} {same:?}");
                }
            }
        }
    }
}

#[test]
fn wrong_geometry_is_rejected() {
    let mut vif = Vif::new(32, 32, 10).unwrap();
    let a = vec![0u16; 32 * 32];
    let good = LumaPlane::packed(&a, 32, 32, 10).unwrap();
    let bad_bpc = LumaPlane::packed(&a, 32, 32, 8).unwrap();
    let bad_w = LumaPlane::packed(&a, 31, 32, 10).unwrap();
    let cfg = VifConfig::default();
    assert!(matches!(
        vif.compute(&good, &bad_bpc, &cfg),
        Err(FeatureError::WrongGeometry { .. })
    ));
    assert!(matches!(
        vif.compute(&bad_w, &good, &cfg),
        Err(FeatureError::WrongGeometry { .. })
    ));
    let short = LumaPlane {
        data: &a[..100],
        width: 32,
        height: 32,
        stride: 32,
        bpc: 10,
    };
    assert!(matches!(
        vif.compute(&short, &good, &cfg),
        Err(FeatureError::WrongGeometry { .. })
    ));
    assert!(vif.compute(&good, &good, &cfg).is_ok());
}

#[test]
fn strided_planes_match_packed() {
    let (w, h, stride) = (50usize, 37usize, 64usize);
    let mut seed = 12345u32;
    let mut next = || {
        seed = seed.wrapping_mul(1664525).wrapping_add(1013904223);
        ((seed >> 10) & 1023) as u16
    };
    let r: Vec<u16> = (0..w * h).map(|_| next()).collect();
    let d: Vec<u16> = r.iter().map(|&x| (x + next() / 8).min(1023)).collect();
    let pad = |p: &[u16]| {
        let mut v = vec![999u16; stride * h];
        for y in 0..h {
            v[y * stride..y * stride + w].copy_from_slice(&p[y * w..(y + 1) * w]);
        }
        v
    };
    let (rs, ds) = (pad(&r), pad(&d));
    let mut vif = Vif::new(w, h, 10).unwrap();
    let cfg = VifConfig::default();
    let a = vif
        .compute(
            &LumaPlane::packed(&r, w, h, 10).unwrap(),
            &LumaPlane::packed(&d, w, h, 10).unwrap(),
            &cfg,
        )
        .unwrap();
    let b = vif
        .compute(
            &LumaPlane::new(&rs, w, h, stride, 10).unwrap(),
            &LumaPlane::new(&ds, w, h, stride, 10).unwrap(),
            &cfg,
        )
        .unwrap();
    assert_eq!(a, b);
}

#[test]
fn gain_limit_one_never_exceeds_default() {
    let w = 160;
    let h = 90;
    let r = read_luma(&format!("{DIR}/src01_ref_160x90_420p8_48f.yuv"), w, h, 8);
    let d = read_luma(&format!("{DIR}/src01_dis_160x90_420p8_48f.yuv"), w, h, 8);
    let mut vif = Vif::new(w, h, 8).unwrap();
    let lim = VifConfig {
        enhn_gain_limit: 1.0,
    };
    let def = VifConfig::default();
    for (rf, df) in r.iter().zip(&d).take(8) {
        let rp = LumaPlane::packed(rf, w, h, 8).unwrap();
        let dp = LumaPlane::packed(df, w, h, 8).unwrap();
        let a = vif.compute(&rp, &dp, &def).unwrap();
        let b = vif.compute(&rp, &dp, &lim).unwrap();
        for i in 0..4 {
            assert!(b.scale[i] <= a.scale[i], "{a:?} {b:?}");
            assert_eq!(a.den[i], b.den[i]);
        }
    }
    // Enhancement: the distorted plane is a contrast-stretched reference, so g > 1 and
    // the limit must lower the score.
    let rf = &r[0];
    let enh: Vec<u16> = rf
        .iter()
        .map(|&x| ((i32::from(x) - 128) * 3 / 2 + 128).clamp(0, 255) as u16)
        .collect();
    let rp = LumaPlane::packed(rf, w, h, 8).unwrap();
    let ep = LumaPlane::packed(&enh, w, h, 8).unwrap();
    let a = vif.compute(&rp, &ep, &def).unwrap();
    let b = vif.compute(&rp, &ep, &lim).unwrap();
    for i in 0..4 {
        assert!(b.scale[i] <= a.scale[i], "{a:?} {b:?}");
        if a.scale[i] > 1.0 {
            assert!(b.scale[i] < a.scale[i], "{a:?} {b:?}");
        }
    }
    assert!(a.scale[3] > 1.0, "{a:?}");
    // No enhancement (identical planes: g == 1 up to rounding): equal.
    let a = vif.compute(&rp, &rp, &def).unwrap();
    let b = vif.compute(&rp, &rp, &lim).unwrap();
    assert_eq!(a, b);
}
