//! The numeric parts of a libvmaf model file (Netflix/vmaf v3.2.0, libvmaf/src/svm.cpp and
//! model.c): libsvm's text model parsed into dense support vectors, and the score transform's
//! piecewise-linear mapping.

/// Largest number of support vectors a model file may declare (the published models have a
/// few hundred); guards against absurd files.
const MAX_SUPPORT_VECTORS: usize = 1 << 20;

/// libvmaf's piecewise-linear mapping through `knots` (extrapolating the end segments).
pub(crate) fn piecewise_linear(x: f64, knots: &[(f64, f64)]) -> f64 {
    if knots.len() < 2 {
        return x;
    }
    let last = knots.len() - 2;
    let mut y = 0.0;
    for (i, w) in knots.windows(2).enumerate() {
        let ((x0, y0), (x1, y1)) = (w[0], w[1]);
        let inside = x0 <= x && x <= x1;
        let f = |x: f64| {
            if y0 == y1 {
                y0
            } else {
                let slope = (y1 - y0) / (x1 - x0);
                slope * x + (y0 - x0 * slope)
            }
        };
        if inside || (i == 0 && x < x0) || (i == last && x > x1) {
            y = f(x);
        }
    }
    y
}

/// A libsvm nu-SVR model: kernel width, offset, and the support vectors with their coefficients.
pub(crate) struct Svm {
    pub(crate) gamma: f64,
    pub(crate) rho: f64,
    pub(crate) coef: Vec<f64>,
    pub(crate) sv: Vec<f64>,
}

/// Parses libsvm's text model (as embedded in the JSON's `model` string) into dense support
/// vectors of `n` features.
pub(crate) fn parse_libsvm(text: &str, n: usize) -> Result<Svm, String> {
    let mut lines = text.lines();
    let (mut gamma, mut rho, mut total) = (None, None, None);
    for line in lines.by_ref() {
        let mut it = line.split_whitespace();
        let Some(key) = it.next() else { continue };
        let value = it.next();
        match key {
            "SV" => break,
            "svm_type" if value != Some("nu_svr") => {
                return Err(format!("svm_type {:?} is not nu_svr", value.unwrap_or("")))
            }
            "kernel_type" if value != Some("rbf") => {
                return Err(format!("kernel_type {:?} is not rbf", value.unwrap_or("")))
            }
            "gamma" => gamma = value.and_then(|v| v.parse::<f64>().ok()),
            "rho" => rho = value.and_then(|v| v.parse::<f64>().ok()),
            "total_sv" => total = value.and_then(|v| v.parse::<usize>().ok()),
            _ => {}
        }
    }
    let gamma = gamma
        .filter(|g| g.is_finite())
        .ok_or("libsvm model has no finite gamma")?;
    let rho = rho
        .filter(|r| r.is_finite())
        .ok_or("libsvm model has no finite rho")?;
    let total = total.ok_or("libsvm model has no total_sv")?;
    if total == 0 || total > MAX_SUPPORT_VECTORS {
        return Err(format!(
            "total_sv {total} is outside 1..{MAX_SUPPORT_VECTORS}"
        ));
    }
    let mut coef = Vec::with_capacity(total);
    let mut sv = vec![0.0; total * n];
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let row = coef.len();
        if row == total {
            return Err(format!("more support vectors than total_sv {total}"));
        }
        let mut it = line.split_whitespace();
        let c: f64 = it
            .next()
            .and_then(|v| v.parse().ok())
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(|| format!("support vector {row}: bad coefficient"))?;
        coef.push(c);
        for pair in it {
            let (idx, val) = pair
                .split_once(':')
                .ok_or_else(|| format!("support vector {row}: '{pair}' is not index:value"))?;
            let idx: usize = idx
                .parse()
                .ok()
                .filter(|i| (1..=n).contains(i))
                .ok_or_else(|| format!("support vector {row}: index '{idx}' outside 1..{n}"))?;
            let val: f64 = val
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| {
                    format!("support vector {row}: value '{val}' is not a finite number")
                })?;
            sv[row * n + idx - 1] = val;
        }
    }
    if coef.len() != total {
        return Err(format!(
            "{} support vectors for total_sv {total}",
            coef.len()
        ));
    }
    Ok(Svm {
        gamma,
        rho,
        coef,
        sv,
    })
}
