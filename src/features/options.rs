//! Feature options as libvmaf's model JSON (`feature_opts_dicts`) gives them.

use std::collections::BTreeMap;

/// One option value: libvmaf's options are numbers, booleans or short strings
/// (`speed_prescale_method: "bilinear"`).
#[derive(Debug, Clone, PartialEq)]
pub enum OptionValue {
    /// A finite number.
    Number(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A string.
    Text(String),
}

impl OptionValue {
    /// Reads a JSON value: a finite number, a boolean or a string.
    ///
    /// Errors: a text saying what `key` must be.
    pub fn from_json(key: &str, v: &serde_json::Value) -> Result<Self, String> {
        match v {
            serde_json::Value::Bool(b) => Ok(Self::Bool(*b)),
            serde_json::Value::String(s) => Ok(Self::Text(s.clone())),
            other => other
                .as_f64()
                .filter(|x| x.is_finite())
                .map(Self::Number)
                .ok_or_else(|| format!("option '{key}' must be a finite number")),
        }
    }
}

/// The options of one feature instance, by libvmaf option name (`vif_enhn_gain_limit`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Options(pub BTreeMap<String, OptionValue>);

impl Options {
    /// No options: every value at libvmaf's default.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key`.
    pub fn set(&mut self, key: &str, value: OptionValue) {
        self.0.insert(key.to_owned(), value);
    }

    /// The number under `key` within `range`, `default` when absent.
    ///
    /// Errors: a text naming the option and the range, for a value outside it or not a
    /// number.
    pub fn number(
        &self,
        key: &str,
        default: f64,
        range: std::ops::RangeInclusive<f64>,
    ) -> Result<f64, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(OptionValue::Number(v)) if range.contains(v) => Ok(*v),
            Some(OptionValue::Number(v)) => Err(format!(
                "option '{key}' = {v} is outside {}..{}",
                range.start(),
                range.end()
            )),
            Some(_) => Err(format!("option '{key}' must be a finite number")),
        }
    }

    /// Refuses any option not in `known`.
    ///
    /// Errors: "feature option 'x' is not supported".
    pub fn only(&self, known: &[&str]) -> Result<(), String> {
        match self.0.keys().find(|k| !known.contains(&k.as_str())) {
            Some(k) => Err(format!("feature option '{k}' is not supported")),
            None => Ok(()),
        }
    }
}
