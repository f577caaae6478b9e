"""Fixtures: the vmafcompare command, a 6-title catalogue of real clips, its single-file scores, a 3-node Ray cluster."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PYTHON_DIR = REPO / "python"
# The checkout's package wins over an installed copy, in this process and in Ray's workers
# (they inherit the environment of the nodes started here).
sys.path.insert(0, str(PYTHON_DIR))
sys.path.insert(0, str(PYTHON_DIR / "tests"))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PYTHON_DIR), os.environ.get("PYTHONPATH", "")]))
os.environ.setdefault("RAY_DISABLE_USAGE_STATS", "1")

from make_catalogue import make_catalogue  # noqa: E402


def _find_command() -> str | None:
    for c in (os.environ.get("VMAFCOMPARE"), str(REPO / "target" / "release" / "vmafcompare"), shutil.which("vmafcompare")):
        if c and os.access(c, os.X_OK):
            return c
    return None


@pytest.fixture(scope="session")
def command() -> str:
    """The vmafcompare command (scripts/test.sh builds target/release/vmafcompare first)."""
    c = _find_command()
    if c is None:
        pytest.skip("vmafcompare command not built: cargo build --release --bin vmafcompare")
    os.environ["VMAFCOMPARE"] = c
    return c


@pytest.fixture(scope="session")
def catalogue(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """manifest.csv of 6 titles (16 frames, 176-320 wide), 3 rungs x 2 x264 presets each."""
    return make_catalogue(tmp_path_factory.mktemp("catalogue"))


def manifest_rows(manifest: Path) -> list[dict[str, str]]:
    with open(manifest, newline="") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="session")
def single_scores(catalogue: Path, command: str, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], dict]:
    """(title, label) -> pooled VMAF of the rendition scored alone by the command
    (`vmafcompare --backend cpu REF DIST --log x.json`)."""
    logs = tmp_path_factory.mktemp("single")
    out: dict[tuple[str, str], dict] = {}
    procs = []
    for row in manifest_rows(catalogue):
        log = logs / f"{row['title']}.{row['label']}.json"
        procs.append((row, log, subprocess.Popen(
            [command, "--backend", "cpu", "--threads", "1", "-q", "--worst", "0", "--log", str(log),
             str(catalogue.parent / row["reference"]), str(catalogue.parent / row["rendition"])],
            stdout=subprocess.DEVNULL)))
        if len(procs) % 2 == 0:
            for *_, p in procs[-2:]:
                p.wait()
    for row, log, p in procs:
        assert p.wait() == 0, f"single-file command failed for {row}"
        out[(row["title"], row["label"])] = json.loads(log.read_text())["pooled_metrics"]["vmaf"]
    return out


class SimCluster:
    """A Ray cluster of 3 nodes on this machine (ray.cluster_utils.Cluster): the head and
    two workers, 1 CPU each; each node's processes see NODE_TAG (head, w1, w2, ...)."""

    def __init__(self) -> None:
        from ray.cluster_utils import Cluster

        fast_failure = {"health_check_period_ms": 500, "health_check_failure_threshold": 3,
                        "health_check_initial_delay_ms": 0}
        self.cluster = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "include_dashboard": False, "env_vars": {"NODE_TAG": "head"},
            "_system_config": fast_failure})
        self.nodes = {"head": self.cluster.head_node}
        self.count = 0
        for _ in range(2):
            self.add_worker()
        self.cluster.wait_for_nodes()

    @property
    def address(self) -> str:
        return self.cluster.address

    def add_worker(self) -> str:
        self.count += 1
        tag = f"w{self.count}"
        self.nodes[tag] = self.cluster.add_node(num_cpus=1, env_vars={"NODE_TAG": tag})
        return tag

    def kill(self, tag: str) -> None:
        """Kill a node's processes at once (raylet, object store, workers), as a lost machine."""
        self.cluster.remove_node(self.nodes.pop(tag), allow_graceful=False)


@pytest.fixture(scope="session")
def cluster(command: str) -> SimCluster:
    """The cluster; its nodes find the command through $VMAFCOMPARE (set by `command`)."""
    c = SimCluster()
    yield c
    c.cluster.shutdown()


def run_cli(args: list[str], **kw) -> subprocess.CompletedProcess:
    """vmafcompare-catalogue ARGS in a new Python process (a driver of its own)."""
    return subprocess.run([sys.executable, "-m", "vmafcompare.cli", *args], capture_output=True, text=True,
                          timeout=240, **kw)


def wait_for(cond, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
