//! The committed PTX (`kernels/ptx/*.ptx`, used where no nvcc exists) must match the CUDA
//! sources: each file's first line `// source-sha256: <hex>` is the SHA-256 of its `.cu`
//! followed by every `kernels/*.cuh` (sorted by name), and, where an nvcc 13.0.88 is found
//! (`NVCC`, `$CUDA_PATH/bin/nvcc`, `nvcc` on `PATH`, as build.rs looks), compiling the `.cu`
//! again gives the committed text byte for byte (header line aside).
//! Regenerate with `scripts/build-ptx.sh`.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

const PINNED_NVCC: &str = "V13.0.88";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root().join("kernels"))
        .expect("kernels/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    v
}

fn source_sha(cu: &Path) -> String {
    let mut h = Sha256::new();
    h.update(std::fs::read(cu).expect("read .cu"));
    for cuh in files("cuh") {
        h.update(std::fs::read(cuh).expect("read .cuh"));
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn find_nvcc() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NVCC").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if let Some(r) = std::env::var_os("CUDA_PATH").filter(|p| !p.is_empty()) {
        let p = Path::new(&r).join("bin").join("nvcc");
        if p.is_file() {
            return Some(p);
        }
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join("nvcc"))
        .find(|p| p.is_file())
}

fn committed(cu: &Path) -> (PathBuf, String) {
    let stem = cu.file_stem().unwrap().to_str().unwrap();
    let p = root()
        .join("kernels")
        .join("ptx")
        .join(format!("{stem}.ptx"));
    let text = std::fs::read_to_string(&p)
        .unwrap_or_else(|e| panic!("{}: {e} (run scripts/build-ptx.sh)", p.display()));
    (p, text)
}

#[test]
fn committed_ptx_matches_sources() {
    let kernels = files("cu");
    assert!(!kernels.is_empty(), "no kernels/*.cu");
    for cu in &kernels {
        let (p, text) = committed(cu);
        let first = text.lines().next().unwrap_or("");
        let want = format!("// source-sha256: {}", source_sha(cu));
        assert_eq!(
            first,
            want,
            "{} is stale for {} (run scripts/build-ptx.sh)",
            p.display(),
            cu.display()
        );
    }
}

#[test]
fn committed_ptx_equals_nvcc_output() {
    let Some(nvcc) = find_nvcc() else {
        eprintln!("skipped: no nvcc (NVCC, $CUDA_PATH/bin/nvcc, PATH)");
        return;
    };
    let version = Command::new(&nvcc)
        .arg("--version")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    if !version.contains(PINNED_NVCC) {
        eprintln!(
            "skipped: {} is not nvcc {PINNED_NVCC}, the PTX would differ in its header",
            nvcc.display()
        );
        return;
    }
    let tmp = std::env::temp_dir().join(format!("vmafcompare-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    for cu in files("cu") {
        let stem = cu.file_stem().unwrap().to_str().unwrap().to_owned();
        let out = tmp.join(format!("{stem}.ptx"));
        let status = Command::new(&nvcc)
            .current_dir(root())
            .args([
                "-ptx",
                "-arch=compute_75",
                "-O3",
                "--std=c++17",
                "-I",
                "kernels",
            ])
            .arg(Path::new("kernels").join(format!("{stem}.cu")))
            .arg("-o")
            .arg(&out)
            .status()
            .expect("run nvcc");
        assert!(status.success(), "nvcc failed on {stem}.cu");
        let fresh = std::fs::read_to_string(&out).unwrap();
        let (p, text) = committed(&cu);
        let body = text.split_once('\n').map_or("", |(_, b)| b);
        assert!(
            body == fresh,
            "{} differs from nvcc's output (run scripts/build-ptx.sh)",
            p.display()
        );
    }
    let _ = std::fs::remove_dir_all(&tmp);
}
