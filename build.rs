//! Build script: plugin version info, and the CUDA kernels in `kernels/*.cu` turned into PTX.
//!
//! With an `nvcc` (the `NVCC` variable, else `$CUDA_PATH/bin/nvcc`, else `nvcc` on `PATH`) each
//! kernel is compiled to `$OUT_DIR/<name>.ptx`; without one the committed `kernels/ptx/<name>.ptx`
//! (made by `scripts/build-ptx.sh` with the pinned nvcc, checked by `tests/ptx_fresh.rs`) is
//! copied there.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The nvcc this build uses, if any: `NVCC`, `$CUDA_PATH/bin/nvcc`, `nvcc` on `PATH`.
fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Some(root) = std::env::var_os("CUDA_PATH").filter(|p| !p.is_empty()) {
        let p = Path::new(&root).join("bin").join("nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

/// Whether the tests that need an NVIDIA GPU run by default: `VMAFCOMPARE_GPU_TESTS=1` or `0`
/// decides; otherwise they do where the NVIDIA driver's control device exists. Elsewhere (CI)
/// they are compiled as ignored, so the test count says "ignored" instead of passing them
/// empty; a GPU host runs binaries built elsewhere with `--include-ignored`.
fn gpu_tests() -> bool {
    match std::env::var("VMAFCOMPARE_GPU_TESTS").as_deref() {
        Ok("1") => true,
        Ok("0") => false,
        _ => Path::new("/dev/nvidiactl").exists(),
    }
}

fn main() {
    gst_plugin_version_helper::info();

    println!("cargo::rustc-check-cfg=cfg(gpu_tests)");
    println!("cargo::rerun-if-env-changed=VMAFCOMPARE_GPU_TESTS");
    if gpu_tests() {
        println!("cargo::rustc-cfg=gpu_tests");
    }

    println!("cargo::rerun-if-env-changed=NVCC");
    println!("cargo::rerun-if-env-changed=CUDA_PATH");
    println!("cargo::rerun-if-changed=kernels");
    println!("cargo::rerun-if-changed=src/cuda");

    let Some(out_dir) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        println!("cargo::error=OUT_DIR is not set (build.rs must run under cargo)");
        return;
    };
    let mut kernels: Vec<PathBuf> = match std::fs::read_dir("kernels") {
        Ok(rd) => rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "cu"))
            .collect(),
        Err(e) => {
            println!("cargo::error=cannot read kernels/: {e}");
            return;
        }
    };
    kernels.sort();
    let nvcc = find_nvcc();
    for cu in &kernels {
        let Some(stem) = cu.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        let out = out_dir.join(format!("{stem}.ptx"));
        let committed = Path::new("kernels").join("ptx").join(format!("{stem}.ptx"));
        if let Some(nvcc) = &nvcc {
            let status = Command::new(nvcc)
                .args([
                    "-ptx",
                    "-arch=compute_75",
                    "-O3",
                    "--std=c++17",
                    "-I",
                    "kernels",
                ])
                .arg(cu)
                .arg("-o")
                .arg(&out)
                .status();
            match status {
                Ok(s) if s.success() => {}
                Ok(s) => {
                    println!(
                        "cargo::error={} failed on {}: {s}",
                        nvcc.display(),
                        cu.display()
                    );
                }
                Err(e) => println!("cargo::error=cannot run {}: {e}", nvcc.display()),
            }
        } else if committed.is_file() {
            if let Err(e) = std::fs::copy(&committed, &out) {
                println!("cargo::error=cannot copy {}: {e}", committed.display());
            }
        } else {
            println!(
                "cargo::error=no nvcc found and no committed {}: install the CUDA toolkit's nvcc \
                 (>= 12; or `pip install nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 \
                 nvidia-cuda-crt==13.0.88 nvidia-cuda-runtime==13.0.96`) and set NVCC or \
                 CUDA_PATH, or run scripts/build-ptx.sh",
                committed.display()
            );
        }
    }
}
