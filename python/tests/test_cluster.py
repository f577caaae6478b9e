"""Catalogues on a simulated 3-node Ray cluster: scores equal the single-file command's, a lost node, a killed driver, bad rows."""

from __future__ import annotations

import collections
import csv
import math
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import manifest_rows, run_cli, wait_for
from vmafcompare import results
from vmafcompare.report import analyse, bd_rate

TITLES = {"bbb-a", "bbb-b", "bikes-a", "bikes-b", "carphone-a", "carphone-b"}


def slow_command(tmp: Path, real: str, delay_s: float) -> tuple[Path, Path]:
    """A wrapper of the command that sleeps `delay_s` before scoring and records each attempt
    ("NODE start|end TITLE") in a trace file; returns (wrapper, trace)."""
    trace = tmp / "trace.txt"
    wrapper = tmp / "vmafcompare-slow"
    wrapper.write_text(f"""#!/bin/sh
case "$1" in --version) exec "{real}" "$@";; esac
for a; do case "$a" in */reference.mkv) t=$(basename "$(readlink -f "$a")" .ref.mkv);; esac; done
echo "$NODE_TAG start $t" >> "{trace}"
sleep {delay_s}
"{real}" "$@"; rc=$?
echo "$NODE_TAG end $t" >> "{trace}"
exit $rc
""")
    wrapper.chmod(0o755)
    trace.touch()
    return wrapper, trace


def check_results(out: Path, single: dict, titles: set[str] = TITLES) -> list[dict]:
    """Every rendition of `titles` once, status ok, pooled VMAF equal to the single-file
    command's; returns the rows."""
    rows = results.read_results(out).to_pylist()
    ok = [r for r in rows if r["status"] == "ok"]
    pairs = collections.Counter((r["title"], r["label"]) for r in ok)
    expected = {k for k in single if k[0] in titles}
    assert set(pairs) == expected
    assert all(n == 1 for n in pairs.values()), f"scored more than once: {[k for k, n in pairs.items() if n > 1]}"
    for r in ok:
        s = single[(r["title"], r["label"])]
        got = (r["vmaf_mean"], r["vmaf_harmonic_mean"], r["vmaf_min"], r["vmaf_max"], r["vmaf_p1"])
        assert got == (s["mean"], s["harmonic_mean"], s["min"], s["max"], s["percentile_1"]), (r["title"], r["label"])
    return rows


def test_catalogue_equals_single_command(cluster, catalogue, single_scores, command, tmp_path):
    out = tmp_path / "out"
    p = run_cli(["run", str(catalogue), "--out", str(out), "--address", cluster.address, "--backend", "cpu",
                 "--no-progress"])
    assert p.returncode == 0, p.stderr
    assert "6 titles scored, 0 already done, 0 with errors, 576 frame pairs" in p.stdout
    rows = check_results(out, single_scores)
    assert len(rows) == 36
    assert {r["plugin_version"] for r in rows} == {"0.1.0"} and {r["libvmaf_version"] for r in rows} == {"3.2.0"}
    assert {r["backend"] for r in rows} == {"cpu"} and {r["model"] for r in rows} == {"vmaf_v0.6.1"}
    assert len({r["ray_node_id"] for r in rows}) >= 2, "all titles ran on one node"
    assert len({r["key"] for r in rows}) == 36
    by_label = {(r["title"], r["label"]): r for r in rows}
    assert (by_label[("bbb-a", "slow-214w")]["width"], by_label[("bbb-a", "slow-214w")]["height"]) == (214, 120)
    assert by_label[("bbb-a", "slow-214w")]["scored_width"] == 320
    assert all(r["bitrate_kbps"] > 0 and r["frames"] == 16 for r in rows)
    # Per-frame rows: 16 per rendition, their mean the pooled mean (6-decimal values in the log).
    frames = results.read_results(out, results.FRAMES).to_pylist()
    assert len(frames) == 36 * 16
    per = collections.defaultdict(list)
    for f in frames:
        per[(f["title"], f["label"])].append(f["vmaf"])
    for k, v in per.items():
        assert abs(sum(v) / len(v) - single_scores[k]["mean"]) < 1e-5
    # A rerun finds every title done and scores nothing.
    again = run_cli(["run", str(catalogue), "--out", str(out), "--address", cluster.address, "--backend", "cpu",
                     "--no-progress"])
    assert again.returncode == 0, again.stderr
    assert "0 titles scored, 6 already done" in again.stdout
    # The report: a hull per title and encoder, BD-rate of ultrafast against slow per title.
    rep = run_cli(["report", str(out)])
    assert rep.returncode == 0, rep.stderr
    with open(out / "report" / "bdrate.csv", newline="") as f:
        bd = list(csv.DictReader(f))
    assert {r["title"] for r in bd} == TITLES and {r["test"] for r in bd} == {"x264-ultrafast"}
    report = analyse(out)
    for r in bd:
        hull = {enc: sorted(((p.bitrate_kbps, p.quality) for p in report.points
                             if p.title == r["title"] and p.encoder == enc and p.on_hull))
                for enc in ("x264-slow", "x264-ultrafast")}
        expect = bd_rate(hull["x264-slow"], hull["x264-ultrafast"])
        assert float(r["bd_rate_pct"]) == pytest.approx(expect, abs=1e-4)
        # x264's slow preset needs fewer bits than ultrafast for the same VMAF on every title.
        assert float(r["bd_rate_pct"]) > 10.0
    assert (out / "report" / "bdrate_hist.png").stat().st_size > 1000
    assert len(list((out / "report" / "plots").glob("*.png"))) == 6


def test_worker_node_killed_mid_run(cluster, catalogue, single_scores, command, tmp_path):
    wrapper, trace = slow_command(tmp_path, command, 1.5)
    out = tmp_path / "out"
    driver = subprocess.Popen([sys.executable, "-m", "vmafcompare.cli", "run", str(catalogue), "--out", str(out),
                               "--address", cluster.address, "--backend", "cpu", "--no-progress",
                               "--vmafcompare", str(wrapper)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    victim = max(t for t in cluster.nodes if t != "head")
    wait_for(lambda: f"{victim} start" in trace.read_text(), 60, f"a title started on node {victim}")
    killed_title = next(line.split()[2] for line in trace.read_text().splitlines()
                        if line.startswith(f"{victim} start"))
    cluster.kill(victim)
    stdout, stderr = driver.communicate(timeout=180)
    cluster.add_worker()  # back to 3 nodes for the next tests
    assert driver.returncode == 0, stderr
    lines = trace.read_text().splitlines()
    print(f"\nnode {victim} killed while scoring {killed_title}; attempts:\n" + "\n".join(lines))
    print(stdout)
    starts = collections.Counter(line.split()[2] for line in lines if " start " in line)
    ends = collections.Counter(line.split()[2] for line in lines if " end " in line)
    assert f"{victim} end {killed_title}" not in lines, "the victim finished its title before it was killed"
    assert starts[killed_title] >= 2, "the lost title was not retried"
    assert set(ends) == TITLES and all(n == 1 for n in ends.values()), f"completed attempts per title: {ends}"
    check_results(out, single_scores)


def test_driver_killed_and_restarted(cluster, catalogue, single_scores, command, tmp_path):
    wrapper, trace = slow_command(tmp_path, command, 1.0)
    out = tmp_path / "out"
    parts = out / results.RENDITIONS
    driver = subprocess.Popen([sys.executable, "-m", "vmafcompare.cli", "run", str(catalogue), "--out", str(out),
                               "--address", cluster.address, "--backend", "cpu", "--no-progress",
                               "--vmafcompare", str(wrapper)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: parts.is_dir() and len(list(parts.glob("part-*.parquet"))) >= 2, 90, "2 titles stored")
    driver.send_signal(signal.SIGKILL)
    driver.wait()
    stored = {p: p.stat().st_mtime_ns for p in parts.glob("part-*.parquet")}
    done = {pq.read_table(p)["title"][0].as_py() for p in stored}
    assert 2 <= len(done) < 6, done
    restart = run_cli(["run", str(catalogue), "--out", str(out), "--address", cluster.address, "--backend", "cpu",
                       "--no-progress"])
    assert restart.returncode == 0, restart.stderr
    print(f"\ndriver killed with {sorted(done)} stored; restart:\n{restart.stdout}")
    assert f"{6 - len(done)} titles scored, {len(done)} already done" in restart.stdout
    skipped = set(restart.stdout.split("skipped (already in ")[1].split(": ", 1)[1].strip().split(", "))
    assert skipped == done
    assert {p: p.stat().st_mtime_ns for p in stored} == stored, "a stored title was written again"
    check_results(out, single_scores)


def test_manifest_errors(cluster, catalogue, single_scores, command, tmp_path):
    rows = [r for r in manifest_rows(catalogue) if r["title"] in ("bbb-a", "bikes-a", "carphone-a")]
    base = catalogue.parent
    (tmp_path / "notes.mp4").write_text("this is not a video\n")
    bad = [
        {**rows[0], "rendition": str(tmp_path / "gone.mp4"), "label": "gone"},           # missing file
        {**rows[6], "rendition": str(tmp_path / "notes.mp4"), "label": "notes"},          # not a video
        dict(rows[12]),                                                                   # duplicate row
    ]
    manifest = tmp_path / "manifest.csv"
    with open(manifest, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        for r in rows + bad:
            w.writerow({**r, "reference": str(base / r["reference"]),
                        "rendition": r["rendition"] if r["rendition"].startswith("/") else str(base / r["rendition"])})
    out = tmp_path / "out"
    p = run_cli(["run", str(manifest), "--out", str(out), "--address", cluster.address, "--backend", "cpu",
                 "--no-progress"])
    print(p.stdout, p.stderr)
    assert p.returncode == 1
    errors = [line for line in p.stderr.splitlines() if line.startswith("vmafcompare-catalogue: ")]
    assert len(errors) == 3, errors
    assert any("gone.mp4: no such file" in e and "'gone'" in e for e in errors)
    assert any("notes.mp4: cannot decode" in e for e in errors)
    assert any("line 22" in e and "repeats line 14" in e for e in errors)
    table = check_results(out, single_scores, {"bbb-a", "bikes-a", "carphone-a"})
    failed = {r["label"]: r["error"] for r in table if r["status"] == "error"}
    assert set(failed) == {"gone", "notes", f"{rows[12]['label']} (line 22)"}
    assert len(table) == 18 + 3
    assert not math.isnan(sum(r["vmaf_mean"] for r in table if r["status"] == "ok"))
