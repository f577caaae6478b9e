"""Scores one title (a reference and its renditions, one ladder pass) with the vmafcompare command."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import fsspec
from fsspec.implementations.local import LocalFileSystem
import numpy as np

# Exit statuses of the command (its --help, EXIT STATUS).
STATUS_FAILED = 1
STATUS_USAGE = 2
STATUS_DECODE = 3
STATUS_INCOMPATIBLE = 4
STATUS_NO_GPU = 5

COMMAND_ENV = "VMAFCOMPARE"
"""Environment variable naming the vmafcompare command (else it is looked up on PATH)."""

LIBVMAF_VERSION = "3.2.0"


class ScoreError(RuntimeError):
    """A title (or one rendition of it) could not be scored.

    `status`: the command's exit status (0 when the command was not run), `path`: the manifest
    path of the file the error is about, or None when it is about the whole title. Permanent:
    retrying gives the same error (a missing or undecodable file, incompatible streams).
    """

    def __init__(self, message: str, status: int = 0, path: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.path = path

    def __reduce__(self):  # keeps status and path across Ray's pickling
        return (type(self), (str(self), self.status, self.path))


class TransientScoreError(ScoreError):
    """A failure that may pass on a second try (exit status 1: scoring failed mid-stream,
    the command killed by a signal, a timeout); Ray's task retries catch this class."""


@dataclass
class Rendition:
    """One rendition of a title as the manifest gives it.

    `label`: unique within the title; `path`: a local path or any fsspec URL; `encoder`: the
    name BD-rate groups by; `bitrate_kbps`: the manifest's own bitrate (kbit/s), if given.
    """

    label: str
    path: str
    encoder: str = ""
    bitrate_kbps: float | None = None
    line: int = 0


@dataclass
class RenditionScore:
    """The scores of one rendition.

    `pooled`: metric -> {"mean", "harmonic_mean", "min", "max", "p1", "p5", "p10"} (VMAF in
    [0, 100]; the lows are the 1st, 5th, 10th percentiles); `frames`: metric -> float64 array
    of shape (n_frames,), in the order of `frame_num` (int64, shape (n_frames,), the libvmaf
    log's frameNum); `measured_bitrate_kbps`: the video stream's bitrate as the command measures
    it (kbit/s, None if unknown); `width`, `height`: the rendition's own size in pixels;
    `size_bytes`: the file's size.
    """

    label: str
    path: str
    encoder: str
    manifest_bitrate_kbps: float | None
    measured_bitrate_kbps: float | None
    bitrate_source: str
    size_bytes: int
    width: int
    height: int
    scored_width: int
    scored_height: int
    pooled: dict[str, dict[str, float]]
    frame_num: np.ndarray
    frames: dict[str, np.ndarray]

    @property
    def bitrate_kbps(self) -> float | None:
        """The rate analyses use: the manifest's when given, else the measured one (kbit/s)."""
        return self.manifest_bitrate_kbps if self.manifest_bitrate_kbps is not None else self.measured_bitrate_kbps


@dataclass
class Provenance:
    """Where and how a title was scored: versions, model, backend, device, elapsed seconds."""

    plugin_version: str
    libvmaf_version: str
    model: str
    backend: str
    device: str
    host: str
    elapsed_s: float
    command: str
    ray_node_id: str = ""


@dataclass
class TitleScore:
    """A scored title: the renditions that were scored, those that failed (label -> error
    message, the file named) and the provenance record of the pass."""

    title: str
    reference: str
    renditions: list[RenditionScore]
    failed: dict[str, str]
    provenance: Provenance
    warnings: list[str] = field(default_factory=list)


def find_command(command: str | None = None) -> str:
    """The vmafcompare command to run: `command` if given, else $VMAFCOMPARE, else `vmafcompare`
    on PATH. Errors: ScoreError when none is found or it is not executable."""
    candidate = command or os.environ.get(COMMAND_ENV) or shutil.which("vmafcompare")
    if not candidate:
        raise ScoreError(f"vmafcompare command not found: put it on PATH, set ${COMMAND_ENV} or pass --vmafcompare")
    resolved = shutil.which(candidate) or candidate
    if not os.access(resolved, os.X_OK):
        raise ScoreError(f"vmafcompare command {candidate!r} is not an executable file")
    return resolved


def plugin_version(command: str | None = None) -> str:
    """The plugin version the command reports (`vmafcompare --version`, e.g. "0.1.0")."""
    exe = find_command(command)
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"GStreamer plugin vmafcompare (\S+?);", out) or re.search(r"vmafcompare (\S+)", out)
    if not m:
        raise ScoreError(f"cannot read the version from {exe} --version: {out!r}")
    return m.group(1)


def content_hash(path: str, piece: int = 1 << 20) -> str:
    """A 128-bit BLAKE2b fingerprint of a file (hex, 32 characters): its size and three
    `piece`-byte pieces (start, middle, end), read through fsspec (range reads on object
    stores), so fingerprinting a catalogue costs three small reads per file whatever its size.
    A re-encoded file changes it. Errors: FileNotFoundError."""
    fs, p = fsspec.core.url_to_fs(path)
    size = int(fs.size(p))
    h = hashlib.blake2b(digest_size=16)
    h.update(str(size).encode())
    with fs.open(p, "rb") as f:
        for start in sorted({0, max(0, size // 2 - piece // 2), max(0, size - piece)}):
            f.seek(start)
            h.update(f.read(piece))
    return h.hexdigest()


def _local_copy(path: str, dest: Path) -> Path:
    """A local path for `path`: a symbolic link named `dest` to a local file, or the file
    downloaded there through fsspec. Errors: ScoreError naming `path` when it is missing."""
    fs, p = fsspec.core.url_to_fs(path)
    try:
        if not fs.isfile(p):
            raise FileNotFoundError(p)
    except FileNotFoundError:
        raise ScoreError(f"{path}: no such file", STATUS_USAGE, path) from None
    if isinstance(fs, LocalFileSystem):
        dest.symlink_to(os.path.abspath(p))
    else:
        fs.get(p, str(dest))
    return dest


_HEADER = re.compile(
    r"^(?P<label>\S+?)(?: \((?P<file>[^)]*)\))?: (?P<frames>\d+) frames scored at (?P<sw>\d+)x(?P<sh>\d+)"
    r" on the (?P<backend>\w+) backend, model (?P<model>[^;]+)(?P<rest>.*)$"
)
_BITRATE = re.compile(r"bitrate (?P<kbps>[\d.]+) kbit/s(?: \((?P<src>[^)]*)\))?")
_PACKETS = re.compile(r"video packets: (?P<bytes>\d+) bytes over (?P<secs>[\d.]+) s")
_SCALING = re.compile(r"(\d+)x(\d+)->(\d+)x(\d+)")
_STAT_NAMES = {"percentile_1": "p1", "percentile_5": "p5", "percentile_10": "p10"}


def _parse_headers(stdout: str) -> dict[str, dict[str, object]]:
    """The command's per-file lines, keyed by file name: frames, backend, model, bitrate."""
    out: dict[str, dict[str, object]] = {}
    for line in stdout.splitlines():
        m = _HEADER.match(line)
        if not m:
            continue
        name = Path(m.group("file") or m.group("label")).name
        info: dict[str, object] = {"backend": m.group("backend"), "model": m.group("model").strip(),
                                   "frames": int(m.group("frames")),
                                   "scored_size": f"{m.group('sw')}x{m.group('sh')}"}
        b = _BITRATE.search(m.group("rest"))
        if b:
            kbps = float(b.group("kbps"))
            src = b.group("src") or ""
            p = _PACKETS.search(src)
            if p and float(p.group("secs")) > 0:
                kbps = int(p.group("bytes")) * 8 / float(p.group("secs")) / 1000.0
            info["kbps"] = kbps
            info["bitrate_source"] = src.split(",")[0].split(":")[0].strip() or "reported"
        out[name] = info
    return out


def _device_name(backend: str) -> str:
    """The GPU's name for the cuda backend (nvidia-smi, honouring CUDA_VISIBLE_DEVICES), else
    the CPU's model name."""
    if backend == "cuda" and shutil.which("nvidia-smi"):
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0] or "0"
        r = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader", "-i", visible],
                           capture_output=True, text=True)
        if r.returncode == 0 and r.stdout.strip():
            return r.stdout.strip().splitlines()[0]
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def _read_log(path: Path) -> tuple[dict[str, dict[str, float]], np.ndarray, dict[str, np.ndarray], dict]:
    """Pooled metrics, frame numbers, per-frame arrays and the header fields of a libvmaf JSON log."""
    log = json.loads(path.read_text())
    pooled = {metric: {_STAT_NAMES.get(k, k): float(v) for k, v in stats.items()}
              for metric, stats in log["pooled_metrics"].items()}
    frames = log["frames"]
    frame_num = np.array([f["frameNum"] for f in frames], dtype=np.int64)
    names = list(frames[0]["metrics"]) if frames else list(pooled)
    per_frame = {m: np.array([f["metrics"].get(m, np.nan) for f in frames], dtype=np.float64) for m in names}
    return pooled, frame_num, per_frame, log


def score_title(
    title: str,
    reference: str,
    renditions: Sequence[Rendition],
    *,
    model: str = "vmaf_v0.6.1",
    backend: str = "auto",
    threads: int = 0,
    command: str | None = None,
    extra_args: Sequence[str] = (),
    timeout_s: float | None = None,
) -> TitleScore:
    """Score a title's renditions against its reference in one pass of the vmafcompare command
    (the reference decoded once, each rendition scored as it would be alone).

    `reference`, `renditions[].path`: local paths or fsspec URLs (remote files are downloaded
    to a temporary folder first). `model`: the command's --model; `backend`: auto, cpu or cuda;
    `threads`: CPU backend threads (0: one per core). A rendition the command cannot decode or
    that is missing is left out and reported in `TitleScore.failed` (its error names the file);
    the others are scored in a second pass.
    Errors: ScoreError for a reference that is missing or cannot be decoded, streams that
    cannot be scored together, no usable GPU with backend=cuda; TransientScoreError for a
    failure mid-stream, a signal or `timeout_s` (seconds) passing.
    """
    exe = find_command(command)
    version = plugin_version(exe)
    started = time.monotonic()
    failed: dict[str, str] = {}
    warnings: list[str] = []
    with tempfile.TemporaryDirectory(prefix="vmafcompare-title-") as tmp_name:
        tmp = Path(tmp_name)
        ref_local = _local_copy(reference, tmp / f"reference{Path(reference).suffix}")
        local: dict[str, tuple[Rendition, Path]] = {}
        for i, r in enumerate(renditions):
            name = f"r{i}{Path(r.path).suffix}"
            try:
                local[name] = (r, _local_copy(r.path, tmp / name))
            except ScoreError as e:
                failed[r.label] = str(e)
        while local:
            args = [exe, "--backend", backend, "--model", model, "--threads", str(threads), "--worst", "0",
                    "--log", str(tmp / "log.json"), *extra_args, str(ref_local), *(str(p) for _, p in local.values())]
            try:
                proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout_s, cwd=tmp)
            except subprocess.TimeoutExpired:
                raise TransientScoreError(f"{title}: vmafcompare ran past {timeout_s} s", 0) from None
            if proc.returncode == 0:
                break
            message = next((line for line in proc.stderr.splitlines()
                            if line.startswith("vmafcompare: ") and "warning:" not in line), proc.stderr.strip())
            bad = next((n for n in local if message.startswith(f"vmafcompare: {tmp / n}:")
                        or message.startswith(f"vmafcompare: {n}:")), None)
            if bad is not None and proc.returncode in (STATUS_USAGE, STATUS_DECODE):
                r, p = local.pop(bad)
                detail = message.removeprefix("vmafcompare: ").replace(str(p), r.path)
                failed[r.label] = f"{title}: rendition {r.label!r}: {detail} (exit status {proc.returncode})"
                continue
            text = message.removeprefix("vmafcompare: ").replace(str(ref_local), reference)
            for n, (r, p) in local.items():
                text = text.replace(str(p), r.path)
            if proc.returncode == STATUS_FAILED or proc.returncode < 0:
                raise TransientScoreError(f"{title}: {text} (exit status {proc.returncode})", proc.returncode)
            raise ScoreError(f"{title}: {text} (exit status {proc.returncode})", proc.returncode,
                             reference if str(ref_local) in message else None)
        else:
            proc = None
        warnings = [line for line in (proc.stderr.splitlines() if proc else []) if "warning:" in line]
        headers = _parse_headers(proc.stdout) if proc else {}
        scores: list[RenditionScore] = []
        used_backend, used_model = backend, model
        for name, (r, p) in local.items():
            log_path = tmp / "log.json" if len(local) == 1 else tmp / f"log.{Path(name).stem}.json"
            pooled, frame_num, per_frame, log = _read_log(log_path)
            info = headers.get(name, {})
            used_backend = str(info.get("backend", backend))
            used_model = str(info.get("model", model))
            sw, sh = (int(v) for v in str(info.get("scored_size") or log.get("scored_size", "0x0")).split("x"))
            m = _SCALING.search(str(log.get("distorted_scaling", "")))
            w, h = (int(m.group(1)), int(m.group(2))) if m else (sw, sh)
            measured = info.get("kbps")
            scores.append(RenditionScore(
                label=r.label, path=r.path, encoder=r.encoder, manifest_bitrate_kbps=r.bitrate_kbps,
                measured_bitrate_kbps=float(measured) if measured is not None else None,
                bitrate_source=str(info.get("bitrate_source", "")), size_bytes=os.path.getsize(p),
                width=w, height=h, scored_width=sw, scored_height=sh, pooled=pooled,
                frame_num=frame_num, frames=per_frame))
    provenance = Provenance(
        plugin_version=version, libvmaf_version=LIBVMAF_VERSION, model=used_model, backend=used_backend,
        device=_device_name(used_backend), host=platform.node(), elapsed_s=time.monotonic() - started,
        command=exe)
    return TitleScore(title=title, reference=reference, renditions=scores, failed=failed,
                      provenance=provenance, warnings=warnings)
