#!/usr/bin/env python3
"""How many live channels one host scores without skipping a frame (issue 46, item 6).

For each channel count N: one sender process (gst-launch-1.0) streams the clips of
scripts/monitor-clips.sh over UDP (MPEG-TS demuxed and muxed again, multiudpsink sync=true
pacing it by the frames' timestamps) to N channels' ports at once, so every channel gets the same live
streams; `vmafcompare monitor` scores the N channels (a reference and its renditions each);
after a warm-up the script reads /metrics twice and prints, per N: frames scored per second
(all renditions), frames skipped and unpaired in the window (0 means it keeps up), the scoring
latency (mean), the monitor's CPU use (cores), and where nvidia-smi exists the GPU's SM and
NVDEC utilisation and memory.

  python3 scripts/monitor-load.py --clips DIR --channels 1,2,4 [--backend cuda]
      [--model vmaf_v0.6.1] [--warmup 8] [--window 12] [--vmafcompare target/release/vmafcompare]
"""

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def scrape(url):
    """The /metrics text as {(name, labels-string): value}."""
    out = {}
    with urllib.request.urlopen(url, timeout=5) as r:
        for line in r.read().decode().splitlines():
            if line.startswith("#") or not line.strip():
                continue
            m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)", line)
            if m:
                out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def total(metrics, name, where=""):
    return sum(v for (n, l), v in metrics.items() if n == name and where in l)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def gpu_sampler():
    """nvidia-smi dmon in the background (SM %, NVDEC %, memory), or None."""
    try:
        return subprocess.Popen(
            ["nvidia-smi", "dmon", "-s", "um", "-d", "1"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    except OSError:
        return None


def gpu_summary(proc):
    if proc is None:
        return "-"
    proc.send_signal(signal.SIGINT)
    try:
        text, _ = proc.communicate(timeout=5)
    except subprocess.TimeoutExpired:
        proc.kill()
        text, _ = proc.communicate()
    rows = [l.split() for l in text.splitlines() if l.strip() and not l.startswith("#")]
    # dmon -s um: gpu sm mem enc dec jpg ofa fb bar1 ccpm (columns vary by driver: find by header)
    header = next((l.lstrip("#").split() for l in text.splitlines() if l.startswith("# gpu")), None)
    if not header or not rows:
        return "-"
    col = {h: i for i, h in enumerate(header)}
    def mean(h):
        vals = [float(r[col[h]]) for r in rows if h in col and len(r) > col[h] and r[col[h]] not in ("-",)]
        return sum(vals) / len(vals) if vals else float("nan")
    return f"sm {mean('sm'):.0f}% dec {mean('dec'):.0f}% fb {mean('fb'):.0f} MiB"


def run(args, n, clips, labels):
    base = 20000 + 100 * n
    tmp = tempfile.mkdtemp(prefix="monload-")
    listen = f"127.0.0.1:{free_port()}"
    # The config: N channels, each the reference and the renditions on their own ports.
    lines = ["[server]", f'listen = "{listen}"', "[defaults]", f'backend = "{args.backend}"',
             f'model = "{args.model}"', f"device-id = {args.device_id}", "stall-timeout = 30.0",
             "input-timeout = 5.0"]
    for c in range(n):
        port = base + 4 * c
        lines += ["[[channel]]", f'name = "ch{c}"', f'reference = "udp://127.0.0.1:{port}"']
        for k, label in enumerate(labels):
            lines += ["[[channel.rendition]]", f'label = "{label}"',
                      f'uri = "udp://127.0.0.1:{port + 1 + k}"']
    config = os.path.join(tmp, "monitor.toml")
    with open(config, "w") as f:
        f.write("\n".join(lines) + "\n")
    env = dict(os.environ)
    monitor = subprocess.Popen([args.vmafcompare, "monitor", "--config", config],
                               stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "monitor.err"), "w"),
                               env=env)
    time.sleep(2.0)
    # One sender for every stream: all start on one clock, so the channels' streams line up.
    parts = []
    for k, clip in enumerate(clips):
        clients = ",".join(f"127.0.0.1:{base + 4 * c + k}" for c in range(n))
        # Demuxed and muxed again, the sink paced by the frames' own timestamps (tsparse's
        # PCR timestamps jumped by about 0.6 s every few seconds, losing ~17 frames each time).
        parts += ["filesrc", f"location={clip}", "!", "tsdemux", "!", "h264parse", "!",
                  "mpegtsmux", "alignment=7", "!", "multiudpsink", f"clients={clients}", "sync=true"]
    sender = subprocess.Popen(["gst-launch-1.0", "-q"] + parts,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://{listen}/metrics"
    try:
        time.sleep(args.warmup)
        gpu = gpu_sampler()
        m0, c0, t0 = scrape(url), cpu_seconds(monitor.pid), time.time()
        time.sleep(args.window)
        m1, c1, t1 = scrape(url), cpu_seconds(monitor.pid), time.time()
        gpu_text = gpu_summary(gpu)
    finally:
        sender.kill()
        monitor.send_signal(signal.SIGTERM)
        try:
            monitor.wait(timeout=20)
        except subprocess.TimeoutExpired:
            monitor.kill()
    dt = t1 - t0
    d = lambda name, where="": total(m1, name, where) - total(m0, name, where)
    scored = d("vmafcompare_frames_scored_total")
    skipped = d("vmafcompare_frames_skipped_total")
    unpaired = (d("vmafcompare_frames_unpaired_total", 'input="reference"'),
                d("vmafcompare_frames_unpaired_total", 'input="distorted"'))
    late = d("vmafcompare_frames_late_total")
    lat_sum, lat_n = d("vmafcompare_scoring_latency_seconds_sum"), d("vmafcompare_scoring_latency_seconds_count")
    restarts = total(m1, "vmafcompare_channel_restarts_total")
    latency = 1000 * lat_sum / lat_n if lat_n else float("nan")
    return (n, scored / dt, skipped, unpaired, late, latency, (c1 - c0) / dt, restarts, gpu_text)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--clips", required=True, help="scripts/monitor-clips.sh's folder")
    p.add_argument("--channels", default="1,2,4")
    p.add_argument("--backend", default="cuda")
    p.add_argument("--model", default="vmaf_v0.6.1")
    p.add_argument("--device-id", type=int, default=0)
    p.add_argument("--warmup", type=float, default=8.0)
    p.add_argument("--window", type=float, default=12.0)
    p.add_argument("--vmafcompare", default="target/release/vmafcompare")
    args = p.parse_args()
    ref = os.path.join(args.clips, "ref.ts")
    renditions = sorted(f for f in os.listdir(args.clips) if f.startswith("r_") and f.endswith(".ts"))
    labels = [f[2:-3] for f in renditions]
    clips = [ref] + [os.path.join(args.clips, f) for f in renditions]
    print(f"model {args.model}, backend {args.backend}, renditions {', '.join(labels)}, "
          f"window {args.window:.0f} s after {args.warmup:.0f} s", flush=True)
    rows = []
    for n in [int(x) for x in args.channels.split(",")]:
        rows.append(run(args, n, clips, labels))
        print("  ", rows[-1], flush=True)
    print("| channels | frames scored/s | skipped | unpaired reference / distorted | late | latency ms | monitor CPU (cores) | restarts | GPU |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, fps, sk, un, la, lat, cpu, rs, gpu in rows:
        print(f"| {n} | {fps:.1f} | {sk:.0f} | {un[0]:.0f} / {un[1]:.0f} | {la:.0f} | {lat:.0f} | {cpu:.2f} | {rs:.0f} | {gpu} |")


if __name__ == "__main__":
    sys.exit(main())
