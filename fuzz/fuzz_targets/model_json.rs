//! `Model::from_json` on arbitrary text: never panics; a model it accepts predicts without
//! panicking for any feature vector.
#![no_main]

use gstvmafcompare::engine::Model;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Model::from_json("fuzz", text) {
        Ok(model) => {
            let n = model.features.len();
            for x in [0.0, 0.5, 1.0, -1e300, 1e300, f64::NAN] {
                let _ = model.predict(&vec![x; n]);
            }
            let _ = model.predict(&[]);
        }
        Err(e) => assert!(e.to_string().starts_with("invalid VMAF model 'fuzz'")),
    }
});
