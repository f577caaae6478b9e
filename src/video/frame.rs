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
    /// The extractor does not take frames of this kind, or not in this mode, whatever their
    /// size (libvmaf refuses them too: `psnr_hvs` on grey frames or above 12 bits;
    /// `speed_temporal`, which reads the previous distorted frame, in a ladder).
    #[error("{feature}: {reason}")]
    Unsupported {
        /// Extractor name.
        feature: &'static str,
        /// What it refuses and what it takes.
        reason: String,
    },
}

impl FeatureError {
    /// `WrongGeometry` for a plane of `size` handed to an extractor made for `expected`
    /// (width, height, bpc); the plane's depth is reported as the expected one.
    pub fn wrong_size(
        feature: &'static str,
        (expected_width, expected_height, bpc): (usize, usize, u32),
        (width, height): (usize, usize),
    ) -> Self {
        Self::WrongGeometry {
            feature,
            expected_width,
            expected_height,
            expected_bpc: bpc,
            width,
            height,
            bpc,
        }
    }

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

/// How the samples of a luma plane are stored in memory: the layout of the video format the
/// buffer carries, and the shift that brings it to the depth both streams are scored at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SampleLayout {
    /// Bytes per sample: 1, or 2 (little-endian).
    pub bytes: usize,
    /// Right shift that drops the padding bits of left-aligned formats (P010: 6, P012: 4;
    /// 0 for right-aligned formats).
    pub down: u32,
    /// Bits of the sample left after `down` (the format's depth, `1..=16`): higher bits
    /// (garbage in the top of a 10-bit word of `I420_10LE`, say) are not part of the sample
    /// and are masked off, so that every sample stays below `1 << depth`.
    pub depth: u32,
    /// Left shift applied after `down` and the mask, from the stream's depth to the scoring
    /// depth.
    pub up: u32,
}

impl SampleLayout {
    /// Right-aligned `u16` samples already at the scoring depth ([`LumaPlane`]'s layout).
    pub const RIGHT_ALIGNED_U16: Self = Self {
        bytes: 2,
        down: 0,
        depth: 16,
        up: 0,
    };

    /// The mask applied after `down`: the low `depth` bits (all 16 for `depth >= 16`).
    #[inline]
    pub fn mask(self) -> u16 {
        if self.depth >= 16 {
            u16::MAX
        } else {
            (1u16 << self.depth) - 1
        }
    }

    /// Converts the samples of one row into `dst` (as many as `dst` holds): sample `x` starts
    /// `x * pixel_stride` bytes into `row`; a sample whose bytes run past `row` is left as it
    /// is. The same values as [`SampleLayout::sample`], in loops the compiler vectorises for
    /// planar rows (1- and 2-byte samples) and interleaved pairs (NV12's, P010's UV) when
    /// `row` holds whole steps for every sample, else sample by sample (the last row of an
    /// interleaved component may end at its last sample).
    fn convert_row(self, row: &[u8], pixel_stride: usize, dst: &mut [u16]) {
        let (down, mask, up) = (self.down, self.mask(), self.up);
        let put = |d: &mut u16, v: u16| *d = ((v >> down) & mask) << up;
        let whole = row.len() >= dst.len().saturating_mul(pixel_stride);
        match (self.bytes, pixel_stride, whole) {
            (1, 1, true) => dst
                .iter_mut()
                .zip(row)
                .for_each(|(d, s)| put(d, u16::from(*s))),
            (1, 2, true) => dst
                .iter_mut()
                .zip(row.chunks_exact(2))
                .for_each(|(d, s)| put(d, u16::from(s[0]))),
            (2, 2, true) => dst
                .iter_mut()
                .zip(row.chunks_exact(2))
                .for_each(|(d, s)| put(d, u16::from_le_bytes([s[0], s[1]]))),
            (2, 4, true) => dst
                .iter_mut()
                .zip(row.chunks_exact(4))
                .for_each(|(d, s)| put(d, u16::from_le_bytes([s[0], s[1]]))),
            _ => {
                for (x, d) in dst.iter_mut().enumerate() {
                    let at = x * pixel_stride;
                    if at + self.bytes <= row.len() {
                        *d = self.sample(&row[at..], 0);
                    }
                }
            }
        }
    }

    /// Sample `x` of a row's bytes (the caller keeps `x` within the row).
    #[inline]
    fn sample(self, row: &[u8], x: usize) -> u16 {
        let v = if self.bytes == 2 {
            u16::from_le_bytes([row[2 * x], row[2 * x + 1]])
        } else {
            u16::from(row[x])
        };
        ((v >> self.down) & self.mask()) << self.up
    }
}

/// What keeps the bytes of a host mapping valid and unchanged for as long as it (or a clone)
/// lives: e.g. an `Arc` of a readable `gst_video::VideoFrame`, which holds its buffer mapped
/// (and, since it holds a reference, no one can map that buffer for writing meanwhile).
///
/// A view that carries one ([`HostLuma::held`], [`HostComponent::held`]) can be
/// [detached](Detached) from the submission's borrow, so that a backend reads the rows later
/// on another thread instead of copying them before the submission returns (the CPU backend
/// on a pool: the conversion moves from the streaming thread to the worker).
pub type Hold = std::sync::Arc<dyn std::any::Any + Send + Sync>;

/// A host view ([`HostLuma`] or [`HostComponent`]) detached from the borrow it was made
/// under, with a clone of the [`Hold`] that keeps its bytes valid. The view is lent out for
/// no longer than the `Detached` lives ([`Detached::view`]).
pub struct Detached<T> {
    /// Borrows bytes that `_hold` keeps alive; never handed out as `'static`.
    view: T,
    _hold: Hold,
}

impl<T> std::fmt::Debug for Detached<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Detached").finish_non_exhaustive()
    }
}

impl Detached<HostLuma<'static>> {
    /// The rows, for as long as `self` lives.
    pub fn view(&self) -> HostLuma<'_> {
        self.view
    }
}

impl Detached<HostComponent<'static>> {
    /// The component, for as long as `self` lives.
    pub fn view(&self) -> HostComponent<'_> {
        self.view
    }
}

/// The luma rows of a mapped buffer in host memory, as the buffer holds them (no conversion
/// yet): `height` rows of `width` samples, `stride` bytes apart.
#[derive(Debug, Clone, Copy)]
pub struct HostLuma<'a> {
    /// The mapped bytes, starting at sample (0, 0).
    pub data: &'a [u8],
    /// Bytes from one row to the next.
    pub stride: usize,
    /// Width in samples (>= 1).
    pub width: usize,
    /// Height in rows (>= 1).
    pub height: usize,
    /// Sample storage and shifts.
    pub layout: SampleLayout,
    /// What keeps `data` valid beyond the borrow, when the mapping has an owner
    /// ([`HostLuma::held`]); `None` for a plain borrow.
    hold: Option<&'a Hold>,
}

impl<'a> HostLuma<'a> {
    /// Wraps mapped rows. `None` when a dimension is zero, `layout.bytes` is not 1 or 2,
    /// `stride` is shorter than a row or `data` is shorter than the geometry needs.
    pub fn new(
        data: &'a [u8],
        stride: usize,
        width: usize,
        height: usize,
        layout: SampleLayout,
    ) -> Option<Self> {
        if width == 0 || height == 0 || !(1..=2).contains(&layout.bytes) {
            return None;
        }
        let row = width.checked_mul(layout.bytes)?;
        if stride < row {
            return None;
        }
        let needed = (height - 1).checked_mul(stride)?.checked_add(row)?;
        (data.len() >= needed).then_some(Self {
            data,
            stride,
            width,
            height,
            layout,
            hold: None,
        })
    }

    /// The same rows, with `hold` as what keeps them valid, so that a backend may
    /// [`detach`](HostLuma::detach) them and read them after the submission returns.
    ///
    /// # Safety
    /// `hold` (and every clone of it) must keep the bytes of `data` valid and unchanged for
    /// as long as it lives, whatever happens to the borrow `'a`.
    pub unsafe fn held(self, hold: &'a Hold) -> Self {
        Self {
            hold: Some(hold),
            ..self
        }
    }

    /// The rows detached from the borrow `'a`, with a clone of their hold; `None` for rows
    /// without one (the caller copies them instead).
    pub fn detach(&self) -> Option<Detached<HostLuma<'static>>> {
        let hold = self.hold?.clone();
        let view = HostLuma {
            hold: None,
            ..*self
        };
        // SAFETY: `held`'s contract: the hold, kept next to the view in the `Detached`,
        // keeps `data` valid and unchanged while it lives, and `Detached::view` lends the
        // rows for no longer than the `Detached` (and so the hold) lives.
        let view = unsafe { std::mem::transmute::<HostLuma<'_>, HostLuma<'static>>(view) };
        Some(Detached { view, _hold: hold })
    }

    /// The `width * layout.bytes` bytes of row `y` (`y < height`; a view built with
    /// [`HostLuma::new`] always holds them, so out-of-range rows give an empty slice).
    #[inline]
    pub fn row_bytes(&self, y: usize) -> &'a [u8] {
        let start = y * self.stride;
        self.data
            .get(start..start + self.width * self.layout.bytes)
            .unwrap_or(&[])
    }

    /// Converts the rows into packed right-aligned `u16` samples at the scoring depth
    /// (`out` is resized to `width * height`).
    pub fn to_packed(&self, out: &mut Vec<u16>) {
        out.resize(self.width * self.height, 0);
        for (y, dst) in out.chunks_exact_mut(self.width).enumerate() {
            let row = self.row_bytes(y);
            if row.len() < self.width * self.layout.bytes {
                continue;
            }
            self.layout.convert_row(row, self.layout.bytes, dst);
        }
    }
}

/// A luma plane in CUDA device memory that the kernels can read where it lies.
///
/// `hold` keeps the memory valid (the GStreamer buffer and its CUDA mapping, or an imported
/// DMABuf) until the kernels that read it have finished; the GPU backend drops it then.
pub struct DeviceLuma {
    /// `CUdeviceptr` of sample (0, 0).
    pub ptr: u64,
    /// Bytes from one row to the next (even when samples are 2 bytes).
    pub pitch: usize,
    /// Width in samples.
    pub width: usize,
    /// Height in rows.
    pub height: usize,
    /// Sample storage and shifts.
    pub layout: SampleLayout,
    /// The `CUcontext` that owns the memory (as an address): the backend reads it in place
    /// when this is its own context and copies it peer-to-peer otherwise.
    pub context: usize,
    /// What must live until the kernels are done with the memory.
    pub hold: Box<dyn Send>,
}

impl std::fmt::Debug for DeviceLuma {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceLuma")
            .field("ptr", &format_args!("{:#x}", self.ptr))
            .field("pitch", &self.pitch)
            .field("width", &self.width)
            .field("height", &self.height)
            .field("layout", &self.layout)
            .field("context", &format_args!("{:#x}", self.context))
            .finish_non_exhaustive()
    }
}

/// One luma plane handed to a backend.
#[derive(Debug)]
pub enum LumaInput<'a> {
    /// Packed or strided right-aligned `u16` samples at the scoring depth.
    Packed(LumaPlane<'a>),
    /// Mapped host rows in the buffer's own layout (system memory, a read-back DMABuf).
    Host(HostLuma<'a>),
    /// Device memory (GStreamer CUDA memory, an imported DMABuf); only for the GPU backend.
    Device(DeviceLuma),
}

impl LumaInput<'_> {
    /// `(width, height)` in samples.
    pub fn size(&self) -> (usize, usize) {
        match self {
            LumaInput::Packed(p) => (p.width, p.height),
            LumaInput::Host(h) => (h.width, h.height),
            LumaInput::Device(d) => (d.width, d.height),
        }
    }
}

/// The two chroma components (Cb `[0]`, Cr `[1]`) of both frames of a pair, in some form `T`:
/// [`ChromaPair`] (packed planes) or [`ChromaInput`] (the buffers' own layouts).
#[derive(Debug, Clone, Copy)]
pub struct Chroma<T> {
    /// Cb and Cr of the reference frame.
    pub reference: [T; 2],
    /// Cb and Cr of the distorted frame.
    pub distorted: [T; 2],
}

/// The two chroma planes (Cb, Cr) of both frames of a pair, packed `u16` at the scoring
/// depth, for the CPU backend's metrics that read chroma (`psnr_cb`, `psnr_cr`,
/// SSIMULACRA2).
///
/// Each plane is the format's subsampled size (4:2:0: `ceil(w / 2) x ceil(h / 2)`); the two
/// frames' planes must have equal sizes and depth (the CPU backend refuses others with
/// [`FeatureError::WrongGeometry`]).
pub type ChromaPair<'a> = Chroma<LumaPlane<'a>>;

/// One colour component of a mapped frame in host memory, in the buffer's own layout: a
/// plane (Y, or planar Cb/Cr) or one component of an interleaved plane (NV12's UV, P010's
/// UV: `pixel_stride` bytes between samples, starting `offset` bytes into each row).
#[derive(Debug, Clone, Copy)]
pub struct HostComponent<'a> {
    /// The mapped bytes of the plane, starting at row 0.
    pub data: &'a [u8],
    /// Bytes from one row to the next.
    pub stride: usize,
    /// Bytes from one sample to the next (`layout.bytes` for a planar component).
    pub pixel_stride: usize,
    /// Bytes from the start of a row to its first sample of this component.
    pub offset: usize,
    /// Width in samples of this component.
    pub width: usize,
    /// Height in rows of this component.
    pub height: usize,
    /// Sample storage and shifts.
    pub layout: SampleLayout,
    /// What keeps `data` valid beyond the borrow ([`HostComponent::held`]).
    hold: Option<&'a Hold>,
}

impl<'a> HostComponent<'a> {
    /// Wraps a component. `None` when a dimension is zero, `layout.bytes` is not 1 or 2,
    /// `pixel_stride < layout.bytes`, or `data` is shorter than the geometry needs.
    pub fn new(
        data: &'a [u8],
        stride: usize,
        pixel_stride: usize,
        offset: usize,
        (width, height): (usize, usize),
        layout: SampleLayout,
    ) -> Option<Self> {
        if width == 0 || height == 0 || !(1..=2).contains(&layout.bytes) {
            return None;
        }
        if pixel_stride < layout.bytes {
            return None;
        }
        let row = (width - 1)
            .checked_mul(pixel_stride)?
            .checked_add(offset)?
            .checked_add(layout.bytes)?;
        let needed = (height - 1).checked_mul(stride)?.checked_add(row)?;
        (data.len() >= needed).then_some(Self {
            data,
            stride,
            pixel_stride,
            offset,
            width,
            height,
            layout,
            hold: None,
        })
    }

    /// The same component, with `hold` as what keeps it valid (see [`HostLuma::held`]).
    ///
    /// # Safety
    /// As [`HostLuma::held`]: `hold` keeps the bytes of `data` valid and unchanged while it
    /// (or a clone) lives.
    pub unsafe fn held(self, hold: &'a Hold) -> Self {
        Self {
            hold: Some(hold),
            ..self
        }
    }

    /// The component detached from the borrow `'a` (see [`HostLuma::detach`]); `None`
    /// without a hold.
    pub fn detach(&self) -> Option<Detached<HostComponent<'static>>> {
        let hold = self.hold?.clone();
        let view = HostComponent {
            hold: None,
            ..*self
        };
        // SAFETY: as in `HostLuma::detach`: `held`'s contract, and the view is lent for no
        // longer than the hold lives.
        let view =
            unsafe { std::mem::transmute::<HostComponent<'_>, HostComponent<'static>>(view) };
        Some(Detached { view, _hold: hold })
    }

    /// Converts the component into packed right-aligned `u16` samples at the scoring depth
    /// (`out` is resized to `width * height`).
    pub fn to_packed(&self, out: &mut Vec<u16>) {
        out.resize(self.width * self.height, 0);
        for (y, dst) in out.chunks_exact_mut(self.width).enumerate() {
            let start = y * self.stride + self.offset;
            let Some(row) = self.data.get(start..) else {
                continue;
            };
            self.layout.convert_row(row, self.pixel_stride, dst);
        }
    }
}

/// One colour component of a frame in device memory (GStreamer CUDA memory, an imported
/// DMABuf), in the buffer's own layout: the device counterpart of [`HostComponent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceComponent {
    /// `CUdeviceptr` of row 0 of the plane that holds the component.
    pub ptr: u64,
    /// Bytes from one row to the next.
    pub pitch: usize,
    /// Bytes from one sample to the next (`layout.bytes` for a planar component, 2x that for
    /// NV12/P010's interleaved UV).
    pub pixel_stride: usize,
    /// Bytes from the start of a row to its first sample of this component.
    pub offset: usize,
    /// Width in samples.
    pub width: usize,
    /// Height in rows.
    pub height: usize,
    /// Sample storage and shifts.
    pub layout: SampleLayout,
    /// The `CUcontext` (as an address) the pointer belongs to.
    pub context: usize,
}

impl DeviceComponent {
    /// Bytes of a row that carry this component's samples: `offset + (width - 1) *
    /// pixel_stride + layout.bytes` (0 for an empty component).
    pub fn row_bytes(&self) -> usize {
        component_row_bytes(
            self.offset,
            self.width,
            self.pixel_stride,
            self.layout.bytes,
        )
    }
}

impl HostComponent<'_> {
    /// Bytes of a row that carry this component's samples (see
    /// [`DeviceComponent::row_bytes`]).
    pub fn row_bytes(&self) -> usize {
        component_row_bytes(
            self.offset,
            self.width,
            self.pixel_stride,
            self.layout.bytes,
        )
    }
}

fn component_row_bytes(offset: usize, width: usize, pixel_stride: usize, bytes: usize) -> usize {
    if width == 0 {
        return 0;
    }
    offset + (width - 1) * pixel_stride + bytes
}

/// One chroma component as a backend receives it: host rows or device memory.
#[derive(Debug, Clone, Copy)]
pub enum ComponentInput<'a> {
    /// Mapped in host memory for the duration of the submission.
    Host(HostComponent<'a>),
    /// Device memory, valid until the frame's luma `hold` is released (the same buffer).
    Device(DeviceComponent),
}

impl ComponentInput<'_> {
    /// `(width, height)` in samples.
    pub fn size(&self) -> (usize, usize) {
        match self {
            ComponentInput::Host(h) => (h.width, h.height),
            ComponentInput::Device(d) => (d.width, d.height),
        }
    }
}

/// Cb (`[0]`) and Cr (`[1]`) of both frames of a pair in their buffers' own layouts, for a
/// backend that unpacks them itself (the CUDA backend does it on the GPU). The two frames'
/// components must have the same size.
pub type ChromaInput<'a> = Chroma<ComponentInput<'a>>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes with every bit pattern likely (garbage above the depth included).
    fn noise(n: usize, mut seed: u32) -> Vec<u8> {
        (0..n)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 17;
                seed ^= seed << 5;
                seed as u8
            })
            .collect()
    }

    /// The conversion loops give, sample for sample, [`SampleLayout::sample`]'s values: 1-
    /// and 2-byte samples, left- and right-aligned, depth raised, planar and interleaved,
    /// odd widths, a plane that ends at its last sample.
    #[test]
    fn conversion_loops_equal_the_sample_formula() {
        let layouts = [
            (1, 0, 8, 0),
            (1, 0, 8, 2),
            (2, 0, 10, 0),
            (2, 0, 10, 2),
            (2, 0, 12, 0),
            (2, 6, 10, 0),
            (2, 4, 12, 0),
            (2, 0, 16, 0),
        ];
        for (k, &(bytes, down, depth, up)) in layouts.iter().enumerate() {
            let layout = SampleLayout {
                bytes,
                down,
                depth,
                up,
            };
            for (w, h) in [(1, 1), (7, 3), (33, 5)] {
                let stride = w * bytes * 2 + 3;
                let data = noise(stride * h, 0x9e37_79b9 ^ k as u32);
                let luma = HostLuma::new(&data, stride, w, h, layout).unwrap();
                let mut got = Vec::new();
                luma.to_packed(&mut got);
                for y in 0..h {
                    for x in 0..w {
                        let want = layout.sample(&data[y * stride..], x);
                        assert_eq!(got[y * w + x], want, "luma {layout:?} {w}x{h} ({x}, {y})");
                    }
                }
                for (pixel_stride, offset) in [(bytes, 0), (2 * bytes, 0), (2 * bytes, bytes)] {
                    // The plane ends right after the last row's last sample.
                    let len = (h - 1) * stride + offset + (w - 1) * pixel_stride + bytes;
                    let c = HostComponent::new(
                        &data[..len],
                        stride,
                        pixel_stride,
                        offset,
                        (w, h),
                        layout,
                    )
                    .unwrap();
                    let mut got = Vec::new();
                    c.to_packed(&mut got);
                    for y in 0..h {
                        for x in 0..w {
                            let at = y * stride + offset + x * pixel_stride;
                            let want = layout.sample(&data[at..], 0);
                            assert_eq!(
                                got[y * w + x],
                                want,
                                "component {layout:?} stride {pixel_stride} offset {offset} \
                                 {w}x{h} ({x}, {y})"
                            );
                        }
                    }
                }
            }
        }
    }
}
