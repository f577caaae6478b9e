//! Warnings that explain a run's results from what was measured of the files while they
//! played: frames left without a partner (at the start or the end, the time between the
//! streams' first frames, what to try) and a distorted file larger than the reference (the
//! arguments swapped?).

use gstvmafcompare::vmafcompare::OffsetMessage;

use crate::probes::{Facts, Frames};
use crate::report::FileResult;

/// How frames were paired: the delay the element applied, and whether the options that
/// change it may be suggested (a pair; not a ladder).
#[derive(Clone, Copy, Debug, Default)]
pub struct Pairing {
    /// ns the distorted stream was taken to be late by (`--offset`, or the offset
    /// auto-alignment found).
    pub delay: i64,
    /// `--auto-align` or `--offset` can be given (one distorted file).
    pub adjustable: bool,
    /// `--auto-align` was given.
    pub auto_align: bool,
}

/// The warnings for `files` scored against `reference` (named `reference_name`).
pub fn warnings(
    reference_name: &str,
    reference: &Facts,
    files: &[FileResult],
    pairing: Pairing,
) -> Vec<String> {
    let mut out = Vec::new();
    for f in files {
        let name = f.path.display();
        if let (Some((rw, rh)), Some((dw, dh))) =
            (reference.frames.size, f.scored.facts.frames.size)
        {
            if u64::from(dw) * u64::from(dh) > u64::from(rw) * u64::from(rh) {
                out.push(format!(
                    "{name} ({dw}x{dh}) is larger than the reference {reference_name} \
                     ({rw}x{rh}): the reference comes first (vmafcompare REFERENCE DISTORTED...); \
                     as given, {name} was scored as the distorted file, scaled to {rw}x{rh}"
                ));
            }
        }
        let s = &f.scored.summary;
        if s.unpaired_reference + s.unpaired_distorted > 0 {
            let counts = (s.unpaired_reference, s.unpaired_distorted);
            out.push(unpaired(
                &name.to_string(),
                &reference.frames,
                &f.scored.facts.frames,
                counts,
                pairing,
            ));
        }
    }
    out
}

/// The line that says which offset `--auto-align` found and paired the files with.
pub fn aligned(a: &OffsetMessage) -> String {
    let (n, when) = if a.offset_frames < 0 {
        (-a.offset_frames, "early")
    } else {
        (a.offset_frames, "late")
    };
    format!(
        "auto-align: the distorted file is {n} frames {when} ({}), paired with that offset \
         (luma PSNR {:.2} dB; {:.2} dB without it)\n",
        secs(a.delay.abs()),
        a.psnr,
        a.psnr_zero
    )
}

/// Seconds of `ns`, for messages.
fn secs(ns: i64) -> String {
    format!("{:.3} s", ns as f64 / 1e9)
}

/// Unpaired frames of `r` (the reference) and `d` (the distorted file `name`), `counts`
/// of them by the element's summary: where they were (at the start, at the end, between),
/// the time between the two streams' first frames, and what to try.
fn unpaired(
    name: &str,
    r: &Frames,
    d: &Frames,
    (unpaired_r, unpaired_d): (u64, u64),
    pairing: Pairing,
) -> String {
    let first = |f: &Frames| f.running.iter().copied().min().map(|v| v as i64);
    let last = |f: &Frames| f.running.iter().copied().max().map(|v| v as i64);
    let (Some(r0), Some(d0), Some(r1), Some(d1)) = (first(r), first(d), last(r), last(d)) else {
        return format!(
            "{name}: {unpaired_r} reference and {unpaired_d} distorted frames without a partner"
        );
    };
    let frame = r
        .frame
        .into_iter()
        .chain(d.frame)
        .min()
        .unwrap_or(40_000_000) as i64;
    let half = frame / 2;
    // The distorted frame at running time t is paired with the reference's at t - delay.
    let delay = pairing.delay;
    let before = |f: &Frames, t: i64| f.running.iter().filter(|&&v| (v as i64) < t).count();
    let after = |f: &Frames, t: i64| f.running.iter().filter(|&&v| (v as i64) > t).count();
    let r_start = before(r, d0 - delay - half);
    let d_start = before(d, r0 + delay - half);
    let r_end = after(r, d1 - delay + half);
    let d_end = after(d, r1 + delay + half);
    let mut parts = Vec::new();
    let lead = d0 - delay - r0;
    if r_start + d_start > 0 {
        let (n, who, other) = if r_start > 0 {
            (r_start, "reference", "distorted file's")
        } else {
            (d_start, "distorted", "reference's")
        };
        parts.push(format!(
            "{n} {who} frames without a partner at the start (the {other} first frame comes \
             {} after the {who}'s{})",
            secs(lead.abs()),
            if delay != 0 {
                format!(", with the offset of {}", secs(delay))
            } else {
                String::new()
            }
        ));
    }
    if r_end + d_end > 0 {
        let (n, who, short) = if r_end > 0 {
            (r_end, "reference", "distorted file")
        } else {
            (d_end, "distorted", "reference")
        };
        parts.push(format!(
            "{n} {who} frames without a partner at the end (the {short} ends {} earlier)",
            secs(((r1 - (d1 - delay)).abs()).max(0))
        ));
    }
    let placed = (r_start + r_end + d_start + d_end) as u64;
    let between = (unpaired_r + unpaired_d).saturating_sub(placed);
    if between > 0 {
        parts.push(format!(
            "{between} between (frames whose times do not line up: gaps, dropped or \
             duplicated frames, or another frame rate)"
        ));
    }
    let mut text = format!("{name}: {}", parts.join("; "));
    text.push_str(&advice(
        r_start + d_start > 0,
        r_end + d_end > 0,
        lead,
        pairing,
    ));
    text
}

/// What to try: `start` / `end` say where frames were left without a partner; `lead` is
/// how much later (ns) the distorted stream's first frame comes than the reference's.
fn advice(start: bool, end: bool, lead: i64, pairing: Pairing) -> String {
    let mut out = String::from(". Frames are paired by their timestamps");
    if start {
        if pairing.delay != 0 {
            out.push_str(&format!(
                "; the offset of {} leaves them without a partner, as expected when one file \
                 starts later in the content",
                secs(pairing.delay)
            ));
        } else if pairing.adjustable {
            out.push_str(&format!(
                "; if the two files' first frames show the same picture, their timestamps are \
                 shifted: try --offset {:.3} (or --auto-align to measure the offset, up to 15 \
                 frames either way)",
                lead as f64 / 1e9
            ));
        } else {
            out.push_str(
                "; if the two files' first frames show the same picture, score this file on \
                 its own with --offset or --auto-align (they take one distorted file)",
            );
        }
    }
    if end {
        out.push_str(
            "; one file is shorter: only the pairs that exist are scored (FFmpeg's libvmaf \
             filter repeats the shorter file's last frame instead), so trim the longer file to \
             compare the same span",
        );
        if !start && pairing.delay == 0 && !pairing.auto_align {
            out.push_str(if pairing.adjustable {
                "; if the distorted file was cut at the start instead, its frames are paired \
                 with the wrong ones (low scores): try --auto-align"
            } else {
                "; if a file was cut at the start instead, its frames are paired with the \
                 wrong ones (low scores): score it on its own with --auto-align"
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(first_ms: u64, n: u64) -> Frames {
        let running: Vec<u64> = (0..n).map(|i| (first_ms + i * 40) * 1_000_000).collect();
        Frames {
            size: Some((64, 64)),
            frame: Some(40_000_000),
            pts: running.clone(),
            running,
        }
    }

    #[test]
    fn a_late_start_is_found_and_its_offset_suggested() {
        let pairing = Pairing {
            adjustable: true,
            ..Pairing::default()
        };
        let text = unpaired(
            "late.mkv",
            &frames(0, 48),
            &frames(400, 38),
            (10, 0),
            pairing,
        );
        assert!(
            text.starts_with(
                "late.mkv: 10 reference frames without a partner at the start (the distorted \
                 file's first frame comes 0.400 s after the reference's)"
            ),
            "{text}"
        );
        assert!(text.contains("--offset 0.400"), "{text}");
        assert!(!text.contains("at the end"), "{text}");
    }

    #[test]
    fn a_short_file_is_found_at_the_end() {
        let text = unpaired(
            "short.mp4",
            &frames(0, 48),
            &frames(0, 40),
            (8, 0),
            Pairing::default(),
        );
        assert!(
            text.starts_with(
                "short.mp4: 8 reference frames without a partner at the end (the distorted \
                 file ends 0.320 s earlier)"
            ),
            "{text}"
        );
        assert!(
            text.contains("repeats the shorter file's last frame"),
            "{text}"
        );
    }
}
