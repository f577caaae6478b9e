//! The distorted sink pads' type, `GstVmafRenditionPad`: an aggregator pad with a `label`
//! property naming the rendition it carries (`720p`), for the messages, meta and logs of a
//! ladder.

use gst::glib;

mod imp {
    use std::sync::{LazyLock, Mutex};

    use gst::glib;
    use gst::prelude::*;
    use gst::subclass::prelude::*;
    use gst_base::subclass::prelude::*;

    #[derive(Default)]
    pub struct RenditionPad {
        pub(super) label: Mutex<String>,
    }

    #[glib::object_subclass]
    impl ObjectSubclass for RenditionPad {
        const NAME: &'static str = "GstVmafRenditionPad";
        type Type = super::VmafRenditionPad;
        type ParentType = gst_base::AggregatorPad;
    }

    impl ObjectImpl for RenditionPad {
        fn properties() -> &'static [glib::ParamSpec] {
            static PROPS: LazyLock<Vec<glib::ParamSpec>> = LazyLock::new(|| {
                vec![glib::ParamSpecString::builder("label")
                    .nick("Rendition label")
                    .blurb(
                        "Name of the rendition this pad carries (e.g. 720p, 1080p-3000k): \
                         the 'label' field of its frame messages, meta and summary, and the \
                         name of its log file (results-location). Empty: the pad's name.",
                    )
                    .mutable_ready()
                    .build()]
            });
            PROPS.as_ref()
        }

        fn set_property(&self, _id: usize, value: &glib::Value, pspec: &glib::ParamSpec) {
            if pspec.name() == "label" {
                let v: Option<String> = value.get().unwrap_or(None);
                *self.label.lock().unwrap_or_else(|p| p.into_inner()) = v.unwrap_or_default();
            }
        }

        fn property(&self, _id: usize, pspec: &glib::ParamSpec) -> glib::Value {
            match pspec.name() {
                "label" => self
                    .label
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .to_value(),
                _ => None::<String>.to_value(),
            }
        }
    }

    impl GstObjectImpl for RenditionPad {}
    impl PadImpl for RenditionPad {}
    impl AggregatorPadImpl for RenditionPad {}
}

glib::wrapper! {
    /// A distorted sink pad of `vmafcompare` (`distorted`, `distorted_%u`), with its
    /// rendition `label`.
    pub struct VmafRenditionPad(ObjectSubclass<imp::RenditionPad>)
        @extends gst_base::AggregatorPad, gst::Pad, gst::Object;
}

impl VmafRenditionPad {
    /// The `label` property, or the pad's name when it is empty.
    pub fn label_or_name(&self) -> String {
        use gst::prelude::*;
        use gst::subclass::prelude::*;
        let label = self
            .imp()
            .label
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if label.is_empty() {
            self.name().to_string()
        } else {
            label
        }
    }

    /// The `label` property as set (may be empty).
    pub fn label(&self) -> String {
        use gst::subclass::prelude::*;
        self.imp()
            .label
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}
