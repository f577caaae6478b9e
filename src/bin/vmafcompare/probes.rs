//! What the command learns of each file while its pipeline plays, without a second pass over
//! it: the video stream's own packets as the demuxer hands them to the decoder (their bytes
//! and timestamps give the video's bitrate, audio and container left out), the demuxer's
//! bitrate tags, and the decoded frames as they reach the element (each stream's size, first
//! frame and running times: seekable times of worst frames, where unpaired frames were).

use std::sync::{Arc, Mutex};

use gst::prelude::*;

/// The video packets a demuxer sent towards the decoder.
#[derive(Default, Debug, Clone)]
pub struct Packets {
    /// The demuxer pad counted (its first video pad).
    pad: Option<String>,
    /// Bytes of all packets.
    pub bytes: u64,
    /// Packets counted.
    pub count: u64,
    /// Smallest and largest PTS, in ns.
    pts: Option<(u64, u64)>,
    /// Duration of the packet of the largest PTS, in ns, when the demuxer gave it.
    last_duration: Option<u64>,
    /// One frame's duration from the pad's caps (`framerate`), in ns.
    caps_frame: Option<u64>,
}

impl Packets {
    /// Counts `buf`.
    fn add(&mut self, buf: &gst::BufferRef) {
        self.bytes += buf.size() as u64;
        self.count += 1;
        if let Some(pts) = buf.pts().map(gst::ClockTime::nseconds) {
            let (lo, hi) = self.pts.unwrap_or((pts, pts));
            if pts >= hi {
                self.last_duration = buf.duration().map(gst::ClockTime::nseconds);
            }
            self.pts = Some((lo.min(pts), hi.max(pts)));
        }
    }

    /// The span the packets cover: from the first PTS to the last plus one frame (the last
    /// packet's duration, else the caps' frame rate, else the mean spacing); `None` with
    /// fewer than two timestamps and no frame duration.
    pub fn duration(&self) -> Option<gst::ClockTime> {
        let (lo, hi) = self.pts?;
        let frame = self
            .last_duration
            .filter(|&d| d > 0)
            .or(self.caps_frame)
            .or_else(|| (self.count > 1).then(|| (hi - lo) / (self.count - 1)))?;
        Some(gst::ClockTime::from_nseconds(hi - lo + frame)).filter(|d| !d.is_zero())
    }
}

/// Bitrate tags a demuxer sent with a file's video stream, in bits per second.
#[derive(Default, Debug, Clone)]
pub struct StreamTags {
    /// `bitrate` of the video stream's own tags.
    pub bitrate: Option<u32>,
    /// `nominal-bitrate`, likewise.
    pub nominal: Option<u32>,
}

/// The decoded frames of one file at the element's sink pad.
#[derive(Default, Debug, Clone)]
pub struct Frames {
    /// Width and height of the decoded video (its first caps).
    pub size: Option<(u32, u32)>,
    /// One frame's duration from the caps' frame rate, in ns.
    pub frame: Option<u64>,
    /// The frames' PTS, in ns, in arrival (presentation) order.
    pub pts: Vec<u64>,
    /// The frames' running times, in ns (how the element pairs them).
    pub running: Vec<u64>,
}

impl Frames {
    /// The first frame's PTS.
    pub fn first_pts(&self) -> Option<u64> {
        self.pts.iter().copied().min()
    }

    /// The file's frame number (from 0, presentation order) of the frame at `pts`.
    pub fn number_of(&self, pts: u64) -> Option<usize> {
        let mut sorted = self.pts.clone();
        sorted.sort_unstable();
        sorted.binary_search(&pts).ok()
    }
}

/// Everything measured of one file, shared with the streaming threads that measure it.
#[derive(Default, Debug)]
pub struct Facts {
    /// The video packets before the decoder.
    pub packets: Packets,
    /// The demuxer's bitrate tags of the video stream.
    pub tags: StreamTags,
    /// The decoded frames at the element.
    pub frames: Frames,
    /// The decoded caps, described (for errors).
    pub caps: Option<String>,
}

/// [`Facts`] behind a lock.
pub type Shared = Arc<Mutex<Facts>>;

/// A copy of what `shared` holds now.
pub fn snapshot(shared: &Shared) -> Facts {
    shared.lock().map_or_else(
        |_| Facts::default(),
        |f| Facts {
            packets: f.packets.clone(),
            tags: f.tags.clone(),
            frames: f.frames.clone(),
            caps: f.caps.clone(),
        },
    )
}

/// One frame's duration in ns from `caps`' `framerate`, when it is a positive rate.
fn frame_of(caps: &gst::CapsRef) -> Option<u64> {
    let rate = caps.structure(0)?.get::<gst::Fraction>("framerate").ok()?;
    let (n, d) = (
        u64::try_from(rate.numer()).ok()?,
        u64::try_from(rate.denom()).ok()?,
    );
    (n > 0 && d > 0).then(|| 1_000_000_000 * d / n)
}

/// Whether `pad` carries video now.
fn is_video(pad: &gst::Pad) -> bool {
    pad.current_caps()
        .and_then(|c| c.structure(0).map(|s| s.name().starts_with("video/")))
        .unwrap_or(false)
}

/// When `element` (an element decodebin made) is a demuxer, counts the packets of its first
/// video pad and records the bitrate tags of its video pads.
pub fn watch_demuxer(element: &gst::Element, facts: &Shared) {
    let is_demuxer = element
        .factory()
        .is_some_and(|f| f.klass().contains("Demux"));
    if !is_demuxer {
        return;
    }
    let facts = facts.clone();
    element.connect_pad_added(move |_, pad| {
        if pad.direction() != gst::PadDirection::Src {
            return;
        }
        let facts = facts.clone();
        let name = pad.name().to_string();
        let types = gst::PadProbeType::BUFFER
            | gst::PadProbeType::BUFFER_LIST
            | gst::PadProbeType::EVENT_DOWNSTREAM;
        pad.add_probe(types, move |pad, info| {
            let Ok(mut f) = facts.lock() else {
                return gst::PadProbeReturn::Ok;
            };
            match &info.data {
                Some(gst::PadProbeData::Buffer(b)) => count(&mut f.packets, pad, &name, |p| {
                    p.add(b);
                }),
                Some(gst::PadProbeData::BufferList(l)) => count(&mut f.packets, pad, &name, |p| {
                    l.iter().for_each(|b| p.add(b))
                }),
                Some(gst::PadProbeData::Event(e)) => {
                    if let gst::EventView::Tag(t) = e.view() {
                        let list = t.tag();
                        if list.scope() == gst::TagScope::Stream && is_video(pad) {
                            if let Some(v) = list.get::<gst::tags::Bitrate>() {
                                f.tags.bitrate = Some(v.get()).filter(|&b| b > 0);
                            }
                            if let Some(v) = list.get::<gst::tags::NominalBitrate>() {
                                f.tags.nominal = Some(v.get()).filter(|&b| b > 0);
                            }
                        }
                    }
                }
                _ => {}
            }
            gst::PadProbeReturn::Ok
        });
    });
}

/// Runs `add` on `packets` when `pad` (named `name`) is the video pad counted: the first
/// video pad that sent a buffer.
fn count(packets: &mut Packets, pad: &gst::Pad, name: &str, add: impl FnOnce(&mut Packets)) {
    match packets.pad.as_deref() {
        Some(p) if p == name => add(packets),
        Some(_) => {}
        None if is_video(pad) => {
            packets.pad = Some(name.to_owned());
            packets.caps_frame = pad.current_caps().and_then(|c| frame_of(&c));
            add(packets);
        }
        None => {}
    }
}

/// Records the decoded frames that reach the element's sink `pad`: their size (first caps),
/// PTS and running times.
pub fn watch_frames(pad: &gst::Pad, facts: &Shared) {
    let facts = facts.clone();
    pad.add_probe(gst::PadProbeType::BUFFER, move |pad, info| {
        let Some(gst::PadProbeData::Buffer(b)) = &info.data else {
            return gst::PadProbeReturn::Ok;
        };
        let Some(pts) = b.pts() else {
            return gst::PadProbeReturn::Ok;
        };
        let Ok(mut f) = facts.lock() else {
            return gst::PadProbeReturn::Ok;
        };
        if f.frames.size.is_none() {
            if let Some(caps) = pad.current_caps() {
                let s = caps.structure(0);
                let dim = |n: &str| s.and_then(|s| s.get::<i32>(n).ok());
                if let (Some(w), Some(h)) = (dim("width"), dim("height")) {
                    f.frames.size = Some((w.max(0) as u32, h.max(0) as u32));
                }
                f.frames.frame = frame_of(&caps);
            }
        }
        let running = pad
            .sticky_event::<gst::event::Segment>(0)
            .and_then(|e| {
                e.segment()
                    .downcast_ref::<gst::ClockTime>()
                    .and_then(|s| s.to_running_time(pts))
            })
            .unwrap_or(pts);
        f.frames.pts.push(pts.nseconds());
        f.frames.running.push(running.nseconds());
        gst::PadProbeReturn::Ok
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_is_first_to_last_plus_one_frame() {
        let mut p = Packets::default();
        assert_eq!(p.duration(), None);
        p.pts = Some((1_000, 3_000));
        p.count = 3;
        assert_eq!(p.duration(), Some(gst::ClockTime::from_nseconds(3_000)));
        p.caps_frame = Some(500);
        assert_eq!(p.duration(), Some(gst::ClockTime::from_nseconds(2_500)));
        p.last_duration = Some(400);
        assert_eq!(p.duration(), Some(gst::ClockTime::from_nseconds(2_400)));
    }

    #[test]
    fn frame_numbers_are_in_presentation_order() {
        let f = Frames {
            pts: vec![40, 0, 80, 120],
            ..Frames::default()
        };
        assert_eq!(f.first_pts(), Some(0));
        assert_eq!(f.number_of(80), Some(2));
        assert_eq!(f.number_of(81), None);
    }
}
