//! PLACEHOLDER until the integer ADM lands.
use crate::engine::frame::{FeatureError, LumaPlane};
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdmConfig {
    pub enhn_gain_limit: f64,
}
impl Default for AdmConfig {
    fn default() -> Self {
        Self {
            enhn_gain_limit: 100.0,
        }
    }
}
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct AdmScores {
    pub adm2: f64,
    pub aim: f64,
    pub adm3: f64,
    pub scale: [f64; 4],
    pub num: f64,
    pub den: f64,
}
pub const MIN_WIDTH: usize = 16;
pub const MIN_HEIGHT: usize = 16;
pub struct Adm;
impl Adm {
    pub fn new(_w: usize, _h: usize, _bpc: u32) -> Result<Self, FeatureError> {
        Ok(Adm)
    }
    pub fn compute(
        &mut self,
        _r: &LumaPlane,
        _d: &LumaPlane,
        _c: &AdmConfig,
    ) -> Result<AdmScores, FeatureError> {
        Ok(AdmScores::default())
    }
}
