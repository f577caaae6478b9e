"""vmafcompare for Python: score a title's ladder with the vmafcompare command, catalogues on Ray, rate-quality reports."""

from .catalogue import RunOptions, RunSummary, run_catalogue
from .manifest import Manifest, TitleSpec, read_manifest
from .report import analyse, bd_rate, upper_hull, write_report
from .results import read_results
from .title import Rendition, RenditionScore, ScoreError, TitleScore, TransientScoreError, score_title

__all__ = [
    "Manifest", "Rendition", "RenditionScore", "RunOptions", "RunSummary", "ScoreError", "TitleScore",
    "TitleSpec", "TransientScoreError", "analyse", "bd_rate", "read_manifest", "read_results",
    "run_catalogue", "score_title", "upper_hull", "write_report",
]
