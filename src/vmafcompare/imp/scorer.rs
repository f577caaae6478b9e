//! The scorer for the negotiated caps: one for the reference and every rendition (a pair: one),
//! its plan, the scalers that bring each pad to the scoring size, the range conversions, and
//! its backend (CUDA when the element holds a GPU, else the CPU), made again when a pad's size
//! or range changes.

use std::sync::Arc;

use gst::subclass::prelude::*;

use super::caps::{chroma_size, FrameFormat, PadVideo};
use super::range::RangeNotes;
use super::session::{Session, Tag};
use super::util::{joined, lock, CAT};
use super::{range, rendition, VmafCompare};
use crate::cuda::GpuDevice;
use crate::engine::scale::range::{ColourRange, RangeConversion, RangeDecision};
use crate::engine::scale::{InputScaling, ScaleError, ScaleMethod, Scaling, Siting, StreamScaler};
use crate::engine::{Backend, CpuBackend, CudaBackend, Geometry, ScorePlan, Scored, Scorer};
use crate::vmafcompare::{VmafBackend, VmafScaleMethod};

impl VmafCompare {
    /// Makes (or remakes, after a pad's size or range changed) the scorer for the reference's
    /// and every rendition's caps (a rendition whose caps are not known yet is sized as the
    /// reference until they come). Returns the frames a backend switch completed.
    pub(super) fn ensure_scorer(
        &self,
        state: &mut Session,
    ) -> Result<Vec<(usize, Scored<Tag>)>, gst::FlowError> {
        // Caps are borrowed until the scorer must be made again: on most frames it is
        // current, and nothing is cloned.
        let Some(r) = state.reference.as_ref() else {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("buffers arrived before caps")
            );
            return Err(gst::FlowError::NotNegotiated);
        };
        let ladder = state.ladder;
        let videos: Vec<&PadVideo> = state
            .renditions
            .iter()
            .map(|x| x.video.as_ref().unwrap_or(r))
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
            let off = state
                .renditions
                .iter()
                .zip(&videos)
                .find(|(_, v)| v.size() != (w, h))
                .or_else(|| {
                    (r.size() != (w, h))
                        .then(|| state.renditions.iter().zip(&videos).next())
                        .flatten()
                });
            if let Some((x, v)) = off {
                let (dw, dh) = v.size();
                let pads = if ladder { "every pad" } else { "both pads" };
                let whom = if ladder {
                    "each rendition"
                } else {
                    "the distorted stream"
                };
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    (
                        "reference is {}x{} but {} is {}x{} and scale-method=none: {} must \
                         carry the {}x{} scoring size",
                        rw, rh, x.name, dw, dh, pads, w, h
                    ),
                    ["Set scale-method=bicubic (the default) to scale {} to the reference's size.", whom]
                );
                return Err(gst::FlowError::NotNegotiated);
            }
        }
        let bpc = videos.iter().map(|v| v.depth).fold(r.depth, u32::max);
        let mut sizes = vec![r.size()];
        sizes.extend(videos.iter().map(|v| v.size()));
        let decisions: Vec<_> = videos.iter().map(|v| range::decide(r, v, (w, h))).collect();
        let conversions: Vec<_> = decisions
            .iter()
            .map(|d| [d.reference, d.distorted])
            .collect();
        if state.geometry == Some((w, h, bpc))
            && state.sizes == sizes
            && state.conversions == conversions
            && state.scorer.is_some()
        {
            return Ok(Vec::new());
        }
        let r = r.clone();
        let videos: Vec<PadVideo> = videos.into_iter().cloned().collect();
        let (models, features, gpu) = self.loaded_for((w, h))?;
        let has_chroma = |v: &PadVideo| v.info.format_info().n_components() >= 3;
        let plan = match state.scorer.as_ref() {
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
        if let Err(why) = range::one_reference_range(&decisions, &state.renditions) {
            gst::element_imp_error!(
                self,
                gst::CoreError::Negotiation,
                ("{}", why),
                ["Score these renditions in separate vmafcompare elements."]
            );
            return Err(gst::FlowError::NotNegotiated);
        }
        // A pair's errors read as before (no pad named); a ladder's name the rendition.
        let named = |x: &rendition::Rendition, text: String| -> String {
            if ladder {
                format!("{}: {text}", x.name)
            } else {
                text
            }
        };
        let mut scaling = Scaling::default();
        let mut frame0 = None;
        for ((x, v), rd) in state.renditions.iter().zip(&videos).zip(&decisions) {
            let mut frame = FrameFormat::of(&r, v, (w as usize, h as usize));
            // SSIMULACRA2 reads the frames in the range they are scored in.
            frame.colour.full_range = rd.target == ColourRange::Full;
            if let Some(why) = frame.chroma_mismatch(&plan.features) {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("{}", named(x, why)),
                    ["Convert one stream to the other's format (videoconvert), or leave psnr and ssimulacra2 out of features."]
                );
                return Err(gst::FlowError::NotNegotiated);
            }
            // A metric that reads chroma needs it at one subsampling (the luma-only ones, such
            // as float_ssim, score streams of any).
            if plan.layout().reads_chroma() && frame.chroma.is_none() {
                gst::element_imp_error!(
                    self,
                    gst::CoreError::Negotiation,
                    ("{}", named(x, "the selected metrics read chroma, which must have the reference's subsampling".into())),
                    ["Convert the distorted stream to the reference's format (videoconvert)."]
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
                        ("{}", named(x, e.to_string())),
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
        if state.scorer.is_none() {
            for v in &videos {
                self.warn_mismatched_streams(&r, v);
            }
        }
        let reference_report = describe_scaling(scaling.reference.as_deref());
        state.reference_scaled.insert(reference_report.clone());
        let reference_scaled = joined(&state.reference_scaled);
        for (k, ((x, s), (rd, v))) in state
            .renditions
            .iter_mut()
            .zip(&scaling.renditions)
            .zip(decisions.iter().zip(&videos))
            .enumerate()
        {
            let report = describe_scaling(s.as_deref());
            if s.is_some() || scaling.reference.is_some() || (w, h) != (rw, rh) {
                gst::info!(
                    CAT,
                    imp = self,
                    "scoring at {w}x{h}: reference {reference_report}, {} {report}",
                    x.name
                );
            }
            x.scaled.insert(report);
            // The reference's conversion (the same for all) is warned about once.
            let ranges = (r.range.range, v.range.range);
            self.report_ranges(&mut x.ranges, rd, ranges, (&x.name, k == 0));
            let Some(log) = x.log.as_mut() else { continue };
            if plan.layout().has("ssimulacra2") {
                log.note("ssimulacra2_yuv_to_rgb", frame.colour.to_string());
            }
            x.ranges.note(log);
            if s.is_some() || scaling.reference.is_some() {
                log.note("scored_size", format!("{w}x{h}"));
                log.note("reference_scaling", reference_scaled.clone());
                log.note("distorted_scaling", joined(&x.scaled));
            }
        }
        let backend =
            self.make_backend(gpu.as_deref(), &plan, (w, h, bpc), &frame, scaling.clone())?;
        state.geometry = Some((w, h, bpc));
        state.sizes = sizes;
        state.conversions = conversions;
        state.scaling = scaling;
        state.frame = Some(frame);
        match state.scorer.as_mut() {
            Some(s) => s
                .replace_backend(backend)
                .map_err(|e| self.engine_failed(e)),
            None => {
                let subsample = lock(&self.settings).subsample;
                state.scorer = Some(Scorer::with_plan(backend, plan, subsample));
                Ok(Vec::new())
            }
        }
    }

    /// Warns about pads that will be scored although they do not show the same pictures at
    /// the same rate: another frame rate (pairs are made by running time, frames without a
    /// partner are counted as unpaired) or another display aspect ratio (the distorted picture
    /// is stretched to the scoring size, as `ffmpeg scale=W:H` does).
    pub(super) fn warn_mismatched_streams(&self, r: &PadVideo, d: &PadVideo) {
        let (rf, df) = (r.info.fps(), d.info.fps());
        if rf.numer() > 0 && df.numer() > 0 && rf != df {
            gst::element_imp_warning!(
                self,
                gst::StreamError::Format,
                (
                    "reference is {}/{} fps but distorted is {}/{} fps: frames are paired by \
                     running time and those without a partner are not scored",
                    rf.numer(),
                    rf.denom(),
                    df.numer(),
                    df.denom()
                ),
                ["Put videorate before the distorted pad to score every reference frame against the distorted frame shown at its time."]
            );
        }
        let dar = |v: &PadVideo| {
            let par = v.info.par();
            let (w, h) = v.size();
            let (n, dn) = (par.numer().max(1) as f64, par.denom().max(1) as f64);
            f64::from(w) * n / (f64::from(h) * dn)
        };
        let (ra, da) = (dar(r), dar(d));
        if (ra / da - 1.0).abs() > 0.01 {
            let (rw, rh) = r.size();
            let (dw, dh) = d.size();
            gst::element_imp_warning!(
                self,
                gst::StreamError::Format,
                (
                    "display aspect ratios differ: reference {}x{} is {:.3}:1, distorted {}x{} \
                     is {:.3}:1; the distorted picture is stretched to the scoring size",
                    rw,
                    rh,
                    ra,
                    dw,
                    dh,
                    da
                ),
                ["Crop or pad the distorted stream to the reference's picture if it was letterboxed or cropped."]
            );
        }
    }

    /// `made` (a CUDA backend) as the element's backend. When it could not be made: with
    /// `backend=cuda` an element error (`Err`); otherwise a warning and `Ok(None)`, and the
    /// caller scores on the CPU.
    pub(super) fn gpu_backend(
        &self,
        made: Result<CudaBackend, crate::cuda::CudaError>,
    ) -> Result<Option<Box<dyn Backend>>, gst::FlowError> {
        match made {
            Ok(b) => Ok(Some(Box::new(b))),
            Err(e) if lock(&self.settings).backend == VmafBackend::Cuda => {
                gst::element_imp_error!(self, gst::ResourceError::Failed, ("CUDA backend: {}", e));
                Err(gst::FlowError::Error)
            }
            Err(e) => {
                gst::element_imp_warning!(
                    self,
                    gst::ResourceError::Failed,
                    ("CUDA backend failed ({}): scoring on the CPU", e)
                );
                Ok(None)
            }
        }
    }

    /// The backend for the renditions of `scaling` (one scaler slot each) at one geometry:
    /// the GPU when the element holds one (with `backend=auto`, a GPU failure falls back to
    /// the CPU with a warning), else the CPU (on the element's pool). One rendition keeps the
    /// backends' pair strategy (the CPU's per-feature fan-out, the CUDA pair kernels), a
    /// choice the backends make.
    pub(super) fn make_backend(
        &self,
        gpu: Option<&GpuDevice>,
        plan: &ScorePlan,
        (w, h, bpc): (u32, u32, u32),
        frame: &FrameFormat,
        scaling: Scaling,
    ) -> Result<Box<dyn Backend>, gst::FlowError> {
        let n = scaling.renditions.len();
        if plan.layout().has("ssimulacra2") {
            gst::info!(
                CAT,
                imp = self,
                "ssimulacra2: YUV -> RGB with {}",
                frame.colour
            );
        }
        let what = if n == 1 {
            format!("{w}x{h} at {bpc} bits")
        } else {
            format!("a ladder of {n} at {w}x{h}, {bpc} bits,")
        };
        if let Some(dev) = gpu {
            let geometry = scoring_geometry(plan, (w, h, bpc), frame);
            let made = CudaBackend::new_scaled(dev, plan.layout(), geometry, scaling.clone());
            if let Some(b) = self.gpu_backend(made)? {
                gst::info!(CAT, imp = self, "scoring {what} on the GPU");
                return Ok(b);
            }
        }
        match self.cpu_backend_for(plan, (w, h, bpc), frame, scaling) {
            Ok(b) => {
                gst::info!(CAT, imp = self, "scoring {what} on the CPU");
                Ok(b)
            }
            Err(e) => {
                gst::element_imp_error!(self, gst::StreamError::Format, ("{}", e));
                Err(gst::FlowError::NotNegotiated)
            }
        }
    }

    /// The CPU backend for the renditions of `scaling` computing everything `plan` asks for,
    /// on the element's pool when it has one.
    pub(super) fn cpu_backend_for(
        &self,
        plan: &ScorePlan,
        (w, h, bpc): (u32, u32, u32),
        frame: &FrameFormat,
        scaling: Scaling,
    ) -> Result<Box<dyn Backend>, crate::engine::FeatureError> {
        let geometry = scoring_geometry(plan, (w, h, bpc), frame);
        let pool = lock(&self.prepared)
            .as_ref()
            .and_then(|p| p.cpu_pool.clone());
        let b = CpuBackend::scaled(plan.layout(), geometry, scaling)?;
        Ok(match pool {
            Some(pool) => Box::new(b.with_pool(pool)),
            None => Box::new(b),
        })
    }
}

/// The scalers that bring each pad's frames to the scoring size `(w, h)` (`None` for a pad at
/// it): luma, and chroma when `chroma` (a metric reads it) and both formats have chroma of
/// one subsampling. Chroma is sited as FFmpeg's `scale` filter sites it (swscale's default,
/// centred), whatever the caps' `chroma-site`: that is what `ffmpeg scale + libvmaf` users get.
///
/// A pad in `conversions` (`[reference, distorted]`) is converted to the other colour range
/// in the same pass; one at the scoring size gets one-tap filters for it (swscale's generic
/// path, as FFmpeg's auto-inserted `scale` runs it).
///
/// Errors: a ratio one scaling pass cannot do ([`ScaleError`]).
pub(super) fn input_scaling(
    method: ScaleMethod,
    pads: [&PadVideo; 2],
    (w, h): (u32, u32),
    frame: &FrameFormat,
    (chroma, conversions): (bool, [Option<RangeConversion>; 2]),
) -> Result<InputScaling, ScaleError> {
    let dst = (w as usize, h as usize);
    let mut out = [None, None];
    for (i, pad) in pads.into_iter().enumerate() {
        let (pw, ph) = pad.size();
        let src = (pw as usize, ph as usize);
        if src == dst && conversions[i].is_none() {
            continue;
        }
        // Same size: one-tap filters, whatever the method (`none` included).
        let method = if src == dst {
            ScaleMethod::Bicubic
        } else {
            method
        };
        let chroma_scaler = match (frame.chroma.filter(|_| chroma), frame.subsampling[i]) {
            (Some(dst_c), Some(sub)) => Some((
                chroma_size(src, sub),
                dst_c,
                Siting {
                    h_sub: sub.0,
                    v_sub: sub.1,
                    h_pos: None,
                    v_pos: None,
                    chroma: true,
                },
            )),
            _ => None,
        };
        out[i] = Some(Arc::new(
            StreamScaler::new(method, src, dst, chroma_scaler)?.with_range(conversions[i]),
        ));
    }
    let [reference, distorted] = out;
    Ok(InputScaling {
        reference,
        distorted,
    })
}

/// How a stream reaches the scoring size, for the summary and the log: `none`, or
/// `METHOD WxH->WxH`.
pub(super) fn describe_scaling(s: Option<&StreamScaler>) -> String {
    match s.filter(|s| s.resizes()) {
        None => "none".to_owned(),
        Some(s) => {
            let ((sw, sh), (dw, dh)) = (s.luma.src(), s.luma.dst());
            format!("{} {sw}x{sh}->{dw}x{dh}", s.method)
        }
    }
}

/// The backends' geometry for frames of `w`x`h` at `bpc` bits in `frame`'s format: chroma
/// only when a metric of `plan` reads it.
pub(super) fn scoring_geometry(
    plan: &ScorePlan,
    (w, h, bpc): (u32, u32, u32),
    frame: &FrameFormat,
) -> Geometry {
    Geometry {
        chroma: frame.chroma.filter(|_| plan.chroma),
        colour: frame.colour,
        ..Geometry::luma(w as usize, h as usize, bpc)
    }
}

impl VmafCompare {
    /// Records `d` in `notes` and posts one element warning per stream converted for the
    /// first time (`pad`: the distorted pad's name).
    pub(super) fn report_ranges(
        &self,
        notes: &mut RangeNotes,
        d: &RangeDecision,
        ranges: (ColourRange, ColourRange),
        (pad, warn_reference): (&str, bool),
    ) {
        gst::info!(
            CAT,
            imp = self,
            "{pad}: reference {} range, distorted {} range, conversion: {}",
            ranges.0,
            ranges.1,
            d.describe()
        );
        for warning in notes.record(d, ranges, (pad, warn_reference)) {
            gst::element_imp_warning!(self, gst::StreamError::Format, ("{}", warning));
        }
    }
}
