//! libvmaf's simple float extractors on the GPU against their CPU halves (equal to libvmaf
//! 3.2.0 at its log's 6 decimals, tests/float_simple.rs), bit for bit: the plane sums of
//! `float_psnr` and `float_moment` ([`PlaneSumsGpu`], integer) and the `f32` sums of
//! `float_ansnr` ([`AnsnrGpu`], libvmaf's float operations in its order on both), so every
//! score is the CPU's. Cases: Netflix's src01 576x324 luma at 8, 10, 12 and 16 bits (the
//! higher depths with low bits filled from the high ones; 16 bits makes squares round in
//! `f32`), 575x323 and 3x3 crops, over 1-byte, packed and pitched 16-bit layouts, each frame
//! run twice. Skipped (with a printed reason) where no GPU is usable.
//!
//! Run: `cargo test --release --test gpu_float_simple -- --nocapture`.

mod common;

use common::device::{upload, Layout};

use gstvmafcompare::cuda::memory::alloc_zeroed;
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::features::float_ansnr::cpu::Ansnr;
use gstvmafcompare::features::float_ansnr::cuda::AnsnrGpu;
use gstvmafcompare::features::float_psnr::cpu::plane_sums;
use gstvmafcompare::features::float_psnr::cuda::PlaneSumsGpu;
use gstvmafcompare::features::float_psnr::FloatDepth;
use gstvmafcompare::features::Geometry;

/// The luma of the first `n` frames of src01 576x324 8-bit.
fn src01_luma(name: &str, n: usize) -> Vec<Vec<u16>> {
    let (w, h) = (576, 324);
    let bytes = std::fs::read(common::reference_dir().join(name)).expect("read reference yuv");
    bytes
        .chunks_exact(w * h * 3 / 2)
        .take(n)
        .map(|f| f[..w * h].iter().map(|&x| u16::from(x)).collect())
        .collect()
}

/// `y` (8-bit) at `bpc` bits, the low bits repeating the high ones.
fn deepen(y: &[u16], bpc: u32) -> Vec<u16> {
    let up = bpc - 8;
    y.iter()
        .map(|&v| {
            if up == 0 {
                v
            } else {
                (v << up) | (v >> (8 - up.min(8)))
            }
        })
        .collect()
}

/// The top-left `w` x `h` of a 576-wide plane.
fn crop(y: &[u16], w: usize, h: usize) -> Vec<u16> {
    (0..h)
        .flat_map(|r| y[r * 576..r * 576 + w].to_vec())
        .collect()
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn float_psnr_moment_ansnr_gpu_equal_cpu() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let stream = dev.new_stream().expect("stream");
    let r8 = src01_luma("src01_ref_576x324_420p8_3f.yuv", 3);
    let d8 = src01_luma("src01_dis_576x324_420p8_3f.yuv", 3);
    let words = PlaneSumsGpu::RESULT_WORDS + AnsnrGpu::RESULT_WORDS;
    let mut out = alloc_zeroed::<u64>(&stream, words, "test out").expect("out");
    let mut table = vec!["| case | layout | frames | GPU = CPU |".to_owned()];
    for bpc in [8u32, 10, 12, 16] {
        for (w, h) in [(576usize, 324usize), (575, 323), (3, 3)] {
            let g = Geometry::luma(w, h, bpc);
            let depth = FloatDepth::new("float_psnr", &g).expect("depth");
            let mut sums_gpu = PlaneSumsGpu::new(&dev, "float_psnr", w, h, bpc).expect("sums");
            let mut ansnr_gpu = AnsnrGpu::new(&dev, &stream, w, h, depth).expect("ansnr");
            let mut ansnr_cpu = Ansnr::new(w, h, depth);
            let layouts: Vec<Layout> = if bpc == 8 {
                vec![Layout::U8 { pad: 5 }, Layout::U16Packed]
            } else {
                vec![Layout::U16Packed, Layout::U16Pitched { pad: 3 }]
            };
            for layout in layouts {
                for (i, (r, d)) in r8.iter().zip(&d8).enumerate() {
                    let (r, d) = (deepen(&crop(r, w, h), bpc), deepen(&crop(d, w, h), bpc));
                    let (rp, dp) = (
                        LumaPlane::packed(&r, w, h, bpc).expect("plane"),
                        LumaPlane::packed(&d, w, h, bpc).expect("plane"),
                    );
                    let want_sums = plane_sums(&rp, &dp);
                    let want_ansnr = ansnr_cpu.sums(&rp, &dp).expect("cpu ansnr");
                    let (_ru, rd) = upload(&stream, &r, w, h, layout);
                    let (_du, dd) = upload(&stream, &d, w, h, layout);
                    let mut read = || {
                        let n = PlaneSumsGpu::RESULT_WORDS;
                        sums_gpu
                            .enqueue(&stream, rd, dd, &mut out.slice_mut(0..n))
                            .expect("sums enqueue");
                        ansnr_gpu
                            .enqueue(&stream, rd, dd, &mut out.slice_mut(n..words))
                            .expect("ansnr enqueue");
                        let v = stream.clone_dtoh(&*out).expect("read back");
                        stream.synchronize().expect("synchronize");
                        v
                    };
                    let first = read();
                    assert_eq!(
                        first,
                        read(),
                        "{w}x{h} {bpc}-bit: words differ between runs"
                    );
                    let (sw, aw) = first.split_at(PlaneSumsGpu::RESULT_WORDS);
                    let tag = format!("{w}x{h} {bpc}-bit {layout:?} frame {i}");
                    assert_eq!(PlaneSumsGpu::sums(sw), want_sums, "{tag}: plane sums");
                    let (sig, noise) = AnsnrGpu::sums(aw);
                    assert_eq!(
                        (sig.to_bits(), noise.to_bits()),
                        (want_ansnr.0.to_bits(), want_ansnr.1.to_bits()),
                        "{tag}: ansnr sums GPU ({sig}, {noise}) vs CPU {want_ansnr:?}"
                    );
                }
                table.push(format!(
                    "| {w}x{h} {bpc}-bit | {layout:?} | {} | yes |",
                    r8.len()
                ));
            }
        }
    }
    eprintln!(
        "\nfloat_psnr / float_moment / float_ansnr GPU vs CPU:\n{}\n",
        table.join("\n")
    );
}
