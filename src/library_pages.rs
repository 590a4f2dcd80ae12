//! libtensorflow's code and read-only data, let go of while the process exits.
//!
//! A process that ran a model has about 190 MB of libtensorflow's file pages mapped (its code and
//! read-only data, mostly mapped by the kernel's fault-around while the library loaded), and the
//! kernel unmaps them one page at a time when the process ends: 10-11 ms here, after Node's own
//! teardown, which a process using wasm does not pay. Node's teardown (its `'exit'` event to
//! the process's end, 6-8 ms) runs on one core. So from the `'exit'` event a thread of ours
//! drops those pages (`MADV_DONTNEED`) on the other core meanwhile, and the kernel has that
//! much less to unmap at the end.
//!
//! Dropping them changes nothing that runs afterwards: they are never written (the segments
//! without write permission of a library without text relocations), so a page touched again
//! (by a destructor at exit) is read back from the page cache as it was. Only the process's
//! main thread does it: a worker's `'exit'` is not the process's. Linux only: elsewhere the
//! call does nothing. No library offers this; it is a walk over the loaded objects' program
//! headers and one system call per chunk.

/// Starts dropping libtensorflow's read-only pages on a new thread, when called on the process's
/// main thread; returns at once.
#[cfg(target_os = "linux")]
pub fn release_in_background() {
    if !crate::js::is_process_main_thread() {
        return;
    }
    // A thread that cannot start only means the kernel unmaps the pages at the end, as before.
    let _ = std::thread::Builder::new()
        .name("tfjs-node-rs-exit".into())
        .spawn(|| {
            for range in read_only_ranges() {
                release(range);
            }
        });
}

#[cfg(not(target_os = "linux"))]
pub fn release_in_background() {}

/// Pages dropped per `madvise` call: the kernel holds the range's lock for one call, and Node's
/// teardown unmaps its heap meanwhile.
#[cfg(target_os = "linux")]
const CHUNK_BYTES: usize = 8 << 20;

/// A range of whole pages, `[start, end)`.
#[cfg(target_os = "linux")]
type PageRange = (usize, usize);

#[cfg(target_os = "linux")]
fn release((start, end): PageRange) {
    let mut at = start;
    while at < end {
        let len = CHUNK_BYTES.min(end - at);
        // SAFETY: [at, at + len) lies in a loaded library's segment without write permission, so
        // its pages only ever hold the file's bytes, which the kernel reads back on the next
        // touch; an error (a locked page) leaves the range mapped, which is harmless.
        unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_DONTNEED) };
        at += len;
    }
}

/// The whole pages of libtensorflow's loaded segments without write permission.
#[cfg(target_os = "linux")]
fn read_only_ranges() -> Vec<PageRange> {
    let mut ranges: Vec<PageRange> = Vec::new();
    // SAFETY: the callback only reads the headers dl_iterate_phdr hands it, during the call, and
    // `ranges` outlives the call.
    unsafe {
        libc::dl_iterate_phdr(
            Some(collect_ranges),
            (&mut ranges as *mut Vec<PageRange>).cast(),
        )
    };
    ranges
}

#[cfg(target_os = "linux")]
unsafe extern "C" fn collect_ranges(
    info: *mut libc::dl_phdr_info,
    _size: libc::size_t,
    data: *mut libc::c_void,
) -> libc::c_int {
    // SAFETY: dl_iterate_phdr passes a valid info for the call, and `data` is the Vec of
    // `read_only_ranges`.
    let (info, ranges) = unsafe { (&*info, &mut *data.cast::<Vec<PageRange>>()) };
    if info.dlpi_name.is_null() || info.dlpi_phdr.is_null() {
        return 0;
    }
    // SAFETY: a non-null dlpi_name is the object's NUL-terminated path.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) };
    if !name.to_bytes().windows(13).any(|w| w == b"libtensorflow") {
        return 0;
    }
    // SAFETY: dlpi_phdr points at dlpi_phnum program headers of the loaded object.
    let headers =
        unsafe { std::slice::from_raw_parts(info.dlpi_phdr, usize::from(info.dlpi_phnum)) };
    // SAFETY: the headers and the base are the loaded object's own.
    if unsafe { has_text_relocations(info.dlpi_addr as usize, headers) } {
        return 0;
    }
    // SAFETY: plain system call.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    for header in headers {
        if header.p_type != libc::PT_LOAD || header.p_flags & libc::PF_W != 0 {
            continue;
        }
        let start = info.dlpi_addr as usize + header.p_vaddr as usize;
        let end = start + header.p_memsz as usize;
        // Whole pages only: a page shared with a writable segment holds written bytes.
        let (start, end) = (start.div_ceil(page) * page, end / page * page);
        if start < end {
            ranges.push((start, end));
        }
    }
    0
}

/// An entry of an ELF64 dynamic section (`Elf64_Dyn`, which the libc crate does not declare).
#[cfg(target_os = "linux")]
#[repr(C)]
struct DynamicEntry {
    tag: i64,
    value: u64,
}

/// Whether the object's dynamic section asks for relocations in its read-only segments, whose
/// written pages dropping would undo (or the object has no dynamic section to tell).
#[cfg(target_os = "linux")]
unsafe fn has_text_relocations(base: usize, headers: &[libc::Elf64_Phdr]) -> bool {
    const DT_NULL: i64 = 0;
    const DT_TEXTREL: i64 = 22;
    const DT_FLAGS: i64 = 30;
    const DF_TEXTREL: u64 = 4;
    let Some(dynamic) = headers.iter().find(|h| h.p_type == libc::PT_DYNAMIC) else {
        return true;
    };
    let mut entry = (base + dynamic.p_vaddr as usize) as *const DynamicEntry;
    loop {
        // SAFETY: the dynamic section is an array of entries ending with DT_NULL, mapped while
        // the object is loaded.
        let DynamicEntry { tag, value } = unsafe { entry.read() };
        match tag {
            DT_NULL => return false,
            DT_TEXTREL => return true,
            DT_FLAGS if value & DF_TEXTREL != 0 => return true,
            _ => {}
        }
        // SAFETY: the entry is not DT_NULL, so another follows it.
        entry = unsafe { entry.add(1) };
    }
}
