// SSIMULACRA2 on the GPU: YUV -> linear RGB -> XYB, six scales of 2x2 box downscaling in
// linear RGB, the recursive Gaussian blur (sigma 1.5) of the five SSIM inputs per channel,
// and the per-pixel SSIM and edge-difference error maps summed in double.
//
// A port of rust-av ssimulacra2 0.5.1 (src/lib.rs, src/blur/gaussian.rs, build.rs) and the
// linear RGB -> XYB step of yuvxyb 0.4.2 (src/rgb_xyb.rs, yuvxyb-math cbrtf), which follow
// Cloudinary's libjxl tools/ssimulacra2.cc. Every float operation is written with the
// rounding intrinsics (__fadd_rn, __fmul_rn, ...) where the crate rounds each operation and
// with fmaf where it calls mul_add, so that nvcc contracts nothing the CPU does not: the XYB
// planes and the blurred planes are then the crate's bit for bit. The YUV -> linear RGB
// conversion is src/engine/colour.rs, with glibc's powf (see powf_glibc).
//
// Pipeline per frame pair (host side: src/cuda/ssimulacra2.rs), for `n` scales of sizes
// w_k x h_k (w_0 x h_0 the frame, w_{k+1} = ceil(w_k / 2)):
//   s2_xyb          every scale at once: scale 0 YUV -> linear RGB -> XYB planes, scale k >= 1
//                   2x2 box of scale k-1's linear RGB (in shared memory) -> XYB planes;
//   s2_hblur        every scale at once: horizontal recursive pass of the 15 planes
//                   (3 channels x {img1, img2, img1^2, img2^2, img1*img2}), one warp per
//                   32 rows of one plane;
//   s2_vblur        every scale at once: vertical pass, the error maps, per-block sums;
//   s2_total        the 108 sums (6 scales x 3 channels x 6 sums), fixed order.
//
// Scratch layout (f32 planes of w_k * h_k samples, rows packed; off_k = sum_{j<k} w_j h_j):
//   xyb:  scale k at 6 off_k, plane (img * 3 + c) (img 0 reference, 1 distorted; c = X, Y, B)
//   hbl:  scale k at 15 off_k, plane (c * 5 + p), p: 0 blur(img1), 1 blur(img2),
//         2 img1^2, 3 img2^2, 4 img1*img2 (horizontal pass only)
//   partial: 6 doubles per s2_vblur block.

#include "common.cuh"

using namespace vmafcmp;

namespace s2 {

constexpr int MAX_SCALES = 6;
// s2_xyb: scale-0 pixels per block side (2^(MAX_SCALES - 1) x 2, so that every scale's tile
// holds whole 2x2 boxes).
constexpr int XTILE = 64;

// Recursive Gaussian constants: ssimulacra2 0.5.1 build.rs (init_recursive_gaussian, sigma
// 1.5), as the f32 values its generated recursive_gaussian.rs holds (hex: exact bits).
constexpr int RADIUS = 5;
constexpr float MUL_IN_1 = 0x1.c4fa84p-5f;    //  0.055295236
constexpr float MUL_IN_3 = -0x1.e1fd7ap-5f;   // -0.058836687
constexpr float MUL_IN_5 = 0x1.a8894ap-7f;    //  0.012955819
constexpr float MUL_PREV_1 = 0x1.e6f0e2p+0f;  //  1.9021131
constexpr float MUL_PREV_3 = 0x1.2cf230p+0f;  //  1.1755705
constexpr float MUL_PREV_5 = 0x1.1a6264p-53f; //  1.2246469e-16
constexpr float MUL_PREV2 = -1.0f;            //  MUL_PREV2_1/3/5
constexpr float VERT_MUL_IN_1 = MUL_IN_1;
constexpr float VERT_MUL_IN_3 = MUL_IN_3;
constexpr float VERT_MUL_IN_5 = MUL_IN_5;
constexpr float VERT_MUL_PREV_1 = -MUL_PREV_1;
constexpr float VERT_MUL_PREV_3 = -MUL_PREV_3;
constexpr float VERT_MUL_PREV_5 = -MUL_PREV_5;

// Opsin absorbance matrix and bias: yuvxyb 0.4.2 src/rgb_xyb.rs (the f32 constants after its
// const arithmetic, e.g. K_M01 = 1 - 0.078 - 0.30 in f32).
constexpr float M00 = 0x1.333334p-2f;
constexpr float M01 = 0x1.3e76c8p-1f;
constexpr float M02 = 0x1.3f7ceep-4f;
constexpr float M10 = 0x1.d70a3ep-3f;
constexpr float M11 = 0x1.624dd2p-1f;
constexpr float M12 = 0x1.3f7ceep-4f;
constexpr float M20 = 0x1.f28798p-3f;
constexpr float M21 = 0x1.a35d1ep-3f;
constexpr float M22 = 0x1.1a86d2p-1f;
constexpr float BIAS = 0x1.f12a6cp-9f;          // K_B0 = 0.0037930734
constexpr float NEG_CBRT_BIAS = -0x1.3f64eap-3f; // -cbrtf(K_B0) with yuvxyb-math's cbrtf

// Tiles. s2_hblur: a block (one warp) runs the horizontal recursion of HROWS rows of one
// product plane of one channel, its input values in SEG-column segments through shared memory.
// One warp per block and no block barrier: the warps of an SM interleave freely.
constexpr int HROWS = 32;
constexpr int SEG = 32;
constexpr int HTHREADS = 32;
constexpr int HPLANES = 15;  // blocks per row group: 3 channels x 5 products
// s2_vblur: a block runs the vertical recursion of VCOLS columns of one channel, one warp per
// plane, VROWS rows per step of the loop; then the 160 threads score the VROWS x VCOLS pixels.
constexpr int VCOLS = 32;
constexpr int VROWS = 16;
constexpr int VTHREADS = 5 * 32;
constexpr int VPIX = VROWS * VCOLS;
constexpr int VPER = (VPIX + VTHREADS - 1) / VTHREADS;
constexpr int SUMS = 6;  // per channel: ssim d, d^4, artifact, artifact^4, detail, detail^4

// Scale k of a w0 x h0 frame: its size and the pixels of the scales before it.
struct Scale {
    int w;
    int h;
    long long plane;  // w * h
    long long off;    // sum of w_j * h_j for j < k
};

__device__ __forceinline__ Scale scale_of(int w0, int h0, int k) {
    Scale s;
    s.w = w0;
    s.h = h0;
    s.off = 0;
    for (int i = 0; i < k; ++i) {
        s.off += (long long)s.w * s.h;
        s.w = (s.w + 1) / 2;
        s.h = (s.h + 1) / 2;
    }
    s.plane = (long long)s.w * s.h;
    return s;
}

// Blocks of s2_hblur for a scale of height h: row groups x 3 channels x 5 products.
__device__ __forceinline__ int hblocks(int h) { return (h + HROWS - 1) / HROWS * HPLANES; }
// Blocks of s2_vblur for a scale of width w: column groups x 3 channels.
__device__ __forceinline__ int vgroups(int w) { return (w + VCOLS - 1) / VCOLS; }

// The scale a block of a launch over all n scales belongs to (blocks in scale order,
// hblocks / 3 vgroups per scale): its geometry, and the block's index within the scale.
template <bool VERTICAL>
__device__ __forceinline__ Scale block_scale(int w0, int h0, int n, int block, int &local) {
    int start = 0;
    Scale s = scale_of(w0, h0, 0);
    int k = 0;
    for (;;) {
        const int per = VERTICAL ? vgroups(s.w) * 3 : hblocks(s.h);
        if (block < start + per || k + 1 >= n) {
            break;
        }
        start += per;
        ++k;
        s.off += s.plane;
        s.w = (s.w + 1) / 2;
        s.h = (s.h + 1) / 2;
        s.plane = (long long)s.w * s.h;
    }
    local = block - start;
    return s;
}

// yuvxyb-math 0.1.1 cbrtf (fastmath, the default): FreeBSD's s_cbrtf.c without the special
// cases, two Newton steps in double. The argument is positive and normal here.
__device__ __forceinline__ float cbrtf_fast(float x) {
    const uint32_t B1 = 709958130u;
    uint32_t ui = __float_as_uint(x);
    uint32_t hx = ui & 0x7fffffffu;
    hx = hx / 3u + B1;
    ui = (ui & 0x80000000u) | hx;
    const double xd = (double)x;
    double t = (double)__uint_as_float(ui);
    double r = __dmul_rn(__dmul_rn(t, t), t);
    t = __ddiv_rn(__dmul_rn(t, __dadd_rn(__dadd_rn(xd, xd), r)), __dadd_rn(__dadd_rn(xd, r), r));
    r = __dmul_rn(__dmul_rn(t, t), t);
    t = __ddiv_rn(__dmul_rn(t, __dadd_rn(__dadd_rn(xd, xd), r)), __dadd_rn(__dadd_rn(xd, r), r));
    return __double2float_rn(t);
}

// One mixed channel: clamp at 0, cube root, minus cbrt(bias) (linear_rgb_to_xyb's loop body).
__device__ __forceinline__ float mixed(float m) {
    if (m < 0.0f) {
        m = 0.0f;
    }
    return __fadd_rn(cbrtf_fast(m), NEG_CBRT_BIAS);
}

// Linear RGB -> XYB (opsin_absorbance, cube root, mixed_to_xyb), then make_positive_xyb.
__device__ __forceinline__ void xyb_positive(float r, float g, float b, float &ox, float &oy,
                                             float &ob) {
    const float m0 = mixed(fmaf(M00, r, fmaf(M01, g, fmaf(M02, b, BIAS))));
    const float m1 = mixed(fmaf(M10, r, fmaf(M11, g, fmaf(M12, b, BIAS))));
    const float m2 = mixed(fmaf(M20, r, fmaf(M21, g, fmaf(M22, b, BIAS))));
    const float x = __fmul_rn(0.5f, __fsub_rn(m0, m1));
    const float y = __fmul_rn(0.5f, __fadd_rn(m0, m1));
    // make_positive_xyb: B first (from the unshifted Y), then X, then Y.
    ob = __fadd_rn(__fsub_rn(m2, y), 0.55f);
    ox = fmaf(x, 14.0f, 0.42f);
    oy = __fadd_rn(y, 0.01f);
}

}  // namespace s2

// The YUV -> linear RGB constants of src/engine/colour.rs (`YuvToRgb`) for one caps; host
// side `ConvParams` in src/cuda/ssimulacra2.rs (same layout, 32 bytes).
struct S2Conv {
    float kr;     // matrix Kr
    float kb;     // matrix Kb
    float off_y;  // limited: 16 s; full: 0            (s = 2^(bpc - 8))
    float div_y;  // limited: 219 s; full: 2^bpc - 1
    float off_c;  // limited: 128 s; full: 2^(bpc - 1)
    float div_c;  // limited: 224 s; full: 2^bpc - 1
    int32_t srgb; // 1: sRGB transfer, 0: BT.709 inverse OETF
    int32_t pad;
};

namespace s2 {

// powf as the CPU route computes it: Rust's f32::powf calls the C library's powf, which on
// Linux is glibc's (>= 2.28, from ARM optimized-routines: sysdeps/ieee754/flt-32/e_powf.c with
// e_powf_log2_data.c and e_exp2f_data.c, no TOINT_INTRINSICS on x86_64). It is not correctly
// rounded (0.82 ulp), and one-ulp differences in linear RGB move the score by up to ~1e-4, so
// the kernel repeats its double-precision steps. Checked against glibc 2.36's powf for every
// float x in [0.04, 1.01] with y = 2.4 and 1/0.45 (f32), with and without FMA contraction:
// no difference. Valid for positive normal x and |y log2 x| < 126 (the callers' range).
__device__ double POWF_LOG2_TAB[32] = {
    // {invc, logc} x 16
    0x1.661ec79f8f3bep+0, -0x1.efec65b963019p-2, 0x1.571ed4aaf883dp+0, -0x1.b0b6832d4fca4p-2,
    0x1.49539f0f010bp+0,  -0x1.7418b0a1fb77bp-2, 0x1.3c995b0b80385p+0, -0x1.39de91a6dcf7bp-2,
    0x1.30d190c8864a5p+0, -0x1.01d9bf3f2b631p-2, 0x1.25e227b0b8eap+0,  -0x1.97c1d1b3b7afp-3,
    0x1.1bb4a4a1a343fp+0, -0x1.2f9e393af3c9fp-3, 0x1.12358f08ae5bap+0, -0x1.960cbbf788d5cp-4,
    0x1.0953f419900a7p+0, -0x1.a6f9db6475fcep-5, 0x1p+0,               0x0p+0,
    0x1.e608cfd9a47acp-1, 0x1.338ca9f24f53dp-4,  0x1.ca4b31f026aap-1,  0x1.476a9543891bap-3,
    0x1.b2036576afce6p-1, 0x1.e840b4ac4e4d2p-3,  0x1.9c2d163a1aa2dp-1, 0x1.40645f0c6651cp-2,
    0x1.886e6037841edp-1, 0x1.88e9c2c1b9ff8p-2,  0x1.767dcf5534862p-1, 0x1.ce0a44eb17bccp-2,
};
__device__ unsigned long long EXP2F_TAB[32] = {
    0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,
    0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,
    0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
    0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,
    0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,
    0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
    0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,
    0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull,
};

__device__ __forceinline__ float powf_glibc(float x, float y) {
    constexpr double A0 = 0x1.27616c9496e0bp-2, A1 = -0x1.71969a075c67ap-2;
    constexpr double A2 = 0x1.ec70a6ca7baddp-2, A3 = -0x1.7154748bef6c8p-1;
    constexpr double A4 = 0x1.71547652ab82bp0;
    constexpr double C0 = 0x1.c6af84b912394p-5, C1 = 0x1.ebfce50fac4f3p-3;
    constexpr double C2 = 0x1.62e42ff0c52d6p-1;
    constexpr double SHIFT = 0x1.8p+52 / 32;
    // log2_inline: x = 2^k z, z in [OFF, 2 OFF), log2(x) = log1p(z / c - 1) / ln2 + log2(c) + k.
    const uint32_t ix = __float_as_uint(x);
    const uint32_t tmp = ix - 0x3f330000u;
    const int i = (int)((tmp >> (23 - 4)) % 16u);
    const uint32_t top = tmp & 0xff800000u;
    const uint32_t iz = ix - top;
    const int k = (int32_t)top >> 23;
    const double invc = __ldg(&POWF_LOG2_TAB[2 * i]);
    const double logc = __ldg(&POWF_LOG2_TAB[2 * i + 1]);
    const double z = (double)__uint_as_float(iz);
    const double r = __fma_rn(z, invc, -1.0);
    const double y0 = __dadd_rn(logc, (double)k);
    const double r2 = __dmul_rn(r, r);
    double p1 = __fma_rn(A0, r, A1);
    const double p2 = __fma_rn(A2, r, A3);
    const double r4 = __dmul_rn(r2, r2);
    double q = __fma_rn(A4, r, y0);
    q = __fma_rn(p2, r2, q);
    p1 = __fma_rn(p1, r4, q);
    const double ylogx = __dmul_rn((double)y, p1);
    // exp2_inline: ylogx = k / 32 + r, 2^ylogx = 2^(k / 32) (1 + C2 r + C1 r^2 + C0 r^3).
    double kd = __dadd_rn(ylogx, SHIFT);
    const unsigned long long ki = (unsigned long long)__double_as_longlong(kd);
    kd = __dsub_rn(kd, SHIFT);
    const double rr = __dsub_rn(ylogx, kd);
    unsigned long long t = __ldg(&EXP2F_TAB[ki % 32u]);
    t += ki << (52 - 5);
    const double s = __longlong_as_double((long long)t);
    const double zz = __fma_rn(C0, rr, C1);
    const double rr2 = __dmul_rn(rr, rr);
    double w = __fma_rn(C2, rr, 1.0);
    w = __fma_rn(zz, rr2, w);
    return __double2float_rn(__dmul_rn(w, s));
}

// Step 4 of colour.rs: non-linear [0, 1] -> linear.
__device__ __forceinline__ float transfer(float c, int srgb) {
    if (srgb) {
        return c <= 0.04045f ? __fdiv_rn(c, 12.92f)
                             : powf_glibc(__fdiv_rn(__fadd_rn(c, 0.055f), 1.055f), 2.4f);
    }
    // 1 / 0.45 in f32: 2.2222223
    return c < 0.081f ? __fdiv_rn(c, 4.5f)
                      : powf_glibc(__fdiv_rn(__fadd_rn(c, 0.099f), 1.099f), 0x1.1c71c8p+1f);
}

__device__ __forceinline__ float clamp01(float v) { return fminf(fmaxf(v, 0.0f), 1.0f); }

// Steps 2-4 of colour.rs for one pixel: samples (as read, at the scoring depth) -> linear RGB.
// `grey`: no chroma (cb' = cr' = 0).
__device__ __forceinline__ void yuv_to_linear(const S2Conv &cv, uint32_t ys, uint32_t cbs,
                                              uint32_t crs, bool grey, float &r, float &g,
                                              float &b) {
    const float yn = __fdiv_rn(__fsub_rn((float)ys, cv.off_y), cv.div_y);
    const float cbn = grey ? 0.0f : __fdiv_rn(__fsub_rn((float)cbs, cv.off_c), cv.div_c);
    const float crn = grey ? 0.0f : __fdiv_rn(__fsub_rn((float)crs, cv.off_c), cv.div_c);
    const float rp = __fadd_rn(yn, __fmul_rn(__fmul_rn(2.0f, __fsub_rn(1.0f, cv.kr)), crn));
    const float bp = __fadd_rn(yn, __fmul_rn(__fmul_rn(2.0f, __fsub_rn(1.0f, cv.kb)), cbn));
    const float gp = __fdiv_rn(__fsub_rn(__fsub_rn(yn, __fmul_rn(cv.kr, rp)), __fmul_rn(cv.kb, bp)),
                               __fsub_rn(__fsub_rn(1.0f, cv.kr), cv.kb));
    r = transfer(clamp01(rp), cv.srgb);
    g = transfer(clamp01(gp), cv.srgb);
    b = transfer(clamp01(bp), cv.srgb);
}

// Writes the XYB (positive) of both images' pixel `i` of a scale whose planes start at `xyb`.
__device__ __forceinline__ void store_xyb(float *xyb, long long plane, long long i,
                                          const float (&rgb)[6]) {
    float x, y, b;
    xyb_positive(rgb[0], rgb[1], rgb[2], x, y, b);
    xyb[i] = x;
    xyb[plane + i] = y;
    xyb[2 * plane + i] = b;
    xyb_positive(rgb[3], rgb[4], rgb[5], x, y, b);
    xyb[3 * plane + i] = x;
    xyb[4 * plane + i] = y;
    xyb[5 * plane + i] = b;
}

// The 2x2 box of downscale_by_2 from the (up to) four pixels a thread converted: sum in the
// crate's order (iy, then ix) from 0, edge pixels repeated, times 1/4.
__device__ __forceinline__ void store_down(float *lin, long long plane, long long i,
                                           const float (&p)[4][6], bool has_x1, bool has_y1) {
#pragma unroll
    for (int c = 0; c < 6; ++c) {
        const float v01 = has_x1 ? p[1][c] : p[0][c];
        const float v10 = has_y1 ? p[2][c] : p[0][c];
        const float v11 = has_y1 ? (has_x1 ? p[3][c] : p[2][c]) : v01;
        float sum = 0.0f;
        sum = __fadd_rn(sum, p[0][c]);
        sum = __fadd_rn(sum, v01);
        sum = __fadd_rn(sum, v10);
        sum = __fadd_rn(sum, v11);
        lin[c * plane + i] = __fmul_rn(sum, 0.25f);
    }
}

// The recursion state of one plane: prev and prev2 of the three cosine terms (k = 1, 3, 5).
struct Rec {
    float p1, p3, p5, q1, q3, q5;
};

__device__ __forceinline__ void rec_zero(Rec &s) {
    s.p1 = s.p3 = s.p5 = 0.0f;
    s.q1 = s.q3 = s.q5 = 0.0f;
}

// One step of RecursiveGaussian::horizontal_row: `sum` = left + right input.
__device__ __forceinline__ float hstep(Rec &s, float sum) {
    float o1 = __fmul_rn(sum, MUL_IN_1);
    float o3 = __fmul_rn(sum, MUL_IN_3);
    float o5 = __fmul_rn(sum, MUL_IN_5);
    o1 = fmaf(MUL_PREV2, s.q1, o1);
    o3 = fmaf(MUL_PREV2, s.q3, o3);
    o5 = fmaf(MUL_PREV2, s.q5, o5);
    s.q1 = s.p1;
    s.q3 = s.p3;
    s.q5 = s.p5;
    o1 = fmaf(MUL_PREV_1, s.p1, o1);
    o3 = fmaf(MUL_PREV_3, s.p3, o3);
    o5 = fmaf(MUL_PREV_5, s.p5, o5);
    s.p1 = o1;
    s.p3 = o3;
    s.p5 = o5;
    return __fadd_rn(__fadd_rn(o1, o3), o5);
}

// One step of RecursiveGaussian::vertical_pass: `sum` = top + bottom input.
__device__ __forceinline__ float vstep(Rec &s, float sum) {
    const float t1 = fmaf(s.p1, VERT_MUL_PREV_1, s.q1);
    const float t3 = fmaf(s.p3, VERT_MUL_PREV_3, s.q3);
    const float t5 = fmaf(s.p5, VERT_MUL_PREV_5, s.q5);
    const float o1 = fmaf(sum, VERT_MUL_IN_1, -t1);
    const float o3 = fmaf(sum, VERT_MUL_IN_3, -t3);
    const float o5 = fmaf(sum, VERT_MUL_IN_5, -t5);
    s.q1 = s.p1;
    s.q3 = s.p3;
    s.q5 = s.p5;
    s.p1 = o1;
    s.p3 = o3;
    s.p5 = o5;
    return __fadd_rn(__fadd_rn(o1, o3), o5);
}

// The value plane P blurs at a pixel whose XYB values are a (img1) and b (img2):
// image_multiply's f32 products for the second moments.
template <int P>
__device__ __forceinline__ float hval(float a, float b) {
    if (P == 0) {
        return a;
    }
    if (P == 1) {
        return b;
    }
    if (P == 2) {
        return __fmul_rn(a, a);
    }
    if (P == 3) {
        return __fmul_rn(b, b);
    }
    return __fmul_rn(a, b);
}

// Steps n0 .. n0 + SEG - 1 (those < w) of one row's horizontal recursion. The row's input
// values (hval<P> of the two images, computed once per column when staged) of the previous,
// current and next segment (pv, cv, nv) lie in shared memory; step n reads columns
// n - RADIUS - 1 and n + RADIUS - 1. Outputs go to `orow[0..SEG)`.
__device__ __forceinline__ void hchunk(Rec &s, const float *pv, const float *cv, const float *nv,
                                       int n0, int w, float *orow) {
    constexpr int L = RADIUS + 1;  // 6
    constexpr int R = RADIUS - 1;  // 4
#pragma unroll
    for (int i = 0; i < SEG; ++i) {
        if (n0 + i < w) {
            const float l = i >= L ? cv[i - L] : pv[i - L + SEG];
            const float r = i + R < SEG ? cv[i + R] : nv[i + R - SEG];
            const float sum = __fadd_rn(l, r);
            orow[i] = hstep(s, sum);
        }
    }
}

// The RADIUS - 1 steps before the first output (n = -4 .. -1): left inputs are 0, right
// inputs columns 0..3 of segment 0.
__device__ __forceinline__ void hwarm(Rec &s, const float *cv) {
#pragma unroll
    for (int i = 0; i < RADIUS - 1; ++i) {
        const float sum = __fadd_rn(0.0f, cv[i]);
        hstep(s, sum);
    }
}

// The per-pixel terms of ssim_map and edge_diff_map for one channel, added to acc[0..6):
// d, d^4 (1 - SSIM', at least 0), artifact, artifact^4, detail_lost, detail_lost^4.
__device__ __forceinline__ void terms(float mu1, float mu2, float s11, float s22, float s12,
                                      float i1, float i2, double (&acc)[SUMS]) {
    const float C2 = 0.0009f;
    const float mu11 = __fmul_rn(mu1, mu1);
    const float mu22 = __fmul_rn(mu2, mu2);
    const float mu12 = __fmul_rn(mu1, mu2);
    const float mu_diff = __fsub_rn(mu1, mu2);
    const float num_m = fmaf(mu_diff, -mu_diff, 1.0f);
    const float num_s = fmaf(2.0f, __fsub_rn(s12, mu12), C2);
    const float denom_s = __fadd_rn(__fadd_rn(__fsub_rn(s11, mu11), __fsub_rn(s22, mu22)), C2);
    double d = __dsub_rn(1.0, (double)__fdiv_rn(__fmul_rn(num_m, num_s), denom_s));
    d = fmax(d, 0.0);
    acc[0] = __dadd_rn(acc[0], d);
    const double d2 = __dmul_rn(d, d);
    acc[1] = __dadd_rn(acc[1], __dmul_rn(d2, d2));
    const double e2 = __dadd_rn(1.0, (double)fabsf(__fsub_rn(i2, mu2)));
    const double e1 = __dadd_rn(1.0, (double)fabsf(__fsub_rn(i1, mu1)));
    const double d1 = __dsub_rn(__ddiv_rn(e2, e1), 1.0);
    const double art = fmax(d1, 0.0);
    acc[2] = __dadd_rn(acc[2], art);
    const double a2 = __dmul_rn(art, art);
    acc[3] = __dadd_rn(acc[3], __dmul_rn(a2, a2));
    const double det = fmax(-d1, 0.0);
    acc[4] = __dadd_rn(acc[4], det);
    const double t2 = __dmul_rn(det, det);
    acc[5] = __dadd_rn(acc[5], __dmul_rn(t2, t2));
}

}  // namespace s2

using namespace s2;

// All scales' XYB planes in one launch. Block (bx, by) covers the XTILE x XTILE pixels of
// scale 0 from (XTILE bx, XTILE by), and so the (XTILE >> k)-square tile at the same place of
// every scale k (a scale-k pixel and its 2x2 box of scale k - 1 lie in the same block):
//  - scale 0: each thread converts 2x2-pixel boxes of both frames from YUV to linear RGB
//    (colour.rs), writes their XYB (positive) planes and, when n > 1, the box average (scale
//    1's linear RGB) to shared memory;
//  - scale k >= 1: each thread takes 2x2-pixel boxes of scale k's linear RGB from shared
//    memory, writes their XYB planes and, when k + 1 < n, scale k + 1's linear RGB to the
//    other shared buffer.
// ref/dis: luma planes (w0 x h0); cb_*/cr_*: chroma planes (cw x ch, packed u16), unused when
// cw == 0 (grey). Grid: ceil(w0 / XTILE) x ceil(h0 / XTILE), block 32 x 8.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
s2_xyb(const Plane ref, const Plane dis, const Plane cb_ref, const Plane cr_ref,
       const Plane cb_dis, const Plane cr_dis, int32_t cw, int32_t ch, const S2Conv conv,
       int32_t w0, int32_t h0, int32_t n, float *__restrict__ xyb) {
    // Linear RGB (6 planes: img * 3 + c) of scale 1 (tile XTILE / 2) and scale 2 (XTILE / 4);
    // scale k >= 3 reuses the buffer of scale k - 2.
    __shared__ float lin_a[6][XTILE / 2][XTILE / 2];
    __shared__ float lin_b[6][XTILE / 4][XTILE / 4];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nt = blockDim.x * blockDim.y;
    const bool grey = cw <= 0;
    {
        const long long plane = (long long)w0 * h0;
        const int ow = (w0 + 1) / 2;
        const int oh = (h0 + 1) / 2;
        constexpr int T = XTILE / 2;  // boxes per tile side
        for (int e = tid; e < T * T; e += nt) {
            const int lx = e % T;
            const int ly = e / T;
            const int ox = blockIdx.x * T + lx;
            const int oy = blockIdx.y * T + ly;
            if (ox >= ow || oy >= oh) {
                continue;
            }
            const bool has_x1 = 2 * ox + 1 < w0;
            const bool has_y1 = 2 * oy + 1 < h0;
            float p[4][6];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int dx = q & 1;
                const int dy = q >> 1;
                if ((dx && !has_x1) || (dy && !has_y1)) {
#pragma unroll
                    for (int c = 0; c < 6; ++c) {
                        p[q][c] = 0.0f;
                    }
                    continue;
                }
                const int x = 2 * ox + dx;
                const int y = 2 * oy + dy;
                uint32_t cbr = 0, crr = 0, cbd = 0, crd = 0;
                if (!grey) {
                    const int cx = (int)((long long)x * cw / w0);
                    const int cy = (int)((long long)y * ch / h0);
                    cbr = sample(cb_ref, cx, cy);
                    crr = sample(cr_ref, cx, cy);
                    cbd = sample(cb_dis, cx, cy);
                    crd = sample(cr_dis, cx, cy);
                }
                yuv_to_linear(conv, sample(ref, x, y), cbr, crr, grey, p[q][0], p[q][1],
                              p[q][2]);
                yuv_to_linear(conv, sample(dis, x, y), cbd, crd, grey, p[q][3], p[q][4],
                              p[q][5]);
                store_xyb(xyb, plane, (long long)y * w0 + x, p[q]);
            }
            if (n > 1) {
                store_down(&lin_a[0][0][0], T * T, ly * T + lx, p, has_x1, has_y1);
            }
        }
    }
    Scale s = scale_of(w0, h0, 0);
    for (int k = 1; k < n; ++k) {
        __syncthreads();
        s.off += s.plane;
        s.w = (s.w + 1) / 2;
        s.h = (s.h + 1) / 2;
        s.plane = (long long)s.w * s.h;
        const int tk = XTILE >> k;  // scale k's tile side (at least 2)
        const int T = tk / 2;       // boxes per tile side
        const float *src = (k & 1) ? &lin_a[0][0][0] : &lin_b[0][0][0];
        float *dst = (k & 1) ? &lin_b[0][0][0] : &lin_a[0][0][0];
        const int ow = (s.w + 1) / 2;
        const int oh = (s.h + 1) / 2;
        float *out = xyb + 6 * s.off;
        for (int e = tid; e < T * T; e += nt) {
            const int lx = e % T;
            const int ly = e / T;
            const int ox = blockIdx.x * T + lx;
            const int oy = blockIdx.y * T + ly;
            if (ox >= ow || oy >= oh) {
                continue;
            }
            const bool has_x1 = 2 * ox + 1 < s.w;
            const bool has_y1 = 2 * oy + 1 < s.h;
            float p[4][6];
#pragma unroll
            for (int q = 0; q < 4; ++q) {
                const int dx = q & 1;
                const int dy = q >> 1;
                if ((dx && !has_x1) || (dy && !has_y1)) {
#pragma unroll
                    for (int c = 0; c < 6; ++c) {
                        p[q][c] = 0.0f;
                    }
                    continue;
                }
                const int li = (2 * ly + dy) * tk + (2 * lx + dx);
#pragma unroll
                for (int c = 0; c < 6; ++c) {
                    p[q][c] = src[c * tk * tk + li];
                }
                store_xyb(out, s.plane, (long long)(2 * oy + dy) * s.w + (2 * ox + dx), p[q]);
            }
            if (k + 1 < n) {
                store_down(dst, T * T, ly * T + lx, p, has_x1, has_y1);
            }
        }
    }
}

namespace s2 {

// Loads column seg * SEG + lane of rows row0 .. row0 + HROWS - 1 of the input planes plane P
// needs (a: img1 for P = 0, 2, 4; b: img2 for P = 1, 3, 4) into registers (zeros outside).
template <int P>
__device__ __forceinline__ void hfetch(float (&a)[HROWS], float (&b)[HROWS], const float *in1,
                                       const float *in2, int seg, int row0, int w, int h,
                                       int lane) {
    const int gx = seg * SEG + lane;
#pragma unroll
    for (int r = 0; r < HROWS; ++r) {
        const int gy = row0 + r;
        const bool ok = gx < w && gy < h;
        const long long at = (long long)gy * w + gx;
        a[r] = (P == 0 || P == 2 || P == 4) && ok ? in1[at] : 0.0f;
        b[r] = (P == 1 || P == 3 || P == 4) && ok ? in2[at] : 0.0f;
    }
}

// Stores hval<P> of the fetched column into column `lane` of a segment slot.
template <int P>
__device__ __forceinline__ void hstage(float (*slot)[SEG + 1], const float (&a)[HROWS],
                                       const float (&b)[HROWS], int lane) {
#pragma unroll
    for (int r = 0; r < HROWS; ++r) {
        slot[r][lane] = hval<P>(a[r], b[r]);
    }
}

// One block of s2_hblur: plane P of channel c, rows row0 .. row0 + HROWS - 1.
template <int P>
__device__ __forceinline__ void hblur_warp(float (*tin)[HROWS][SEG + 1],
                                           float (*tout)[SEG + 1], const float *in1,
                                           const float *in2, float *out, int row0, int w,
                                           int h, int lane) {
    float a[HROWS], b[HROWS];
    // Segment -1 (slot 2) is zeros; segment 0 goes to slot 0; segment 1 waits in registers.
    hfetch<P>(a, b, in1, in2, 0, row0, w, h, lane);
    hstage<P>(tin[0], a, b, lane);
#pragma unroll
    for (int r = 0; r < HROWS; ++r) {
        tin[2][r][lane] = 0.0f;
    }
    hfetch<P>(a, b, in1, in2, 1, row0, w, h, lane);

    Rec st;
    rec_zero(st);
    const int chunks = (w + SEG - 1) / SEG;
    const int r = lane;
    for (int kk = 0; kk < chunks; ++kk) {
        // Slot (kk + 1) % 3 held segment kk - 2, last read by chunk kk - 1; tout was last
        // read by the stores of chunk kk - 1.
        __syncwarp();
        hstage<P>(tin[(kk + 1) % 3], a, b, lane);
        __syncwarp();
        if (kk + 1 < chunks) {
            hfetch<P>(a, b, in1, in2, kk + 2, row0, w, h, lane);
        }
        const int sp = (kk + 2) % 3;
        const int sc = kk % 3;
        const int sn = (kk + 1) % 3;
        if (kk == 0) {
            hwarm(st, tin[sc][r]);
        }
        hchunk(st, tin[sp][r], tin[sc][r], tin[sn][r], kk * SEG, w, tout[r]);
        __syncwarp();
        // The tile, row by row (coalesced).
        const int gx = kk * SEG + lane;
#pragma unroll 4
        for (int rr = 0; rr < HROWS; ++rr) {
            const int gy = row0 + rr;
            if (gy < h && gx < w) {
                out[(long long)gy * w + gx] = tout[rr][lane];
            }
        }
    }
}

}  // namespace s2

// Horizontal recursive pass (RecursiveGaussian::horizontal_pass) of every scale's 15 planes:
// reads `xyb`, writes `hbl` (layout at the top). Block b covers rows 32 g .. 32 g + 31 of
// plane p of channel c of one scale (blocks in scale order, 15 per row group:
// b = 15 g + 5 c + p within the scale); lane r runs row 32 g + r. Grid: sum over the n scales
// of 15 ceil(h_k / 32) blocks of 32 threads.
extern "C" __global__ void __launch_bounds__(HTHREADS)
s2_hblur(int32_t w0, int32_t h0, int32_t n, const float *__restrict__ xyb,
         float *__restrict__ hbl) {
    __shared__ float tin[3][HROWS][SEG + 1];
    __shared__ float tout[HROWS][SEG + 1];
    int local;
    const Scale s = block_scale<false>(w0, h0, n, blockIdx.x, local);
    const int p = local % 5;
    const int c = (local / 5) % 3;
    const int row0 = (local / HPLANES) * HROWS;
    const int lane = threadIdx.x;
    const float *in1 = xyb + 6 * s.off + (long long)c * s.plane;
    const float *in2 = xyb + 6 * s.off + (long long)(3 + c) * s.plane;
    float *out = hbl + 15 * s.off + (long long)(c * 5 + p) * s.plane;
    switch (p) {
    case 0:
        hblur_warp<0>(tin, tout, in1, in2, out, row0, s.w, s.h, lane);
        break;
    case 1:
        hblur_warp<1>(tin, tout, in1, in2, out, row0, s.w, s.h, lane);
        break;
    case 2:
        hblur_warp<2>(tin, tout, in1, in2, out, row0, s.w, s.h, lane);
        break;
    case 3:
        hblur_warp<3>(tin, tout, in1, in2, out, row0, s.w, s.h, lane);
        break;
    default:
        hblur_warp<4>(tin, tout, in1, in2, out, row0, s.w, s.h, lane);
        break;
    }
}

namespace s2 {

// Rows row0 .. row0 + VROWS - 1 of one column of a plane (zeros outside).
__device__ __forceinline__ void vfetch(float (&b)[VROWS], const float *col, bool colok,
                                       int row0, int w, int h) {
#pragma unroll
    for (int i = 0; i < VROWS; ++i) {
        const int y = row0 + i;
        b[i] = (colok && y < h) ? col[(long long)y * w] : 0.0f;
    }
}

// The two images' XYB values of the pixels thread `tid` scores in row group j of s2_vblur
// (rows VROWS j - 4 + i), 0 outside the scale: fetched one group ahead of their use.
__device__ __forceinline__ void vimg(float (&a)[VPER], float (&b)[VPER], const float *img1,
                                     const float *img2, int j, int g, int w, int h, int tid) {
    const int y0 = j * VROWS - (RADIUS - 1);
#pragma unroll
    for (int q = 0; q < VPER; ++q) {
        const int e = tid + q * VTHREADS;
        const int y = y0 + e / VCOLS;
        const int xx = g * VCOLS + e % VCOLS;
        const bool ok = e < VPIX && y >= 0 && y < h && xx < w;
        const long long at = (long long)y * w + xx;
        a[q] = ok ? img1[at] : 0.0f;
        b[q] = ok ? img2[at] : 0.0f;
    }
}

}  // namespace s2

// Vertical recursive pass (RecursiveGaussian::vertical_pass) of every scale's 15 planes read
// from `hbl`, fused with ssim_map and edge_diff_map: the blurred planes stay in shared memory.
// Block b covers columns 32 g .. 32 g + 31 of channel c of one scale (blocks in scale order,
// b = c * groups + g within the scale, groups = ceil(w_k / 32)); warp p runs plane p's
// recursion, lane l column 32 g + l. Writes the block's 6 sums (double, in the order of
// `terms`) to partial[6 b ..]. Grid: sum over the n scales of 3 ceil(w_k / 32) blocks of 160
// threads.
extern "C" __global__ void __launch_bounds__(VTHREADS, 3)
s2_vblur(int32_t w0, int32_t h0, int32_t n, const float *__restrict__ xyb,
         const float *__restrict__ hbl, double *__restrict__ partial) {
    __shared__ float tile[2][5][VROWS][VCOLS];
    __shared__ double red[SUMS][VTHREADS];
    int local;
    const Scale s = block_scale<true>(w0, h0, n, blockIdx.x, local);
    const int groups = vgroups(s.w);
    const int c = local / groups;
    const int g = local % groups;
    const int tid = threadIdx.x;
    const int p = tid >> 5;
    const int lane = tid & 31;
    const int w = s.w;
    const int h = s.h;
    const int x = g * VCOLS + lane;
    const bool colok = x < w;
    const float *col = hbl + 15 * s.off + (long long)(c * 5 + p) * s.plane + (colok ? x : 0);
    const float *img1 = xyb + 6 * s.off + (long long)c * s.plane;
    const float *img2 = xyb + 6 * s.off + (long long)(3 + c) * s.plane;

    // Step n reads rows n - 6 (top) and n + 4 (bottom). Steps run in groups of VROWS from
    // n = -4: group j's bottoms are rows VROWS j .. VROWS j + 15 (bc), its tops rows
    // VROWS j - 10 .. VROWS j + 5 (bp[6..16) then bc[0..6)).
    float bp[VROWS], bc[VROWS], bn[VROWS];
#pragma unroll
    for (int i = 0; i < VROWS; ++i) {
        bp[i] = 0.0f;
    }
    vfetch(bc, col, colok, 0, w, h);
    vfetch(bn, col, colok, VROWS, w, h);
    Rec st;
    rec_zero(st);
    double acc[SUMS];
#pragma unroll
    for (int j = 0; j < SUMS; ++j) {
        acc[j] = 0.0;
    }
    constexpr int D = 2 * RADIUS;  // 10: bottom row - top row of a step
    const int groups_rows = (h + RADIUS - 1 + VROWS - 1) / VROWS;
    float iv1[VPER], iv2[VPER];
    vimg(iv1, iv2, img1, img2, 0, g, w, h, tid);
    for (int j = 0; j < groups_rows; ++j) {
        float *t = &tile[j & 1][p][0][lane];
#pragma unroll
        for (int i = 0; i < VROWS; ++i) {
            const float top = i < D ? bp[i + VROWS - D] : bc[i - D];
            const float sum = __fadd_rn(top, bc[i]);
            t[i * VCOLS] = vstep(st, sum);
        }
#pragma unroll
        for (int i = 0; i < VROWS; ++i) {
            bp[i] = bc[i];
            bc[i] = bn[i];
        }
        vfetch(bn, col, colok, (j + 2) * VROWS, w, h);
        __syncthreads();
        // Score the group's outputs: rows VROWS j - 4 + i, i < VROWS.
        const int y0 = j * VROWS - (RADIUS - 1);
#pragma unroll
        for (int q = 0; q < VPER; ++q) {
            const int e = tid + q * VTHREADS;
            if (e < VPIX) {
                const int i = e / VCOLS;
                const int l = e % VCOLS;
                const int y = y0 + i;
                const int xx = g * VCOLS + l;
                if (y >= 0 && y < h && xx < w) {
                    const float(*tt)[VROWS][VCOLS] = tile[j & 1];
                    terms(tt[0][i][l], tt[1][i][l], tt[2][i][l], tt[3][i][l], tt[4][i][l],
                          iv1[q], iv2[q], acc);
                }
            }
        }
        // The next group's image values: in flight during its recursion steps.
        if (j + 1 < groups_rows) {
            vimg(iv1, iv2, img1, img2, j + 1, g, w, h, tid);
        }
    }
#pragma unroll
    for (int j = 0; j < SUMS; ++j) {
        red[j][tid] = acc[j];
    }
    __syncthreads();
    if (tid < SUMS) {
        double sum = 0.0;
        for (int i = 0; i < VTHREADS; ++i) {
            sum = __dadd_rn(sum, red[tid][i]);
        }
        partial[(long long)blockIdx.x * SUMS + tid] = sum;
    }
}

// out[18 k + 6 c + j] (k < 6 scales, c < 3 channels, j < 6 sums in the order of `terms`) =
// the sum over the s2_vblur blocks of scale k and channel c of their sum j, in block order,
// as the bits of a double; 0 for k >= n. One block of 128 threads.
extern "C" __global__ void __launch_bounds__(128)
s2_total(int32_t w0, int32_t h0, int32_t n, const double *__restrict__ partial,
         unsigned long long *__restrict__ out) {
    const int t = threadIdx.x;
    if (t >= MAX_SCALES * 3 * SUMS) {
        return;
    }
    const int k = t / (3 * SUMS);
    const int c = (t / SUMS) % 3;
    const int j = t % SUMS;
    double sum = 0.0;
    if (k < n) {
        int start = 0;
        int w = w0;
        for (int i = 0; i < k; ++i) {
            start += vgroups(w) * 3;
            w = (w + 1) / 2;
        }
        const int groups = vgroups(w);
        const int b0 = start + c * groups;
        for (int g = 0; g < groups; ++g) {
            sum = __dadd_rn(sum, partial[(long long)(b0 + g) * SUMS + j]);
        }
    }
    out[t] = (unsigned long long)__double_as_longlong(sum);
}
