//! GPU backend against the CPU backend, through the element: every metric of every frame must
//! be bit-identical. Skips (printing why) where no usable CUDA GPU is found, as on CI; on the
//! GPU host set `VMAFCOMPARE_REQUIRE_GPU=1` so that a skip is a failure.
//! Real 1080p clips are read from `$VMAF_GPU_CLIPS/{ref,dist}_1080p.mp4` when set
//! (scripts/gpu-stage.sh makes them).

mod common;

use common::*;

/// `None` when the CUDA backend can score here, else why not.
fn gpu_unavailable() -> Option<String> {
    let out = run(
        "vmafcompare name=cmp backend=cuda ! fakesink \
         videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=64,height=64 ! cmp.reference \
         videotestsrc num-buffers=2 ! video/x-raw,format=I420,width=64,height=64 ! cmp.distorted",
        LONG,
    );
    let reason = out.errors.first().cloned()?;
    if std::env::var_os("VMAFCOMPARE_REQUIRE_GPU").is_some() {
        panic!("VMAFCOMPARE_REQUIRE_GPU is set but the CUDA backend failed: {reason}");
    }
    Some(reason)
}

fn compare(desc_for: impl Fn(&str) -> String, what: &str) -> usize {
    let cpu = run(&desc_for("cpu"), LONG);
    let gpu = run(&desc_for("cuda"), LONG);
    assert!(cpu.errors.is_empty(), "{what} cpu: {:?}", cpu.errors);
    assert!(gpu.errors.is_empty(), "{what} cuda: {:?}", gpu.errors);
    assert_eq!(
        gpu.summary.as_ref().map(|s| s.backend.as_str()),
        Some("cuda"),
        "{what}"
    );
    assert_eq!(cpu.frames.len(), gpu.frames.len(), "{what}: frame count");
    assert!(!cpu.frames.is_empty(), "{what}: no frames");
    let mut compared = 0;
    for (c, g) in cpu.frames.iter().zip(&gpu.frames) {
        assert_eq!(c.metrics.len(), g.metrics.len());
        for ((name, a), (_, b)) in c.metrics.iter().zip(&g.metrics) {
            assert_eq!(
                a.to_bits(),
                b.to_bits(),
                "{what} frame {} {name}: cpu {a} gpu {b}",
                c.index
            );
            compared += 1;
        }
    }
    compared
}

#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_scores_equal_cpu_bit_for_bit() {
    if let Some(why) = gpu_unavailable() {
        eprintln!("skipped: no usable CUDA backend here ({why})");
        return;
    }
    let mut table = vec![
        "| input | frames | values compared | bit differences |".to_owned(),
        "| --- | --- | --- | --- |".to_owned(),
    ];
    for p in reference_pairs() {
        let n = compare(
            |backend| {
                format!(
                    "vmafcompare name=cmp backend={backend} ! fakesink {} {}",
                    raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                    raw_branch(&p.distorted, p.width, p.height, p.format, "distorted")
                )
            },
            &format!("{}x{} {}", p.width, p.height, p.format),
        );
        table.push(format!(
            "| src01 {}x{} {} | {} | {n} | 0 |",
            p.width, p.height, p.format, p.frames
        ));
    }
    if let Some(dir) = std::env::var_os("VMAF_GPU_CLIPS") {
        let dir = std::path::PathBuf::from(dir);
        let (r, d) = (dir.join("ref_1080p.mp4"), dir.join("dist_1080p.mp4"));
        let dec = ["avdec_h264", "openh264dec", "nvh264dec"]
            .into_iter()
            .find(|d| gst::ElementFactory::find(d).is_some())
            .expect("an H.264 decoder (gstreamer1.0-libav, openh264 or nvcodec)");
        let n = compare(
            |backend| {
                format!(
                    "vmafcompare name=cmp backend={backend} ! fakesink \
                     filesrc location=\"{}\" ! qtdemux ! h264parse ! {dec} ! cmp.reference \
                     filesrc location=\"{}\" ! qtdemux ! h264parse ! {dec} ! cmp.distorted",
                    r.display(),
                    d.display()
                )
            },
            "1080p clips",
        );
        table.push(format!("| bikes 1920x1080 H.264 | {} | {n} | 0 |", n / 15));
    } else {
        eprintln!("VMAF_GPU_CLIPS not set: the 1080p real-content comparison was not run");
    }
    eprintln!("\n{}\n", table.join("\n"));
}

/// Every metric of `desc_for("cpu")` against `desc_for("cuda")`: bit for bit for the names
/// `exact` accepts, else within 1e-4. Returns (values compared, largest difference of the
/// others, its metric).
fn compare_close(
    desc_for: impl Fn(&str) -> String,
    what: &str,
    exact: impl Fn(&str) -> bool,
) -> (usize, f64, String) {
    let cpu = run(&desc_for("cpu"), LONG);
    let gpu = run(&desc_for("cuda"), LONG);
    assert!(cpu.errors.is_empty(), "{what} cpu: {:?}", cpu.errors);
    assert!(gpu.errors.is_empty(), "{what} cuda: {:?}", gpu.errors);
    assert_eq!(cpu.frames.len(), gpu.frames.len(), "{what}: frame count");
    assert!(!cpu.frames.is_empty(), "{what}: no frames");
    let (mut compared, mut worst, mut worst_name) = (0, 0.0f64, String::new());
    for (c, g) in cpu.frames.iter().zip(&gpu.frames) {
        assert_eq!(c.metrics.len(), g.metrics.len());
        for ((name, a), (_, b)) in c.metrics.iter().zip(&g.metrics) {
            if exact(name) {
                assert_eq!(
                    a.to_bits(),
                    b.to_bits(),
                    "{what} frame {} {name}: cpu {a} gpu {b}",
                    c.index
                );
            } else {
                let d = (a - b).abs();
                assert!(
                    d <= 1e-4,
                    "{what} frame {} {name}: cpu {a} gpu {b}",
                    c.index
                );
                if d > worst {
                    worst = d;
                    worst_name = name.clone();
                }
            }
            compared += 1;
        }
    }
    (compared, worst, worst_name)
}

/// VMAF v1 on the GPU against the CPU: the HFR motion (set on v0's model through
/// `motion.*` options) and, once the v1 models load, all eight of them at once. The integer
/// features (ADM, motion) bit for bit; the others (CAMBI, SpEED chroma, VIF's model-free
/// parts are integer too) and the scores within 1e-4, the largest difference printed.
#[test]
#[cfg_attr(
    not(gpu_tests),
    ignore = "needs an NVIDIA GPU (run with --include-ignored on a GPU host)"
)]
fn gpu_v1_equal_cpu() {
    if let Some(why) = gpu_unavailable() {
        eprintln!("skipped: no usable CUDA backend here ({why})");
        return;
    }
    let hfr = "vmaf_v0.6.1:motion.motion_five_frame_window=true:motion.motion_moving_average=true:motion.motion_max_val=18";
    let mut models = vec![hfr.to_owned()];
    let v1: Vec<String> = [
        "3d0h",
        "5d0h",
        "1d5h_2160",
        "3d0h_2160",
        "hfr_3d0h",
        "hfr_5d0h",
        "hfr_1d5h_2160",
        "hfr_3d0h_2160",
    ]
    .iter()
    .enumerate()
    .map(|(i, m)| {
        if i == 0 {
            format!("vmaf_v1.0.16_{m}")
        } else {
            format!("vmaf_v1.0.16_{m}:name=m_{m}")
        }
    })
    .collect();
    if gstvmafcompare::engine::model::Model::load("vmaf_v1.0.16_3d0h").is_ok() {
        models.push(v1.join(","));
    } else {
        eprintln!("the v1 models do not load in this build: only the HFR motion is compared");
    }
    let exact = |n: &str| n.starts_with("integer_") || n.starts_with("VMAF_integer_feature_motion");
    let mut table = vec![
        "| model | input | values | integer features | largest other difference |".to_owned(),
        "| --- | --- | --- | --- | --- |".to_owned(),
    ];
    let clips = std::env::var_os("VMAF_GPU_CLIPS").map(std::path::PathBuf::from);
    for model in &models {
        for p in reference_pairs().into_iter().filter(|p| p.width >= 576) {
            let (n, worst, name) = compare_close(
                |backend| {
                    format!(
                        "vmafcompare name=cmp backend={backend} model=\"{model}\" ! fakesink {} {}",
                        raw_branch(&p.reference, p.width, p.height, p.format, "reference"),
                        raw_branch(&p.distorted, p.width, p.height, p.format, "distorted")
                    )
                },
                &format!("{model} {}x{} {}", p.width, p.height, p.format),
                exact,
            );
            table.push(format!(
                "| {} | src01 {}x{} {} | {n} | bit-identical | {worst:.1e} {name} |",
                &model[..model.len().min(40)],
                p.width,
                p.height,
                p.format
            ));
        }
        if let Some(dir) = &clips {
            let (r, d) = (dir.join("ref_1080p.mp4"), dir.join("dist_1080p.mp4"));
            let dec = ["avdec_h264", "openh264dec", "nvh264dec"]
                .into_iter()
                .find(|d| gst::ElementFactory::find(d).is_some())
                .expect("an H.264 decoder");
            let (n, worst, name) = compare_close(
                |backend| {
                    format!(
                        "vmafcompare name=cmp backend={backend} model=\"{model}\" ! fakesink \
                         filesrc location=\"{}\" ! qtdemux ! h264parse ! {dec} ! cmp.reference \
                         filesrc location=\"{}\" ! qtdemux ! h264parse ! {dec} ! cmp.distorted",
                        r.display(),
                        d.display()
                    )
                },
                &format!("{model} 1080p clips"),
                exact,
            );
            table.push(format!(
                "| {} | bikes 1080p H.264 | {n} | bit-identical | {worst:.1e} {name} |",
                &model[..model.len().min(40)]
            ));
        }
    }
    eprintln!("\n{}\n", table.join("\n"));
}
