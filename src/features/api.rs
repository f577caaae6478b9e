//! What the registry and every metric share: the [`Feature`] and [`Instance`] traits a metric
//! implements, the frames its halves read ([`HostFrame`], [`DevFrame`]), the halves' traits
//! ([`CpuExtractor`], [`CudaExtractor`]) and the small helpers of output names. It names no
//! metric, so the metrics import it and never the registry (`registry.rs`).

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaStream, CudaViewMut};

use super::options::Options;
use crate::cuda::{ChromaDev, CudaError, DevPlane, GpuDevice};
use crate::video::colour::YuvToRgb;
use crate::video::frame::{ChromaPair, FeatureError, LumaPlane};

/// Where a feature's outputs go in the log, which keeps libvmaf 3.2.0's key order: PSNR first,
/// then the VMAF features of each extractor's first option set (ADM, motion, VIF), their
/// further option sets, then the other metrics; values that need the next frame
/// ([`Instance::late_outputs`], e.g. `integer_motion2`) come after all of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Section {
    /// Before VMAF's features (`psnr_y`, ...).
    Leading,
    /// VMAF's own features: the first option set here, further sets after every first set.
    Core,
    /// After VMAF's features (`float_ssim`, `ssimulacra2`, ...).
    Trailing,
}

/// What a feature reads besides the two luma planes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Needs {
    /// The Cb and Cr planes of both frames (`psnr_cb`, SSIMULACRA2's RGB).
    pub chroma: bool,
    /// The previous frame's reference luma (motion) and, unless `reference_only`, its
    /// distorted luma too (`speed_temporal`); computed on every frame, subsampled or not. An
    /// instance reading the previous distorted frame is not scored in a ladder.
    pub previous: bool,
    /// Reads the reference frames only, never the distorted one (motion): in a ladder (one
    /// reference, several renditions) it is computed once per reference frame and its values
    /// are given to every rendition.
    pub reference_only: bool,
}

/// The frames a stream's features are computed on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Geometry {
    /// Luma width in samples.
    pub width: usize,
    /// Luma height in rows.
    pub height: usize,
    /// Bits per sample, 8..=16.
    pub bpc: u32,
    /// Chroma plane size (`None` for grey formats, or when no feature reads chroma).
    pub chroma: Option<(usize, usize)>,
    /// The YUV -> RGB conversion of the caps' colorimetry (SSIMULACRA2).
    pub colour: YuvToRgb,
}

impl Geometry {
    /// Luma only, default colour.
    pub fn luma(width: usize, height: usize, bpc: u32) -> Self {
        Self {
            width,
            height,
            bpc,
            chroma: None,
            colour: YuvToRgb::default(),
        }
    }

    /// `(width, height, bpc)`.
    pub fn triple(&self) -> (usize, usize, u32) {
        (self.width, self.height, self.bpc)
    }
}

/// A metric as the registry knows it: its name, options and libvmaf names. Stateless; a
/// configured [`Instance`] computes.
pub trait Feature: Sync + fmt::Debug {
    /// libvmaf's extractor name, also the name the `features` property takes (`"psnr"`,
    /// `"vif"`, `"float_ssim"`, ...).
    fn name(&self) -> &'static str;
    /// Where its outputs go in a log.
    fn section(&self) -> Section;
    /// Whether it reads the chroma planes when the frames have them (`psnr_cb`,
    /// SSIMULACRA2's RGB); both pads must then carry the same chroma layout.
    fn reads_chroma(&self) -> bool {
        false
    }
    /// Whether `key` (a libvmaf option name from a model's `feature_opts_dicts`, e.g.
    /// `vif_enhn_gain_limit`) is one of this feature's options.
    fn accepts(&self, key: &str) -> bool {
        let _ = key;
        false
    }
    /// The output (unsuffixed libvmaf name, e.g. `integer_vif_scale0`) a model's feature name
    /// (`VMAF_integer_feature_vif_scale0_score`) stands for, if this feature computes it.
    fn model_output(&self, model_name: &str) -> Option<String> {
        let _ = model_name;
        None
    }
    /// An instance with `options` (only keys this feature [`accepts`](Feature::accepts));
    /// `chroma`: the stream's frames have chroma planes (whether `psnr_cb`/`psnr_cr` exist).
    ///
    /// Errors: a text naming the option and its valid range.
    fn configure(&self, options: &Options, chroma: bool) -> Result<Arc<dyn Instance>, String>;
}

/// A feature with its options: the outputs it names and the extractors that compute them.
pub trait Instance: Send + Sync + fmt::Debug {
    /// The registered feature.
    fn feature(&self) -> &'static dyn Feature;
    /// libvmaf's option suffix of the output names (`""`, `"_egl_1"`); two instances of one
    /// feature with equal keys compute the same values.
    fn key(&self) -> String;
    /// One instance computing both this one's outputs and `other`'s, when the two share
    /// their work (`float_ssim` and `float_ms_ssim` share their kernels); `None` (the
    /// default) when they are computed apart.
    fn absorb(&self, other: &dyn Instance) -> Option<Arc<dyn Instance>> {
        let _ = other;
        None
    }
    /// What it reads besides the luma planes.
    fn needs(&self) -> Needs {
        Needs::default()
    }
    /// Names of the values the extractors produce per frame, libvmaf's, suffixed by
    /// [`Instance::key`]; each also an output of the log.
    fn outputs(&self) -> Vec<String>;
    /// Names of the values [`Instance::finish`] derives once the neighbouring frames are in
    /// (`integer_motion2`, ...); empty for most features.
    fn late_outputs(&self) -> Vec<String> {
        Vec::new()
    }
    /// How many frames before and after a frame [`Instance::finish`] reads (at most
    /// [`MAX_BEHIND`] and [`MAX_AHEAD`]): `(0, 1)` by default, libvmaf's three-frame motion;
    /// `(2, 2)` for the five-frame HFR motion with its moving average.
    fn window(&self) -> (usize, usize) {
        (0, 1)
    }
    /// libvmaf's `flush`: the late outputs of a frame from the values of the frames around it
    /// in its run ([`Window`]). Writes `late_outputs().len()` values into `out`.
    fn finish(&self, window: &Window, out: &mut [f64]) {
        let _ = (window, out);
    }
    /// The smallest luma plane (width, height) it accepts.
    fn min_size(&self) -> (usize, usize) {
        (1, 1)
    }
    /// Checks that frames of `geometry` can be scored: at least [`Instance::min_size`], `bpc`
    /// in `8..=16`.
    ///
    /// Errors: [`FeatureError::FrameTooSmall`] (or another geometry error) saying what the
    /// feature needs.
    fn check(&self, geometry: &Geometry) -> Result<(), FeatureError> {
        FeatureError::check_new(self.feature().name(), geometry.triple(), self.min_size())
    }
    /// The CPU half for `geometry`, its scratch allocated here.
    ///
    /// Errors: as [`Instance::check`].
    fn cpu(&self, geometry: &Geometry) -> Result<Box<dyn CpuExtractor>, FeatureError>;
    /// The CUDA half for `geometry` on `dev`: kernels, device scratch (stream-ordered
    /// allocations on `stream`) and pinned memory, all allocated here.
    ///
    /// Errors: [`CudaError`] from the allocations, or a geometry error.
    fn cuda(
        &self,
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        geometry: &Geometry,
    ) -> Result<Box<dyn CudaExtractor>, CudaError>;
}

/// One frame pair as the CPU half reads it.
#[derive(Clone, Copy)]
pub struct HostFrame<'f, 'a> {
    /// Reference luma.
    pub reference: &'f LumaPlane<'a>,
    /// Distorted luma.
    pub distorted: &'f LumaPlane<'a>,
    /// The previous frame's reference luma (`None` for the first frame of a run).
    pub previous: Option<&'f LumaPlane<'a>>,
    /// The previous frame's distorted luma, at the scoring size (`None` for the first frame
    /// of a run, and unless an instance reads it: [`Needs::previous`] without
    /// [`Needs::reference_only`]; always `None` in a ladder).
    pub previous_distorted: Option<&'f LumaPlane<'a>>,
    /// The reference luma two frames back (`None` for the first two frames of a run): the
    /// five-frame HFR motion.
    pub previous2: Option<&'f LumaPlane<'a>>,
    /// Both frames' chroma planes, when a feature reads them and the format has them.
    pub chroma: Option<&'f ChromaPair<'a>>,
}

/// A ladder's frames ([`CpuExtractor::extract_ladder`]) as the shared reference luma (the
/// first frame's: every frame has the same) and each frame's distorted luma, in order; `None`
/// when there are no frames.
pub fn ladder_lumas<'f, 'a>(
    frames: &[HostFrame<'f, 'a>],
) -> Option<(&'f LumaPlane<'a>, Vec<&'f LumaPlane<'a>>)> {
    let first = frames.first()?;
    Some((
        first.reference,
        frames.iter().map(|f| f.distorted).collect(),
    ))
}

/// Most frames before one that [`Instance::finish`] reads ([`Instance::window`]).
pub const MAX_BEHIND: usize = 2;
/// Most frames after one that [`Instance::finish`] reads ([`Instance::window`]).
pub const MAX_AHEAD: usize = 2;

/// One instance's values around a frame, for [`Instance::finish`]: the frame's own, and those
/// of the frames before and after it in the same run (a run starts at the first frame of a
/// stream and after frames a live pipeline left out). Every frame of a run is in, whether
/// subsampled or not.
#[derive(Debug, Clone, Copy)]
pub struct Window<'a> {
    /// The frame's position in its run (0: the first frame).
    pub position: u64,
    /// This frame's values ([`Instance::outputs`] order).
    pub current: &'a [f64],
    /// The frames before it, nearest first; at most [`Instance::window`]'s first number, fewer
    /// near the start of the run.
    pub behind: &'a [&'a [f64]],
    /// The frames after it, nearest first; at most [`Instance::window`]'s second number, fewer
    /// at the end of the run (the end of the stream, or a gap).
    pub ahead: &'a [&'a [f64]],
}

impl Window<'_> {
    /// Output `k` of the frame `offset` frames away (negative: before), `None` outside the
    /// window or the run.
    pub fn value(&self, offset: i64, k: usize) -> Option<f64> {
        let frame = match offset {
            0 => Some(self.current),
            o if o < 0 => self.behind.get((-o - 1) as usize).copied(),
            o => self.ahead.get((o - 1) as usize).copied(),
        };
        frame.and_then(|f| f.get(k).copied())
    }
}

/// The CPU half of an instance: its scratch, sized for one geometry (libvmaf's `init`).
pub trait CpuExtractor: Send {
    /// libvmaf's `extract`: writes the instance's [`Instance::outputs`] for one frame pair
    /// into `out` (exactly that many values).
    ///
    /// Errors: planes of another geometry.
    fn extract(&mut self, frame: &HostFrame, out: &mut [f64]) -> Result<(), FeatureError>;

    /// `extract` for a ladder: one reference frame and several distorted frames (renditions
    /// at the scoring size). Every frame of `frames` has the same `reference`, `previous` and
    /// `previous2` planes (and the same reference chroma); they differ in `distorted` and in
    /// the distorted half of `chroma`. Writes frame `i`'s outputs into `outs[i]`, each
    /// bit-identical to what [`CpuExtractor::extract`] gives for that frame alone.
    ///
    /// The default extracts the frames one after the other; an extractor with work that
    /// depends on the reference alone (VIF's reference statistics, ADM's reference
    /// decomposition) overrides it to do that work once.
    ///
    /// Errors: as [`CpuExtractor::extract`].
    fn extract_ladder(
        &mut self,
        frames: &[HostFrame],
        outs: &mut [&mut [f64]],
    ) -> Result<(), FeatureError> {
        for (f, out) in frames.iter().zip(outs.iter_mut()) {
            self.extract(f, out)?;
        }
        Ok(())
    }
}

/// Runs `enqueue` over a ladder's frames ([`CudaExtractor::enqueue_ladder`]) `N` at a time:
/// with the shared reference luma (the first frame's), the group's distorted lumas (copied
/// into an array on the stack, no allocation per frame) and the group's outputs.
///
/// Errors: the first of `enqueue`.
pub fn for_ladder_groups<const N: usize>(
    frames: &[DevFrame],
    outs: &mut [CudaViewMut<u64>],
    mut enqueue: impl FnMut(DevPlane, &[DevPlane], &mut [CudaViewMut<u64>]) -> Result<(), CudaError>,
) -> Result<(), CudaError> {
    let Some(first) = frames.first() else {
        return Ok(());
    };
    let mut distorted = [DevPlane::default(); N];
    for (group, outs) in frames.chunks(N).zip(outs.chunks_mut(N)) {
        for (d, f) in distorted.iter_mut().zip(group) {
            *d = f.distorted;
        }
        enqueue(first.reference, &distorted[..group.len()], outs)?;
    }
    Ok(())
}

/// One frame pair as the CUDA half reads it: descriptors of planes in device memory.
#[derive(Clone, Copy)]
pub struct DevFrame<'a> {
    /// Reference luma.
    pub reference: DevPlane,
    /// Distorted luma.
    pub distorted: DevPlane,
    /// The previous frame's reference luma, valid until this frame's kernels finish.
    pub previous: Option<DevPlane>,
    /// The previous frame's distorted luma at the scoring size, valid until this frame's
    /// kernels finish (`None` as [`HostFrame::previous_distorted`]).
    pub previous_distorted: Option<DevPlane>,
    /// Both frames' chroma, unpacked (when a feature reads it and the format has it).
    pub chroma: Option<&'a ChromaDev>,
}

/// The CUDA half of an instance: kernels and device scratch for one geometry.
///
/// Kernels write `result_words()` 64-bit words per frame into device memory the backend owns
/// and reads back; [`CudaExtractor::read`] turns them into values on the host.
pub trait CudaExtractor: Send {
    /// Result words per frame.
    fn result_words(&self) -> usize;
    /// Whether the backend gives it a stream of its own, beside the compute stream (metrics
    /// whose kernels leave most of the GPU idle: latency-bound recursions and reductions).
    fn side_stream(&self) -> bool {
        false
    }
    /// With [`CudaExtractor::side_stream`]: whether that stream gets the device's greatest
    /// priority (`cuStreamCreateWithPriority`), for a long chain of launches of a few blocks
    /// each: its blocks then start as soon as a multiprocessor frees up instead of waiting
    /// behind the wide grids of the other streams, so the chain runs beside them.
    fn high_priority(&self) -> bool {
        false
    }
    /// Enqueues one frame's kernels on `stream`, writing `out` (`result_words()` words).
    ///
    /// Errors: [`CudaError`] from a launch or copy.
    fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        frame: &DevFrame,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError>;
    /// Allocates what [`CudaExtractor::enqueue_ladder`] needs beyond a pair's scratch for a
    /// ladder of `renditions` renditions (e.g. ADM's reference bands of every scale, and each
    /// rendition's share of the scratch that VIF's and ADM's batched launches use, grid z =
    /// rendition), on `stream`; called once by a ladder backend when it is made, so
    /// that no ladder frame allocates. The default needs nothing.
    ///
    /// Errors: [`CudaError`] from the allocations.
    fn prepare_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        renditions: usize,
    ) -> Result<(), CudaError> {
        let _ = (stream, renditions);
        Ok(())
    }
    /// `enqueue` for a ladder: one reference frame and several distorted frames (renditions
    /// at the scoring size), frame `i`'s words into `outs[i]`. Every frame of `frames` has the
    /// same `reference` and `previous` planes (and the same reference chroma); they differ in
    /// `distorted` and in the distorted half of `chroma`. The words of each frame must read
    /// back ([`CudaExtractor::read`]) to the values [`CudaExtractor::enqueue`] gives for that
    /// frame alone, bit for bit.
    ///
    /// `outs` arrive zeroed: the ladder backend zeroes all of a frame's result words with
    /// one memset before any instance runs (a memset per rendition and instance cost about
    /// as much CPU as a launch), so an override may add to them without zeroing them.
    ///
    /// The default enqueues the frames one after the other; an extractor with work that
    /// depends on the reference alone overrides it to do that work once per call.
    ///
    /// Errors: as [`CudaExtractor::enqueue`].
    fn enqueue_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        frames: &[DevFrame],
        outs: &mut [CudaViewMut<u64>],
    ) -> Result<(), CudaError> {
        for (f, out) in frames.iter().zip(outs.iter_mut()) {
            self.enqueue(stream, f, out)?;
        }
        Ok(())
    }
    /// The instance's outputs from the read-back `words`; `chroma`: whether this frame's
    /// chroma was given to [`CudaExtractor::enqueue`]. Writes `outputs().len()` values.
    fn read(&self, words: &[u64], chroma: bool, out: &mut [f64]);
}

/// `_egl_<limit>` for an enhancement gain limit other than libvmaf's default 100 (libvmaf's
/// option suffix for `vif_enhn_gain_limit` / `adm_enhn_gain_limit`), else empty.
pub(crate) fn gain_suffix(limit: f64) -> String {
    if limit == 100.0 {
        String::new()
    } else {
        format!("_egl_{limit}")
    }
}

/// The `i` in `{prefix}{i}_score` for `i` in `0..n`.
pub(crate) fn indexed(name: &str, prefix: &str, n: usize) -> Option<usize> {
    let rest = name.strip_prefix(prefix)?.strip_suffix("_score")?;
    let i: usize = rest.parse().ok()?;
    (i < n).then_some(i)
}
