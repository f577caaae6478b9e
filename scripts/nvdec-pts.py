#!/usr/bin/env python3
"""Output timestamps of vmafnvdec against nvcodec's and libav's decoders (issue 48).

For each clip (scripts/nvdec-clips.sh makes them) and each decoder, runs
`gst-launch-1.0 -v ... ! DECODER ! fakesink silent=false` and reads every output buffer's
PTS, duration and flags; `order` is the parser's output (decode order, the decoders' input).
Prints one table row per clip and decoder, and a verdict per clip: vmafnvdec's (PTS,
duration) list must equal each other decoder's. With --events DIR, vmafnvdec's parser
callbacks (`GST_DEBUG=vmafnvdec:6`, `cb:` lines) are written to DIR/CLIP.events with the
nvcodec decoder's PTS list as an `expect` line: the recorded sequences that
tests/nvdec_frames.rs replays.

    python3 scripts/nvdec-pts.py --clips DIR [--decoders order,nvcodec,vmafnvdec,avdec]
        [--events DIR]
"""

import argparse
import os
import re
import subprocess
import sys

PTS = re.compile(r"chain.*?pts: (\S+), duration: (\S+),.*?flags: ([0-9a-f]+)")


def seconds(stamp):
    """`0:00:00.100000000` -> nanoseconds (None for `none`)."""
    if stamp in ("none", "99:99:99.999999999"):
        return None
    h, m, s = stamp.split(":")
    whole, frac = s.split(".")
    return ((int(h) * 60 + int(m)) * 60 + int(whole)) * 10**9 + int(frac.ljust(9, "0"))


def front(path):
    """The demuxer and parser of a clip, and its codec ('h264' or 'h265')."""
    codec = "h265" if "hevc" in os.path.basename(path) else "h264"
    ext = path.rsplit(".", 1)[-1]
    demux = {"mp4": "qtdemux", "mkv": "matroskademux", "ts": "tsdemux"}.get(ext)
    parts = [f"filesrc location={path}"]
    if demux:
        parts.append(demux)
    parts.append(f"{codec}parse")
    return parts, codec


def decoder_element(name, codec):
    return {
        "order": None,
        "nvcodec": f"nv{codec}dec",
        "vmafnvdec": "vmafnvdec",
        "avdec": f"avdec_{codec}",
    }[name]


def run(path, decoder, events=None):
    parts, codec = front(path)
    element = decoder_element(decoder, codec)
    if element:
        if decoder == "vmafnvdec":
            parts.append("video/x-" + codec + ",stream-format=byte-stream,alignment=au")
        parts.append(element)
    parts.append("fakesink silent=false sync=false")
    cmd = ["gst-launch-1.0", "-v"] + " ! ".join(parts).split()
    env = dict(os.environ)
    if events is not None:
        env["GST_DEBUG"] = "vmafnvdec:6"
        env["GST_DEBUG_NO_COLOR"] = "1"
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if p.returncode != 0:
        return None, (p.stderr.strip().splitlines() or ["failed"])[-1]
    frames = []
    for line in p.stdout.splitlines():
        m = PTS.search(line)
        if m:
            frames.append((seconds(m.group(1)), seconds(m.group(2)), int(m.group(3), 16)))
    if events is not None:
        events.extend(
            line.split("cb: ", 1)[1].strip() for line in p.stderr.splitlines() if "cb: " in line
        )
    return frames, None


def fmt(ns):
    return "none" if ns is None else f"{ns / 1e9:.3f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", required=True)
    ap.add_argument("--decoders", default="order,nvcodec,vmafnvdec,avdec")
    ap.add_argument("--events", help="write vmafnvdec's recorded callbacks here")
    ap.add_argument("--show", type=int, default=12, help="PTS shown per row")
    args = ap.parse_args()
    decoders = args.decoders.split(",")
    clips = sorted(
        f for f in os.listdir(args.clips) if f.rsplit(".", 1)[-1] in ("mp4", "mkv", "ts", "h264")
    )
    rows, verdicts, failed = [], [], False
    for clip in clips:
        path = os.path.join(args.clips, clip)
        got = {}
        recorded = [] if args.events else None
        for d in decoders:
            frames, err = run(path, d, recorded if d == "vmafnvdec" else None)
            got[d] = frames
            shown = (
                err
                if frames is None
                else " ".join(fmt(f[0]) for f in frames[: args.show])
                + (" ..." if len(frames) > args.show else "")
            )
            count = "" if frames is None else len(frames)
            rows.append(f"| {clip} | {d} | {count} | {shown} |")
        for d in decoders:
            frames = got.get(d)
            if d != "order" and frames:
                times = [f[0] for f in frames]
                if any(b <= a for a, b in zip(times, times[1:])):
                    verdicts.append(f"| {clip} | {d} | {len(frames)} frames | PTS repeat or go back |")
        mine = got.get("vmafnvdec")
        for other in ("nvcodec", "avdec"):
            theirs = got.get(other)
            if mine is None or theirs is None:
                continue
            # PTS and duration of every frame, in output order.
            same = [f[:2] for f in mine] == [f[:2] for f in theirs]
            failed |= not same
            verdicts.append(
                f"| {clip} | vmafnvdec == {other} | {len(mine)} / {len(theirs)} frames | "
                f"{'same PTS and durations' if same else 'DIFFERENT'} |"
            )
        if args.events and recorded and got.get("nvcodec"):
            os.makedirs(args.events, exist_ok=True)
            with open(os.path.join(args.events, clip + ".events"), "w") as f:
                f.write(f"# {clip}: vmafnvdec's parser callbacks (scripts/nvdec-pts.py)\n")
                f.write("expect " + " ".join(str(x[0]) for x in got["nvcodec"]) + "\n")
                f.write("\n".join(recorded) + "\n")
    print("| clip | decoder | frames | output PTS (s) |\n| --- | --- | --- | --- |")
    print("\n".join(rows))
    print("\n| clip | check | frames | result |\n| --- | --- | --- | --- |")
    print("\n".join(verdicts))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
