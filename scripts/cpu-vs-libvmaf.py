#!/usr/bin/env python3
"""The CPU backend against libvmaf 3.2.0's own CLI, whole process, side by side (issue 33).

Both tools read the same raw planar 4:2:0 files: `gst-launch-1.0 filesrc ! rawvideoparse !
vmafcompare backend=cpu threads=N` and `vmaf --threads N --gpumask 0xffffffff` (CPU only).
The files are made once from two H.264 clips (reference, distorted) decoded by GStreamer
(`openh264dec`, or `avdec_h264`), looped to `--frames` frames, and converted to 10 bits with
`videoconvert` for the 10-bit rows.

fps is "steady", as libvmaf's README on the GPU host measures it: `(N - 1) / (wall(N frames)
- wall(1 frame))`, the 1-frame run of each tool taking off its start-up (process, pipeline,
model, thread pool). With `--repeat K` each tool's pair of runs is made K times, the two
tools taking turns (ours, libvmaf, ours, ...), and the fastest of the K is reported, as
`cpu_bench` does (a shared host's other load only ever slows a run down); the spread of the
K, slowest to fastest, is printed beside it. Runs need several frames per thread: on a
32-core host, 2160p runs of 96 frames at 16 and 32 threads (33-65 frames in flight) moved
one cell from 0.89 to 1.04 against runs of 192 (`--frames 768` gives 2160p runs of 192), and
at 1-8 threads runs of 24 frames per thread read three 8-bit cells at 0.97-0.99 that runs of
48 per thread (the default) read at 1.06-1.11 on the same kind of host. With `--perf PATH` (a
`perf` binary) each N-frame run is also counted by `perf stat`: CPU seconds per frame
(task-clock), the cores' mean clock (cycles / task-clock) and instructions per cycle, which
tell a tool that waits (CPU-s flat, fps low) from one that works more per frame or at a lower
clock. The pooled VMAF of both tools is compared (they must
be equal to 6 decimals).

Prints one Markdown table. Example (the GPU host, after scripts/gpu-stage.sh):

    python3 scripts/cpu-vs-libvmaf.py --libvmaf .gpu/bin/libvmaf-vmaf \\
        --reference .gpu/clips/ref_1080p.mp4 --distorted .gpu/clips/dist_1080p.mp4 \\
        --threads 1,2,4,8,16,32 --depths 8,10 --models vmaf_v0.6.1,vmaf_v1.0.16_3d0h

`--reference2160 / --distorted2160` add the 2160p rows. Runs only where `gst-launch-1.0`
finds the plugin (GST_PLUGIN_PATH) and a decoder.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time


def run(cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def decoder():
    for d in ("avdec_h264", "openh264dec", "nvh264dec"):
        if run(["gst-inspect-1.0", d]).returncode == 0:
            return d
    sys.exit("no H.264 decoder (avdec_h264, openh264dec, nvh264dec) in this GStreamer")


def probe_size(clip, dec):
    out = run(["gst-launch-1.0", "-v", "filesrc", f"location={clip}", "!", "qtdemux", "!",
               "h264parse", "!", dec, "!", "videoconvert", "!", "fakesink", "num-buffers=1"])
    m = re.search(r"width=\(int\)(\d+), height=\(int\)(\d+)", out.stdout)
    if not m:
        sys.exit(f"cannot read the size of {clip}: {out.stderr[-400:]}")
    return int(m.group(1)), int(m.group(2))


def frame_bytes(w, h, bits):
    """Bytes of one planar 4:2:0 frame (I420, or I420_10LE for more than 8 bits)."""
    return w * h * 3 // 2 * (1 if bits == 8 else 2)


def loop_to(path, data, frame, frames):
    with open(path, "wb") as f:
        need = frames * frame
        while need > 0:
            chunk = data[: min(len(data), need)]
            f.write(chunk)
            need -= len(chunk)


def perf_stat(perf, cmd):
    """Runs cmd under `perf stat`; returns (returncode, wall s, stats dict, stderr)."""
    if not perf:
        t = time.perf_counter()
        r = run(cmd)
        return r.returncode, time.perf_counter() - t, {}, r.stderr
    fd, csv = tempfile.mkstemp(suffix=".perf")
    os.close(fd)
    full = [perf, "stat", "-x", ",", "-o", csv, "-e", "task-clock,cycles,instructions"] + cmd
    t = time.perf_counter()
    r = run(full)
    wall = time.perf_counter() - t
    stats = {}
    for line in open(csv):
        parts = line.strip().split(",")
        if len(parts) > 3 and parts[0] and not line.startswith("#"):
            try:
                stats[parts[2]] = float(parts[0])
            except ValueError:
                pass
    os.unlink(csv)
    return r.returncode, wall, stats, r.stderr


def ours_cmd(ref, dis, w, h, bits, threads, model, n, log):
    fmt = "i420" if bits == 8 else "i420-10le"
    frame = frame_bytes(w, h, bits)
    src = lambda loc, pad: ["filesrc", f"location={loc}", f"blocksize={frame}", f"num-buffers={n}",
                            "!", "rawvideoparse", f"width={w}", f"height={h}", f"format={fmt}",
                            "framerate=24/1", "!", f"cmp.{pad}"]
    return (["gst-launch-1.0", "-q"] + src(ref, "reference") + src(dis, "distorted")
            + ["vmafcompare", "name=cmp", "backend=cpu", f"threads={threads}", f"model={model}",
               "frame-message=false", f"results-location={log}", "!", "fakesink"])


def theirs_cmd(cli, ref, dis, w, h, bits, threads, model, n, log):
    return [cli, "-r", ref, "-d", dis, "-w", str(w), "-h", str(h), "-p", "420", "-b", str(bits),
            "--threads", str(threads), "--gpumask", "0xffffffff", "--frame_cnt", str(n),
            "--model", f"version={model}", "--json", "-o", log, "-q"]


def pooled(log):
    try:
        j = json.load(open(log))
        pm = j["pooled_metrics"]
        key = "vmaf" if "vmaf" in pm else next(k for k in pm if k.startswith("vmaf"))
        return pm[key]["mean"]
    except Exception:  # noqa: BLE001 - a missing or partial log shows as "?"
        return None


def measure(make, perf, n, tag, tmp):
    """Steady fps of one tool: the N-frame run and the 1-frame run."""
    log1, logn = os.path.join(tmp, f"{tag}_1.json"), os.path.join(tmp, f"{tag}_n.json")
    rc, wall1, _, err = perf_stat(None, make(1, log1))
    if rc != 0:
        return None, f"1-frame run failed: {err[-300:]}"
    rc, walln, stats, err = perf_stat(perf, make(n, logn))
    if rc != 0:
        return None, f"run failed: {err[-300:]}"
    fps = (n - 1) / max(walln - wall1, 1e-9)
    return {"fps": fps, "wall": walln, "stats": stats, "pooled": pooled(logn)}, None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--libvmaf", required=True,
                    help="libvmaf 3.2.0's vmaf CLI ('none': our rows only)")
    ap.add_argument("--reference", required=True, help="reference H.264 clip (MP4)")
    ap.add_argument("--distorted", required=True, help="distorted H.264 clip (MP4)")
    ap.add_argument("--reference2160", help="2160p reference clip (adds 2160p rows)")
    ap.add_argument("--distorted2160", help="2160p distorted clip")
    ap.add_argument("--threads", default="1,2,4,8,16,32")
    ap.add_argument("--depths", default="8,10")
    ap.add_argument("--models", default="vmaf_v0.6.1,vmaf_v1.0.16_3d0h")
    ap.add_argument("--frames", type=int, default=480,
                    help="frames at 1080p (2160p: a quarter); fewer at few threads, see --per-thread")
    ap.add_argument("--per-thread", type=int, default=48,
                    help="frames per thread at least (runs of N = min(frames, max(48, this x threads)); "
                         "24 left the 1-frame start-up run's jitter a visible share at 2-8 threads)")
    ap.add_argument("--repeat", type=int, default=1,
                    help="runs of each tool per cell, taking turns; the fastest is reported")
    ap.add_argument("--perf", help="a perf binary: adds CPU-s/frame, GHz and IPC columns")
    ap.add_argument("--work", default="/tmp/cpu-vs-libvmaf", help="folder for the raw files")
    a = ap.parse_args()
    os.makedirs(a.work, exist_ok=True)
    dec = decoder()
    pairs = [(a.reference, a.distorted, a.frames)]
    if a.reference2160 and a.distorted2160:
        pairs.append((a.reference2160, a.distorted2160, max(a.frames // 4, 48)))
    threads = [int(t) for t in a.threads.split(",")]
    depths = [int(d) for d in a.depths.split(",")]
    models = a.models.split(",")
    head = "| size | bits | model | threads | frames | vmafcompare fps | libvmaf fps | ours / libvmaf |"
    sep = "| --- | --- | --- | --- | --- | --- | --- | --- |"
    if a.repeat > 1:
        head += f" spread of {a.repeat} runs, ours / libvmaf |"
        sep += " --- |"
    if a.perf:
        head += " CPU-s/frame ours / libvmaf | GHz ours / libvmaf | IPC ours / libvmaf |"
        sep += " --- | --- | --- |"
    head += " pooled VMAF equal |"
    sep += " --- |"
    rows = []
    for ref_clip, dis_clip, frames in pairs:
        w, h = probe_size(ref_clip, dec)
        for bits in depths:
            raw = {}
            for role, clip in (("ref", ref_clip), ("dis", dis_clip)):
                path = os.path.join(a.work, f"{role}_{w}x{h}_{bits}_{frames}.yuv")
                if not os.path.exists(path):
                    fmt = "I420" if bits == 8 else "I420_10LE"
                    once = path + ".once"
                    r = run(["gst-launch-1.0", "-q", "filesrc", f"location={clip}", "!", "qtdemux",
                             "!", "h264parse", "!", dec, "!", "videoconvert", "!",
                             f"video/x-raw,format={fmt}", "!", "filesink", f"location={once}"])
                    if r.returncode != 0:
                        sys.exit(f"decoding {clip} failed: {r.stderr[-400:]}")
                    data = open(once, "rb").read()
                    os.unlink(once)
                    loop_to(path, data, frame_bytes(w, h, bits), frames)
                raw[role] = path
            for model in models:
                for t in threads:
                    n = min(frames, max(48, a.per_thread * t))
                    tmp = tempfile.mkdtemp(dir=a.work)
                    tools = [("ours", lambda m, log: ours_cmd(raw["ref"], raw["dis"], w, h, bits,
                                                              t, model, m, log))]
                    if a.libvmaf != "none":
                        tools.append(("libvmaf", lambda m, log: theirs_cmd(
                            a.libvmaf, raw["ref"], raw["dis"], w, h, bits, t, model, m, log)))
                    runs = {"ours": [], "libvmaf": []}
                    errors = {}
                    for k in range(max(a.repeat, 1)):
                        for name, make in tools:  # the tools take turns
                            r, e = measure(make, a.perf, n, f"{name}{k}", tmp)
                            if e:
                                errors.setdefault(name, e)
                            if r:
                                runs[name].append(r)
                    best = lambda rs: max(rs, key=lambda r: r["fps"]) if rs else None
                    ours, theirs = best(runs["ours"]), best(runs["libvmaf"])
                    for e in errors.values():
                        print(f"{w}x{h} {bits}-bit {model} {t} threads: {e}", file=sys.stderr)
                    f = lambda r: f"{r['fps']:.1f}" if r else "failed"
                    ratio = f"{ours['fps'] / theirs['fps']:.2f}" if ours and theirs else "-"
                    row = f"| {w}x{h} | {bits} | {model} | {t} | {n} | {f(ours)} | {f(theirs)} | {ratio} |"
                    if a.repeat > 1:
                        spread = lambda rs: "-".join(f"{r['fps']:.1f}" for r in
                                                     (min(rs, key=lambda r: r["fps"]), best(rs))) if rs else "-"
                        row += f" {spread(runs['ours'])} / {spread(runs['libvmaf'])} |"
                    if a.perf:
                        def col(fn):
                            v = [fn(r) if r and r["stats"] else None for r in (ours, theirs)]
                            return " / ".join("-" if x is None else x for x in v)
                        row += " " + col(lambda r: f"{r['stats'].get('task-clock', 0) / 1e3 / n:.4f}")
                        row += " | " + col(lambda r: f"{r['stats'].get('cycles', 0) / max(r['stats'].get('task-clock', 1), 1) / 1e6:.2f}")
                        row += " | " + col(lambda r: f"{r['stats'].get('instructions', 0) / max(r['stats'].get('cycles', 1), 1):.2f}") + " |"
                    same = (ours and theirs and ours["pooled"] is not None and theirs["pooled"] is not None
                            and abs(ours["pooled"] - theirs["pooled"]) < 5e-7)
                    row += f" {'yes' if same else 'NO'} ({ours['pooled'] if ours else '-'}) |"
                    rows.append(row)
                    print(row, file=sys.stderr, flush=True)
    print(head)
    print(sep)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
