//! Frame import: a buffer's luma and chroma as the backend reads them ([`MappedLuma`]):
//! system memory mapped in place, CUDA memory by device pointer, DMABuf imported into CUDA or
//! read back, and the path a pad's frames took.

use std::os::fd::BorrowedFd;
use std::sync::Arc;

use gst::glib;

use super::caps::{component_offset, sample_bytes, PadVideo};
use super::util::CAT;
use crate::cuda::context::PeerAccess;
use crate::cuda::gst_cuda;
use crate::cuda::GpuDevice;
use crate::engine::{
    ComponentInput, DeviceComponent, DeviceLuma, HostComponent, HostLuma, LumaInput, SampleLayout,
};
use crate::video::frame::Hold;
use crate::vmafcompare::InputPath;

/// One pad's luma plane, mapped for the backend for the time of one submission.
// Lives on the stack for one call; boxing the mapped frame would allocate per frame.
#[allow(clippy::large_enum_variant)]
pub(super) enum MappedLuma<'a> {
    /// Mapped in host memory until the submission returns.
    Host {
        frame: gst_video::VideoFrameRef<&'a gst::BufferRef>,
        layout: SampleLayout,
    },
    /// Mapped in host memory for as long as the backend keeps `hold` (a clone of `frame`):
    /// for a backend that reads the rows after the submission returns
    /// ([`Scorer::defers_host_rows`]: the CPU backend's workers convert them).
    Held {
        frame: Arc<gst_video::VideoFrame<gst_video::video_frame::Readable>>,
        hold: Hold,
        layout: SampleLayout,
    },
    /// Device memory, moved into the backend by the submission (`None` afterwards), with
    /// the frame's chroma components in the same memory (`None` for grey formats).
    Device(Option<DeviceLuma>, Option<[DeviceComponent; 2]>),
}

/// `(CUdeviceptr, pitch)` of a frame's planes 0..3 in device memory (`(0, 0)` past the
/// format's planes).
pub(super) type DevicePlanes = [(u64, usize); 3];

/// Where chroma component `c` (1: Cb, 2: Cr) of a `w` x `h` frame of format `finfo` lies:
/// `(plane, (width, height), pixel_stride, offset, layout)` with samples raised to `bpc`;
/// `offset` is in bytes ([`component_offset`]).
pub(super) fn component_geometry(
    finfo: &gst_video::VideoFormatInfo,
    (w, h): (u32, u32),
    c: usize,
    bpc: u32,
) -> (usize, (usize, usize), usize, usize, SampleLayout) {
    let bytes = sample_bytes(finfo);
    let depth = finfo.depth()[c];
    let layout = SampleLayout {
        bytes,
        down: finfo.shift()[c],
        depth,
        up: bpc.saturating_sub(depth),
    };
    (
        finfo.plane()[c] as usize,
        (
            finfo.scale_width(c as u8, w) as usize,
            finfo.scale_height(c as u8, h) as usize,
        ),
        finfo.pixel_stride()[c].max(0) as usize,
        component_offset(finfo, c),
        layout,
    )
}

/// The Cb and Cr components of a frame in device memory whose planes 1 and 2 start at
/// `planes` (`(ptr, pitch)`), or `None` for formats without chroma.
pub(super) fn device_components(
    finfo: &gst_video::VideoFormatInfo,
    size: (u32, u32),
    bpc: u32,
    planes: [(u64, usize); 2],
    context: usize,
) -> Option<[DeviceComponent; 2]> {
    if finfo.n_components() < 3 {
        return None;
    }
    let comp = |c: usize| -> Option<DeviceComponent> {
        let (plane, (width, height), pixel_stride, offset, layout) =
            component_geometry(finfo, size, c, bpc);
        let (ptr, pitch) = *planes.get(plane.checked_sub(1)?)?;
        (ptr != 0 && pixel_stride >= layout.bytes).then_some(DeviceComponent {
            ptr,
            pitch,
            pixel_stride,
            offset,
            width,
            height,
            layout,
            context,
        })
    };
    Some([comp(1)?, comp(2)?])
}

impl MappedLuma<'_> {
    /// The backend's view of the plane.
    pub(super) fn input(&mut self) -> Result<LumaInput<'_>, String> {
        match self {
            MappedLuma::Host { frame, layout } => host_luma(frame, *layout, None),
            MappedLuma::Held {
                frame,
                hold,
                layout,
            } => host_luma(&**frame, *layout, Some(hold)),
            MappedLuma::Device(d, _) => take_device(d),
        }
    }

    /// The backend's view of the luma plane and, when `chroma`, of the Cb and Cr components
    /// (`None` for formats without chroma).
    ///
    /// Errors: as [`MappedLuma::input`] and [`MappedLuma::components`].
    #[allow(clippy::type_complexity)]
    pub(super) fn inputs(
        &mut self,
        bpc: u32,
        chroma: bool,
    ) -> Result<(LumaInput<'_>, Option<[ComponentInput<'_>; 2]>), String> {
        match self {
            MappedLuma::Host { frame, layout } => {
                let c = if chroma {
                    host_components(frame, bpc, None)?
                } else {
                    None
                };
                Ok((host_luma(frame, *layout, None)?, c))
            }
            MappedLuma::Held {
                frame,
                hold,
                layout,
            } => {
                let c = if chroma {
                    host_components(&**frame, bpc, Some(hold))?
                } else {
                    None
                };
                Ok((host_luma(&**frame, *layout, Some(hold))?, c))
            }
            MappedLuma::Device(d, c) => {
                let c = c.filter(|_| chroma).map(|c| c.map(ComponentInput::Device));
                Ok((take_device(d)?, c))
            }
        }
    }
}

impl MappedLuma<'_> {
    /// The Cb and Cr components of the frame at `bpc` bits, in host or device memory.
    /// `Ok(None)` for formats without chroma (GRAY8).
    ///
    /// Errors: a text when a component does not fit the mapped plane.
    pub(super) fn components(&self, bpc: u32) -> Result<Option<[ComponentInput<'_>; 2]>, String> {
        match self {
            MappedLuma::Device(_, c) => Ok(c.map(|c| c.map(ComponentInput::Device))),
            MappedLuma::Host { frame, .. } => host_components(frame, bpc, None),
            MappedLuma::Held { frame, hold, .. } => host_components(&**frame, bpc, Some(hold)),
        }
    }

    /// Packs the Cb and Cr components of a host-mapped frame into `out` at `bpc` bits (for
    /// the CPU backend). Returns their size, or `None` when the format has no chroma.
    ///
    /// Errors: as [`MappedLuma::components`]; device memory (the CPU backend maps frames in
    /// host memory).
    pub(super) fn pack_chroma(
        &self,
        bpc: u32,
        out: &mut [Vec<u16>; 2],
    ) -> Result<Option<(usize, usize)>, String> {
        let Some(comps) = self.components(bpc)? else {
            return Ok(None);
        };
        let mut size = (0, 0);
        for (comp, dst) in comps.iter().zip(out.iter_mut()) {
            let ComponentInput::Host(h) = comp else {
                return Err("internal: device chroma given to the CPU backend".into());
            };
            h.to_packed(dst);
            size = (h.width, h.height);
        }
        Ok(Some(size))
    }
}

/// A frame mapped in host memory: borrowed for one submission, or owned (held).
pub(super) trait HostFrame: gst_video::video_frame::VideoFrameExt {
    /// The mapped bytes of plane `plane`.
    fn bytes(&self, plane: u32) -> Result<&[u8], glib::BoolError>;
}

impl HostFrame for gst_video::VideoFrameRef<&gst::BufferRef> {
    fn bytes(&self, plane: u32) -> Result<&[u8], glib::BoolError> {
        self.plane_data(plane)
    }
}

impl HostFrame for gst_video::VideoFrame<gst_video::video_frame::Readable> {
    fn bytes(&self, plane: u32) -> Result<&[u8], glib::BoolError> {
        self.plane_data(plane)
    }
}

/// The luma plane of a host-mapped frame; with `hold` (what keeps `frame` mapped) when the
/// backend reads it later.
pub(super) fn host_luma<'b, F: HostFrame>(
    frame: &'b F,
    layout: SampleLayout,
    hold: Option<&'b Hold>,
) -> Result<LumaInput<'b>, String> {
    let (w, h) = (frame.width() as usize, frame.height() as usize);
    let stride = frame.plane_stride()[0] as usize;
    let data = frame
        .bytes(0)
        .map_err(|e| format!("cannot read the luma plane: {e}"))?;
    HostLuma::new(data, stride, w, h, layout)
        .map(|l| match hold {
            // SAFETY: `hold` is an `Arc` of the owned, readable video frame `data` was taken
            // from: its mapping (and its reference to the buffer, which keeps anyone from
            // mapping the buffer for writing) lasts as long as the hold or a clone does.
            Some(hold) => unsafe { l.held(hold) },
            None => l,
        })
        .map(LumaInput::Host)
        .ok_or_else(|| {
            format!(
                "luma plane holds {} bytes, fewer than {w}x{h} samples at stride {stride}",
                data.len()
            )
        })
}

/// Moves a device plane out of its mapping (once).
pub(super) fn take_device(d: &mut Option<DeviceLuma>) -> Result<LumaInput<'static>, String> {
    d.take()
        .map(LumaInput::Device)
        .ok_or_else(|| "internal: device plane submitted twice".into())
}

/// The Cb and Cr components of a host-mapped frame at `bpc` bits (lower-depth streams
/// shifted up, as their luma); `Ok(None)` for formats without chroma (GRAY8).
///
/// Errors: a text when a component does not fit the mapped plane.
pub(super) fn host_components<'b, F: HostFrame>(
    frame: &'b F,
    bpc: u32,
    hold: Option<&'b Hold>,
) -> Result<Option<[ComponentInput<'b>; 2]>, String> {
    let finfo = frame.format_info();
    if finfo.n_components() < 3 {
        return Ok(None);
    }
    let comp = |c: usize| -> Result<ComponentInput<'b>, String> {
        let (plane, (cw, ch), pixel_stride, offset, layout) =
            component_geometry(&finfo, (frame.width(), frame.height()), c, bpc);
        let stride = frame.plane_stride().get(plane).copied().unwrap_or(0).max(0) as usize;
        let data = frame
            .bytes(plane as u32)
            .map_err(|e| format!("cannot read chroma plane {plane}: {e}"))?;
        HostComponent::new(data, stride, pixel_stride, offset, (cw, ch), layout)
            .map(|c| match hold {
                // SAFETY: as in `host_luma`: `hold` owns the mapping `data` comes from.
                Some(hold) => unsafe { c.held(hold) },
                None => c,
            })
            .map(ComponentInput::Host)
            .ok_or_else(|| {
                format!(
                    "chroma plane {plane} holds {} bytes, fewer than {cw}x{ch} samples at stride {stride}",
                    data.len()
                )
            })
    };
    Ok(Some([comp(1)?, comp(2)?]))
}

impl<'a> MappedLuma<'a> {
    /// Maps the luma plane of `buffer` (a frame of `video`, samples raised to `bpc` bits) for
    /// the backend: in place on the GPU when it is CUDA memory (or an importable DMABuf) and
    /// the backend reads device memory (`gpu` given), else mapped in host memory: with
    /// `defers` (the backend reads host rows after the submission,
    /// [`crate::engine::Scorer::defers_host_rows`]) as an owned frame whose `Arc` is the
    /// rows' hold. Returns the mapping and the path taken. A DMABuf the driver refuses sets
    /// `dmabuf_refused` (logged at info level on `element`): later frames are read back
    /// through host memory without trying again.
    ///
    /// Errors: a text naming what failed (the map, the layout).
    pub(super) fn map(
        element: &gst::Element,
        video: &PadVideo,
        buffer: &'a gst::Buffer,
        bpc: u32,
        gpu: Option<&GpuDevice>,
        defers: bool,
        dmabuf_refused: &mut bool,
    ) -> Result<(Self, InputPath), String> {
        let finfo = video.info.format_info();
        let bytes = sample_bytes(&finfo);
        if finfo.pixel_stride()[0] as usize != bytes || finfo.poffset()[0] != 0 {
            return Err(format!(
                "format {} has interleaved luma, which is not supported",
                video.info.format().to_str()
            ));
        }
        let layout = SampleLayout {
            bytes,
            down: finfo.shift()[0],
            depth: video.depth,
            up: bpc.saturating_sub(video.depth),
        };
        let (w, h) = (video.info.width() as usize, video.info.height() as usize);
        let single = buffer.n_memory() == 1;
        let mem = (buffer.n_memory() > 0).then(|| buffer.peek_memory(0));
        let lib = gst_cuda::library();
        let is_cuda = matches!((lib, mem), (Some(l), Some(m)) if single && l.is_cuda_memory(m));
        let dmabuf = mem.and_then(|m| m.downcast_memory_ref::<gst_allocators::DmaBufMemory>());
        if let (Some(dev), Some(lib)) = (gpu, lib.filter(|_| is_cuda)) {
            let plane = lib.map_device(buffer).map_err(|e| e.to_string())?;
            let own = dev.context().cu_ctx() as usize;
            let path = if plane.context == own {
                InputPath::Cuda
            } else {
                InputPath::CudaPeerCopy
            };
            let chroma = device_components(
                &finfo,
                (w as u32, h as u32),
                bpc,
                plane.chroma_planes,
                plane.context,
            );
            let luma = DeviceLuma {
                ptr: plane.ptr,
                pitch: plane.pitch,
                width: w,
                height: h,
                layout,
                context: plane.context,
                hold: Box::new(plane.mapping),
            };
            return Ok((MappedLuma::Device(Some(luma), chroma), path));
        }
        if let (Some(dev), Some(dm)) = (gpu, dmabuf.filter(|_| single && !*dmabuf_refused)) {
            match import_dmabuf(dev, dm, buffer, &video.info) {
                Ok((planes, hold)) => {
                    let context = dev.context().cu_ctx() as usize;
                    let chroma = device_components(
                        &finfo,
                        (w as u32, h as u32),
                        bpc,
                        [planes[1], planes[2]],
                        context,
                    );
                    let luma = DeviceLuma {
                        ptr: planes[0].0,
                        pitch: planes[0].1,
                        width: w,
                        height: h,
                        layout,
                        context,
                        hold,
                    };
                    return Ok((
                        MappedLuma::Device(Some(luma), chroma),
                        InputPath::DmabufImport,
                    ));
                }
                Err(e) => {
                    *dmabuf_refused = true;
                    gst::info!(
                        CAT,
                        obj = element,
                        "DMABuf import refused ({e}): reading DMABuf frames back through host memory"
                    );
                }
            }
        }
        let path = if is_cuda {
            InputPath::CudaDownload
        } else if dmabuf.is_some() {
            InputPath::DmabufReadback
        } else {
            InputPath::System
        };
        if defers {
            // The backend reads the rows after this submission: the frame keeps its own
            // reference to the buffer, mapped until the backend drops the hold.
            let frame = gst_video::VideoFrame::from_buffer_readable(buffer.clone(), &video.info)
                .map_err(|_| "cannot map buffer".to_owned())?;
            let frame = Arc::new(frame);
            let hold: Hold = frame.clone();
            return Ok((
                MappedLuma::Held {
                    frame,
                    hold,
                    layout,
                },
                path,
            ));
        }
        let frame =
            gst_video::VideoFrameRef::from_buffer_ref_readable(buffer.as_ref(), &video.info)
                .map_err(|e| format!("cannot map buffer: {e}"))?;
        Ok((MappedLuma::Host { frame, layout }, path))
    }

    /// Logs on `element` the first use of `path` on `pad` (the caller keeps which paths a
    /// pad took); a CUDA peer copy is reported with its devices ([`report_peer_path`]).
    pub(super) fn report_path(
        &self,
        element: &gst::Element,
        pad: &str,
        path: InputPath,
        gpu: Option<&GpuDevice>,
    ) {
        gst::debug!(
            CAT,
            obj = element,
            "{pad} frames reach the backend via '{}'",
            path.name()
        );
        if let (Some(dev), MappedLuma::Device(Some(d), _)) = (gpu, self) {
            if path == InputPath::CudaPeerCopy {
                report_peer_path(element, pad, dev, d.ptr, d.context);
            }
        }
    }
}

/// Imports the DMABuf of a single-memory `buffer` into the GPU's context and locates its
/// planes. Returns `(device pointer, pitch)` of planes 0..3 (`(0, 0)` past the format's
/// planes) and the hold.
///
/// Errors: a text when the memory has no file descriptor, the driver refuses it, or a plane
/// would pass its end.
fn import_dmabuf(
    dev: &GpuDevice,
    mem: &gst_allocators::DmaBufMemoryRef,
    buffer: &gst::Buffer,
    info: &gst_video::VideoInfo,
) -> Result<(DevicePlanes, Box<dyn Send>), String> {
    let fd = mem.fd();
    if fd < 0 {
        return Err("DMABuf memory without a file descriptor".into());
    }
    // SAFETY: the memory owns `fd` and outlives this call (the buffer holds it).
    let fd = unsafe { BorrowedFd::borrow_raw(fd) };
    // A dma-buf's size is what lseek to its end reports.
    let size = {
        let dup = fd.try_clone_to_owned().map_err(|e| e.to_string())?;
        let mut file = std::fs::File::from(dup);
        std::io::Seek::seek(&mut file, std::io::SeekFrom::End(0)).map_err(|e| e.to_string())?
    };
    let imported = dev.import_dmabuf(fd, size).map_err(|e| e.to_string())?;
    let (offsets, strides): (Vec<usize>, Vec<usize>) = match buffer.meta::<gst_video::VideoMeta>() {
        Some(m) => (
            m.offset().to_vec(),
            m.stride().iter().map(|s| (*s).max(0) as usize).collect(),
        ),
        None => (
            info.offset().to_vec(),
            info.stride().iter().map(|s| (*s).max(0) as usize).collect(),
        ),
    };
    let finfo = info.format_info();
    let mut planes = [(0u64, 0usize); 3];
    for (p, slot) in planes.iter_mut().enumerate().take(info.n_planes() as usize) {
        let (Some(&offset), Some(&stride)) = (offsets.get(p), strides.get(p)) else {
            continue;
        };
        // The plane's rows and the bytes of its last row that carry samples.
        let comps: Vec<usize> = (0..finfo.n_components() as usize)
            .filter(|&c| finfo.plane()[c] as usize == p)
            .collect();
        let Some(&c) = comps.first() else { continue };
        let rows = finfo.scale_height(c as u8, info.height()) as usize;
        let bytes = sample_bytes(&finfo);
        let row = comps
            .iter()
            .map(|&c| {
                let w = finfo.scale_width(c as u8, info.width()) as usize;
                let pixel_stride = finfo.pixel_stride()[c].max(1) as usize;
                w.checked_sub(1).map_or(0, |last| {
                    component_offset(&finfo, c) + last * pixel_stride + bytes
                })
            })
            .max()
            .unwrap_or(0);
        let start = mem.offset() + offset;
        let needed = stride
            .checked_mul(rows.saturating_sub(1))
            .and_then(|n| n.checked_add(start))
            .and_then(|n| n.checked_add(row))
            .unwrap_or(usize::MAX);
        if needed > imported.len() {
            return Err(format!(
                "DMABuf of {} bytes, {needed} needed for plane {p}",
                imported.len()
            ));
        }
        *slot = (imported.ptr() + start as u64, stride);
    }
    Ok((planes, Box::new((imported, buffer.clone()))))
}

/// Says once per pad how CUDA memory of another context reaches `element`'s device:
/// at info level when it is copied on the device or peer-to-peer (peer access enabled),
/// as an element warning when the two devices have no peer access and the driver stages
/// every copy through host memory.
fn report_peer_path(element: &gst::Element, pad: &str, dev: &GpuDevice, ptr: u64, context: usize) {
    let to = dev.ordinal();
    match dev.peer_access(ptr, context) {
        Ok(PeerAccess::SameDevice) => gst::info!(
            CAT,
            obj = element,
            "{pad}: CUDA memory of another context on device {to}, copied on the device"
        ),
        Ok(PeerAccess::Direct { from }) => gst::info!(
            CAT,
            obj = element,
            "{pad}: CUDA memory of device {from} copied peer-to-peer to device {to} \
                 (peer access enabled, no host round trip)"
        ),
        Ok(PeerAccess::Staged { from }) => gst::element_warning!(
            element,
            gst::ResourceError::Settings,
            ("{pad}: frames in CUDA memory of device {from} reach device-id={to} through \
                     host memory: the two GPUs have no peer access. Scores are unaffected; \
                     for speed decode on device {to} or set device-id={from}")
        ),
        Err(e) => gst::element_warning!(
            element,
            gst::ResourceError::Settings,
            ("{pad}: frames in CUDA memory of another device are copied by the driver; \
                     peer access could not be set up: {e}")
        ),
    }
}
