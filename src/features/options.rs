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

    /// The boolean under `key`, `default` when absent.
    ///
    /// Errors: a text naming the option, for a value that is not `true` / `false`.
    pub fn flag(&self, key: &str, default: bool) -> Result<bool, String> {
        match self.0.get(key) {
            None => Ok(default),
            Some(OptionValue::Bool(b)) => Ok(*b),
            Some(_) => Err(format!("option '{key}' must be true or false")),
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

/// A number as C's `printf("%g")` writes it (6 significant digits, trailing zeros dropped,
/// exponent form below 1e-4 or from 1e6): how libvmaf writes option values into feature names
/// (Netflix/vmaf v3.2.0, libvmaf/src/feature/feature_name.c). `17.0` -> `17`, `0.06` ->
/// `0.06`, `1e-5` -> `1e-05`.
pub fn fmt_g(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    if !v.is_finite() {
        return if v.is_nan() {
            "nan".to_owned()
        } else if v > 0.0 {
            "inf".to_owned()
        } else {
            "-inf".to_owned()
        };
    }
    // The exponent after rounding to 6 significant digits.
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.unsigned_abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        trim(&format!("{v:.decimals$}"))
    }
}

/// One option's part of a libvmaf feature name: its option name (for the order), the alias
/// written, and the value (`None` for a boolean, written as the alias alone).
pub type SuffixPart<'a> = (&'a str, &'a str, Option<String>);

/// libvmaf's option suffix of a feature name from the options that differ from their
/// defaults: sorted by option name, each `_<alias>_<value>` (`_<alias>` for booleans). E.g.
/// motion with `motion_max_val` 18, `motion_five_frame_window` and `motion_moving_average`:
/// `_mffw_mmxv_18_mma`. Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/feature_name.c.
pub fn suffix(mut parts: Vec<SuffixPart<'_>>) -> String {
    parts.sort_by(|a, b| a.0.cmp(b.0));
    let mut s = String::new();
    for (_, alias, value) in parts {
        s.push('_');
        s.push_str(alias);
        if let Some(v) = value {
            s.push('_');
            s.push_str(&v);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmt_g_matches_printf() {
        for (v, want) in [
            (17.0, "17"),
            (0.06, "0.06"),
            (1080.0, "1080"),
            (0.5, "0.5"),
            (45.0, "45"),
            (0.19, "0.19"),
            (1e-5, "1e-05"),
            (1234567.0, "1.23457e+06"),
            (100.0, "100"),
            (0.0001, "0.0001"),
            (123456.0, "123456"),
            (2.5e-7, "2.5e-07"),
            (-3.25, "-3.25"),
            (0.333333333, "0.333333"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
        ] {
            assert_eq!(fmt_g(v), want, "{v}");
        }
    }

    #[test]
    fn suffix_sorts_by_option_name() {
        let s = suffix(vec![
            ("motion_moving_average", "mma", None),
            ("motion_max_val", "mmxv", Some(fmt_g(18.0))),
            ("motion_five_frame_window", "mffw", None),
        ]);
        assert_eq!(s, "_mffw_mmxv_18_mma");
    }
}
