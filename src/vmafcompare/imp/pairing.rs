//! Pairing by running time ([`Pairing`]): whether a rendition's frame is the partner of the
//! reference frame, or which of the two came early and has none.

use gst::ClockTime;

/// How a rendition's frame stands to the reference frame it is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Pairing {
    /// Within half a frame of each other: they are scored as a pair.
    Partners,
    /// The rendition's frame is earlier by more than half a frame: it has no partner (it is
    /// counted unpaired and the next one is tried).
    RenditionEarly,
    /// The reference frame is earlier by more than half a frame: it has no partner in this
    /// rendition (the rendition's frame waits for a later reference frame).
    ReferenceEarly,
}

/// Half the shorter of two frame durations, or half the one known: frames further apart than
/// this do not pair (with differing frame rates each frame of the slower stream pairs with
/// the nearest frame of the faster one). `None` when neither duration is known (every frame
/// then pairs with the next).
pub(super) fn half_frame(a: Option<ClockTime>, b: Option<ClockTime>) -> Option<ClockTime> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b) / 2),
        (a, b) => a.or(b).map(|d| d / 2),
    }
}

/// Pairs the reference frame at running time `reference` with a rendition frame at
/// `rendition`, the rendition being `delay` ns behind the reference (`distorted-delay` or
/// what auto-align found; negative: ahead): the rendition's time shifted back by the delay
/// is compared with the reference's, and they are partners when no more than `half` apart
/// (inclusive).
pub(super) fn pairing(
    reference: ClockTime,
    rendition: ClockTime,
    delay: i64,
    half: ClockTime,
) -> Pairing {
    let (r, half) = (
        i128::from(reference.nseconds()),
        i128::from(half.nseconds()),
    );
    let d = i128::from(rendition.nseconds()) - i128::from(delay);
    if r + half < d {
        Pairing::ReferenceEarly
    } else if d + half < r {
        Pairing::RenditionEarly
    } else {
        Pairing::Partners
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn ms(v: u64) -> ClockTime {
        ClockTime::from_nseconds(v * MS)
    }

    #[test]
    fn half_frame_is_half_the_shorter_duration() {
        assert_eq!(half_frame(Some(ms(40)), Some(ms(20))), Some(ms(10)));
        assert_eq!(half_frame(None, Some(ms(40))), Some(ms(20)));
        assert_eq!(half_frame(Some(ms(40)), None), Some(ms(20)));
        assert_eq!(half_frame(None, None), None);
    }

    #[test]
    fn frames_within_half_a_frame_pair_inclusive() {
        let half = ms(20);
        assert_eq!(pairing(ms(1000), ms(1000), 0, half), Pairing::Partners);
        assert_eq!(pairing(ms(1000), ms(1020), 0, half), Pairing::Partners);
        assert_eq!(pairing(ms(1000), ms(980), 0, half), Pairing::Partners);
        assert_eq!(
            pairing(ms(1000), ClockTime::from_nseconds(1020 * MS + 1), 0, half),
            Pairing::ReferenceEarly
        );
        assert_eq!(
            pairing(ms(1000), ClockTime::from_nseconds(980 * MS - 1), 0, half),
            Pairing::RenditionEarly
        );
    }

    #[test]
    fn the_delay_shifts_the_rendition_back() {
        let half = ms(20);
        // A rendition 200 ms behind: its frame at 1200 ms is the partner of 1000 ms.
        assert_eq!(
            pairing(ms(1000), ms(1200), 200 * MS as i64, half),
            Pairing::Partners
        );
        assert_eq!(
            pairing(ms(1000), ms(1000), 200 * MS as i64, half),
            Pairing::RenditionEarly
        );
        // Ahead (negative delay) near running time 0: no underflow.
        assert_eq!(
            pairing(ms(100), ms(0), -(100 * MS as i64), half),
            Pairing::Partners
        );
        assert_eq!(
            pairing(ms(0), ms(0), -(100 * MS as i64), half),
            Pairing::ReferenceEarly
        );
    }
}
