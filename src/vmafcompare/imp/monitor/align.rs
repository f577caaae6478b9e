//! Live monitoring, alignment (`auto-align`): thumbnails of both streams at the start, the
//! offset search and the decision, then pairing with the offset found.

use super::*;

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

/// Frames auto-alignment compares: `duration` of frames of `frame` each, 1..=MAX_ALIGN_FRAMES.
pub(super) fn align_frames(duration: u64, frame: gst::ClockTime) -> usize {
    (duration / frame.nseconds().max(1)).clamp(1, MAX_ALIGN_FRAMES) as usize
}

impl VmafCompare {
    /// Whether the first frames are still being collected for auto-alignment.
    pub(in crate::vmafcompare::imp) fn aligning(&self) -> bool {
        lock(&self.monitor.stream).aligner.is_some()
    }

    /// Auto-alignment: takes the next buffer of each stream that still needs frames; once both
    /// have enough (or one ended), picks the offset, posts it and lets pairing start with the
    /// held buffers.
    pub(in crate::vmafcompare::imp) fn align_step(
        &self,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let videos = {
            let state = lock(&self.state);
            (
                state.reference.as_ref().map(|v| (v.info.clone(), v.depth)),
                state.distorted.as_ref().map(|v| (v.info.clone(), v.depth)),
            )
        };
        let mut ended = false;
        for (side, pad, video) in [
            (0usize, &self.reference_pad, &videos.0),
            (1, &self.distorted_pad, &videos.1),
        ] {
            let needs = {
                let stream = lock(&self.monitor.stream);
                let Some(a) = stream.aligner.as_ref() else {
                    return Ok(gst::FlowSuccess::Ok);
                };
                let held = if side == 0 { a.held().0 } else { a.held().1 };
                held < a.needed()
            };
            if !needs {
                continue;
            }
            let Some(buffer) = pad.pop_buffer() else {
                ended |= pad.is_eos();
                continue;
            };
            let Some((info, depth)) = video else {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("buffers arrived before caps")
                );
                return Err(gst::FlowError::NotNegotiated);
            };
            let t = match thumb(info, *depth, &buffer) {
                Ok(t) => t,
                Err(e) => {
                    gst::element_imp_error!(
                        self,
                        gst::StreamError::Decode,
                        ("auto-align: {} frame: {}", pad.name(), e)
                    );
                    return Err(gst::FlowError::Error);
                }
            };
            let running_time = Self::running_time(pad, &buffer);
            let mut stream = lock(&self.monitor.stream);
            if let Some(a) = stream.aligner.as_mut() {
                if side == 0 {
                    a.push_reference(t);
                } else {
                    a.push_distorted(t);
                }
            }
            stream.held[side].push_back(Held {
                buffer,
                running_time,
            });
        }
        let full = lock(&self.monitor.stream)
            .aligner
            .as_ref()
            .is_none_or(|a| a.is_full());
        if full || ended {
            self.align_decide();
        }
        Ok(gst::FlowSuccess::Ok)
    }

    /// Picks the offset from the collected frames, posts `vmafcompare-offset` and sets the
    /// delay: the median, over the later half of the compared pairs, of distorted minus
    /// reference running time (offset x frame duration when timestamps are missing). The
    /// later half, because a live source's timestamps settle during its first frames (a UDP
    /// MPEG-TS stream's drift by up to 30 ms in its first second, then hold): measured on the
    /// first frames, the delay paired most frames one frame off.
    pub(super) fn align_decide(&self) {
        let mut stream = lock(&self.monitor.stream);
        let Some(aligner) = stream.aligner.take() else {
            return;
        };
        let Some(offset) = aligner.decide() else {
            gst::warning!(CAT, imp = self, "auto-align: a stream gave no frame");
            return;
        };
        let k = offset.frames;
        let mut deltas: Vec<i128> = (0..offset.compared)
            .filter_map(|i| {
                let (r, d) = if k >= 0 {
                    (i, i + k as usize)
                } else {
                    (i + k.unsigned_abs() as usize, i)
                };
                let rt = stream.held[0].get(r)?.running_time?;
                let dt = stream.held[1].get(d)?.running_time?;
                Some(ns(dt) - ns(rt))
            })
            .collect();
        let settled = deltas.len() / 2;
        deltas.drain(..settled);
        deltas.sort_unstable();
        let frame = stream.frame.unwrap_or(FALLBACK_FRAME);
        let delay = match deltas.get(deltas.len() / 2) {
            Some(&d) => d.clamp(-i128::from(MAX_DELAY), i128::from(MAX_DELAY)) as i64,
            None => k.saturating_mul(frame.nseconds() as i64),
        };
        stream.delay = delay;
        let latency = self.monitor_latency(&stream);
        drop(stream);
        let msg = OffsetMessage {
            offset_frames: k,
            delay,
            psnr: offset.psnr,
            psnr_zero: offset.psnr_zero,
            compared: offset.compared as u64,
            search_range: offset.searched as u64,
        };
        gst::info!(
            CAT,
            imp = self,
            "auto-align: distorted late by {k} frames ({delay} ns), PSNR {:.3} dB (unaligned {:.3} dB) over {} pairs",
            offset.psnr,
            offset.psnr_zero,
            offset.compared
        );
        let obj = self.obj();
        // The delay is known now: a late reference makes the distorted stream wait. Set
        // before the offset message goes out, so that whoever reads it sees the new latency.
        obj.set_latency(latency, Some(latency));
        let _ = obj.post_message(
            gst::message::Element::builder(gst::Structure::from(&msg))
                .src(&*obj)
                .build(),
        );
        let _ = obj.post_message(gst::message::Latency::builder().src(&*obj).build());
    }
}
