//! Properties: the `ObjectImpl` that installs the element's properties (`gst-inspect-1.0`
//! text) and reads and writes its [`super::settings::Settings`]. The live-monitoring
//! properties are in [`super::monitor`].

use std::sync::LazyLock;

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;

use super::caps::MAX_DIMENSION;
use super::settings::{
    AUTO_DEVICE_ID, DEFAULT_DEVICE_ID, DEFAULT_SUBSAMPLE, DEFAULT_THREADS, MAX_SUBSAMPLE,
    MAX_THREADS,
};
use super::util::{lock, CAT};
use super::{monitor, VmafCompare};
use crate::engine::model::DEFAULT_MODEL;
use crate::vmafcompare::{ResultsFormat, VmafBackend, VmafScaleMethod};

impl ObjectImpl for VmafCompare {
    fn properties() -> &'static [glib::ParamSpec] {
        static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
            let mut props = vec![
                glib::ParamSpecString::builder("model")
                    .nick("Model")
                    .blurb(
                        "VMAF model(s), comma-separated, scored on the same features in one pass: \
                         a built-in name (VMAF v0: vmaf_v0.6.1, vmaf_v0.6.1neg, vmaf_4k_v0.6.1, \
                         vmaf_4k_v0.6.1neg, vmaf_b_v0.6.3 with its bootstrap interval; the \
                         same on libvmaf's float features: vmaf_float_v0.6.1, \
                         vmaf_float_v0.6.1neg, vmaf_float_4k_v0.6.1, vmaf_float_b_v0.6.3; VMAF v1 (libvmaf 3.2.0, \
                         best at 10 bits; frames too small for SpEED chroma's blocks are \
                         refused with the size needed): vmaf_v1.0.16_3d0h, \
                         vmaf_v1.0.16_5d0h, vmaf_v1.0.16_1d5h_2160, vmaf_v1.0.16_3d0h_2160 and \
                         the high-frame-rate vmaf_v1.0.16_hfr_3d0h, _hfr_5d0h, _hfr_1d5h_2160, \
                         _hfr_3d0h_2160; <d>d<h>h: viewing distance in display heights, _2160: \
                         4K display) or the path of a libvmaf JSON model, each optionally \
                         followed by libvmaf's options ':enable_transform' (the phone model), \
                         ':name=NAME' and ':FEATURE.OPTION=VALUE' (e.g. \
                         ':cambi.enc_width=1280:cambi.enc_height=720', \
                         ':motion.motion_max_val=18'). The first model's score is 'vmaf'; the \
                         others are named by name= or their model name. Loaded at NULL->READY",
                    )
                    .default_value(Some(DEFAULT_MODEL))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("features")
                    .nick("Features")
                    .blurb(
                        "Extra metrics beside VMAF, comma-separated: psnr (psnr_y, psnr_cb, \
                         psnr_cr: libvmaf's integer PSNR), float_ssim, float_ms_ssim \
                         (libvmaf's; frames of at least 176x176), ssimulacra2 (on RGB converted \
                         with the reference caps' colorimetry, named in the log), cambi \
                         (banding, libvmaf's defaults) and speed_chroma (speed_chroma_u, _v, \
                         _uv; libvmaf's defaults), the VMAF v1 features; and the rest of \
                         libvmaf 3.2.0's extractors under its names and log keys: ciede \
                         (ciede2000, libvmaf's fixed limited-range BT.709 reading), psnr_hvs \
                         (psnr_hvs_y, _cb, _cr, psnr_hvs), speed_temporal, float_vif \
                         (vif_scale0..3), float_adm (adm2, aim, adm3, adm_scale0..3), \
                         float_motion (motion, motion2, motion3), float_psnr, float_ansnr \
                         (float_ansnr, float_anpsnr) and float_moment (float_moment_ref1st, \
                         _dis1st, _ref2nd, _dis2nd). Reported in \
                         the frame message, the buffer meta, the summary and the log under \
                         these names; computed by the selected backend (GPU or CPU). Metrics \
                         that read chroma need the same chroma subsampling on both pads. \
                         VMAF's own features (vif, adm, motion) may be named too; they are \
                         computed once, with the models' options, when a model reads them. \
                         Empty: the models' features only",
                    )
                    .default_value(Some(""))
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("backend", VmafBackend::Auto)
                    .nick("Backend")
                    .blurb(
                        "Where features are computed: auto (CUDA if usable, else CPU with a warning), \
                         cpu, or cuda (error at NULL->READY if no GPU is usable)",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("subsample")
                    .nick("Subsample")
                    .blurb(
                        "Score every N-th frame (1 = every frame), as libvmaf's --subsample; \
                         motion is still computed on every frame",
                    )
                    .minimum(1)
                    .maximum(MAX_SUBSAMPLE)
                    .default_value(DEFAULT_SUBSAMPLE)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecString::builder("results-location")
                    .nick("Results location")
                    .blurb(
                        "File to write the per-frame and pooled log to, in libvmaf's layout \
                         (see results-format); opened at READY->PAUSED. Unset: no file",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("results-format", ResultsFormat::Json)
                    .nick("Results format")
                    .blurb("Format of the results-location log: json, xml or csv (libvmaf layouts)")
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt::builder("device-id")
                    .nick("Device ID")
                    .blurb(
                        "CUDA device ordinal used by the cuda (and auto) backend, or -1: the \
                         element chooses at NULL->READY, in this order: the device of the \
                         pipeline's CUDA context when one is known then (set on the element, or \
                         a neighbour's), the device a CUDA element upstream is bound to (its \
                         cuda-device-id, e.g. nvh264device1dec), else the GPU with the fewest \
                         vmafcompare elements of this process, then the lowest utilisation, \
                         then the most free memory (NVML), then the lowest ordinal. \
                         active-device-id tells which one it opened",
                    )
                    .minimum(AUTO_DEVICE_ID)
                    .maximum(i32::MAX)
                    .default_value(DEFAULT_DEVICE_ID)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecInt::builder("active-device-id")
                    .nick("Active device ID")
                    .blurb(
                        "CUDA ordinal of the device the element opened at NULL->READY (the \
                         device-id setting, or the one device-id=-1 chose), until READY->NULL; \
                         -1 while no GPU is open (in NULL, with backend=cpu, or auto without a \
                         usable GPU)",
                    )
                    .minimum(-1)
                    .maximum(i32::MAX)
                    .default_value(-1)
                    .read_only()
                    .build(),
                glib::ParamSpecUInt::builder("threads")
                    .nick("CPU threads")
                    .blurb(
                        "Threads of the CPU backend (backend=cpu, or auto without a usable GPU): \
                         0 = one per core (default), 1 = score in the streaming thread. Frames \
                         are scored in parallel on the element's own pool, started at \
                         NULL->READY (and again at READY->PAUSED when changed) and joined at \
                         READY->NULL; the scores are the same for any value",
                    )
                    .maximum(MAX_THREADS)
                    .default_value(DEFAULT_THREADS)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecEnum::builder_with_default("scale-method", VmafScaleMethod::Bicubic)
                    .nick("Scale method")
                    .blurb(
                        "How a stream whose size differs from the scoring size (the reference's, \
                         or score-width x score-height) is scaled before scoring, on the \
                         backend that scores (GPU kernels on CUDA memory, in place): bicubic \
                         (default; FFmpeg swscale's, equal sample for sample to ffmpeg \
                         scale=W:H:flags=bicubic+accurate_rnd, Netflix's recommended practice \
                         for renditions of a ladder), bilinear, lanczos (swscale's), or none \
                         (pads of different sizes are an error naming both). Luma, and chroma \
                         when a metric reads it; each stream at its own bit depth scaled at the \
                         scoring depth. The summary and the log name the scored size and how \
                         each pad was scaled",
                    )
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("score-width")
                    .nick("Scoring width")
                    .blurb(
                        "Score at this width instead of the reference's (0, default: the \
                         reference's): both streams are scaled to score-width x score-height \
                         with scale-method, e.g. 1920 x 1080 for a 2160p reference and its \
                         renditions with vmaf_v0.6.1, as libvmaf's documentation advises for \
                         that model. 0 with score-height set keeps the reference's width",
                    )
                    .maximum(MAX_DIMENSION)
                    .default_value(0)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecUInt::builder("score-height")
                    .nick("Scoring height")
                    .blurb(
                        "Score at this height instead of the reference's (0, default: the \
                         reference's); see score-width",
                    )
                    .maximum(MAX_DIMENSION)
                    .default_value(0)
                    .mutable_ready()
                    .build(),
                glib::ParamSpecBoolean::builder("frame-message")
                    .nick("Frame message")
                    .blurb(
                        "Post a 'vmafcompare-frame' element message for every scored frame \
                         (the summary 'vmafcompare-summary' is always posted at EOS)",
                    )
                    .default_value(true)
                    .mutable_playing()
                    .build(),
                glib::ParamSpecBoxed::builder::<gst::Structure>("stats")
                    .nick("Statistics")
                    .blurb(
                        "Read-only counters so far, as the summary will give them at EOS: a \
                         'vmafcompare-stats' structure with guint64 frames (scored), skipped, \
                         late, unpaired-reference, unpaired-distorted, out-of-order-reference, \
                         out-of-order-distorted (a ladder: its renditions summed). For live \
                         monitoring (vmafcompare monitor polls it); reset at READY->PAUSED",
                    )
                    .read_only()
                    .build(),
            ];
            props.extend(monitor::properties());
            props
        });
        PROPS.as_ref()
    }

    fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
        if self.monitor.set_property(pspec.name(), value) {
            return;
        }
        let mut s = lock(&self.settings);
        match pspec.name() {
            "model" => {
                s.model = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .unwrap_or_else(|| DEFAULT_MODEL.to_owned())
            }
            "features" => {
                s.features = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .unwrap_or_default()
            }
            "backend" => s.backend = value.get().unwrap_or_default(),
            "subsample" => s.subsample = value.get::<u32>().unwrap_or(DEFAULT_SUBSAMPLE).max(1),
            "results-location" => {
                s.results_location = value
                    .get::<Option<String>>()
                    .ok()
                    .flatten()
                    .filter(|p| !p.is_empty())
            }
            "results-format" => s.results_format = value.get().unwrap_or_default(),
            "frame-message" => s.frame_message = value.get().unwrap_or(true),
            "device-id" => s.device_id = value.get().unwrap_or(DEFAULT_DEVICE_ID),
            "threads" => s.threads = value.get().unwrap_or(DEFAULT_THREADS),
            "scale-method" => s.scale_method = value.get().unwrap_or_default(),
            "score-width" => s.score_width = value.get().unwrap_or(0),
            "score-height" => s.score_height = value.get().unwrap_or(0),
            other => gst::warning!(CAT, imp = self, "unknown property {other}"),
        }
    }

    fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
        if let Some(v) = self.monitor.property(pspec.name()) {
            return v;
        }
        if pspec.name() == "active-device-id" {
            return self.active_device_id().to_value();
        }
        if pspec.name() == "stats" {
            return self.stats().to_value();
        }
        let s = lock(&self.settings);
        match pspec.name() {
            "model" => s.model.to_value(),
            "features" => s.features.to_value(),
            "backend" => s.backend.to_value(),
            "subsample" => s.subsample.to_value(),
            "results-location" => s.results_location.to_value(),
            "results-format" => s.results_format.to_value(),
            "frame-message" => s.frame_message.to_value(),
            "device-id" => s.device_id.to_value(),
            "threads" => s.threads.to_value(),
            "scale-method" => s.scale_method.to_value(),
            "score-width" => s.score_width.to_value(),
            "score-height" => s.score_height.to_value(),
            _ => glib::Value::from_type(pspec.value_type()),
        }
    }

    fn constructed(&self) {
        self.parent_constructed();
        let obj = self.obj();
        for pad in [&self.reference_pad, &self.distorted_pad] {
            if let Err(e) = obj.add_pad(pad) {
                gst::error!(CAT, imp = self, "cannot add pad {}: {e}", pad.name());
            }
        }
    }
}
