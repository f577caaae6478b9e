//! Which input frame each picture of NVIDIA's parser belongs to: `vmafnvdec`'s frame
//! bookkeeping, a pure function of the parser's callbacks (no GPU, no GStreamer).
//!
//! Why not the parser's timestamps: `CUVIDPARSERDISPINFO::timestamp` does not follow its
//! picture through reordering. Fed the frames' numbers in decode order, the parser hands them
//! back in the order it received them, not with the pictures they came with, so an x264 MP4
//! with B-frames came out as display-order pictures stamped with decode-order frames (PTS
//! 0.100 0.300 0.300 0.300 0.300 where nvh264dec gives 0.100 0.150 0.200 0.250 0.300; GPU
//! host, driver 580, issue 48). What does identify a picture is its decode surface: the
//! decode callback names the surface a picture is decoded into (`CUVIDPICPARAMS::CurrPicIdx`)
//! and the display callback names the surface it shows (`CUVIDPARSERDISPINFO::picture_index`).
//!
//! The rules (checked on recorded callback sequences of real streams, `tests/nvdec_frames.rs`):
//! - Each access unit is parsed in its own `cuvidParseVideoData` call with
//!   `CUVID_PKT_ENDOFPICTURE`, so the parser decodes the unit's picture within that call: the
//!   first decode of a call belongs to the call's frame.
//! - A decode flagged `second_field` completes the picture already in its surface (a field
//!   pair coded as two access units): its frame has no picture of its own.
//! - A frame whose call decoded no picture (parameter sets or SEI only, or a leading picture
//!   the parser skips because its references precede the first random access point) never
//!   will: it is released at the end of its call, not left for a later picture to take.
//! - A surface decoded again before it was displayed held a picture the parser will never
//!   show: its frame is released.
//! - Display finishes the frame of the shown surface; at end of stream, once the parser has
//!   displayed what it holds, frames still waiting are released.
//!
//! Source of the callback semantics: NVIDIA Video Codec SDK 12/13, `nvcuvid.h`
//! (`CUVID_PKT_ENDOFPICTURE`, `PFNVIDDECODECALLBACK`, `PFNVIDDISPLAYCALLBACK`) and
//! `cuviddec.h` (`CUVIDPICPARAMS::CurrPicIdx`, `second_field`).

use std::collections::VecDeque;
use std::fmt;

/// One call into, or callback from, NVIDIA's parser, as `vmafnvdec` makes or receives it.
/// Frames are `GstVideoCodecFrame::system_frame_number`s; surfaces are decode surface indices
/// (0..32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// `cuvidParseVideoData` starts on the access unit of `frame`.
    Packet { frame: u32 },
    /// The decode callback: a picture goes into `surface`; `second_field`: it is the second
    /// field of the picture already there.
    Decode { surface: i32, second_field: bool },
    /// The display callback: the picture in `surface` is shown (display order).
    Display { surface: i32 },
    /// The parse call of the current access unit returned.
    PacketDone,
    /// End of stream: the parser was given `CUVID_PKT_ENDOFSTREAM` and has displayed all it
    /// held.
    Drained,
    /// Flush: the parser is destroyed; the base class drops its frames itself.
    Reset,
}

/// What the element must do with a frame after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Output the displayed picture as this frame (`finish_frame`): its PTS, duration and
    /// flags are the frame's own.
    Finish(u32),
    /// This frame will never have a picture (`release_frame`: no output, no QoS message).
    Release(u32),
    /// A picture was displayed that no frame claims (a decode before any access unit, which
    /// a well-formed parser never gives): it is not output.
    Orphan { surface: i32 },
}

/// The bookkeeping of one parser: which frame each decode surface holds.
#[derive(Debug, Default, Clone)]
pub struct FrameMatcher {
    /// The access unit being parsed and whether it has had its picture.
    current: Option<(u32, bool)>,
    /// Frame of the picture in each surface, until it is displayed.
    surfaces: Vec<Option<u32>>,
    /// Frames decoded, not yet displayed, in decode order (for the drain).
    waiting: VecDeque<u32>,
}

impl FrameMatcher {
    /// A matcher with no frame in flight.
    pub fn new() -> FrameMatcher {
        FrameMatcher::default()
    }

    /// Applies `event`, appending to `actions` what the element must do (in that order).
    pub fn apply(&mut self, event: Event, actions: &mut Vec<Action>) {
        match event {
            Event::Packet { frame } => {
                if let Some((prev, false)) = self.current.take() {
                    actions.push(Action::Release(prev));
                }
                self.current = Some((frame, false));
            }
            Event::Decode {
                surface,
                second_field,
            } => self.decode(surface, second_field, actions),
            Event::Display { surface } => {
                let frame = self.slot(surface).take();
                match frame {
                    Some(f) => {
                        self.waiting.retain(|&w| w != f);
                        actions.push(Action::Finish(f));
                    }
                    None => actions.push(Action::Orphan { surface }),
                }
            }
            Event::PacketDone => {
                if let Some((frame, false)) = self.current {
                    actions.push(Action::Release(frame));
                }
                self.current = None;
            }
            Event::Drained => {
                if let Some((frame, false)) = self.current.take() {
                    actions.push(Action::Release(frame));
                }
                for f in self.waiting.drain(..) {
                    actions.push(Action::Release(f));
                }
                self.surfaces.clear();
            }
            Event::Reset => *self = FrameMatcher::default(),
        }
    }

    /// The frames decoded and not yet displayed (decode order).
    pub fn waiting(&self) -> impl Iterator<Item = u32> + '_ {
        self.waiting.iter().copied()
    }

    fn decode(&mut self, surface: i32, second_field: bool, actions: &mut Vec<Action>) {
        if second_field {
            // The rest of the picture in `surface`: the access unit that carried it has no
            // picture of its own (released at the end of its call).
            return;
        }
        let frame = match self.current {
            Some((f, false)) => {
                self.current = Some((f, true));
                Some(f)
            }
            _ => None,
        };
        let slot = self.slot(surface);
        let previous = std::mem::replace(slot, frame);
        if let Some(p) = previous {
            // Decoded over without being shown: the parser dropped that picture.
            self.waiting.retain(|&w| w != p);
            actions.push(Action::Release(p));
        }
        if let Some(f) = frame {
            self.waiting.push_back(f);
        }
    }

    fn slot(&mut self, surface: i32) -> &mut Option<u32> {
        let i = surface.clamp(0, 255) as usize;
        if self.surfaces.len() <= i {
            self.surfaces.resize(i + 1, None);
        }
        &mut self.surfaces[i]
    }
}

impl fmt::Display for Event {
    /// The line format of recorded callback sequences (`tests/nvdec_recordings/*.events`):
    /// `packet FRAME`, `decode SURFACE [second]`, `display SURFACE`, `done`, `drained`,
    /// `reset`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Event::Packet { frame } => write!(f, "packet {frame}"),
            Event::Decode {
                surface,
                second_field,
            } => {
                write!(f, "decode {surface}")?;
                if second_field {
                    f.write_str(" second")?;
                }
                Ok(())
            }
            Event::Display { surface } => write!(f, "display {surface}"),
            Event::PacketDone => f.write_str("done"),
            Event::Drained => f.write_str("drained"),
            Event::Reset => f.write_str("reset"),
        }
    }
}

impl std::str::FromStr for Event {
    type Err = String;

    /// Parses one line written by [`Event`]'s `Display`.
    fn from_str(line: &str) -> Result<Event, String> {
        let mut words = line.split_whitespace();
        let word = words.next().unwrap_or_default();
        let mut number = |what: &str| -> Result<i64, String> {
            words
                .next()
                .and_then(|w| w.parse().ok())
                .ok_or_else(|| format!("`{line}`: {what} needs a number"))
        };
        Ok(match word {
            "packet" => Event::Packet {
                frame: number("packet")? as u32,
            },
            "decode" => {
                let surface = number("decode")? as i32;
                Event::Decode {
                    surface,
                    second_field: line.split_whitespace().nth(2) == Some("second"),
                }
            }
            "display" => Event::Display {
                surface: number("display")? as i32,
            },
            "done" => Event::PacketDone,
            "drained" => Event::Drained,
            "reset" => Event::Reset,
            other => return Err(format!("unknown event `{other}`")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(events: &[Event]) -> Vec<Action> {
        let mut m = FrameMatcher::new();
        let mut out = Vec::new();
        for &e in events {
            m.apply(e, &mut out);
        }
        out
    }

    #[test]
    fn a_reordered_picture_takes_its_own_frame() {
        use Event::*;
        // I P B in decode order (frames 0 1 2), shown I B P.
        let events = [
            Packet { frame: 0 },
            Decode {
                surface: 0,
                second_field: false,
            },
            PacketDone,
            Packet { frame: 1 },
            Decode {
                surface: 1,
                second_field: false,
            },
            Display { surface: 0 },
            PacketDone,
            Packet { frame: 2 },
            Decode {
                surface: 2,
                second_field: false,
            },
            Display { surface: 2 },
            PacketDone,
            Display { surface: 1 },
            Drained,
        ];
        assert_eq!(
            run(&events),
            [Action::Finish(0), Action::Finish(2), Action::Finish(1)]
        );
    }

    #[test]
    fn a_unit_without_a_picture_is_released_and_takes_no_other() {
        use Event::*;
        let events = [
            Packet { frame: 0 },
            PacketDone,
            Packet { frame: 1 },
            Decode {
                surface: 3,
                second_field: false,
            },
            PacketDone,
            Drained,
        ];
        assert_eq!(run(&events), [Action::Release(0), Action::Release(1)]);
    }

    #[test]
    fn a_second_field_joins_its_first() {
        use Event::*;
        let events = [
            Packet { frame: 0 },
            Decode {
                surface: 0,
                second_field: false,
            },
            PacketDone,
            Packet { frame: 1 },
            Decode {
                surface: 0,
                second_field: true,
            },
            PacketDone,
            Display { surface: 0 },
        ];
        assert_eq!(run(&events), [Action::Release(1), Action::Finish(0)]);
    }

    #[test]
    fn a_surface_decoded_over_releases_its_hidden_picture() {
        use Event::*;
        let events = [
            Packet { frame: 0 },
            Decode {
                surface: 0,
                second_field: false,
            },
            PacketDone,
            Packet { frame: 1 },
            Decode {
                surface: 0,
                second_field: false,
            },
            Display { surface: 0 },
            PacketDone,
        ];
        assert_eq!(run(&events), [Action::Release(0), Action::Finish(1)]);
    }

    #[test]
    fn events_read_back_as_written() {
        for e in [
            Event::Packet { frame: 7 },
            Event::Decode {
                surface: 3,
                second_field: true,
            },
            Event::Decode {
                surface: 4,
                second_field: false,
            },
            Event::Display { surface: 5 },
            Event::PacketDone,
            Event::Drained,
            Event::Reset,
        ] {
            assert_eq!(e.to_string().parse::<Event>(), Ok(e));
        }
    }
}
