//! libvmaf's simple float extractors on the CPU backend, through the element
//! (`vmafcompare backend=cpu features=float_psnr,float_ansnr,float_moment`, read from its
//! log), against libvmaf 3.2.0 (the ffmpeg of imageio-ffmpeg) on real content: src01 576x324
//! at 8, 10 and 12 bits in 4:2:0, 4:2:2 and 4:4:4 (the extractors read luma only), and
//! odd-sized crops. Every key of every frame within 1e-4: `float_psnr`, `float_ansnr`,
//! `float_anpsnr`, `float_moment_ref1st`, `float_moment_dis1st`, `float_moment_ref2nd`,
//! `float_moment_dis2nd`.
//!
//! `cargo test --release --test float_simple -- --nocapture` prints the largest difference
//! per key and format.

mod common;
mod libvmaf_oracle;

const KEYS: [&str; 7] = [
    "float_psnr",
    "float_ansnr",
    "float_anpsnr",
    "float_moment_ref1st",
    "float_moment_dis1st",
    "float_moment_ref2nd",
    "float_moment_dis2nd",
];

#[test]
fn float_psnr_ansnr_moment_match_libvmaf_3_2_0_in_every_format() {
    libvmaf_oracle::against_libvmaf("float_psnr,float_ansnr,float_moment", &KEYS, 1e-4);
}
