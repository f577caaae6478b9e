"""Scores a catalogue on Ray: one task per title (its ladder in one pass), results stored per title as it finishes."""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import ray
from tqdm import tqdm

from . import results
from .manifest import Manifest, TitleSpec, read_manifest
from .title import ScoreError, TitleScore, TransientScoreError, content_hash, plugin_version, score_title


@dataclass
class RunOptions:
    """How a catalogue is scored.

    `address`: None starts a Ray instance on this machine; "auto" or "ray://HOST:PORT" joins a
    cluster. `backend`: auto, cpu or cuda. `threads`: CPU backend threads per title (None: 1 with
    backend=cpu, the command's default otherwise). `num_gpus`: the GPU fraction a title's task
    requests (None: 0.25 where the cluster has GPUs and the backend is not cpu, else 0);
    `num_cpus`: CPUs per task (None: `threads`, at least 1). `max_retries`: retries of a task
    lost with its node or failing transiently (exit status 1, a signal, `timeout_s`).
    `command`: the vmafcompare command on the nodes (None: $VMAFCOMPARE or PATH).
    """

    address: str | None = None
    backend: str = "auto"
    model: str = "vmaf_v0.6.1"
    threads: int | None = None
    num_gpus: float | None = None
    num_cpus: float | None = None
    max_retries: int = 3
    command: str | None = None
    timeout_s: float | None = None
    progress: bool = True


@dataclass
class RunSummary:
    """What a run did: titles skipped as already done, titles scored, titles or renditions that
    failed (title -> {label or "": error}), manifest rows left out, frame pairs scored, seconds."""

    skipped: list[str] = field(default_factory=list)
    scored: list[str] = field(default_factory=list)
    failed: dict[str, dict[str, str]] = field(default_factory=dict)
    row_errors: list[str] = field(default_factory=list)
    pairs: int = 0
    elapsed_s: float = 0.0
    num_gpus: float = 0.0
    num_cpus: float = 1.0

    @property
    def ok(self) -> bool:
        """True when nothing failed and no manifest row was left out."""
        return not self.failed and not self.row_errors


def _score_task(spec: TitleSpec, model: str, backend: str, threads: int, command: str | None,
                timeout_s: float | None) -> TitleScore:
    """A title scored on a Ray worker; its provenance names the Ray node."""
    score = score_title(spec.title, spec.reference, spec.renditions, model=model, backend=backend,
                        threads=threads, command=command, timeout_s=timeout_s)
    score.provenance.ray_node_id = ray.get_runtime_context().get_node_id()
    return score


def _version_task(command: str | None) -> str:
    return plugin_version(command)


def _hashes(spec: TitleSpec) -> tuple[dict[str, str], dict[str, str]]:
    """Content hashes of a title's files and errors (label or "" for the reference -> message)
    for those that cannot be read."""
    hashes: dict[str, str] = {}
    errors: dict[str, str] = {}
    for label, path in [("", spec.reference)] + [(r.label, r.path) for r in spec.renditions]:
        try:
            hashes[path] = content_hash(path)
        except (FileNotFoundError, IsADirectoryError):
            errors[label] = (f"{spec.title}: reference {path}: no such file" if not label
                             else f"{spec.title}: rendition {label!r}: {path}: no such file")
        except OSError as e:
            errors[label] = f"{spec.title}: {path}: cannot be read: {e}"
    return hashes, errors


def _error_message(exc: BaseException) -> str:
    """One line for a task's failure: the ScoreError's text, or the Ray error's first line."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, ScoreError) or isinstance(exc, ScoreError):
        return str(cause if isinstance(cause, ScoreError) else exc).splitlines()[0]
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip()


def run_catalogue(manifest: str | Manifest, out_dir: str | Path, options: RunOptions | None = None,
                  on_title: Callable[[str, str], None] | None = None) -> RunSummary:
    """Score every title of `manifest` (a path/URL or a read Manifest) that `out_dir` does not
    hold yet, one Ray task per title, and store each title's rows as soon as its task ends.

    A title is skipped when every rendition that exists has a row with status ok whose key
    (title, label, model, plugin version, content hashes) matches. `on_title(title, status)` is
    called after each title is stored (status "ok" or "error"). Errors: ScoreError when the
    cluster cannot score at all (the command missing on the nodes, backend=cuda without GPUs);
    a title that fails is recorded in the results and the summary, and the others go on.
    """
    options = options or RunOptions()
    started = time.monotonic()
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    m = read_manifest(manifest) if isinstance(manifest, str) else manifest
    summary = RunSummary(row_errors=[e.message for e in m.errors])
    row_errors_by_title: dict[str, list] = {}
    for e in m.errors:
        row_errors_by_title.setdefault(e.title, []).append(e)

    we_started = not ray.is_initialized()
    if we_started:
        ray.init(address=options.address, include_dashboard=False, logging_level=logging.WARNING,
                 log_to_driver=False, configure_logging=True)
    try:
        resources = ray.cluster_resources()
        gpus = resources.get("GPU", 0.0)
        if options.backend == "cuda" and gpus == 0:
            raise ScoreError("backend cuda, but the Ray cluster has no GPU (ray.cluster_resources() lists none)")
        threads = options.threads if options.threads is not None else (1 if options.backend == "cpu" else 0)
        num_gpus = options.num_gpus if options.num_gpus is not None else (
            0.25 if gpus > 0 and options.backend != "cpu" else 0.0)
        num_cpus = options.num_cpus if options.num_cpus is not None else float(max(threads, 1))
        summary.num_gpus, summary.num_cpus = num_gpus, num_cpus
        try:
            version = ray.get(ray.remote(num_cpus=0)(_version_task).remote(options.command))
        except Exception as e:  # noqa: BLE001: any failure here means no node can score
            raise ScoreError(f"the vmafcompare command cannot run on the cluster: {_error_message(e)}") from None

        done = results.done_keys(out)
        todo: list[tuple[TitleSpec, dict[str, str], dict[str, str]]] = []
        for spec in m.titles.values():
            hashes, errors = _hashes(spec)
            ref_hash = hashes.get(spec.reference, "")
            expected = {results.rendition_key(spec.title, r.label, options.model, version, ref_hash, hashes[r.path])
                        for r in spec.renditions if r.path in hashes}
            if "" not in errors and expected and expected <= done.get(spec.title, set()):
                summary.skipped.append(spec.title)
                continue
            todo.append((spec, hashes, errors))
        for title in row_errors_by_title.keys() - m.titles.keys():
            # Rows whose title has no usable row at all: stored under that title alone.
            _store(out, TitleSpec(title, ""), None, {}, {}, options.model, version, row_errors_by_title[title])

        remote = ray.remote(_score_task).options(
            num_cpus=num_cpus, num_gpus=num_gpus, max_retries=options.max_retries,
            retry_exceptions=[TransientScoreError])
        pending: dict[ray.ObjectRef, tuple[TitleSpec, dict[str, str], dict[str, str]]] = {}
        for spec, hashes, errors in todo:
            if "" in errors or len(errors) == len(spec.renditions):
                status = _store(out, spec, None, hashes, errors, options.model, version,
                                row_errors_by_title.get(spec.title, []))
                summary.failed[spec.title] = errors
                if on_title:
                    on_title(spec.title, status)
                continue
            live = TitleSpec(spec.title, spec.reference, [r for r in spec.renditions if r.label not in errors])
            ref = remote.remote(live, options.model, options.backend, threads, options.command, options.timeout_s)
            pending[ref] = (spec, hashes, errors)

        submitted = time.monotonic()
        bar = tqdm(total=len(pending), unit="title", desc="titles", disable=not options.progress,
                   file=sys.stderr, dynamic_ncols=True)
        try:
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                spec, hashes, errors = pending.pop(ready[0])
                score: TitleScore | None = None
                errors = dict(errors)
                try:
                    score = ray.get(ready[0])
                    errors.update(score.failed)
                except Exception as e:  # noqa: BLE001: a task's failure is recorded, the run goes on
                    errors[""] = _error_message(e)
                status = _store(out, spec, score, hashes, errors, options.model, version,
                                row_errors_by_title.get(spec.title, []))
                if score is not None:
                    summary.scored.append(spec.title)
                    summary.pairs += sum(int(r.frame_num.size) for r in score.renditions)
                if errors:
                    summary.failed[spec.title] = errors
                bar.update(1)
                rate = summary.pairs / max(time.monotonic() - submitted, 1e-9)
                bar.set_postfix_str(f"{rate:.1f} pairs/s", refresh=False)
                if on_title:
                    on_title(spec.title, status)
        finally:
            bar.close()
    finally:
        if we_started:
            ray.shutdown()
    summary.elapsed_s = time.monotonic() - started
    return summary


def _store(out: Path, spec: TitleSpec, score: TitleScore | None, hashes: dict[str, str],
           errors: dict[str, str], model: str, version: str, row_errors: list) -> str:
    """Write a title's part files (its renditions, its failures and its manifest rows left
    out); returns "ok" or "error"."""
    renditions = [(r.label, r.path, r.encoder, r.line) for r in spec.renditions]
    errs = dict(errors)
    for e in row_errors:
        label = f"{e.label} (line {e.line})"
        renditions.append((label, e.path, "", e.line))
        errs[label] = e.message
    table, frames = results.title_tables(score, title=spec.title, reference=spec.reference, model=model,
                                         plugin_version=version, hashes=hashes, renditions=renditions,
                                         errors=errs)
    results.write_title(out, spec.title, table, frames)
    return "error" if errs else "ok"
