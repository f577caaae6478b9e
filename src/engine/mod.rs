//! Backend-independent scoring: frame views in, per-frame features and VMAF out, pooling and
//! libvmaf-compatible logs.

pub mod align;
pub mod colour;
pub mod features;
pub mod frame;
pub mod log;
pub mod model;
pub mod model_set;
pub mod pool;
pub mod scorer;
pub mod window;

pub use colour::YuvToRgb;
pub use features::{ExtraFeature, ExtraScores, FeatureSet};
pub use frame::{
    ChromaInput, ChromaPair, ComponentInput, DeviceComponent, DeviceLuma, FeatureError,
    HostComponent, HostLuma, LumaInput, LumaPlane, SampleLayout,
};
pub use log::{LogFormat, LogWriter};
pub use model::Model;
pub use model_set::{BootstrapScore, ModelSpec, NamedModel};
pub use pool::{Pool, Pooled};
pub use scorer::{
    Backend, EngineError, FrameScores, RawFeatures, ScorePlan, Scored, Scorer, MAX_OPTION_SETS,
};
