"""Rate-quality analysis of a scored catalogue: points, convex hull over resolutions, BD-rate between encoders."""

from __future__ import annotations

import csv
import math
import re
import statistics
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import bjontegaard
import numpy as np

from . import results


@dataclass
class Point:
    """One rendition on the rate-quality plane: bitrate in kbit/s, quality in the metric's
    units (VMAF: 0-100), its rung's label and size in pixels."""

    title: str
    encoder: str
    label: str
    width: int
    height: int
    bitrate_kbps: float
    quality: float
    on_hull: bool = False


@dataclass
class BdRate:
    """BD-rate of `test` against `anchor` for one title (percent: negative = fewer bits for
    the same quality), NaN with `note` set when it cannot be computed."""

    title: str
    anchor: str
    test: str
    bd_rate_pct: float
    anchor_points: int
    test_points: int
    note: str = ""


@dataclass
class Report:
    """Points per title and encoder, hulls (the points with on_hull set), BD-rates per title,
    and per test encoder the catalogue's mean and median BD-rate over the titles that have one."""

    points: list[Point]
    bd_rates: list[BdRate]
    catalogue: dict[str, dict[str, float]] = field(default_factory=dict)
    anchor: str = ""
    metric: str = "vmaf_mean"


def upper_hull(points: Sequence[Point]) -> list[Point]:
    """The upper convex hull of `points` in (bitrate, quality), the way per-title encoding
    picks rungs: sorted by bitrate, each point of higher quality than every cheaper one, and
    no point below the chord of its neighbours. Returns the hull's points by bitrate (a point
    that is not on it is a rung no bitrate should use)."""
    pts = sorted(points, key=lambda p: (p.bitrate_kbps, -p.quality))
    pareto: list[Point] = []
    for p in pts:
        if not pareto or p.quality > pareto[-1].quality:
            pareto.append(p)
    hull: list[Point] = []
    for p in pareto:
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            cross = (b.bitrate_kbps - a.bitrate_kbps) * (p.quality - a.quality) - \
                (b.quality - a.quality) * (p.bitrate_kbps - a.bitrate_kbps)
            if cross >= 0:  # b is on or below the chord a-p
                hull.pop()
            else:
                break
        hull.append(p)
    return hull


def bd_rate(anchor: Sequence[tuple[float, float]], test: Sequence[tuple[float, float]]) -> float:
    """BD-rate (percent) of `test` against `anchor`, each a sequence of (bitrate, quality)
    points (at least 2, quality rising with bitrate), with the bjontegaard package's PCHIP
    interpolation of log10(rate) over quality: the JCT-VC common test conditions' method
    (JCTVC-L1100's Excel sheet). Integrated over the qualities both curves cover; NaN where
    they do not overlap. Errors: ValueError for fewer than 2 points."""
    if len(anchor) < 2 or len(test) < 2:
        raise ValueError("BD-rate needs at least 2 points per curve")
    a = sorted(anchor, key=lambda p: p[1])
    t = sorted(test, key=lambda p: p[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(bjontegaard.bd_rate([p[0] for p in a], [p[1] for p in a], [p[0] for p in t],
                                         [p[1] for p in t], method="pchip", require_matching_points=False,
                                         min_overlap=0))


def analyse(out_dir: str | Path, metric: str = "vmaf_mean", anchor: str | None = None) -> Report:
    """Build the report from DIR/renditions.parquet: one point per scored rendition (bitrate
    known), the hull per title and encoder, and BD-rate of every encoder against `anchor`
    (default: the first encoder by name) per title over the hull points, and over the
    catalogue (mean and median of the titles' values). Errors: ValueError when no rendition
    has status ok or `metric` is not a column."""
    table = results.read_results(out_dir, results.RENDITIONS)
    if table.num_rows == 0:
        raise ValueError(f"{out_dir}: no results ({results.RENDITIONS} is empty or missing)")
    if metric not in table.column_names:
        raise ValueError(f"metric column {metric!r} not in the results (e.g. vmaf_mean, vmaf_harmonic_mean, vmaf_p5)")
    points: list[Point] = []
    for row in table.to_pylist():
        if row.get("status") != "ok" or row.get("bitrate_kbps") is None or row.get(metric) is None:
            continue
        points.append(Point(row["title"], row.get("encoder") or "", row["label"], int(row.get("width") or 0),
                            int(row.get("height") or 0), float(row["bitrate_kbps"]), float(row[metric])))
    groups: dict[tuple[str, str], list[Point]] = {}
    for p in points:
        groups.setdefault((p.title, p.encoder), []).append(p)
    hulls: dict[tuple[str, str], list[Point]] = {}
    for key, pts in groups.items():
        hulls[key] = upper_hull(pts)
        for p in hulls[key]:
            p.on_hull = True
    encoders = sorted({p.encoder for p in points})
    anchor = anchor if anchor is not None else (encoders[0] if encoders else "")
    bds: list[BdRate] = []
    for title in sorted({p.title for p in points}):
        ha = hulls.get((title, anchor), [])
        for enc in encoders:
            if enc == anchor:
                continue
            ht = hulls.get((title, enc), [])
            if len(ha) < 2 or len(ht) < 2:
                bds.append(BdRate(title, anchor, enc, math.nan, len(ha), len(ht), "fewer than 2 hull points"))
                continue
            value = bd_rate([(p.bitrate_kbps, p.quality) for p in ha], [(p.bitrate_kbps, p.quality) for p in ht])
            bds.append(BdRate(title, anchor, enc, value, len(ha), len(ht),
                              "" if math.isfinite(value) else "quality ranges do not overlap"))
    catalogue: dict[str, dict[str, float]] = {}
    for enc in encoders:
        vals = [b.bd_rate_pct for b in bds if b.test == enc and math.isfinite(b.bd_rate_pct)]
        if enc != anchor:
            catalogue[enc] = {"titles": float(len(vals)),
                              "mean": statistics.fmean(vals) if vals else math.nan,
                              "median": statistics.median(vals) if vals else math.nan}
    return Report(points, bds, catalogue, anchor, metric)


def _md_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(v: object) -> str:
        return f"{v:.2f}" if isinstance(v, float) else str(v)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.+-]", "_", name) or "_"


def write_report(report: Report, dest: str | Path, plots: bool = True) -> list[Path]:
    """Write the report into `dest`: points.csv (every point, on_hull marked), hull.csv (per
    title and encoder the hull's rungs and the bitrate range each should serve, kbit/s),
    bdrate.csv, report.md (the BD-rate tables in Markdown), and with `plots` one PNG per title
    (curves and hulls) and bdrate_hist.png. Returns the paths written."""
    d = Path(dest)
    d.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with open(d / "points.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["title", "encoder", "label", "width", "height", "bitrate_kbps", report.metric, "on_hull"])
        for p in sorted(report.points, key=lambda p: (p.title, p.encoder, p.bitrate_kbps)):
            w.writerow([p.title, p.encoder, p.label, p.width, p.height, f"{p.bitrate_kbps:.3f}", f"{p.quality:.6f}",
                        int(p.on_hull)])
    written.append(d / "points.csv")
    with open(d / "hull.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["title", "encoder", "label", "width", "height", "bitrate_kbps", report.metric,
                    "use_from_kbps", "use_to_kbps"])
        groups: dict[tuple[str, str], list[Point]] = {}
        for p in report.points:
            if p.on_hull:
                groups.setdefault((p.title, p.encoder), []).append(p)
        for (title, enc), pts in sorted(groups.items()):
            pts.sort(key=lambda p: p.bitrate_kbps)
            for i, p in enumerate(pts):
                upto = f"{pts[i + 1].bitrate_kbps:.3f}" if i + 1 < len(pts) else ""
                w.writerow([title, enc, p.label, p.width, p.height, f"{p.bitrate_kbps:.3f}", f"{p.quality:.6f}",
                            f"{p.bitrate_kbps:.3f}", upto])
    written.append(d / "hull.csv")
    with open(d / "bdrate.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["title", "anchor", "test", "bd_rate_pct", "anchor_points", "test_points", "note"])
        for b in report.bd_rates:
            w.writerow([b.title, b.anchor, b.test, f"{b.bd_rate_pct:.4f}", b.anchor_points, b.test_points, b.note])
    written.append(d / "bdrate.csv")
    md = [f"# Catalogue report\n\nQuality: `{report.metric}`; anchor encoder: `{report.anchor}`; BD-rate with "
          "PCHIP (JCT-VC) over each encoder's convex hull; negative = fewer bits for the same quality.\n\n",
          "## Catalogue\n\n",
          _md_table(["encoder", "titles", "mean BD-rate %", "median BD-rate %"],
                    [[e, int(v["titles"]), v["mean"], v["median"]] for e, v in sorted(report.catalogue.items())]),
          "\n## Per title\n\n",
          _md_table(["title", "test", "BD-rate %", "hull points (anchor/test)", "note"],
                    [[b.title, b.test, b.bd_rate_pct, f"{b.anchor_points}/{b.test_points}", b.note]
                     for b in report.bd_rates])]
    (d / "report.md").write_text("".join(md))
    written.append(d / "report.md")
    if plots:
        written += _plots(report, d)
    return written


def _plots(report: Report, d: Path) -> list[Path]:
    """Per-title rate-quality curves with hulls, and the histogram of per-title BD-rates."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out: list[Path] = []
    (d / "plots").mkdir(exist_ok=True)
    for title in sorted({p.title for p in report.points}):
        fig, ax = plt.subplots(figsize=(6, 4))
        for i, enc in enumerate(sorted({p.encoder for p in report.points if p.title == title})):
            pts = sorted((p for p in report.points if p.title == title and p.encoder == enc),
                         key=lambda p: p.bitrate_kbps)
            color = f"C{i}"
            ax.scatter([p.bitrate_kbps for p in pts], [p.quality for p in pts], color=color, alpha=0.5)
            hull = [p for p in pts if p.on_hull]
            ax.plot([p.bitrate_kbps for p in hull], [p.quality for p in hull], color=color, marker="o",
                    label=f"{enc or '(no encoder)'} hull")
            for p in pts:
                ax.annotate(f"{p.height}p" if p.height else p.label, (p.bitrate_kbps, p.quality), fontsize=7,
                            xytext=(3, -8), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel("bitrate (kbit/s)")
        ax.set_ylabel(report.metric)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        path = d / "plots" / f"{_safe(title)}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        out.append(path)
    vals = {b.test: [] for b in report.bd_rates}
    for b in report.bd_rates:
        if math.isfinite(b.bd_rate_pct):
            vals[b.test].append(b.bd_rate_pct)
    fig, ax = plt.subplots(figsize=(6, 4))
    for enc, v in sorted(vals.items()):
        if v:
            ax.hist(np.array(v), bins=min(20, max(5, len(v))), alpha=0.6, label=f"{enc} vs {report.anchor}")
    ax.axvline(0, color="k", lw=0.8)
    ax.set_xlabel("BD-rate per title (%)")
    ax.set_ylabel("titles")
    ax.legend()
    fig.tight_layout()
    fig.savefig(d / "bdrate_hist.png", dpi=100)
    plt.close(fig)
    out.append(d / "bdrate_hist.png")
    return out
