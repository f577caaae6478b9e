"""BD-rate against the JCT-VC method on the bjontegaard package's published test data; the convex hull over rungs."""

from __future__ import annotations

import math

import pytest

from vmafcompare.report import Point, bd_rate, upper_hull

# The bjontegaard package's published test data (its README and example_usage.py, "Test 1" and
# "Test 2 (high bitrates)"): x265 presets measured with ffmpeg, rate in kbit/s, PSNR in dB.
TEST1 = ([9487.76, 4593.60, 2486.44, 1358.24], [40.037, 38.615, 36.845, 34.851],
         [9787.80, 4469.00, 2451.52, 1356.24], [40.121, 38.651, 36.970, 34.987])
TEST2 = ([82472.76, 26875.24, 9487.76, 4593.6], [43.825, 41.404, 40.037, 38.615],
         [99896.96, 33952.04, 9787.8, 4469.0], [44.731, 41.875, 40.121, 38.651])


def _pchipend(h1: float, h2: float, del1: float, del2: float) -> float:
    d = ((2 * h1 + h2) * del1 - h1 * del2) / (h1 + h2)
    if d * del1 < 0:
        d = 0.0
    elif del1 * del2 < 0 and abs(d) > abs(3 * del1):
        d = 3 * del1
    return d


def _bdrint(rate: list[float], dist: list[float], low: float, high: float) -> float:
    """The integral of log10(rate) over [low, high] of quality, four points, as the JCT-VC
    common test conditions' Excel sheet computes it (JCTVC-L1100, its bdRIntEnc macro; the same
    steps as HM's ComBDRate): PCHIP slopes (weighted harmonic means inside, the 3-point end
    formula with its limits), the cubic pieces integrated in closed form."""
    order = sorted(range(4), key=lambda i: dist[i])
    lr = [math.log10(rate[i]) for i in order]
    ld = [dist[i] for i in order]
    h = [ld[i + 1] - ld[i] for i in range(3)]
    delta = [(lr[i + 1] - lr[i]) / h[i] for i in range(3)]
    d = [0.0] * 4
    d[0] = _pchipend(h[0], h[1], delta[0], delta[1])
    for i in (1, 2):
        d[i] = (3 * h[i - 1] + 3 * h[i]) / ((2 * h[i] + h[i - 1]) / delta[i - 1] + (h[i] + 2 * h[i - 1]) / delta[i])
    d[3] = _pchipend(h[2], h[1], delta[2], delta[1])
    c = [(3 * delta[i] - 2 * d[i] - d[i + 1]) / h[i] for i in range(3)]
    b = [(d[i] - 2 * delta[i] + d[i + 1]) / (h[i] * h[i]) for i in range(3)]
    total = 0.0
    for i in range(3):
        s0 = max(ld[i], low) - ld[i]
        s1 = min(ld[i + 1], high) - ld[i]
        if s1 > s0:
            total += ((s1 - s0) * lr[i] + (s1 ** 2 - s0 ** 2) * d[i] / 2 + (s1 ** 3 - s0 ** 3) * c[i] / 3
                      + (s1 ** 4 - s0 ** 4) * b[i] / 4)
    return total


def jctvc_bd_rate(ra: list[float], da: list[float], rt: list[float], dt: list[float]) -> float:
    """BD-rate in percent, JCT-VC's way (independent of the bjontegaard package)."""
    low, high = max(min(da), min(dt)), min(max(da), max(dt))
    avg = (_bdrint(rt, dt, low, high) - _bdrint(ra, da, low, high)) / (high - low)
    return (10 ** avg - 1) * 100


@pytest.mark.parametrize("data", [TEST1, TEST2], ids=["test1", "test2-high-rates"])
def test_bd_rate_matches_jctvc_method(data):
    ra, da, rt, dt = data
    ours = bd_rate(list(zip(ra, da)), list(zip(rt, dt)))
    expect = jctvc_bd_rate(ra, da, rt, dt)
    print(f"BD-rate {ours:.10f} %, JCT-VC method {expect:.10f} %")
    assert ours == pytest.approx(expect, abs=1e-9)
    # The test preset gives slightly higher PSNR at about the same rates: a saving of 4.4-4.5 %
    # (the two implementations agree on these to 10 decimals).
    assert ours == pytest.approx(-4.4174853506 if data is TEST1 else -4.4721820028, abs=1e-9)


def test_bd_rate_of_a_scaled_curve_is_the_scale():
    anchor = [(r, q) for r, q in zip(TEST1[0], TEST1[1])]
    cheaper = [(r * 0.8, q) for r, q in anchor]
    assert bd_rate(anchor, cheaper) == pytest.approx(-20.0, abs=1e-9)
    assert bd_rate(cheaper, anchor) == pytest.approx(25.0, abs=1e-9)
    assert math.isnan(bd_rate(anchor, [(r, q + 100) for r, q in anchor]))  # no common quality


def _p(label: str, rate: float, q: float) -> Point:
    return Point("t", "e", label, 0, 0, rate, q)


def test_hull_keeps_the_rungs_a_bitrate_should_use():
    pts = [_p("1080-a", 3000, 90), _p("1080-b", 1500, 80), _p("720-a", 1200, 79), _p("720-b", 800, 70),
           _p("540", 900, 65), _p("360", 300, 50), _p("1080-c", 4000, 89)]
    hull = upper_hull(pts)
    # 540 costs more than 720-b for less quality; 1080-b sits below the chord 720-a..1080-a;
    # 1080-c costs more than 1080-a for less.
    assert [p.label for p in hull] == ["360", "720-b", "720-a", "1080-a"]
    with pytest.raises(ValueError):
        bd_rate([(1, 1)], [(1, 1), (2, 2)])
