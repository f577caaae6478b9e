//! Backend-independent scoring: frame views in, per-frame features and VMAF out, pooling and
//! libvmaf-compatible logs. It asks the feature registry ([`crate::features`]) which
//! features the models and the `features` property need ([`ScorePlan`]) and runs them on a
//! backend ([`backend`]: the CPU pool or CUDA); it names no metric itself.

pub mod align;
pub mod backend;
pub mod error;
pub mod frame_set;
pub mod log;
pub mod model;
pub mod model_set;
mod model_svm;
pub mod plan;
pub mod pool;
pub mod scale;
pub mod scorer;
pub mod track;
pub mod window;

pub use crate::video::{colour, frame};

pub use crate::features::MAX_OPTION_SETS;
pub use crate::features::{FeatureSet, Geometry, Layout, RawFeatures};
pub use crate::video::colour::YuvToRgb;
pub use crate::video::frame::{
    ChromaInput, ChromaPair, ComponentInput, DeviceComponent, DeviceLuma, FeatureError,
    HostComponent, HostLuma, LumaInput, LumaPlane, SampleLayout,
};
pub use backend::api::Backend;
pub use backend::pair::PairInput;
pub use backend::{CpuBackend, CudaBackend};
pub use error::EngineError;
pub use frame_set::{FrameChroma, FrameSet, RenditionFrame, SetFeatures, SetRenditions};
pub use log::{LogFormat, LogWriter};
pub use model::Model;
pub use model_set::{BootstrapScore, ModelSpec, NamedModel};
pub use plan::{FrameScores, PlanError, ScorePlan};
pub use pool::{Pool, Pooled};
pub use scorer::{LostFrame, LostSet, Scorer};
pub use track::{Scored, Track};
