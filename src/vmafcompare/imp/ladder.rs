//! Ladder mode: one reference against several renditions, each on a distorted pad (the
//! always `distorted` pad, when linked, and the request pads `distorted_%u`).
//!
//! Each rendition is paired with the reference by running time on its own; per reference
//! frame the renditions that have a frame at its time are scored together
//! ([`crate::engine::Scorer`]: the reference's work once). The src pad carries the
//! reference buffers, each with one meta per rendition that scored it (fields `pad` and
//! `label` name the rendition), pushed once every such rendition's scores are complete.
//! Every frame message, summary and log names its rendition.

use std::collections::VecDeque;

use super::*;
use crate::engine::scale::range::{ColourRange, RangeConversion};
use crate::engine::scale::LadderScaling;
use crate::engine::{FrameChroma, FrameSet, RenditionFrame};
use crate::vmafcompare::VmafRenditionPad;

/// What goes with each rendition's frame through the scorer.
#[derive(Clone)]
pub(super) struct RTag {
    /// The ladder frame (reference buffer) it was scored against.
    frame: u64,
    pts: Option<gst::ClockTime>,
    running_time: Option<gst::ClockTime>,
    duration: Option<gst::ClockTime>,
}

/// One rendition: its pad and what it produced.
pub(super) struct Rendition {
    pub(super) pad: VmafRenditionPad,
    /// The pad's name (`distorted`, `distorted_1`).
    pub(super) name: String,
    /// Its `label` property at READY->PAUSED (may be empty).
    pub(super) label: String,
    pub(super) video: Option<PadVideo>,
    paths: BTreeSet<InputPath>,
    scaled: BTreeSet<String>,
    /// Its colour range against the reference's, and what was converted.
    ranges: range::RangeNotes,
    log: Option<LogWriter>,
    unpaired_reference: u64,
    unpaired_distorted: u64,
    /// Its summary was posted (pad released, or the stream ended).
    done: bool,
    /// Packed Cb/Cr for the CPU backend.
    chroma: [Vec<u16>; 2],
}

impl Rendition {
    /// Its label, or its pad's name when the label is empty.
    fn label_or_name(&self) -> String {
        if self.label.is_empty() {
            self.name.clone()
        } else {
            self.label.clone()
        }
    }
}

impl range::RenditionName for Rendition {
    fn rendition_name(&self) -> &str {
        &self.name
    }
}

/// A reference buffer waiting for its renditions' scores before it leaves.
struct Pending {
    frame: u64,
    buffer: gst::Buffer,
    remaining: usize,
}

/// Ladder state, from READY->PAUSED to PAUSED->READY.
#[derive(Default)]
pub(super) struct LadderState {
    pub(super) renditions: Vec<Rendition>,
    scorer: Option<Scorer<RTag>>,
    /// `(width, height, bpc)` scored at.
    geometry: Option<(u32, u32, u32)>,
    /// Reference and renditions' sizes the backend was made for.
    sizes: Vec<(u32, u32)>,
    /// The range conversions (reference's, each rendition's) the backend was made for: a
    /// caps change of range alone makes it again, as a change of size does.
    conversions: Vec<[Option<RangeConversion>; 2]>,
    reference_scaled: BTreeSet<String>,
    reference_paths: BTreeSet<InputPath>,
    out: VecDeque<Pending>,
    next_frame: u64,
    started: Option<Instant>,
    finished: bool,
    /// The always `distorted` pad was unlinked at READY->PAUSED and was ended: it carries no
    /// rendition.
    distorted_unused: bool,
}

impl LadderState {
    /// Frames scored, unpaired reference and unpaired distorted frames, every rendition
    /// summed (the element's `stats` property).
    pub(super) fn counts(&self) -> (u64, u64, u64) {
        let frames = (0..self.renditions.len())
            .filter_map(|k| self.scorer.as_ref()?.track(k))
            .map(|s| s.pool().count())
            .sum();
        let unpaired = self.renditions.iter().fold((0, 0), |(r, d), x| {
            (r + x.unpaired_reference, d + x.unpaired_distorted)
        });
        (frames, unpaired.0, unpaired.1)
    }
}

/// Packed chroma of the renditions of one ladder frame: slot, Cb/Cr, their size.
type PackedChroma = Vec<(usize, [Vec<u16>; 2], Option<(usize, usize)>)>;

/// `results-location` for one rendition: `%s` replaced by its label (or pad name), else the
/// name inserted before the extension (`scores.json` -> `scores-720p.json`).
pub(super) fn rendition_location(location: &str, name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.+".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if location.contains("%s") {
        return location.replace("%s", &safe);
    }
    let path = std::path::Path::new(location);
    match (path.file_stem(), path.extension()) {
        (Some(stem), Some(ext)) => path
            .with_file_name(format!(
                "{}-{safe}.{}",
                stem.to_string_lossy(),
                ext.to_string_lossy()
            ))
            .to_string_lossy()
            .into_owned(),
        _ => format!("{location}-{safe}"),
    }
}

impl VmafCompare {
    /// The distorted pads that carry renditions, in slot order: `distorted` when linked, then
    /// the request pads in the order they were made. Empty without request pads (pair mode).
    fn rendition_pads(&self) -> Vec<VmafRenditionPad> {
        let obj = self.obj();
        let requested: Vec<VmafRenditionPad> = obj
            .sink_pads()
            .into_iter()
            .filter(|p| p.name().starts_with("distorted_"))
            .filter_map(|p| p.downcast::<VmafRenditionPad>().ok())
            .collect();
        if requested.is_empty() {
            return Vec::new();
        }
        let mut pads = Vec::with_capacity(requested.len() + 1);
        if self.distorted_pad.is_linked() {
            if let Ok(p) = self.distorted_pad.clone().downcast::<VmafRenditionPad>() {
                pads.push(p);
            }
        }
        pads.extend(requested);
        pads
    }

    /// Whether the element scores a ladder (request pads were made before READY->PAUSED).
    pub(super) fn is_ladder(&self) -> bool {
        lock(&self.state).ladder.is_some()
    }

    /// READY->PAUSED: the ladder state when request pads exist, each rendition's log opened.
    pub(super) fn ladder_start(&self) -> Result<Option<LadderState>, gst::ErrorMessage> {
        let pads = self.rendition_pads();
        if pads.is_empty() {
            return Ok(None);
        }
        let mut ladder = LadderState::default();
        for pad in pads {
            let name = pad.name().to_string();
            let label = pad.label();
            let log = self.open_log_named(Some(&pad.label_or_name()))?;
            let mut log = log;
            if let Some(l) = log.as_mut() {
                l.note("pad", name.clone());
                if !label.is_empty() {
                    l.note("rendition", label.clone());
                }
            }
            ladder.renditions.push(Rendition {
                pad,
                name,
                label,
                video: None,
                paths: BTreeSet::new(),
                scaled: BTreeSet::new(),
                ranges: range::RangeNotes::default(),
                log,
                unpaired_reference: 0,
                unpaired_distorted: 0,
                done: false,
                chroma: [Vec::new(), Vec::new()],
            });
        }
        gst::info!(
            CAT,
            imp = self,
            "ladder of {} renditions: {}",
            ladder.renditions.len(),
            ladder
                .renditions
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Ok(Some(ladder))
    }

    /// After READY->PAUSED in ladder mode: an unlinked `distorted` pad carries no rendition;
    /// it is ended at once so that the aggregator does not wait for it.
    pub(super) fn ladder_end_unlinked(&self) {
        if self.is_ladder() && !self.distorted_pad.is_linked() {
            if let Some(l) = lock(&self.state).ladder.as_mut() {
                l.distorted_unused = true;
            }
            let _ = self
                .distorted_pad
                .send_event(gst::event::StreamStart::new("vmafcompare-unused-distorted"));
            let _ = self.distorted_pad.send_event(gst::event::Eos::new());
        }
    }

    /// A caps event on a rendition's pad (ladder mode). Returns `false` when `pad` is not one.
    pub(super) fn ladder_caps(&self, pad: &gst_base::AggregatorPad, video: &PadVideo) -> bool {
        let mut state = lock(&self.state);
        let Some(ladder) = state.ladder.as_mut() else {
            return false;
        };
        if ladder.distorted_unused && pad == &self.distorted_pad {
            drop(state);
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                (
                    "the distorted pad was linked after the pipeline started: in a ladder, an \
                     unlinked distorted pad is left out at READY->PAUSED"
                ),
                ["Link sources that link late (decodebin, uridecodebin) to request pads distorted_1, distorted_2, ... or link the distorted pad before starting."]
            );
            return true;
        }
        match ladder
            .renditions
            .iter_mut()
            .find(|r| r.pad.upcast_ref::<gst_base::AggregatorPad>() == pad)
        {
            Some(r) => {
                r.video = Some(video.clone());
                true
            }
            None => false,
        }
    }

    /// The scorer for the reference's and every rendition's caps, made again when one of
    /// them changed size. Returns the frames a backend switch completed.
    fn ensure_ladder_scorer(
        &self,
        state: &mut State,
    ) -> Result<Vec<(usize, Scored<RTag>)>, gst::FlowError> {
        let Some(r) = state.reference.clone() else {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("buffers arrived before caps")
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        let Some(ladder) = state.ladder.as_mut() else {
            return Err(gst::FlowError::Error);
        };
        // A rendition whose caps are not known yet (no buffer so far) is sized as the
        // reference until they come.
        let videos: Vec<PadVideo> = ladder
            .renditions
            .iter()
            .map(|x| x.video.clone().unwrap_or_else(|| r.clone()))
            .collect();
        let (method, score_w, score_h) = {
            let st = lock(&self.settings);
            (st.scale_method, st.score_width, st.score_height)
        };
        let (rw, rh) = r.size();
        let (w, h) = (
            if score_w > 0 { score_w } else { rw },
            if score_h > 0 { score_h } else { rh },
        );
        if method == VmafScaleMethod::None {
            if let Some((x, v)) = ladder
                .renditions
                .iter()
                .zip(&videos)
                .find(|(_, v)| v.size() != (w, h))
            {
                let (dw, dh) = v.size();
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    (
                        "reference is {}x{} but {} is {}x{} and scale-method=none: every pad \
                         must carry the {}x{} scoring size",
                        rw, rh, x.name, dw, dh, w, h
                    ),
                    ["Set scale-method=bicubic (the default) to scale each rendition to the reference's size."]
                );
                return Err(gst::FlowError::NotNegotiated);
            }
        }
        let bpc = videos.iter().map(|v| v.depth).fold(r.depth, u32::max);
        let mut sizes = vec![r.size()];
        sizes.extend(videos.iter().map(|v| v.size()));
        let decisions: Vec<_> = videos
            .iter()
            .map(|v| range::decide(&r, v, (w, h)))
            .collect();
        let conversions: Vec<_> = decisions
            .iter()
            .map(|d| [d.reference, d.distorted])
            .collect();
        if ladder.geometry == Some((w, h, bpc))
            && ladder.sizes == sizes
            && ladder.conversions == conversions
            && ladder.scorer.is_some()
        {
            return Ok(Vec::new());
        }
        let (models, features, gpu) = self.loaded_for((w, h))?;
        let has_chroma = |v: &PadVideo| v.info.format_info().n_components() >= 3;
        let plan = match ladder.scorer.as_ref() {
            Some(s) => s.plan().clone(),
            None => {
                let chroma = has_chroma(&r) && videos.iter().all(has_chroma);
                match ScorePlan::new(models, features, chroma) {
                    Ok(plan) => plan,
                    Err(e) => {
                        gst::element_imp_error!(self, gst::LibraryError::Settings, ("{}", e));
                        return Err(gst::FlowError::Error);
                    }
                }
            }
        };
        let mut scaling = LadderScaling::default();
        let mut frame0 = None;
        if let Err(why) = range::one_reference_range(&decisions, &ladder.renditions) {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("{}", why),
                ["Score these renditions in separate vmafcompare elements."]
            );
            return Err(gst::FlowError::NotNegotiated);
        }
        for ((x, v), rd) in ladder.renditions.iter().zip(&videos).zip(&decisions) {
            let mut frame = FrameFormat::of(&r, v, (w as usize, h as usize));
            frame.colour.full_range = rd.target == ColourRange::Full;
            if let Some(why) = frame.chroma_mismatch(&plan.features) {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("{}: {}", x.name, why),
                    ["Convert the rendition to the reference's format (videoconvert), or leave psnr and ssimulacra2 out of features."]
                );
                return Err(gst::FlowError::NotNegotiated);
            }
            if plan.chroma && frame.chroma.is_none() {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("{}: the selected metrics read chroma, which must have the reference's subsampling in every rendition", x.name),
                    ["Convert the rendition to the reference's format (videoconvert)."]
                );
                return Err(gst::FlowError::NotNegotiated);
            }
            let conversions = (plan.chroma, [rd.reference, rd.distorted]);
            let s = match input_scaling(method.into(), [&r, v], (w, h), &frame, conversions) {
                Ok(s) => s,
                Err(e) => {
                    gst::element_imp_error!(
                        self,
                        gst::CoreError::Negotiation,
                        ("{}: {}", x.name, e),
                        ["Score at another size (score-width / score-height) or use a less extreme rendition."]
                    );
                    return Err(gst::FlowError::NotNegotiated);
                }
            };
            scaling.reference = s.reference.clone();
            scaling.renditions.push(s.distorted.clone());
            frame0.get_or_insert(frame);
        }
        let Some(frame) = frame0 else {
            return Err(gst::FlowError::Error);
        };
        if ladder.scorer.is_none() {
            for v in &videos {
                self.warn_mismatched_streams(&r, v);
            }
        }
        ladder
            .reference_scaled
            .insert(describe_scaling(scaling.reference.as_deref()));
        for (k, ((x, s), (rd, v))) in ladder
            .renditions
            .iter_mut()
            .zip(&scaling.renditions)
            .zip(decisions.iter().zip(&videos))
            .enumerate()
        {
            let report = describe_scaling(s.as_deref());
            x.scaled.insert(report);
            // The reference's conversion (the same for all) is warned about once.
            let ranges = (r.range.range, v.range.range);
            self.report_ranges(&mut x.ranges, rd, ranges, (&x.name, k == 0));
            if let Some(log) = x.log.as_mut() {
                x.ranges.note(log);
            }
            if let Some(log) = x.log.as_mut() {
                if s.is_some() || scaling.reference.is_some() {
                    log.note("scored_size", format!("{w}x{h}"));
                    log.note("reference_scaling", joined(&ladder.reference_scaled));
                    log.note("distorted_scaling", joined(&x.scaled));
                }
            }
        }
        let backend =
            self.make_ladder_backend(gpu.as_deref(), &plan, (w, h, bpc), &frame, scaling)?;
        ladder.geometry = Some((w, h, bpc));
        ladder.sizes = sizes;
        ladder.conversions = conversions;
        match ladder.scorer.as_mut() {
            Some(s) => s
                .replace_backend(backend)
                .map_err(|e| self.engine_failed(e)),
            None => {
                let subsample = lock(&self.settings).subsample;
                ladder.scorer = Some(Scorer::with_plan(backend, plan, subsample));
                Ok(Vec::new())
            }
        }
    }

    /// The ladder backend: the GPU when the element holds one (with `backend=auto` a GPU
    /// failure falls back to the CPU with a warning), else the CPU (on the pool).
    fn make_ladder_backend(
        &self,
        gpu: Option<&GpuDevice>,
        plan: &ScorePlan,
        (w, h, bpc): (u32, u32, u32),
        frame: &FrameFormat,
        scaling: LadderScaling,
    ) -> Result<Box<dyn Backend>, gst::FlowError> {
        let geometry = setup::scoring_geometry(plan, (w, h, bpc), frame);
        let n = scaling.renditions.len();
        if let Some(dev) = gpu {
            let made = CudaBackend::new_ladder(dev, plan.layout(), geometry, scaling.clone());
            if let Some(b) = self.gpu_backend(made)? {
                gst::info!(
                    CAT,
                    imp = self,
                    "scoring a ladder of {n} at {w}x{h}, {bpc} bits, on the GPU"
                );
                return Ok(b);
            }
        }
        let pool = lock(&self.prepared)
            .as_ref()
            .and_then(|p| p.cpu_pool.clone());
        match CpuBackend::for_ladder(plan.layout(), geometry, scaling) {
            Ok(b) => {
                gst::info!(
                    CAT,
                    imp = self,
                    "scoring a ladder of {n} at {w}x{h}, {bpc} bits, on the CPU"
                );
                Ok(match pool {
                    Some(pool) => Box::new(b.with_pool(pool)),
                    None => Box::new(b),
                })
            }
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Format, ("{}", e));
                Err(gst::FlowError::NotNegotiated)
            }
        }
    }

    /// `aggregate()` in ladder mode: the next reference buffer with, per rendition, the buffer
    /// at its running time (earlier ones have no partner and are dropped), or none when the
    /// rendition has no frame at that time (a later buffer, its pad ended, or in a live
    /// pipeline its deadline passed).
    pub(super) fn ladder_aggregate(
        &self,
        timeout: bool,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        // Renditions whose pad was released are left out (`done`).
        let (n, pads): (usize, Vec<(usize, VmafRenditionPad)>) =
            match lock(&self.state).ladder.as_ref() {
                Some(l) => (
                    l.renditions.len(),
                    l.renditions
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| !r.done)
                        .map(|(k, r)| (k, r.pad.clone()))
                        .collect(),
                ),
                None => return Err(gst::FlowError::Error),
            };
        let Some(reference) = self.reference_pad.peek_buffer() else {
            if self.reference_pad.is_eos() {
                // Nothing left to pair with: what the renditions still carry is unpaired.
                let mut any = false;
                for (k, pad) in &pads {
                    let k = *k;
                    let agg = pad.upcast_ref::<gst_base::AggregatorPad>();
                    while let Some(b) = agg.pop_buffer() {
                        any = true;
                        if !is_gap(&b) {
                            self.ladder_count(k, false);
                        }
                    }
                }
                let all_eos = pads
                    .iter()
                    .all(|(_, p)| p.upcast_ref::<gst_base::AggregatorPad>().is_eos());
                if all_eos || !any {
                    return self.ladder_finish();
                }
            }
            return Ok(gst::FlowSuccess::Ok);
        };
        let rrt = Self::running_time(&self.reference_pad, &reference);
        let mut partners: Vec<Option<gst::Buffer>> = vec![None; n];
        for (k, pad) in &pads {
            let k = *k;
            let agg = pad.upcast_ref::<gst_base::AggregatorPad>();
            let partner = loop {
                let Some(d) = agg.peek_buffer() else {
                    if agg.is_eos() || self.ladder_overdue(rrt, timeout) {
                        break None;
                    }
                    // Wait for this rendition (non-live pipelines always wait).
                    return Ok(gst::FlowSuccess::Ok);
                };
                let drt = Self::running_time(agg, &d);
                let half = match (d.duration(), reference.duration()) {
                    (Some(a), Some(b)) => Some(a.min(b) / 2),
                    (a, b) => a.or(b).map(|d| d / 2),
                };
                match (rrt, drt, half) {
                    (Some(r), Some(dt), Some(half)) if dt + half < r => {
                        // Earlier than the reference: it has no partner.
                        drop(agg.pop_buffer());
                        if !is_gap(&d) {
                            self.ladder_count(k, false);
                        }
                        continue;
                    }
                    (Some(r), Some(dt), Some(half)) if r + half < dt => break None,
                    _ => break Some(d),
                }
            };
            partners[k] = partner;
        }
        let Some(reference) = self.reference_pad.pop_buffer() else {
            return Ok(gst::FlowSuccess::Ok);
        };
        let mut taken: Vec<Option<gst::Buffer>> = vec![None; n];
        for (k, pad) in &pads {
            let k = *k;
            let agg = pad.upcast_ref::<gst_base::AggregatorPad>();
            let b = partners[k].take().and_then(|_| agg.pop_buffer());
            match b {
                Some(b) if !is_gap(&b) && !is_gap(&reference) => taken[k] = Some(b),
                Some(b) => {
                    if !is_gap(&b) {
                        self.ladder_count(k, false);
                    }
                }
                None => {
                    if !is_gap(&reference) {
                        self.ladder_count(k, true);
                    }
                }
            }
        }
        self.ladder_score(reference, taken)
    }

    /// Counts an unpaired frame of rendition `k`: its reference (`true`: the reference frame
    /// had no partner in it) or its own.
    fn ladder_count(&self, k: usize, reference: bool) {
        let mut state = lock(&self.state);
        if let Some(r) = state.ladder.as_mut().and_then(|l| l.renditions.get_mut(k)) {
            if reference {
                r.unpaired_reference += 1;
            } else {
                r.unpaired_distorted += 1;
            }
        }
    }

    /// A live timeout: the reference buffer at `rrt` waited past its deadline (its running
    /// time plus the latency) for a rendition's frame.
    fn ladder_overdue(&self, rrt: Option<gst::ClockTime>, timeout: bool) -> bool {
        if !timeout {
            return false;
        }
        let obj = self.obj();
        match (rrt, obj.current_running_time(), obj.latency()) {
            (Some(t), Some(now), Some(latency)) => t.saturating_add(latency) <= now,
            _ => true,
        }
    }

    /// Live pipelines in ladder mode: wake up at the waiting reference buffer's deadline.
    pub(super) fn ladder_next_time(&self) -> Option<gst::ClockTime> {
        let b = self.reference_pad.peek_buffer()?;
        Self::running_time(&self.reference_pad, &b)
    }

    /// Scores one reference buffer against the renditions' partners (`None`: no frame).
    fn ladder_score(
        &self,
        reference: gst::Buffer,
        partners: Vec<Option<gst::Buffer>>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut state = lock(&self.state);
        let frame_no = match state.ladder.as_mut() {
            Some(l) => {
                let n = l.next_frame;
                l.next_frame += 1;
                n
            }
            None => return Err(gst::FlowError::Error),
        };
        let present = partners.iter().filter(|p| p.is_some()).count();
        if present == 0 {
            // No rendition has this reference frame: it leaves unscored, in order.
            if let Some(l) = state.ladder.as_mut() {
                l.out.push_back(Pending {
                    frame: frame_no,
                    buffer: reference,
                    remaining: 0,
                });
            }
            drop(state);
            return self.ladder_release();
        }
        let switched = self.ensure_ladder_scorer(&mut state)?;
        let gpu = lock(&self.prepared).as_ref().and_then(|p| p.gpu.clone());
        let result = self.ladder_push(&mut state, &reference, &partners, frame_no, gpu.as_deref());
        if let Some(l) = state.ladder.as_mut() {
            l.out.push_back(Pending {
                frame: frame_no,
                buffer: reference,
                remaining: present,
            });
            l.started.get_or_insert_with(Instant::now);
        }
        drop(state);
        self.ladder_emit(switched)?;
        match result {
            Ok(done) => self.ladder_emit(done),
            Err(PairError::Map(e)) => {
                gst::element_imp_error!(self, gst::StreamError::Decode, ("{}", e));
                Err(gst::FlowError::Error)
            }
            Err(PairError::Engine(e)) => Err(self.engine_failed(e)),
        }
    }

    /// Maps the reference and the partners and pushes them as one ladder frame.
    fn ladder_push(
        &self,
        state: &mut State,
        reference: &gst::Buffer,
        partners: &[Option<gst::Buffer>],
        frame_no: u64,
        gpu: Option<&GpuDevice>,
    ) -> Result<Vec<(usize, Scored<RTag>)>, PairError> {
        let Some(rv) = state.reference.clone() else {
            return Err(PairError::Map("reference: no caps".into()));
        };
        let (bpc, reads_device, components, wants_chroma, defers) = match state
            .ladder
            .as_ref()
            .and_then(|l| Some((l.geometry?, l.scorer.as_ref()?)))
        {
            Some(((_, _, bpc), s)) => (
                bpc,
                s.reads_device(),
                s.reads_components(),
                s.plan().layout().reads_chroma(),
                s.defers_host_rows(),
            ),
            None => return Err(PairError::Map("internal: no ladder scorer".into())),
        };
        let gpu = gpu.filter(|_| reads_device);
        let videos: Vec<Option<PadVideo>> = state
            .ladder
            .as_ref()
            .map(|l| l.renditions.iter().map(|r| r.video.clone()).collect())
            .unwrap_or_default();
        let (mut rm, rp) = self
            .map_luma(&rv, reference, bpc, gpu, defers, state)
            .map_err(|e| PairError::Map(format!("reference: {e}")))?;
        let mut mapped = Vec::with_capacity(partners.len());
        let mut paths = Vec::with_capacity(partners.len());
        for (k, p) in partners.iter().enumerate() {
            let Some(b) = p else { continue };
            let Some(v) = videos.get(k).cloned().flatten() else {
                return Err(PairError::Map(format!(
                    "rendition {k}: buffers arrived before caps"
                )));
            };
            let (m, path) = self
                .map_luma(&v, b, bpc, gpu, defers, state)
                .map_err(|e| PairError::Map(format!("rendition {k}: {e}")))?;
            mapped.push((k, m, b));
            paths.push((k, path));
        }
        let Some(ladder) = state.ladder.as_mut() else {
            return Err(PairError::Map("internal: no ladder".into()));
        };
        ladder.reference_paths.insert(rp);
        for (k, path) in paths {
            if let Some(r) = ladder.renditions.get_mut(k) {
                r.paths.insert(path);
            }
        }
        // Packed chroma (CPU backend) lives in the renditions' scratch for the push.
        let mut ref_chroma: [Vec<u16>; 2] = Default::default();
        let mut packed: PackedChroma = Vec::new();
        let mut ref_size = None;
        if wants_chroma && !components {
            ref_size = rm
                .pack_chroma(bpc, &mut ref_chroma)
                .map_err(|e| PairError::Map(format!("reference: {e}")))?;
            for (k, m, _) in &mapped {
                let mut c = std::mem::take(&mut ladder.renditions[*k].chroma);
                let size = m
                    .pack_chroma(bpc, &mut c)
                    .map_err(|e| PairError::Map(format!("rendition {k}: {e}")))?;
                packed.push((*k, c, size));
            }
        }
        fn plane(v: &[u16], s: Option<(usize, usize)>, bpc: u32) -> Option<LumaPlane<'_>> {
            let (w, h) = s?;
            LumaPlane::packed(v, w, h, bpc)
        }
        let (reference_luma, reference_chroma) = if components {
            let (l, c) = rm
                .inputs(bpc, wants_chroma)
                .map_err(|e| PairError::Map(format!("reference: {e}")))?;
            (l, c.map(FrameChroma::Components))
        } else {
            let l = rm
                .input()
                .map_err(|e| PairError::Map(format!("reference: {e}")))?;
            let c = match (
                plane(&ref_chroma[0], ref_size, bpc),
                plane(&ref_chroma[1], ref_size, bpc),
            ) {
                (Some(a), Some(b)) => Some(FrameChroma::Packed([a, b])),
                _ => None,
            };
            (l, c)
        };
        let mut renditions = Vec::with_capacity(mapped.len());
        let mut tags = Vec::with_capacity(mapped.len());
        let scorer = ladder.scorer.as_ref();
        let fulls: Vec<bool> = mapped
            .iter()
            .map(|(k, _, _)| scorer.is_some_and(|s| s.next_full(*k)))
            .collect();
        for ((k, m, b), full) in mapped.iter_mut().zip(fulls) {
            let (luma, chroma) = if components {
                let (l, c) = m
                    .inputs(bpc, wants_chroma)
                    .map_err(|e| PairError::Map(format!("rendition {k}: {e}")))?;
                (l, c.map(FrameChroma::Components))
            } else {
                let l = m
                    .input()
                    .map_err(|e| PairError::Map(format!("rendition {k}: {e}")))?;
                let c = packed
                    .iter()
                    .find(|(pk, _, _)| pk == k)
                    .and_then(|(_, c, s)| {
                        Some(FrameChroma::Packed([
                            plane(&c[0], *s, bpc)?,
                            plane(&c[1], *s, bpc)?,
                        ]))
                    });
                (l, c)
            };
            let pad = &ladder.renditions[*k].pad;
            let agg = pad.upcast_ref::<gst_base::AggregatorPad>();
            tags.push(RTag {
                frame: frame_no,
                pts: b.pts(),
                running_time: Self::running_time(agg, b),
                duration: b.duration(),
            });
            renditions.push(RenditionFrame {
                rendition: *k,
                luma,
                chroma,
                full,
            });
        }
        let frame = FrameSet {
            reference: reference_luma,
            reference_chroma,
            renditions,
        };
        let result = match ladder.scorer.as_mut() {
            Some(s) => s.push_set(frame, tags).map_err(PairError::Engine),
            None => Err(PairError::Map("internal: no ladder scorer".into())),
        };
        for (k, c, _) in packed {
            ladder.renditions[k].chroma = c;
        }
        result
    }

    /// Posts, logs and attaches each completed rendition frame, then pushes the reference
    /// buffers whose renditions are all complete.
    fn ladder_emit(
        &self,
        items: Vec<(usize, Scored<RTag>)>,
    ) -> Result<gst::FlowSuccess, gst::FlowError> {
        if items.is_empty() {
            return self.ladder_release();
        }
        let post = lock(&self.settings).frame_message;
        let obj = self.obj();
        let mut messages = Vec::new();
        {
            let mut state = lock(&self.state);
            let Some(l) = state.ladder.as_mut() else {
                return Err(gst::FlowError::Error);
            };
            let (w, h) = l.geometry.map(|(w, h, _)| (w, h)).unwrap_or((0, 0));
            for (k, item) in items {
                let Scored { tag, scores, .. } = item;
                let Some(r) = l.renditions.get_mut(k) else {
                    continue;
                };
                let mut structure = None;
                if let Some(scores) = scores {
                    let msg = FrameMessage {
                        pad: Some(r.name.clone()),
                        label: Some(r.label_or_name()),
                        ..Self::frame_message(&scores, (tag.pts, tag.running_time, tag.duration))
                    };
                    let s = msg.to_structure();
                    if let Some(log) = r.log.as_mut() {
                        if let Err(e) = log.write_frame(&scores, w, h) {
                            r.log = None;
                            drop(state);
                            gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
                            return Err(gst::FlowError::Error);
                        }
                    }
                    if post {
                        messages.push(s.clone());
                    }
                    structure = Some(s);
                }
                if let Some(p) = l.out.iter_mut().find(|p| p.frame == tag.frame) {
                    p.remaining = p.remaining.saturating_sub(1);
                    if let Some(s) = structure {
                        if let Err(e) = monitor::attach_meta(&mut p.buffer, &s) {
                            gst::warning!(CAT, imp = self, "cannot attach scores meta: {e}");
                        }
                    }
                }
            }
        }
        for s in messages {
            let _ = obj.post_message(gst::message::Element::builder(s).src(&*obj).build());
        }
        self.ladder_release()
    }

    /// Pushes, in order, the reference buffers whose renditions' scores are all in.
    fn ladder_release(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let mut ret = Ok(gst::FlowSuccess::Ok);
        loop {
            let next = {
                let mut state = lock(&self.state);
                let Some(l) = state.ladder.as_mut() else {
                    break;
                };
                match l.out.front() {
                    Some(p) if p.remaining == 0 => l.out.pop_front(),
                    _ => None,
                }
            };
            let Some(p) = next else { break };
            ret = self.finish_output(p.buffer);
            if ret.is_err() {
                break;
            }
        }
        ret
    }

    /// Every input ended: complete every frame, push every buffer, post each rendition's
    /// summary (those not posted yet) and close the logs.
    fn ladder_finish(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        let tail = {
            let mut state = lock(&self.state);
            let Some(l) = state.ladder.as_mut() else {
                return Err(gst::FlowError::Eos);
            };
            if l.finished {
                return Err(gst::FlowError::Eos);
            }
            l.finished = true;
            l.scorer.as_mut().map(|s| s.finish()).transpose()
        };
        let tail = tail.map_err(|e| self.engine_failed(e))?.unwrap_or_default();
        self.ladder_emit(tail)?;
        // Whatever still waits (a frame whose rendition's scores never came) leaves as is.
        loop {
            let next = lock(&self.state)
                .ladder
                .as_mut()
                .and_then(|l| l.out.pop_front());
            let Some(p) = next else { break };
            self.finish_output(p.buffer)?;
        }
        let n = lock(&self.state)
            .ladder
            .as_ref()
            .map_or(0, |l| l.renditions.len());
        for k in 0..n {
            self.ladder_summary(k);
        }
        Err(gst::FlowError::Eos)
    }

    /// Posts rendition `k`'s summary and closes its log (once).
    pub(super) fn ladder_summary(&self, k: usize) {
        let settings = lock(&self.settings).clone();
        let mut state = lock(&self.state);
        let Some(l) = state.ladder.as_mut() else {
            return;
        };
        let geometry = l.geometry;
        let started = l.started;
        let reference_input = joined(l.reference_paths.iter().map(|p| p.name()));
        let reference_scaling = joined(&l.reference_scaled);
        let backend = l
            .scorer
            .as_ref()
            .map_or("cpu", |s| s.backend_name())
            .to_owned();
        let scorer = l.scorer.as_ref().and_then(|s| s.track(k));
        let frames = scorer.map_or(0, |s| s.pool().count());
        let pushed = scorer.map_or(0, |s| s.frames_pushed());
        let metrics = scorer
            .map(|s| outputs::pooled_metrics(s.pool()))
            .unwrap_or_default();
        let empty = crate::engine::Pool::new(Vec::<String>::new().into());
        let pool = scorer.map(|s| s.pool().clone()).unwrap_or(empty);
        let Some(r) = l.renditions.get_mut(k) else {
            return;
        };
        if r.done {
            return;
        }
        r.done = true;
        let out_of_order = {
            let o = lock(&self.order);
            (o.count("reference"), o.count(&r.name))
        };
        let summary = SummaryMessage {
            frames,
            unpaired_reference: r.unpaired_reference,
            unpaired_distorted: r.unpaired_distorted,
            out_of_order_reference: out_of_order.0,
            out_of_order_distorted: out_of_order.1,
            backend,
            model: settings.model.clone(),
            reference_input,
            distorted_input: joined(r.paths.iter().map(|p| p.name())),
            metrics,
            skipped: 0,
            late: 0,
            scored_width: geometry.map_or(0, |(w, _, _)| w),
            scored_height: geometry.map_or(0, |(_, h, _)| h),
            reference_scaling,
            distorted_scaling: joined(&r.scaled),
            reference_range: r.ranges.fields().0,
            distorted_range: r.ranges.fields().1,
            range_conversion: r.ranges.fields().2,
            pad: Some(r.name.clone()),
            label: Some(r.label_or_name()),
        };
        let structure = summary.to_structure();
        let (w, h) = geometry.map(|(w, h, _)| (w, h)).unwrap_or((0, 0));
        let fps = started
            .map(|t| pushed as f64 / t.elapsed().as_secs_f64().max(1e-9))
            .unwrap_or(0.0);
        let log_result = r.log.take().map(|log| log.finish(&pool, fps, w, h));
        let name = r.name.clone();
        drop(state);
        if let Some(Err(e)) = log_result {
            gst::element_imp_error!(self, gst::ResourceError::Write, ("{}", e));
        }
        let unpaired = summary.unpaired_reference + summary.unpaired_distorted;
        if unpaired > 0 {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Failed,
                (
                    "{}: {} reference and {} distorted frames had no partner and were not scored",
                    name,
                    summary.unpaired_reference,
                    summary.unpaired_distorted
                ),
                ["The rendition ended early, stalled, or its timestamps do not line up with the reference's; {} pairs were scored.", frames]
            );
        }
        let obj = self.obj();
        let _ = obj.post_message(gst::message::Element::builder(structure).src(&*obj).build());
    }

    /// A flushing seek in ladder mode: every rendition restarts (indices, motion, pooling),
    /// waiting reference buffers are dropped and the logs are opened again.
    pub(super) fn ladder_flush(&self) -> Result<(), gst::FlowError> {
        let mut state = lock(&self.state);
        let Some(l) = state.ladder.as_mut() else {
            return Ok(());
        };
        if let Some(s) = l.scorer.as_mut() {
            s.reset();
        }
        l.out.clear();
        l.finished = false;
        l.started = None;
        let names: Vec<(usize, String, bool)> = l
            .renditions
            .iter()
            .enumerate()
            .map(|(k, r)| (k, r.pad.label_or_name(), r.log.is_some()))
            .collect();
        for r in &mut l.renditions {
            r.unpaired_distorted = 0;
            r.unpaired_reference = 0;
            r.done = false;
        }
        drop(state);
        for (k, name, had_log) in names {
            if !had_log {
                continue;
            }
            match self.open_log_named(Some(&name)) {
                Ok(log) => {
                    if let Some(r) = lock(&self.state)
                        .ladder
                        .as_mut()
                        .and_then(|l| l.renditions.get_mut(k))
                    {
                        r.log = log;
                    }
                }
                Err(e) => {
                    self.post_error_message(e);
                    return Err(gst::FlowError::Error);
                }
            }
        }
        Ok(())
    }

    /// A rendition's pad is released while the element runs: its frames complete, its
    /// summary is posted and its log closed; the other renditions go on. Its slot stays
    /// (no frame comes for it any more).
    pub(super) fn ladder_release_pad(&self, pad: &gst::Pad) {
        let k = {
            let state = lock(&self.state);
            let Some(l) = state.ladder.as_ref() else {
                return;
            };
            match l
                .renditions
                .iter()
                .position(|r| r.pad.upcast_ref::<gst::Pad>() == pad)
            {
                Some(k) => k,
                None => return,
            }
        };
        let done = lock(&self.state)
            .ladder
            .as_mut()
            .and_then(|l| l.scorer.as_mut())
            .map(|s| s.finish_rendition(k))
            .transpose();
        match done {
            Ok(items) => {
                let _ = self.ladder_emit(items.unwrap_or_default());
            }
            Err(e) => {
                let _ = self.engine_failed(e);
            }
        }
        self.ladder_summary(k);
    }
}

impl LadderState {
    /// PAUSED->READY before the end: each open log gets its pooled section and is closed.
    pub(super) fn close_logs(&mut self) {
        let (w, h) = self.geometry.map(|(w, h, _)| (w, h)).unwrap_or((0, 0));
        for (k, r) in self.renditions.iter_mut().enumerate() {
            let Some(log) = r.log.take() else { continue };
            let pool = self
                .scorer
                .as_ref()
                .and_then(|s| s.track(k))
                .map(|s| s.pool().clone())
                .unwrap_or_else(|| crate::engine::Pool::new(Vec::<String>::new().into()));
            if let Err(e) = log.finish(&pool, 0.0, w, h) {
                gst::warning!(CAT, "cannot close the log of {}: {e}", r.name);
            }
        }
    }
}
