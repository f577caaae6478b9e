//! [`DevPlane`]: how the kernels find a luma plane in device memory.

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use super::error::CudaError;
use crate::video::frame::{FeatureError, SampleLayout};

/// A luma plane in device memory, passed by value to every kernel that reads input samples
/// (`struct Plane` in `kernels/common.cuh`, same layout: 32 bytes, 8-byte aligned).
///
/// Row `y` starts `y * pitch` bytes after `ptr`; a sample is 1 byte (`wide == 0`) or a
/// little-endian `u16` (`wide == 1`) and its value is `((stored >> down) & mask) << up`. The kernels do
/// no bounds checks: whoever builds a `DevPlane` guarantees `width` samples in each of `height`
/// rows (the geometry the backend was made for) and, for 2-byte samples, an even `ptr` and
/// `pitch`.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DevPlane {
    /// `CUdeviceptr` of sample (0, 0).
    pub ptr: u64,
    /// Bytes from one row to the next (>= width * sample bytes).
    pub pitch: i64,
    /// 1 for 2-byte samples, 0 for 1-byte samples.
    pub wide: u32,
    /// Right shift applied to a stored sample (padding bits of left-aligned formats).
    pub down: u32,
    /// Left shift applied after `down` and `mask` (raises a lower-depth stream to the
    /// scoring depth).
    pub up: u32,
    /// Bits kept after `down` ([`SampleLayout::mask`]): bits above the format's depth are not
    /// part of the sample.
    pub mask: u32,
}

impl DevPlane {
    /// A plane at `ptr` with `pitch` bytes per row, samples stored as `layout` says.
    pub fn new(ptr: u64, pitch: usize, layout: SampleLayout) -> Self {
        Self {
            ptr,
            pitch: pitch as i64,
            wide: u32::from(layout.bytes == 2),
            down: layout.down,
            up: layout.up,
            mask: u32::from(layout.mask()),
        }
    }

    /// A packed plane of right-aligned `u16` samples, `width` per row (the kernels' own
    /// decimated planes).
    pub fn packed_u16(slice: &CudaSlice<u16>, width: usize, stream: &CudaStream) -> Self {
        Self::new(
            slice.device_ptr(stream).0,
            width * 2,
            SampleLayout::RIGHT_ALIGNED_U16,
        )
    }
}

/// The Cb and Cr planes of both frames of a pair in device memory, for the extra metrics that
/// read chroma (`psnr_cb`, `psnr_cr`, SSIMULACRA2's RGB conversion).
///
/// The backend unpacks every input layout (planar, NV12/P010's interleaved UV, host or
/// device) into packed right-aligned `u16` planes at the scoring depth, `width` samples per
/// row (`pitch == 2 * width`): these descriptors point at them. `width` x `height` is the
/// format's chroma size (4:2:0: `ceil(w / 2)` x `ceil(h / 2)`; 4:4:4: the luma size).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChromaDev {
    /// Cb (`[0]`) and Cr (`[1]`) of the reference frame.
    pub reference: [DevPlane; 2],
    /// Cb and Cr of the distorted frame.
    pub distorted: [DevPlane; 2],
    /// Samples per chroma row.
    pub width: usize,
    /// Chroma rows.
    pub height: usize,
}

/// Largest side, in samples, kernels that index with 32 bits take (PSNR, SSIM) (their indices are 32-bit).
pub const MAX_SIDE: usize = 1 << 16;

/// [`FeatureError::check_new`] for `feature` with a minimum of `min` x `min`, and
/// [`FeatureError::WrongGeometry`] (expecting at most [`MAX_SIDE`] x [`MAX_SIDE`]) for a side
/// above [`MAX_SIDE`].
pub fn check_size(
    feature: &'static str,
    (width, height, bpc): (usize, usize, u32),
    min: usize,
) -> Result<(), CudaError> {
    FeatureError::check_new(feature, (width, height, bpc), (min, min))?;
    if width > MAX_SIDE || height > MAX_SIDE {
        return Err(CudaError::Geometry(FeatureError::wrong_size(
            feature,
            (MAX_SIDE, MAX_SIDE, bpc),
            (width, height),
        )));
    }
    Ok(())
}
