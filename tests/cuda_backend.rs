//! The CUDA backend against the CPU backend on Netflix's src01 160x90 pair, bit for bit.
//! Skipped (with a printed reason) where no GPU is usable; the full check across sizes and
//! bit depths is `examples/gpu_check.rs`.

mod common;

use gstvmafcompare::cuda::{CudaError, GpuDevice};
use gstvmafcompare::engine::frame::LumaPlane;
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::engine::CudaBackend;
use gstvmafcompare::engine::PairInput;
use gstvmafcompare::features::adm::AdmConfig;
use gstvmafcompare::features::vif::VifConfig;

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn cuda_matches_cpu_bit_for_bit() {
    let Some(dev) = common::gpu_device() else {
        return;
    };
    let (w, h) = (160usize, 90usize);
    let read = |p: &str| -> Vec<Vec<u16>> {
        let b = std::fs::read(common::reference_dir().join(p)).expect("read yuv");
        b.chunks_exact(w * h * 3 / 2)
            .map(|f| f[..w * h].iter().map(|&x| u16::from(x)).collect())
            .collect()
    };
    let r = read("src01_ref_160x90_420p8_48f.yuv");
    let d = read("src01_dis_160x90_420p8_48f.yuv");
    let (vc, ac) = (VifConfig::default(), AdmConfig::default());
    let mut cpu = CpuBackend::vmaf(w, h, 8, vc, ac).unwrap();
    let mut gpu = CudaBackend::vmaf(&dev, w, h, 8, vc, ac).unwrap();
    for (i, (rf, df)) in r.iter().zip(&d).enumerate() {
        let rp = LumaPlane::packed(rf, w, h, 8).unwrap();
        let dp = LumaPlane::packed(df, w, h, 8).unwrap();
        cpu.submit(&rp, &dp, i % 2 == 0).unwrap();
        gpu.submit(&rp, &dp, i % 2 == 0).unwrap();
        let a = cpu.collect(true).unwrap().unwrap();
        let b = gpu.collect(true).unwrap().unwrap();
        assert_eq!(format!("{a:?}"), format!("{b:?}"), "frame {i}");
        assert_eq!(a.values(), b.values(), "frame {i}");
    }
    assert!(gpu.collect(false).unwrap().is_none());
}

#[test]
fn open_without_driver_is_an_error_not_a_panic() {
    match GpuDevice::open(0) {
        Ok(dev) => {
            assert!(matches!(
                GpuDevice::open(usize::MAX),
                Err(CudaError::DeviceOutOfRange { .. })
            ));
            eprintln!("GPU: {}", dev.name());
        }
        Err(e) => eprintln!("no GPU here: {e}"),
    }
}
