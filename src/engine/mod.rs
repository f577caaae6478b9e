//! Backend-independent scoring: frame views in, per-frame features and VMAF out, pooling and
//! libvmaf-compatible logs.

pub mod align;
pub mod frame;
pub mod log;
pub mod model;
pub mod pool;
pub mod scorer;
pub mod window;

pub use frame::{DeviceLuma, FeatureError, HostLuma, LumaInput, LumaPlane, SampleLayout};
pub use log::{LogFormat, LogWriter};
pub use model::Model;
pub use pool::{Pool, Pooled};
pub use scorer::{Backend, EngineError, FrameScores, RawFeatures, Scored, Scorer};
