//! The element's property value types: where features are computed (`backend`), how a
//! stream of another size is scaled (`scale-method`) and the log format (`results-format`).

use gst::glib;

/// Where the features are computed (`backend` property).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstVmafCompareBackend")]
pub enum VmafBackend {
    /// CUDA when a usable GPU is found, else the CPU with a warning.
    #[default]
    #[enum_value(
        name = "Auto: CUDA if usable, else CPU (with a warning)",
        nick = "auto"
    )]
    Auto = 0,
    /// The CPU reference implementation (one thread).
    #[enum_value(name = "CPU: integer reference implementation", nick = "cpu")]
    Cpu = 1,
    /// The GPU; an error at NULL->READY when no GPU is usable.
    #[enum_value(name = "CUDA: NVIDIA GPU (error if unavailable)", nick = "cuda")]
    Cuda = 2,
}

/// How a stream of another size is scaled to the scoring size (`scale-method` property).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstVmafCompareScaleMethod")]
pub enum VmafScaleMethod {
    /// FFmpeg swscale's bicubic (B = 0, C = 0.6), as `scale=W:H:flags=bicubic`.
    #[default]
    #[enum_value(
        name = "Bicubic: FFmpeg swscale's (flags=bicubic+accurate_rnd), Netflix's recommended practice",
        nick = "bicubic"
    )]
    Bicubic = 0,
    /// FFmpeg swscale's bilinear.
    #[enum_value(
        name = "Bilinear: FFmpeg swscale's (flags=bilinear)",
        nick = "bilinear"
    )]
    Bilinear = 1,
    /// FFmpeg swscale's Lanczos (3 lobes).
    #[enum_value(name = "Lanczos: FFmpeg swscale's (flags=lanczos)", nick = "lanczos")]
    Lanczos = 2,
    /// No scaling: pads of different sizes are an error.
    #[enum_value(name = "None: refuse pads of different sizes", nick = "none")]
    None = 3,
}

impl From<VmafScaleMethod> for crate::engine::scale::ScaleMethod {
    fn from(m: VmafScaleMethod) -> Self {
        use crate::engine::scale::ScaleMethod as M;
        match m {
            VmafScaleMethod::Bicubic => M::Bicubic,
            VmafScaleMethod::Bilinear => M::Bilinear,
            VmafScaleMethod::Lanczos => M::Lanczos,
            VmafScaleMethod::None => M::None,
        }
    }
}

/// Log format for `results-location` (`results-format` property).
#[derive(Debug, Eq, PartialEq, Ord, PartialOrd, Hash, Clone, Copy, glib::Enum, Default)]
#[repr(u32)]
#[enum_type(name = "GstVmafCompareResultsFormat")]
pub enum ResultsFormat {
    /// libvmaf's JSON log.
    #[default]
    #[enum_value(name = "JSON (libvmaf layout)", nick = "json")]
    Json = 0,
    /// libvmaf's XML log.
    #[enum_value(name = "XML (libvmaf layout)", nick = "xml")]
    Xml = 1,
    /// libvmaf's CSV log.
    #[enum_value(name = "CSV (libvmaf layout)", nick = "csv")]
    Csv = 2,
}
