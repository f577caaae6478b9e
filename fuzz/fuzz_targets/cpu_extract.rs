//! The CPU backend (VIF, ADM, motion) on arbitrary sample values and on planes whose fields
//! disagree with the geometry: never panics or overflows; features are finite for samples
//! below `1 << bpc` (`LumaPlane`'s contract, which the element ensures by masking). Samples
//! above it, as a hostile stream may carry before masking, must still not panic.
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
    // Byte 3 bit 1: keep the raw 16-bit values (out of contract) or mask them to bpc bits.
    let raw = data[3] & 2 == 2;
    let mask = ((1u32 << bpc) - 1) as u16;
    let fix = |v: u16| if raw { v } else { v & mask };
    let r: Vec<u16> = (0..w * h).map(|i| fix(sample(i))).collect();
    let d: Vec<u16> = (0..w * h).map(|i| fix(sample(i + w * h))).collect();
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
        if !raw || bpc == 16 {
            assert!(f.motion_sad.is_finite());
            assert!(f.vif.scale.iter().all(|v| v.is_finite()));
            assert!(f.adm.scale.iter().all(|v| v.is_finite()) && f.adm.adm2.is_finite());
        }
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
