"""The harness without the monitor: the clips, and a real Prometheus scraping a stand-in /metrics
(README's metric names) whose series the comparisons with an --events file accept, and reject
when they are wrong."""

from __future__ import annotations

import json
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import harness as h


def probe(path: Path) -> str:
    r = subprocess.run([h.ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True, timeout=30)
    return r.stderr


def test_clips(clips):
    sizes = {"ref": "640x360", "360p": "640x360", "270p": "480x270", "180p": "320x180"}
    for name, size in sizes.items():
        info = probe(clips[name])
        assert re.search(rf"Video: h264 .*{size}.* 25 fps", info), info
        assert "Audio: aac" in info, info
        d = re.search(r"Duration: 00:00:(\d+\.\d+)", info)
        assert d and abs(float(d.group(1)) - h.SECONDS) < 0.2, info
    # The reference is the good one: 2 Mbit/s against crf 30..38.
    assert clips["ref"].stat().st_size > 4 * clips["360p"].stat().st_size


class FakeMonitor:
    """Scores a frame every 40 ms for one rendition: an event line, then the counter, the last
    VMAF and the pooled mean served at /metrics, as the README names them."""

    def __init__(self, events: Path):
        self.events = events
        self.n, self.total, self.last = 0, 0.0, 0.0
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                with fake.lock:
                    n, total, last = fake.n, fake.total, fake.last
                lab = '{channel="A",rendition="360p"}'
                body = (
                    "# TYPE vmafcompare_frames_scored_total counter\n"
                    f"vmafcompare_frames_scored_total{lab} {n}\n"
                    "# TYPE vmafcompare_vmaf gauge\n"
                    f"vmafcompare_vmaf{lab} {last!r}\n"
                    "# TYPE vmafcompare_pooled_vmaf_mean gauge\n"
                    f"vmafcompare_pooled_vmaf_mean{lab} {(total / n if n else 0.0)!r}\n"
                ).encode()
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        self.server = ThreadingHTTPServer((h.HOST, h.free_port()), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        threading.Thread(target=self._score, daemon=True).start()

    def _score(self):
        with open(self.events, "a") as f:
            i = 0
            while not self.stopping.wait(0.04):
                v = 50 + 40 * ((i * 7919) % 101) / 101 + i * 1e-7
                f.write(json.dumps({"channel": "A", "rendition": "360p", "index": i, "vmaf": v}) + "\n")
                f.flush()
                with self.lock:
                    self.n, self.total, self.last = self.n + 1, self.total + v, v
                i += 1

    def stop(self, timeout: float = 5.0) -> int:
        self.stopping.set()
        self.server.shutdown()
        self.server.server_close()
        return 0


def test_prometheus_reads_back_a_scrape(prometheus, procs, tmp_path):
    events_path = tmp_path / "events.ndjson"
    fake = procs.add(FakeMonitor(events_path))
    events = procs.add(h.Events(events_path))
    prom = h.Prometheus(procs, tmp_path / "prom", [f"{h.HOST}:{fake.port}"])
    prom.wait_ready()
    h.wait_for("3 scrapes of the stand-in", lambda: len(prom.samples("vmafcompare_frames_scored_total").get(("A", "360p"), [])) >= 3, 20)
    assert prom.values('up{job="vmafcompare"}') == {(None, None): 1.0}
    key = ("A", "360p")
    scored = prom.samples("vmafcompare_frames_scored_total")[key]
    vmaf = prom.samples("vmafcompare_vmaf")[key]
    pooled = prom.samples("vmafcompare_pooled_vmaf_mean")[key]
    assert h.counter_vs_events(scored, events, *key) == []
    assert h.gauge_vs_events(vmaf, events, *key, "vmaf") == []
    assert h.pooled_vs_events(pooled, scored, events, *key) == []
    # The comparisons are not vacuous: values off by a few frames, or by 1e-6, are caught.
    assert h.counter_vs_events([(t, v + 40) for t, v in scored], events, *key)
    assert h.counter_vs_events([(t, v - 40) for t, v in scored], events, *key)
    assert h.gauge_vs_events([(t, v + 1e-6) for t, v in vmaf], events, *key, "vmaf")
    assert h.pooled_vs_events([(t, v * (1 + 1e-5)) for t, v in pooled], scored, events, *key)
