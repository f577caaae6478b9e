//! The monitor's Prometheus metrics: one registry of the families README's "Metrics" table
//! lists, labelled by `channel` and `rendition`, updated by the channels' threads and encoded
//! (OpenMetrics text, `prometheus-client`) for each scrape of `/metrics`.

use std::sync::atomic::AtomicU64;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

/// `channel` and `rendition` (a rendition's label, or `reference` for the reference input).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Rendition {
    pub channel: String,
    pub rendition: String,
}

impl Rendition {
    pub fn new(channel: &str, rendition: &str) -> Self {
        Self {
            channel: channel.to_owned(),
            rendition: rendition.to_owned(),
        }
    }
}

/// A rendition's value of one metric by name (`psnr_y`, `integer_vif_scale0`, ...).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Named {
    pub channel: String,
    pub rendition: String,
    pub metric: String,
}

/// A rendition's unpaired counter: `input` = `reference` or `distorted`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Input {
    pub channel: String,
    pub rendition: String,
    pub input: String,
}

/// A channel's series.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ChannelLabel {
    pub channel: String,
}

/// A channel's restarts by reason (`error`, `eos`, `stall`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Restart {
    pub channel: String,
    pub reason: String,
}

/// A rendition's branch made again on its own, by reason (`error`, `stall`, `realign`).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RenditionRestart {
    pub channel: String,
    pub rendition: String,
    pub reason: String,
}

/// A GPU (CUDA ordinal).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Device {
    pub device: String,
}

/// The build (`version`, the package's).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct Build {
    pub version: String,
}

type FloatGauge = Gauge<f64, AtomicU64>;

/// Buckets of the scoring latency: 10 ms to about 20 s, doubling.
fn latency_histogram() -> Histogram {
    Histogram::new(exponential_buckets(0.01, 2.0, 12))
}

/// Every family the monitor exports (README, Monitoring: Metrics). Cheap to share: each
/// family is an `Arc` inside; updates from the channels' threads need no lock of ours.
pub struct Metrics {
    registry: Registry,
    pub vmaf: Family<Rendition, FloatGauge>,
    pub metric: Family<Named, FloatGauge>,
    pub window_mean: Family<Rendition, FloatGauge>,
    pub window_min: Family<Rendition, FloatGauge>,
    pub pooled_mean: Family<Rendition, FloatGauge>,
    pub scored: Family<Rendition, Counter>,
    pub skipped: Family<Rendition, Counter>,
    pub unpaired: Family<Input, Counter>,
    pub late: Family<Rendition, Counter>,
    pub alert: Family<Rendition, Gauge>,
    pub offset_frames: Family<Rendition, Gauge>,
    pub offset_seconds: Family<Rendition, FloatGauge>,
    pub input_up: Family<Rendition, Gauge>,
    pub latency: Family<Rendition, Histogram, fn() -> Histogram>,
    pub channel_up: Family<ChannelLabel, Gauge>,
    pub restarts: Family<Restart, Counter>,
    pub rendition_restarts: Family<RenditionRestart, Counter>,
    pub channel_device: Family<Rendition, Gauge>,
    pub gpu_memory: Family<Device, Gauge>,
    /// Sum and count of every VMAF scored per rendition since the start (the pooled mean).
    pooled: Mutex<std::collections::HashMap<Rendition, (f64, u64)>>,
    /// Every `metric` series made, so that a channel's can be removed.
    named: Mutex<std::collections::HashSet<Named>>,
}

impl Metrics {
    /// The registry with every family registered (names without `_total`: OpenMetrics adds
    /// it to counters) and `vmafcompare_build_info{version}` set to 1.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let m = Self {
            vmaf: Family::default(),
            metric: Family::default(),
            window_mean: Family::default(),
            window_min: Family::default(),
            pooled_mean: Family::default(),
            scored: Family::default(),
            skipped: Family::default(),
            unpaired: Family::default(),
            late: Family::default(),
            alert: Family::default(),
            offset_frames: Family::default(),
            offset_seconds: Family::default(),
            input_up: Family::default(),
            latency: Family::new_with_constructor(latency_histogram),
            channel_up: Family::default(),
            restarts: Family::default(),
            rendition_restarts: Family::default(),
            channel_device: Family::default(),
            gpu_memory: Family::default(),
            pooled: Mutex::default(),
            named: Mutex::default(),
            registry: Registry::default(),
        };
        let r = &mut registry;
        r.register(
            "vmafcompare_vmaf",
            "Last scored frame's VMAF (first model)",
            m.vmaf.clone(),
        );
        r.register(
            "vmafcompare_metric",
            "Last scored frame's other values (extra features, further models, the model's features), label metric",
            m.metric.clone(),
        );
        r.register(
            "vmafcompare_window_vmaf_mean",
            "Mean VMAF of the element's sliding window",
            m.window_mean.clone(),
        );
        r.register(
            "vmafcompare_window_vmaf_min",
            "Lowest VMAF of the element's sliding window",
            m.window_min.clone(),
        );
        r.register(
            "vmafcompare_pooled_vmaf_mean",
            "Mean VMAF of every frame scored since the monitor started (restarts included)",
            m.pooled_mean.clone(),
        );
        r.register(
            "vmafcompare_frames_scored",
            "Frames scored",
            m.scored.clone(),
        );
        r.register(
            "vmafcompare_frames_skipped",
            "Frames left unscored by the live scoring queue",
            m.skipped.clone(),
        );
        r.register(
            "vmafcompare_frames_unpaired",
            "Frames without a partner, label input = reference or distorted",
            m.unpaired.clone(),
        );
        r.register(
            "vmafcompare_frames_late",
            "Scores that came after their buffer left",
            m.late.clone(),
        );
        r.register(
            "vmafcompare_alert",
            "1 while the window mean VMAF is below alert-threshold or the rendition's input is down",
            m.alert.clone(),
        );
        r.register(
            "vmafcompare_offset_frames",
            "Frame offset auto-align measured",
            m.offset_frames.clone(),
        );
        r.register(
            "vmafcompare_offset_seconds",
            "Delay auto-align measured, seconds",
            m.offset_seconds.clone(),
        );
        r.register(
            "vmafcompare_input_up",
            "1 while the input delivers frames (rendition=reference: the reference)",
            m.input_up.clone(),
        );
        r.register(
            "vmafcompare_scoring_latency_seconds",
            "From a frame's running time to its score, pipeline clock",
            m.latency.clone(),
        );
        r.register(
            "vmafcompare_channel_up",
            "1 while the channel's pipeline is playing",
            m.channel_up.clone(),
        );
        r.register(
            "vmafcompare_channel_restarts",
            "Channel restarts, label reason = error, eos or stall",
            m.restarts.clone(),
        );
        r.register(
            "vmafcompare_rendition_restarts",
            "A rendition's branch made again while the channel plays on, label reason = error, stall or realign",
            m.rendition_restarts.clone(),
        );
        r.register(
            "vmafcompare_channel_device",
            "CUDA ordinal the rendition is scored on, -1 for the CPU",
            m.channel_device.clone(),
        );
        r.register(
            "vmafcompare_gpu_memory_bytes",
            "GPU memory this process holds on each device (NVML)",
            m.gpu_memory.clone(),
        );
        let build: Family<Build, Gauge> = Family::default();
        build
            .get_or_create(&Build {
                version: env!("CARGO_PKG_VERSION").to_owned(),
            })
            .set(1);
        r.register("vmafcompare_build_info", "The monitor's version", build);
        Self { registry, ..m }
    }

    /// Adds one scored VMAF to the rendition's pooled mean and sets the gauge.
    pub fn pool(&self, labels: &Rendition, vmaf: f64) {
        let mean = {
            let mut pooled = self.pooled.lock().unwrap_or_else(|e| e.into_inner());
            let entry = pooled.entry(labels.clone()).or_insert((0.0, 0));
            entry.0 += vmaf;
            entry.1 += 1;
            entry.0 / entry.1 as f64
        };
        self.pooled_mean.get_or_create(labels).set(mean);
    }

    /// Sets a rendition's `vmafcompare_metric{metric}` series.
    pub fn set_metric(&self, labels: &Named, value: f64) {
        self.metric.get_or_create(labels).set(value);
        let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
        if !named.contains(labels) {
            named.insert(labels.clone());
        }
    }

    /// Removes every series of `channel` (a channel gone from the config at SIGHUP); its
    /// pooled sums are kept only while it is configured.
    pub fn forget(&self, channel: &str, renditions: &[String]) {
        {
            let mut named = self.named.lock().unwrap_or_else(|e| e.into_inner());
            named.retain(|n| {
                let keep = n.channel != channel;
                if !keep {
                    self.metric.remove(n);
                }
                keep
            });
        }
        for name in renditions.iter().map(String::as_str).chain(["reference"]) {
            let l = Rendition::new(channel, name);
            for f in [
                &self.vmaf,
                &self.window_mean,
                &self.window_min,
                &self.pooled_mean,
                &self.offset_seconds,
            ] {
                f.remove(&l);
            }
            for f in [&self.scored, &self.skipped, &self.late] {
                f.remove(&l);
            }
            for f in [
                &self.alert,
                &self.offset_frames,
                &self.input_up,
                &self.channel_device,
            ] {
                f.remove(&l);
            }
            self.latency.remove(&l);
            for reason in ["error", "stall", "realign"] {
                self.rendition_restarts.remove(&RenditionRestart {
                    channel: l.channel.clone(),
                    rendition: l.rendition.clone(),
                    reason: reason.to_owned(),
                });
            }
            for input in ["reference", "distorted"] {
                self.unpaired.remove(&Input {
                    channel: l.channel.clone(),
                    rendition: l.rendition.clone(),
                    input: input.to_owned(),
                });
            }
            let mut pooled = self.pooled.lock().unwrap_or_else(|e| e.into_inner());
            pooled.remove(&l);
        }
        let c = ChannelLabel {
            channel: channel.to_owned(),
        };
        self.channel_up.remove(&c);
        for reason in ["error", "eos", "stall"] {
            self.restarts.remove(&Restart {
                channel: channel.to_owned(),
                reason: reason.to_owned(),
            });
        }
    }

    /// The exposition of every family (OpenMetrics text, ending in `# EOF`).
    pub fn encode(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            text = format!("# encoding failed: {e}\n# EOF\n");
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_are_named_as_the_readme_says() {
        let m = Metrics::new();
        let l = Rendition::new("news", "720p");
        m.vmaf.get_or_create(&l).set(87.5);
        m.scored.get_or_create(&l).inc_by(3);
        m.pool(&l, 80.0);
        m.pool(&l, 90.0);
        m.unpaired
            .get_or_create(&Input {
                channel: "news".into(),
                rendition: "720p".into(),
                input: "reference".into(),
            })
            .inc();
        m.latency.get_or_create(&l).observe(0.12);
        let text = m.encode();
        assert!(
            text.contains("vmafcompare_vmaf{channel=\"news\",rendition=\"720p\"} 87.5"),
            "{text}"
        );
        assert!(
            text.contains("vmafcompare_frames_scored_total{channel=\"news\",rendition=\"720p\"} 3")
        );
        assert!(
            text.contains("vmafcompare_pooled_vmaf_mean{channel=\"news\",rendition=\"720p\"} 85.0")
        );
        assert!(text.contains(
            "vmafcompare_frames_unpaired_total{channel=\"news\",rendition=\"720p\",input=\"reference\"} 1"
        ));
        assert!(text.contains(
            "vmafcompare_scoring_latency_seconds_count{channel=\"news\",rendition=\"720p\"} 1"
        ));
        assert!(text.contains("vmafcompare_build_info{version="));
        assert!(text.trim_end().ends_with("# EOF"));
        m.set_metric(
            &Named {
                channel: "news".into(),
                rendition: "720p".into(),
                metric: "psnr_y".into(),
            },
            41.5,
        );
        assert!(m.encode().contains(
            "vmafcompare_metric{channel=\"news\",rendition=\"720p\",metric=\"psnr_y\"} 41.5"
        ));
        m.forget("news", &["720p".into()]);
        assert!(!m.encode().contains("rendition=\"720p\""));
    }
}
