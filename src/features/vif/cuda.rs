//! Host side of `kernels/vif.cu`: integer VIF at four scales on the GPU.
//!
//! The kernels add four 64-bit integer sums per scale; [`VifGpu::scores`] turns them into
//! libvmaf's `float` numerator and denominator with the same expression, in the same order and
//! precision, as the CPU path, so the scores are bit-identical.
//!
//! Source: Netflix/vmaf v3.2.0, libvmaf/src/feature/integer_vif.c; oracle:
//! [`super::cpu`].

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaStream, CudaViewMut, DevicePtr, DevicePtrMut};

use super::params::{VifConfig, VifScores};
use crate::cuda::context::{function, launch, param, GpuDevice};
use crate::cuda::error::{CudaError, DriverResultExt};
use crate::cuda::memory::{alloc_copy, alloc_zeroed, DeviceAlloc};
use crate::cuda::plane::DevPlane;
use crate::video::frame::SampleLayout;

/// Output tile of the VIF kernels (columns x rows) and their block shape.
const TILE: (usize, usize) = (32, 16);
const BLOCK: (u32, u32, u32) = (32, 8, 1);
/// Distorted planes of one `vif_stat0*_ladder` launch (`LADDER_MAX` in `kernels/vif.cu`).
pub const LADDER_MAX: usize = 8;

/// The VIF kernels, the log2 table and the decimated planes of scales 1..=3 for one geometry.
pub struct VifGpu {
    stat0_narrow: CudaFunction,
    stat: [CudaFunction; 4],
    sub: [CudaFunction; 3],
    /// A ladder's kernels: scale 0 of one reference against several distorted planes (8-bit,
    /// wider), and one plane's subsampling into scales 1..=3.
    stat0_ladder: [CudaFunction; 2],
    sub_one: [CudaFunction; 3],
    /// `log2_table[i] = round(log2f(i) * 2048)` for `i >= 32767`, 0 below (65536 entries).
    log2_table: DeviceAlloc<u16>,
    /// Reference / distorted planes of scales 1..=3, packed, `(w >> s) * (h >> s)` samples.
    scaled_ref: [DeviceAlloc<u16>; 3],
    scaled_dis: [DeviceAlloc<u16>; 3],
    /// A ladder's batched kernels of scales 1..=3: subsampling, statistic.
    sub_ladder: [CudaFunction; 3],
    stat_ladder: [CudaFunction; 3],
    /// Scale 1's statistic of a ladder with the reference's tile filtered once per block.
    stat1_shared: CudaFunction,
    /// A ladder's distorted planes of scales 1..=3 for `n` renditions at once, rendition `z`'s
    /// `z`-th share of each ([`VifGpu::prepare_renditions`]).
    renditions: Option<(usize, [DeviceAlloc<u16>; 3])>,
    width: usize,
    height: usize,
    bpc: u32,
}

/// libvmaf's log2 table, computed exactly as [`super::cpu`] computes it.
fn log2_table() -> Vec<u16> {
    let mut t = vec![0u16; 65536];
    for (i, v) in t.iter_mut().enumerate().skip(32767) {
        let l = (i as f64).log2() as f32 * 2048.0f32;
        *v = f64::from(l).round() as u16;
    }
    t
}

fn grid(w: usize, h: usize) -> (u32, u32, u32) {
    (w.div_ceil(TILE.0) as u32, h.div_ceil(TILE.1) as u32, 1)
}

impl VifGpu {
    /// `u64` words [`VifGpu::enqueue`] writes per frame: for each scale 0..=3 the sums
    /// `num_log`, `den_log`, `num_non_log`, `den_non_log` (two's complement `i64`).
    pub const RESULT_WORDS: usize = 16;

    /// Loads the kernels, uploads the log2 table and allocates the scaled planes (on
    /// `stream`, which is synchronised before returning) for `width` x `height` planes of
    /// `bpc` bits. The caller checks the geometry (at least
    /// [`super::MIN_WIDTH`] x [`super::MIN_HEIGHT`], `bpc` in `8..=16`).
    ///
    /// Errors: [`CudaError::Driver`] (kernel lookup, copy), [`CudaError::OutOfMemory`].
    pub fn new(
        dev: &GpuDevice,
        stream: &Arc<CudaStream>,
        width: usize,
        height: usize,
        bpc: u32,
    ) -> Result<Self, CudaError> {
        let m = dev.modules().get("vif")?;
        let stat0_narrow = function(
            m,
            "vif_stat0_narrow",
            "cuModuleGetFunction(vif_stat0_narrow)",
        )?;
        let stat = [
            function(m, "vif_stat0", "cuModuleGetFunction(vif_stat0)")?,
            function(m, "vif_stat1", "cuModuleGetFunction(vif_stat1)")?,
            function(m, "vif_stat2", "cuModuleGetFunction(vif_stat2)")?,
            function(m, "vif_stat3", "cuModuleGetFunction(vif_stat3)")?,
        ];
        let sub = [
            function(m, "vif_sub1", "cuModuleGetFunction(vif_sub1)")?,
            function(m, "vif_sub2", "cuModuleGetFunction(vif_sub2)")?,
            function(m, "vif_sub3", "cuModuleGetFunction(vif_sub3)")?,
        ];
        let stat0_ladder = [
            function(
                m,
                "vif_stat0_narrow_ladder",
                "cuModuleGetFunction(vif_stat0_narrow_ladder)",
            )?,
            function(
                m,
                "vif_stat0_ladder",
                "cuModuleGetFunction(vif_stat0_ladder)",
            )?,
        ];
        let sub_one = [
            function(m, "vif_sub1_one", "cuModuleGetFunction(vif_sub1_one)")?,
            function(m, "vif_sub2_one", "cuModuleGetFunction(vif_sub2_one)")?,
            function(m, "vif_sub3_one", "cuModuleGetFunction(vif_sub3_one)")?,
        ];
        let sub_ladder = [
            function(m, "vif_sub1_ladder", "cuModuleGetFunction(vif_sub1_ladder)")?,
            function(m, "vif_sub2_ladder", "cuModuleGetFunction(vif_sub2_ladder)")?,
            function(m, "vif_sub3_ladder", "cuModuleGetFunction(vif_sub3_ladder)")?,
        ];
        let stat_ladder = [
            function(
                m,
                "vif_stat1_ladder",
                "cuModuleGetFunction(vif_stat1_ladder)",
            )?,
            function(
                m,
                "vif_stat2_ladder",
                "cuModuleGetFunction(vif_stat2_ladder)",
            )?,
            function(
                m,
                "vif_stat3_ladder",
                "cuModuleGetFunction(vif_stat3_ladder)",
            )?,
        ];
        let stat1_shared = function(
            m,
            "vif_stat1_shared",
            "cuModuleGetFunction(vif_stat1_shared)",
        )?;
        let table = log2_table();
        let log2_table = alloc_copy(stream, &table[..], "cuMemAlloc(vif log2 table)")?;
        let plane = |s: usize| -> Result<DeviceAlloc<u16>, CudaError> {
            alloc_zeroed::<u16>(
                stream,
                (width >> s) * (height >> s),
                "cuMemAlloc(vif scaled plane)",
            )
        };
        let scaled_ref = [plane(1)?, plane(2)?, plane(3)?];
        let scaled_dis = [plane(1)?, plane(2)?, plane(3)?];
        // The table's host copy is freed on return: the upload must be done.
        stream
            .synchronize()
            .during("cuStreamSynchronize(vif init)")?;
        Ok(Self {
            stat0_narrow,
            stat,
            sub,
            stat0_ladder,
            sub_one,
            log2_table,
            scaled_ref,
            scaled_dis,
            sub_ladder,
            stat_ladder,
            stat1_shared,
            renditions: None,
            width,
            height,
            bpc,
        })
    }

    /// Enqueues on `stream` the four scales of VIF of `distorted` against `reference`
    /// (`width * height` planes, see [`DevPlane`]'s contract) into `out[0..16]` (zeroed first). Bit-identical to
    /// [`super::cpu::Vif::compute`] after [`VifGpu::scores`].
    ///
    /// Errors: [`CudaError::Driver`] for a failed memset or launch.
    pub fn enqueue(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: DevPlane,
        cfg: &VifConfig,
        out: &mut CudaViewMut<u64>,
    ) -> Result<(), CudaError> {
        stream
            .memset_zeros(out)
            .during("cuMemsetD8Async(vif sums)")?;
        let mut limit = cfg.enhn_gain_limit;
        let mut tab = self.log2_table.device_ptr(stream).0;
        let out_base = out.device_ptr_mut(stream).0;
        let bpc = self.bpc;

        // Scale 0 from the input planes.
        let (mut p_ref, mut p_dis) = (reference, distorted);
        let (mut w, mut h) = (self.width as i32, self.height as i32);
        let mut acc = out_base;
        if bpc == 8 {
            // SAFETY: vif_stat0_narrow(Plane, Plane, i32, i32, const u16*, f64, u64*); the
            // planes hold w * h samples (the caller's contract), table of 65536, acc of 4
            // words, all live until the stream has run (the owner synchronises before freeing).
            unsafe {
                launch(
                    stream,
                    &self.stat0_narrow,
                    grid(self.width, self.height),
                    BLOCK,
                    &mut [
                        param(&mut p_ref),
                        param(&mut p_dis),
                        param(&mut w),
                        param(&mut h),
                        param(&mut tab),
                        param(&mut limit),
                        param(&mut acc),
                    ],
                    "cuLaunchKernel(vif_stat0_narrow)",
                )?;
            }
        } else {
            let sq = 2 * (bpc - 8);
            self.stat_wide(
                stream,
                0,
                (p_ref, p_dis),
                (self.width, self.height),
                (1 << (bpc - 1), bpc, 1 << (sq - 1), sq),
                limit,
                out_base,
            )?;
        }

        // Scales 1..=3: subsample the previous scale, then the statistic.
        let (mut sw, mut sh) = (self.width, self.height);
        for s in 1..4usize {
            let (round, shift) = if s == 1 {
                (1u32 << (bpc - 1), bpc)
            } else {
                (32768, 16)
            };
            let (mut round, mut shift) = (round, shift);
            let mut o_ref = self.scaled_ref[s - 1].device_ptr_mut(stream).0;
            let mut o_dis = self.scaled_dis[s - 1].device_ptr_mut(stream).0;
            let (next_ref, next_dis) = (
                DevPlane::packed_u16(&self.scaled_ref[s - 1], sw / 2, stream),
                DevPlane::packed_u16(&self.scaled_dis[s - 1], sw / 2, stream),
            );
            let (mut w, mut h) = (sw as i32, sh as i32);
            // SAFETY: vif_subN(Plane, Plane, i32, i32, u32, u32, u16*, u16*); the
            // inputs hold w * h samples, the outputs (w / 2) * (h / 2), all owned by self or
            // the caller and live until the stream has run.
            unsafe {
                launch(
                    stream,
                    &self.sub[s - 1],
                    grid(sw / 2, sh / 2),
                    BLOCK,
                    &mut [
                        param(&mut p_ref),
                        param(&mut p_dis),
                        param(&mut w),
                        param(&mut h),
                        param(&mut round),
                        param(&mut shift),
                        param(&mut o_ref),
                        param(&mut o_dis),
                    ],
                    "cuLaunchKernel(vif_sub)",
                )?;
            }
            sw /= 2;
            sh /= 2;
            p_ref = next_ref;
            p_dis = next_dis;
            self.stat_wide(
                stream,
                s,
                (p_ref, p_dis),
                (sw, sh),
                (32768, 16, 32768, 16),
                limit,
                out_base + (s * 4 * 8) as u64,
            )?;
        }
        Ok(())
    }

    /// [`VifGpu::enqueue`] of one reference against several distorted planes (a ladder's
    /// renditions), `distorted[i]`'s sums into `outs[i]`: scale 0 in one kernel per
    /// [`LADDER_MAX`] planes that loads and filters the reference's tile once and each
    /// distorted plane's after it; the reference's scales 1..=3 subsampled once; then, per
    /// distorted plane, its own subsampling and the statistic of scales 1..=3 against the
    /// reference's. The same integer operations on the same samples as the pair kernels:
    /// each `outs[i]` is bit for bit what `enqueue(reference, distorted[i])` writes.
    ///
    /// Errors: [`CudaError::Driver`] for a failed memset or launch, or `outs` and
    /// `distorted` of different lengths.
    pub fn enqueue_ladder(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: &[DevPlane],
        cfg: &VifConfig,
        outs: &mut [CudaViewMut<u64>],
    ) -> Result<(), CudaError> {
        let limit = cfg.enhn_gain_limit;
        let (bases, pyramid) =
            self.ladder_common(stream, reference, distorted, outs, limit, true)?;
        // Each plane's scales 1..=3: its own pyramid against the reference's.
        for (&d, &base) in distorted.iter().zip(&bases) {
            self.enqueue_rendition_scales(stream, &pyramid, d, limit, base)?;
        }
        Ok(())
    }

    /// What both ladder paths do first, on `stream`: checks `outs` (one per distorted plane,
    /// each of at least [`VifGpu::RESULT_WORDS`] words), zeroes them when `zero` (else they
    /// must arrive zeroed), subsamples the reference's scales 1..=3 once and runs scale 0 for
    /// [`LADDER_MAX`] planes per launch. Returns each output's device address and the
    /// reference's planes of scales 1..=3.
    ///
    /// Errors: [`CudaError::Driver`] for a bad `outs` or a failed memset or launch.
    fn ladder_common(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: &[DevPlane],
        outs: &mut [CudaViewMut<u64>],
        limit: f64,
        zero: bool,
    ) -> Result<(Vec<u64>, [DevPlane; 3]), CudaError> {
        let invalid = |what: &str| CudaError::Driver {
            call: "VifGpu::enqueue_ladder",
            code: format!("CUDA_ERROR_INVALID_VALUE ({what})"),
        };
        if outs.len() != distorted.len() {
            return Err(invalid("one output per distorted plane"));
        }
        // Each plane's four words of every scale, zero before anything adds to them.
        let mut bases = Vec::with_capacity(outs.len());
        for out in outs.iter_mut() {
            if out.len() < Self::RESULT_WORDS {
                return Err(invalid("an output shorter than RESULT_WORDS"));
            }
            if zero {
                stream
                    .memset_zeros(out)
                    .during("cuMemsetD8Async(vif sums)")?;
            }
            bases.push(out.device_ptr_mut(stream).0);
        }
        let pyramid = self.reference_pyramid(stream, reference)?;
        for (dis, bases) in distorted.chunks(LADDER_MAX).zip(bases.chunks(LADDER_MAX)) {
            self.stat0_ladder(stream, reference, dis, bases, limit)?;
        }
        Ok((bases, pyramid))
    }

    /// Allocates the distorted planes of scales 1..=3 for `n` renditions (at most
    /// [`LADDER_MAX`]) for [`VifGpu::enqueue_ladder_batched`], on `stream` (about 1.4 MB per
    /// rendition at 1080p). Called by a ladder backend when it is made.
    ///
    /// Errors: [`CudaError::OutOfMemory`] / [`CudaError::Driver`] from the allocations.
    pub fn prepare_renditions(
        &mut self,
        stream: &Arc<CudaStream>,
        n: usize,
    ) -> Result<(), CudaError> {
        let n = n.clamp(1, LADDER_MAX);
        if self.renditions.as_ref().is_some_and(|(m, _)| *m >= n) {
            return Ok(());
        }
        let (w, h) = (self.width, self.height);
        let plane = |s: usize| {
            alloc_zeroed::<u16>(
                stream,
                n * (w >> s) * (h >> s),
                "cuMemAlloc(vif rendition planes)",
            )
        };
        self.renditions = Some((n, [plane(1)?, plane(2)?, plane(3)?]));
        Ok(())
    }

    /// The count and the planes [`VifGpu::prepare_renditions`] made.
    ///
    /// Errors: [`CudaError::Driver`] when it was not called.
    fn rendition_planes(&self) -> Result<(usize, &[DeviceAlloc<u16>; 3]), CudaError> {
        self.renditions
            .as_ref()
            .map(|(n, planes)| (*n, planes))
            .ok_or_else(|| CudaError::Driver {
                call: "VifGpu::enqueue_ladder",
                code: "CUDA_ERROR_INVALID_VALUE (no rendition planes)".to_owned(),
            })
    }

    /// Whether [`VifGpu::prepare_renditions`] made planes.
    pub fn has_renditions(&self) -> bool {
        self.renditions.is_some()
    }

    /// [`VifGpu::enqueue_ladder`] with the distorted planes' scales 1..=3 batched: per scale
    /// one subsampling and one statistic launch for up to [`VifGpu::prepare_renditions`]'
    /// count of planes (grid z = plane), each in its share of the rendition planes. `outs`
    /// must arrive zeroed (a ladder backend's words). Same sums, bit for bit.
    ///
    /// Errors: as [`VifGpu::enqueue_ladder`]; [`CudaError::Driver`] without prepared planes.
    pub fn enqueue_ladder_batched(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        distorted: &[DevPlane],
        cfg: &VifConfig,
        outs: &mut [CudaViewMut<u64>],
    ) -> Result<(), CudaError> {
        let group = self.rendition_planes()?.0;
        let limit = cfg.enhn_gain_limit;
        let (bases, pyramid) =
            self.ladder_common(stream, reference, distorted, outs, limit, false)?;
        for (dis, bases) in distorted.chunks(group).zip(bases.chunks(group)) {
            self.rendition_scales_batched(stream, &pyramid, dis, bases, limit)?;
        }
        Ok(())
    }

    /// The reference's planes of scales 1..=3 (subsampled into `scaled_ref` on `stream`).
    fn reference_pyramid(
        &mut self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
    ) -> Result<[DevPlane; 3], CudaError> {
        let mut pyramid = [DevPlane::default(); 3];
        let mut src = reference;
        let (mut sw, mut sh) = (self.width, self.height);
        for (s, level) in (1..4usize).zip(pyramid.iter_mut()) {
            let out = self.scaled_ref[s - 1].device_ptr_mut(stream).0;
            self.sub_plane(stream, s, src, (sw, sh), out)?;
            sw /= 2;
            sh /= 2;
            src = DevPlane::packed_u16(&self.scaled_ref[s - 1], sw, stream);
            *level = src;
        }
        Ok(pyramid)
    }

    /// Scales 1..=3 of up to the prepared count of distorted planes `dis`, batched (grid z),
    /// their sums added at `bases[z] + scale * 32` bytes.
    fn rendition_scales_batched(
        &self,
        stream: &Arc<CudaStream>,
        pyramid: &[DevPlane; 3],
        dis: &[DevPlane],
        bases: &[u64],
        limit: f64,
    ) -> Result<(), CudaError> {
        let (n, planes) = self.rendition_planes()?;
        let z = dis.len().min(n).min(bases.len());
        let mut src = [DevPlane::default(); LADDER_MAX];
        src.iter_mut().zip(dis).for_each(|(p, d)| *p = *d);
        let (mut sw, mut sh) = (self.width, self.height);
        for s in 1..4usize {
            let (ow, oh) = (sw / 2, sh / 2);
            let base = planes[s - 1].device_ptr(stream).0;
            let share = (ow * oh * 2) as u64;
            let mut outs = [0u64; LADDER_MAX];
            let mut next = [DevPlane::default(); LADDER_MAX];
            for k in 0..z {
                let ptr = base + k as u64 * share;
                outs[k] = ptr;
                next[k] = DevPlane::new(ptr, ow * 2, SampleLayout::RIGHT_ALIGNED_U16);
            }
            let (mut round, mut shift) = if s == 1 {
                (1u32 << (self.bpc - 1), self.bpc)
            } else {
                (32768, 16)
            };
            let (mut wi, mut hi) = (sw as i32, sh as i32);
            let mut src_arg = src;
            // SAFETY: vif_subN_ladder(LadderPlanes src, i32 w, i32 h, u32 round, u32 shift,
            // LadderOuts out): block z < `z` reads plane z of w * h samples (the caller's
            // contract at scale 1, rendition z's share of the scale before after) and writes
            // rendition z's (w / 2) * (h / 2) share of this scale's planes.
            unsafe {
                launch(
                    stream,
                    &self.sub_ladder[s - 1],
                    (
                        ow.div_ceil(TILE.0) as u32,
                        oh.div_ceil(TILE.1) as u32,
                        z as u32,
                    ),
                    BLOCK,
                    &mut [
                        param(&mut src_arg),
                        param(&mut wi),
                        param(&mut hi),
                        param(&mut round),
                        param(&mut shift),
                        param(&mut outs),
                    ],
                    "cuLaunchKernel(vif_sub_ladder)",
                )?;
            }
            let mut accs = [0u64; LADDER_MAX];
            for (a, b) in accs.iter_mut().zip(bases).take(z) {
                *a = b + (s * 4 * 8) as u64;
            }
            let mut p_ref = pyramid[s - 1];
            let mut dis_arg = next;
            let (mut w2, mut h2) = (ow as i32, oh as i32);
            let mut tab = self.log2_table.device_ptr(stream).0;
            let mut limit = limit;
            let (mut mu_round, mut mu_shift, mut sq_round, mut sq_shift) =
                (32768u32, 16u32, 32768u64, 16u32);
            let (gx, gy, _) = grid(ow, oh);
            let mut count = z as i32;
            // SAFETY: vif_statN_ladder(Plane ref, LadderPlanes dis, i32 w, i32 h,
            // const u16* tab, f64 limit, u32, u32, u64, u32, LadderAccs acc) and
            // vif_stat1_shared(Plane ref, LadderPlanes dis, i32 n, i32 w, i32 h, const u16*
            // tab, f64 limit, u32, u32, u64, u32, LadderAccs acc): the reference's plane and
            // each rendition's share hold w2 * h2 samples; acc.p[z] 4 words of rendition z's
            // output (alive until the stream has run); table of 65536; n = z <= LADDER_MAX.
            unsafe {
                if s == 1 {
                    // Scale 1 has tiles enough to loop over the renditions in each block,
                    // the reference's tile filtered once.
                    launch(
                        stream,
                        &self.stat1_shared,
                        (gx, gy, 1),
                        BLOCK,
                        &mut [
                            param(&mut p_ref),
                            param(&mut dis_arg),
                            param(&mut count),
                            param(&mut w2),
                            param(&mut h2),
                            param(&mut tab),
                            param(&mut limit),
                            param(&mut mu_round),
                            param(&mut mu_shift),
                            param(&mut sq_round),
                            param(&mut sq_shift),
                            param(&mut accs),
                        ],
                        "cuLaunchKernel(vif_stat1_shared)",
                    )?;
                } else {
                    launch(
                        stream,
                        &self.stat_ladder[s - 1],
                        (gx, gy, z as u32),
                        BLOCK,
                        &mut [
                            param(&mut p_ref),
                            param(&mut dis_arg),
                            param(&mut w2),
                            param(&mut h2),
                            param(&mut tab),
                            param(&mut limit),
                            param(&mut mu_round),
                            param(&mut mu_shift),
                            param(&mut sq_round),
                            param(&mut sq_shift),
                            param(&mut accs),
                        ],
                        "cuLaunchKernel(vif_stat_ladder)",
                    )?;
                }
            }
            src = next;
            sw = ow;
            sh = oh;
        }
        Ok(())
    }

    /// Scale 0's statistic of `reference` against up to [`LADDER_MAX`] distorted planes in one
    /// launch, each plane's sums added at device address `bases[i]`.
    fn stat0_ladder(
        &self,
        stream: &Arc<CudaStream>,
        reference: DevPlane,
        dis: &[DevPlane],
        bases: &[u64],
        limit: f64,
    ) -> Result<(), CudaError> {
        let mut accs = [0u64; LADDER_MAX];
        accs.iter_mut().zip(bases).for_each(|(a, b)| *a = *b);
        let mut planes = [DevPlane::default(); LADDER_MAX];
        planes.iter_mut().zip(dis).for_each(|(p, d)| *p = *d);
        let mut n = dis.len().min(LADDER_MAX).min(bases.len()) as i32;
        let mut p_ref = reference;
        let (mut w, mut h) = (self.width as i32, self.height as i32);
        let mut limit = limit;
        let bpc = self.bpc;
        let mut tab = self.log2_table.device_ptr(stream).0;
        let sq = 2 * bpc.saturating_sub(8).max(1);
        let (mut mu_round, mut mu_shift, mut sq_round, mut sq_shift) =
            (1u32 << (bpc - 1), bpc, 1u64 << (sq - 1), sq);
        let narrow = bpc == 8;
        let f = &self.stat0_ladder[usize::from(!narrow)];
        let grid = grid(self.width, self.height);
        // SAFETY: vif_stat0_narrow_ladder(Plane, LadderPlanes, i32, i32, i32, const u16*,
        // f64, LadderAccs) and vif_stat0_ladder(Plane, LadderPlanes, i32, i32, i32,
        // const u16*, f64, u32, u32, u64, u32, LadderAccs): `planes` is LADDER_MAX
        // `DevPlane`s (repr(C), the kernels' Plane), the first `n` of them planes of
        // w * h samples (the caller's contract); `accs` LADDER_MAX pointers, the first
        // `n` to 4 writable words each (the caller's outputs, kept alive by the caller until
        // the stream has run); table of 65536.
        unsafe {
            if narrow {
                launch(
                    stream,
                    f,
                    grid,
                    BLOCK,
                    &mut [
                        param(&mut p_ref),
                        param(&mut planes),
                        param(&mut n),
                        param(&mut w),
                        param(&mut h),
                        param(&mut tab),
                        param(&mut limit),
                        param(&mut accs),
                    ],
                    "cuLaunchKernel(vif_stat0_narrow_ladder)",
                )
            } else {
                launch(
                    stream,
                    f,
                    grid,
                    BLOCK,
                    &mut [
                        param(&mut p_ref),
                        param(&mut planes),
                        param(&mut n),
                        param(&mut w),
                        param(&mut h),
                        param(&mut tab),
                        param(&mut limit),
                        param(&mut mu_round),
                        param(&mut mu_shift),
                        param(&mut sq_round),
                        param(&mut sq_shift),
                        param(&mut accs),
                    ],
                    "cuLaunchKernel(vif_stat0_ladder)",
                )
            }
        }
    }

    /// One distorted plane's scales 1..=3 of a ladder, on `stream`, in this `VifGpu`'s
    /// distorted planes: its subsampling into each scale, and the statistic against the
    /// reference's plane of that scale (`pyramid`, which `stream` must have waited for), added
    /// to the four words of that scale at device address `base` (scale 0's words first).
    fn enqueue_rendition_scales(
        &mut self,
        stream: &Arc<CudaStream>,
        pyramid: &[DevPlane; 3],
        distorted: DevPlane,
        limit: f64,
        base: u64,
    ) -> Result<(), CudaError> {
        let mut src = distorted;
        let (mut sw, mut sh) = (self.width, self.height);
        for (s, &r) in (1..4usize).zip(pyramid) {
            let out = self.scaled_dis[s - 1].device_ptr_mut(stream).0;
            self.sub_plane(stream, s, src, (sw, sh), out)?;
            sw /= 2;
            sh /= 2;
            src = DevPlane::packed_u16(&self.scaled_dis[s - 1], sw, stream);
            self.stat_wide(
                stream,
                s,
                (r, src),
                (sw, sh),
                (32768, 16, 32768, 16),
                limit,
                base + (s * 4 * 8) as u64,
            )?;
        }
        Ok(())
    }

    /// Subsamples the `w` x `h` plane `src` into scale `s` (1..=3) at device address `out`
    /// (`(w / 2) * (h / 2)` samples of `self`'s planes of that scale).
    fn sub_plane(
        &self,
        stream: &Arc<CudaStream>,
        s: usize,
        src: DevPlane,
        (w, h): (usize, usize),
        out: u64,
    ) -> Result<(), CudaError> {
        let (mut round, mut shift) = if s == 1 {
            (1u32 << (self.bpc - 1), self.bpc)
        } else {
            (32768, 16)
        };
        let Some(f) = self.sub_one.get(s.wrapping_sub(1)) else {
            return Ok(());
        };
        let (mut p, mut out) = (src, out);
        let (mut wi, mut hi) = (w as i32, h as i32);
        // SAFETY: vif_subN_one(Plane, i32, i32, u32, u32, u16*): `src` holds w * h samples,
        // `out` (one of self's planes of scale s) (w / 2) * (h / 2), live until the stream
        // has run.
        unsafe {
            launch(
                stream,
                f,
                grid(w / 2, h / 2),
                BLOCK,
                &mut [
                    param(&mut p),
                    param(&mut wi),
                    param(&mut hi),
                    param(&mut round),
                    param(&mut shift),
                    param(&mut out),
                ],
                "cuLaunchKernel(vif_sub_one)",
            )
        }
    }

    /// Launches `vif_stat{scale}` on raw device pointers.
    #[allow(clippy::too_many_arguments)]
    fn stat_wide(
        &self,
        stream: &Arc<CudaStream>,
        scale: usize,
        planes: (DevPlane, DevPlane),
        size: (usize, usize),
        rounding: (u32, u32, u64, u32),
        limit: f64,
        acc: u64,
    ) -> Result<(), CudaError> {
        let (mut p_ref, mut p_dis) = planes;
        let (mut w, mut h) = (size.0 as i32, size.1 as i32);
        let (mut mu_round, mut mu_shift, mut sq_round, mut sq_shift) = rounding;
        let mut limit = limit;
        let mut acc = acc;
        let mut tab = self.log2_table.device_ptr(stream).0;
        let Some(f) = self.stat.get(scale) else {
            return Ok(());
        };
        // SAFETY: vif_statN(Plane, Plane, i32, i32, const u16*, f64, u32, u32, u64,
        // u32, u64*); planes of w * h samples, table of 65536, acc of 4 words, live until the
        // stream has run.
        unsafe {
            launch(
                stream,
                f,
                grid(size.0, size.1),
                BLOCK,
                &mut [
                    param(&mut p_ref),
                    param(&mut p_dis),
                    param(&mut w),
                    param(&mut h),
                    param(&mut tab),
                    param(&mut limit),
                    param(&mut mu_round),
                    param(&mut mu_shift),
                    param(&mut sq_round),
                    param(&mut sq_shift),
                    param(&mut acc),
                ],
                "cuLaunchKernel(vif_stat)",
            )
        }
    }

    /// Finishes one frame on the host from the [`VifGpu::RESULT_WORDS`] words read back:
    /// per scale `num = num_log / 2048 + (den_non_log - num_non_log / 16384 / 65025)` and
    /// `den = den_log / 2048 + den_non_log` in `f64`, rounded to `f32`, and their `f32`
    /// quotient, as libvmaf (and [`super::cpu`]) do. `cfg` is not needed for this
    /// step (the gain limit acts per pixel) and is taken for symmetry with the other
    /// extractors. Missing words count as 0.
    pub fn scores(&self, words: &[u64], _cfg: &VifConfig) -> VifScores {
        let mut scores = VifScores::default();
        for s in 0..4 {
            let w = |k: usize| words.get(s * 4 + k).copied().unwrap_or(0) as i64;
            let (num_log, den_log, num_non_log, den_non_log) = (w(0), w(1), w(2), w(3));
            let num = num_log as f64 / 2048.0
                + (den_non_log as f64 - (num_non_log as f64 / 16384.0) / 65025.0);
            let den = den_log as f64 / 2048.0 + den_non_log as f64;
            let (num, den) = (num as f32, den as f32);
            scores.num[s] = f64::from(num);
            scores.den[s] = f64::from(den);
            scores.scale[s] = f64::from(num / den);
        }
        scores
    }
}
