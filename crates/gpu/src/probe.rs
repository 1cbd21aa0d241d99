//! What this machine lacks for GPU decoding, found by loading the libraries the way
//! the device executor will (dlopen), so `--gpu` can say exactly what to install.

use std::path::PathBuf;

/// The nvCOMP libraries tried, newest ABI first (the wheels ship only versioned names).
const NVCOMP_NAMES: [&str; 2] = ["libnvcomp.so.6", "libnvcomp.so.5"];

/// Where nvCOMP was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub nvcomp: PathBuf,
}

/// Loads a shared library by name or path; `Err` with the loader's reason.
fn load(name: &std::ffi::OsStr) -> Result<libloading::Library, String> {
    // SAFETY: loading runs the library's initialisers; the CUDA driver and nvCOMP are
    // vendor libraries made to be loaded this way (cudarc and the nvCOMP wheels do the
    // same), and nothing from them is called here.
    unsafe { libloading::Library::new(name) }.map_err(|e| e.to_string())
}

/// The directory of nvCOMP's Python wheel (`nvidia/libnvcomp/lib64`), if installed.
fn wheel_dir() -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util, os; s = importlib.util.find_spec('nvidia.libnvcomp'); \
             print(os.path.join(list(s.submodule_search_locations)[0], 'lib64'))",
        ])
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    let dir = PathBuf::from(dir.trim());
    (out.status.success() && dir.is_dir()).then_some(dir)
}

/// The nvCOMP library: `SVAR2_NVCOMP`, then the wheel's directory, then the loader
/// path.
fn find_nvcomp() -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("SVAR2_NVCOMP") {
        return load(&p).map(|_| PathBuf::from(&p)).map_err(|e| {
            format!(
                "SVAR2_NVCOMP={}: cannot load it ({e})",
                PathBuf::from(&p).display()
            )
        });
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = wheel_dir() {
        candidates.extend(NVCOMP_NAMES.iter().map(|n| dir.join(n)));
    }
    candidates.extend(NVCOMP_NAMES.iter().map(PathBuf::from));
    candidates
        .into_iter()
        .find(|c| load(c.as_os_str()).is_ok())
        .ok_or_else(|| {
            "nvCOMP not found: pip install nvidia-libnvcomp-cu12, or set \
             SVAR2_NVCOMP=/path/libnvcomp.so.5"
                .to_string()
        })
}

/// Checks the CUDA driver, then nvCOMP; the error is the one line to show the user.
pub fn check() -> Result<Found, String> {
    load(std::ffi::OsStr::new("libcuda.so.1"))
        .map_err(|_| "no CUDA driver found (libcuda.so.1)".to_string())?;
    Ok(Found {
        nvcomp: find_nvcomp()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a machine without a GPU the answer names what is missing; with one it
    /// finds the libraries. Never a panic either way.
    #[test]
    fn check_names_what_is_missing() {
        match check() {
            Ok(f) => assert!(f.nvcomp.to_string_lossy().contains("nvcomp")),
            Err(e) => assert!(
                e == "no CUDA driver found (libcuda.so.1)"
                    || e.starts_with("nvCOMP not found")
                    || e.starts_with("SVAR2_NVCOMP="),
                "{e}"
            ),
        }
    }
}
