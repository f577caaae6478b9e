// Integer sums over a frame pair's luma for libvmaf's float_psnr and float_moment: the sums of
// the squared differences, of the samples and of their squares of both frames. libvmaf reads
// each sample as an f32 on an 8-bit scale (x / 2^(bpc - 8)) and sums in f64; its squares are
// the f32 rounding of the integer square over a power of two, so the sums here are those
// roundings (exact below 2^24) added as 64-bit integers, in any order.
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/float_psnr.c, float_moment.c, psnr.c,
// moment.c, picture_copy.c; host side and oracle: src/features/float_psnr/{cuda,cpu}.rs.

#include "common.cuh"

using namespace vmafcmp;

namespace float_psnr_detail {

constexpr int ROWS_PER_THREAD = 4;

// The f32 rounding of a * a (a < 2^16), as an integer.
__device__ __forceinline__ uint64_t square(uint32_t a) {
    return (uint64_t)__uint2float_rn(a * a);
}

}  // namespace float_psnr_detail

using namespace float_psnr_detail;

// Adds to `out[0..5]` (zeroed by the host first): the squared differences, the reference
// samples, the distorted samples, the squared reference and the squared distorted samples of
// a 32 x 32 tile per block (each thread 4 pixels of a column).
// Launch: grid ceil(w / 32) x ceil(h / 32), blocks of 32 x 8 threads.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
float_plane_sums(const Plane reference, const Plane distorted, int32_t width, int32_t height,
                 unsigned long long *__restrict__ out) {
    __shared__ uint64_t scratch[5 * (BLOCK_THREADS / 32)];
    const int x = blockIdx.x * BLOCK_X + threadIdx.x;
    const int y0 = blockIdx.y * BLOCK_Y * ROWS_PER_THREAD + threadIdx.y;
    uint64_t v[5] = {0, 0, 0, 0, 0};
    if (x < width) {
#pragma unroll
        for (int k = 0; k < ROWS_PER_THREAD; ++k) {
            const int y = y0 + k * BLOCK_Y;
            if (y < height) {
                const uint32_t a = sample(reference, x, y);
                const uint32_t b = sample(distorted, x, y);
                v[0] += square(a > b ? a - b : b - a);
                v[1] += a;
                v[2] += b;
                v[3] += square(a);
                v[4] += square(b);
            }
        }
    }
    block_add_u64<5>(v, scratch, out);
}
