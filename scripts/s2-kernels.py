#!/usr/bin/env python3
"""SSIMULACRA2 kernels alone, on the GPU host: time per step and bit-for-bit comparison.

Loads one or more builds of kernels/ssimulacra2.cu (PTX), runs them on the same synthetic
8-bit 4:2:0 frame pair (BT.709 limited range) at each size, and prints for each build the
median time of every kernel (CUDA events, S2_ITERS runs back to back, default 30) and how it
compares with the first build: the largest relative difference of the 108 sums, and the number
of scale-0 horizontally blurred samples (and, between two builds of the current layout, XYB
samples) whose bits differ.

    python3 scripts/s2-kernels.py NAME=PATH[:KIND] ...

KIND: `tables` (default: the current kernels, the conversion tables made by s2_lut),
`direct` (the current kernels, each pixel converted without the tables), `rowmajor` (the
kernels before the T32 layout: row-major scratch, s2_xyb without the table arguments).
Example, the committed kernels against the previous ones:

    git show 457cc71:kernels/ptx/ssimulacra2.ptx > /tmp/before.ptx
    python3 scripts/s2-kernels.py before=/tmp/before.ptx:rowmajor \\
        now=kernels/ptx/ssimulacra2.ptx now-direct=kernels/ptx/ssimulacra2.ptx:direct

S2_SIZES (default 1920x1080,3840x2160) picks the sizes. Needs CuPy (the GPU host has it).
The launch geometry mirrors src/cuda/ssimulacra2.rs.
"""
import ctypes
import os
import sys

import cupy as cp
import numpy as np

drv = cp.cuda.driver


class Plane(ctypes.Structure):
    """kernels/common.cuh `Plane` (src/cuda/plane.rs `DevPlane`)."""
    _fields_ = [("ptr", ctypes.c_uint64), ("pitch", ctypes.c_int64), ("wide", ctypes.c_uint32),
                ("down", ctypes.c_uint32), ("up", ctypes.c_uint32), ("mask", ctypes.c_uint32)]


class Conv(ctypes.Structure):
    """kernels/ssimulacra2.cu `S2Conv` (src/cuda/ssimulacra2.rs `ConvParams`)."""
    _fields_ = [("kr", ctypes.c_float), ("kb", ctypes.c_float), ("off_y", ctypes.c_float),
                ("div_y", ctypes.c_float), ("off_c", ctypes.c_float), ("div_c", ctypes.c_float),
                ("srgb", ctypes.c_int32), ("pad", ctypes.c_int32)]


def launch(fn, grid, block, args):
    """cuLaunchKernel on the current stream; ints are int32, arrays device pointers."""
    keep = []
    for a in args:
        if isinstance(a, int):
            a = ctypes.c_int32(a)
        elif isinstance(a, cp.ndarray):
            a = ctypes.c_uint64(a.data.ptr)
        keep.append(a)
    ptrs = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(a) for a in keep])
    drv.launchKernel(fn, *grid, *block, 0, cp.cuda.get_current_stream().ptr,
                     ctypes.addressof(ptrs), 0)


def frames(w, h, seed=7):
    """A reference and a distorted 8-bit 4:2:0 frame with structure at several scales."""
    rng = np.random.default_rng(seed)

    def field(ww, hh, cell):
        small = rng.normal(size=(hh // cell + 2, ww // cell + 2)).astype(np.float32)
        return np.kron(small, np.ones((cell, cell), np.float32))[:hh, :ww]

    y = 128 + 40 * field(w, h, 37) + 20 * field(w, h, 5) + 6 * rng.normal(size=(h, w))
    d = y + 5 * rng.normal(size=(h, w)) + 3 * field(w, h, 3)
    cw, ch = w // 2, h // 2
    cb = 128 + 30 * field(cw, ch, 19) + 3 * rng.normal(size=(ch, cw))
    cr = 128 + 30 * field(cw, ch, 23) + 3 * rng.normal(size=(ch, cw))
    planes = [y, d, cb, cr, cb + 2 * rng.normal(size=(ch, cw)), cr + 2 * rng.normal(size=(ch, cw))]
    return [cp.asarray(np.clip(np.rint(p), 0, 255).astype(np.uint8)) for p in planes], cw, ch


def scales_of(w, h):
    s = [(w, h)]
    while len(s) < 6 and min(s[-1]) >= 8:
        s.append(((s[-1][0] + 1) // 2, (s[-1][1] + 1) // 2))
    return s


class Build:
    def __init__(self, ptx, kind, w, h, data):
        self.mod = drv.moduleLoad(ptx)
        self.kind = kind
        self.w, self.h = w, h
        self.planes, self.cw, self.ch = data
        self.sc = scales_of(w, h)
        px = sum(a * ((b + 31) // 32 * 32) for a, b in self.sc)
        self.xyb = cp.zeros(6 * px, cp.float32)
        self.hbl = cp.zeros(15 * px, cp.float32)
        self.vblocks = sum((a + 31) // 32 * 3 for a, _ in self.sc)
        self.hblocks = sum((b + 31) // 32 * 15 for _, b in self.sc)
        self.partial = cp.zeros(6 * self.vblocks, cp.float64)
        self.out = cp.zeros(108, cp.uint64)
        self.conv = Conv(0.2126, 0.0722, 16.0, 219.0, 128.0, 224.0, 0, 0)
        self.lut = cp.zeros(2 * 256 + 2 * 65536, cp.float32)
        if kind == "tables":
            launch(self.fn("s2_lut"), (256, 1, 1), (32, 8, 1), [self.conv, 8, self.lut])

    def fn(self, name):
        return drv.moduleGetFunction(self.mod, name)

    def steps(self):
        w, h, n = self.w, self.h, len(self.sc)
        args = [Plane(p.data.ptr, p.shape[1], 0, 0, 0, 0xff) for p in self.planes]
        args += [self.cw, self.ch, self.conv]
        if self.kind != "rowmajor":
            lut = self.lut.data.ptr if self.kind == "tables" else 0
            args += [ctypes.c_uint64(lut), 8]
        args += [w, h, n, self.xyb]
        f = {k: self.fn("s2_" + k) for k in ("xyb", "hblur", "vblur", "total")}
        return [
            ("xyb", lambda: launch(f["xyb"], ((w + 63) // 64, (h + 63) // 64, 1), (32, 8, 1),
                                   args)),
            ("hblur", lambda: launch(f["hblur"], (self.hblocks, 1, 1), (32, 1, 1),
                                     [w, h, n, self.xyb, self.hbl])),
            ("vblur", lambda: launch(f["vblur"], (self.vblocks, 1, 1), (160, 1, 1),
                                     [w, h, n, self.xyb, self.hbl, self.partial])),
            ("total", lambda: launch(f["total"], (1, 1, 1), (128, 1, 1),
                                     [w, h, n, self.partial, self.out])),
        ]

    def time(self, iters):
        steps = self.steps()
        for _, run in steps:
            run()
        ev = [[cp.cuda.Event() for _ in range(len(steps) + 1)] for _ in range(iters)]
        for i in range(iters):
            ev[i][0].record()
            for j, (_, run) in enumerate(steps):
                run()
                ev[i][j + 1].record()
        cp.cuda.get_current_stream().synchronize()

        def median_us(a, b):
            return 1000 * float(np.median([cp.cuda.get_elapsed_time(e[a], e[b]) for e in ev]))

        t = {name: median_us(j, j + 1) for j, (name, _) in enumerate(steps)}
        t["all"] = median_us(0, len(steps))
        return t

    def sums(self):
        return self.out.get().view(np.float64)

    def blurred0(self):
        """Scale 0's 15 horizontally blurred planes as (15, h, w), whatever the layout."""
        w, h = self.w, self.h
        if self.kind == "rowmajor":
            return self.hbl[:15 * w * h].get().reshape(15, h, w)
        hp = (h + 31) // 32 * 32
        t = self.hbl[:15 * w * hp].get().reshape(15, hp // 32, w, 32)
        return t.transpose(0, 1, 3, 2).reshape(15, hp, w)[:, :h, :]


def main():
    builds = []
    for a in sys.argv[1:]:
        name, _, rest = a.partition("=")
        path, _, kind = rest.partition(":")
        kind = kind or "tables"
        if not path or kind not in ("tables", "direct", "rowmajor"):
            sys.exit(__doc__)
        builds.append((name, path, kind))
    if not builds:
        sys.exit(__doc__)
    iters = int(os.environ.get("S2_ITERS", "30"))
    sizes = [tuple(int(v) for v in s.split("x"))
             for s in os.environ.get("S2_SIZES", "1920x1080,3840x2160").split(",")]
    rows = []
    for w, h in sizes:
        data = frames(w, h)
        first = None
        for name, path, kind in builds:
            b = Build(path, kind, w, h, data)
            t = b.time(iters)
            got = (b.sums(), b.blurred0(), None if kind == "rowmajor" else b.xyb.get())
            if first is None:
                first = (kind, got)
                cmp = "(reference)"
            else:
                s0, h0, x0 = first[1]
                dev = float(np.max(np.abs(got[0] - s0) / np.maximum(np.abs(s0), 1e-300)))
                hb = int(np.count_nonzero(got[1].view(np.uint32) != h0.view(np.uint32)))
                cmp = f"sums max rel diff {dev:.1e}, blurred bits differing {hb}"
                if x0 is not None and got[2] is not None:
                    xd = int(np.count_nonzero(got[2].view(np.uint32) != x0.view(np.uint32)))
                    cmp += f", XYB bits differing {xd}"
            rows.append((f"{w}x{h}", name, t, cmp))
            del b
    print("| size | build | XYB us | horizontal us | vertical us | total us | all us | against the first |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for size, name, t, cmp in rows:
        print(f"| {size} | {name} | {t['xyb']:.1f} | {t['hblur']:.1f} | {t['vblur']:.1f} | "
              f"{t['total']:.1f} | {t['all']:.1f} | {cmp} |")


if __name__ == "__main__":
    main()
