//! `LumaPlane::new`/`packed`/`row` and `FeatureError::check_new`/`check_plane` on arbitrary
//! geometry: never panic; a plane that `new` accepts passes `check_plane` and every row is in
//! bounds.
#![no_main]

use gstvmafcompare::engine::frame::{FeatureError, LumaPlane};
use libfuzzer_sys::fuzz_target;

/// Reads a `usize` from 8 bytes; small values are more useful, so the top byte picks a range.
fn take(data: &mut &[u8]) -> usize {
    let mut b = [0u8; 8];
    let n = data.len().min(8);
    b[..n].copy_from_slice(&data[..n]);
    *data = &data[n..];
    let v = u64::from_le_bytes(b);
    match b[7] {
        0..=191 => (v % 97) as usize,
        192..=223 => (v % 100_000) as usize,
        _ => v as usize,
    }
}

fuzz_target!(|data: &[u8]| {
    let mut d = data;
    let (len, width, height, stride) = (
        take(&mut d) % 8192,
        take(&mut d),
        take(&mut d),
        take(&mut d),
    );
    let bpc = take(&mut d) as u32;
    let expect = (take(&mut d), take(&mut d), take(&mut d) as u32);
    let min = (take(&mut d), take(&mut d));
    let samples = vec![1u16; len];
    if let Some(p) = LumaPlane::new(&samples, width, height, stride, bpc) {
        for y in 0..p.height {
            assert_eq!(p.row(y).len(), width);
        }
        assert!(FeatureError::check_plane("fuzz", (width, height, bpc), &p).is_ok());
    }
    let _ = LumaPlane::packed(&samples, width, height, bpc);
    let raw = LumaPlane {
        data: &samples,
        width,
        height,
        stride,
        bpc,
    };
    let _ = FeatureError::check_plane("fuzz", expect, &raw).map_err(|e| e.to_string());
    let _ = FeatureError::check_new("fuzz", (width, height, bpc), min).map_err(|e| e.to_string());
});
