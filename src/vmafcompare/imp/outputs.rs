//! Outputs: each scored frame's buffer with its meta, the per-frame and summary messages, and
//! the libvmaf-layout log (`results-location`).

use super::*;

/// The summary's pooled statistics of every metric of `pool`, log order.
pub(super) fn pooled_metrics(pool: &crate::engine::Pool) -> Vec<(String, PooledMetric)> {
    pool.pooled()
        .into_iter()
        .map(|(n, p)| {
            (
                n.to_owned(),
                PooledMetric {
                    min: p.min,
                    max: p.max,
                    mean: p.mean,
                    harmonic_mean: p.harmonic_mean,
                    percentile_1: p.percentile_1,
                    percentile_5: p.percentile_5,
                    percentile_10: p.percentile_10,
                },
            )
        })
        .collect()
}

impl VmafCompare {
    /// The `stats` property: the summary's counters so far (see its blurb). Takes each lock
    /// alone (the scoring queue's, the state, the order log), so it never waits on one while
    /// holding another.
    pub(super) fn stats(&self) -> gst::Structure {
        let (skipped, late) = self.monitor_counts();
        let (frames, unpaired_reference, unpaired_distorted) = {
            let state = lock(&self.state);
            match state.ladder.as_ref() {
                Some(l) => l.counts(),
                None => (
                    state.scorer.as_ref().map_or(0, |s| s.pool().count()),
                    state.unpaired_reference,
                    state.unpaired_distorted,
                ),
            }
        };
        let (order_reference, order_distorted) = {
            let o = lock(&self.order);
            (o.count("reference"), o.total() - o.count("reference"))
        };
        gst::Structure::builder("vmafcompare-stats")
            .field("frames", frames)
            .field("skipped", skipped)
            .field("late", late)
            .field("unpaired-reference", unpaired_reference)
            .field("unpaired-distorted", unpaired_distorted)
            .field("out-of-order-reference", order_reference)
            .field("out-of-order-distorted", order_distorted)
            .build()
    }

    /// Posts a scoring failure as an element error.
    pub(super) fn engine_failed(&self, e: EngineError) -> gst::FlowError {
        gst::element_imp_error!(self, gst::StreamError::Failed, ("Scoring failed: {}", e));
        gst::FlowError::Error
    }

    /// Attaches meta, posts the frame message (and an alert when the window crosses the
    /// threshold), logs, and pushes one completed frame; in a live pipeline the buffer goes
    /// back to the scoring queue, which pushes it in order.
    pub(super) fn emit(
        &self,
        scored: Scored<Tag>,
        post: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let Scored { tag, scores, .. } = scored;
        let mut buffer = tag.buffer;
        let live = self.live_queue();
        let mut attached = None;
        if let Some(scores) = scores {
            let mut msg =
                Self::frame_message(&scores, (buffer.pts(), tag.running_time, buffer.duration()));
            let alert = self.monitor_frame(&mut msg);
            let structure = msg.to_structure();
            if live.is_none() {
                if let Err(e) = monitor::attach_meta(&mut buffer, &structure) {
                    gst::warning!(CAT, imp = self, "cannot attach scores meta: {e}");
                }
            }
            self.write_log(&scores)?;
            let obj = self.obj();
            if post {
                let m = gst::message::Element::builder(structure.clone())
                    .src(&*obj)
                    .build();
                let _ = obj.post_message(m);
            }
            if let Some(alert) = alert {
                let m = gst::message::Element::builder(gst::Structure::from(&alert))
                    .src(&*obj)
                    .build();
                let _ = obj.post_message(m);
            }
            attached = Some(structure);
        }
        if let Some(queue) = live {
            queue.complete(buffer, attached);
            return Ok(gst::FlowSuccess::Ok);
        }
        self.finish_output(buffer)
    }

    /// Pushes one output buffer: a GAP without a picture (the aggregator's form of a GAP
    /// event) leaves as a GAP event, in order: downstream elements cannot map an empty video
    /// buffer.
    pub(super) fn finish_output(
        &self,
        buffer: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        if is_gap(&buffer) && buffer.size() == 0 {
            if let Some(pts) = buffer.pts() {
                let gap = gst::event::Gap::builder(pts)
                    .duration(buffer.duration())
                    .build();
                let _ = self.obj().src_pad().push_event(gap);
            }
            return Ok(gst::FlowSuccess::Ok);
        }
        self.obj().finish_buffer(buffer)
    }

    /// The frame message of `scores` for a distorted buffer at `(pts, running time,
    /// duration)`.
    pub(super) fn frame_message(
        scores: &FrameScores,
        (pts, running_time, duration): (
            Option<gst::ClockTime>,
            Option<gst::ClockTime>,
            Option<gst::ClockTime>,
        ),
    ) -> FrameMessage {
        FrameMessage {
            index: scores.index,
            pts,
            running_time,
            duration,
            vmaf: scores.vmaf(),
            metrics: scores.iter().map(|(n, v)| (n.to_owned(), v)).collect(),
            skipped: 0,
            window: None,
            pad: None,
            label: None,
        }
    }

    pub(super) fn write_log(&self, scores: &FrameScores) -> Result<(), gst::FlowError> {
        let mut state = lock(&self.state);
        let (w, h) = state.geometry.map(|(w, h, _)| (w, h)).unwrap_or((0, 0));
        if let Some(log) = state.log.as_mut() {
            if let Err(e) = log.write_frame(scores, w, h) {
                state.log = None;
                drop(state);
                gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
                return Err(gst::FlowError::Error);
            }
        }
        Ok(())
    }

    /// Emits a pair's completed frames, as the scorer returns them (its one rendition's slot
    /// beside each).
    pub(super) fn emit_all(
        &self,
        items: Vec<(usize, Scored<Tag>)>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let post = lock(&self.settings).frame_message;
        let mut ret = Ok(gst::FlowSuccess::Ok);
        for (_, item) in items {
            ret = self.emit(item, post);
            if ret.is_err() {
                break;
            }
        }
        ret
    }

    pub(super) fn post_summary(&self) {
        let settings = lock(&self.settings).clone();
        let mut state = lock(&self.state);
        let (frames, metrics, backend) = match state.scorer.as_ref() {
            Some(s) => (
                s.pool().count(),
                pooled_metrics(s.pool()),
                s.backend_name().to_owned(),
            ),
            None => (0, Vec::new(), "cpu".to_owned()),
        };
        let (skipped, late) = self.monitor_counts();
        let out_of_order = {
            let o = lock(&self.order);
            (o.count("reference"), o.count("distorted"))
        };
        let summary = SummaryMessage {
            frames,
            unpaired_reference: state.unpaired_reference,
            unpaired_distorted: state.unpaired_distorted,
            out_of_order_reference: out_of_order.0,
            out_of_order_distorted: out_of_order.1,
            backend,
            model: settings.model.clone(),
            reference_input: joined(state.paths[0].iter().map(|p| p.name())),
            distorted_input: joined(state.paths[1].iter().map(|p| p.name())),
            metrics,
            skipped,
            late,
            scored_width: state.geometry.map_or(0, |(w, _, _)| w),
            scored_height: state.geometry.map_or(0, |(_, h, _)| h),
            reference_scaling: joined(&state.scaled[0]),
            distorted_scaling: joined(&state.scaled[1]),
            reference_range: state.ranges.fields().0,
            distorted_range: state.ranges.fields().1,
            range_conversion: state.ranges.fields().2,
            pad: None,
            label: None,
        };
        let log_result = self.close_log(&mut state);
        drop(state);
        if let Err(e) = log_result {
            gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
        }
        let unpaired = summary.unpaired_reference + summary.unpaired_distorted;
        if unpaired > 0 {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Failed,
                (
                    "{} reference and {} distorted frames had no partner and were not scored",
                    summary.unpaired_reference,
                    summary.unpaired_distorted
                ),
                ["One input ended early or their timestamps do not line up; {} pairs were scored.", frames]
            );
        }
        if let Some(vmaf) = summary.get("vmaf") {
            gst::info!(
                CAT,
                imp = self,
                "{} frames, VMAF mean {:.6} harmonic {:.6}",
                frames,
                vmaf.mean,
                vmaf.harmonic_mean
            );
        }
        let obj = self.obj();
        let _ = obj.post_message(
            gst::message::Element::builder(summary.to_structure())
                .src(&*obj)
                .build(),
        );
    }

    /// Creates (truncating) the `results-location` log, if one is set.
    pub(super) fn open_log(&self) -> Result<Option<LogWriter>, gst::ErrorMessage> {
        self.open_log_named(None)
    }

    /// Creates (truncating) the `results-location` log, if one is set; with `rendition`
    /// (ladder mode) that rendition's log (see `rendition_location`).
    pub(super) fn open_log_named(
        &self,
        rendition: Option<&str>,
    ) -> Result<Option<LogWriter>, gst::ErrorMessage> {
        let settings = lock(&self.settings).clone();
        let Some(location) = settings.results_location.as_deref() else {
            return Ok(None);
        };
        let named;
        let location = match rendition {
            Some(name) => {
                named = ladder::rendition_location(location, name);
                named.as_str()
            }
            None => location,
        };
        let format = match settings.results_format {
            ResultsFormat::Json => LogFormat::Json,
            ResultsFormat::Xml => LogFormat::Xml,
            ResultsFormat::Csv => LogFormat::Csv,
        };
        LogWriter::create(&PathBuf::from(location), format)
            .map(Some)
            .map_err(|e| {
                gst::error_msg!(
                    gst::ResourceError::OpenWrite,
                    ("{}", e),
                    ["Check that the directory exists and is writable (results-location)."]
                )
            })
    }

    pub(super) fn close_log(&self, state: &mut State) -> Result<(), crate::engine::log::LogError> {
        let Some(log) = state.log.take() else {
            return Ok(());
        };
        let (w, h) = state.geometry.map(|(w, h, _)| (w, h)).unwrap_or((0, 0));
        let frames = state.scorer.as_ref().map_or(0, |s| s.frames_pushed());
        let fps = state
            .started
            .map(|t| frames as f64 / t.elapsed().as_secs_f64().max(1e-9))
            .unwrap_or(0.0);
        match state.scorer.as_ref() {
            Some(s) => log.finish(s.pool(), fps, w, h),
            None => {
                let empty = crate::engine::Pool::new(Vec::<String>::new().into());
                log.finish(&empty, fps, w, h)
            }
        }
    }
}
