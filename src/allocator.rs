//! The process allocator's policy for large buffers: on glibc, every block of at least
//! `MMAP_THRESHOLD_BYTES` is its own mapping, returned to the system when freed.
//!
//! TF allocates tensor buffers, and V8 the copies of reads, with the process's `malloc`. glibc
//! starts by mapping blocks of 128 KiB and more, but raises that threshold to the size of the
//! last mapped block freed (up to 32 MiB). From then on a loop of 4 MB tensors is served from
//! the heap, where a freed block is reused only if no small allocation was carved out of it in
//! between, and is never given back: how much stays resident then depends on the timing of other
//! threads' small allocations, so on the machine. Measured on one 2-core machine, 1000 reads
//! of 4 MB tensors peaked at 2.5-2.9 GB of RSS, though the views held never passed their
//! 512 MiB budget; on another, 0.73 GB. With the threshold fixed, RSS follows the bytes the
//! package counts (views held, tensors alive) on both.
//!
//! A fixed threshold also turns off glibc's raising of it, which is what this needs. The cost is
//! a fresh mapping (page faults) for each large block; over loops of 4 MB element-wise ops, of
//! 4 MB reads and of convolutions with 4 MB outputs it was within the noise of this machine. A user's own
//! `MALLOC_MMAP_THRESHOLD_` or `GLIBC_TUNABLES=glibc.malloc.mmap_threshold=...` is left in force.

/// Blocks this large or larger are mapped on their own. A megabyte keeps small tensors (most of
/// a model's intermediates at tfjs sizes) on the heap, where reuse is cheapest.
pub const MMAP_THRESHOLD_BYTES: usize = 1 << 20;

/// Sets the policy once per process; returns whether this call or an earlier one set it.
pub fn return_large_blocks_to_system() -> bool {
    static SET: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *SET.get_or_init(|| !user_set_threshold() && set_mmap_threshold(MMAP_THRESHOLD_BYTES))
}

fn user_set_threshold() -> bool {
    std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
        || std::env::var("GLIBC_TUNABLES").is_ok_and(|t| t.contains("mmap_threshold"))
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn set_mmap_threshold(bytes: usize) -> bool {
    let Ok(bytes) = libc::c_int::try_from(bytes) else {
        return false;
    };
    // SAFETY: mallopt only sets a parameter of glibc's allocator; it is thread-safe.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, bytes) == 1 }
}

/// Other allocators (musl, macOS's, Windows') give large blocks back on their own.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn set_mmap_threshold(_bytes: usize) -> bool {
    false
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    use super::*;

    /// Bytes glibc holds in mappings of their own.
    fn mapped_bytes() -> usize {
        // SAFETY: mallinfo2 only reads the allocator's statistics.
        unsafe { libc::mallinfo2() }.hblkhd
    }

    #[test]
    fn a_large_block_is_mapped_again_after_one_was_freed() {
        assert!(return_large_blocks_to_system() || user_set_threshold());
        if user_set_threshold() {
            return;
        }
        // By default glibc would serve the blocks after the first from its heap: the first free
        // raises its threshold past their size. Other tests allocate meanwhile, so one clean
        // round of the five after the first is asked for.
        let size = 4 << 20;
        let clean: Vec<bool> = (0..6)
            .map(|_| {
                let before = mapped_bytes();
                // SAFETY: a plain allocation, freed below; nothing else sees it.
                // (black_box: the compiler may drop an allocation nothing reads.)
                let block = std::hint::black_box(unsafe { libc::malloc(size) });
                let during = mapped_bytes();
                // SAFETY: `block` came from malloc above and is freed once.
                unsafe { libc::free(block) };
                !block.is_null() && during >= before + size && mapped_bytes() + size <= during
            })
            .collect();
        assert!(
            clean[1..].contains(&true),
            "no 4 MB block after the first was mapped on its own"
        );
    }
}
