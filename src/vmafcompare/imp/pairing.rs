//! Pairing: the reference and distorted buffers that `aggregate()` takes by running time,
//! mapped and handed to the scorer together, unpaired buffers passed on in order, and the end
//! of the stream.

use super::*;

impl VmafCompare {
    pub(super) fn running_time(
        pad: &gst_base::AggregatorPad,
        buffer: &gst::Buffer,
    ) -> Option<gst::ClockTime> {
        let segment = pad.segment();
        let segment = segment.downcast_ref::<gst::ClockTime>()?;
        segment.to_running_time(buffer.pts()?)
    }

    /// Maps both planes (see [`Self::map_luma`]), records the paths taken and pushes the
    /// pair into the scorer. `gpu` is used only when the scorer's backend reads device memory.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn push_pair(
        &self,
        state: &mut State,
        (rv, reference): (&PadVideo, &gst::Buffer),
        (dv, distorted): (&PadVideo, &gst::Buffer),
        bpc: u32,
        gpu: Option<&GpuDevice>,
        tag: Tag,
    ) -> Result<Vec<(usize, Scored<Tag>)>, PairError> {
        let gpu = gpu.filter(|_| state.scorer.as_ref().is_some_and(|s| s.reads_device()));
        let defers = state.scorer.as_ref().is_some_and(|s| s.defers_host_rows());
        let (mut rm, rp) = self
            .map_luma(rv, reference, bpc, gpu, defers, state)
            .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let (mut dm, dp) = self
            .map_luma(dv, distorted, bpc, gpu, defers, state)
            .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        for (i, (pad, path)) in [("reference", rp), ("distorted", dp)]
            .into_iter()
            .enumerate()
        {
            if state.paths[i].insert(path) {
                gst::debug!(
                    CAT,
                    imp = self,
                    "{pad} frames reach the backend via '{}'",
                    path.name()
                );
                let mapped = if i == 0 { &rm } else { &dm };
                if let (Some(dev), MappedLuma::Device(Some(d), _)) = (gpu, mapped) {
                    if path == InputPath::CudaPeerCopy {
                        self.report_peer_path(pad, dev, d.ptr, d.context);
                    }
                }
            }
        }
        let wants_chroma = state
            .scorer
            .as_ref()
            .is_some_and(|s| s.plan().layout().reads_chroma());
        let mut chroma = std::mem::take(&mut state.chroma);
        let result = self.push_mapped(
            state,
            (&mut rm, &mut dm),
            wants_chroma,
            bpc,
            &mut chroma,
            tag,
        );
        state.chroma = chroma;
        result
    }

    /// Pushes mapped planes (and, when `wants_chroma`, their chroma packed into `chroma`).
    pub(super) fn push_mapped(
        &self,
        state: &mut State,
        (rm, dm): (&mut MappedLuma<'_>, &mut MappedLuma<'_>),
        wants_chroma: bool,
        bpc: u32,
        chroma: &mut [[Vec<u16>; 2]; 2],
        tag: Tag,
    ) -> Result<Vec<(usize, Scored<Tag>)>, PairError> {
        let components = state.scorer.as_ref().is_some_and(|s| s.reads_components());
        if components {
            return self.push_components(state, (rm, dm), wants_chroma, bpc, tag);
        }
        let mut sizes = [None, None];
        if wants_chroma {
            let [rc, dc] = chroma;
            sizes[0] = rm
                .pack_chroma(bpc, rc)
                .map_err(|e| PairError::Map(format!("reference: {e}")))?;
            sizes[1] = dm
                .pack_chroma(bpc, dc)
                .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        }
        // Each stream's chroma at its own size: a scaled stream's is brought to the scoring
        // size by the backend, which refuses any other size.
        let pair = match sizes {
            [Some(rs), Some(ds)] => {
                fn plane(
                    v: &[u16],
                    (w, h): (usize, usize),
                    bpc: u32,
                ) -> Result<LumaPlane<'_>, PairError> {
                    LumaPlane::packed(v, w, h, bpc).ok_or_else(|| {
                        PairError::Map("internal: chroma plane smaller than its size".into())
                    })
                }
                Some(ChromaPair {
                    reference: [
                        plane(&chroma[0][0], rs, bpc)?,
                        plane(&chroma[0][1], rs, bpc)?,
                    ],
                    distorted: [
                        plane(&chroma[1][0], ds, bpc)?,
                        plane(&chroma[1][1], ds, bpc)?,
                    ],
                })
            }
            [None, None] if !wants_chroma => None,
            [rs, ds] => {
                let show = |s: Option<(usize, usize)>| {
                    s.map_or("none (no chroma)".to_owned(), |(w, h)| format!("{w}x{h}"))
                };
                return Err(PairError::Map(format!(
                    "the features that read chroma need chroma planes of one size on both \
                     pads: reference chroma is {}, distorted chroma is {}",
                    show(rs),
                    show(ds)
                )));
            }
        };
        let r = rm
            .input()
            .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let d = dm
            .input()
            .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        let scorer = state
            .scorer
            .as_mut()
            .ok_or_else(|| PairError::Map("internal: no scorer".into()))?;
        let full = scorer.next_full(0);
        let chroma = pair.map(FrameChroma::packed_pair);
        scorer
            .push_set(FrameSet::pair(r, d, chroma, full), vec![tag])
            .map_err(PairError::Engine)
    }

    /// Pushes mapped planes to a backend that unpacks chroma itself (the CUDA backend), with
    /// the chroma components in the buffers' own layouts when `wants_chroma`.
    pub(super) fn push_components(
        &self,
        state: &mut State,
        (rm, dm): (&mut MappedLuma<'_>, &mut MappedLuma<'_>),
        wants_chroma: bool,
        bpc: u32,
        tag: Tag,
    ) -> Result<Vec<(usize, Scored<Tag>)>, PairError> {
        let (r, rc) = rm
            .inputs(bpc, wants_chroma)
            .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let (d, dc) = dm
            .inputs(bpc, wants_chroma)
            .map_err(|e| PairError::Map(format!("distorted: {e}")))?;
        let chroma = match (rc, dc) {
            (Some(reference), Some(distorted)) => Some(ChromaInput {
                reference,
                distorted,
            }),
            (None, None) => None,
            (rc, dc) => {
                let show = |c: Option<[ComponentInput<'_>; 2]>| {
                    c.map_or("none (no chroma)".to_owned(), |c| {
                        let (w, h) = c[0].size();
                        format!("{w}x{h}")
                    })
                };
                return Err(PairError::Map(format!(
                    "the metrics that read chroma need chroma planes of one size on both pads: \
                     reference chroma is {}, distorted chroma is {}",
                    show(rc),
                    show(dc)
                )));
            }
        };
        let scorer = state
            .scorer
            .as_mut()
            .ok_or_else(|| PairError::Map("internal: no scorer".into()))?;
        let full = scorer.next_full(0);
        let chroma = chroma.map(FrameChroma::component_pair);
        scorer
            .push_set(FrameSet::pair(r, d, chroma, full), vec![tag])
            .map_err(PairError::Engine)
    }

    pub(super) fn score_pair(
        &self,
        reference: gst::Buffer,
        distorted: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let running_time = Self::running_time(&self.distorted_pad, &distorted);
        let mut state = lock(&self.state);
        let refuse_sizes = lock(&self.settings).scale_method == VmafScaleMethod::None;
        let mismatch = refuse_sizes
            && matches!(
                (state.reference.as_ref(), state.distorted.as_ref()),
                (Some(r), Some(d)) if r.size() != d.size()
            );
        if mismatch {
            // The pads disagree: ensure_scorer ends the stream with an error. Frames still in
            // flight (CPU pool, GPU) are completed and sent first, as a synchronous backend
            // would have sent them before this pair.
            let settled = state.scorer.as_mut().map(|s| s.settle());
            if let Some(Ok(done)) = settled {
                drop(state);
                let _ = self.emit_all(done);
                state = lock(&self.state);
            }
        }
        let switched = self.ensure_scorer(&mut state)?;
        let (Some(rv), Some(dv), Some((w, h, bpc))) = (
            state.reference.clone(),
            state.distorted.clone(),
            state.geometry,
        ) else {
            return Err(gst::FlowError::NotNegotiated);
        };
        let (w, h) = (w as usize, h as usize);
        let gpu = lock(&self.prepared).as_ref().and_then(|p| p.gpu.clone());
        let tag = Tag {
            buffer: distorted.clone(),
            running_time,
        };
        let retry = tag.clone();
        let mut failed_over = Vec::new();
        let pushed = self.push_pair(
            &mut state,
            (&rv, &reference),
            (&dv, &distorted),
            bpc,
            gpu.as_deref(),
            tag,
        );
        let result = match pushed {
            Ok(done) => Ok(done),
            Err(PairError::Map(e)) => {
                drop(state);
                gst::element_imp_error!(self, gst::StreamError::Decode, ("{}", e));
                return Err(gst::FlowError::Error);
            }
            Err(PairError::Engine(e))
                if state
                    .scorer
                    .as_ref()
                    .is_some_and(|s| s.backend_name() != "cpu")
                    && lock(&self.settings).backend == VmafBackend::Auto =>
            {
                // The GPU failed mid-stream: finish the stream on the CPU.
                let plan = state.scorer.as_ref().map(|s| s.plan().clone());
                let colour = state
                    .reference
                    .as_ref()
                    .map(|r| yuv_to_rgb(&r.info))
                    .unwrap_or_default();
                let geometry = Geometry {
                    colour,
                    ..Geometry::luma(w, h, bpc)
                };
                let scaling = state.scaling.clone();
                match plan.map(|p| {
                    self.cpu_backend(&p, geometry)
                        .map(|b| b.with_scaling(scaling))
                }) {
                    Some(Ok(cpu)) => {
                        let lost = match state.scorer.as_mut() {
                            Some(scorer) => {
                                let (done, lost) = scorer.fail_over(Box::new(cpu));
                                failed_over = done;
                                let n = lost.len();
                                // Still leave unscored, in order, as before the CPU takes over.
                                for f in lost.into_iter().flatten() {
                                    let unscored = |tag| Scored {
                                        index: 0,
                                        tag,
                                        scores: None,
                                    };
                                    failed_over.push((f.rendition, unscored(f.tag)));
                                    failed_over.extend(
                                        f.unpaired.into_iter().map(|t| (f.rendition, unscored(t))),
                                    );
                                }
                                n
                            }
                            None => 0,
                        };
                        gst::element_imp_warning!(
                            self,
                            gst::ResourceError::Failed,
                            ("GPU scoring failed ({}): continuing on the CPU; {} frames in flight were not scored", e, lost)
                        );
                        match self.push_pair(
                            &mut state,
                            (&rv, &reference),
                            (&dv, &distorted),
                            bpc,
                            None,
                            retry,
                        ) {
                            Ok(done) => Ok(done),
                            Err(PairError::Map(e)) => Err(e),
                            Err(PairError::Engine(e)) => Err(e.to_string()),
                        }
                    }
                    _ => Err(e.to_string()),
                }
            }
            Err(PairError::Engine(e)) => Err(e.to_string()),
        };
        if state.started.is_none() {
            state.started = Some(Instant::now());
        }
        drop(state);
        let done = match result {
            Ok(done) => done,
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Failed, ("Scoring failed: {}", e));
                return Err(gst::FlowError::Error);
            }
        };
        self.emit_all(switched)?;
        self.emit_all(failed_over)?;
        self.emit_all(done)
    }

    pub(super) fn pass_unpaired_distorted(
        &self,
        buffer: gst::Buffer,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let gap = is_gap(&buffer);
        let buffer = match self.live_pass(buffer) {
            Ok(ret) => {
                if !gap {
                    lock(&self.state).unpaired_distorted += 1;
                }
                return Ok(ret);
            }
            Err(buffer) => buffer,
        };
        let running_time = Self::running_time(&self.distorted_pad, &buffer);
        let tag = Tag {
            buffer,
            running_time,
        };
        let mut state = lock(&self.state);
        if !is_gap(&tag.buffer) {
            state.unpaired_distorted += 1;
        }
        let now = match state.scorer.as_mut() {
            Some(s) => s.push_unpaired(0, tag),
            None => Some(Scored {
                index: 0,
                tag,
                scores: None,
            }),
        };
        drop(state);
        match now {
            Some(item) => self.emit(item, false),
            None => Ok(gst::FlowSuccess::Ok),
        }
    }

    /// Both inputs are done: complete the last frame, post the summary, close the log.
    pub(super) fn finish_stream(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut state = lock(&self.state);
        if state.finished {
            return Err(gst::FlowError::Eos);
        }
        state.finished = true;
        drop(state);
        // Live pipelines: the scoring thread finishes what it was given first.
        self.live_drain()?;
        let mut state = lock(&self.state);
        let tail = state.scorer.as_mut().map(|s| s.finish()).transpose();
        drop(state);
        let tail = tail.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.emit_all(tail)?;
        self.live_release(true)?;
        self.post_summary();
        Err(gst::FlowError::Eos)
    }
}
