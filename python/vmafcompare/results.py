"""Parquet results of a catalogue: one part file per title in DIR/renditions.parquet/ and DIR/frames.parquet/."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pyarrow.parquet as pq

from .title import Provenance, TitleScore

RENDITIONS = "renditions.parquet"
FRAMES = "frames.parquet"
STATS = ("mean", "harmonic_mean", "min", "max", "p1", "p5", "p10")


def rendition_key(title: str, label: str, model: str, plugin_version: str,
                  reference_hash: str, content_hash: str) -> str:
    """The key of one result row (hex, 32 characters): what makes a score reusable. A rerun
    with the same title, rendition label, model, plugin version and file contents (reference
    and rendition) finds its key and skips the title."""
    h = hashlib.blake2b(digest_size=16)
    for part in (title, label, model, plugin_version, reference_hash, content_hash):
        h.update(part.encode())
        h.update(b"\0")
    return h.hexdigest()


def part_name(title: str) -> str:
    """The file name of a title's part (the same in both datasets; a rerun replaces it)."""
    return f"part-{hashlib.blake2b(title.encode(), digest_size=10).hexdigest()}.parquet"


def _write_atomic(table: pa.Table, path: Path) -> None:
    """Write `table` to `path` through a temporary file and a rename, so a reader (or a rerun
    after a crash) sees the whole file or none of it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def _provenance_columns(p: Provenance | None) -> dict[str, object]:
    if p is None:
        return {"plugin_version": "", "libvmaf_version": "", "backend": "", "device": "", "host": "",
                "ray_node_id": "", "elapsed_s": None}
    return {"plugin_version": p.plugin_version, "libvmaf_version": p.libvmaf_version, "backend": p.backend,
            "device": p.device, "host": p.host, "ray_node_id": p.ray_node_id, "elapsed_s": p.elapsed_s}


def title_tables(
    score: TitleScore | None,
    *,
    title: str,
    reference: str,
    model: str,
    plugin_version: str,
    hashes: dict[str, str],
    renditions: Iterable[tuple[str, str, str, int]],
    errors: dict[str, str],
) -> tuple[pa.Table, pa.Table]:
    """The renditions and frames tables of one title.

    `score`: the scored title (None when the whole title failed); `hashes`: path -> content
    hash (the reference's included); `renditions`: (label, path, encoder, manifest line) of
    every rendition the manifest gives for the title; `errors`: label -> error message for the
    renditions (or, under the label "", the title) that failed. One renditions row per
    rendition: status "ok" with its pooled metrics (`{metric}_{stat}`, stats as STATS), or
    status "error" with `error` set. Frames rows: (key, title, label, frame) and one column per
    per-frame metric.
    """
    now = dt.datetime.now(dt.timezone.utc)
    scored = {r.label: r for r in (score.renditions if score else [])}
    ref_hash = hashes.get(reference, "")
    rows: list[dict[str, object]] = []
    frame_tables: list[pa.Table] = []
    for label, path, encoder, line in renditions:
        key = rendition_key(title, label, model, plugin_version, ref_hash, hashes.get(path, ""))
        row: dict[str, object] = {
            "key": key, "title": title, "label": label, "encoder": encoder, "reference": reference,
            "path": path, "manifest_line": line, "model": model, "reference_hash": ref_hash,
            "content_hash": hashes.get(path, ""), "scored_at": now,
            **_provenance_columns(score.provenance if score else None),
        }
        if not row["plugin_version"]:
            row["plugin_version"] = plugin_version
        r = scored.get(label)
        if r is None:
            row.update(status="error", error=errors.get(label) or errors.get("") or "not scored")
        else:
            row.update(
                status="ok", error="", width=r.width, height=r.height, scored_width=r.scored_width,
                scored_height=r.scored_height, frames=int(r.frame_num.size), size_bytes=r.size_bytes,
                bitrate_kbps=r.bitrate_kbps, measured_bitrate_kbps=r.measured_bitrate_kbps,
                manifest_bitrate_kbps=r.manifest_bitrate_kbps, bitrate_source=r.bitrate_source)
            for metric, stats in r.pooled.items():
                for stat in STATS:
                    if stat in stats:
                        row[f"{metric}_{stat}"] = stats[stat]
            n = r.frame_num.size
            frame_tables.append(pa.table({
                "key": pa.array([key] * n, pa.string()), "title": pa.array([title] * n, pa.string()),
                "label": pa.array([label] * n, pa.string()), "frame": pa.array(r.frame_num, pa.int64()),
                **{m: pa.array(v, pa.float64()) for m, v in r.frames.items()}}))
        rows.append(row)
    renditions_table = pa.Table.from_pylist(rows)
    frames_table = (pa.concat_tables(frame_tables, promote_options="default") if frame_tables
                    else pa.table({"key": pa.array([], pa.string()), "title": pa.array([], pa.string()),
                                   "label": pa.array([], pa.string()), "frame": pa.array([], pa.int64())}))
    return renditions_table, frames_table


def write_title(out_dir: str | Path, title: str, renditions: pa.Table, frames: pa.Table) -> None:
    """Store a title's tables: its frames first, then its renditions (the renditions part is
    what marks the title done, so a crash between the two leaves the title to be redone)."""
    out = Path(out_dir)
    _write_atomic(frames, out / FRAMES / part_name(title))
    _write_atomic(renditions, out / RENDITIONS / part_name(title))


def read_results(out_dir: str | Path, which: str = RENDITIONS) -> pa.Table:
    """All part files of `which` (RENDITIONS or FRAMES) as one table, columns unified (a column
    one part lacks is null there). An empty table when there is none."""
    folder = Path(out_dir) / which
    parts = sorted(folder.glob("part-*.parquet")) if folder.is_dir() else []
    if not parts:
        return pa.table({})
    return pa.concat_tables([pq.read_table(p) for p in parts], promote_options="permissive")


def done_keys(out_dir: str | Path) -> dict[str, set[str]]:
    """title -> keys of its renditions scored successfully, from the renditions parts."""
    table = read_results(out_dir, RENDITIONS)
    done: dict[str, set[str]] = {}
    if table.num_rows == 0:
        return done
    for title, key, status in zip(table["title"].to_pylist(), table["key"].to_pylist(), table["status"].to_pylist()):
        if status == "ok":
            done.setdefault(title, set()).add(key)
    return done
