//! Heap memory on TF's alignment. TF copies any buffer whose address is not a multiple of
//! `EIGEN_MAX_ALIGN_BYTES` (64 in this build); memory from here is shared with TF as is.

use std::alloc::{self, Layout};
use std::ptr::NonNull;

use crate::error::{Error, Result};

/// The alignment `TF_NewTensor` needs to share a buffer instead of copying it.
pub const TF_ALIGNMENT: usize = 64;

pub fn is_tf_aligned(ptr: *const u8) -> bool {
    (ptr as usize).is_multiple_of(TF_ALIGNMENT)
}

/// A zero-filled, 64-byte-aligned allocation. Zero-length requests still own a real block,
/// so `ptr()` is never dangling.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is plain bytes with a single owner; freeing it from any thread is fine.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    pub fn zeroed(len: usize) -> Result<AlignedBuf> {
        let layout = Self::layout(len)?;
        // SAFETY: the layout has a non-zero size (at least one alignment unit).
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = NonNull::new(raw)
            .ok_or_else(|| Error::Range(format!("cannot allocate {len} bytes: out of memory")))?;
        Ok(AlignedBuf { ptr, len })
    }

    fn layout(len: usize) -> Result<Layout> {
        Layout::from_size_align(len.max(TF_ALIGNMENT), TF_ALIGNMENT)
            .map_err(|_| Error::Range(format!("cannot allocate {len} bytes: too large")))
    }

    pub fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Hands ownership to a foreign owner (a JS ArrayBuffer); `from_raw` takes it back to free it.
    pub fn into_raw(self) -> (*mut u8, usize) {
        let parts = (self.ptr.as_ptr(), self.len);
        std::mem::forget(self);
        parts
    }

    /// # Safety
    /// `ptr` and `len` must come from `into_raw` and be passed back once.
    pub unsafe fn from_raw(ptr: *mut u8, len: usize) -> AlignedBuf {
        AlignedBuf {
            // SAFETY: into_raw only hands out non-null pointers.
            ptr: unsafe { NonNull::new_unchecked(ptr) },
            len,
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // The layout was valid when allocated, so rebuilding it cannot fail.
        if let Ok(layout) = Self::layout(self.len) {
            // SAFETY: ptr was allocated with exactly this layout and is freed once.
            unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_and_zeroed() {
        for len in [0, 1, 63, 64, 65, 1 << 20] {
            let buf = AlignedBuf::zeroed(len).unwrap();
            assert!(is_tf_aligned(buf.ptr()));
            // SAFETY: the buffer owns len initialized bytes.
            let bytes = unsafe { std::slice::from_raw_parts(buf.ptr(), len) };
            assert!(bytes.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn absurd_sizes_are_errors_not_aborts() {
        assert!(AlignedBuf::zeroed(usize::MAX - 8).is_err());
    }
}
