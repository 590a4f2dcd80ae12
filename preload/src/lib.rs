//! A second, small addon that loads the tfjs-node-rs addon on a thread of its own while the
//! main thread compiles tfjs's JS (js/native_loader_core.js's `startLoading`).
//!
//! Loading the addon maps libtensorflow and runs its static initializers, which register every
//! op and kernel: 65-90 ms here, the largest part of `require`. The addon itself cannot start
//! that thread, as loading it is what loads libtensorflow (its DT_NEEDED). A worker thread
//! did it before, but its own start (22 ms from `new Worker` to its first line) came first;
//! this thread starts at once. It calls `dlopen` with the flags of Node's `process.dlopen`,
//! so that the library's symbols are bound in the same scope as when the main thread loads
//! it: when the main thread then loads the addon, the dynamic linker finds it loaded, or holds
//! the main thread until this load is done. Either way it is loaded once.

use std::ffi::CString;

/// Starts loading the shared library at `file` on a new thread and returns at once. A failed
/// load is not reported here: the main thread's own load of the same file reports it.
#[napi_derive::napi(js_name = "loadInBackground")]
pub fn load_in_background(file: String) -> napi::Result<()> {
    let path = CString::new(file)
        .map_err(|_| napi::Error::from_reason("loadInBackground: the path holds a NUL byte"))?;
    std::thread::Builder::new()
        .name("tfjs-node-rs-load".into())
        .spawn(move || {
            reserve_arena();
            open(&path)
        })
        .map_err(|e| napi::Error::from_reason(format!("loadInBackground: {e}")))?;
    Ok(())
}

/// Grows this thread's malloc arena to what libtensorflow's static initializers allocate from it,
/// before they run. glibc grows the arena of any thread but the main one by exactly what each
/// allocation needs, one `mprotect` per new page: the initializers' 17 MB took 4,100 of them,
/// each holding the process's memory map lock against the main thread's page faults. Blocks just
/// under the mmap threshold (128 KiB) grow it 30 pages a call; freed, their pages go back to the
/// system (`MADV_DONTNEED`) while the arena keeps them mapped, so the initializers' allocations
/// take no `mprotect`. No library does this: it is one loop, and glibc has no call for it.
/// Elsewhere (musl, macOS) it only costs the allocations.
fn reserve_arena() {
    const ARENA_BYTES: usize = 20 << 20;
    const BLOCK_BYTES: usize = 120 << 10;
    let mut blocks = Vec::with_capacity(ARENA_BYTES / BLOCK_BYTES);
    for _ in 0..ARENA_BYTES / BLOCK_BYTES {
        // SAFETY: a plain allocation, freed below and never read or written.
        let block = unsafe { libc::malloc(BLOCK_BYTES) };
        if block.is_null() {
            break;
        }
        blocks.push(block);
    }
    for block in blocks.into_iter().rev() {
        // SAFETY: each pointer came from malloc above and is freed once.
        unsafe { libc::free(block) };
    }
}

/// `dlopen(path, RTLD_LAZY)`, Node's flags; the handle stays open for the life of the process
/// (the addon's own load takes the library over).
fn open(path: &CString) {
    // SAFETY: `path` is a NUL-terminated string that outlives the call; dlopen is thread-safe.
    unsafe { libc::dlopen(path.as_ptr(), libc::RTLD_LAZY) };
}
