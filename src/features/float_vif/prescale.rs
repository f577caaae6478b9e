//! libvmaf's `vif_prescale`: the float planes rescaled before VIF, by nearest sample,
//! bilinear, bicubic (a = -0.75) or Lanczos (a = 4) interpolation with mirrored edges, in
//! libvmaf's `float` / `double` arithmetic and order. CPU only.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/vif_tools.c (`vif_scale_frame_s` and
//! its four methods), float_vif.c (`init`: the scaled size).

/// `vif_prescale_method`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `nearest` (libvmaf's default).
    Nearest,
    /// `bilinear`.
    Bilinear,
    /// `bicubic`.
    Bicubic,
    /// `lanczos4`.
    Lanczos4,
}

impl Method {
    /// The method libvmaf names `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "nearest" => Self::Nearest,
            "bilinear" => Self::Bilinear,
            "bicubic" => Self::Bicubic,
            "lanczos4" => Self::Lanczos4,
            _ => return None,
        })
    }
}

/// The rescaled length of `n` samples: `(int)(n * prescale + 0.5)`.
pub fn scaled(n: usize, prescale: f64) -> usize {
    (n as f64 * prescale + 0.5) as usize
}

/// libvmaf's `mirror` on `float` coordinates: `-i` left of `left`, `2 * right - i` right of
/// `right`.
#[inline]
fn mirror(i: f32, left: f32, right: f32) -> f32 {
    if i < left {
        -i
    } else if i > right {
        2.0 * right - i
    } else {
        i
    }
}

/// A mirrored index as libvmaf converts it (`int` from the `float`), clamped into the plane
/// (libvmaf reads outside it for planes narrower than the interpolation window).
#[inline]
fn index(i: f32, n: usize) -> usize {
    (mirror(i, 0.0, (n - 1) as f32) as i64).clamp(0, n as i64 - 1) as usize
}

fn bicubic_kernel(t: f32) -> f32 {
    let a = -0.75f32;
    let t = if t < 0.0 { -t } else { t };
    if t < 1.0 {
        return ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    }
    if t < 2.0 {
        return (((t - 5.0) * t + 8.0) * t - 4.0) * a;
    }
    0.0
}

fn lanczos4_kernel(x: f32, a: f32) -> f32 {
    if x == 0.0 {
        return 1.0;
    }
    if x > -a && x < a {
        let pi = std::f64::consts::PI;
        let (xd, ad) = (f64::from(x), f64::from(a));
        return (ad * (pi * xd).sin() * (pi * xd / ad).sin() / (pi * pi * xd * xd)) as f32;
    }
    0.0
}

/// Rescales the packed `sw` x `sh` plane `src` into the packed `dw` x `dh` plane `dst` with
/// `method` (a copy when the sizes are equal).
pub fn scale(
    method: Method,
    src: &[f32],
    (sw, sh): (usize, usize),
    dst: &mut [f32],
    (dw, dh): (usize, usize),
) {
    if sw == dw && sh == dh {
        dst[..sw * sh].copy_from_slice(&src[..sw * sh]);
        return;
    }
    let ratio_x = sw as f32 / dw as f32;
    let ratio_y = sh as f32 / dh as f32;
    let at = |x: usize, y: usize| src[y * sw + x];
    for y in 0..dh {
        let yy = ((y as f64 + 0.5) * f64::from(ratio_y) - 0.5) as f32;
        for x in 0..dw {
            let xx = ((x as f64 + 0.5) * f64::from(ratio_x) - 0.5) as f32;
            dst[y * dw + x] = match method {
                Method::Nearest => {
                    let ry = ((y as f32 * ratio_y) as usize).min(sh - 1);
                    let rx = ((x as f32 * ratio_x) as usize).min(sw - 1);
                    at(rx, ry)
                }
                Method::Bilinear => {
                    let x1 = index(f64::from(xx).floor() as f32, sw);
                    let x2 = index(f64::from(xx).ceil() as f32, sw);
                    let y1 = index(f64::from(yy).floor() as f32, sh);
                    let y2 = index(f64::from(yy).ceil() as f32, sh);
                    let dx = xx - x1 as f32;
                    let dy = yy - y1 as f32;
                    (1.0 - dy) * (1.0 - dx) * at(x1, y1)
                        + (1.0 - dy) * dx * at(x2, y1)
                        + dy * (1.0 - dx) * at(x1, y2)
                        + dy * dx * at(x2, y2)
                }
                Method::Bicubic => {
                    let (x0, y0) = (f64::from(xx).floor() as i64, f64::from(yy).floor() as i64);
                    let (dx, dy) = (xx - x0 as f32, yy - y0 as f32);
                    let wx: [f32; 4] =
                        std::array::from_fn(|k| bicubic_kernel((k as i64 - 1) as f32 - dx));
                    let wy: [f32; 4] =
                        std::array::from_fn(|k| bicubic_kernel((k as i64 - 1) as f32 - dy));
                    let mut v = 0.0f32;
                    for (j, &fy) in wy.iter().enumerate() {
                        let yi = index((y0 + j as i64 - 1) as f32, sh);
                        for (i, &fx) in wx.iter().enumerate() {
                            let xi = index((x0 + i as i64 - 1) as f32, sw);
                            v += at(xi, yi) * (fx * fy);
                        }
                    }
                    v
                }
                Method::Lanczos4 => {
                    let (x0, y0) = (f64::from(xx).floor() as i64, f64::from(yy).floor() as i64);
                    let (dx, dy) = (xx - x0 as f32, yy - y0 as f32);
                    let wx: [f32; 9] =
                        std::array::from_fn(|k| lanczos4_kernel((k as i64 - 4) as f32 - dx, 4.0));
                    let wy: [f32; 9] =
                        std::array::from_fn(|k| lanczos4_kernel((k as i64 - 4) as f32 - dy, 4.0));
                    let (mut v, mut sum) = (0.0f32, 0.0f32);
                    for (j, &fy) in wy.iter().enumerate() {
                        let yi = index((y0 + j as i64 - 4) as f32, sh);
                        for (i, &fx) in wx.iter().enumerate() {
                            let weight = fx * fy;
                            sum += weight;
                            let xi = index((x0 + i as i64 - 4) as f32, sw);
                            v += at(xi, yi) * weight;
                        }
                    }
                    v / sum
                }
            };
        }
    }
}
