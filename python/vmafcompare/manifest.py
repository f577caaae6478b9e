"""Reads a catalogue manifest (CSV or JSON Lines) into titles, each a reference and its renditions."""

from __future__ import annotations

import csv
import io
import json
import posixpath
from dataclasses import dataclass, field

import fsspec

from .title import Rendition

REQUIRED = ("title", "reference", "rendition")
"""Columns every row needs; `label`, `encoder` and `bitrate` (kbit/s) are optional."""


@dataclass
class RowError:
    """A manifest row that was not used: its line number (1 = the first data row's line in a
    CSV counts the header as line 1), title and label as far as known, and why."""

    line: int
    title: str
    label: str
    path: str
    message: str


@dataclass
class TitleSpec:
    """One title: its reference (path or URL) and its renditions in manifest order."""

    title: str
    reference: str
    renditions: list[Rendition] = field(default_factory=list)


@dataclass
class Manifest:
    """The titles of a manifest, in order of first appearance, and the rows left out."""

    titles: dict[str, TitleSpec]
    errors: list[RowError]


def _resolve(path: str, base: str) -> str:
    """`path` as given when it is absolute or a URL, else relative to the manifest's folder."""
    if "://" in path or path.startswith("/") or not base:
        return path
    return posixpath.join(base, path)


def _rows(text: str, name: str) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) pairs of a CSV (header row first) or JSON Lines text."""
    if name.endswith((".jsonl", ".ndjson", ".json")):
        rows = []
        for n, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as e:
                    rows.append((n, {"__error__": f"not JSON: {e.msg}"}))
                    continue
                rows.append((n, {k: "" if v is None else str(v) for k, v in obj.items()}))
        return rows
    reader = csv.DictReader(io.StringIO(text))
    return [(reader.line_num, {k.strip(): (v or "").strip() for k, v in row.items() if k}) for row in reader]


def read_manifest(url: str) -> Manifest:
    """Read a manifest: CSV with a header row, or JSON Lines (`.jsonl`, `.ndjson`, `.json`),
    local or any fsspec URL. Rows: `title`, `reference`, `rendition` (paths or URLs; relative
    paths are relative to the manifest's folder), `label` (default: the rendition's file stem),
    `encoder` (default ""), `bitrate` (kbit/s, optional).

    A row with a missing column, a bad bitrate, a (title, label) pair already seen, or another
    reference than its title's first row is left out and reported in `Manifest.errors`; the
    other rows are used. Errors: FileNotFoundError when the manifest itself is missing.
    """
    with fsspec.open(url, "rt", encoding="utf-8") as f:
        text = f.read()
    base = posixpath.dirname(url)
    titles: dict[str, TitleSpec] = {}
    seen: dict[tuple[str, str], int] = {}
    errors: list[RowError] = []
    for line, row in _rows(text, url):
        title, label, rendition = row.get("title", ""), row.get("label", ""), row.get("rendition", "")
        if "__error__" in row:
            errors.append(RowError(line, "", "", "", f"manifest line {line}: {row['__error__']}"))
            continue
        missing = [c for c in REQUIRED if not row.get(c)]
        if missing:
            errors.append(RowError(line, title, label, rendition,
                                   f"manifest line {line}: no {', '.join(missing)}"))
            continue
        path = _resolve(rendition, base)
        reference = _resolve(row["reference"], base)
        label = label or posixpath.splitext(posixpath.basename(rendition))[0]
        bitrate = None
        if row.get("bitrate"):
            try:
                bitrate = float(row["bitrate"])
            except ValueError:
                errors.append(RowError(line, title, label, path,
                                       f"manifest line {line}: bitrate {row['bitrate']!r} is not a number (kbit/s)"))
                continue
        first = seen.get((title, label))
        if first is not None:
            errors.append(RowError(line, title, label, path,
                                   f"manifest line {line}: title {title!r} rendition {label!r} repeats line {first}; "
                                   "this row is left out"))
            continue
        spec = titles.setdefault(title, TitleSpec(title, reference))
        if spec.reference != reference:
            errors.append(RowError(line, title, label, path,
                                   f"manifest line {line}: title {title!r} has reference {reference!r} here but "
                                   f"{spec.reference!r} above; this row is left out"))
            continue
        seen[(title, label)] = line
        spec.renditions.append(Rendition(label=label, path=path, encoder=row.get("encoder", ""),
                                         bitrate_kbps=bitrate, line=line))
    return Manifest(titles, errors)
