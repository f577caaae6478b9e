#!/usr/bin/env python3
"""Scores distorted video files against their reference with vmafcompare from Python
(PyGObject): prints each frame's VMAF from the bus messages, reads the same scores back from
the VmafCompareMeta on the output buffers, and prints the pooled scores of the summaries.

Needs the system Python's GObject bindings (Debian: python3-gi gir1.2-gstreamer-1.0
gir1.2-gst-plugins-base-1.0) and the plugin on GST_PLUGIN_PATH:

    cargo build --release
    GST_PLUGIN_PATH=$PWD/target/release /usr/bin/python3 examples/python/vmaf_bus.py ref.mp4 dist.mp4

One distorted file is scored as a pair (the element's `distorted` pad). Several are one
ladder: each file goes to a request pad `distorted_N` whose `label` is the file's stem, the
reference is decoded once, and each rendition is scored as it would be alone:

    GST_PLUGIN_PATH=$PWD/target/release /usr/bin/python3 examples/python/vmaf_bus.py \\
        ref_1080p.mp4 r1080p.mp4 r720p.mp4 r540p.mp4

runs

    vmafcompare name=cmp backend=cpu distorted_1::label="r1080p" distorted_2::label="r720p"
        distorted_3::label="r540p" ! appsink name=out emit-signals=true sync=false
    filesrc location="ref_1080p.mp4" ! decodebin ! cmp.reference
    filesrc location="r1080p.mp4" ! decodebin ! cmp.distorted_1
    filesrc location="r720p.mp4" ! decodebin ! cmp.distorted_2
    filesrc location="r540p.mp4" ! decodebin ! cmp.distorted_3

In a ladder every frame message and every summary (one per rendition) carries the string
fields `pad` (`distorted_2`) and `label` (`r720p`): the frame messages are grouped by label
and one summary row is printed per rendition.

Reading the meta: Gst.Buffer.get_custom_meta("VmafCompareMeta") is introspectable in
GStreamer 1.22; CustomMeta.get_structure() returns a copy of its structure, with the same
fields as the frame message. In a ladder the src pad carries the reference buffers, each
with one meta per rendition that scored it; the 1.22 bindings reach only the first
(Gst.Buffer.foreach_meta passes None to Python), so the others are read from the messages
(from Rust or C every meta is there: gstvmafcompare::vmafcompare::frame_metas, or
gst_buffer_iterate_meta_filtered).
"""

import os
import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

META = "VmafCompareMeta"
POOLED = ("mean", "harmonic_mean", "min", "max", "percentile_1", "percentile_5", "percentile_10")


def labels(paths):
    """Each file's stem, made unique with -2, -3, ... (as the vmafcompare command does)."""
    out = []
    for path in paths:
        stem = os.path.splitext(os.path.basename(path))[0] or "distorted"
        label, n = stem, 1
        while label in out:
            n += 1
            label = f"{stem}-{n}"
        out.append(label)
    return out


def quoted(text):
    """`text` as a gst-launch string value."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def launch_line(reference, distorted, names):
    """The pipeline: a pair for one distorted file, a ladder for several."""
    if len(distorted) == 1:
        return (
            "vmafcompare name=cmp backend=cpu ! appsink name=out emit-signals=true sync=false "
            f"filesrc location={quoted(reference)} ! decodebin ! cmp.reference "
            f"filesrc location={quoted(distorted[0])} ! decodebin ! cmp.distorted"
        )
    pads = [f"distorted_{i + 1}" for i in range(len(distorted))]
    props = " ".join(f"{pad}::label={quoted(name)}" for pad, name in zip(pads, names))
    branches = " ".join(
        f"filesrc location={quoted(path)} ! decodebin ! cmp.{pad}" for path, pad in zip(distorted, pads)
    )
    return (
        f"vmafcompare name=cmp backend=cpu {props} ! appsink name=out emit-signals=true sync=false "
        f"filesrc location={quoted(reference)} ! decodebin ! cmp.reference {branches}"
    )


def main(reference, distorted):
    Gst.init(None)
    if Gst.ElementFactory.find("vmafcompare") is None:
        sys.exit("vmafcompare not found: set GST_PLUGIN_PATH to the folder of libgstvmafcompare.so")
    ladder = len(distorted) > 1
    names = labels(distorted)
    pipeline = Gst.parse_launch(launch_line(reference, distorted, names))
    # (label, index) -> VMAF; a pair's label is None.
    from_bus, from_meta, summaries = {}, {}, {}
    failed = []

    def label_of(s):
        return s.get_string("label") if s.has_field("label") else None

    def on_sample(sink):
        sample = sink.emit("pull-sample")
        meta = sample.get_buffer().get_custom_meta(META)
        if meta is not None:
            s = meta.get_structure()
            from_meta[(label_of(s), s.get_uint64("index")[1])] = s.get_double("vmaf")[1]
        return Gst.FlowReturn.OK

    pipeline.get_by_name("out").connect("new-sample", on_sample)
    loop = GLib.MainLoop()

    def on_message(_bus, msg):
        if msg.type == Gst.MessageType.ELEMENT:
            s = msg.get_structure()
            if s.get_name() == "vmafcompare-frame":
                label = label_of(s)
                index = s.get_uint64("index")[1]
                vmaf = s.get_double("vmaf")[1]
                from_bus[(label, index)] = vmaf
                if label is None:
                    print(f"frame {index:4d}  vmaf {vmaf:.6f}")
                else:
                    print(f"frame {index:4d}  {label}  vmaf {vmaf:.6f}")
            elif s.get_name() == "vmafcompare-summary":
                pooled = s.get_value("vmaf")  # nested: min, max, mean, harmonic_mean, percentile_1/5/10
                summaries[label_of(s)] = {
                    "frames": s.get_uint64("frames")[1],
                    "vmaf": {k: pooled.get_double(k)[1] for k in POOLED} if pooled else None,
                }
        elif msg.type == Gst.MessageType.ERROR:
            err, debug = msg.parse_error()
            print(f"error: {err.message} ({debug})", file=sys.stderr)
            failed.append(err.message)
            loop.quit()
        elif msg.type == Gst.MessageType.EOS:
            loop.quit()

    bus = pipeline.get_bus()
    bus.add_signal_watch()
    bus.connect("message", on_message)
    pipeline.set_state(Gst.State.PLAYING)
    try:
        loop.run()
    finally:
        pipeline.set_state(Gst.State.NULL)
    expected = names if ladder else [None]
    if failed or any(summaries.get(label, {}).get("vmaf") is None for label in expected):
        return 1
    same = all(from_bus.get(key) == vmaf for key, vmaf in from_meta.items())
    if ladder:
        print(f"{len(from_bus)} frames in messages, {len(from_meta)} first metas of the buffers "
              f"checked against them, identical: {same}")
    else:
        same = same and from_bus.keys() == from_meta.keys()
        print(f"{len(from_bus)} frames in messages, {len(from_meta)} in buffer meta, identical: {same}")
    ok = same
    width = max(len(label or "") for label in expected)
    for label in expected:
        summary = summaries[label]
        frames = sum(1 for (lab, _) in from_bus if lab == label)
        ok = ok and frames == summary["frames"]
        v = summary["vmaf"]
        name = f"{label:{width}}  " if ladder else ""
        print(f"{name}pooled VMAF over {summary['frames']} frames: mean {v['mean']:.6f} "
              f"harmonic {v['harmonic_mean']:.6f} min {v['min']:.6f} max {v['max']:.6f} "
              f"lows 1% {v['percentile_1']:.6f} 5% {v['percentile_5']:.6f} 10% {v['percentile_10']:.6f}")
    return 0 if ok else 1


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(f"usage: {sys.argv[0]} REFERENCE DISTORTED [DISTORTED...]")
    sys.exit(main(sys.argv[1], sys.argv[2:]))
