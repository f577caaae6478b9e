//! vmafnvdec's frame bookkeeping replayed on recorded parser callbacks of real streams (issue
//! 48): for every recording in `tests/nvdec_recordings/`, the frames [`FrameMatcher`] finishes, in
//! order, carry exactly the PTS that nvcodec's decoder (`nvh264dec` / `nvh265dec`) output for
//! the same file on the GPU host, and every input frame is finished or released exactly once.
//!
//! The recordings are `GST_DEBUG=vmafnvdec:6` logs of NVIDIA's parser on an H100 (driver
//! 580), made by `scripts/nvdec-pts.py --events` over the clips of `scripts/nvdec-clips.sh`:
//! x264 and x265 defaults (B-frames, B-pyramids, open GOPs), 8 and 10 bits, MP4 with and
//! without an edit list, Matroska, MPEG-TS, Annex B, variable frame rate, a file starting on a
//! CRA with leading pictures. No GPU is needed to replay them.

use std::collections::HashMap;
use std::path::PathBuf;

use gstvmafcompare::nvdec::frames::{Action, Event, FrameMatcher};

struct Recording {
    name: String,
    expect: Vec<i64>,
    pts: HashMap<u32, i64>,
    events: Vec<Event>,
}

fn recordings() -> Vec<Recording> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/nvdec_recordings");
    let mut out = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/nvdec_recordings")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "events"))
        .collect();
    files.sort();
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let mut r = Recording {
            name: path.file_name().unwrap().to_string_lossy().into_owned(),
            expect: Vec::new(),
            pts: HashMap::new(),
            events: Vec::new(),
        };
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            if let Some(list) = line.strip_prefix("expect ") {
                r.expect = list.split(' ').map(|v| v.parse().unwrap()).collect();
                continue;
            }
            // `packet N pts=P`, `display S ts=T`: the extra word is for reading, not replay.
            let (event, extra) = match line.split_once(" pts=").or(line.split_once(" ts=")) {
                Some((e, x)) => (e, Some(x)),
                None => (line, None),
            };
            let e: Event = event.parse().unwrap_or_else(|e| panic!("{}: {e}", r.name));
            if let (Event::Packet { frame }, Some(pts)) = (e, extra) {
                r.pts.insert(frame, pts.parse().unwrap());
            }
            r.events.push(e);
        }
        out.push(r);
    }
    out
}

#[test]
fn recorded_streams_give_each_picture_its_own_frame() {
    let all = recordings();
    assert!(
        all.len() >= 8,
        "expected the recordings of scripts/nvdec-clips.sh's clips, found {}",
        all.len()
    );
    let order = |r: &Recording| -> Vec<u32> {
        let mut m = FrameMatcher::new();
        let mut actions = Vec::new();
        for &e in &r.events {
            m.apply(e, &mut actions);
        }
        let mut seen: HashMap<u32, usize> = HashMap::new();
        let mut finished = Vec::new();
        for a in &actions {
            match *a {
                Action::Finish(f) => {
                    *seen.entry(f).or_default() += 1;
                    finished.push(f);
                }
                Action::Release(f) => *seen.entry(f).or_default() += 1,
                Action::Orphan { surface } => panic!("{}: orphan picture in {surface}", r.name),
            }
        }
        for f in r.pts.keys() {
            assert_eq!(seen.get(f), Some(&1), "{}: frame {f} handled once", r.name);
        }
        finished
    };
    for r in &all {
        let finished_frames = order(r);
        if r.pts.values().all(|&p| p < 0) {
            // Annex B without timestamps (the base class stamps frames as they leave): its
            // pictures must leave in the order the same stream's container recording gives.
            let stem = r.name.split('.').next().unwrap_or_default();
            let twin = all
                .iter()
                .find(|o| {
                    o.name != r.name
                        && o.name.starts_with(&format!("{stem}."))
                        && o.pts.values().all(|&p| p >= 0)
                })
                .unwrap_or_else(|| {
                    panic!(
                        "{}: no recording of the same stream with timestamps",
                        r.name
                    )
                });
            assert_eq!(
                finished_frames,
                order(twin),
                "{}: display order as {}",
                r.name,
                twin.name
            );
            assert_eq!(finished_frames.len(), r.expect.len(), "{}: frames", r.name);
            continue;
        }
        let finished: Vec<i64> = finished_frames.iter().map(|f| r.pts[f]).collect();
        // Frames finished past the segment's end are dropped by GstVideoDecoder afterwards,
        // for both decoders alike (an MP4 without an edit list ends its segment two frames
        // early): the recording's output is a prefix of what the matcher finishes.
        let n = r.expect.len().min(finished.len());
        assert_eq!(finished[..n], r.expect[..], "{}: output PTS", r.name);
        let last = r.expect.last().copied().unwrap_or(i64::MIN);
        assert!(
            finished[n..].iter().all(|&p| p > last),
            "{}: only frames after the last output ones are left for the segment to clip: {:?}",
            r.name,
            &finished[n..]
        );
        assert!(
            finished.windows(2).all(|w| w[0] < w[1]),
            "{}: strictly increasing",
            r.name
        );
    }
}

#[test]
fn the_old_timestamp_matching_would_have_failed_these_streams() {
    // What vmafnvdec did before issue 48: the frame of a displayed picture was the parser's
    // timestamp, i.e. the frames in the order the parser received them. On every recording
    // with B-frames that order is not display order.
    let reordered = recordings()
        .into_iter()
        .filter(|r| {
            let packets: Vec<i64> = r
                .events
                .iter()
                .filter_map(|e| match e {
                    Event::Packet { frame } => Some(r.pts[frame]),
                    _ => None,
                })
                .collect();
            packets.windows(2).any(|w| w[1] < w[0])
        })
        .count();
    assert!(reordered >= 6, "recordings with B-frames: {reordered}");
}
