"""The monitor end to end on 127.0.0.1 (issue 46 item 5): real H.264 senders (ffmpeg, one
process per input), `vmafcompare monitor` on the CPU backend, a real Prometheus scraping it every
second; what Prometheus stores is checked against the monitor's --events file and against the
same clips scored from the files.

Channel A: UDP, the reference and a 3-rendition ladder (360p crf 38, 270p crf 32, 180p crf 30;
180p with alert-threshold 99, which it is always under). Channel B: SRT (ffmpeg listens, the
monitor calls), the reference against a copy of itself ("self") and the 360p rendition.

The tests run in file order on one monitor: the fault tests kill and restart a sender (one UDP,
one SRT), the last one stops the monitor with SIGTERM.
"""

from __future__ import annotations

import json
import math
import signal
import statistics
import threading
import time
from pathlib import Path

import pytest

import harness as h

INPUT_TIMEOUT = 2.0
STALL_TIMEOUT = 8.0  # above what auto-align holds at the start: 2 s + 40 frames, plus the latency
STOP_TIMEOUT = 5.0
A = ["360p", "270p", "180p"]
B = ["self", "360p"]
RENDITIONS = [("A", r) for r in A] + [("B", r) for r in B]
TRANSCRIPT = h.DATA / "fault-transcript.txt"
# 180p is always under 99 (its VMAF alert is on); the renditions whose sender the fault tests
# restart have the VMAF alert off (once back, the sender's clip is out of step with the
# reference's and scores near 0), so that their alert is their input being down; the others
# have 1.0 (the [defaults]), which they are never under.
ALERT = {("A", "180p"): {"alert-threshold": 99.0}, ("A", "270p"): {"alert-threshold": 0.0},
         ("B", "360p"): {"alert-threshold": 0.0}}


class Live:
    """The senders, the monitor, Prometheus and the events the module's tests share."""

    def __init__(self, tmp: Path, command: str, clips: dict[str, Path]):
        self.tmp, self.command, self.clips = tmp, command, clips
        self.procs = h.Procs(tmp)
        self.senders: dict[tuple[str, str], h.Sender] = {}
        for r in ["reference", *A]:
            clip = clips["ref" if r == "reference" else r]
            self.senders["A", r] = h.Sender(self.procs, f"A-{r}", clip, "udp", h.free_port())
        for r in ["reference", *B]:
            clip = clips["ref" if r in ("reference", "self") else r]
            self.senders["B", r] = h.Sender(self.procs, f"B-{r}", clip, "srt", h.free_port())
        self.logs = tmp / "logs"
        self.logs.mkdir()
        channels = [
            h.Channel("A", self.senders["A", "reference"].uri,
                      [h.Rendition(r, self.senders["A", r].uri, ALERT.get(("A", r), {})) for r in A]),
            h.Channel("B", self.senders["B", "reference"].uri,
                      [h.Rendition(r, self.senders["B", r].uri, ALERT.get(("B", r), {})) for r in B]),
        ]
        defaults = {
            "backend": "cpu", "threads": 1, "auto-align": True, "alert-threshold": 1.0,
            # ffmpeg senders started together still start streaming up to about 0.7 s apart
            # on 2 busy cores (probing their input): search +-40 frames, not 15.
            "align-max-offset": 40,
            "input-timeout": INPUT_TIMEOUT, "stall-timeout": STALL_TIMEOUT,
            "results-location": str(self.logs / "%c-%s.json"),
        }
        # [server] listen and events are given on the command line (they override these).
        self.config = h.write_config(tmp / "monitor.toml", {"listen": "127.0.0.1:9750", "stop-timeout": STOP_TIMEOUT},
                                     defaults, channels)
        self.early: dict[str, tuple[int, str]] = {}

    def start(self) -> None:
        # Channel A's senders first (the monitor joins running UDP streams, as in production),
        # all at once so that their content is in step; B's after the monitor is up, so that
        # /readyz is 503 (B has scored nothing) before it is 200.
        barrier = threading.Barrier(len(A) + 1)

        def go(s):
            barrier.wait()
            s.start()

        threads = [threading.Thread(target=go, args=(self.senders["A", r],)) for r in ["reference", *A]]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.monitor = h.Monitor(self.procs, self.command, self.config, self.tmp / "events.ndjson")
        self.prom = h.Prometheus(self.procs, self.tmp / "prometheus", [f"{h.HOST}:{self.monitor.port}"])
        self.monitor.wait_listening()
        self.early = {p: self.monitor.get(p) for p in ("/healthz", "/readyz")}
        self.events = self.procs.add(h.Events(self.monitor.events_path))
        for r in ["reference", *B]:
            self.senders["B", r].start()
        self.prom.wait_ready()
        h.wait_for("/readyz 200", lambda: self.alive() and self.monitor.get("/readyz")[0] == 200, 30)

        def all_scraped():
            got = self.prom.values("vmafcompare_frames_scored_total")
            return all(got.get(k, 0) > 0 for k in RENDITIONS)
        h.wait_for("every rendition's frames_scored_total in Prometheus", all_scraped, 20)
        self.scoring = time.time()

    def alive(self) -> bool:
        if not self.monitor.proc.alive():
            raise AssertionError(f"the monitor exited with {self.monitor.proc.popen.returncode}:\n{self.monitor.proc.tail()}")
        return True

    def scored_for(self, seconds: float) -> None:
        """Wait until every rendition has been scored and scraped for `seconds`."""
        left = self.scoring + seconds - time.time()
        if left > 0:
            time.sleep(left)
        self.alive()


@pytest.fixture(scope="module")
def live(command, prometheus, clips, tmp_path_factory):
    lv = Live(tmp_path_factory.mktemp("live"), command, clips)
    try:
        lv.start()
        yield lv
    finally:
        lv.procs.stop_all()
        if hasattr(lv, "monitor"):
            print(f"\nmonitor stderr (last lines):\n{lv.monitor.proc.tail(15)}")


def test_health_and_ready(live):
    assert live.early["/healthz"][0] == 200
    status, body = live.early["/readyz"]
    assert status == 503, f"/readyz before channel B had a sender: {status} {body!r}"
    assert "B" in body, body
    assert live.monitor.get("/healthz")[0] == 200
    assert live.monitor.get("/readyz")[0] == 200


def test_metrics_served(live):
    """Every metric of the README is declared (but the restart counter, which has no series before
    a restart, and GPU memory, NVML's, on this CPU-only run); the per-rendition ones have each
    rendition."""
    status, text = live.monitor.get("/metrics")
    assert status == 200
    declared = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    names = ["vmafcompare_vmaf", "vmafcompare_metric", "vmafcompare_window_vmaf_mean", "vmafcompare_window_vmaf_min",
             "vmafcompare_pooled_vmaf_mean", "vmafcompare_frames_scored", "vmafcompare_frames_skipped",
             "vmafcompare_frames_unpaired", "vmafcompare_frames_late", "vmafcompare_alert", "vmafcompare_offset_frames",
             "vmafcompare_offset_seconds", "vmafcompare_input_up", "vmafcompare_scoring_latency_seconds",
             "vmafcompare_channel_up", "vmafcompare_channel_device", "vmafcompare_build_info"]
    missing = [n for n in names if n not in declared and n + "_total" not in declared]
    assert not missing, f"not declared at /metrics: {missing}"
    m = h.metrics_text(text)

    def value(name, **labels):
        return m.get((name, frozenset(labels.items())))

    for c, r in RENDITIONS:
        for name in ["vmafcompare_vmaf", "vmafcompare_frames_scored_total", "vmafcompare_input_up",
                     "vmafcompare_channel_device", "vmafcompare_alert"]:
            assert value(name, channel=c, rendition=r) is not None, f"{name}{{{c},{r}}} missing"
        assert value("vmafcompare_channel_device", channel=c, rendition=r) == -1  # backend = "cpu"
        assert value("vmafcompare_input_up", channel=c, rendition=r) == 1
    for c in "AB":
        assert value("vmafcompare_channel_up", channel=c) == 1
        assert value("vmafcompare_input_up", channel=c, rendition="reference") == 1
    assert any(n == "vmafcompare_build_info" and v == 1 for (n, _), v in m.items())


def test_prometheus_matches_events(live):
    """What Prometheus scraped is what the --events file says, frame for frame."""
    live.scored_for(8)
    assert not live.events.bad, f"lines of the events file that are not JSON: {live.events.bad[:3]}"
    now = time.time()
    scored = live.prom.samples("vmafcompare_frames_scored_total", "60s", now)
    vmaf = live.prom.samples("vmafcompare_vmaf", "60s", now)
    pooled = live.prom.samples("vmafcompare_pooled_vmaf_mean", "60s", now)
    wmean = live.prom.samples("vmafcompare_window_vmaf_mean", "60s", now)
    wmin = live.prom.samples("vmafcompare_window_vmaf_min", "60s", now)
    # The events file is followed by a thread of this process, which on 2 busy cores can see
    # a line a second after it was written: let it catch up with the last scrape.
    time.sleep(2.5)
    problems = {}
    for key in RENDITIONS:
        assert len(scored.get(key, [])) >= 5, f"{key}: {len(scored.get(key, []))} scrapes of frames_scored_total"
        p = (h.counter_vs_events(scored[key], live.events, *key, late=2.0)
             + h.gauge_vs_events(vmaf[key], live.events, *key, "vmaf", late=2.0)
             + h.gauge_vs_events(wmean[key], live.events, *key, "window_mean", late=2.0)
             + h.gauge_vs_events(wmin[key], live.events, *key, "window_min", late=2.0)
             + h.pooled_vs_events(pooled[key], scored[key], live.events, *key))
        if p:
            problems[key] = p
    assert not problems, json.dumps({f"{c}/{r}": p[:4] for (c, r), p in problems.items()}, indent=1)


def test_events_fields(live):
    for key in RENDITIONS:
        evs = live.events.of(*key)
        assert evs, key
        for e in evs[-50:]:
            for f in ("channel", "rendition", "index", "pts", "running_time", "vmaf", "window_mean", "window_min",
                      "skipped", "metrics"):
                assert f in e, f"{key}: no {f!r} in {e}"
            assert 0 <= e["vmaf"] <= 100 and e["window_min"] <= e["window_mean"] + 1e-9, e
            assert isinstance(e["metrics"], dict) and "integer_vif_scale0" in e["metrics"], e
        idx = [e["index"] for e in evs]
        assert idx == sorted(idx), f"{key}: event indices not in order"


def test_scores_are_real(live, file_scores):
    """The renditions score below the reference against itself (from the files: 98.98), and,
    where both are paired frame for frame, 270p (crf 32) above 360p (crf 38) as from the files
    (63.6 and 51.2 there; BBB's 180p at crf 30 is 54.2, so the ladder is not in size order on
    this content and that order is not asserted)."""
    live.scored_for(8)
    self_quality = statistics.mean(file_scores["self"])
    means = {key: statistics.mean(e["vmaf"] for e in live.events.of(*key)[25:]) for key in RENDITIONS}
    print("\nlive mean VMAF:", {f"{c}/{r}": round(v, 2) for (c, r), v in means.items()},
          "files:", {k: round(statistics.mean(v), 2) for k, v in file_scores.items()})
    for key, m in means.items():
        if key[1] != "self":
            assert m < self_quality - 20, f"{key}: mean {m:.2f} against {self_quality:.2f} of the reference itself"
    aligned = {r for r in ("360p", "270p") if h.matching([e["vmaf"] for e in live.events.of("A", r)[25:]], file_scores[r])
               >= 0.5 * (len(live.events.of("A", r)) - 25)}
    if aligned == {"360p", "270p"}:
        assert means["A", "270p"] > means["A", "360p"], means


def paired_offsets(live, file_scores, command, clips, key) -> tuple[int, dict[int, int], int]:
    """(frames scored, {offset: how many have the VMAF of the file pair with the rendition
    `offset` frames late}, how many have that of the file pair at one of those offsets), over
    the rendition's frames after its first second. A frame after a skipped one, or the first of
    a loop of the clip, has another value (the motion feature reads the previous frame), so a
    good pairing gives most, not all. Other offsets than 0 are scored only when 0 is not it."""
    vals = [e["vmaf"] for e in live.events.of(*key)[25:]]
    found = {0: h.matching(vals, file_scores[key[1]])}
    if found[0] >= 0.5 * len(vals):
        return len(vals), found, found[0]
    at = h.file_scores_at(command, clips, key[1], range(-3, 4))
    found.update({k: h.matching(vals, v) for k, v in at.items()})
    return len(vals), found, h.matching(vals, [x for v in at.values() for x in v])


IDS = [f"{c}-{r}" for c, r in RENDITIONS]


@pytest.mark.parametrize("key", RENDITIONS, ids=IDS)
def test_scores_are_frame_pairs(live, file_scores, command, clips, key):
    """Each rendition's scores are those of real frame pairs: most frames' VMAF is exactly that
    of a frame pair of the clips scored from the files, within 3 frames of each other."""
    live.scored_for(8)
    n, found, near = paired_offsets(live, file_scores, command, clips, key)
    assert n >= 100, f"{key}: {n} frames"
    if near < 0.5 * n:
        frames = live.prom.values("vmafcompare_offset_frames").get(key)
        secs = live.prom.values("vmafcompare_offset_seconds").get(key)
        pytest.fail(f"{key}: of {n} frames, {near} have the VMAF of a file pair within 3 frames (by offset: "
                    f"{found}); auto-align reported offset_frames {frames}, offset_seconds {secs}")


@pytest.mark.parametrize("key", RENDITIONS, ids=IDS)
def test_pairs_the_same_frames(live, file_scores, command, clips, key):
    """... and of the same frame pair: the monitor pairs each rendition's frame with the
    reference's frame of the same content (auto-align finds the offset between the senders,
    which start some ms apart; SRT senders start when the monitor calls them)."""
    live.scored_for(8)
    n, found, _ = paired_offsets(live, file_scores, command, clips, key)
    if found[0] >= 0.5 * n:
        return
    best = max(found, key=found.get)
    frames = live.prom.values("vmafcompare_offset_frames").get(key)
    secs = live.prom.values("vmafcompare_offset_seconds").get(key)
    if key[0] == "A":
        # Known limitation (issue 46's note): two independent ffmpeg UDP senders' timestamps
        # jitter by more than half a frame against each other on this machine, so with a delay
        # near a half frame the element's pairing by running time flips between the right
        # frame and its neighbour. SRT (channel B) holds it; the offset itself is right.
        pytest.xfail(f"{key}: {found[0]} of {n} frames at offset 0 (by offset: {found}; UDP "
                     f"timestamp jitter; offset_frames {frames}, offset_seconds {secs})")
    pytest.fail(f"{key}: {found[0]} of {n} frames have the VMAF of the same frame pair from the files, "
                f"{found[best]} that of the pair with the rendition {best} frame(s) late (by offset: {found}); "
                f"auto-align reported offset_frames {frames}, offset_seconds {secs}")


def test_vmaf_alert(live):
    """180p (alert-threshold 99) is in alert on its window mean; the others (1.0, or off) are not."""
    live.scored_for(4)
    alert = live.prom.values("vmafcompare_alert")
    wmean = live.prom.values("vmafcompare_window_vmaf_mean")
    assert alert.get(("A", "180p")) == 1, (alert, wmean)
    assert wmean[("A", "180p")] < 99
    for key in RENDITIONS:
        if key != ("A", "180p"):
            assert alert.get(key) == 0, (key, alert, wmean)


def snapshot(prom: h.Prometheus) -> dict:
    q = {
        "input_up": prom.values("vmafcompare_input_up"),
        "alert": prom.values("vmafcompare_alert"),
        "scored": prom.values("vmafcompare_frames_scored_total"),
        "vmaf": prom.values("vmafcompare_vmaf"),
        "window_mean": prom.values("vmafcompare_window_vmaf_mean"),
        "channel_up": {c: v for (c, _), v in prom.values("vmafcompare_channel_up").items()},
        "restarts": {},
    }
    for r in prom.query("vmafcompare_channel_restarts_total"):
        q["restarts"][f'{r["metric"].get("channel")}/{r["metric"].get("reason")}'] = float(r["value"][1])
    return q


def fault(live, victim: tuple[str, str], capsys) -> None:
    """Kill `victim`'s sender: within input-timeout and a few scrapes its input is down and in
    alert while every other rendition goes on scoring; start it again: within 20 s it is up, out
    of alert and scoring again. What Prometheus said is appended to the transcript."""
    live.scored_for(4)
    prom, (vc, vr) = live.prom, victim
    name = f"{vc}/{vr}"
    others = [k for k in RENDITIONS if k != victim]
    t0 = time.time()
    lines = [f"--- {name} ({'UDP' if vc == 'A' else 'SRT'}): its sender killed and started again"]

    def record(what: str, s: dict) -> dict:
        lines.append(f"t={time.time() - t0:6.2f} s  {what}")
        lines.append(f"    {name}: input_up={s['input_up'].get(victim)} alert={s['alert'].get(victim)} "
                     f"frames_scored_total={s['scored'].get(victim)} vmaf={s['vmaf'].get(victim, math.nan):.2f} "
                     f"window_mean={s['window_mean'].get(victim, math.nan):.2f}")
        lines.append("    frames_scored_total: " + ", ".join(f"{c}/{r}={s['scored'].get((c, r))}" for c, r in others))
        lines.append("    input_up: " + ", ".join(f"{c}/{r}={v:.0f}" for (c, r), v in sorted(s["input_up"].items())))
        lines.append(f"    channel_up: {s['channel_up']}  channel_restarts_total: {s['restarts'] or 'none'}")
        return s

    def write():
        h.DATA.mkdir(parents=True, exist_ok=True)
        head = (f"vmafcompare monitor fault test: channel A (UDP) 360p/270p/180p, channel B (SRT) self/360p; "
                f"input-timeout {INPUT_TIMEOUT} s, stall-timeout {STALL_TIMEOUT} s, Prometheus scrape 1 s; "
                f"values as Prometheus' /api/v1/query returned them\n")
        text = TRANSCRIPT.read_text() if victim != ("A", "270p") and TRANSCRIPT.exists() else head
        TRANSCRIPT.write_text(text + "\n".join(lines) + "\n")
        with capsys.disabled():
            print("\n" + "\n".join(lines))

    try:
        before = record("before: all senders up", snapshot(prom))
        assert before["input_up"].get(victim) == 1 and before["alert"].get(victim) == 0, before
        live.senders[victim].kill()
        t_kill = time.time()
        lines.append(f"t={t_kill - t0:6.2f} s  killed {name}'s sender (SIGKILL)")

        def down():
            s = snapshot(prom)
            return s if s["input_up"].get(victim) == 0 and s["alert"].get(victim) == 1 else None
        limit = INPUT_TIMEOUT + 5
        during = h.wait_for(f"{name} input_up 0 and alert 1 within {limit} s", down, limit, 0.25)
        record(f"down after {time.time() - t_kill:.1f} s", during)
        time.sleep(3)
        during2 = record(f"3 s later, {name} still without a sender", snapshot(prom))
        assert during2["input_up"].get(victim) == 0 and during2["alert"].get(victim) == 1, during2
        for k in others:
            assert during2["scored"][k] >= during["scored"][k] + 25, \
                f"{k} stopped scoring while {name} was down: {during['scored'][k]} -> {during2['scored'][k]}"
            assert during2["input_up"].get(k) == 1, (k, during2["input_up"])
        assert during2["scored"][victim] == during["scored"][victim], f"{name} scored without a sender"

        live.senders[victim].start()
        t_start = time.time()
        lines.append(f"t={t_start - t0:6.2f} s  started {name}'s sender again")

        def up():
            s = snapshot(prom)
            ok = (s["input_up"].get(victim) == 1 and s["alert"].get(victim) == 0
                  and s["scored"][victim] > during2["scored"][victim])
            return s if ok else None
        after = h.wait_for(f"{name} input_up 1, alert 0 and scoring again within 20 s", up, 20, 0.25)
        record(f"recovered {time.time() - t_start:.1f} s after the restart", after)
        # Back with auto-align, the rendition is aligned again: its new branch holds
        # align-duration plus align-max-offset frames (3.6 s here) before it scores on.
        def scoring_on():
            s = snapshot(prom)
            return s if s["scored"][victim] >= after["scored"][victim] + 25 else None
        after2 = h.wait_for(f"{name} scoring on (25 more frames within 10 s)", scoring_on, 10, 0.25)
        record("scoring on", after2)
        assert after2["input_up"].get(victim) == 1 and after2["alert"].get(victim) == 0, after2
        for k in others:
            assert after2["scored"][k] > during2["scored"][k], k
        recent = [e["vmaf"] for e in live.events.of(*victim)][-50:]
        earlier = [e["vmaf"] for e in live.events.of(*victim, until=t_kill)][-50:]
        lines.append(f"    {name}'s last 50 frames: mean VMAF {statistics.mean(recent):.2f} "
                     f"(50 before the kill: {statistics.mean(earlier):.2f}; the sender starts its clip "
                     f"again, out of step with the reference's)")
    finally:
        write()


def test_fault_udp_sender(live, capsys):
    fault(live, ("A", "270p"), capsys)


def test_fault_srt_sender(live, capsys):
    fault(live, ("B", "360p"), capsys)


def test_sigterm_stops_cleanly(live):
    """SIGTERM: every channel drains (its logs written) and the process exits 0 within
    stop-timeout; /healthz answered until then."""
    assert live.monitor.get("/healthz")[0] == 200
    t = time.monotonic()
    live.monitor.proc.send(signal.SIGTERM)
    rc = live.monitor.proc.wait(STOP_TIMEOUT + 2)
    took = time.monotonic() - t
    assert rc is not None, f"still running {STOP_TIMEOUT + 2} s after SIGTERM:\n{live.monitor.proc.tail()}"
    assert rc == 0, f"status {rc} after SIGTERM:\n{live.monitor.proc.tail()}"
    print(f"\nstopped {took:.2f} s after SIGTERM")
    log = live.monitor.proc.log.read_text(errors="replace")
    assert "panicked" not in log, log[-3000:]
    for c, r in RENDITIONS:
        path = live.logs / f"{c}-{r}.json"
        assert path.exists(), f"no results-location log {path.name}: {sorted(p.name for p in live.logs.iterdir())}"
        doc = json.loads(path.read_text())
        assert len(doc["frames"]) > 0 and "vmaf" in doc["pooled_metrics"], path.name
