// Shared device helpers of the vmafcompare kernels: border reflection as libvmaf does it and
// integer reductions whose results do not depend on thread order.
#pragma once

#include <stdint.h>

namespace vmafcmp {

// Threads per block of the tiled kernels: 32 x 8.
constexpr int BLOCK_X = 32;
constexpr int BLOCK_Y = 8;
constexpr int BLOCK_THREADS = BLOCK_X * BLOCK_Y;

// A luma plane as it lies in device memory: `pitch` bytes from one row to the next, samples
// of 1 byte (`wide == 0`) or 2 bytes little-endian (`wide == 1`). The sample's value is
// `((stored >> down) & mask) << up`: `down` drops the padding bits of left-aligned formats
// (P010: 6), `mask` drops bits above the format's depth (they are not part of the sample),
// `up` raises a lower-depth stream to the depth both streams are scored at. The same plane
// descriptor serves an input buffer read where it lies (GStreamer CUDA memory), an uploaded
// copy of a host buffer's rows, and the kernels' own packed 16-bit planes.
// Host side: `DevPlane` in src/cuda/plane.rs (same layout, 32 bytes).
struct Plane {
    const uint8_t *ptr;
    int64_t pitch;
    uint32_t wide;
    uint32_t down;
    uint32_t up;
    uint32_t mask;
};

// Sample (x, y) of `p` (no bounds check: callers pass reflected, in-range indices).
__device__ __forceinline__ uint32_t sample(const Plane &p, int x, int y) {
    const uint8_t *row = p.ptr + (int64_t)y * p.pitch;
    const uint32_t v = p.wide ? (uint32_t)__ldg(reinterpret_cast<const uint16_t *>(row) + x)
                              : (uint32_t)__ldg(row + x);
    return ((v >> p.down) & p.mask) << p.up;
}

// Reflects `i` into 0..n-1 without repeating the edge sample (-1 -> 1, n -> n - 2), then
// clamps (only reached for indices more than n - 1 outside, which no caller uses for output).
__device__ __forceinline__ int reflect(int i, int n) {
    int last = n - 1;
    int r = i < 0 ? -i : (i > last ? 2 * last - i : i);
    return r < 0 ? 0 : (r > last ? last : r);
}

// Sum of `v` over the warp (wrapping, so any order gives the same bits). Lane 0 holds it.
__device__ __forceinline__ uint64_t warp_sum_u64(uint64_t v) {
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
}

__device__ __forceinline__ uint32_t warp_sum_u32(uint32_t v) {
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
}

// Adds the block's sums of N values (one per thread each) to `out[0..N)`, wrapping modulo
// 2^64. Every thread of the block must call it; `scratch` holds N * warps words.
template <int N>
__device__ __forceinline__ void block_add_u64(uint64_t (&v)[N], uint64_t *scratch,
                                              unsigned long long *out) {
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int lane = tid & 31;
    const int warp = tid >> 5;
    const int warps = (blockDim.x * blockDim.y + 31) >> 5;
#pragma unroll
    for (int k = 0; k < N; ++k) {
        uint64_t s = warp_sum_u64(v[k]);
        if (lane == 0) {
            scratch[warp * N + k] = s;
        }
    }
    __syncthreads();
    if (tid < N) {
        uint64_t s = 0;
        for (int w = 0; w < warps; ++w) {
            s += scratch[w * N + tid];
        }
        atomicAdd(out + tid, (unsigned long long)s);
    }
}

}  // namespace vmafcmp
