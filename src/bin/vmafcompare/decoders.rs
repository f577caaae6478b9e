//! Which decoders `decodebin` picks when the scores are computed on the GPU: the NVDEC
//! decoders' ranks raised (GST_PLUGIN_FEATURE_RANK), so decoded frames reach the GPU in CUDA
//! memory. Used by the scoring command and by `vmafcompare monitor`.

use gst::prelude::PluginFeatureExtManual;

/// The NVDEC decoders whose rank `--backend auto|cuda` raises: this plugin's `vmafnvdec`
/// (H.264 and HEVC 4:2:0, about twice the frames per second of GStreamer 1.22's decoders) to
/// MAX (G_MAXINT), GStreamer's, which take the streams it does not (AV1, VP9, 4:4:4), to one
/// below (equal ranks would be ordered by name, nvh264dec first).
const NVDEC_DECODERS: [(&str, &str); 5] = [
    ("vmafnvdec", "MAX"),
    ("nvh264dec", "2147483646"),
    ("nvh265dec", "2147483646"),
    ("nvav1dec", "2147483646"),
    ("nvvp9dec", "2147483646"),
];

/// Raises the NVDEC decoders' ranks ([`NVDEC_DECODERS`]), so that decodebin picks them and
/// decoded frames reach the GPU in CUDA memory: appends `NAME:RANK` to GST_PLUGIN_FEATURE_RANK
/// (read by `gst::init`) for each decoder that the variable does not already name. Decoders
/// that are not installed are ignored by GStreamer.
pub fn prefer_nvdec() {
    let existing = std::env::var("GST_PLUGIN_FEATURE_RANK").unwrap_or_default();
    let value = with_nvdec_ranks(&existing);
    if value != existing {
        // Called before GStreamer (or any other thread) starts.
        std::env::set_var("GST_PLUGIN_FEATURE_RANK", value);
    }
}

/// Gives the built-in plugin's `vmafnvdec` the rank GST_PLUGIN_FEATURE_RANK names for it
/// (set by [`prefer_nvdec`] or by the user). GStreamer applies that variable at `gst::init`,
/// to the plugins it knows then; this plugin is registered later (built into the command), so
/// its rank is set here.
pub fn rank_own_decoder() {
    let value = std::env::var("GST_PLUGIN_FEATURE_RANK").unwrap_or_default();
    let Some(rank) = own_decoder_rank(&value) else {
        return;
    };
    if let Some(f) = gst::ElementFactory::find("vmafnvdec") {
        // SAFETY: any integer is a valid GstRank value.
        f.set_rank(unsafe { gst::glib::translate::from_glib(rank) });
    }
}

/// The rank a GST_PLUGIN_FEATURE_RANK value gives `vmafnvdec` (the last entry naming it; a
/// number or NONE, MARGINAL, SECONDARY, PRIMARY, MAX), `None` when it names none.
fn own_decoder_rank(value: &str) -> Option<i32> {
    value
        .split(',')
        .filter_map(|e| e.split_once(':'))
        .filter(|(name, _)| name.trim() == "vmafnvdec")
        .filter_map(|(_, rank)| match rank.trim() {
            "NONE" => Some(0),
            "MARGINAL" => Some(64),
            "SECONDARY" => Some(128),
            "PRIMARY" => Some(256),
            "MAX" => Some(i32::MAX),
            n => n.parse().ok(),
        })
        .next_back()
}

/// `existing` (a GST_PLUGIN_FEATURE_RANK value) with `NAME:RANK` appended for each NVDEC
/// decoder it does not name.
fn with_nvdec_ranks(existing: &str) -> String {
    let named: Vec<&str> = existing
        .split(',')
        .filter_map(|e| e.split(':').next())
        .map(str::trim)
        .collect();
    let mut entries: Vec<String> = existing
        .split(',')
        .filter(|e| !e.trim().is_empty())
        .map(str::to_owned)
        .collect();
    entries.extend(
        NVDEC_DECODERS
            .iter()
            .filter(|(d, _)| !named.contains(d))
            .map(|(d, rank)| format!("{d}:{rank}")),
    );
    entries.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_decoder_rank_is_read_from_the_variable() {
        assert_eq!(own_decoder_rank(&with_nvdec_ranks("")), Some(i32::MAX));
        assert_eq!(own_decoder_rank("vmafnvdec:NONE,nvh264dec:MAX"), Some(0));
        assert_eq!(own_decoder_rank("nvh264dec:MAX"), None);
    }

    #[test]
    fn nvdec_ranks_are_appended() {
        assert_eq!(
            with_nvdec_ranks(""),
            "vmafnvdec:MAX,nvh264dec:2147483646,nvh265dec:2147483646,nvav1dec:2147483646,\
             nvvp9dec:2147483646"
        );
        assert_eq!(
            with_nvdec_ranks("avdec_h264:NONE,nvh265dec:NONE"),
            "avdec_h264:NONE,nvh265dec:NONE,vmafnvdec:MAX,nvh264dec:2147483646,\
             nvav1dec:2147483646,nvvp9dec:2147483646"
        );
    }
}
