"""Fixtures of the monitor's end-to-end tests (README "Monitoring"): the command, Prometheus, the
test clips and the frame-by-frame scores of those clips read from the files.

Without the `monitor` subcommand or /usr/bin/prometheus the tests that need them are skipped with
the reason; with VMAFCOMPARE_REQUIRE_MONITOR=1 (CI) that is a failure instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import harness  # noqa: E402

REQUIRE = os.environ.get("VMAFCOMPARE_REQUIRE_MONITOR") == "1"


def unavailable(reason: str):
    """Skip, or fail where VMAFCOMPARE_REQUIRE_MONITOR=1 says the parts must be there."""
    if REQUIRE:
        pytest.fail(f"{reason} (VMAFCOMPARE_REQUIRE_MONITOR=1)", pytrace=False)
    pytest.skip(reason)


def _find_command() -> str | None:
    for c in (os.environ.get("VMAFCOMPARE"), str(harness.REPO / "target" / "release" / "vmafcompare"),
              shutil.which("vmafcompare")):
        if c and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture(scope="session")
def command() -> str:
    """The vmafcompare command, with its `monitor` subcommand."""
    c = _find_command()
    if c is None:
        unavailable("vmafcompare command not built: cargo build --release --bin vmafcompare")
    # A command without the subcommand takes `monitor` for the reference file and prints its
    # own help, status 0: its usage line tells them apart.
    r = subprocess.run([c, "monitor", "--help"], capture_output=True, text=True, timeout=30)
    if r.returncode != 0 or "--config" not in r.stdout:
        unavailable(f"{c} has no `monitor` subcommand yet")
    return c


@pytest.fixture(scope="session")
def prometheus() -> str:
    if not os.access(harness.PROMETHEUS, os.X_OK):
        unavailable(f"{harness.PROMETHEUS} missing (Debian: apt-get install prometheus)")
    return harness.PROMETHEUS


@pytest.fixture(scope="session")
def clips() -> dict[str, Path]:
    """ref (640x360, 2 Mbit/s) and the ladder's 360p, 270p, 180p, MPEG-TS with AAC, cached."""
    return harness.make_clips()


@pytest.fixture(scope="session")
def file_scores(command: str, clips: dict[str, Path]) -> dict[str, list[float]]:
    """Clip name -> VMAF of each frame pair scored from the files (the command, CPU backend),
    `self` being the reference against itself; cached next to the clips."""
    key = "-".join(harness.clip_key(p) for p in clips.values())
    cache = harness.DATA / f"file-scores-{key}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    logs = harness.DATA / "logs"
    names = ["self", "360p", "270p", "180p"]
    dist = [harness.self_copy(clips), clips["360p"], clips["270p"], clips["180p"]]
    # One pass (the ladder mode: the reference decoded once), one log per file.
    r = subprocess.run([command, "--backend", "cpu", "-q", "--worst", "0", str(clips["ref"]), *map(str, dist),
                        "--log", str(logs / "f.json")], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = {}
    for name, path in zip(names, dist):
        log = json.loads((logs / f"f.{path.stem}.json").read_text())
        out[name] = [f["metrics"]["vmaf"] for f in log["frames"]]
    cache.write_text(json.dumps(out))
    return out


@pytest.fixture
def procs(tmp_path: Path):
    """Processes a test starts; all stopped when it ends, passed or not."""
    p = harness.Procs(tmp_path)
    yield p
    p.stop_all()
