//! PLACEHOLDER until the integer VIF lands.
use crate::engine::frame::{FeatureError, LumaPlane};
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VifConfig {
    pub enhn_gain_limit: f64,
}
impl Default for VifConfig {
    fn default() -> Self {
        Self {
            enhn_gain_limit: 100.0,
        }
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct VifScores {
    pub num: [f64; 4],
    pub den: [f64; 4],
    pub scale: [f64; 4],
}
pub const MIN_WIDTH: usize = 16;
pub const MIN_HEIGHT: usize = 16;
pub struct Vif;
impl Vif {
    pub fn new(_w: usize, _h: usize, _bpc: u32) -> Result<Self, FeatureError> {
        Ok(Vif)
    }
    pub fn compute(
        &mut self,
        _r: &LumaPlane,
        _d: &LumaPlane,
        _c: &VifConfig,
    ) -> Result<VifScores, FeatureError> {
        Ok(VifScores::default())
    }
}
