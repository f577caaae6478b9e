//! Property tests (proptest, a bounded number of cases so CI stays fast) of the frame-plane
//! accessors and the CPU extractors' input checks: no geometry, slice length or sample value
//! makes them panic; a plane is accepted exactly when its slice holds its geometry.
//! `fuzz/` holds the cargo-fuzz targets of the same code for longer runs. Under Miri
//! (`cargo +nightly miri test --test frame`) the case counts drop so that it ends in minutes.

use gstvmafcompare::engine::frame::{FeatureError, LumaPlane};
use gstvmafcompare::engine::CpuBackend;
use gstvmafcompare::features::adm::{MIN_HEIGHT, MIN_WIDTH};
use proptest::prelude::*;

/// `(height - 1) * stride + width`, the samples a plane needs, when it fits in `usize`.
fn needed(width: usize, height: usize, stride: usize) -> Option<usize> {
    height
        .checked_sub(1)?
        .checked_mul(stride)?
        .checked_add(width)
}

/// Any `usize`, biased towards the small values and the edges where arithmetic overflows.
fn dim() -> impl Strategy<Value = usize> {
    prop_oneof![
        4 => 0usize..80,
        1 => Just(usize::MAX),
        1 => (usize::MAX / 2 - 2)..=(usize::MAX / 2 + 2),
        1 => any::<usize>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: if cfg!(miri) { 8 } else { 2000 },
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// `LumaPlane::new` accepts exactly the consistent geometries, and then every row is in
    /// bounds and `width` samples long.
    #[test]
    fn luma_plane_new_accepts_exactly_consistent_geometry(
        len in 0usize..4096,
        width in dim(),
        height in dim(),
        stride in dim(),
        bpc in 0u32..40,
    ) {
        let data = vec![7u16; len];
        let plane = LumaPlane::new(&data, width, height, stride, bpc);
        let ok = width >= 1
            && height >= 1
            && stride >= width
            && (8..=16).contains(&bpc)
            && needed(width, height, stride).is_some_and(|n| n <= len);
        prop_assert_eq!(plane.is_some(), ok);
        if let Some(p) = plane {
            for y in 0..p.height {
                prop_assert_eq!(p.row(y).len(), width);
            }
            prop_assert!(FeatureError::check_plane("t", (width, height, bpc), &p).is_ok());
        }
        if width == stride {
            prop_assert_eq!(
                LumaPlane::packed(&data, width, height, bpc).is_some(),
                ok
            );
        }
    }

    /// `check_new` and `check_plane` never panic, whatever the (public, possibly inconsistent)
    /// fields hold, and refuse every plane whose slice is too short.
    #[test]
    fn feature_checks_never_panic(
        len in 0usize..4096,
        width in dim(),
        height in dim(),
        stride in dim(),
        bpc in any::<u32>(),
        expect in (dim(), dim(), any::<u32>()),
        min in (dim(), dim()),
    ) {
        let data = vec![0u16; len];
        let p = LumaPlane { data: &data, width, height, stride, bpc };
        let checked = FeatureError::check_plane("t", expect, &p);
        let fits = stride >= width
            && height >= 1
            && needed(width, height, stride).is_some_and(|n| n <= len);
        if !fits || (width, height, bpc) != expect {
            prop_assert!(checked.is_err());
        } else {
            prop_assert!(checked.is_ok());
        }
        let new = FeatureError::check_new("t", (width, height, bpc), min);
        let ok = width >= min.0 && height >= min.1 && (8..=16).contains(&bpc);
        prop_assert_eq!(new.is_ok(), ok);
        if let Err(e) = checked {
            prop_assert!(!e.to_string().is_empty());
        }
    }

    /// The CPU backend refuses inconsistent planes with an error (never a panic), scores
    /// in-range samples to finite features, and survives (no panic, no overflow) samples above
    /// `bpc` bits, which break `LumaPlane`'s contract (the element masks them off).
    #[test]
    fn cpu_backend_survives_hostile_planes(
        w in MIN_WIDTH..MIN_WIDTH + 12,
        h in MIN_HEIGHT..MIN_HEIGHT + 12,
        bpc in prop::sample::select(vec![8u32, 10, 12, 16]),
        seed in any::<u64>(),
        hostile in 0u8..4,
        bad in (dim(), dim(), dim(), 0u32..20, 0usize..2000),
    ) {
        let mut backend = CpuBackend::vmaf(w, h, bpc, Default::default(), Default::default())
            .expect("the minimum size is accepted");
        let mut state = seed | 1;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let max = (1u64 << bpc) - 1;
        let sample = |r: u64| -> u16 {
            match hostile {
                0 => (r & max) as u16,
                1 => r as u16,
                2 => u16::MAX,
                _ => 0,
            }
        };
        let r: Vec<u16> = (0..w * h).map(|_| sample(next())).collect();
        let d: Vec<u16> = (0..w * h).map(|_| sample(next())).collect();
        let rp = LumaPlane::packed(&r, w, h, bpc).expect("packed plane");
        let dp = LumaPlane::packed(&d, w, h, bpc).expect("packed plane");
        let in_range = hostile != 1 && (hostile != 2 || bpc == 16);
        for _ in 0..2 {
            let f = backend.extract(&rp, &dp, true).expect("a consistent plane is scored");
            if in_range {
                // Motion SAD, VIF and ADM (every scale, adm2, aim, adm3) are finite.
                prop_assert!(f.values().len() == 12, "{:?}", f);
                prop_assert!(f.values().iter().all(|v| v.is_finite()), "{:?}", f);
            }
        }
        let (bw, bh, bs, bbpc, blen) = bad;
        let data = vec![0u16; blen];
        let inconsistent = LumaPlane { data: &data, width: bw, height: bh, stride: bs, bpc: bbpc };
        if (bw, bh, bbpc) != (w, h, bpc) || blen < w * h || bs < w {
            prop_assert!(backend.extract(&inconsistent, &dp, true).is_err());
            prop_assert!(backend.extract(&rp, &inconsistent, false).is_err());
        }
    }
}

/// The CPU backend on the smallest frames at every bit depth, with extreme sample values and
/// padded strides: a fixed, small case that Miri runs in reasonable time.
#[test]
fn cpu_backend_on_minimum_frames() {
    // Miri interprets every sample operation: one depth and one frame there.
    let depths: &[u32] = if cfg!(miri) { &[10] } else { &[8, 10, 12, 16] };
    for &bpc in depths {
        let (w, h, stride) = (MIN_WIDTH, MIN_HEIGHT, MIN_WIDTH + 3);
        let mut backend = CpuBackend::vmaf(w, h, bpc, Default::default(), Default::default())
            .expect("the minimum size is accepted");
        let max = ((1u32 << bpc) - 1) as u16;
        let fills = [(0usize, u16::MAX), (1, max), (2, 0u16)];
        for &(t, fill) in &fills[..if cfg!(miri) { 1 } else { 3 }] {
            let r: Vec<u16> = (0..stride * h)
                .map(|i| {
                    if (i + t) % 3 == 0 {
                        fill
                    } else {
                        (i as u16) & max
                    }
                })
                .collect();
            let d: Vec<u16> = r.iter().map(|v| v ^ 1).collect();
            let rp = LumaPlane::new(&r, w, h, stride, bpc).unwrap();
            let dp = LumaPlane::new(&d, w, h, stride, bpc).unwrap();
            let f = backend.extract(&rp, &dp, true).expect("scored");
            if fill <= max {
                assert_eq!(f.values().len(), 12, "{f:?}");
                assert!(f.values().iter().all(|v| v.is_finite()), "{f:?}");
            }
        }
        let short = LumaPlane {
            data: &[0u16; 8],
            width: w,
            height: h,
            stride: w,
            bpc,
        };
        let ok = vec![0u16; w * h];
        let okp = LumaPlane::packed(&ok, w, h, bpc).unwrap();
        assert!(backend.extract(&short, &okp, true).is_err());
    }
}
