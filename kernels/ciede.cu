// CIEDE2000 as libvmaf's `ciede` computes it: each pixel of both frames from limited-range
// Y'CbCr through libvmaf's "BT.709" matrix, the sRGB curve and D65 to CIELAB, the CIEDE2000
// difference (kL = 0.65, kC = 1, kH = 4) of each pixel pair, summed over the frame. Chroma is
// read where libvmaf's upsampling reads it (its own chroma buffers: sizes rounded down, rows
// padded to 32 samples with zeros, Cr right after Cb; 4:2:2 read as row y / 2, column x).
// Per pixel in f32 with fast intrinsics; per-block sums in f64, added in a fixed order.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/ciede.c; host side and oracle:
// src/features/ciede/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace ciede_detail {

// Host side: `CiedeArgs` in src/features/ciede/cuda.rs (same layout, 232 bytes).
struct CiedeArgs {
    Plane reference[3];
    Plane distorted[3];
    int32_t width;
    int32_t height;
    int32_t mode;  // 0: 4:4:4, 1: 4:2:0, 2: 4:2:2
    int32_t chroma_width;
    int32_t chroma_height;
    int32_t chroma_stride;
    float y_offset;
    float y_scale;
    float c_offset;
    float c_scale;
};
static_assert(sizeof(CiedeArgs) == 232, "CiedeArgs layout");

constexpr int ROWS_PER_THREAD = 4;
constexpr float PI_F = 3.14159265358979f;

struct Lab {
    float l, a, b;
};

// Chroma sample of plane `p` (0: Cb, 1: Cr) of `planes` (Y, Cb, Cr) for pixel (x, y).
__device__ __forceinline__ float chroma(const CiedeArgs &a, const Plane *planes, int p, int x,
                                        int y) {
    if (a.mode == 0) {
        return (float)sample(planes[1 + p], x, y);
    }
    const int q = a.mode == 1 ? x >> 1 : x;
    int row = (y >> 1) + q / a.chroma_stride;
    const int col = q % a.chroma_stride;
    if (col >= a.chroma_width) {
        return 0.0f;
    }
    if (row >= a.chroma_height) {
        ++p;
        row -= a.chroma_height;
    }
    if (p >= 2 || row >= a.chroma_height) {
        return 0.0f;
    }
    return (float)sample(planes[1 + p], col, row);
}

__device__ __forceinline__ float to_linear(float c) {
    return c > 10.0f / 255.0f ? __powf((c + 0.055f) * (1.0f / 1.055f), 2.4f)
                              : c * (1.0f / 12.92f);
}

__device__ __forceinline__ float lab_f(float t) {
    return t > 216.0f / 24389.0f ? cbrtf(t) : (24389.0f / 27.0f * t + 16.0f) * (1.0f / 116.0f);
}

__device__ __forceinline__ Lab to_lab(const CiedeArgs &a, float y, float u, float v) {
    y = (y - a.y_offset) * a.y_scale;
    u = (u - a.c_offset) * a.c_scale;
    v = (v - a.c_offset) * a.c_scale;
    const float r = to_linear(y + 1.28033f * v);
    const float g = to_linear(y - 0.21482f * u - 0.38059f * v);
    const float b = to_linear(y + 2.12798f * u);
    const float x = r * 0.4124564390896921f + g * 0.357576077643909f + b * 0.18043748326639894f;
    const float yy = r * 0.21267285140562248f + g * 0.715152155287818f + b * 0.07217499330655958f;
    const float z = r * 0.019333895582329317f + g * 0.119192025881303f + b * 0.9503040785363677f;
    const float fx = lab_f(x * (1.0f / 0.95047f));
    const float fy = lab_f(yy);
    const float fz = lab_f(z * (1.0f / 1.08883f));
    return Lab{116.0f * fy - 16.0f, 500.0f * (fx - fy), 200.0f * (fy - fz)};
}

__device__ __forceinline__ float pow7(float c) {
    const float c2 = c * c;
    return c2 * c2 * c2 * c;
}

__device__ __forceinline__ float hue(float b, float a) {
    if (b == 0.0f && a == 0.0f) {
        return 0.0f;
    }
    const float h = atan2f(b, a);
    return h < 0.0f ? h + 2.0f * PI_F : h;
}

__device__ __forceinline__ float ciede2000(const Lab c1, const Lab c2) {
    const float pow25_7 = 6103515625.0f;
    const float dl = c2.l - c1.l;
    const float l_bar = 0.5f * (c1.l + c2.l);
    const float ch1 = sqrtf(c1.a * c1.a + c1.b * c1.b);
    const float ch2 = sqrtf(c2.a * c2.a + c2.b * c2.b);
    const float c7 = pow7(0.5f * (ch1 + ch2));
    const float g = 1.0f - sqrtf(__fdividef(c7, c7 + pow25_7));
    const float a1 = c1.a + 0.5f * c1.a * g;
    const float a2 = c2.a + 0.5f * c2.a * g;
    const float cp1 = sqrtf(a1 * a1 + c1.b * c1.b);
    const float cp2 = sqrtf(a2 * a2 + c2.b * c2.b);
    const float cp_bar = 0.5f * (cp1 + cp2);
    const float l50 = (l_bar - 50.0f) * (l_bar - 50.0f);
    const float s_l = 1.0f + 0.015f * l50 * rsqrtf(20.0f + l50);
    const float s_c = 1.0f + 0.045f * cp_bar;
    const float h1 = hue(c1.b, a1);
    const float h2 = hue(c2.b, a2);
    const float hd = h2 - h1;
    const bool wrap = fabsf(hd) > PI_F;
    float dh = 0.0f;
    if (ch1 != 0.0f && ch2 != 0.0f) {
        dh = !wrap ? hd : (h2 <= h1 ? hd + 2.0f * PI_F : hd - 2.0f * PI_F);
    }
    const float dhp = 2.0f * sqrtf(cp1 * cp2) * __sinf(0.5f * dh);
    const float hb = wrap ? 0.5f * (h1 + h2 + 2.0f * PI_F) : 0.5f * (h1 + h2);
    const float t = 1.0f - 0.17f * __cosf(hb - PI_F / 6.0f) + 0.24f * __cosf(2.0f * hb) +
                    0.32f * __cosf(3.0f * hb + PI_F / 30.0f) -
                    0.20f * __cosf(4.0f * hb - 7.0f * PI_F / 20.0f);
    const float s_h = 1.0f + 0.015f * cp_bar * t;
    const float d = (hb * (180.0f / PI_F) - 275.0f) * (1.0f / 25.0f);
    const float cp7 = pow7(cp_bar);
    const float r_t = -2.0f * sqrtf(__fdividef(cp7, cp7 + pow25_7)) *
                      __sinf((60.0f * PI_F / 180.0f) * __expf(-d * d));
    const float lightness = __fdividef(dl, 0.65f * s_l);
    const float chroma_term = __fdividef(cp2 - cp1, s_c);
    const float hue_term = __fdividef(dhp, 4.0f * s_h);
    const float sum = lightness * lightness + chroma_term * chroma_term + hue_term * hue_term +
                      r_t * chroma_term * hue_term;
    return sqrtf(fmaxf(sum, 0.0f));
}

__device__ __forceinline__ double warp_sum_f64(double v) {
    for (int off = 16; off > 0; off >>= 1) {
        v += __shfl_down_sync(0xffffffffu, v, off);
    }
    return v;
}

}  // namespace ciede_detail

using namespace ciede_detail;

// One block per 32 x 32 tile: each thread takes 4 pixels of a column (rows y, y + 8, ...),
// sums their differences, and the block writes its f64 sum to `partial[by * gridDim.x + bx]`
// (every block writes its word, so no zeroing is needed).
// Launch: grid ceil(w / 32) x ceil(h / 32), blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
ciede_blocks(const __grid_constant__ CiedeArgs args, double *__restrict__ partial) {
    __shared__ double warp_sums[BLOCK_Y];
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int y0 = blockIdx.y * BLOCK_Y * ROWS_PER_THREAD + threadIdx.y;
    float s = 0.0f;
    if (x < args.width) {
#pragma unroll
        for (int k = 0; k < ROWS_PER_THREAD; ++k) {
            const int y = y0 + k * BLOCK_Y;
            if (y >= args.height) {
                break;
            }
            const float ry = (float)sample(args.reference[0], x, y);
            const float dy = (float)sample(args.distorted[0], x, y);
            const float ru = chroma(args, args.reference, 0, x, y);
            const float rv = chroma(args, args.reference, 1, x, y);
            const float du = chroma(args, args.distorted, 0, x, y);
            const float dv = chroma(args, args.distorted, 1, x, y);
            if (ry == dy && ru == du && rv == dv) {
                continue;  // equal colours differ by exactly 0
            }
            s += ciede2000(to_lab(args, ry, ru, rv), to_lab(args, dy, du, dv));
        }
    }
    const double w = warp_sum_f64((double)s);
    if (threadIdx.x == 0) {
        warp_sums[threadIdx.y] = w;
    }
    __syncthreads();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
        double t = 0.0;
#pragma unroll
        for (int i = 0; i < BLOCK_Y; ++i) {
            t += warp_sums[i];
        }
        partial[blockIdx.y * gridDim.x + blockIdx.x] = t;
    }
}

// `out[0]` = the sum of the `blocks` block sums (as f64 bits), in a fixed order: thread i adds
// blocks i, i + 256, ..., then the warps' and the block's sums in index order.
// Launch: one block of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
ciede_total(const double *__restrict__ partial, int32_t blocks, double *__restrict__ out) {
    __shared__ double warp_sums[BLOCK_THREADS / 32];
    const int tid = threadIdx.y * BLOCK_X + threadIdx.x;
    double s = 0.0;
    for (int i = tid; i < blocks; i += BLOCK_THREADS) {
        s += partial[i];
    }
    s = warp_sum_f64(s);
    if ((tid & 31) == 0) {
        warp_sums[tid >> 5] = s;
    }
    __syncthreads();
    if (tid == 0) {
        double t = 0.0;
        for (int i = 0; i < BLOCK_THREADS / 32; ++i) {
            t += warp_sums[i];
        }
        out[0] = t;
    }
}
