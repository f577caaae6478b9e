//! The 25x25 linear algebra of SpEED's Gaussian scale mixture fit, in libvmaf's `float`
//! arithmetic and operation order (the `double` steps where libvmaf has them): the
//! eigenvalues of the symmetric covariance matrix (Householder tridiagonalisation, then
//! implicit symmetric QR steps with Wilkinson shifts, as GSL's `gsl_eigen_symm`) and the
//! solution of `K X = Y` by a Householder QR decomposition and back substitution.
//!
//! Matrices are row-major `[f32; N * N]` with `N` = 25 ([`super::N`]).
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/speed.c (`compute_eigenvalues`,
//! `solve_linear_system`).

use super::params::{EIGEN_EPS, EIGEN_MAX_ITERS, N};

/// `sqrt(x * x + y * y)` in `float`.
fn hypot(x: f32, y: f32) -> f32 {
    (x * x + y * y).sqrt()
}

/// 1 for `x >= 0`, else -1.
fn sign(x: f32) -> f32 {
    if x >= 0.0 {
        1.0
    } else {
        -1.0
    }
}

/// Reduces the symmetric `a` to tridiagonal form in place; returns (diagonal, subdiagonal).
fn tridiagonalize(a: &mut [f32; N * N]) -> ([f32; N], [f32; N]) {
    let mut v = [0f32; N];
    let mut x = [0f32; N];
    for i in 0..N - 2 {
        // Householder vector annihilating a[i+2.., i], stored scaled in the column.
        let start = i + 1;
        let mut tau = 0f32;
        let mut xnorm = 0f32;
        for r in start + 1..N {
            xnorm += a[r * N + i] * a[r * N + i];
        }
        let xnorm = xnorm.sqrt();
        if xnorm != 0.0 {
            let alpha = a[start * N + i];
            let beta = -sign(alpha) * hypot(alpha, xnorm);
            tau = (beta - alpha) / beta;
            let s = alpha - beta;
            if s != 0.0 {
                for r in start..N {
                    a[r * N + i] /= s;
                }
                a[start * N + i] = beta;
            }
        }
        for r in start..N {
            v[r] = a[r * N + i];
        }
        if tau != 0.0 {
            a[start * N + i] = v[start];
            v[start] = 1.0;
            for r in start..N {
                let mut acc = 0f32;
                for c in start..N {
                    acc += tau * a[r * N + c] * v[c];
                }
                x[r] = acc;
            }
            let mut xv = 0f32;
            for r in start..N {
                xv += x[r] * v[r];
            }
            let alpha = (-0.5 * f64::from(tau) * f64::from(xv)) as f32;
            for r in start..N {
                x[r] += alpha * v[r];
            }
            for r in start..N {
                for c in start..N {
                    a[r * N + c] -= x[r] * v[c] + v[r] * x[c];
                }
            }
        }
    }
    let mut d = [0f32; N];
    let mut sd = [0f32; N];
    for i in 0..N {
        d[i] = a[i * N + i];
    }
    for i in 0..N - 1 {
        sd[i] = a[(i + 1) * N + i];
    }
    (d, sd)
}

/// Zeroes subdiagonal entries negligible against their diagonal neighbours (`n` rows).
fn chop(d: &[f32], sd: &mut [f32], n: usize) {
    for i in 0..n - 1 {
        if f64::from(sd[i].abs()) < EIGEN_EPS * f64::from(d[i].abs() + d[i + 1].abs()) {
            sd[i] = 0.0;
        }
    }
}

/// The eigenvalue of the trailing 2x2 block nearer its last diagonal entry.
fn trailing_eigenvalue(d: &[f32], sd: &[f32], n: usize) -> f32 {
    let (ta, tb, tab) = (d[n - 2], d[n - 1], sd[n - 2]);
    let dt = (ta - tb) / 2.0;
    if dt > 0.0 {
        tb - tab * (tab / (dt + hypot(dt, tab)))
    } else if dt == 0.0 {
        tb - tab.abs()
    } else {
        tb + tab * (tab / (-dt + hypot(dt, tab)))
    }
}

/// Givens rotation (c, s) zeroing `b` against `a`; `1 / sqrt` in `double` as libvmaf.
fn givens(a: f32, b: f32) -> (f32, f32) {
    if b == 0.0 {
        (1.0, 0.0)
    } else if b.abs() > a.abs() {
        let t = -a / b;
        let s1 = (1.0 / f64::from(1.0 + t * t).sqrt()) as f32;
        (s1 * t, s1)
    } else {
        let t = -b / a;
        let c1 = (1.0 / f64::from(1.0 + t * t).sqrt()) as f32;
        (c1, c1 * t)
    }
}

/// One implicit QR step on the unreduced tridiagonal block `d[..n]`, `sd[..n-1]`.
fn qr_step(d: &mut [f32], sd: &mut [f32], n: usize) {
    let mut mu = trailing_eigenvalue(d, sd, n);
    if EIGEN_EPS * f64::from(mu.abs()) > f64::from(d[0].abs() + sd[0].abs()) {
        mu = 0.0;
    }
    let mut x = d[0] - mu;
    let mut z = sd[0];
    let (mut bk, mut zk) = (0f32, 0f32);
    let (mut ap, mut bp, mut aq) = (d[0], sd[0], d[1]);
    if n == 2 {
        let (c, s) = givens(x, z);
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        d[0] = ap1;
        sd[0] = bp1;
        d[1] = aq1;
        return;
    }
    let mut bq = sd[1];
    for k in 0..n - 1 {
        let (c, s) = givens(x, z);
        let bk1 = c * bk - s * zk;
        let ap1 = c * (c * ap - s * bp) + s * (s * aq - c * bp);
        let bp1 = c * (s * ap + c * bp) - s * (s * bp + c * aq);
        let zp1 = -s * bq;
        let aq1 = s * (s * ap + c * bp) + c * (s * bp + c * aq);
        let bq1 = c * bq;
        let ak = ap1;
        bk = bp1;
        zk = zp1;
        ap = aq1;
        bp = bq1;
        if k < n - 2 {
            aq = d[k + 2];
        }
        if k < n - 3 {
            bq = sd[k + 2];
        }
        d[k] = ak;
        if k > 0 {
            sd[k - 1] = bk1;
        }
        if k < n - 2 {
            sd[k + 1] = bp;
        }
        x = bk;
        z = zk;
    }
    d[n - 1] = ap;
    sd[n - 2] = bk;
}

/// The eigenvalues of the symmetric `k` (unordered), as libvmaf computes them (at most 500
/// QR steps; an unconverged matrix keeps its current diagonal, as libvmaf does).
pub fn eigenvalues(k: &[f32; N * N]) -> [f32; N] {
    let mut a = *k;
    let (mut d, mut sd) = tridiagonalize(&mut a);
    chop(&d, &mut sd, N);
    let mut b = N - 1;
    let mut iter = 0;
    while b > 0 && iter < EIGEN_MAX_ITERS {
        if sd[b - 1] == 0.0 {
            b -= 1;
            continue;
        }
        let mut a0 = b - 1;
        while a0 > 0 && sd[a0 - 1] != 0.0 {
            a0 -= 1;
        }
        let n = b - a0 + 1;
        qr_step(&mut d[a0..], &mut sd[a0..], n);
        chop(&d[a0..], &mut sd[a0..], n);
        iter += 1;
    }
    d
}

/// `dst = x * y` for N x N matrices, each entry summed over `k` ascending from 0 (the loop
/// runs along rows of `y` so that the independent entries of a row vectorise).
fn matmul(dst: &mut [f32; N * N], x: &[f32; N * N], y: &[f32; N * N]) {
    for i in 0..N {
        let mut acc = [0f32; N];
        for k in 0..N {
            let a = x[i * N + k];
            for (o, &b) in acc.iter_mut().zip(&y[k * N..(k + 1) * N]) {
                *o += a * b;
            }
        }
        dst[i * N..(i + 1) * N].copy_from_slice(&acc);
    }
}

/// The Householder QR decomposition of `a` as libvmaf does it: returns (`Qt`, `R`) with
/// `Qt` the product of the reflections (`Q` transposed) and `R = Qt * a`.
pub fn qr(a: &[f32; N * N]) -> (Box<[f32; N * N]>, Box<[f32; N * N]>) {
    let mut z = Box::new(*a);
    let mut q = Box::new([0f32; N * N]);
    for i in 0..N {
        q[i * N + i] = 1.0;
    }
    let mut h = Box::new([0f32; N * N]);
    let mut tmp = Box::new([0f32; N * N]);
    let mut v = [0f32; N];
    for k in 0..N - 1 {
        // The minor: rows and columns before k become the identity's.
        for i in 0..N {
            for j in 0..N {
                if i < k || j < k {
                    z[i * N + j] = if i == j { 1.0 } else { 0.0 };
                }
            }
        }
        for i in 0..N {
            v[i] = z[i * N + k];
        }
        let norm = norm(&v);
        v[k] += sign(a[k * N + k]) * norm;
        let n2 = self::norm(&v);
        for e in &mut v {
            *e /= n2;
        }
        for i in 0..N {
            for j in 0..N {
                h[i * N + j] = -2.0 * v[i] * v[j];
            }
        }
        for i in 0..N {
            h[i * N + i] += 1.0;
        }
        matmul(&mut tmp, &h, &z);
        *z = *tmp;
        matmul(&mut tmp, &h, &q);
        *q = *tmp;
    }
    let mut r = Box::new([0f32; N * N]);
    matmul(&mut r, &q, a);
    (q, r)
}

/// Euclidean norm in `float`.
fn norm(v: &[f32; N]) -> f32 {
    let mut s = 0f32;
    for &e in v {
        s += e * e;
    }
    s.sqrt()
}

/// Solves `a X = y` for `y` of N rows and `cols` columns (row-major, `N * cols`) into `x`
/// (same shape), by libvmaf's QR decomposition and back substitution. Returns `false`
/// (and leaves `x` partly written) when a diagonal entry of `R` is below 1e-6 in magnitude.
pub fn solve(a: &[f32; N * N], y: &[f32], cols: usize, x: &mut [f32]) -> bool {
    let (qt, r) = qr(a);
    // qt * y, each entry summed over k ascending.
    let mut rhs = vec![0f32; N * cols];
    for i in 0..N {
        for k in 0..N {
            let q = qt[i * N + k];
            let (row, src) = (
                &mut rhs[i * cols..(i + 1) * cols],
                &y[k * cols..(k + 1) * cols],
            );
            for (o, &s) in row.iter_mut().zip(src) {
                *o += q * s;
            }
        }
    }
    for i in (0..N).rev() {
        let den = r[i * N + i];
        if f64::from(den.abs()) < EIGEN_EPS {
            return false;
        }
        for j in 0..cols {
            let mut t = rhs[i * cols + j];
            for k in i + 1..N {
                t -= x[k * cols + j] * r[i * N + k];
            }
            x[i * cols + j] = t / den;
        }
    }
    true
}
