#!/usr/bin/env python3
"""Scores a distorted video file against its reference with vmafcompare from Python
(PyGObject): prints each frame's VMAF from the bus messages, reads the same scores back from
the VmafCompareMeta on the output buffers, and prints the pooled scores of the summary.

Needs the system Python's GObject bindings (Debian: python3-gi gir1.2-gstreamer-1.0
gir1.2-gst-plugins-base-1.0) and the plugin on GST_PLUGIN_PATH:

    cargo build --release
    GST_PLUGIN_PATH=$PWD/target/release /usr/bin/python3 examples/python/vmaf_bus.py ref.mp4 dist.mp4

Reading the meta: Gst.Buffer.get_custom_meta("VmafCompareMeta") is introspectable in
GStreamer 1.22; CustomMeta.get_structure() returns a copy of its structure, with the same
fields as the frame message.
"""

import sys

import gi

gi.require_version("Gst", "1.0")
from gi.repository import GLib, Gst  # noqa: E402

META = "VmafCompareMeta"


def main(reference, distorted):
    Gst.init(None)
    if Gst.ElementFactory.find("vmafcompare") is None:
        sys.exit("vmafcompare not found: set GST_PLUGIN_PATH to the folder of libgstvmafcompare.so")
    pipeline = Gst.parse_launch(
        "vmafcompare name=cmp backend=cpu ! appsink name=out emit-signals=true sync=false "
        f'filesrc location="{reference}" ! decodebin ! cmp.reference '
        f'filesrc location="{distorted}" ! decodebin ! cmp.distorted'
    )
    from_bus, from_meta, summary = {}, {}, {}

    def on_sample(sink):
        sample = sink.emit("pull-sample")
        buf = sample.get_buffer()
        meta = buf.get_custom_meta(META)
        if meta is not None:
            s = meta.get_structure()
            from_meta[s.get_uint64("index")[1]] = s.get_double("vmaf")[1]
        return Gst.FlowReturn.OK

    pipeline.get_by_name("out").connect("new-sample", on_sample)
    loop = GLib.MainLoop()

    def on_message(_bus, msg):
        if msg.type == Gst.MessageType.ELEMENT:
            s = msg.get_structure()
            if s.get_name() == "vmafcompare-frame":
                index = s.get_uint64("index")[1]
                vmaf = s.get_double("vmaf")[1]
                from_bus[index] = vmaf
                print(f"frame {index:4d}  vmaf {vmaf:.6f}")
            elif s.get_name() == "vmafcompare-summary":
                summary["frames"] = s.get_uint64("frames")[1]
                pooled = s.get_value("vmaf")  # nested structure: min, max, mean, harmonic_mean
                summary["vmaf"] = {k: pooled.get_double(k)[1] for k in ("mean", "harmonic_mean", "min", "max")}
        elif msg.type == Gst.MessageType.ERROR:
            err, debug = msg.parse_error()
            print(f"error: {err.message} ({debug})", file=sys.stderr)
            summary["error"] = err.message
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
    if "error" in summary or "vmaf" not in summary:
        return 1
    same = from_bus == from_meta
    print(f"{len(from_bus)} frames in messages, {len(from_meta)} in buffer meta, identical: {same}")
    v = summary["vmaf"]
    print(f"pooled VMAF over {summary['frames']} frames: mean {v['mean']:.6f} "
          f"harmonic {v['harmonic_mean']:.6f} min {v['min']:.6f} max {v['max']:.6f}")
    return 0 if same and len(from_bus) == summary["frames"] else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} REFERENCE DISTORTED")
    sys.exit(main(sys.argv[1], sys.argv[2]))
