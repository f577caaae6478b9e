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
// conversion is src/video/colour.rs, with glibc's powf (see powf_glibc).
//
// Pipeline per frame pair (host side: src/features/ssimulacra2/cuda.rs), for `n` scales of sizes
// w_k x h_k (w_0 x h_0 the frame, w_{k+1} = ceil(w_k / 2)):
//   s2_lut          once per caps, for samples of up to 10 bits: the YUV -> linear RGB tables;
//   s2_xyb          every scale at once: scale 0 YUV -> linear RGB -> XYB planes, scale k >= 1
//                   2x2 box of scale k-1's linear RGB (in shared memory) -> XYB planes;
//   s2_hblur        every scale at once: horizontal recursive pass of the 15 planes
//                   (3 channels x {img1, img2, img1^2, img2^2, img1*img2}), a thread per row
//                   of one plane;
//   s2_vblur        every scale at once: vertical pass, the error maps, per-block sums;
//   s2_total        the 108 sums (6 scales x 3 channels x 6 sums), fixed order.
//
// Scratch layout (f32 planes of w_k x h_k samples in the T32 layout below, P_k = w_k *
// ceil(h_k / 32) * 32 floats each; off_k = sum_{j<k} P_j):
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

// Scratch planes are stored in the T32 layout: 32-row tiles, and within a tile column by
// column, the 32 rows of a column contiguous. Sample (x, y) of a w-wide plane is at
// ((y / 32) w + x) 32 + y % 32; a plane of height h takes w * ceil(h / 32) * 32 floats (the
// padding rows stay 0). A warp running 32 rows left to right then reads and writes one
// 128-byte line per column, and a thread running a column top to bottom reads contiguous rows.
constexpr int T32 = 32;
// s2_hblur: a block (one warp) runs the horizontal recursion of the 32 rows of a tile of one
// product plane of one channel, a row per lane, HSTEP steps per loop turn. One warp per block
// and no barrier: the warps of an SM interleave freely.
constexpr int HTHREADS = 32;
constexpr int HSTEP = 16;
constexpr int HWIN = HSTEP + 2 * RADIUS;  // inputs of one turn: columns n - 6 .. n + 19
constexpr int HPLANES = 15;  // blocks per row tile: 3 channels x 5 products
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
    long long plane;  // w * ceil(h / 32) * 32 (T32 layout)
    long long off;    // sum of the planes of the scales j < k
};

__device__ __forceinline__ Scale scale_of(int w0, int h0, int k) {
    Scale s;
    s.w = w0;
    s.h = h0;
    s.off = 0;
    for (int i = 0; i < k; ++i) {
        s.off += (long long)s.w * ((s.h + T32 - 1) / T32 * T32);
        s.w = (s.w + 1) / 2;
        s.h = (s.h + 1) / 2;
    }
    s.plane = (long long)s.w * ((s.h + T32 - 1) / T32 * T32);
    return s;
}

// Index of sample (x, y) of a w-wide plane in the T32 layout.
__device__ __forceinline__ long long t32(int x, int y, int w) {
    return ((long long)(y >> 5) * w + x) * T32 + (y & (T32 - 1));
}

// Blocks of s2_hblur for a scale of height h: row groups x 3 channels x 5 products.
__device__ __forceinline__ int hblocks(int h) { return (h + T32 - 1) / T32 * HPLANES; }
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
        s.plane = (long long)s.w * ((s.h + T32 - 1) / T32 * T32);
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

// The YUV -> linear RGB constants of src/video/colour.rs (`YuvToRgb`) for one caps; host
// side `ConvParams` in src/features/ssimulacra2/cuda.rs (same layout, 32 bytes).
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

// Steps 2-4 of colour.rs, by parts: the normalised luma and chroma samples, the non-linear
// R or B (y' + 2 (1 - k) c', k = kr with cr', kb with cb'), and the non-linear G.
__device__ __forceinline__ float norm_y(const S2Conv &cv, uint32_t v) {
    return __fdiv_rn(__fsub_rn((float)v, cv.off_y), cv.div_y);
}
__device__ __forceinline__ float norm_c(const S2Conv &cv, uint32_t v) {
    return __fdiv_rn(__fsub_rn((float)v, cv.off_c), cv.div_c);
}
__device__ __forceinline__ float rb_prime(float yn, float k, float cn) {
    return __fadd_rn(yn, __fmul_rn(__fmul_rn(2.0f, __fsub_rn(1.0f, k)), cn));
}
__device__ __forceinline__ float g_prime(const S2Conv &cv, float yn, float rp, float bp) {
    return __fdiv_rn(__fsub_rn(__fsub_rn(yn, __fmul_rn(cv.kr, rp)), __fmul_rn(cv.kb, bp)),
                     __fsub_rn(__fsub_rn(1.0f, cv.kr), cv.kb));
}

// Steps 2-4 of colour.rs for one pixel: samples (as read, at the scoring depth) -> linear RGB.
// `grey`: no chroma (cb' = cr' = 0).
__device__ __forceinline__ void yuv_to_linear(const S2Conv &cv, uint32_t ys, uint32_t cbs,
                                              uint32_t crs, bool grey, float &r, float &g,
                                              float &b) {
    const float yn = norm_y(cv, ys);
    const float cbn = grey ? 0.0f : norm_c(cv, cbs);
    const float crn = grey ? 0.0f : norm_c(cv, crs);
    const float rp = rb_prime(yn, cv.kr, crn);
    const float bp = rb_prime(yn, cv.kb, cbn);
    r = transfer(clamp01(rp), cv.srgb);
    g = transfer(clamp01(g_prime(cv, yn, rp, bp)), cv.srgb);
    b = transfer(clamp01(bp), cv.srgb);
}

// Lookup tables of the YUV -> linear RGB step for samples of `bits` <= LUT_BITS bits, made by
// s2_lut once per caps with the very operations of yuv_to_linear (so the lookups give its
// bits): norm_y[v] = (v - off_y) / div_y, norm_c[v] = (v - off_c) / div_c, and the linear R of
// (y, cr) and B of (y, cb), transfer(clamp01(y' + 2 (1 - kr) cr')) and likewise for B. G
// depends on all three samples and is computed. Layout: norm_y (2^bits floats), norm_c
// (2^bits), R (4^bits, index y << bits | cr), B (4^bits, index y << bits | cb).
constexpr int LUT_BITS = 10;

// yuv_to_linear through the tables (`bits` <= LUT_BITS); a grey pixel passes cb = cr = the
// chroma offset, whose normalised value is 0 as yuv_to_linear's grey case has it.
__device__ __forceinline__ void yuv_to_linear_lut(const S2Conv &cv, const float *__restrict__ lut,
                                                  int bits, uint32_t ys, uint32_t cbs,
                                                  uint32_t crs, float &r, float &g, float &b) {
    const long long n1 = 1ll << bits;
    const float yn = __ldg(lut + ys);
    const float cbn = __ldg(lut + n1 + cbs);
    const float crn = __ldg(lut + n1 + crs);
    const long long yi = (long long)ys << bits;
    r = __ldg(lut + 2 * n1 + yi + crs);
    b = __ldg(lut + 2 * n1 + n1 * n1 + yi + cbs);
    const float rp = rb_prime(yn, cv.kr, crn);
    const float bp = rb_prime(yn, cv.kb, cbn);
    g = transfer(clamp01(g_prime(cv, yn, rp, bp)), cv.srgb);
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

// Writes the XYB (positive) of one image's pixel `i` (linear r, g, b) to the three planes
// from `xyb`, `plane` floats apart.
__device__ __forceinline__ void store_xyb3(float *xyb, long long plane, long long i, float r,
                                           float g, float b) {
    float x, y, bb;
    xyb_positive(r, g, b, x, y, bb);
    xyb[i] = x;
    xyb[plane + i] = y;
    xyb[2 * plane + i] = bb;
}

// The 2x2 box of downscale_by_2: the sum of its four pixels (in the crate's order, from 0,
// edge pixels repeated) times 1/4, channel c to lin[c * plane + i].
__device__ __forceinline__ void store_box(float *lin, long long plane, long long i,
                                          const float (&sum)[6]) {
#pragma unroll
    for (int c = 0; c < 6; ++c) {
        lin[c * plane + i] = __fmul_rn(sum[c], 0.25f);
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

// The tables of yuv_to_linear_lut for samples of `bits` (8..LUT_BITS) bits into `lut`
// (2 * 2^bits + 2 * 4^bits floats). Grid-stride; any grid.
extern "C" __global__ void __launch_bounds__(BLOCK_THREADS)
s2_lut(const S2Conv conv, int32_t bits, float *__restrict__ lut) {
    if (bits > LUT_BITS) {
        return;
    }
    const long long n1 = 1ll << bits;
    const long long total = 2 * n1 + 2 * n1 * n1;
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += stride) {
        float v;
        if (i < n1) {
            v = norm_y(conv, (uint32_t)i);
        } else if (i < 2 * n1) {
            v = norm_c(conv, (uint32_t)(i - n1));
        } else {
            const long long j = i - 2 * n1;
            const bool blue = j >= n1 * n1;
            const long long t = blue ? j - n1 * n1 : j;
            const uint32_t ys = (uint32_t)(t >> bits);
            const uint32_t cs = (uint32_t)(t & (n1 - 1));
            const float prime = rb_prime(norm_y(conv, ys), blue ? conv.kb : conv.kr, norm_c(conv, cs));
            v = transfer(clamp01(prime), conv.srgb);
        }
        lut[i] = v;
    }
}

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
       const float *__restrict__ lut, int32_t bits, int32_t w0, int32_t h0, int32_t n,
       float *__restrict__ xyb) {
    // Linear RGB (6 planes: img * 3 + c, each [x][y]) of scale 1 (tile XTILE / 2) and scale 2
    // (XTILE / 4);
    // scale k >= 3 reuses the buffer of scale k - 2.
    __shared__ float lin_a[6][XTILE / 2][XTILE / 2];
    __shared__ float lin_b[6][XTILE / 4][XTILE / 4];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int nt = blockDim.x * blockDim.y;
    const bool grey = cw <= 0;
    {
        const long long plane = scale_of(w0, h0, 0).plane;
        const int ow = (w0 + 1) / 2;
        const int oh = (h0 + 1) / 2;
        constexpr int T = XTILE / 2;  // boxes per tile side
        for (int e = tid; e < T * T; e += nt) {
            const int ly = e % T;
            const int lx = e / T;
            const int ox = blockIdx.x * T + lx;
            const int oy = blockIdx.y * T + ly;
            if (ox >= ow || oy >= oh) {
                continue;
            }
            const bool has_x1 = 2 * ox + 1 < w0;
            const bool has_y1 = 2 * oy + 1 < h0;
            // The box's four pixels in the crate's order, an edge pixel standing in for one
            // past the edge (converted again, not stored twice); their sum in that order.
            float sum[6] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll 1
            for (int q = 0; q < 4; ++q) {
                const int dx = (q & 1) && has_x1 ? 1 : 0;
                const int dy = (q >> 1) && has_y1 ? 1 : 0;
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
                float p[6];
                if (lut != nullptr) {
                    if (grey) {
                        cbr = crr = cbd = crd = (uint32_t)conv.off_c;
                    }
                    yuv_to_linear_lut(conv, lut, bits, sample(ref, x, y), cbr, crr, p[0], p[1],
                                      p[2]);
                    yuv_to_linear_lut(conv, lut, bits, sample(dis, x, y), cbd, crd, p[3], p[4],
                                      p[5]);
                } else {
                    yuv_to_linear(conv, sample(ref, x, y), cbr, crr, grey, p[0], p[1], p[2]);
                    yuv_to_linear(conv, sample(dis, x, y), cbd, crd, grey, p[3], p[4], p[5]);
                }
                if (dx == (q & 1) && dy == (q >> 1)) {
                    store_xyb(xyb, plane, t32(x, y, w0), p);
                }
#pragma unroll
                for (int c = 0; c < 6; ++c) {
                    sum[c] = __fadd_rn(sum[c], p[c]);
                }
            }
            if (n > 1) {
                store_box(&lin_a[0][0][0], T * T, lx * T + ly, sum);
            }
        }
    }
    // Scales k >= 1 from the linear RGB in shared memory, two phases per scale so that every
    // thread has work even on the small scales: the XYB of each (pixel, image), then the
    // 2x2 boxes of the next scale's linear RGB, one (box, channel) per step.
    Scale s = scale_of(w0, h0, 0);
    for (int k = 1; k < n; ++k) {
        __syncthreads();
        s.off += s.plane;
        s.w = (s.w + 1) / 2;
        s.h = (s.h + 1) / 2;
        s.plane = (long long)s.w * ((s.h + T32 - 1) / T32 * T32);
        const int tk = XTILE >> k;  // scale k's tile side (at least 2)
        const int area = tk * tk;
        const float *src = (k & 1) ? &lin_a[0][0][0] : &lin_b[0][0][0];
        float *dst = (k & 1) ? &lin_b[0][0][0] : &lin_a[0][0][0];
        float *out = xyb + 6 * s.off;
        for (int u = tid; u < 2 * area; u += nt) {
            const int img = u / area;
            const int li = u - img * area;  // lx * tk + ly
            const int gx = blockIdx.x * tk + li / tk;
            const int gy = blockIdx.y * tk + li % tk;
            if (gx < s.w && gy < s.h) {
                const float *c3 = src + img * 3 * area + li;
                store_xyb3(out + img * 3 * s.plane, s.plane, t32(gx, gy, s.w), c3[0],
                           c3[area], c3[2 * area]);
            }
        }
        if (k + 1 < n) {
            const int T = tk / 2;  // boxes per tile side
            const int ow = (s.w + 1) / 2;
            const int oh = (s.h + 1) / 2;
            for (int v = tid; v < 6 * T * T; v += nt) {
                const int c = v / (T * T);
                const int bi = v - c * T * T;  // lx * T + ly
                const int lx = bi / T;
                const int ly = bi % T;
                const int ox = blockIdx.x * T + lx;
                const int oy = blockIdx.y * T + ly;
                if (ox >= ow || oy >= oh) {
                    continue;
                }
                const int sx = 2 * ox + 1 < s.w ? 1 : 0;
                const int sy = 2 * oy + 1 < s.h ? 1 : 0;
                const float *ch = src + c * area;
                const int i00 = (2 * lx) * tk + 2 * ly;
                float sum = 0.0f;
                sum = __fadd_rn(sum, ch[i00]);
                sum = __fadd_rn(sum, ch[i00 + sx * tk]);
                sum = __fadd_rn(sum, ch[i00 + sy]);
                sum = __fadd_rn(sum, ch[i00 + sx * tk + sy]);
                dst[c * T * T + bi] = __fmul_rn(sum, 0.25f);
            }
        }
    }
}

namespace s2 {

// The inputs v[x0 .. x0 + HSTEP) of one row of a product plane are the rounded products
// x * y, x = img1 or img2 (in_x), y = img1, img2 (in_y) or 1 (in_y null: x * 1 is x
// exactly), 0 outside 0 .. w - 1. hload fetches the factors; hturn multiplies them when they
// enter the window, a turn or more later, so that the loads are in flight meanwhile. One
// code path for the five planes keeps the loop small enough for the instruction cache.
__device__ __forceinline__ void hload(float (&fx)[HSTEP], float (&fy)[HSTEP],
                                      const float *__restrict__ in_x,
                                      const float *__restrict__ in_y, int x0, int w) {
#pragma unroll
    for (int i = 0; i < HSTEP; ++i) {
        const int x = x0 + i;
        const long long at = (long long)x * T32;
        fx[i] = x < w ? __ldg(in_x + at) : 0.0f;
        fy[i] = in_y != nullptr && x < w ? __ldg(in_y + at) : 1.0f;
    }
}

// One turn of a row's horizontal recursion: steps n = base .. base + HSTEP - 1 (win[j] holds
// v[base - RADIUS - 1 + j]; step n adds win[i], column n - 6, and win[i + 2 RADIUS], column
// n + 4), outputs stored for 0 <= n < w; then the window moves on by HSTEP columns, taking
// in fx * fy (columns base + 20 ..).
__device__ __forceinline__ void hturn(Rec &st, float (&win)[HWIN], const float (&fx)[HSTEP],
                                      const float (&fy)[HSTEP], float *__restrict__ out,
                                      int base, int w, bool rowok) {
#pragma unroll
    for (int i = 0; i < HSTEP; ++i) {
        const float o = hstep(st, __fadd_rn(win[i], win[i + 2 * RADIUS]));
        const int n = base + i;
        if (rowok && n >= 0 && n < w) {
            out[(long long)n * T32] = o;
        }
    }
#pragma unroll
    for (int j = 0; j < 2 * RADIUS; ++j) {
        win[j] = win[j + HSTEP];
    }
#pragma unroll
    for (int i = 0; i < HSTEP; ++i) {
        win[2 * RADIUS + i] = __fmul_rn(fx[i], fy[i]);
    }
}

// One thread of s2_hblur: the horizontal recursion of one row of a product plane, two turns
// per loop iteration, each turn's inputs loaded two turns ahead (buffers 0 and 1).
__device__ __forceinline__ void hrow(const float *__restrict__ in_x,
                                     const float *__restrict__ in_y, float *__restrict__ out,
                                     int w, bool rowok) {
    float win[HWIN];
    float x0[HSTEP], y0[HSTEP], x1[HSTEP], y1[HSTEP];
#pragma unroll
    for (int j = 0; j < 2 * RADIUS; ++j) {
        win[j] = 0.0f;
    }
    hload(x0, y0, in_x, in_y, 0, w);
#pragma unroll
    for (int i = 0; i < HSTEP; ++i) {
        win[2 * RADIUS + i] = __fmul_rn(x0[i], y0[i]);
    }
    hload(x0, y0, in_x, in_y, HSTEP, w);
    hload(x1, y1, in_x, in_y, 2 * HSTEP, w);
    Rec st;
    rec_zero(st);
    // Turn `base` takes in columns base + 20 ..; the buffer it frees is refilled with the
    // inputs of the turn two later: columns base + 2 HSTEP + 20 ..
    constexpr int AHEAD = 3 * HSTEP + RADIUS - 1;
    for (int base = -(RADIUS - 1); base < w; base += 2 * HSTEP) {
        hturn(st, win, x0, y0, out, base, w, rowok);
        hload(x0, y0, in_x, in_y, base + AHEAD, w);
        hturn(st, win, x1, y1, out, base + HSTEP, w, rowok);
        hload(x1, y1, in_x, in_y, base + HSTEP + AHEAD, w);
    }
}

}  // namespace s2

// Horizontal recursive pass (RecursiveGaussian::horizontal_pass) of every scale's 15 planes:
// reads `xyb`, writes `hbl` (layouts at the top). Block b covers the 32-row tile g of plane p
// of channel c of one scale (blocks in scale order, 15 per tile: b = 15 g + 5 c + p within
// the scale); lane r runs row 32 g + r from left to right. In the T32 layout a warp's loads
// and stores of one column are one 128-byte line. Rows past the scale's height (the tile's
// padding) compute zeros and store nothing. Grid: sum over the n scales of 15 ceil(h_k / 32)
// blocks of 32 threads.
extern "C" __global__ void __launch_bounds__(HTHREADS)
s2_hblur(int32_t w0, int32_t h0, int32_t n, const float *__restrict__ xyb,
         float *__restrict__ hbl) {
    int local;
    const Scale s = block_scale<false>(w0, h0, n, blockIdx.x, local);
    const int p = local % 5;
    const int c = (local / 5) % 3;
    const int g = local / HPLANES;
    const int lane = threadIdx.x;
    const bool rowok = g * T32 + lane < s.h;
    const long long row = (long long)g * s.w * T32 + lane;
    const float *in1 = xyb + 6 * s.off + (long long)c * s.plane + row;
    const float *in2 = xyb + 6 * s.off + (long long)(3 + c) * s.plane + row;
    float *out = hbl + 15 * s.off + (long long)(c * 5 + p) * s.plane + row;
    // The values plane p blurs (image_multiply's f32 products for the second moments) as x * y:
    // p 0 img1 * 1, 1 img2 * 1, 2 img1 * img1, 3 img2 * img2, 4 img1 * img2.
    const float *in_x = (p == 0 || p == 2 || p == 4) ? in1 : in2;
    const float *in_y = p == 2 ? in1 : ((p == 3 || p == 4) ? in2 : nullptr);
    hrow(in_x, in_y, out, s.w, rowok);
}

namespace s2 {

// Rows 16 j .. 16 j + 15 of one column of a T32 plane (`col` = the column's first sample,
// `w` the scale's width): 64 contiguous bytes. Zeros past the plane's padded height
// (`tiles` 32-row tiles) or outside the scale's width; the padding rows hold zeros.
__device__ __forceinline__ void vfetch(float (&b)[VROWS], const float *__restrict__ col,
                                       bool colok, int j, int w, int tiles) {
    const int r0 = j * VROWS;
    const int t = r0 / T32;
    if (colok && t < tiles) {
        const float4 *q =
            reinterpret_cast<const float4 *>(col + (long long)t * w * T32 + r0 % T32);
#pragma unroll
        for (int i = 0; i < VROWS / 4; ++i) {
            const float4 v = __ldg(q + i);
            b[4 * i] = v.x;
            b[4 * i + 1] = v.y;
            b[4 * i + 2] = v.z;
            b[4 * i + 3] = v.w;
        }
    } else {
#pragma unroll
        for (int i = 0; i < VROWS; ++i) {
            b[i] = 0.0f;
        }
    }
}

// The pixels thread `tid` of s2_vblur scores in each row group: row VROWS j - 4 + tid % VROWS
// and the columns 32 g + tid / VROWS + q LSTEP (q < VPER) of the block's 32 (VTHREADS is a
// multiple of VROWS, so the row is the same for every q). `cols`: how many of the q are inside
// both the block and the scale; `base`: the T32 offset of the first column's row 0.
constexpr int LSTEP = VTHREADS / VROWS;
static_assert(VTHREADS % VROWS == 0, "a thread's pixels share their row");

struct VPix {
    int row;         // tid % VROWS
    int col;         // tid / VROWS
    int cols;        // q < cols: column inside the block and the scale
    long long base;  // (32 g + col) * 32
};

__device__ __forceinline__ VPix vpix(int tid, int g, int w) {
    VPix v;
    v.row = tid % VROWS;
    v.col = tid / VROWS;
    const int left = min(VCOLS - v.col, w - g * VCOLS - v.col);  // columns from col on
    v.cols = left <= 0 ? 0 : (left + LSTEP - 1) / LSTEP;
    v.base = (long long)(g * VCOLS + v.col) * T32;
    return v;
}

// The two images' XYB values of the thread's pixels in row group j, 0 outside the scale:
// fetched one group ahead of their use. Consecutive threads read consecutive rows of a column
// (contiguous in T32).
__device__ __forceinline__ void vimg(float (&a)[VPER], float (&b)[VPER], const float *img1,
                                     const float *img2, int j, const VPix &v, int w, int h) {
    const int y = j * VROWS - (RADIUS - 1) + v.row;
    const bool rowok = y >= 0 && y < h;
    const long long at = v.base + (long long)(y >> 5) * w * T32 + (y & (T32 - 1));
#pragma unroll
    for (int q = 0; q < VPER; ++q) {
        const bool ok = rowok && q < v.cols;
        a[q] = ok ? __ldg(img1 + at + q * LSTEP * T32) : 0.0f;
        b[q] = ok ? __ldg(img2 + at + q * LSTEP * T32) : 0.0f;
    }
}

}  // namespace s2

// Vertical recursive pass (RecursiveGaussian::vertical_pass) of every scale's 15 planes read
// from `hbl`, fused with ssim_map and edge_diff_map: the blurred planes stay in shared memory.
// Block b covers columns 32 g .. 32 g + 31 of channel c of one scale (blocks in scale order,
// b = c * groups + g within the scale, groups = ceil(w_k / 32)); warp p runs plane p's
// recursion, lane l column 32 g + l, reading its column 16 rows (64 bytes) at a time. Writes
// the block's 6 sums (double, in the order of `terms`) to partial[6 b ..]. Grid: sum over the
// n scales of 3 ceil(w_k / 32) blocks of 160 threads.
extern "C" __global__ void __launch_bounds__(VTHREADS, 3)
s2_vblur(int32_t w0, int32_t h0, int32_t n, const float *__restrict__ xyb,
         const float *__restrict__ hbl, double *__restrict__ partial) {
    // tile[buffer][plane][column][row], rows padded to 17 (conflict-free both ways).
    __shared__ float tile[2][5][VCOLS][VROWS + 1];
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
    const int tiles = (h + T32 - 1) / T32;
    const int x = g * VCOLS + lane;
    const bool colok = x < w;
    const float *col =
        hbl + 15 * s.off + (long long)(c * 5 + p) * s.plane + (long long)(colok ? x : 0) * T32;
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
    vfetch(bc, col, colok, 0, w, tiles);
    vfetch(bn, col, colok, 1, w, tiles);
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
    const VPix vp = vpix(tid, g, w);
    vimg(iv1, iv2, img1, img2, 0, vp, w, h);
    for (int j = 0; j < groups_rows; ++j) {
        float *t = &tile[j & 1][p][lane][0];
#pragma unroll
        for (int i = 0; i < VROWS; ++i) {
            const float top = i < D ? bp[i + VROWS - D] : bc[i - D];
            const float sum = __fadd_rn(top, bc[i]);
            t[i] = vstep(st, sum);
        }
#pragma unroll
        for (int i = 0; i < VROWS; ++i) {
            bp[i] = bc[i];
            bc[i] = bn[i];
        }
        vfetch(bn, col, colok, j + 2, w, tiles);
        __syncthreads();
        // Score the group's outputs: the thread's pixels (vpix) of rows VROWS j - 4 + i.
        const int y = j * VROWS - (RADIUS - 1) + vp.row;
        if (y >= 0 && y < h) {
            const float(*tt)[VCOLS][VROWS + 1] = tile[j & 1];
            const int i = vp.row;
#pragma unroll
            for (int q = 0; q < VPER; ++q) {
                if (q < vp.cols) {
                    const int l = vp.col + q * LSTEP;
                    terms(tt[0][l][i], tt[1][l][i], tt[2][l][i], tt[3][l][i], tt[4][l][i],
                          iv1[q], iv2[q], acc);
                }
            }
        }
        // The next group's image values: in flight during its recursion steps.
        if (j + 1 < groups_rows) {
            vimg(iv1, iv2, img1, img2, j + 1, vp, w, h);
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
