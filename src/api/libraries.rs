//! `preloadLibrary`: loads a shared library by absolute path before TF looks for it by name;
//! `loadOpLibrary`: loads a library of custom ops and kernels into TF.
//!
//! The GPU build of libtensorflow opens the CUDA libraries (`libcudart.so.12`, `libcublas.so.12`,
//! `libcudnn.so.9`, ...) with `dlopen` by soname when it creates its first context. The loader
//! (js/native_loader_core.js) opens each one from the package's own copy first: the dynamic
//! linker then hands TF the already-loaded library, so no `LD_LIBRARY_PATH` is needed.

#[cfg(unix)]
use std::ffi::CStr;
use std::ffi::CString;

use crate::tf::op_def;
use crate::tf::status::Status;

/// Loads the op library at `path` into TF (`TF_LoadLibrary`: its ops and kernels become
/// available to every context and graph) and returns the names of the ops it defines. TF's
/// error names what failed: the file, a missing symbol, an op registered twice.
#[napi_derive::napi(js_name = "loadOpLibrary")]
pub fn load_op_library(path: String) -> napi::Result<Vec<String>> {
    let c_path = CString::new(path.as_str())
        .map_err(|_| napi::Error::from_reason(format!("library path {path:?} holds a NUL byte")))?;
    let status = Status::new();
    op_def::load_op_library(&c_path, &status)
        .map_err(|err| napi::Error::from_reason(format!("loading op library {path}: {err}")))
}

/// Loads the shared library at `path` (`RTLD_NOW | RTLD_LOCAL`, as TF opens its own) and keeps
/// it loaded for the life of the process.
#[cfg(unix)]
#[napi_derive::napi(js_name = "preloadLibrary")]
pub fn preload_library(path: String) -> napi::Result<()> {
    let c_path = CString::new(path.as_str())
        .map_err(|_| napi::Error::from_reason(format!("library path {path:?} holds a NUL byte")))?;
    // SAFETY: `c_path` is a valid NUL-terminated string for the call; the handle is never
    // closed, so the library stays loaded while TF uses it.
    let handle = unsafe { libc::dlopen(c_path.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
    if handle.is_null() {
        return Err(napi::Error::from_reason(format!(
            "cannot load {path}: {}",
            last_dl_error()
        )));
    }
    Ok(())
}

// The doc comment is the Unix one's: napi writes it to binding.d.ts, which every build shares.
// Here the DLL's own imports are looked for beside it first (LOAD_WITH_ALTERED_SEARCH_PATH).
/// Loads the shared library at `path` (`RTLD_NOW | RTLD_LOCAL`, as TF opens its own) and keeps
/// it loaded for the life of the process.
#[cfg(windows)]
#[napi_derive::napi(js_name = "preloadLibrary")]
pub fn preload_library(path: String) -> napi::Result<()> {
    crate::win32::load_library(&path)
        .map_err(|err| napi::Error::from_reason(format!("cannot load {path}: {err}")))
}

/// The dynamic linker's message for the last failed call on this thread.
#[cfg(unix)]
fn last_dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next dl* call
    // on this thread; it is copied out at once.
    let message = unsafe { libc::dlerror() };
    if message.is_null() {
        return "unknown error".into();
    }
    // SAFETY: non-null, so a NUL-terminated string (see above).
    unsafe { CStr::from_ptr(message) }
        .to_string_lossy()
        .into_owned()
}
