//! `TF_Tensor`: host memory that TF reads, either borrowed from its owner or TF's own.

use std::ffi::c_void;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::aligned::AlignedBuf;
use super::dtype::DType;
use super::status::Status;
use crate::error::{Error, Result};

/// Gives borrowed memory back to its owner once TF no longer needs it. TF may run it on any of
/// its threads, or at once inside `TF_NewTensor` when it decides to copy.
pub type Release = Box<dyn FnOnce() + Send>;

pub struct Tensor(NonNull<sys::TF_Tensor>);

// SAFETY: a TF_Tensor is a reference-counted buffer; TF itself deletes them from any thread.
unsafe impl Send for Tensor {}

impl Tensor {
    /// Lends `len` bytes at `data` to TF. Returns the tensor and whether TF shares the memory
    /// (`true`) or copied it, in which case `release` has already run.
    ///
    /// # Safety
    /// `data` must stay valid for `len` bytes until `release` runs.
    pub unsafe fn lend(
        dtype: DType,
        dims: &[i64],
        data: *mut u8,
        len: usize,
        release: Release,
    ) -> Result<(Tensor, bool)> {
        let arg = Box::into_raw(Box::new(release));
        // SAFETY: dims outlives the call; the caller keeps data valid until run_release runs,
        // and run_release reclaims `arg` exactly once.
        let raw = unsafe {
            sys::TF_NewTensor(
                dtype.tf,
                dims.as_ptr(),
                dims.len() as i32,
                data.cast(),
                len,
                Some(run_release),
                arg.cast(),
            )
        };
        let tensor = Tensor::from_raw(raw, dtype.name)?;
        let shared = tensor.bytes().0 == data;
        Ok((tensor, shared))
    }

    /// A tensor that owns a copy of `bytes`.
    pub fn copy_of(dtype: DType, dims: &[i64], bytes: &[u8]) -> Result<Tensor> {
        // SAFETY: dims outlives the call; TF allocates len bytes (aligned) and owns them.
        let raw = unsafe {
            sys::TF_AllocateTensor(dtype.tf, dims.as_ptr(), dims.len() as i32, bytes.len())
        };
        let tensor = Tensor::from_raw(raw, dtype.name)?;
        let (dst, len) = tensor.bytes();
        if len != bytes.len() {
            return Err(Error::Invalid(format!(
                "TF allocated {len} bytes for a {} tensor of {} bytes",
                dtype.name,
                bytes.len()
            )));
        }
        if len > 0 {
            // SAFETY: dst holds len writable bytes that nothing else references yet.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, len) };
        }
        Ok(tensor)
    }

    /// A `TF_STRING` tensor holding a copy of each item. Its buffer frees the strings it owns,
    /// which `TF_AllocateTensor` would leak.
    pub fn strings(dims: &[i64], items: &[&[u8]]) -> Result<Tensor> {
        let len = items.len() * std::mem::size_of::<sys::TF_TString>();
        let buf = AlignedBuf::zeroed(len)?;
        let first = buf.ptr().cast::<sys::TF_TString>();
        for (i, item) in items.iter().enumerate() {
            // SAFETY: buf holds items.len() TF_TString slots; each is initialized before the copy.
            unsafe {
                let slot = first.add(i);
                sys::TF_StringInit(slot);
                sys::TF_StringCopy(slot, item.as_ptr().cast(), item.len());
            }
        }
        let (data, len) = buf.into_raw();
        // SAFETY: the buffer is handed to TF, and free_strings takes it back once.
        let raw = unsafe {
            sys::TF_NewTensor(
                sys::TF_STRING,
                dims.as_ptr(),
                dims.len() as i32,
                data.cast(),
                len,
                Some(free_strings),
                std::ptr::null_mut(),
            )
        };
        Tensor::from_raw(raw, "string")
    }

    fn from_raw(raw: *mut sys::TF_Tensor, dtype_name: &str) -> Result<Tensor> {
        NonNull::new(raw)
            .map(Tensor)
            .ok_or_else(|| Error::Invalid(format!("TF refused to create a {dtype_name} tensor")))
    }

    /// Takes ownership of a tensor TF handed out (from `TFE_TensorHandleResolve`).
    pub(super) fn adopt(raw: *mut sys::TF_Tensor) -> Option<Tensor> {
        NonNull::new(raw).map(Tensor)
    }

    pub(super) fn raw(&self) -> *mut sys::TF_Tensor {
        self.0.as_ptr()
    }

    /// The same buffer under another shape (no copy). TF refuses, with an error, shapes whose
    /// element count differs.
    pub fn reshaped(&self, dtype: DType, dims: &[i64], status: &Status) -> Result<Tensor> {
        // SAFETY: an empty tensor is allocated to receive the view; both tensors are live, dims
        // outlives the call, and TF only replaces `to`'s contents.
        let to = Tensor::from_raw(
            unsafe { sys::TF_AllocateTensor(dtype.tf, [0i64].as_ptr(), 1, 0) },
            dtype.name,
        )?;
        // SAFETY: as above.
        unsafe {
            sys::TF_TensorBitcastFrom(
                self.raw(),
                dtype.tf,
                to.raw(),
                dims.as_ptr(),
                dims.len() as i32,
                status.raw(),
            )
        };
        status.check()?;
        Ok(to)
    }

    /// The start and byte length of the tensor's buffer.
    pub fn bytes(&self) -> (*mut u8, usize) {
        // SAFETY: the tensor is live; both calls only read its header.
        unsafe {
            (
                sys::TF_TensorData(self.raw()).cast(),
                sys::TF_TensorByteSize(self.raw()),
            )
        }
    }

    /// Whether this tensor holds the only reference to a buffer TF allocated: no other tensor,
    /// handle or TF op output shares it (TF's own test before it moves a buffer).
    pub fn is_sole_owner(&self) -> bool {
        // SAFETY: the tensor is live; TF_TensorMaybeMove only reads the buffer's reference counts
        // and returns the tensor itself or null, taking nothing.
        !unsafe { sys::TF_TensorMaybeMove(self.raw()) }.is_null()
    }

    /// The buffer's bytes.
    pub fn byte_slice(&self) -> &[u8] {
        let (data, len) = self.bytes();
        if len == 0 || data.is_null() {
            return &[];
        }
        // SAFETY: TF's buffer holds len bytes at data for as long as the tensor (the borrow).
        unsafe { std::slice::from_raw_parts(data, len) }
    }

    pub fn dims(&self) -> Vec<i64> {
        // SAFETY: the tensor is live; the calls only read its shape, at valid indices.
        unsafe {
            (0..sys::TF_NumDims(self.raw()))
                .map(|i| sys::TF_Dim(self.raw(), i))
                .collect()
        }
    }

    /// The buffer as float32 values; an error when it cannot be one (size or alignment).
    pub fn f32s(&self) -> Result<&[f32]> {
        let (data, len) = self.f32_buffer()?;
        // SAFETY: f32_buffer checked the alignment and size; the tensor owns the buffer for
        // as long as the borrow of self.
        Ok(unsafe { std::slice::from_raw_parts(data, len) })
    }

    /// `f32s`, writable: for a tensor TF just allocated for this caller alone (a kernel's
    /// output).
    pub fn f32s_mut(&mut self) -> Result<&mut [f32]> {
        let (data, len) = self.f32_buffer()?;
        // SAFETY: as in f32s; the exclusive borrow of self is the only access (the caller's
        // contract above).
        Ok(unsafe { std::slice::from_raw_parts_mut(data, len) })
    }

    fn f32_buffer(&self) -> Result<(*mut f32, usize)> {
        let (data, len) = self.bytes();
        let size = std::mem::size_of::<f32>();
        if len == 0 {
            return Ok((std::ptr::NonNull::dangling().as_ptr(), 0));
        }
        let fits = !data.is_null()
            && len.is_multiple_of(size)
            && (data as usize).is_multiple_of(std::mem::align_of::<f32>());
        if fits {
            Ok((data.cast(), len / size))
        } else {
            Err(Error::Invalid(
                "the tensor's buffer cannot hold float32 values".into(),
            ))
        }
    }

    /// The tensor's element bytes, borrowed from it.
    fn element_bytes(&self) -> &[u8] {
        let (data, len) = self.bytes();
        if len == 0 {
            return &[];
        }
        // SAFETY: the buffer holds `len` initialized bytes and lives as long as self.
        unsafe { std::slice::from_raw_parts(data, len) }
    }

    /// The elements of an int32 or int64 tensor, widened; `None` for other dtypes.
    pub fn integers(&self, dtype: DType) -> Option<Vec<i64>> {
        let bytes = self.element_bytes();
        match dtype.tf {
            sys::TF_INT32 => Some(widened(bytes, |b| i32::from_ne_bytes(b) as i64)),
            sys::TF_INT64 => Some(widened(bytes, i64::from_ne_bytes)),
            _ => None,
        }
    }

    /// The elements of a float32 or float64 tensor, widened; `None` for other dtypes.
    pub fn floats(&self, dtype: DType) -> Option<Vec<f64>> {
        let bytes = self.element_bytes();
        match dtype.tf {
            sys::TF_FLOAT => Some(widened(bytes, |b| f32::from_ne_bytes(b) as f64)),
            sys::TF_DOUBLE => Some(widened(bytes, f64::from_ne_bytes)),
            _ => None,
        }
    }

    /// The items of a `TF_STRING` tensor, borrowed from it.
    pub fn string_items(&self) -> Vec<&[u8]> {
        let (data, len) = self.bytes();
        let count = len / std::mem::size_of::<sys::TF_TString>();
        let first = data.cast::<sys::TF_TString>();
        (0..count)
            .map(|i| {
                // SAFETY: a TF_STRING tensor's buffer is `count` initialized TF_TStrings that live as
                // long as self; the returned slices borrow self.
                unsafe {
                    let item = first.add(i);
                    let ptr = sys::TF_StringGetDataPointer(item).cast::<u8>();
                    let size = sys::TF_StringGetSize(item);
                    if size == 0 {
                        &[][..]
                    } else {
                        std::slice::from_raw_parts(ptr, size)
                    }
                }
            })
            .collect()
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        // SAFETY: this Tensor owns one reference to the TF_Tensor.
        unsafe { sys::TF_DeleteTensor(self.raw()) }
    }
}

/// Each `N`-byte element of `bytes` through `convert` (native byte order).
fn widened<const N: usize, T>(bytes: &[u8], convert: impl Fn([u8; N]) -> T) -> Vec<T> {
    bytes
        .chunks_exact(N)
        .map(|chunk| {
            let mut element = [0u8; N];
            element.copy_from_slice(chunk);
            convert(element)
        })
        .collect()
}

unsafe extern "C" fn run_release(_data: *mut c_void, _len: usize, arg: *mut c_void) {
    // SAFETY: arg is the Box<Release> leaked in `lend`; TF calls each deallocator once.
    let release = unsafe { Box::from_raw(arg.cast::<Release>()) };
    release();
}

unsafe extern "C" fn free_strings(data: *mut c_void, len: usize, _arg: *mut c_void) {
    let first = data.cast::<sys::TF_TString>();
    for i in 0..len / std::mem::size_of::<sys::TF_TString>() {
        // SAFETY: every slot was initialized in `strings` and is freed once, here.
        unsafe { sys::TF_StringDealloc(first.add(i)) };
    }
    // SAFETY: data/len are the AlignedBuf handed over in `strings`.
    drop(unsafe { AlignedBuf::from_raw(data.cast(), len) });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    fn float32() -> DType {
        DType::from_name("float32").unwrap()
    }

    /// Lends 16 bytes at `offset` into a fresh buffer; returns whether TF shared them, and the
    /// number of releases seen before and after the tensor is dropped.
    fn lend_at(offset: usize) -> (bool, usize, usize) {
        let buf = AlignedBuf::zeroed(32).unwrap();
        let releases = Arc::new(AtomicUsize::new(0));
        let counter = releases.clone();
        // SAFETY: buf outlives the tensor (dropped before buf); offset + 16 bytes lie inside it.
        let (tensor, shared) = unsafe {
            let release: Release = Box::new(move || {
                counter.fetch_add(1, Ordering::SeqCst);
            });
            Tensor::lend(float32(), &[4], buf.ptr().add(offset), 16, release)
        }
        .unwrap();
        let before = releases.load(Ordering::SeqCst);
        drop(tensor);
        (shared, before, releases.load(Ordering::SeqCst))
    }

    #[test]
    fn aligned_memory_is_shared_and_released_once() {
        assert_eq!(lend_at(0), (true, 0, 1));
    }

    #[test]
    fn misaligned_memory_is_copied_and_released_at_once() {
        assert_eq!(lend_at(4), (false, 1, 1));
    }

    #[test]
    fn strings_round_trip() {
        let long = vec![b'x'; 100];
        let items: [&[u8]; 3] = [b"", b"short", &long];
        let tensor = Tensor::strings(&[3], &items).unwrap();
        assert_eq!(tensor.string_items(), items.to_vec());
    }

    #[test]
    fn copies_hold_their_bytes() {
        let bytes: Vec<u8> = (0..16).collect();
        let tensor = Tensor::copy_of(float32(), &[4], &bytes).unwrap();
        let (ptr, len) = tensor.bytes();
        // SAFETY: the tensor owns len bytes at ptr.
        assert_eq!(unsafe { std::slice::from_raw_parts(ptr, len) }, &bytes[..]);
    }
}
