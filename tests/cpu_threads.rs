//! The CPU backend on a pool of threads (`threads` property, issue 20): every value of every
//! frame is bit-identical to one thread, for any thread count, with motion across frames
//! in flight (scene changes, subsampling, skips); the pool's threads never outlive it, nor
//! the element's READY state.

mod common;

use std::sync::{Arc, Mutex};

use gst::prelude::*;
use gstvmafcompare::cpu::CpuPool;
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::engine::{
    ChromaPair, FeatureSet, FrameScores, Geometry, LumaInput, LumaPlane, NamedModel, ScorePlan,
    Scorer,
};

/// Tests that count threads run one at a time (the test harness runs tests in parallel).
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|p| p.into_inner())
}

/// One frame: luma and the two chroma planes, packed `u16`.
#[derive(Clone)]
struct Frame {
    y: Vec<u16>,
    cb: Vec<u16>,
    cr: Vec<u16>,
}

fn read_frames(path: &std::path::Path, w: usize, h: usize, bpc: u32, n: usize) -> Vec<Frame> {
    let bytes = std::fs::read(path).unwrap();
    let bps = if bpc > 8 { 2 } else { 1 };
    let (cw, ch) = (w.div_ceil(2), h.div_ceil(2));
    let frame = (w * h + 2 * cw * ch) * bps;
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
    (0..n)
        .map(|i| {
            let o = i * frame;
            Frame {
                y: plane(o, w * h),
                cb: plane(o + w * h * bps, cw * ch),
                cr: plane(o + (w * h + cw * ch) * bps, cw * ch),
            }
        })
        .collect()
}

struct Clip {
    w: usize,
    h: usize,
    bpc: u32,
    refs: Vec<Frame>,
    diss: Vec<Frame>,
}

/// Netflix's reference pairs, and a 576x324 clip with scene changes: the src01 frames
/// interleaved with their mirror images and a flat frame, so that consecutive references
/// differ wildly and motion2 takes both sides of its minimum.
fn clips() -> Vec<Clip> {
    let mut out = Vec::new();
    for p in common::reference_pairs() {
        let bpc = if p.format.contains("10") { 10 } else { 8 };
        let (w, h) = (p.width as usize, p.height as usize);
        out.push(Clip {
            w,
            h,
            bpc,
            refs: read_frames(&p.reference, w, h, bpc, p.frames),
            diss: read_frames(&p.distorted, w, h, bpc, p.frames),
        });
    }
    let base = out
        .iter()
        .find(|c| c.w == 576 && c.bpc == 8)
        .map(|c| (c.refs.clone(), c.diss.clone()))
        .unwrap();
    let mirror = |f: &Frame| Frame {
        y: f.y
            .chunks(576)
            .flat_map(|r| r.iter().rev())
            .copied()
            .collect(),
        cb: f
            .cb
            .chunks(288)
            .flat_map(|r| r.iter().rev())
            .copied()
            .collect(),
        cr: f
            .cr
            .chunks(288)
            .flat_map(|r| r.iter().rev())
            .copied()
            .collect(),
    };
    let flat = Frame {
        y: vec![16; 576 * 324],
        cb: vec![128; 288 * 162],
        cr: vec![128; 288 * 162],
    };
    let (mut refs, mut diss) = (Vec::new(), Vec::new());
    for round in 0..3 {
        for i in 0..3 {
            let (r, d) = (&base.0[i], &base.1[i]);
            match (round + i) % 3 {
                0 => {
                    refs.push(r.clone());
                    diss.push(d.clone());
                }
                1 => {
                    refs.push(mirror(r));
                    diss.push(mirror(d));
                }
                _ => {
                    refs.push(flat.clone());
                    diss.push(d.clone());
                }
            }
        }
    }
    out.push(Clip {
        w: 576,
        h: 324,
        bpc: 8,
        refs,
        diss,
    });
    out
}

/// Scores `clip` with `threads` (1: no pool) and the models and extra metrics of the
/// element's defaults plus `vmaf_v0.6.1neg` (two option sets); `skip_at`: leave out two
/// pairs after that frame (a live pipeline's skip).
fn score(
    clip: &Clip,
    threads: usize,
    subsample: u32,
    skip_at: Option<usize>,
) -> Vec<Option<FrameScores>> {
    let models: Arc<[NamedModel]> = NamedModel::load_list("vmaf_v0.6.1,vmaf_v0.6.1neg")
        .unwrap()
        .into();
    let big = clip.w >= 176 && clip.h >= 176;
    let features = FeatureSet::parse(if big {
        "psnr,float_ssim,float_ms_ssim"
    } else {
        "psnr,float_ssim"
    })
    .unwrap();
    let plan = ScorePlan::new(models, features, true).unwrap();
    let mut backend =
        CpuBackend::new(plan.layout(), Geometry::luma(clip.w, clip.h, clip.bpc)).unwrap();
    if threads > 1 {
        backend = backend.with_pool(Arc::new(CpuPool::new(threads).unwrap()));
    }
    assert_eq!(backend.threads(), threads);
    let mut scorer: Scorer<usize> = Scorer::with_plan(Box::new(backend), plan, subsample);
    let mut out = Vec::new();
    let (cw, ch) = (clip.w.div_ceil(2), clip.h.div_ceil(2));
    for (i, (r, d)) in clip.refs.iter().zip(&clip.diss).enumerate() {
        let bpc = clip.bpc;
        fn plane(v: &[u16], w: usize, h: usize, bpc: u32) -> LumaPlane<'_> {
            LumaPlane::packed(v, w, h, bpc).unwrap()
        }
        let p = |v, w, h| plane(v, w, h, bpc);
        let chroma = ChromaPair {
            reference: [p(&r.cb, cw, ch), p(&r.cr, cw, ch)],
            distorted: [p(&d.cb, cw, ch), p(&d.cr, cw, ch)],
        };
        let done = scorer
            .push_frame(
                LumaInput::Packed(p(&r.y, clip.w, clip.h)),
                LumaInput::Packed(p(&d.y, clip.w, clip.h)),
                Some(chroma),
                i,
            )
            .unwrap();
        out.extend(done.into_iter().map(|s| (s.index, s.scores)));
        if skip_at == Some(i) {
            out.extend(
                scorer
                    .skip(2)
                    .unwrap()
                    .into_iter()
                    .map(|(_, s)| (s.index, s.scores)),
            );
        }
    }
    out.extend(
        scorer
            .finish()
            .unwrap()
            .into_iter()
            .map(|(_, s)| (s.index, s.scores)),
    );
    let indices: Vec<u64> = out.iter().map(|(i, _)| *i).collect();
    let mut sorted = indices.clone();
    sorted.sort_unstable();
    assert_eq!(indices, sorted, "frames leave in order");
    out.into_iter().map(|(_, s)| s).collect()
}

fn assert_identical(a: &[Option<FrameScores>], b: &[Option<FrameScores>], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: frame count");
    for (fa, fb) in a.iter().zip(b) {
        match (fa, fb) {
            (Some(fa), Some(fb)) => {
                assert_eq!(fa.index, fb.index, "{what}");
                assert_eq!(fa.names, fb.names, "{what}");
                for ((name, va), vb) in fa.iter().zip(&fb.values) {
                    assert_eq!(
                        va.to_bits(),
                        vb.to_bits(),
                        "{what}: frame {} {name}: {va} vs {vb}",
                        fa.index
                    );
                }
            }
            (None, None) => {}
            _ => panic!("{what}: one run scored a frame the other did not"),
        }
    }
}

#[test]
fn every_value_is_bit_identical_for_any_thread_count() {
    let _g = serial();
    for clip in clips() {
        let what = format!("{}x{} {} bits", clip.w, clip.h, clip.bpc);
        let one = score(&clip, 1, 1, None);
        assert!(one.iter().all(Option::is_some));
        assert!(
            one.iter()
                .flatten()
                .any(|f| f.get("integer_motion2").unwrap() > 0.0),
            "{what}: motion exercised"
        );
        for threads in [2, 3, 8] {
            let many = score(&clip, threads, 1, None);
            assert_identical(&one, &many, &format!("{what}, {threads} threads"));
        }
        // Subsampling (motion on every frame, the rest every 3rd) and a skip in the middle.
        let one = score(&clip, 1, 3, Some(clip.refs.len() / 2));
        let many = score(&clip, 4, 3, Some(clip.refs.len() / 2));
        assert_identical(&one, &many, &format!("{what}, subsample 3 with a skip"));
    }
}

/// Threads of this process whose name starts with `prefix` (names are cut to 15 bytes), from
/// /proc/self/task (the test harness's own threads come and go, so only the pool's are
/// counted).
fn threads_named_now(prefix: &str) -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim_end().starts_with(prefix))
        .count()
}

/// [`threads_named_now`], read again for up to 2 s while it is above `expected`: a joined
/// thread's /proc/self/task entry can outlive `pthread_join` by a moment (the kernel wakes the
/// joiner when it clears the thread id, before the task is reaped), which made a CI run read
/// 1 right after the pool was joined.
fn threads_named_settled(prefix: &str, expected: usize) -> usize {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
    loop {
        let n = threads_named_now(prefix);
        if n <= expected || std::time::Instant::now() > deadline {
            return n;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn a_dropped_pool_leaves_no_thread() {
    let _g = serial();
    assert_eq!(threads_named_settled("vmafcompare-cpu", 0), 0);
    let pool = Arc::new(CpuPool::new(5).unwrap());
    assert_eq!(pool.threads(), 5);
    assert_eq!(threads_named_settled("vmafcompare-cpu", 5), 5);
    let clip = &clips()[0];
    let mut backend = CpuBackend::vmaf(
        clip.w,
        clip.h,
        clip.bpc,
        Default::default(),
        Default::default(),
    )
    .unwrap()
    .with_pool(pool.clone());
    use gstvmafcompare::engine::PairInput;
    for f in clip.refs.iter().take(8) {
        let p = LumaPlane::packed(&f.y, clip.w, clip.h, clip.bpc).unwrap();
        backend.submit(&p, &p, true).unwrap();
    }
    // The synchronous path still works beside the pool (its extractors went to a worker:
    // they are made again).
    let p = LumaPlane::packed(&clip.refs[0].y, clip.w, clip.h, clip.bpc).unwrap();
    let raw = backend.extract(&p, &p, true).unwrap();
    assert!(raw.get("integer_vif_scale0").unwrap() > 0.99);
    // Dropped with frames in flight: the threads finish them and exit.
    drop(backend);
    drop(pool);
    assert_eq!(threads_named_settled("vmafcompare-cpu", 0), 0);
    let zero = CpuPool::new(0).unwrap();
    assert_eq!(zero.threads(), gstvmafcompare::cpu::threads_per_core());
}

#[test]
fn element_threads_live_from_ready_to_null() {
    let _g = serial();
    common::init();
    let e = gst::ElementFactory::make("vmafcompare")
        .property_from_str("backend", "cpu")
        .build()
        .unwrap();
    let spec = e.find_property("threads").unwrap();
    assert!(spec
        .blurb()
        .unwrap_or_default()
        .contains("0 = one per core"));
    assert_eq!(e.property::<u32>("threads"), 0, "default: one per core");
    e.set_property("threads", 3u32);
    assert_eq!(threads_named_settled("vmafcompare-cpu", 0), 0);
    for _ in 0..3 {
        e.set_state(gst::State::Ready).unwrap();
        assert_eq!(threads_named_settled("vmafcompare-cpu", 3), 3);
        e.set_state(gst::State::Null).unwrap();
        assert_eq!(
            threads_named_settled("vmafcompare-cpu", 0),
            0,
            "joined at NULL"
        );
    }
    // Changed in READY: the new count takes effect at READY->PAUSED.
    e.set_property("threads", 3u32);
    e.set_state(gst::State::Ready).unwrap();
    e.set_property("threads", 2u32);
    let _ = e.set_state(gst::State::Paused);
    let (res, state, _) = e.state(gst::ClockTime::from_seconds(5));
    assert!(
        res.is_ok() && state == gst::State::Paused,
        "{res:?} {state:?}"
    );
    assert_eq!(threads_named_settled("vmafcompare-cpu", 2), 2);
    e.set_state(gst::State::Null).unwrap();
    assert_eq!(threads_named_settled("vmafcompare-cpu", 0), 0);
    // threads=1: today's behaviour, no pool at all.
    e.set_property("threads", 1u32);
    e.set_state(gst::State::Ready).unwrap();
    assert_eq!(threads_named_settled("vmafcompare-cpu", 0), 0);
    e.set_state(gst::State::Null).unwrap();
}

/// The element with `threads=1` and `threads=3` posts the same frames, every metric equal
/// (bit for bit, as the message carries them), on Netflix's pairs: 8 and 10 bits, the
/// latter through the host-row conversion, with the extra metrics.
#[test]
fn element_scores_are_the_same_with_a_pool() {
    let _g = serial();
    common::init();
    for p in common::reference_pairs() {
        let features = if p.width >= 176 && p.height >= 176 {
            "psnr,float_ssim,float_ms_ssim"
        } else {
            "psnr,float_ssim"
        };
        let run = |threads: u32| {
            let desc = format!(
                "{} {} vmafcompare name=cmp backend=cpu threads={threads} features={features} \
                 ! appsink name=out sync=false",
                common::raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                common::raw_branch(&p.distorted, p.width, p.height, p.format, "distorted"),
            );
            let out = common::run(&desc, common::LONG);
            assert!(out.errors.is_empty(), "{:?}", out.errors);
            assert_eq!(out.frames.len(), p.frames);
            assert_eq!(out.metas.len(), p.frames);
            (out.frames, out.metas)
        };
        let one = run(1);
        let three = run(3);
        assert_eq!(one, three, "{}x{} {}", p.width, p.height, p.format);
        // The pipelines went PLAYING -> NULL: no pool thread is left.
        assert_eq!(threads_named_settled("vmafcompare-cpu", 0), 0);
    }
}

/// On a pool the element maps host frames with a hold and the workers convert luma and
/// chroma from the buffers' own layouts (the streaming thread copies nothing): every layout
/// the element takes gives the frames of one thread, bit for bit, through VMAF v0 and v1
/// (CAMBI, SpEED chroma) and PSNR's chroma, on Netflix's 576x324 pair.
#[test]
fn element_pool_converts_every_layout_in_its_workers() {
    let _g = serial();
    common::init();
    let p = common::reference_pairs()
        .into_iter()
        .find(|p| p.width == 576 && p.format == "I420")
        .expect("the 576x324 8-bit pair");
    for (format, model, features) in [
        ("NV12", "vmaf_v0.6.1,vmaf_v1.0.16_3d0h", "psnr"),
        ("P010_10LE", "vmaf_v0.6.1,vmaf_v1.0.16_3d0h", "psnr"),
        ("Y444", "vmaf_v1.0.16_3d0h", "psnr"),
        ("Y42B", "vmaf_v0.6.1", "psnr"),
        ("I420_10LE", "vmaf_v1.0.16_3d0h", "psnr"),
        ("GRAY8", "vmaf_v0.6.1", ""),
    ] {
        let branch = |path: &std::path::Path, pad: &str| {
            common::raw_branch(path, p.width, p.height, p.format, pad).replace(
                " ! cmp.",
                &format!(" ! videoconvert ! video/x-raw,format={format} ! cmp."),
            )
        };
        let run = |threads: u32| {
            let desc = format!(
                "{} {} vmafcompare name=cmp backend=cpu threads={threads} model=\"{model}\" \
                 features=\"{features}\" ! appsink name=out sync=false",
                branch(&p.reference, "reference"),
                branch(&p.distorted, "distorted"),
            );
            let out = common::run(&desc, common::LONG);
            assert!(out.errors.is_empty(), "{format}: {:?}", out.errors);
            assert_eq!(out.frames.len(), p.frames, "{format}");
            out.frames
        };
        let one = run(1);
        assert_eq!(one, run(3), "{format}: 3 threads against 1");
        assert_eq!(threads_named_settled("vmafcompare-cpu", 0), 0);
    }
}
