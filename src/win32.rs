//! The few Win32 calls the addon makes on Windows, where the Linux code uses `dlopen`,
//! `dladdr` and `gettid` (all in kernel32, which every Windows process has loaded).

use std::ffi::{c_void, OsStr, OsString};
use std::os::windows::ffi::{OsStrExt, OsStringExt};

type Module = *mut c_void;

/// Also search the loaded DLL's own folder for the DLLs it imports.
const LOAD_WITH_ALTERED_SEARCH_PATH: u32 = 0x8;
const GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS: u32 = 0x4;
const GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT: u32 = 0x2;
const GET_MODULE_HANDLE_EX_FLAG_PIN: u32 = 0x1;
const FORMAT_MESSAGE_FROM_SYSTEM: u32 = 0x1000;
const FORMAT_MESSAGE_IGNORE_INSERTS: u32 = 0x200;

#[link(name = "kernel32")]
extern "system" {
    fn LoadLibraryExW(name: *const u16, file: *mut c_void, flags: u32) -> Module;
    fn GetModuleHandleExW(flags: u32, name: *const u16, module: *mut Module) -> i32;
    fn GetModuleFileNameW(module: Module, name: *mut u16, size: u32) -> u32;
    fn GetLastError() -> u32;
    fn GetCurrentThreadId() -> u32;
    fn FormatMessageW(
        flags: u32,
        source: *const c_void,
        message: u32,
        language: u32,
        buffer: *mut u16,
        size: u32,
        args: *mut c_void,
    ) -> u32;
}

fn wide(s: &OsStr) -> Vec<u16> {
    s.encode_wide().chain(std::iter::once(0)).collect()
}

/// Loads the DLL at `path` (its imports searched for beside it first) and keeps it loaded for
/// the life of the process.
pub fn load_library(path: &str) -> Result<(), String> {
    let name = wide(OsStr::new(path));
    // SAFETY: `name` is a NUL-terminated UTF-16 string for the call; the handle is never freed.
    let module = unsafe {
        LoadLibraryExW(
            name.as_ptr(),
            std::ptr::null_mut(),
            LOAD_WITH_ALTERED_SEARCH_PATH,
        )
    };
    if module.is_null() {
        return Err(last_error());
    }
    Ok(())
}

/// The file of the module that holds `address`.
pub fn module_path(address: *const c_void) -> Option<String> {
    let mut module: Module = std::ptr::null_mut();
    let flags =
        GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_UNCHANGED_REFCOUNT;
    // SAFETY: with FROM_ADDRESS, `name` is read as an address inside a module, not a string;
    // the module's count is left alone, and it stays loaded (the C API is never unloaded).
    if unsafe { GetModuleHandleExW(flags, address.cast(), &mut module) } == 0 {
        return None;
    }
    let mut buffer = vec![0u16; 32 * 1024];
    // SAFETY: `buffer` is writable for the length passed.
    let len = unsafe { GetModuleFileNameW(module, buffer.as_mut_ptr(), buffer.len() as u32) };
    if len == 0 || len as usize >= buffer.len() {
        return None;
    }
    Some(
        OsString::from_wide(&buffer[..len as usize])
            .to_string_lossy()
            .into_owned(),
    )
}

/// Keeps the addon loaded until the process ends, as `-z nodelete` does on Linux. Node unloads
/// an addon with the last environment that loaded it (a worker's, say); loaded again, its
/// statics would start over while TF, which stays, still holds the ops it registered then, and
/// registering them again is a fatal error in TF.
pub fn pin_addon() {
    static PINNED: std::sync::Once = std::sync::Once::new();
    PINNED.call_once(|| {
        let mut module: Module = std::ptr::null_mut();
        let flags = GET_MODULE_HANDLE_EX_FLAG_FROM_ADDRESS | GET_MODULE_HANDLE_EX_FLAG_PIN;
        // SAFETY: with FROM_ADDRESS, `name` is read as an address inside a module: this
        // function's, in the addon. A failure leaves the addon unpinned, as before.
        unsafe { GetModuleHandleExW(flags, pin_addon as *const u16, &mut module) };
    });
}

/// The calling thread's OS id.
pub fn thread_id() -> u32 {
    // SAFETY: no preconditions.
    unsafe { GetCurrentThreadId() }
}

/// The system's message for this thread's last error.
fn last_error() -> String {
    // SAFETY: no preconditions.
    let code = unsafe { GetLastError() };
    let mut buffer = [0u16; 512];
    // SAFETY: `buffer` is writable for the length passed; no inserts are read.
    let len = unsafe {
        FormatMessageW(
            FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
            std::ptr::null(),
            code,
            0,
            buffer.as_mut_ptr(),
            buffer.len() as u32,
            std::ptr::null_mut(),
        )
    } as usize;
    let message = String::from_utf16_lossy(&buffer[..len.min(buffer.len())]);
    format!("{} (error {code})", message.trim_end())
}
