//! The scorer's frame bookkeeping with pipelined backends: order, libvmaf 3.x motion2 /
//! motion3, subsampling, unpaired tags, skips and fail-over (the sets in flight handed back to be scored
//! again), independent of any real backend.

use std::collections::VecDeque;
use std::sync::Arc;

use gstvmafcompare::engine::{
    Backend, EngineError, FeatureSet, FrameSet, LumaPlane, Model, NamedModel, RawFeatures,
    ScorePlan, Scorer, SetFeatures,
};
use gstvmafcompare::features::vmaf_layout;

/// A backend whose features of frame i are known functions of i; results become ready
/// `delay` submissions later (or when waited for); fails at submission `fail_at`.
struct Fake {
    delay: usize,
    in_flight: VecDeque<RawFeatures>,
    since: usize,
    n: u64,
    fail_at: Option<u64>,
}

const SAD: &str = "VMAF_integer_feature_motion_sad_score";

fn features(i: u64) -> RawFeatures {
    let layout = vmaf_layout(Default::default(), Default::default()).expect("layout");
    let mut r = RawFeatures::new(&layout);
    r.set(
        SAD,
        if i == 0 {
            0.0
        } else {
            (i * 7 % 5) as f64 + 0.5
        },
    );
    for (k, v) in [0.5, 0.9, 0.95, 0.97].into_iter().enumerate() {
        r.set(&format!("integer_vif_scale{k}"), v);
    }
    r.set("integer_adm2", 0.9 + i as f64 * 1e-3);
    r
}

impl Backend for Fake {
    fn name(&self) -> &'static str {
        "fake"
    }
    fn submit_set(&mut self, _set: FrameSet<'_>) -> Result<(), EngineError> {
        if Some(self.n) == self.fail_at {
            return Err(EngineError::Backend {
                backend: "fake",
                message: "device lost".into(),
            });
        }
        self.in_flight.push_back(features(self.n));
        self.n += 1;
        self.since += 1;
        Ok(())
    }
    fn collect_set(&mut self, wait: bool) -> Result<Option<SetFeatures>, EngineError> {
        if wait || self.since > self.delay {
            self.since = self.since.saturating_sub(1);
            Ok(self.in_flight.pop_front().map(|raw| vec![(0, raw)].into()))
        } else {
            Ok(None)
        }
    }
    fn max_in_flight(&self) -> usize {
        self.delay + 1
    }
    fn reset(&mut self) {
        self.in_flight.clear();
    }
}

fn fake(delay: usize, fail_at: Option<u64>) -> Box<dyn Backend> {
    Box::new(Fake {
        delay,
        in_flight: VecDeque::new(),
        since: 0,
        n: 0,
        fail_at,
    })
}

fn run(delay: usize, n: u64, subsample: u32) -> Vec<(u64, Option<Vec<f64>>)> {
    let model = Arc::new(Model::load("vmaf_v0.6.1").expect("model"));
    let mut s: Scorer<u64> = Scorer::new(fake(delay, None), model, subsample).unwrap();
    let plane = vec![0u16; 64 * 64];
    let p = LumaPlane::packed(&plane, 64, 64, 8).expect("plane");
    let mut out = Vec::new();
    for i in 0..n {
        for d in s.push(&p, &p, i).expect("push") {
            out.push((d.tag, d.scores.map(|s| s.values)));
        }
    }
    for (_, d) in s.finish().expect("finish") {
        out.push((d.tag, d.scores.map(|s| s.values)));
    }
    out
}

#[test]
fn pipelined_backends_give_the_same_frames_in_order() {
    let sync = run(0, 9, 1);
    assert_eq!(sync.len(), 9);
    for delay in [1, 2, 4] {
        assert_eq!(run(delay, 9, 1), sync, "delay {delay}");
    }
    // Order and libvmaf 3.x motion: motion2[0] = 0, motion2[i] = min(sad[i], sad[i+1]),
    // the last keeps sad[i]; motion3[0] = sad[1].
    let sad = |i: u64| features(i).get(SAD).unwrap_or(f64::NAN);
    for (i, (tag, values)) in sync.iter().enumerate() {
        let i = i as u64;
        assert_eq!(*tag, i);
        let v = values.as_ref().expect("scored");
        let motion2 = v[12];
        let want = if i == 0 {
            0.0
        } else if i == 8 {
            sad(8)
        } else {
            sad(i).min(sad(i + 1))
        };
        assert_eq!(motion2, want, "frame {i}");
        if i == 0 {
            assert_eq!(v[13], sad(1));
        }
    }
}

#[test]
fn subsampling_scores_every_nth_frame_only() {
    let all = run(2, 10, 1);
    let sub = run(2, 10, 4);
    for (i, (tag, v)) in sub.iter().enumerate() {
        assert_eq!(*tag, i as u64);
        assert_eq!(v.is_some(), i % 4 == 0);
        if let Some(v) = v {
            assert_eq!(Some(v), all[i].1.as_ref());
        }
    }
}

#[test]
fn fail_over_hands_back_the_sets_in_flight_and_scores_every_frame() {
    let model = Arc::new(Model::load("vmaf_v0.6.1").expect("model"));
    let mut s: Scorer<u64> = Scorer::new(fake(2, Some(5)), model, 1).unwrap();
    let plane = vec![0u16; 64 * 64];
    let p = LumaPlane::packed(&plane, 64, 64, 8).expect("plane");
    let mut out = Vec::new();
    for i in 0..10 {
        match s.push(&p, &p, i) {
            Ok(done) => out.extend(done.into_iter().map(|d| (d.tag, d.scores.is_some()))),
            Err(_) => {
                let (done, lost) = s.fail_over(fake(0, None));
                let lost: Vec<u64> = lost.into_iter().flatten().map(|f| f.tag).collect();
                assert_eq!(lost, [3, 4], "frames 3 and 4 were in flight");
                out.extend(done.into_iter().map(|(_, d)| (d.tag, d.scores.is_some())));
                for t in lost.into_iter().chain([i]) {
                    out.extend(
                        s.push(&p, &p, t)
                            .expect("again")
                            .into_iter()
                            .map(|d| (d.tag, d.scores.is_some())),
                    );
                }
            }
        }
    }
    out.extend(
        s.finish()
            .expect("finish")
            .into_iter()
            .map(|(_, d)| (d.tag, d.scores.is_some())),
    );
    let tags: Vec<u64> = out.iter().map(|(t, _)| *t).collect();
    assert_eq!(tags, (0..10).collect::<Vec<_>>());
    assert!(
        out.iter().all(|(_, scored)| *scored),
        "no frame lost: {out:?}"
    );
    assert_eq!(s.pool().count(), 10);
}

#[test]
fn unpaired_tags_leave_after_the_frames_pushed_before_them() {
    let model = Arc::new(Model::load("vmaf_v0.6.1").expect("model"));
    let mut s: Scorer<u64> = Scorer::new(fake(2, None), model, 1).unwrap();
    let plane = vec![0u16; 64 * 64];
    let p = LumaPlane::packed(&plane, 64, 64, 8).expect("plane");
    let mut out = Vec::new();
    assert_eq!(
        s.push_unpaired(0, 100).map(|d| d.tag),
        Some(100),
        "nothing waiting: leaves at once"
    );
    for i in 0..4 {
        out.extend(s.push(&p, &p, i).expect("push").into_iter().map(|d| d.tag));
        if i == 1 {
            assert!(s.push_unpaired(0, 101).is_none());
        }
    }
    out.extend(s.finish().expect("finish").into_iter().map(|(_, d)| d.tag));
    assert_eq!(out, [0, 1, 101, 2, 3]);
}

#[test]
fn skip_completes_the_frame_before_the_gap_and_restarts_motion() {
    let model = Arc::new(Model::load("vmaf_v0.6.1").expect("model"));
    let mut s: Scorer<u64> = Scorer::new(fake(2, None), model, 1).unwrap();
    let plane = vec![0u16; 64 * 64];
    let p = LumaPlane::packed(&plane, 64, 64, 8).expect("plane");
    let mut out = Vec::new();
    for i in 0..3 {
        out.extend(s.push(&p, &p, i).expect("push"));
    }
    // Frames 3 and 4 are left out (a live scorer fell behind).
    out.extend(s.skip(2).expect("skip").into_iter().map(|(_, d)| d));
    for i in 5..8 {
        out.extend(s.push(&p, &p, i).expect("push"));
    }
    out.extend(s.finish().expect("finish").into_iter().map(|(_, d)| d));
    let got: Vec<(u64, u64)> = out.iter().map(|d| (d.index, d.tag)).collect();
    assert_eq!(got, [(0, 0), (1, 1), (2, 2), (5, 5), (6, 6), (7, 7)]);
    // The fake's k-th submission has motion SAD features(k).
    let sad = |k: u64| features(k).get(SAD).unwrap_or(f64::NAN);
    let m = |i: usize, col: usize| out[i].scores.as_ref().expect("scored").values[col];
    assert_eq!(
        m(2, 12),
        sad(2),
        "last before the gap: motion2 is its own SAD"
    );
    assert_eq!(
        m(3, 12),
        0.0,
        "first after the gap: motion2 0, as a fresh run"
    );
    assert_eq!(m(3, 13), sad(4), "and motion3 the next frame's SAD");
    assert_eq!(m(4, 12), sad(4).min(sad(5)));
    assert_eq!(s.pool().count(), 6, "pooling continues over the gap");
}

/// The log order the registry gives is libvmaf's (and the one before the registry):
/// PSNR, the first option set's ADM, motion SAD and VIF, the further sets, the other
/// metrics, motion2/motion3, the scores of models 2.. and the first model's last; and
/// float_ssim with float_ms_ssim are one instance.
#[test]
fn log_order_with_two_models_and_every_metric() {
    let models: Arc<[NamedModel]> = NamedModel::load_list("vmaf_v0.6.1,vmaf_v0.6.1neg")
        .unwrap()
        .into();
    let features = FeatureSet::parse("ssimulacra2,float_ms_ssim,psnr,float_ssim").unwrap();
    let plan = ScorePlan::new(models, features, true).unwrap();
    let adm = |s: &str| {
        ["integer_adm2", "integer_aim", "integer_adm3"]
            .iter()
            .map(|b| format!("{b}{s}"))
            .chain((0..4).map(|i| format!("integer_adm_scale{i}{s}")))
            .collect::<Vec<_>>()
    };
    let vif = |s: &str| {
        (0..4)
            .map(|i| format!("integer_vif_scale{i}{s}"))
            .collect::<Vec<_>>()
    };
    let mut want: Vec<String> = vec!["psnr_y".into(), "psnr_cb".into(), "psnr_cr".into()];
    want.extend(adm(""));
    want.push("VMAF_integer_feature_motion_sad_score".into());
    want.extend(vif(""));
    want.extend(adm("_egl_1"));
    want.extend(vif("_egl_1"));
    for n in [
        "float_ssim",
        "float_ms_ssim",
        "ssimulacra2",
        "integer_motion2",
        "integer_motion3",
        "vmaf_v0.6.1neg",
        "vmaf",
    ] {
        want.push(n.into());
    }
    assert_eq!(plan.names(), want);
    let ssim = plan
        .layout()
        .instances()
        .iter()
        .filter(|i| i.outputs().iter().any(|o| o.starts_with("float_")))
        .count();
    assert_eq!(ssim, 1, "float_ssim and float_ms_ssim share one instance");
}
