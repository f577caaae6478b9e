//! The CPU backend (VIF, ADM, motion) on arbitrary sample values, including values above the
//! bit depth that a hostile stream may carry, and on planes whose fields disagree with the
//! geometry: never panics, features stay finite.
#![no_main]

use gstvmafcompare::cpu::{CpuBackend, MIN_HEIGHT, MIN_WIDTH};
use gstvmafcompare::engine::frame::LumaPlane;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let w = MIN_WIDTH + usize::from(data[0] % 16);
    let h = MIN_HEIGHT + usize::from(data[1] % 16);
    let bpc = [8u32, 10, 12, 16][usize::from(data[2] % 4)];
    let full = data[3] & 1 == 1;
    let body = &data[4..];
    // Samples from the input, repeated to fill both planes (2 bytes each, unmasked).
    let sample = |i: usize| -> u16 {
        if body.len() < 2 {
            return 0;
        }
        let j = (2 * i) % (body.len() - 1);
        u16::from_le_bytes([body[j], body[j + 1]])
    };
    let r: Vec<u16> = (0..w * h).map(sample).collect();
    let d: Vec<u16> = (0..w * h).map(|i| sample(i + w * h)).collect();
    let Ok(mut backend) = CpuBackend::new(w, h, bpc, Default::default(), Default::default()) else {
        panic!("{w}x{h} at {bpc} bits refused");
    };
    let (Some(rp), Some(dp)) = (
        LumaPlane::packed(&r, w, h, bpc),
        LumaPlane::packed(&d, w, h, bpc),
    ) else {
        panic!("packed planes refused");
    };
    for _ in 0..2 {
        let f = backend
            .extract(&rp, &dp, full)
            .expect("consistent planes are scored");
        assert!(f.motion_sad.is_finite());
        assert!(f.vif.scale.iter().all(|v| v.is_finite()));
        assert!(f.adm.scale.iter().all(|v| v.is_finite()) && f.adm.adm2.is_finite());
    }
    // A plane one row short, or with another width, is refused.
    let short = LumaPlane {
        data: &r[..w * (h - 1)],
        width: w,
        height: h,
        stride: w,
        bpc,
    };
    assert!(backend.extract(&short, &dp, full).is_err());
    let other = LumaPlane {
        data: &r,
        width: w - 1,
        height: h,
        stride: w,
        bpc,
    };
    assert!(backend.extract(&rp, &other, full).is_err());
});
