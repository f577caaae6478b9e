//! The `vmafcompare` subclass: its struct, which holds the stream's [`Session`] (the reference
//! and its renditions), and the GStreamer vfuncs, each forwarding to the file that does the
//! work.
//!
//! Files under `imp/` are of two kinds. Those that own a type and never name the element
//! (`util`, `caps`, `range`, `settings`, `prepared`, `rendition`, `session`, `live_state`,
//! `order`; `pairing`: frames by running time; `mapping`: buffers to frame inputs; `device`:
//! device picking and context sharing) take the element, where they need it, as a plain
//! `gst::Element` to log on, post from or reach its pads. Those that add the element's
//! behaviour in `impl VmafCompare` blocks (`pads`, `flow`, `push`, `scorer`, `outputs`,
//! `setup`, `properties`, `monitor`) drive the aggregator and the locks; each names in its
//! `use` lines every type and helper it touches. This file imports the first kind only and the
//! second kind imports it, so no two files import each other.

use std::sync::{LazyLock, Mutex};

use gst::glib;
use gst::prelude::*;
use gst::subclass::prelude::*;
use gst_base::prelude::*;
use gst_base::subclass::prelude::*;

use crate::cuda::gst_cuda::CAPS_FEATURE_CUDA_MEMORY;

// Types (imported here).
mod caps;
mod device;
mod live_state;
mod mapping;
mod order;
mod pairing;
mod prepared;
mod range;
mod rendition;
mod session;
mod settings;
mod util;
// Behaviour (`impl VmafCompare`; never imported here).
mod flow;
/// Live monitoring (issue 7): scoring thread, delay and auto-alignment, windows, alerts.
mod monitor;
mod outputs;
mod pads;
mod properties;
mod push;
mod scorer;
mod setup;

use caps::FORMATS;
use prepared::Prepared;
use session::Session;
use settings::Settings;
use util::{is_gap, lock, CAT};

pub struct VmafCompare {
    reference_pad: gst_base::AggregatorPad,
    distorted_pad: gst_base::AggregatorPad,
    settings: Mutex<Settings>,
    prepared: Mutex<Option<Prepared>>,
    state: Mutex<Session>,
    monitor: live_state::Monitor,
    /// Running-time order of each sink pad's frames (repeats and regressions counted).
    order: Mutex<order::TimestampOrder>,
    /// The `GstCudaContext` shared with CUDA neighbours (`gst.cuda.context`), from NULL->READY
    /// to READY->NULL, and the choice of GPU.
    cuda: device::CudaSharing,
}

/// The element's public type (re-exported as `crate::vmafcompare::VmafCompare`), declared
/// beside its implementation: a wrapper and its implementation always name each other.
pub mod element {
    use gst::glib;

    glib::wrapper! {
        /// Scores the `distorted` pad's video (or, with request pads `distorted_%u`, each
        /// rendition of a ladder) against the `reference` pad's with VMAF.
        pub struct VmafCompare(ObjectSubclass<super::VmafCompare>)
            @extends gst_base::Aggregator, gst::Element, gst::Object,
            @implements gst::ChildProxy;
    }
}

#[glib::object_subclass]
impl ObjectSubclass for VmafCompare {
    const NAME: &'static str = "GstVmafCompare";
    type Type = element::VmafCompare;
    type ParentType = gst_base::Aggregator;
    type Interfaces = (gst::ChildProxy,);

    fn with_class(klass: &Self::Class) -> Self {
        let make = |name: &str| {
            let templ = klass.pad_template(name);
            match templ {
                Some(templ) => gst::PadBuilder::<gst_base::AggregatorPad>::from_template(&templ)
                    .name(name)
                    .build(),
                None => gst::PadBuilder::<gst_base::AggregatorPad>::new(gst::PadDirection::Sink)
                    .name(name)
                    .build(),
            }
        };
        Self {
            reference_pad: make("reference"),
            distorted_pad: make("distorted"),
            settings: Mutex::new(Settings::default()),
            prepared: Mutex::new(None),
            state: Mutex::new(Session::default()),
            monitor: live_state::Monitor::default(),
            order: Mutex::new(order::TimestampOrder::default()),
            cuda: device::CudaSharing::default(),
        }
    }
}

impl GstObjectImpl for VmafCompare {}

/// The sink pads as children, so that `gst-launch-1.0` can set a rendition's label:
/// `vmafcompare name=cmp distorted_1::label=720p`.
impl ChildProxyImpl for VmafCompare {
    fn child_by_index(&self, index: u32) -> Option<glib::Object> {
        self.obj()
            .sink_pads()
            .into_iter()
            .nth(index as usize)
            .map(|p| p.upcast())
    }

    fn children_count(&self) -> u32 {
        self.obj().num_sink_pads() as u32
    }

    fn child_by_name(&self, name: &str) -> Option<glib::Object> {
        let obj = self.obj();
        obj.static_pad(name)
            .or_else(|| {
                // gst-launch sets properties before linking: make a rendition pad asked by name.
                let templ = obj.pad_template("distorted_%u")?;
                name.strip_prefix("distorted_")?.parse::<u32>().ok()?;
                obj.request_pad(&templ, Some(name), None)
            })
            .map(|p| p.upcast())
    }
}

impl ElementImpl for VmafCompare {
    fn metadata() -> Option<&'static gst::subclass::ElementMetadata> {
        static META: LazyLock<gst::subclass::ElementMetadata> = LazyLock::new(|| {
            gst::subclass::ElementMetadata::new(
                "VMAF compare",
                "Filter/Analyzer/Video",
                "Scores the distorted stream against the reference stream with VMAF (libvmaf's \
                 integer features and models), posting per-frame and summary messages and \
                 attaching the scores to each output buffer",
                "vmafcompare developers",
            )
        });
        Some(&*META)
    }

    fn pad_templates() -> &'static [gst::PadTemplate] {
        static TEMPLATES: LazyLock<Vec<gst::PadTemplate>> = LazyLock::new(|| {
            // CUDA memory first (read in place), then DMABuf (imported or read back), then
            // system memory: `nvh264dec ! vmafcompare` negotiates CUDA memory unasked.
            let with = |feature: Option<&str>| {
                let b = gst_video::VideoCapsBuilder::new().format_list(FORMATS.iter().copied());
                match feature {
                    Some(f) => b.features([f]).build(),
                    None => b.build(),
                }
            };
            let mut caps = with(Some(CAPS_FEATURE_CUDA_MEMORY));
            {
                let c = caps.make_mut();
                c.append(with(Some(gst_allocators::CAPS_FEATURE_MEMORY_DMABUF)));
                c.append(with(None));
            }
            let mut out = Vec::new();
            let rendition = super::VmafRenditionPad::static_type();
            for (name, dir, presence, gtype) in [
                (
                    "reference",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    gst_base::AggregatorPad::static_type(),
                ),
                (
                    "distorted",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Always,
                    rendition,
                ),
                // A ladder: one request pad per further rendition.
                (
                    "distorted_%u",
                    gst::PadDirection::Sink,
                    gst::PadPresence::Request,
                    rendition,
                ),
                (
                    "src",
                    gst::PadDirection::Src,
                    gst::PadPresence::Always,
                    glib::Type::INVALID,
                ),
            ] {
                let templ = if dir == gst::PadDirection::Sink {
                    gst::PadTemplate::with_gtype(name, dir, presence, &caps, gtype)
                } else {
                    gst::PadTemplate::new(name, dir, presence, &caps)
                };
                match templ {
                    Ok(t) => out.push(t),
                    Err(e) => gst::error!(CAT, "cannot make pad template {name}: {e}"),
                }
            }
            out
        });
        TEMPLATES.as_ref()
    }

    fn change_state(
        &self,
        transition: gst::StateChange,
    ) -> Result<gst::StateChangeSuccess, gst::StateChangeError> {
        if transition == gst::StateChange::NullToReady {
            self.prepare()?;
        }
        let ret = self.parent_change_state(transition)?;
        if transition == gst::StateChange::ReadyToPaused {
            self.end_unlinked_distorted();
        }
        if transition == gst::StateChange::ReadyToNull {
            *lock(&self.prepared) = None;
            self.cuda.clear();
        }
        Ok(ret)
    }

    /// `distorted_%u`: one more rendition of a ladder. Only in NULL or READY: the renditions
    /// are fixed while the element runs (a request then is refused with an error).
    fn request_new_pad(
        &self,
        templ: &gst::PadTemplate,
        name: Option<&str>,
        caps: Option<&gst::Caps>,
    ) -> Option<gst::Pad> {
        let _ = caps;
        let obj = self.obj();
        if obj.current_state() > gst::State::Ready {
            gst::element_imp_error!(
                self,
                gst::CoreError::Pad,
                (
                    "a rendition pad was requested while {} is {:?}: the renditions of a \
                     ladder are fixed from READY->PAUSED on",
                    obj.name(),
                    obj.current_state()
                ),
                ["Request every distorted_%u pad before the pipeline starts (in NULL or READY)."]
            );
            return None;
        }
        let name = match name {
            Some(n) => n.to_owned(),
            None => {
                let taken: Vec<String> = obj
                    .sink_pads()
                    .iter()
                    .map(|p| p.name().to_string())
                    .collect();
                let free = (1..)
                    .find(|i| !taken.contains(&format!("distorted_{i}")))
                    .unwrap_or(1);
                format!("distorted_{free}")
            }
        };
        if obj.static_pad(&name).is_some() {
            gst::warning!(CAT, imp = self, "pad {name} exists already");
            return None;
        }
        let pad = gst::PadBuilder::<super::VmafRenditionPad>::from_template(templ)
            .name(name.as_str())
            .build();
        if let Err(e) = obj.add_pad(&pad) {
            gst::warning!(CAT, imp = self, "cannot add pad {name}: {e}");
            return None;
        }
        gst::debug!(CAT, imp = self, "rendition pad {name} requested");
        Some(pad.upcast())
    }

    /// A rendition's pad goes: while the element runs, that rendition ends cleanly (its
    /// frames complete, its summary is posted, its log closed); the others go on.
    fn release_pad(&self, pad: &gst::Pad) {
        self.end_rendition(pad);
        let _ = self.obj().remove_pad(pad);
    }

    fn set_context(&self, context: &gst::Context) {
        // The opened device's context only; before NULL->READY, the setting's (-1: any).
        let device_id = match self.active_device_id() {
            -1 => lock(&self.settings).device_id,
            open => open,
        };
        self.cuda
            .set_context(self.obj().upcast_ref(), context, device_id);
        self.parent_set_context(context)
    }
}

impl AggregatorImpl for VmafCompare {
    fn start(&self) -> Result<(), gst::ErrorMessage> {
        self.refresh_cpu_pool()?;
        let (renditions, ladder) = self.start_renditions()?;
        *lock(&self.state) = Session {
            renditions,
            ladder,
            ..Session::default()
        };
        lock(&self.order).reset();
        self.monitor_start(self.live_pads());
        Ok(())
    }

    fn stop(&self) -> Result<(), gst::ErrorMessage> {
        self.monitor_shutdown();
        let res = self.close_logs();
        *lock(&self.state) = Session::default();
        res
    }

    fn sink_event(&self, pad: &gst_base::AggregatorPad, event: gst::Event) -> bool {
        if let gst::EventView::Caps(c) = event.view() {
            if !self.handle_caps(pad, c.caps()) {
                return false;
            }
        }
        if let gst::EventView::FlushStart(_) = event.view() {
            self.monitor_flush_start();
        }
        self.parent_sink_event(pad, event)
    }

    fn sink_query(&self, pad: &gst_base::AggregatorPad, query: &mut gst::QueryRef) -> bool {
        self.cuda.answer_query(self.obj().upcast_ref(), query) || self.parent_sink_query(pad, query)
    }

    fn src_query(&self, query: &mut gst::QueryRef) -> bool {
        self.cuda.answer_query(self.obj().upcast_ref(), query) || self.parent_src_query(query)
    }

    fn update_src_caps(&self, _caps: &gst::Caps) -> Result<gst::Caps, gst::FlowError> {
        // A ladder's src pad carries the reference buffers, a pair's the distorted ones.
        let pad = if self.is_ladder() {
            &self.reference_pad
        } else {
            &self.distorted_pad
        };
        match pad.current_caps() {
            Some(c) => Ok(c),
            None => Err(gst_base::AGGREGATOR_FLOW_NEED_DATA),
        }
    }

    /// A flushing seek starts a new run from the seek position: indices, motion, pooling,
    /// the unpaired counts and the results logs all restart, so the summary and the log
    /// describe the same frames, as a fresh run from there would.
    fn flush(&self) -> Result<gst::FlowSuccess, gst::FlowError> {
        lock(&self.order).reset();
        self.monitor_flush();
        self.restart_run()?;
        self.parent_flush()
    }

    /// Drops buffers that lie wholly outside their pad's segment, such as the frames a
    /// parser pushes from before a seek target: they are not part of the stream, so they are
    /// neither scored (which would feed motion and indices) nor counted as unpaired.
    fn clip(&self, pad: &gst_base::AggregatorPad, buffer: gst::Buffer) -> Option<gst::Buffer> {
        let Some(pts) = buffer.pts() else {
            return Some(buffer);
        };
        let segment = pad.segment();
        let Some(segment) = segment.downcast_ref::<gst::ClockTime>() else {
            return Some(buffer);
        };
        // `ClockTime` addition is plain u64 addition (a panic in debug builds, a wrapped end in
        // release): a buffer whose end would pass the clock's range is clipped by its start.
        let end = buffer.duration().and_then(|d| pts.checked_add(d));
        if segment.clip(pts, end).is_none() {
            gst::debug!(
                CAT,
                obj = pad,
                "dropping buffer at {pts} outside the segment"
            );
            return None;
        }
        // Gap events carry no picture; a frame whose time repeats or goes backwards is
        // counted, and reported once per pad.
        if let Some(rt) = segment.to_running_time(pts).filter(|_| !is_gap(&buffer)) {
            let report = lock(&self.order).observe(pad.name().as_str(), rt);
            if let Some(r) = report {
                gst::element_imp_warning!(
                    self,
                    gst::StreamError::Format,
                    ("{}", r.message()),
                    ["PTS {} in segment {:?}", pts, segment]
                );
            }
        }
        Some(buffer)
    }

    /// Live pipelines: the earliest running time at which something must happen without new
    /// data, as the aggregator times out at that time plus the latency: an output buffer of
    /// the scoring queue reaching its deadline, or a buffer waiting on a sink pad for a
    /// partner that did not come (a pad that never receives data, a rendition that stalls),
    /// which is then dropped or passed on unscored instead of blocking its upstream (or the
    /// other renditions) forever (see `VmafCompare::live_next_time`). `None` (wait for data)
    /// when nothing waits.
    fn next_time(&self) -> Option<gst::ClockTime> {
        self.live_next_time()
    }

    fn aggregate(&self, timeout: bool) -> Result<gst::FlowSuccess, gst::FlowError> {
        self.aggregate_sets(timeout)
    }
}
