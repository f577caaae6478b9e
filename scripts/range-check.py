#!/usr/bin/env python3
"""Colour-range cases of issue 49 on real files: the element against FFmpeg + libvmaf.

For each case of scripts/range-clips.sh (DIR/cases.txt: NAME DISTORTED REFERENCE) and each
decoder/backend pair asked for, decodes both files in GStreamer, scores them with
`vmafcompare features=psnr,ciede`, and compares every frame's VMAF, PSNR (Y, Cb, Cr) and
CIEDE2000 with the oracle's log (DIR/oracle_NAME.json). Prints a markdown table (pooled VMAF
ours and FFmpeg's, the largest per-frame difference of any metric, the conversion the log
records) and exits 1 when a difference exceeds 1e-4.

    python3 scripts/range-check.py --clips DIR [--runs avdec:cpu,vmafnvdec:cuda,nv:cpu]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

METRICS = ("vmaf", "psnr_y", "psnr_cb", "psnr_cr", "ciede2000")


def branch(path, decoder, pad):
    """`filesrc ! demuxer ! parser ! decoder ! cmp.PAD` for an MP4 (H.264) or MKV (HEVC)."""
    hevc = path.endswith(".mkv")
    demux = "matroskademux" if hevc else "qtdemux"
    codec = "h265" if hevc else "h264"
    element = {"avdec": f"avdec_{codec}", "nv": f"nv{codec}dec"}.get(decoder, decoder)
    return f"filesrc location={path} ! {demux} ! {codec}parse ! {element} ! cmp.{pad}"


def frames(log):
    return [f["metrics"] for f in json.load(open(log))["frames"]]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clips", required=True)
    ap.add_argument("--runs", default="avdec:cpu", help="DECODER:BACKEND pairs")
    args = ap.parse_args()
    rows, failed = [], False
    tmp = tempfile.mkdtemp()
    for line in open(os.path.join(args.clips, "cases.txt")):
        name, dist, ref = line.split()
        oracle = os.path.join(args.clips, f"oracle_{name}.json")
        want = frames(oracle)
        for run in args.runs.split(","):
            decoder, backend = run.split(":")
            log = os.path.join(tmp, f"{name}_{decoder}_{backend}.json")
            cmd = (
                f"vmafcompare name=cmp backend={backend} features=psnr,ciede "
                f"results-location={log} ! fakesink "
                + branch(os.path.join(args.clips, ref), decoder, "reference")
                + " "
                + branch(os.path.join(args.clips, dist), decoder, "distorted")
            )
            p = subprocess.run(
                ["gst-launch-1.0", "-q"] + cmd.split(), capture_output=True, text=True, timeout=300
            )
            if p.returncode != 0 or not os.path.exists(log):
                rows.append(f"| {name} | {decoder} / {backend} | failed: {p.stderr.strip()[-200:]} |")
                failed = True
                continue
            got = frames(log)
            worst = max(
                (abs(g[m] - w[m]) for g, w in zip(got, want) for m in METRICS if m in w),
                default=float("inf"),
            )
            ours = sum(g["vmaf"] for g in got) / max(len(got), 1)
            theirs = sum(w["vmaf"] for w in want) / len(want)
            notes = json.load(open(log))
            conv = notes.get("range_conversion") or notes.get("notes", {}).get("range_conversion", "")
            ok = len(got) == len(want) and worst <= 1e-4
            failed |= not ok
            rows.append(
                f"| {name} | {decoder} / {backend} | {len(got)}/{len(want)} | {ours:.4f} | "
                f"{theirs:.4f} | {worst:.1e} | {conv} |"
            )
    print("| case (distorted_reference) | decoder / backend | frames | pooled VMAF ours | FFmpeg + libvmaf | largest difference, any metric, any frame | conversion |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    print("\n".join(rows))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
