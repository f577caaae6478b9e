//! Live monitoring, alignment (`auto-align`): thumbnails of both streams at the start, the
//! offset search and the decision, then pairing with the offset found.

use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_video::prelude::*;

use super::super::live_state::{Held, Input, Stream, FALLBACK_FRAME, MAX_DELAY};
use super::super::util::{lock, CAT};
use super::super::VmafCompare;
use super::{name_rendition, ns};
use crate::engine::align::Thumb;
use crate::vmafcompare::OffsetMessage;

/// Reduces the luma plane of `buffer` to an alignment thumbnail.
pub(super) fn thumb(
    info: &gst_video::VideoInfo,
    depth: u32,
    buffer: &gst::Buffer,
) -> Result<Thumb, String> {
    let frame = gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), info)
        .map_err(|e| format!("cannot map buffer: {e}"))?;
    let finfo = info.format_info();
    let (w, h) = (info.width() as usize, info.height() as usize);
    let stride = frame.plane_stride()[0] as usize;
    let data = frame
        .plane_data(0)
        .map_err(|e| format!("cannot read the luma plane: {e}"))?;
    let pstride = finfo.pixel_stride()[0] as usize;
    let poffset = finfo.poffset()[0] as usize;
    let shift = finfo.shift()[0];
    let wide = finfo.bits() > 8;
    if w == 0 || h == 0 {
        return Err("empty frame".into());
    }
    let needed = (h - 1) * stride + (w - 1) * pstride + poffset + if wide { 2 } else { 1 };
    if data.len() < needed {
        return Err(format!(
            "luma plane holds {} bytes, {needed} needed",
            data.len()
        ));
    }
    // Bits above the format's depth are not part of the sample (as in scoring).
    let mask = if depth >= 16 {
        u16::MAX
    } else {
        (1u16 << depth) - 1
    };
    Thumb::from_fn(w, h, depth, |x, y| {
        let i = y * stride + poffset + x * pstride;
        if wide {
            (u16::from_le_bytes([data[i], data[i + 1]]) >> shift) & mask
        } else {
            u16::from(data[i])
        }
    })
    .ok_or_else(|| "frame too small".to_owned())
}

impl VmafCompare {
    /// Whether the first frames are still being collected for auto-alignment.
    pub(in crate::vmafcompare::imp) fn aligning(&self) -> bool {
        lock(&self.monitor.stream).aligning()
    }

    /// Auto-alignment: takes the next buffer of the reference while a rendition still
    /// searching needs reference frames, and of each such rendition while it needs frames
    /// (every rendition's aligner sees the same reference frames); a rendition whose aligner
    /// is full, or whose stream (or the reference) ended, gets its offset. Pairing starts
    /// once every rendition has one, with the held buffers.
    pub(in crate::vmafcompare::imp) fn align_step(
        &self,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let (reference, videos) = {
            let state = lock(&self.state);
            (
                state.reference.as_ref().map(|v| (v.info.clone(), v.depth)),
                state
                    .renditions
                    .iter()
                    .map(|r| r.video.as_ref().map(|v| (v.info.clone(), v.depth)))
                    .collect::<Vec<_>>(),
            )
        };
        let thumb_of = |input: Input,
                        video: &Option<(gst_video::VideoInfo, u32)>,
                        buffer: &gst::Buffer|
         -> Result<Thumb, gst::FlowError> {
            let Some((info, depth)) = video else {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("buffers arrived before caps")
                );
                return Err(gst::FlowError::NotNegotiated);
            };
            thumb(info, *depth, buffer).map_err(|e| {
                let name = match input {
                    Input::Reference => "reference".to_owned(),
                    Input::Rendition(k) => self.rendition_name(k),
                };
                gst::element_imp_error!(
                    self,
                    gst::StreamError::Decode,
                    ("auto-align: {} frame: {}", name, e)
                );
                gst::FlowError::Error
            })
        };
        // The reference: while a searching rendition has fewer reference frames than needed.
        let reference_needed = lock(&self.monitor.stream)
            .renditions
            .iter()
            .filter_map(|r| r.aligner.as_ref())
            .any(|a| a.held().0 < a.needed());
        let mut reference_ended = self.reference_pad.is_eos();
        if reference_needed {
            match self.reference_pad.pop_buffer() {
                Some(buffer) => {
                    let t = thumb_of(Input::Reference, &reference, &buffer)?;
                    let running_time = Self::running_time(&self.reference_pad, &buffer);
                    let mut stream = lock(&self.monitor.stream);
                    for r in &mut stream.renditions {
                        if let Some(a) = r.aligner.as_mut().filter(|a| a.held().0 < a.needed()) {
                            a.push_reference(t.clone());
                        }
                    }
                    stream.held_reference.push_back(Held {
                        buffer,
                        running_time,
                    });
                    reference_ended = false;
                }
                None => reference_ended = self.reference_pad.is_eos(),
            }
        }
        for (k, video) in videos.iter().enumerate() {
            let (needs, pad) = {
                let stream = lock(&self.monitor.stream);
                let Some(r) = stream.renditions.get(k) else {
                    continue;
                };
                let Some(a) = r.aligner.as_ref() else {
                    continue;
                };
                (a.held().1 < a.needed(), r.pad.clone())
            };
            let Some(pad) = pad else { continue };
            let mut ended = pad.is_eos();
            if needs {
                if let Some(buffer) = pad.pop_buffer() {
                    let t = thumb_of(Input::Rendition(k), video, &buffer)?;
                    let running_time = Self::running_time(&pad, &buffer);
                    let mut stream = lock(&self.monitor.stream);
                    if let Some(r) = stream.renditions.get_mut(k) {
                        if let Some(a) = r.aligner.as_mut() {
                            a.push_distorted(t);
                        }
                        r.held.push_back(Held {
                            buffer,
                            running_time,
                        });
                    }
                    ended = false;
                }
            }
            let full = lock(&self.monitor.stream)
                .renditions
                .get(k)
                .and_then(|r| r.aligner.as_ref())
                .is_none_or(|a| a.is_full());
            if full || ended || reference_ended {
                self.align_decide(k);
            }
        }
        Ok(gst::FlowSuccess::Ok)
    }

    /// Picks rendition `k`'s offset from the collected frames, posts `vmafcompare-offset`
    /// (naming the rendition in a ladder) and sets its delay: the median, over the later half
    /// of the compared pairs, of its running time minus the reference's (offset x frame
    /// duration when timestamps are missing). The later half, because a live source's
    /// timestamps settle during its first frames (a UDP MPEG-TS stream's drift by up to 30 ms
    /// in its first second, then hold): measured on the first frames, the delay paired most
    /// frames one frame off.
    pub(super) fn align_decide(&self, k: usize) {
        let mut stream = lock(&self.monitor.stream);
        let frame = stream.frame.unwrap_or(FALLBACK_FRAME);
        let Stream {
            held_reference,
            renditions,
            ..
        } = &mut *stream;
        let Some(r) = renditions.get_mut(k) else {
            return;
        };
        let Some(aligner) = r.aligner.take() else {
            return;
        };
        let Some(offset) = aligner.decide() else {
            gst::warning!(CAT, imp = self, "auto-align: a stream gave no frame");
            return;
        };
        let shift = offset.frames;
        let mut deltas: Vec<i128> = (0..offset.compared)
            .filter_map(|i| {
                let (ri, di) = if shift >= 0 {
                    (i, i + shift as usize)
                } else {
                    (i + shift.unsigned_abs() as usize, i)
                };
                let rt = held_reference.get(ri)?.running_time?;
                let dt = r.held.get(di)?.running_time?;
                Some(ns(dt) - ns(rt))
            })
            .collect();
        let settled = deltas.len() / 2;
        deltas.drain(..settled);
        deltas.sort_unstable();
        let delay = match deltas.get(deltas.len() / 2) {
            Some(&d) => d.clamp(-i128::from(MAX_DELAY), i128::from(MAX_DELAY)) as i64,
            None => shift.saturating_mul(frame.nseconds() as i64),
        };
        r.delay = delay;
        let names = r.names.clone();
        let latency = self.monitor_latency(&stream);
        drop(stream);
        let msg = OffsetMessage {
            offset_frames: shift,
            delay,
            psnr: offset.psnr,
            psnr_zero: offset.psnr_zero,
            compared: offset.compared as u64,
            search_range: offset.searched as u64,
        };
        gst::info!(
            CAT,
            imp = self,
            "auto-align: {} late by {shift} frames ({delay} ns), PSNR {:.3} dB (unaligned {:.3} dB) over {} pairs",
            names.as_ref().map_or("distorted", |(pad, _)| pad.as_str()),
            offset.psnr,
            offset.psnr_zero,
            offset.compared
        );
        let obj = self.obj();
        // The delay is known now: a late reference makes the rendition wait. Set before the
        // offset message goes out, so that whoever reads it sees the new latency.
        obj.set_latency(latency, Some(latency));
        let mut s = gst::Structure::from(&msg);
        name_rendition(&mut s, names.as_ref());
        let _ = obj.post_message(gst::message::Element::builder(s).src(&*obj).build());
        let _ = obj.post_message(gst::message::Latency::builder().src(&*obj).build());
    }
}
