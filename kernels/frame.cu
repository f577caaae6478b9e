// Frame preparation on the GPU: the chroma components of an input buffer (planar, or
// interleaved as NV12/P010's UV plane; 1- or 2-byte samples, shifted and masked as the luma's
// `Plane`) unpacked into packed right-aligned 16-bit planes at the scoring depth, which the
// extra metrics (PSNR's Cb/Cr, SSIMULACRA2's RGB conversion) read. Host side:
// src/cuda/chroma.rs (`ChromaGpu`).
#include "common.cuh"

namespace {

// One component as it lies in device memory: sample x of row y is at
// `ptr + y * pitch + offset + x * step`. Host side: `DevComponent` in src/cuda/chroma.rs
// (same layout, 40 bytes).
struct Component {
    const uint8_t *ptr;
    int64_t pitch;
    uint32_t offset;
    uint32_t step;
    uint32_t wide;
    uint32_t down;
    uint32_t up;
    uint32_t mask;
};

struct Four {
    Component c[4];
};

struct Outputs {
    uint16_t *p[4];
};

}  // namespace

// Grid (ceil(w / 32), ceil(h / 8), 4), block 32 x 8: blockIdx.z picks the component
// (reference Cb, reference Cr, distorted Cb, distorted Cr); each thread writes one sample.
extern "C" __global__ void unpack_chroma(Four in, Outputs out, int w, int h) {
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= w || y >= h) {
        return;
    }
    const Component &c = in.c[blockIdx.z];
    const uint8_t *at = c.ptr + (int64_t)y * c.pitch + c.offset + (int64_t)x * c.step;
    uint32_t v = c.wide ? (uint32_t)(__ldg(at) | (__ldg(at + 1) << 8)) : (uint32_t)__ldg(at);
    v = ((v >> c.down) & c.mask) << c.up;
    out.p[blockIdx.z][(int64_t)y * w + x] = (uint16_t)v;
}
