//! The command line: options, their help, and the manual page that `--help` prints.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use clap::{Parser, ValueEnum};
use gstvmafcompare::vmafcompare::{ResultsFormat, VmafBackend, VmafScaleMethod};

/// The libvmaf release whose scores the element reproduces.
pub const LIBVMAF_VERSION: &str = "3.2.0";

/// `--version`: the command's and the plugin's version, the libvmaf release whose scores it
/// gives, and the GStreamer library it runs on (read at run time).
fn version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        format!(
            "{v} (GStreamer plugin vmafcompare {v}; scores compatible with libvmaf {LIBVMAF_VERSION}; \
             running on {gst})",
            v = env!("CARGO_PKG_VERSION"),
            gst = gst::version_string(),
        )
    })
}

/// What `--help` says before the options.
const LONG_ABOUT: &str = "\
Scores one or more distorted videos against their reference with VMAF, as the libvmaf
command line tool and FFmpeg's libvmaf filter do, with the vmafcompare GStreamer element
(built into the command: no GST_PLUGIN_PATH needed).

Every file is decoded with GStreamer's decodebin, so any container and codec that
GStreamer can decode works; the first video stream of each file is scored, audio and
subtitles are ignored. Frames are paired by timestamp. Several distorted files (the
renditions of an encoding ladder) are scored together in one pass, the element's ladder
mode: the reference is decoded once and its share of the work done once for all of them,
each file is paired with it on its own (a file that ends early or has gaps does not hold
the others back), and one row per file is printed at the end. Each file's scores are
those it gets alone.

When one file is shorter, or starts later, only the frame pairs that exist are scored: the
frames of the longer file that have no partner are left out and counted (the file's line
says how many, a warning says where and what to try: --offset, --auto-align). FFmpeg's
libvmaf filter instead repeats the shorter file's last frame to the end of the longer one,
so its pooled scores differ by those extra pairs; trim the longer file to compare the same
span.

The scores are libvmaf 3.2.0's (vmaf_v0.6.1 by default, any built-in v0 or v1 model, or a
libvmaf JSON model file), equal within the 6 decimals libvmaf prints to those of
    ffmpeg -i DISTORTED -i REFERENCE -lavfi libvmaf
A distorted file of another size (a rendition of an encoding ladder) is first scaled to
the reference's size with FFmpeg swscale's bicubic filter, sample for sample as
scale=W:H:flags=bicubic+accurate_rnd+full_chroma_int scales it (Netflix's recommended
practice), so that a rendition scores as
    ffmpeg -i DISTORTED -i REFERENCE -lavfi \\
      \"[0:v]scale=W:H:flags=bicubic+accurate_rnd+full_chroma_int[d];[d][1:v]libvmaf\"
with W:H the reference's size. --scale-method and --score-size change this.

Scoring runs on an NVIDIA GPU (CUDA) when one is usable, else on the CPU (--backend). With
--backend cuda or auto, NVDEC decoders are preferred to software decoders: this plugin's
vmafnvdec for H.264 and HEVC 4:2:0 (about twice as fast as GStreamer 1.22's own), then
nvh264dec, nvh265dec, nvav1dec and nvvp9dec of the nvcodec plugin where installed. The
command raises their rank (vmafnvdec to MAX, the others to one below) through
GST_PLUGIN_FEATURE_RANK (appended to any value already set; a decoder already named there
keeps its rank), so that decoded frames reach the GPU in CUDA memory, without a copy. Where
NVDEC is missing, decodebin moves on to the next decoder. --backend cpu leaves the
decoders' ranks alone.

Standard output gets the pooled scores, one row per distorted file and metric: the mean,
libvmaf's harmonic mean, the minimum, the maximum, and the 1%, 5% and 10% lows (the 1st,
5th and 10th percentiles of the per-frame scores, interpolated linearly between ranks as
libvmaf does, from the element's summary) and the file's
bitrate in kbit/s, then each file's worst frames. The bitrate is the video stream's own:
the bytes of its packets as the demuxer hands them to the decoder, over the span of their
timestamps (first to last plus one frame), measured while the file is decoded; audio and
container are left out. Without a demuxer (a raw .h264 file) it is the demuxer's `bitrate`
tag of the video stream, else its `nominal-bitrate` tag, else the file's size times 8 over
its duration (audio and container included); the column is empty when none is known.
The file's line above the table says which source was used, and each stream's colour
range where the element reports it (with a line when one was converted, as FFmpeg
converts it). A progress bar per file is drawn on standard error when it is a terminal (not with
--quiet); warnings go to standard error as `vmafcompare: warning: ...`, and an error as
one line `vmafcompare: ...` with the exit status below.";

/// What `--help` says after the options.
const AFTER_LONG_HELP: &str = "\
EXAMPLES:
  An encode against its source, with libvmaf's JSON log and a per-frame plot:
      vmafcompare source.mp4 encode.mkv --log scores.json --plot vmaf.svg

  A ladder of renditions against their 1080p source, in one pass (the source decoded once):
  one row per rendition with its bitrate, one log per rendition (ladder.r1080p.json,
  ladder.r720p.json, ...), a plot with a line for each and the rate-quality curve (pooled
  VMAF against bitrate, a point per rendition); the renditions are scaled to 1920x1080 with
  FFmpeg's bicubic first:
      vmafcompare source_1080p.mp4 r1080p.mp4 r720p.mp4 r540p.mp4 r360p.mp4 \\
          --log ladder.json --plot ladder.svg --rq-plot rq.png

  A 2160p ladder scored at 1920x1080, as libvmaf advises for vmaf_v0.6.1:
      vmafcompare source_2160p.mp4 r2160p.mp4 r1440p.mp4 --score-size 1920x1080

  On the GPU, decoded by NVDEC (exit status 5 when no GPU is usable):
      vmafcompare --backend cuda source.mp4 encode.mp4

  VMAF v1 beside the phone model, with PSNR and SSIM, as an XML log, then as CSV:
      vmafcompare source.mp4 encode.mp4 --features psnr,float_ssim --log scores.xml \\
          --model 'vmaf_v1.0.16_3d0h,vmaf_v0.6.1:enable_transform:name=vmaf_phone'
      vmafcompare source.mp4 encode.mp4 --log scores.txt --log-format csv

  Refuse a distorted file of another size instead of scaling it (exit status 4):
      vmafcompare --scale-method none source.mp4 encode.mp4

EXIT STATUS:
  0  every distorted file was scored
  1  anything else: scoring failed mid-stream, writing the log or a plot failed once
     scoring had started, no frame pair was scored for a file, --rq-plot without any
     file's bitrate
  2  usage: an invalid option (as clap reports it), a missing or unreadable input file, an
     invalid --model or --features value, a --log that cannot be created, a --log,
     --plot or --rq-plot path in a directory that does not exist, a plot that is neither
     .svg nor .png, --auto-align or --offset with several distorted files
  3  an input cannot be decoded: not a media file, no video stream, no decoder for its
     codec, a decoding error
  4  the two streams cannot be scored together: sizes that differ with --scale-method none,
     a frame smaller than VMAF's minimum, chroma layouts the requested features cannot
     compare, a decoded format the element does not take
  5  the GPU was asked for (--backend cuda) but cannot be used: no CUDA driver, no device,
     --device-id out of range, or the CUDA backend failed to start
  With several distorted files (one pass) an error of any file stops them all, and its
  status is returned; a file that had no frame pair scored gives status 1 after the rows
  of the others.

ENVIRONMENT:
  GST_PLUGIN_FEATURE_RANK  extended as described above (not with --backend cpu)
  GST_DEBUG                GStreamer's debug log, e.g. GST_DEBUG=vmafcompare:5";

/// Options and arguments of `vmafcompare`. The doc comments are the help texts, kept as
/// written (`verbatim_doc_comment`: lines of at most 88 characters): the first line for
/// `-h`, all of it for `--help`.
#[derive(Parser, Debug)]
#[command(
    name = "vmafcompare",
    version = version(),
    about = "Scores distorted videos against their reference with VMAF (libvmaf 3.2.0's scores)",
    long_about = LONG_ABOUT,
    after_help = "Run with --help for the description, examples and exit status.",
    after_long_help = AFTER_LONG_HELP
)]
pub struct Args {
    /// Reference (original, pristine) video file
    #[arg(value_name = "REFERENCE")]
    pub reference: PathBuf,

    /// Distorted video files (encodes, renditions); several are scored in one pass
    #[arg(value_name = "DISTORTED", required = true, num_args = 1..)]
    pub distorted: Vec<PathBuf>,

    /// VMAF model(s): the element's `model` property
    ///
    /// A built-in model (vmaf_v0.6.1, vmaf_v0.6.1neg, vmaf_4k_v0.6.1, vmaf_b_v0.6.3, the
    /// vmaf_v1.0.16_* models of VMAF v1) or a libvmaf JSON model file, with libvmaf's
    /// options (:enable_transform, :name=NAME, :FEATURE.OPTION=VALUE); up to 8 separated
    /// by commas. The first model's score is `vmaf`, the others' are named after them.
    #[arg(
        long,
        value_name = "MODEL[,MODEL...]",
        default_value = "vmaf_v0.6.1",
        verbatim_doc_comment
    )]
    pub model: String,

    /// Extra metrics beside VMAF: the element's `features` property
    ///
    /// Comma-separated: psnr, float_ssim, float_ms_ssim, ssimulacra2, or any registered
    /// feature (vif, adm, motion, cambi, speed_chroma). Their pooled scores are printed
    /// beside VMAF's.
    #[arg(
        long,
        value_name = "NAME[,NAME...]",
        default_value = "",
        verbatim_doc_comment
    )]
    pub features: String,

    /// Where the scores are computed: auto, cpu or cuda
    ///
    /// auto: the GPU when one is usable, else the CPU (with a warning); cpu: the CPU;
    /// cuda: the GPU, or exit status 5. auto and cuda prefer GStreamer's NVDEC decoders
    /// (see above).
    #[arg(long, value_enum, default_value_t = Backend::Auto, hide_possible_values = true,
          verbatim_doc_comment)]
    pub backend: Backend,

    /// CPU backend threads (0: one per core; 1: no pool), as libvmaf's --threads
    #[arg(long, value_name = "N", default_value_t = 0,
          value_parser = clap::value_parser!(u32).range(0..=1024))]
    pub threads: u32,

    /// CUDA device ordinal, or -1: the element picks one at start (the decoder's GPU when it
    /// is bound to one, else the GPU with the fewest vmafcompare elements, the lowest load)
    #[arg(long, value_name = "N", default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i32).range(-1..))]
    pub device_id: i32,

    /// Score every N-th frame only, as libvmaf's --subsample
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub subsample: u32,

    /// How a distorted file of another size is scaled: bicubic, bilinear, lanczos or none
    ///
    /// bicubic: FFmpeg swscale's, as scale=W:H:flags=bicubic+accurate_rnd (Netflix's
    /// recommended practice); bilinear and lanczos: swscale's filters of those names;
    /// none: a distorted file of another size is an error (exit status 4).
    #[arg(long, value_enum, value_name = "METHOD", default_value_t = ScaleMethod::Bicubic,
          hide_possible_values = true, verbatim_doc_comment)]
    pub scale_method: ScaleMethod,

    /// Score at WIDTHxHEIGHT (e.g. 1920x1080) instead of the reference's size
    ///
    /// Both files are scaled to it with --scale-method.
    #[arg(long, value_name = "WxH", value_parser = parse_size, verbatim_doc_comment)]
    pub score_size: Option<(u32, u32)>,

    /// Write libvmaf's per-frame log to PATH (the element's `results-location`)
    ///
    /// With several distorted files, one log per file: the distorted file's stem goes
    /// before PATH's extension (--log scores.json writes scores.enc720.json for
    /// enc720.mp4; a stem met again gets -2, -3, ...; characters other than letters,
    /// digits and -_.+ become _).
    #[arg(long, value_name = "PATH", verbatim_doc_comment)]
    pub log: Option<PathBuf>,

    /// Format of the --log file: json, xml or csv
    ///
    /// By default from the log's extension: .xml or .csv, else json.
    #[arg(
        long,
        value_enum,
        value_name = "FORMAT",
        requires = "log",
        hide_possible_values = true,
        verbatim_doc_comment
    )]
    pub log_format: Option<LogFormat>,

    /// Draw the per-frame VMAF as a plot, SVG or PNG by the extension
    ///
    /// One line per distorted file; with one file its mean and worst frames are marked.
    /// PNG is the SVG drawn with a system font (e.g. Debian's fonts-dejavu-core).
    #[arg(long, value_name = "PATH.svg|PATH.png", verbatim_doc_comment)]
    pub plot: Option<PathBuf>,

    /// Draw the rate-quality curve, SVG or PNG by the extension
    ///
    /// Pooled VMAF against bitrate (kbit/s, as in the table), one labelled point per
    /// distorted file whose bitrate is known, joined by a line in bitrate order.
    #[arg(long, value_name = "PATH.svg|PATH.png", verbatim_doc_comment)]
    pub rq_plot: Option<PathBuf>,

    /// Find the time offset between the two files at the start, and pair frames by it
    ///
    /// The element's auto-align: the first second of both files is compared at offsets of
    /// up to 15 frames either way, the offset of the highest luma PSNR is printed and
    /// frames are paired with it from then on. For a distorted file whose timestamps do not
    /// line up with the reference's (cut, delayed or re-timed). One distorted file only.
    #[arg(long, verbatim_doc_comment)]
    pub auto_align: bool,

    /// Seconds the distorted file is late by (negative: the reference is late)
    ///
    /// The element's distorted-delay: the distorted frame at time t is paired with the
    /// reference's frame at t - SECONDS (at most 3600 either way); --auto-align replaces
    /// it by the offset it measures. One distorted file only.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true,
          value_parser = parse_offset, verbatim_doc_comment)]
    pub offset: Option<f64>,

    /// Worst frames to list per file (0: none)
    ///
    /// The lowest-scoring frames, at least 1/(4 N) of the clip apart so that one bad
    /// scene is listed once; each by its frame number in the distorted file and its time
    /// from the file's first frame (what a player seeks to, whatever the container).
    #[arg(long, value_name = "N", default_value_t = 5, verbatim_doc_comment)]
    pub worst: usize,

    /// Print every pooled metric, the features the model reads (VIF, ADM, motion) too
    #[arg(long)]
    pub all_metrics: bool,

    /// No progress bar and no warnings (errors are still reported)
    #[arg(short, long)]
    pub quiet: bool,
}

/// `--backend`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// The GPU when usable, else the CPU.
    Auto,
    /// The CPU.
    Cpu,
    /// The GPU, or exit status 5.
    Cuda,
}

impl From<Backend> for VmafBackend {
    fn from(b: Backend) -> Self {
        match b {
            Backend::Auto => VmafBackend::Auto,
            Backend::Cpu => VmafBackend::Cpu,
            Backend::Cuda => VmafBackend::Cuda,
        }
    }
}

/// `--scale-method`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ScaleMethod {
    /// FFmpeg swscale's bicubic (flags=bicubic+accurate_rnd).
    Bicubic,
    /// FFmpeg swscale's bilinear.
    Bilinear,
    /// FFmpeg swscale's Lanczos.
    Lanczos,
    /// Refuse files of other sizes.
    None,
}

impl From<ScaleMethod> for VmafScaleMethod {
    fn from(m: ScaleMethod) -> Self {
        match m {
            ScaleMethod::Bicubic => VmafScaleMethod::Bicubic,
            ScaleMethod::Bilinear => VmafScaleMethod::Bilinear,
            ScaleMethod::Lanczos => VmafScaleMethod::Lanczos,
            ScaleMethod::None => VmafScaleMethod::None,
        }
    }
}

/// `--log-format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// libvmaf's JSON log.
    Json,
    /// libvmaf's XML log.
    Xml,
    /// libvmaf's CSV log.
    Csv,
}

impl From<LogFormat> for ResultsFormat {
    fn from(f: LogFormat) -> Self {
        match f {
            LogFormat::Json => ResultsFormat::Json,
            LogFormat::Xml => ResultsFormat::Xml,
            LogFormat::Csv => ResultsFormat::Csv,
        }
    }
}

impl Args {
    /// The log format: `--log-format`, else from the log's extension, else JSON.
    pub fn log_format(&self) -> LogFormat {
        if let Some(f) = self.log_format {
            return f;
        }
        let ext = self
            .log
            .as_deref()
            .and_then(Path::extension)
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("xml") => LogFormat::Xml,
            Some("csv") => LogFormat::Csv,
            _ => LogFormat::Json,
        }
    }

    /// How the report, the plots and the element name each distorted file: one file by its
    /// file name (or its path when it has none); several by their stems (the rendition
    /// labels of the ladder), made unique with `-2`, `-3`, ... after a stem seen before (also
    /// when only [`log_name`] makes two of them equal).
    pub fn labels(&self) -> Vec<String> {
        if let [one] = self.distorted.as_slice() {
            let name = one.file_name().map_or_else(
                || one.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            );
            return vec![name];
        }
        let mut taken: Vec<String> = Vec::with_capacity(self.distorted.len());
        let mut labels = Vec::with_capacity(self.distorted.len());
        for d in &self.distorted {
            let stem = d.file_stem().map_or_else(
                || "distorted".to_owned(),
                |s| s.to_string_lossy().into_owned(),
            );
            let mut label = stem.clone();
            let mut n = 1;
            while taken.contains(&log_name(&label)) {
                n += 1;
                label = format!("{stem}-{n}");
            }
            taken.push(log_name(&label));
            labels.push(label);
        }
        labels
    }

    /// The element's `results-location`: `--log` itself for one distorted file; for several
    /// (a ladder) `--log` with `.%s` before its extension, which the element replaces by each
    /// rendition's label (`scores.json` gives `scores.%s.json`).
    pub fn log_location(&self) -> Option<PathBuf> {
        let log = self.log.as_deref()?;
        if self.distorted.len() == 1 {
            return Some(log.to_path_buf());
        }
        let base = log.file_stem().map(|s| s.to_string_lossy().into_owned());
        let ext = log.extension().map(|s| s.to_string_lossy().into_owned());
        let name = match (&base, &ext) {
            (Some(b), Some(e)) => format!("{b}.%s.{e}"),
            (Some(b), None) => format!("{b}.%s"),
            (None, _) => "%s".to_owned(),
        };
        Some(log.with_file_name(name))
    }

    /// The log the element writes for each distorted file: `--log` itself for one file; for
    /// several, [`Args::log_location`] with each `%s` replaced by the file's label as the
    /// element writes it (`scores.json` and `enc720.mp4` give `scores.enc720.json`).
    pub fn log_paths(&self) -> Vec<Option<PathBuf>> {
        let Some(location) = self.log_location() else {
            return vec![None; self.distorted.len()];
        };
        if self.distorted.len() == 1 {
            return vec![Some(location)];
        }
        let template = location.to_string_lossy().into_owned();
        self.labels()
            .iter()
            .map(|l| Some(PathBuf::from(template.replace("%s", &log_name(l)))))
            .collect()
    }
}

/// A rendition label as the element writes it into a log's name: characters other than
/// ASCII letters, digits and `-_.+` become `_` (the element's rule for `results-location`).
pub fn log_name(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `--offset`: seconds, at most an hour either way (the element's `distorted-delay` range).
pub fn parse_offset(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && v.abs() <= 3600.0)
        .ok_or_else(|| format!("'{s}': expected seconds between -3600 and 3600, e.g. 0.4"))
}

/// `WIDTHxHEIGHT`, e.g. `1920x1080`, each between 1 and 16384.
pub fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("'{s}': expected WIDTHxHEIGHT, e.g. 1920x1080");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let n = |v: &str| {
        v.trim()
            .parse::<u32>()
            .ok()
            .filter(|v| (1..=16384).contains(v))
            .ok_or_else(bad)
    };
    Ok((n(w)?, n(h)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_paths_insert_the_stem() {
        let args = Args::try_parse_from([
            "vmafcompare",
            "ref.mp4",
            "a/enc.mp4",
            "b/enc.mkv",
            "c/low.mp4",
            "--log",
            "out/scores.json",
        ])
        .unwrap();
        assert_eq!(args.labels(), ["enc", "enc-2", "low"]);
        let paths: Vec<_> = args.log_paths().into_iter().flatten().collect();
        assert_eq!(
            paths,
            [
                PathBuf::from("out/scores.enc.json"),
                PathBuf::from("out/scores.enc-2.json"),
                PathBuf::from("out/scores.low.json"),
            ]
        );
        assert_eq!(args.log_format(), LogFormat::Json);
    }

    #[test]
    fn labels_are_unique_as_log_names() {
        let args =
            Args::try_parse_from(["vmafcompare", "ref.mp4", "a b.mp4", "a_b.mkv", "r%s.mp4"])
                .unwrap();
        assert_eq!(args.labels(), ["a b", "a_b-2", "r%s"]);
        assert_eq!(args.log_paths(), [None, None, None]);
        let args = Args::try_parse_from([
            "vmafcompare",
            "ref.mp4",
            "a b.mp4",
            "r%s.mp4",
            "--log",
            "out",
        ])
        .unwrap();
        assert_eq!(args.log_location(), Some(PathBuf::from("out.%s")));
        assert_eq!(
            args.log_paths(),
            [
                Some(PathBuf::from("out.a_b")),
                Some(PathBuf::from("out.r_s"))
            ]
        );
        let one = Args::try_parse_from(["vmafcompare", "ref.mp4", "d/enc.mp4", "--log", "x.json"])
            .unwrap();
        assert_eq!(one.labels(), ["enc.mp4"]);
        assert_eq!(one.log_paths(), [Some(PathBuf::from("x.json"))]);
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("1920x1080"), Ok((1920, 1080)));
        assert!(parse_size("0x10").is_err());
        assert!(parse_size("1920").is_err());
    }

    #[test]
    fn command_is_consistent() {
        use clap::CommandFactory;
        Args::command().debug_assert();
    }
}
