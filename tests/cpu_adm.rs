//! ADM bit-exactness against libvmaf 3.2.0's own JSON output, plus size and option checks.

use gstvmafcompare::engine::frame::{FeatureError, LumaPlane};
use gstvmafcompare::features::adm::cpu::Adm;
use gstvmafcompare::features::adm::{AdmConfig, AdmScores, MIN_HEIGHT, MIN_WIDTH};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../shared/vmaf-reference");

struct Pair {
    tag: &'static str,
    w: usize,
    h: usize,
    bpc: u32,
    frames: usize,
}

const PAIRS: [Pair; 3] = [
    Pair {
        tag: "160x90_420p8",
        w: 160,
        h: 90,
        bpc: 8,
        frames: 48,
    },
    Pair {
        tag: "576x324_420p10",
        w: 576,
        h: 324,
        bpc: 10,
        frames: 3,
    },
    Pair {
        tag: "576x324_420p8",
        w: 576,
        h: 324,
        bpc: 8,
        frames: 3,
    },
];

const METRICS: [&str; 7] = [
    "integer_adm2",
    "integer_aim",
    "integer_adm3",
    "integer_adm_scale0",
    "integer_adm_scale1",
    "integer_adm_scale2",
    "integer_adm_scale3",
];

fn value(s: &AdmScores, m: usize) -> f64 {
    match m {
        0 => s.adm2,
        1 => s.aim,
        2 => s.adm3,
        k => s.scale[k - 3],
    }
}

/// Luma planes of all frames of a raw I420 / I420_10LE file.
fn read_luma(path: &str, p: &Pair) -> Vec<Vec<u16>> {
    let bytes = std::fs::read(path).unwrap();
    let frame_count = p.frames;
    let bps = if p.bpc == 8 { 1 } else { 2 };
    let luma = p.w * p.h;
    let chroma = p.w.div_ceil(2) * p.h.div_ceil(2);
    let frame = (luma + 2 * chroma) * bps;
    assert_eq!(bytes.len(), frame * frame_count, "{path}");
    (0..p.frames)
        .map(|f| {
            let y = &bytes[f * frame..f * frame + luma * bps];
            if bps == 1 {
                y.iter().map(|&b| b as u16).collect()
            } else {
                y.chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect()
            }
        })
        .collect()
}

fn run_pair(p: &Pair, cfg: &AdmConfig) -> Vec<AdmScores> {
    let ext = format!("{}_{}f.yuv", p.tag, p.frames);
    let r = read_luma(&format!("{DIR}/src01_ref_{ext}"), p);
    let d = read_luma(&format!("{DIR}/src01_dis_{ext}"), p);
    let mut adm = Adm::new(p.w, p.h, p.bpc).unwrap();
    r.iter()
        .zip(&d)
        .map(|(r, d)| {
            let rp = LumaPlane::packed(r, p.w, p.h, p.bpc).unwrap();
            let dp = LumaPlane::packed(d, p.w, p.h, p.bpc).unwrap();
            adm.compute(&rp, &dp, cfg).unwrap()
        })
        .collect()
}

#[test]
fn matches_libvmaf_json() {
    let mut worst = 0.0f64;
    for p in &PAIRS {
        let ours = run_pair(p, &AdmConfig::default());
        let json: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(format!(
                "{DIR}/libvmaf-3.2.0_src01_{}_{}f.json",
                p.tag, p.frames
            ))
            .unwrap(),
        )
        .unwrap();
        let frames = json["frames"].as_array().unwrap();
        assert_eq!(frames.len(), p.frames);
        let mut maxd = [0.0f64; 7];
        for (f, (s, jf)) in ours.iter().zip(frames).enumerate() {
            for (m, name) in METRICS.iter().enumerate() {
                let want = jf["metrics"][name].as_f64().unwrap();
                let got = value(s, m);
                let d = (got - want).abs();
                if d > 1e-6 {
                    println!(
                        "MISMATCH {} frame {f} {name}: ours {got:.9} json {want:.6}",
                        p.tag
                    );
                }
                maxd[m] = maxd[m].max(d);
            }
        }
        for (m, name) in METRICS.iter().enumerate() {
            println!("{:>16} {:<20} max|diff| = {:.3e}", p.tag, name, maxd[m]);
            worst = worst.max(maxd[m]);
        }
    }
    assert!(worst <= 1e-6, "worst |diff| {worst:e}");
}

#[test]
fn golden_adm2_means() {
    // (pair index, integer_adm2 mean asserted by Netflix's test suite)
    for (i, want) in [(0usize, 0.9807496975664337f64), (1, 0.9517763333333334)] {
        let s = run_pair(&PAIRS[i], &AdmConfig::default());
        let mean = s.iter().map(|s| s.adm2).sum::<f64>() / s.len() as f64;
        println!("{} adm2 mean {mean:.10} golden {want:.10}", PAIRS[i].tag);
        assert!(
            (mean - want).abs() < 5e-5,
            "{} mean {mean} vs {want}",
            PAIRS[i].tag
        );
    }
}

#[test]
fn gain_limit_one_not_above_default() {
    let p = &PAIRS[0];
    let a = run_pair(p, &AdmConfig::default());
    let b = run_pair(
        p,
        &AdmConfig {
            enhn_gain_limit: 1.0,
            ..AdmConfig::default()
        },
    );
    for (x, y) in a.iter().zip(&b) {
        assert!(y.adm2 <= x.adm2, "{} > {}", y.adm2, x.adm2);
        assert!(y.adm2.is_finite());
    }
}

/// Deterministic pseudo-random plane.
fn noise(w: usize, h: usize, bpc: u32, seed: u64) -> Vec<u16> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..w * h)
        .map(|i| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let smooth = ((i % w) * 7 + (i / w) * 3) as u64;
            (((s >> 40) % 64 + smooth * 4) % (1u64 << bpc)) as u16
        })
        .collect()
}

#[test]
fn every_small_size() {
    for bpc in [8u32, 10] {
        for h in 1..=48usize {
            for w in 1..=48usize {
                let r = noise(w, h, bpc, (w * 100 + h) as u64);
                let d = noise(w, h, bpc, (w * 100 + h + 7) as u64);
                match Adm::new(w, h, bpc) {
                    Err(FeatureError::FrameTooSmall { .. }) => {
                        assert!(w < MIN_WIDTH || h < MIN_HEIGHT, "{w}x{h} refused");
                    }
                    Err(e) => panic!("{w}x{h}: {e}"),
                    Ok(mut adm) => {
                        assert!(w >= MIN_WIDTH && h >= MIN_HEIGHT, "{w}x{h} accepted");
                        let rp = LumaPlane::packed(&r, w, h, bpc).unwrap();
                        let dp = LumaPlane::packed(&d, w, h, bpc).unwrap();
                        for (a, b) in [(&rp, &dp), (&rp, &rp)] {
                            let s = adm.compute(a, b, &AdmConfig::default()).unwrap();
                            for v in [s.adm2, s.aim, s.adm3, s.num, s.den].iter().chain(&s.scale) {
                                assert!(v.is_finite(), "{w}x{h}: {s:?}");
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn extreme_samples_do_not_panic() {
    let (w, h) = (64, 40);
    for bpc in [8u32, 10, 12, 16] {
        let max = ((1u32 << bpc) - 1) as u16;
        let a: Vec<u16> = (0..w * h)
            .map(|i| if (i / 3 + i / w) % 2 == 0 { max } else { 0 })
            .collect();
        let b: Vec<u16> = (0..w * h)
            .map(|i| if (i / 5 + i / w) % 2 == 0 { 0 } else { max })
            .collect();
        let z = vec![0u16; w * h];
        let mut adm = Adm::new(w, h, bpc).unwrap();
        for (x, y) in [(&a, &b), (&a, &z), (&z, &a), (&z, &z), (&a, &a)] {
            let rp = LumaPlane::packed(x, w, h, bpc).unwrap();
            let dp = LumaPlane::packed(y, w, h, bpc).unwrap();
            let _ = adm.compute(&rp, &dp, &AdmConfig::default()).unwrap();
        }
    }
}

#[test]
fn geometry_checks() {
    let mut adm = Adm::new(64, 48, 8).unwrap();
    let a = vec![0u16; 64 * 48];
    let good = LumaPlane::packed(&a, 64, 48, 8).unwrap();
    let bad = LumaPlane::packed(&a, 48, 64, 8).unwrap();
    let bad_bpc = LumaPlane::packed(&a, 64, 48, 10).unwrap();
    assert!(matches!(
        adm.compute(&good, &bad, &AdmConfig::default()),
        Err(FeatureError::WrongGeometry { .. })
    ));
    assert!(matches!(
        adm.compute(&bad_bpc, &good, &AdmConfig::default()),
        Err(FeatureError::WrongGeometry { .. })
    ));
    // Strided plane equals packed plane.
    let n = noise(64, 48, 8, 3);
    let m = noise(64, 48, 8, 4);
    let mut strided = vec![0u16; 70 * 48];
    for y in 0..48 {
        strided[y * 70..y * 70 + 64].copy_from_slice(&m[y * 64..y * 64 + 64]);
    }
    let r = LumaPlane::packed(&n, 64, 48, 8).unwrap();
    let d1 = LumaPlane::packed(&m, 64, 48, 8).unwrap();
    let d2 = LumaPlane::new(&strided, 64, 48, 70, 8).unwrap();
    let s1 = adm.compute(&r, &d1, &AdmConfig::default()).unwrap();
    let s2 = adm.compute(&r, &d2, &AdmConfig::default()).unwrap();
    assert_eq!(s1, s2);
}
