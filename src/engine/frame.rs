//! Frame views handed from the element to the engine.

/// A read-only view of one luma (Y) plane.
///
/// `data` holds at least `(height - 1) * stride + width` samples; sample `(x, y)` is
/// `data[y * stride + x]`. Every sample is a right-aligned integer of `bpc` bits
/// (8-bit video is widened to `u16` by the element, P010's left-aligned samples are shifted
/// down), so `0 <= sample < 1 << bpc`. `bpc` is in `8..=16`.
#[derive(Debug, Clone, Copy)]
pub struct LumaPlane<'a> {
    /// Samples, row-major, `stride` samples between the starts of two rows.
    pub data: &'a [u16],
    /// Width in samples (>= 1).
    pub width: usize,
    /// Height in rows (>= 1).
    pub height: usize,
    /// Row pitch in samples (>= `width`).
    pub stride: usize,
    /// Bits per sample: 8 for 8-bit video, 10 for 10-bit, up to 16.
    pub bpc: u32,
}

impl<'a> LumaPlane<'a> {
    /// Wraps a tightly packed plane (`stride == width`).
    ///
    /// Returns `None` when `data.len() < width * height`, a dimension is zero or `bpc` is
    /// outside `8..=16`.
    pub fn packed(data: &'a [u16], width: usize, height: usize, bpc: u32) -> Option<Self> {
        Self::new(data, width, height, width, bpc)
    }

    /// Wraps a plane with a row pitch of `stride` samples.
    ///
    /// Returns `None` when the slice is too short for the geometry, a dimension is zero,
    /// `stride < width` or `bpc` is outside `8..=16`.
    pub fn new(
        data: &'a [u16],
        width: usize,
        height: usize,
        stride: usize,
        bpc: u32,
    ) -> Option<Self> {
        if width == 0 || height == 0 || stride < width || !(8..=16).contains(&bpc) {
            return None;
        }
        let needed = (height - 1).checked_mul(stride)?.checked_add(width)?;
        (data.len() >= needed).then_some(Self {
            data,
            width,
            height,
            stride,
            bpc,
        })
    }

    /// Row `y` as a slice of exactly `width` samples. Panics if `y >= height` (callers index
    /// within the geometry they were given).
    #[inline]
    pub fn row(&self, y: usize) -> &'a [u16] {
        let start = y * self.stride;
        &self.data[start..start + self.width]
    }
}

/// Why a feature extractor refused a frame pair.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeatureError {
    /// The plane is smaller than the extractor's filters and downsampling need.
    #[error(
        "{feature} needs frames of at least {min_width}x{min_height} luma samples, got {width}x{height}"
    )]
    FrameTooSmall {
        /// Extractor name (`"vif"`, `"adm"`, `"motion"`).
        feature: &'static str,
        /// Width given, in samples.
        width: usize,
        /// Height given, in rows.
        height: usize,
        /// Smallest width accepted.
        min_width: usize,
        /// Smallest height accepted.
        min_height: usize,
    },
    /// The planes handed in do not have the geometry the extractor was made for, or the
    /// reference and distorted planes differ.
    #[error("{feature}: expected {expected_width}x{expected_height} planes at {expected_bpc} bits, got {width}x{height} at {bpc} bits")]
    WrongGeometry {
        /// Extractor name.
        feature: &'static str,
        /// Width the extractor was made for.
        expected_width: usize,
        /// Height the extractor was made for.
        expected_height: usize,
        /// Bit depth the extractor was made for.
        expected_bpc: u32,
        /// Width received.
        width: usize,
        /// Height received.
        height: usize,
        /// Bit depth received.
        bpc: u32,
    },
}

impl FeatureError {
    /// Checks the size and bit depth an extractor is made for: `FrameTooSmall` below
    /// `min_width` x `min_height`, `WrongGeometry` for a `bpc` outside `8..=16` (no plane can
    /// match it).
    pub fn check_new(
        feature: &'static str,
        (width, height, bpc): (usize, usize, u32),
        (min_width, min_height): (usize, usize),
    ) -> Result<(), Self> {
        if width < min_width || height < min_height {
            return Err(Self::FrameTooSmall {
                feature,
                width,
                height,
                min_width,
                min_height,
            });
        }
        if !(8..=16).contains(&bpc) {
            return Err(Self::WrongGeometry {
                feature,
                expected_width: width,
                expected_height: height,
                expected_bpc: 8,
                width,
                height,
                bpc,
            });
        }
        Ok(())
    }

    /// Checks that `plane` is `width` x `height` at `bpc` bits and that its `data` and
    /// `stride` hold that geometry (the fields are public, so a plane may be inconsistent).
    pub fn check_plane(
        feature: &'static str,
        (width, height, bpc): (usize, usize, u32),
        plane: &LumaPlane,
    ) -> Result<(), Self> {
        let p = plane;
        let fits = p.stride >= p.width
            && p.height >= 1
            && (p.height - 1)
                .checked_mul(p.stride)
                .and_then(|n| n.checked_add(p.width))
                .is_some_and(|n| n <= p.data.len());
        if p.width != width || p.height != height || p.bpc != bpc || !fits {
            return Err(Self::WrongGeometry {
                feature,
                expected_width: width,
                expected_height: height,
                expected_bpc: bpc,
                width: p.width,
                height: p.height,
                bpc: p.bpc,
            });
        }
        Ok(())
    }
}
