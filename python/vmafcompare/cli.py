"""The vmafcompare-catalogue command: `run MANIFEST --out DIR` scores a catalogue on Ray, `report DIR` analyses it."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from .catalogue import RunOptions, run_catalogue
from .report import analyse, write_report
from .title import ScoreError

EPILOG = """\
examples:
  vmafcompare-catalogue run catalogue.csv --out results/               # Ray on this machine
  vmafcompare-catalogue run catalogue.csv --out results/ --address auto --num-gpus 0.25
  vmafcompare-catalogue run catalogue.jsonl --out results/ --backend cpu --threads 4
  vmafcompare-catalogue report results/ --anchor x264-medium

exit status: 0 every title scored (or already done); 1 a title or rendition failed or a
manifest row was left out (the others are scored; each error is printed and stored in
renditions.parquet with status "error"); 2 usage or a manifest that cannot be read.
"""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="vmafcompare-catalogue", epilog=EPILOG,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description="Score a catalogue of titles (a reference and its renditions each) with "
                                            "vmafcompare on Ray, one task per title; analyse the results.")
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="score every title of MANIFEST not yet in DIR")
    r.add_argument("manifest", help="CSV or JSON Lines: title, reference, rendition, label, encoder, bitrate "
                                    "(paths local or fsspec URLs)")
    r.add_argument("--out", required=True, help="results folder: renditions.parquet/, frames.parquet/")
    r.add_argument("--address", default=None,
                   help="Ray cluster to join (auto, ray://HOST:10001); default: start Ray on this machine")
    r.add_argument("--backend", default="auto", choices=["auto", "cpu", "cuda"])
    r.add_argument("--model", default="vmaf_v0.6.1", help="the command's --model")
    r.add_argument("--threads", type=int, default=None, help="CPU backend threads per title (default 1 with --backend cpu)")
    r.add_argument("--num-gpus", type=float, default=None,
                   help="GPU fraction per title task (default 0.25 where the cluster has GPUs, else 0)")
    r.add_argument("--num-cpus", type=float, default=None, help="CPUs per title task (default: --threads, at least 1)")
    r.add_argument("--retries", type=int, default=3, help="retries of a task lost with its node or failing transiently")
    r.add_argument("--timeout", type=float, default=None, help="seconds one title may take before it is retried")
    r.add_argument("--vmafcompare", default=None, help="the vmafcompare command on the nodes (default $VMAFCOMPARE, PATH)")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")
    rep = sub.add_parser("report", help="rate-quality points, hulls, BD-rate tables and plots of DIR")
    rep.add_argument("dir")
    rep.add_argument("--anchor", default=None, help="anchor encoder for BD-rate (default: the first by name)")
    rep.add_argument("--metric", default="vmaf_mean", help="quality column (vmaf_mean, vmaf_harmonic_mean, vmaf_p5, ...)")
    rep.add_argument("--out", default=None, help="report folder (default DIR/report)")
    rep.add_argument("--no-plots", action="store_true")
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (see EPILOG)."""
    args = _parser().parse_args(argv)
    if args.cmd == "run":
        opts = RunOptions(address=args.address, backend=args.backend, model=args.model, threads=args.threads,
                          num_gpus=args.num_gpus, num_cpus=args.num_cpus, max_retries=args.retries,
                          command=args.vmafcompare, timeout_s=args.timeout, progress=not args.no_progress)
        try:
            s = run_catalogue(args.manifest, args.out, opts)
        except FileNotFoundError as e:
            print(f"vmafcompare-catalogue: manifest {args.manifest}: no such file ({e})", file=sys.stderr)
            return 2
        except ScoreError as e:
            print(f"vmafcompare-catalogue: {e}", file=sys.stderr)
            return 2
        print(f"{len(s.scored)} titles scored, {len(s.skipped)} already done, {len(s.failed)} with errors, "
              f"{s.pairs} frame pairs in {s.elapsed_s:.1f} s (num_gpus {s.num_gpus:g}, num_cpus {s.num_cpus:g} per title)")
        if s.skipped:
            print(f"skipped (already in {args.out}): {', '.join(s.skipped)}")
        for msg in s.row_errors:
            print(f"vmafcompare-catalogue: {msg}", file=sys.stderr)
        for title, errs in s.failed.items():
            for label, msg in errs.items():
                print(f"vmafcompare-catalogue: {msg}", file=sys.stderr)
        return 0 if s.ok else 1
    dest = Path(args.out) if args.out else Path(args.dir) / "report"
    try:
        rep = analyse(args.dir, metric=args.metric, anchor=args.anchor)
    except ValueError as e:
        print(f"vmafcompare-catalogue: {e}", file=sys.stderr)
        return 2
    paths = write_report(rep, dest, plots=not args.no_plots)
    print(f"{len(rep.points)} points, {len({p.title for p in rep.points})} titles, anchor {rep.anchor!r}")
    for enc, v in sorted(rep.catalogue.items()):
        print(f"BD-rate of {enc} against {rep.anchor}: mean {v['mean']:.2f} %, median {v['median']:.2f} % "
              f"over {int(v['titles'])} titles" if not math.isnan(v["mean"]) else f"BD-rate of {enc}: none")
    print(f"written: {', '.join(str(p) for p in paths[:4])}{' and plots' if len(paths) > 4 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
