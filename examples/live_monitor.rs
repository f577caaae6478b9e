//! Monitors a live RTP stream against a local reference and prints quality alerts.
//!
//! A sender pipeline in this process plays the distorted file in real time as raw video over
//! RTP (`rtpvrawpay ! udpsink` to 127.0.0.1), standing in for an encoder or a network feed.
//! The receiver is what a monitoring application runs:
//!
//! ```text
//! udpsrc ! rtpjitterbuffer ! rtpvrawdepay ! cmp.distorted
//! filesrc ! decodebin ! cmp.reference
//! vmafcompare name=cmp auto-align=true alert-threshold=.. ! fakesink sync=true
//! ```
//!
//! The received stream starts later than the reference (network, jitter buffer): auto-align
//! finds the offset at the start (`vmafcompare-offset`), then every alert
//! (`vmafcompare-alert`: the window's mean VMAF fell below the threshold, or recovered) is
//! printed as it comes.
//!
//! ```sh
//! cargo run --release --example live_monitor -- reference.mp4 distorted.mp4 --threshold 32
//! ```

use std::time::{Duration, Instant};

use clap::Parser;
use gst::prelude::*;
use gstvmafcompare::vmafcompare::{
    AlertMessage, FrameMessage, OffsetMessage, SummaryMessage, ALERT_MESSAGE_NAME,
    FRAME_MESSAGE_NAME, OFFSET_MESSAGE_NAME, SUMMARY_MESSAGE_NAME,
};

#[derive(Parser)]
#[command(about = "Monitors a live RTP stream against a reference file and prints alerts")]
struct Args {
    /// Reference video file (what the encoder was given).
    reference: std::path::PathBuf,
    /// Video file sent over RTP as the live distorted stream.
    distorted: std::path::PathBuf,
    /// Alert when the window's mean VMAF falls below this.
    #[arg(long, default_value_t = 32.0)]
    threshold: f64,
    /// VMAF points above the threshold the window mean must reach to recover.
    #[arg(long, default_value_t = 1.0)]
    hysteresis: f64,
    /// Window, in frames.
    #[arg(long, default_value_t = 10)]
    window: u32,
    /// vmafcompare backend.
    #[arg(long, default_value = "auto")]
    backend: String,
    /// Jitter buffer latency, ms.
    #[arg(long, default_value_t = 200)]
    jitter_ms: u32,
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(&args) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn launch(desc: &str) -> Result<gst::Pipeline, String> {
    gst::parse::launch(desc)
        .map_err(|e| format!("{e}: {desc}"))?
        .downcast::<gst::Pipeline>()
        .map_err(|_| "not a pipeline".to_owned())
}

fn seconds(t: Option<gst::ClockTime>) -> f64 {
    t.map_or(f64::NAN, |t| t.nseconds() as f64 / 1e9)
}

fn run(args: &Args) -> Result<(), String> {
    gst::init().map_err(|e| e.to_string())?;
    gstvmafcompare::plugin_register_static().map_err(|e| e.to_string())?;
    // A free UDP port on the loopback interface.
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .and_then(|s| s.local_addr())
        .map_err(|e| format!("no free UDP port: {e}"))?
        .port();
    let sender = launch(&format!(
        "filesrc location=\"{}\" ! decodebin ! videoconvert ! video/x-raw,format=I420 \
         ! rtpvrawpay name=pay ! udpsink host=127.0.0.1 port={port} sync=true",
        args.distorted.display()
    ))?;
    // Preroll the sender to learn the RTP caps the receiver must expect.
    sender
        .set_state(gst::State::Paused)
        .map_err(|e| format!("sender: {e}"))?;
    let _ = sender.state(gst::ClockTime::from_seconds(10));
    let caps = sender
        .by_name("pay")
        .and_then(|p| p.static_pad("src"))
        .and_then(|p| p.current_caps())
        .ok_or("the sender did not negotiate")?;
    let mut rtp = caps.structure(0).ok_or("empty caps")?.to_owned();
    for f in ["ssrc", "timestamp-offset", "seqnum-offset"] {
        rtp.remove_field(f);
    }
    let receiver = launch(&format!(
        "vmafcompare name=cmp backend={backend} auto-align=true align-max-offset=5 \
           window-size={window} alert-threshold={threshold} alert-hysteresis={hysteresis} \
           ! fakesink sync=true \
         udpsrc address=127.0.0.1 port={port} caps=\"{rtp}\" \
           ! rtpjitterbuffer latency={jitter} ! rtpvrawdepay ! cmp.distorted \
         filesrc location=\"{reference}\" ! decodebin ! cmp.reference",
        backend = args.backend,
        window = args.window,
        threshold = args.threshold,
        hysteresis = args.hysteresis,
        jitter = args.jitter_ms,
        reference = args.reference.display(),
        rtp = rtp.to_string().replace('"', "\\\""),
    ))?;
    receiver
        .set_state(gst::State::Playing)
        .map_err(|e| format!("receiver: {e}"))?;
    sender
        .set_state(gst::State::Playing)
        .map_err(|e| format!("sender: {e}"))?;
    println!(
        "monitoring rtp://127.0.0.1:{port} against {}",
        args.reference.display()
    );
    let (sbus, rbus) = (
        sender.bus().ok_or("no bus")?,
        receiver.bus().ok_or("no bus")?,
    );
    let mut sent_eos_at: Option<Instant> = None;
    let mut frames = 0u64;
    let mut alerts = 0u64;
    let mut summary = None;
    loop {
        // The sender's end: give the last packets time to arrive, then end the receiver.
        if sent_eos_at.is_none() {
            if let Some(m) = sbus.pop_filtered(&[gst::MessageType::Eos, gst::MessageType::Error]) {
                if let gst::MessageView::Error(e) = m.view() {
                    return Err(format!("sender: {}", e.error()));
                }
                sent_eos_at = Some(Instant::now());
            }
        }
        if let Some(t) = sent_eos_at {
            if t.elapsed() > Duration::from_millis(u64::from(args.jitter_ms) + 1500) {
                receiver.send_event(gst::event::Eos::new());
                sent_eos_at = Some(Instant::now() + Duration::from_secs(3600));
            }
        }
        let Some(msg) = rbus.timed_pop(gst::ClockTime::from_mseconds(50)) else {
            continue;
        };
        match msg.view() {
            gst::MessageView::Eos(_) => break,
            gst::MessageView::Error(e) => {
                return Err(format!("receiver: {} ({:?})", e.error(), e.debug()));
            }
            gst::MessageView::Element(e) => {
                let Some(s) = e.structure() else { continue };
                match s.name().as_str() {
                    OFFSET_MESSAGE_NAME => {
                        if let Ok(o) = OffsetMessage::try_from(s) {
                            println!(
                                "offset: the stream is {} frames late ({:.3} s behind the reference), PSNR {:.2} dB at that offset",
                                o.offset_frames,
                                o.delay as f64 / 1e9,
                                o.psnr
                            );
                        }
                    }
                    ALERT_MESSAGE_NAME => {
                        if let Ok(a) = AlertMessage::try_from(s) {
                            alerts += 1;
                            if a.below {
                                println!(
                                    "ALERT     at {:7.3} s (frame {}): window mean VMAF {:.2} < {:.2} (min {:.2} over {} frames)",
                                    seconds(a.pts), a.index, a.window.mean, a.threshold, a.window.min, a.window.frames
                                );
                            } else {
                                println!(
                                    "RECOVERED at {:7.3} s (frame {}): window mean VMAF {:.2} >= {:.2}",
                                    seconds(a.pts), a.index, a.window.mean, a.threshold + a.hysteresis
                                );
                            }
                        }
                    }
                    FRAME_MESSAGE_NAME if FrameMessage::try_from(s).is_ok() => frames += 1,
                    SUMMARY_MESSAGE_NAME => summary = SummaryMessage::try_from(s).ok(),
                    _ => {}
                }
            }
            _ => {}
        }
    }
    let _ = sender.set_state(gst::State::Null);
    let _ = receiver.set_state(gst::State::Null);
    let s = summary.ok_or("no summary")?;
    println!(
        "summary: {} frames scored ({} messages), {} skipped, {} late, {} unpaired reference / {} distorted; {} alerts; VMAF mean {:.3}",
        s.frames,
        frames,
        s.skipped,
        s.late,
        s.unpaired_reference,
        s.unpaired_distorted,
        alerts,
        s.get("vmaf").map_or(f64::NAN, |p| p.mean)
    );
    Ok(())
}
