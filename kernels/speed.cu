// SpEED chroma on the GPU: libvmaf's `speed_chroma`, the CPU half's arithmetic
// (src/features/speed/cpu.rs and linalg.rs) with every float and double operation written with
// the rounding intrinsics (__fadd_rn, __fmul_rn, __dmul_rn, ...) so that nvcc contracts
// nothing into an FMA the CPU does not do; sums run in the CPU's order.
//
// Four problems per frame: p = 2 * plane + side (plane 0 Cb, 1 Cr; side 0 reference,
// 1 distorted). Pipeline (host side: src/features/speed/cuda.rs):
//   speed_decimate  a thread per decimated sample of every problem: the (rescaled) plane's
//                   anti-aliasing Gaussian at (16 r, 16 c), vertical pass per column then
//                   horizontal, mirrored edges -> plane[p];
//   speed_cov       a block per problem: local-mean subtraction, the 25x25 covariance matrix
//                   (float means, double centred products in the CPU's eight-lane order) and
//                   the independent term of the solve;
//   speed_factor    two blocks per problem, side by side: the eigenvalues (Householder
//                   tridiagonalisation in parallel, the QR iteration on one thread) and the
//                   QR solve of K X = Y (parallel products, back substitution a thread per
//                   block column);
//   speed_entropy   a block per problem: whether K counts as inverted, each block's variance
//                   and entropy;
//   speed_score     one thread per chroma plane: the score over blocks -> out words.
//
// SpEED temporal (src/features/speed_temporal/cuda.rs) runs the same kernels on two problems,
// the reference's and the distorted frame difference (speed_decimate_diff, then grids of 2,
// 4, 2 blocks and speed_score with one thread).
//
// Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c, vif_tools.c; oracle: the CPU half.

#include "common.cuh"

using namespace vmafcmp;

namespace speed_detail {

constexpr int N = 25;           // samples per 5x5 block, covariance size
constexpr int BLK = 5;          // block side
constexpr int MAX_TAPS = 40;    // anti-aliasing filter taps (libvmaf's largest: 35)
constexpr int MAX_LOCAL = 12;   // local-mean filter taps (largest: 9)
constexpr int STATS_THREADS = 256;
constexpr int DECIMATE_THREADS = 128;
constexpr double EIGEN_EPS = 1e-6;
constexpr int EIGEN_MAX_ITERS = 500;

// The four planes and the decimation's sizes and filter. Host side: `DecimateParams` in
// src/features/speed/cuda.rs (same layout, 328 bytes).
struct DecimateParams {
    Plane planes[4];       // p = 2 * plane + side
    int32_t scaled_w;      // rescaled plane size
    int32_t scaled_h;
    int32_t op_w;          // decimated size
    int32_t op_h;
    int32_t direct;        // no rescaling: read the plane directly (clamped to width x height)
    int32_t taps;          // anti-aliasing filter taps
    int32_t width;         // the plane size libvmaf reads
    int32_t height;
    float inv;             // 1 / 2^(bpc - 8)
    float filter[MAX_TAPS];
};
static_assert(sizeof(DecimateParams) == 328, "DecimateParams layout");

// Host side: `StatsParams` (same layout, 80 bytes).
struct StatsParams {
    int32_t op_w;
    int32_t op_h;
    int32_t blocks_x;
    int32_t blocks_y;
    int32_t local_taps;
    float sigma_nn;
    float local[MAX_LOCAL];
    int32_t pad[2];
};
static_assert(sizeof(StatsParams) == 80, "StatsParams layout");

// Host side: `ScoreParams` (same layout, 16 bytes).
struct ScoreParams {
    int32_t blocks;
    int32_t weight_var_mode;
    float sigma_nn;
    float nn_floor;
};
static_assert(sizeof(ScoreParams) == 16, "ScoreParams layout");

__device__ __forceinline__ float f_mul(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ float f_add(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ float f_sub(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ float f_div(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ float f_sqrt(float a) { return __fsqrt_rn(a); }
__device__ __forceinline__ double d_mul(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ double d_add(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ double d_sub(double a, double b) { return __dsub_rn(a, b); }

__device__ __forceinline__ float hypotf_rn(float x, float y) {
    return f_sqrt(f_add(f_mul(x, x), f_mul(y, y)));
}

__device__ __forceinline__ float sign_of(float x) { return x >= 0.0f ? 1.0f : -1.0f; }

// A plane's sample as libvmaf's float buffer holds it: sample / 2^(bpc - 8) - 128.
__device__ __forceinline__ float level(const Plane &p, int x, int y, float inv) {
    return f_add(f_mul((float)sample(p, x, y), inv), -128.0f);
}

// The float plane a problem filters (the CPU half's `Samples`): one plane's levels (SpEED
// chroma) or the float difference of two planes' levels (SpEED temporal's frame differences).
struct Levels {
    Plane p;
    float inv;
    __device__ __forceinline__ float operator()(int x, int y) const { return level(p, x, y, inv); }
};

struct DiffLevels {
    Plane a;
    Plane b;
    float inv;
    __device__ __forceinline__ float operator()(int x, int y) const {
        return f_sub(level(a, x, y, inv), level(b, x, y, inv));
    }
};

// Rescaled sample (x, y): taps = [i1, i2, frac bits] x scaled_w (columns) then x scaled_h
// (rows).
template <class S>
__device__ __forceinline__ float scaled(const S &p, const uint32_t *__restrict__ taps, int sw,
                                        int sh, int x, int y) {
    const uint32_t *rows = taps + 3 * sw;
    const int x1 = (int)taps[x], x2 = (int)taps[sw + x];
    const float dx = __uint_as_float(taps[2 * sw + x]);
    const int y1 = (int)rows[y], y2 = (int)rows[sh + y];
    const float dy = __uint_as_float(rows[2 * sh + y]);
    if (dx == 0.0f && dy == 0.0f && x1 == x2 && y1 == y2) {
        return p(x1, y1);
    }
    const float ody = f_sub(1.0f, dy), odx = f_sub(1.0f, dx);
    float s = f_mul(f_mul(ody, odx), p(x1, y1));
    s = f_add(s, f_mul(f_mul(ody, dx), p(x2, y1)));
    s = f_add(s, f_mul(f_mul(dy, odx), p(x1, y2)));
    s = f_add(s, f_mul(f_mul(dy, dx), p(x2, y2)));
    return s;
}

// Householder tridiagonalisation of a (N x N, shared) by the whole block; d, sd out.
__device__ void tridiagonalize(float *a, float *d, float *sd, float *v, float *x, float *sh_tau,
                               int tid) {
    for (int i = 0; i < N - 2; ++i) {
        const int start = i + 1;
        if (tid == 0) {
            float tau = 0.0f;
            float xn = 0.0f;
            for (int r = start + 1; r < N; ++r) {
                xn = f_add(xn, f_mul(a[r * N + i], a[r * N + i]));
            }
            xn = f_sqrt(xn);
            if (xn != 0.0f) {
                const float alpha = a[start * N + i];
                const float beta = f_mul(-sign_of(alpha), hypotf_rn(alpha, xn));
                tau = f_div(f_sub(beta, alpha), beta);
                const float s = f_sub(alpha, beta);
                if (s != 0.0f) {
                    for (int r = start; r < N; ++r) {
                        a[r * N + i] = f_div(a[r * N + i], s);
                    }
                    a[start * N + i] = beta;
                }
            }
            for (int r = start; r < N; ++r) {
                v[r] = a[r * N + i];
            }
            if (tau != 0.0f) {
                a[start * N + i] = v[start];
                v[start] = 1.0f;
            }
            *sh_tau = tau;
        }
        __syncthreads();
        const float tau = *sh_tau;
        if (tau != 0.0f) {
            if (tid >= start && tid < N) {
                float acc = 0.0f;
                for (int c = start; c < N; ++c) {
                    acc = f_add(acc, f_mul(f_mul(tau, a[tid * N + c]), v[c]));
                }
                x[tid] = acc;
            }
            __syncthreads();
            if (tid == 0) {
                float xv = 0.0f;
                for (int r = start; r < N; ++r) {
                    xv = f_add(xv, f_mul(x[r], v[r]));
                }
                const float alpha = __double2float_rn(d_mul(d_mul(-0.5, (double)tau), (double)xv));
                for (int r = start; r < N; ++r) {
                    x[r] = f_add(x[r], f_mul(alpha, v[r]));
                }
            }
            __syncthreads();
            const int m = N - start;
            for (int e = tid; e < m * m; e += blockDim.x) {
                const int r = start + e / m, c = start + e % m;
                a[r * N + c] = f_sub(a[r * N + c], f_add(f_mul(x[r], v[c]), f_mul(v[r], x[c])));
            }
        }
        __syncthreads();
    }
    if (tid < N) {
        d[tid] = a[tid * N + tid];
        if (tid < N - 1) {
            sd[tid] = a[(tid + 1) * N + tid];
        }
    }
    __syncthreads();
}

__device__ void chop(const float *d, float *sd, int n) {
    for (int i = 0; i < n - 1; ++i) {
        if ((double)fabsf(sd[i]) < d_mul(EIGEN_EPS, (double)f_add(fabsf(d[i]), fabsf(d[i + 1])))) {
            sd[i] = 0.0f;
        }
    }
}

__device__ float trailing_eigenvalue(const float *d, const float *sd, int n) {
    const float ta = d[n - 2], tb = d[n - 1], tab = sd[n - 2];
    const float dt = f_div(f_sub(ta, tb), 2.0f);
    if (dt > 0.0f) {
        return f_sub(tb, f_mul(tab, f_div(tab, f_add(dt, hypotf_rn(dt, tab)))));
    } else if (dt == 0.0f) {
        return f_sub(tb, fabsf(tab));
    }
    return f_add(tb, f_mul(tab, f_div(tab, f_add(-dt, hypotf_rn(dt, tab)))));
}

__device__ void givens(float a, float b, float &c, float &s) {
    if (b == 0.0f) {
        c = 1.0f;
        s = 0.0f;
    } else if (fabsf(b) > fabsf(a)) {
        const float t = f_div(-a, b);
        const float s1 =
            __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn((double)f_add(1.0f, f_mul(t, t)))));
        s = s1;
        c = f_mul(s1, t);
    } else {
        const float t = f_div(-b, a);
        const float c1 =
            __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn((double)f_add(1.0f, f_mul(t, t)))));
        c = c1;
        s = f_mul(c1, t);
    }
}

// c * (c * ap - s * bp) + s * (s * aq - c * bp) and friends, in libvmaf's order.
__device__ __forceinline__ float rot_a(float c, float s, float ap, float bp, float aq) {
    return f_add(f_mul(c, f_sub(f_mul(c, ap), f_mul(s, bp))), f_mul(s, f_sub(f_mul(s, aq), f_mul(c, bp))));
}
__device__ __forceinline__ float rot_b(float c, float s, float ap, float bp, float aq) {
    return f_sub(f_mul(c, f_add(f_mul(s, ap), f_mul(c, bp))), f_mul(s, f_add(f_mul(s, bp), f_mul(c, aq))));
}
__device__ __forceinline__ float rot_q(float c, float s, float ap, float bp, float aq) {
    return f_add(f_mul(s, f_add(f_mul(s, ap), f_mul(c, bp))), f_mul(c, f_add(f_mul(s, bp), f_mul(c, aq))));
}

__device__ void qr_step(float *d, float *sd, int n) {
    float mu = trailing_eigenvalue(d, sd, n);
    if (d_mul(EIGEN_EPS, (double)fabsf(mu)) > (double)f_add(fabsf(d[0]), fabsf(sd[0]))) {
        mu = 0.0f;
    }
    float x = f_sub(d[0], mu);
    float z = sd[0];
    float bk = 0.0f, zk = 0.0f;
    float ap = d[0], bp = sd[0], aq = d[1];
    if (n == 2) {
        float c, s;
        givens(x, z, c, s);
        const float ap1 = rot_a(c, s, ap, bp, aq);
        const float bp1 = rot_b(c, s, ap, bp, aq);
        const float aq1 = rot_q(c, s, ap, bp, aq);
        d[0] = ap1;
        sd[0] = bp1;
        d[1] = aq1;
        return;
    }
    float bq = sd[1];
    for (int k = 0; k < n - 1; ++k) {
        float c, s;
        givens(x, z, c, s);
        const float bk1 = f_sub(f_mul(c, bk), f_mul(s, zk));
        const float ap1 = rot_a(c, s, ap, bp, aq);
        const float bp1 = rot_b(c, s, ap, bp, aq);
        const float zp1 = f_mul(-s, bq);
        const float aq1 = rot_q(c, s, ap, bp, aq);
        const float bq1 = f_mul(c, bq);
        const float ak = ap1;
        bk = bp1;
        zk = zp1;
        ap = aq1;
        bp = bq1;
        if (k < n - 2) aq = d[k + 2];
        if (k < n - 3) bq = sd[k + 2];
        d[k] = ak;
        if (k > 0) sd[k - 1] = bk1;
        if (k < n - 2) sd[k + 1] = bp;
        x = bk;
        z = zk;
    }
    d[n - 1] = ap;
    sd[n - 2] = bk;
}

// The tridiagonal QR iteration (one thread): d becomes the eigenvalues.
__device__ void eigen_iterate(float *d, float *sd) {
    chop(d, sd, N);
    int b = N - 1;
    int iter = 0;
    while (b > 0 && iter < EIGEN_MAX_ITERS) {
        if (sd[b - 1] == 0.0f) {
            --b;
            continue;
        }
        int a = b - 1;
        while (a > 0 && sd[a - 1] != 0.0f) {
            --a;
        }
        const int n = b - a + 1;
        qr_step(d + a, sd + a, n);
        chop(d + a, sd + a, n);
        ++iter;
    }
}

// dst = x * y (N x N, shared), each entry summed over k ascending; by the whole block.
__device__ __forceinline__ float dot_col(const float *x, const float *y, int i, int j) {
    float acc = 0.0f;
    for (int k = 0; k < N; ++k) {
        acc = f_add(acc, f_mul(x[i * N + k], y[k * N + j]));
    }
    return acc;
}

}  // namespace speed_detail

using namespace speed_detail;

// Decimated sample i (of op_w x op_h) of the float plane `src`.
template <class S>
__device__ __forceinline__ float decimated(const DecimateParams &prm, const S &src,
                                           const uint32_t *__restrict__ taps, int i) {
    const int r = i / prm.op_w, c = i % prm.op_w;
    const int radius = prm.taps / 2;
    const int y0 = r * 16, x0 = c * 16;
    float out = 0.0f;
    for (int k = 0; k < prm.taps; ++k) {
        const int sx = reflect(x0 - radius + k, prm.scaled_w);
        float acc = 0.0f;
        for (int t = 0; t < prm.taps; ++t) {
            const int sy = reflect(y0 - radius + t, prm.scaled_h);
            const float v = prm.direct ? src(min(sx, prm.width - 1), min(sy, prm.height - 1))
                                       : scaled(src, taps, prm.scaled_w, prm.scaled_h, sx, sy);
            acc = f_add(acc, f_mul(prm.filter[t], v));
        }
        out = f_add(out, f_mul(prm.filter[k], acc));
    }
    return out;
}

// Decimated samples of the four problems: grid (ceil(op_w * op_h / 128), 4), 128 threads.
// `taps`: the rescaling tables (ignored when `direct`); `plane`: 4 x op_w x op_h floats.
extern "C" __global__ void __launch_bounds__(DECIMATE_THREADS)
speed_decimate(const __grid_constant__ DecimateParams prm, const uint32_t *__restrict__ taps,
               float *__restrict__ plane) {
    const int p = blockIdx.y;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int count = prm.op_w * prm.op_h;
    if (i >= count) {
        return;
    }
    const Levels src{prm.planes[p], prm.inv};
    plane[p * count + i] = decimated(prm, src, taps, i);
}

// SpEED temporal's two problems (p 0: reference, 1: distorted), each the float difference
// planes[2 p] - planes[2 p + 1] (previous frame less the current one): grid
// (ceil(op_w * op_h / 128), 2), 128 threads; `plane`: 2 x op_w x op_h floats.
extern "C" __global__ void __launch_bounds__(DECIMATE_THREADS)
speed_decimate_diff(const __grid_constant__ DecimateParams prm,
                    const uint32_t *__restrict__ taps, float *__restrict__ plane) {
    const int p = blockIdx.y;
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    const int count = prm.op_w * prm.op_h;
    if (i >= count) {
        return;
    }
    const DiffLevels src{prm.planes[2 * p], prm.planes[2 * p + 1], prm.inv};
    plane[p * count + i] = decimated(prm, src, taps, i);
}

// Per problem (grid 4, 256 threads): local-mean subtraction, the covariance matrix -> kmat[p]
// (N x N), the independent term -> yterm[p] (N x blocks). Scratch per problem p: plane and tmp
// op_w * op_h floats.
extern "C" __global__ void __launch_bounds__(STATS_THREADS)
speed_cov(const __grid_constant__ StatsParams prm, float *__restrict__ plane_all,
          float *__restrict__ tmp_all, float *__restrict__ kmat_all,
          float *__restrict__ yterm_all) {
    __shared__ float means[N];
    const int p = blockIdx.x;
    const int tid = threadIdx.x;
    const int w = prm.op_w, h = prm.op_h;
    const int nb = prm.blocks_x * prm.blocks_y;
    float *plane = plane_all + (size_t)p * w * h;
    float *tmp = tmp_all + (size_t)p * w * h;
    float *k_mat = kmat_all + (size_t)p * N * N;
    float *yterm = yterm_all + (size_t)p * N * nb;

    // Local mean: vertical pass into tmp, then horizontal pass subtracted from the plane.
    const int radius = prm.local_taps / 2;
    for (int i = tid; i < w * h; i += blockDim.x) {
        const int y = i / w, x = i % w;
        float acc = 0.0f;
        for (int t = 0; t < prm.local_taps; ++t) {
            acc = f_add(acc, f_mul(prm.local[t], plane[reflect(y - radius + t, h) * w + x]));
        }
        tmp[i] = acc;
    }
    __syncthreads();
    for (int i = tid; i < w * h; i += blockDim.x) {
        const int y = i / w, x = i % w;
        float acc = 0.0f;
        for (int t = 0; t < prm.local_taps; ++t) {
            acc = f_add(acc, f_mul(prm.local[t], tmp[y * w + reflect(x - radius + t, w)]));
        }
        plane[i] = f_sub(plane[i], acc);
    }
    __syncthreads();

    // Means of the 25 shifted windows (float, row by row).
    const int sub_w = prm.blocks_x * BLK - BLK + 1, sub_h = prm.blocks_y * BLK - BLK + 1;
    const int count = sub_w * sub_h;
    if (tid < N) {
        const int r0 = tid / BLK, c0 = tid % BLK;
        float s = 0.0f;
        for (int i = 0; i < sub_h; ++i) {
            const float *row = plane + (r0 + i) * w + c0;
            for (int j = 0; j < sub_w; ++j) {
                s = f_add(s, row[j]);
            }
        }
        means[tid] = f_div(s, (float)count);
    }
    __syncthreads();

    // Covariances: a thread per (p, q <= p) pair, the CPU's eight-lane double order over the
    // flattened window.
    for (int e = tid; e < N * (N + 1) / 2; e += blockDim.x) {
        int a = 0;
        while ((a + 1) * (a + 2) / 2 <= e) {
            ++a;
        }
        const int b = e - a * (a + 1) / 2;
        const float *wa = plane + (a / BLK) * w + a % BLK;
        const float *wb = plane + (b / BLK) * w + b % BLK;
        const double ma = (double)means[a], mb = (double)means[b];
        double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        double tail = 0.0;
        const int whole = count - count % 8;
        int i = 0, j = 0;  // (row, column) of flattened index t
        for (int t = 0; t < whole; t += 8) {
#pragma unroll
            for (int l = 0; l < 8; ++l) {
                const double prod =
                    d_mul(d_sub((double)wa[i * w + j], ma), d_sub((double)wb[i * w + j], mb));
                lane[l] = d_add(lane[l], prod);
                if (++j == sub_w) {
                    j = 0;
                    ++i;
                }
            }
        }
        for (int t = whole; t < count; ++t) {
            tail = d_add(tail, d_mul(d_sub((double)wa[i * w + j], ma), d_sub((double)wb[i * w + j], mb)));
            if (++j == sub_w) {
                j = 0;
                ++i;
            }
        }
        const double s = d_add(d_add(d_add(d_add(lane[0], lane[1]), d_add(lane[2], lane[3])),
                                   d_add(d_add(lane[4], lane[5]), d_add(lane[6], lane[7]))),
                              tail);
        const float cv = __double2float_rn(__ddiv_rn(s, (double)count));
        k_mat[a * N + b] = cv;
        k_mat[b * N + a] = cv;
    }

    // Independent term: yterm[e][block] = plane[5 by + e / 5][5 bx + e % 5].
    for (int i = tid; i < N * nb; i += blockDim.x) {
        const int e = i / nb, blk = i % nb;
        const int by = blk / prm.blocks_x, bx = blk % prm.blocks_x;
        yterm[i] = plane[(by * BLK + e / BLK) * w + bx * BLK + e % BLK];
    }
}

// The covariance matrix's factorisations, two blocks per problem p (grid 8, 256 threads):
// block 2p + 0 its eigenvalues -> eig[p] (Householder tridiagonalisation by the block, the QR
// iteration on one thread); block 2p + 1 the QR solve of K X = Y -> xsol[p] (N x blocks, as if
// K were regular) and ok[p] = 1 when no diagonal entry of R is below 1e-6. The two run side
// by side; speed_entropy decides which result counts.
extern "C" __global__ void __launch_bounds__(STATS_THREADS)
speed_factor(const __grid_constant__ StatsParams prm, const float *__restrict__ kmat_all,
             const float *__restrict__ yterm_all, float *__restrict__ rhs_all,
             float *__restrict__ xsol_all, float *__restrict__ eig_all,
             int32_t *__restrict__ ok_all) {
    __shared__ float k_mat[N * N];
    __shared__ float work[N * N];
    __shared__ float qm[N * N];
    __shared__ float hm[N * N];
    __shared__ float t1[N * N];
    __shared__ float t2[N * N];
    __shared__ float d[N], sd[N], v[N], xv[N];
    __shared__ float sh_tau;

    const int p = blockIdx.x >> 1;
    const int role = blockIdx.x & 1;
    const int tid = threadIdx.x;
    const int nb = prm.blocks_x * prm.blocks_y;
    const float *yterm = yterm_all + (size_t)p * N * nb;
    float *rhs = rhs_all + (size_t)p * N * nb;
    float *xsol = xsol_all + (size_t)p * N * nb;
    for (int i = tid; i < N * N; i += blockDim.x) {
        k_mat[i] = kmat_all[(size_t)p * N * N + i];
        work[i] = k_mat[i];
    }
    __syncthreads();

    if (role == 0) {
        tridiagonalize(work, d, sd, v, xv, &sh_tau, tid);
        if (tid == 0) {
            eigen_iterate(d, sd);
            for (int i = 0; i < N; ++i) {
                eig_all[(size_t)p * N + i] = d[i];
            }
        }
        return;
    }

    // QR decomposition of K (Householder reflections as libvmaf: on the minor, full
    // products): qm = product of reflections, t1 = R = qm * K.
    for (int i = tid; i < N * N; i += blockDim.x) {
        work[i] = k_mat[i];
        qm[i] = (i / N == i % N) ? 1.0f : 0.0f;
    }
    __syncthreads();
    for (int k = 0; k < N - 1; ++k) {
        for (int i = tid; i < N * N; i += blockDim.x) {
            const int r = i / N, c = i % N;
            if (r < k || c < k) {
                work[i] = (r == c) ? 1.0f : 0.0f;
            }
        }
        __syncthreads();
        if (tid == 0) {
            for (int i = 0; i < N; ++i) {
                v[i] = work[i * N + k];
            }
            float nrm = 0.0f;
            for (int i = 0; i < N; ++i) {
                nrm = f_add(nrm, f_mul(v[i], v[i]));
            }
            nrm = f_sqrt(nrm);
            v[k] = f_add(v[k], f_mul(sign_of(k_mat[k * N + k]), nrm));
            float n2 = 0.0f;
            for (int i = 0; i < N; ++i) {
                n2 = f_add(n2, f_mul(v[i], v[i]));
            }
            n2 = f_sqrt(n2);
            for (int i = 0; i < N; ++i) {
                v[i] = f_div(v[i], n2);
            }
        }
        __syncthreads();
        for (int i = tid; i < N * N; i += blockDim.x) {
            const int r = i / N, c = i % N;
            float hv = f_mul(f_mul(-2.0f, v[r]), v[c]);
            if (r == c) {
                hv = f_add(hv, 1.0f);
            }
            hm[i] = hv;
        }
        __syncthreads();
        for (int i = tid; i < N * N; i += blockDim.x) {
            const int r = i / N, c = i % N;
            t1[i] = dot_col(hm, work, r, c);
            t2[i] = dot_col(hm, qm, r, c);
        }
        __syncthreads();
        for (int i = tid; i < N * N; i += blockDim.x) {
            work[i] = t1[i];
            qm[i] = t2[i];
        }
        __syncthreads();
    }
    for (int i = tid; i < N * N; i += blockDim.x) {
        t1[i] = dot_col(qm, k_mat, i / N, i % N);
    }
    __syncthreads();
    if (tid == 0) {
        int ok = 1;
        for (int i = 0; i < N; ++i) {
            if ((double)fabsf(t1[i * N + i]) < EIGEN_EPS) {
                ok = 0;
            }
        }
        ok_all[p] = ok;
    }
    // rhs = qm * yterm, each entry summed over k ascending.
    for (int i = tid; i < N * nb; i += blockDim.x) {
        const int r = i / nb, blk = i % nb;
        float acc = 0.0f;
        for (int k = 0; k < N; ++k) {
            acc = f_add(acc, f_mul(qm[r * N + k], yterm[k * nb + blk]));
        }
        rhs[i] = acc;
    }
    __syncthreads();
    // Back substitution, a thread per block column.
    for (int j = tid; j < nb; j += blockDim.x) {
        for (int i = N - 1; i >= 0; --i) {
            float t = rhs[i * nb + j];
            for (int k = i + 1; k < N; ++k) {
                t = f_sub(t, f_mul(xsol[k * nb + j], t1[i * N + k]));
            }
            xsol[i * nb + j] = f_div(t, t1[i * N + i]);
        }
    }
}

// Per problem (grid 4, 256 threads): whether K was inverted (no eigenvalue below 1e-6 and
// R's diagonal clear of it; else the solution counts as 0), each block's variance and entropy
// -> ent[p], var[p] (blocks each), singular[p].
extern "C" __global__ void __launch_bounds__(STATS_THREADS)
speed_entropy(const __grid_constant__ StatsParams prm, const float *__restrict__ yterm_all,
              const float *__restrict__ xsol_all, const float *__restrict__ eig_all,
              const int32_t *__restrict__ ok_all, float *__restrict__ ent_all,
              float *__restrict__ var_all, int32_t *__restrict__ singular_all) {
    __shared__ float eig[N];
    __shared__ int sh_solved;
    const int p = blockIdx.x;
    const int tid = threadIdx.x;
    const int nb = prm.blocks_x * prm.blocks_y;
    const float *yterm = yterm_all + (size_t)p * N * nb;
    const float *xsol = xsol_all + (size_t)p * N * nb;
    if (tid < N) {
        eig[tid] = eig_all[(size_t)p * N + tid];
    }
    __syncthreads();
    if (tid == 0) {
        bool regular = true;
        for (int i = 0; i < N; ++i) {
            if ((double)eig[i] < EIGEN_EPS) {
                regular = false;
            }
        }
        sh_solved = (regular && ok_all[p] != 0) ? 1 : 0;
        singular_all[p] = sh_solved ? 0 : 1;
    }
    __syncthreads();
    const bool solved = sh_solved != 0;
    // Variances and entropies per block.
    const double c2pie = log2(2.0 * 3.14159265358979323846 * 2.71828182845904523536);
    for (int j = tid; j < nb; j += blockDim.x) {
        float s = f_div(f_mul(solved ? xsol[j] : 0.0f, yterm[j]), (float)N);
        for (int e = 1; e < N; ++e) {
            s = f_add(s, f_div(f_mul(solved ? xsol[e * nb + j] : 0.0f, yterm[e * nb + j]), (float)N));
        }
        float ent = 0.0f;
        for (int e = 0; e < N; ++e) {
            const float l = eig[e] < 0.0f ? 0.0f : eig[e];
            const double lg = log2((double)f_add(f_mul(l, s), prm.sigma_nn));
            ent = __double2float_rn(d_add((double)ent, d_add(lg, c2pie)));
        }
        ent_all[(size_t)p * nb + j] = ent;
        var_all[(size_t)p * nb + j] = s;
    }
}

// The two planes' scores (one thread each, block of 32): out[2 plane] = score's float bits,
// out[2 plane + 1] = 1 when a covariance of the plane was singular.
extern "C" __global__ void speed_score(const __grid_constant__ ScoreParams prm,
                                       const float *__restrict__ ent_all,
                                       const float *__restrict__ var_all,
                                       const int32_t *__restrict__ singular_all,
                                       unsigned long long *__restrict__ out) {
    const int pl = threadIdx.x;
    if (pl >= 2) {
        return;
    }
    const int nb = prm.blocks;
    const int rp = 2 * pl, dp = 2 * pl + 1;
    const bool rs = singular_all[rp] != 0, ds = singular_all[dp] != 0;
    float total = 0.0f;
    if (rs == ds) {
        const double c2pie = log2(2.0 * 3.14159265358979323846 * 2.71828182845904523536);
        const float base = __double2float_rn(
            d_mul((double)N, d_add(log2((double)f_mul(f_add(1.0f, prm.nn_floor), prm.sigma_nn)), c2pie)));
        const float *er = ent_all + (size_t)rp * nb, *ed = ent_all + (size_t)dp * nb;
        const float *vr_all = var_all + (size_t)rp * nb, *vd_all = var_all + (size_t)dp * nb;
        for (int i = 0; i < nb; ++i) {
            if (er[i] < base && ed[i] < base) {
                continue;
            }
            const float vr = vr_all[i], vd = vd_all[i];
            const double lr = log2((double)f_add(1.0f, vr));
            const double ld = log2((double)f_add(1.0f, vd));
            const double avg = log2(d_add(1.0, __ddiv_rn((double)f_add(vr, vd), 2.0)));
            double wr, wd;
            switch (prm.weight_var_mode) {
                case 0: wr = lr; wd = ld; break;
                case 1: wr = lr; wd = lr; break;
                case 2: wr = ld; wd = ld; break;
                case 3: wr = avg; wd = avg; break;
                case 4: wr = lr; wd = avg; break;
                case 5:
                    wr = lr;
                    wd = log2(d_add(1.0, d_add(d_mul(0.75, (double)vr), d_mul(0.25, (double)vd))));
                    break;
                default:
                    wr = lr;
                    wd = log2(d_add(1.0, d_add(d_mul(0.25, (double)vr), d_mul(0.75, (double)vd))));
                    break;
            }
            const float sr = __double2float_rn(d_mul((double)er[i], wr));
            const float sdv = __double2float_rn(d_mul((double)ed[i], wd));
            total = f_add(total, fabsf(f_sub(sr, sdv)));
        }
        total = f_div(total, (float)nb);
    }
    out[2 * pl] = (unsigned long long)__float_as_uint(total);
    out[2 * pl + 1] = (rs || ds) ? 1ull : 0ull;
}
