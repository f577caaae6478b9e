//! libvmaf's `ciede` extractor (`ciede2000`) on the CPU backend, through the element
//! (`vmafcompare backend=cpu features=ciede`, read from its log), against libvmaf 3.2.0 (the
//! ffmpeg of imageio-ffmpeg) on real content: src01 576x324 at 8, 10 and 12 bits in 4:2:0,
//! 4:2:2 and 4:4:4, and 575x323 crops (odd sizes: libvmaf's chroma buffers round down and
//! its padding is read). Every frame within 1e-4.
//!
//! `cargo test --release --test ciede -- --nocapture` prints the largest difference per
//! format.

mod common;
mod libvmaf_oracle;

use common::*;

#[test]
fn ciede_matches_libvmaf_3_2_0_in_every_format() {
    libvmaf_oracle::against_libvmaf("ciede", &["ciede2000"], 1e-4);
}

/// Grey frames have no chroma: the element refuses `features=ciede` with an error naming
/// the reason (libvmaf refuses 4:0:0 too), and does not crash.
#[test]
fn ciede_refuses_grey_frames() {
    let p = &reference_pairs()[0];
    let branch = |path: &std::path::Path, pad: &str| {
        format!(
            "filesrc location=\"{}\" ! rawvideoparse width={} height={} format=gray8 \
             frame-size={} framerate=25/1 ! cmp.{pad}",
            path.display(),
            p.width,
            p.height,
            p.width * p.height * 3 / 2
        )
    };
    let desc = format!(
        "vmafcompare name=cmp backend=cpu features=ciede ! fakesink {} {}",
        branch(&p.reference, "reference"),
        branch(&p.distorted, "distorted"),
    );
    let out = run(&desc, LONG);
    assert!(out.frames.is_empty());
    let text = out.errors.join("\n");
    assert!(text.contains("ciede needs colour frames"), "{text}");
}
