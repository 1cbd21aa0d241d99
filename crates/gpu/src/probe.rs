//! What this machine lacks for GPU decoding, found by loading the libraries the way
//! the device executor does (dlopen), so `--gpu` can say exactly what to install.
//!
//! nvCOMP and NVRTC are looked up alike: an environment variable with the path, the
//! Python wheel's directory, then the loader path. NVRTC found in a wheel is loaded
//! here and kept loaded, so cudarc's later `dlopen("libnvrtc.so.12")` finds it
//! without `LD_LIBRARY_PATH`.

use std::path::PathBuf;
use std::sync::OnceLock;

/// One library svar2 looks for.
struct Wanted {
    /// The environment variable that names its path.
    env: &'static str,
    /// The wheel's Python module and its library directory.
    module: &'static str,
    subdir: &'static str,
    /// Names tried, newest first (the wheels ship only versioned names).
    names: &'static [&'static str],
    /// What to tell a user who has none.
    install: &'static str,
}

const NVCOMP: Wanted = Wanted {
    env: "SVAR2_NVCOMP",
    module: "nvidia.libnvcomp",
    subdir: "lib64",
    names: &["libnvcomp.so.6", "libnvcomp.so.5"],
    install: "nvCOMP not found: pip install nvidia-libnvcomp-cu12, or set \
              SVAR2_NVCOMP=/path/libnvcomp.so.5",
};

const NVRTC: Wanted = Wanted {
    env: "SVAR2_NVRTC",
    module: "nvidia.cuda_nvrtc",
    subdir: "lib",
    names: &["libnvrtc.so.12", "libnvrtc.so.13", "libnvrtc.so"],
    install: "NVRTC not found: pip install nvidia-cuda-nvrtc-cu12, or set \
              SVAR2_NVRTC=/path/libnvrtc.so.12",
};

/// Where the libraries were found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    pub nvcomp: PathBuf,
    pub nvrtc: PathBuf,
}

/// Loads a shared library by name or path; `Err` with the loader's reason.
fn load(name: &std::ffi::OsStr) -> Result<libloading::Library, String> {
    // SAFETY: loading runs the library's initialisers; the CUDA driver, NVRTC and
    // nvCOMP are vendor libraries made to be loaded this way (cudarc and the wheels do
    // the same), and nothing from them is called here.
    unsafe { libloading::Library::new(name) }.map_err(|e| e.to_string())
}

/// The library directory of a wheel's Python module, if installed.
fn wheel_dir(module: &str, subdir: &str) -> Option<PathBuf> {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            &format!(
                "import importlib.util, os; s = importlib.util.find_spec('{module}'); \
                 print(os.path.join(list(s.submodule_search_locations)[0], '{subdir}'))"
            ),
        ])
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    let dir = PathBuf::from(dir.trim());
    (out.status.success() && dir.is_dir()).then_some(dir)
}

/// Finds and loads `w`; returns the path and the loaded library.
fn find(w: &Wanted) -> Result<(PathBuf, libloading::Library), String> {
    if let Some(p) = std::env::var_os(w.env) {
        let path = PathBuf::from(&p);
        return load(&p)
            .map(|l| (path.clone(), l))
            .map_err(|e| format!("{}={}: cannot load it ({e})", w.env, path.display()));
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = wheel_dir(w.module, w.subdir) {
        candidates.extend(w.names.iter().map(|n| dir.join(n)));
    }
    candidates.extend(w.names.iter().map(PathBuf::from));
    candidates
        .into_iter()
        .find_map(|c| load(c.as_os_str()).ok().map(|l| (c, l)))
        .ok_or_else(|| w.install.to_string())
}

/// NVRTC, loaded once and kept loaded for cudarc (see the module note).
pub fn nvrtc() -> Result<PathBuf, String> {
    static NVRTC_LIB: OnceLock<Result<(PathBuf, libloading::Library), String>> = OnceLock::new();
    NVRTC_LIB
        .get_or_init(|| find(&NVRTC))
        .as_ref()
        .map(|(p, _)| p.clone())
        .map_err(Clone::clone)
}

/// nvCOMP's path.
pub fn nvcomp() -> Result<PathBuf, String> {
    find(&NVCOMP).map(|(p, _)| p)
}

/// Checks the CUDA driver, then nvCOMP, then NVRTC; the error is the one line to
/// show the user.
pub fn check() -> Result<Found, String> {
    load(std::ffi::OsStr::new("libcuda.so.1"))
        .map_err(|_| "no CUDA driver found (libcuda.so.1)".to_string())?;
    Ok(Found {
        nvcomp: nvcomp()?,
        nvrtc: nvrtc()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the CUDA driver is installed, looked up apart from `load` (the loader
    /// cache and the usual directories).
    fn driver_installed() -> bool {
        let cached = std::process::Command::new("ldconfig")
            .arg("-p")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("libcuda.so.1"));
        cached
            || [
                "/usr/lib/x86_64-linux-gnu",
                "/usr/lib64",
                "/usr/local/nvidia/lib64",
            ]
            .iter()
            .any(|d| std::path::Path::new(d).join("libcuda.so.1").exists())
    }

    /// Without a driver the answer is exactly that; with one, the libraries are
    /// found (the test set-up installs their wheels) or the missing one is named.
    #[test]
    fn check_names_what_is_missing() {
        match (driver_installed(), check()) {
            (false, r) => assert_eq!(r, Err("no CUDA driver found (libcuda.so.1)".into())),
            (true, Ok(f)) => {
                assert!(f.nvcomp.to_string_lossy().contains("nvcomp"), "{f:?}");
                assert!(f.nvrtc.to_string_lossy().contains("nvrtc"), "{f:?}");
            }
            (true, Err(e)) => assert!(
                e.starts_with("nvCOMP not found") || e.starts_with("NVRTC not found"),
                "{e}"
            ),
        }
    }

    /// The libraries themselves, driver or not: found in the wheels the test set-up
    /// installs, and a path given by the environment that does not load is named.
    #[test]
    fn nvcomp_and_nvrtc_are_found_or_named() {
        let wheels = std::process::Command::new("python3")
            .args(["-c", "import nvidia.libnvcomp, nvidia.cuda_nvrtc"])
            .status()
            .is_ok_and(|s| s.success());
        if wheels {
            assert!(nvcomp().unwrap().to_string_lossy().contains("libnvcomp.so"));
            assert!(nvrtc().unwrap().to_string_lossy().contains("libnvrtc.so"));
        }
        let w = Wanted {
            env: "SVAR2_TEST_PROBE_NVCOMP",
            ..NVCOMP
        };
        std::env::set_var(w.env, "/nonexistent/libnvcomp.so.5");
        let e = find(&w)
            .map(|(p, _)| p)
            .expect_err("a path that does not exist does not load");
        assert!(
            e.starts_with("SVAR2_TEST_PROBE_NVCOMP=/nonexistent/libnvcomp.so.5: cannot load it"),
            "{e}"
        );
        let none = Wanted {
            env: "SVAR2_TEST_PROBE_UNSET",
            module: "no_such_module_here",
            names: &["libsvar2-no-such-library.so"],
            ..NVCOMP
        };
        assert_eq!(find(&none).err(), Some(NVCOMP.install.to_string()));
    }
}
