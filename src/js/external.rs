//! External ArrayBuffers: JS views over native memory, freed by their finalizer. This is how
//! aligned allocations and TF's own buffers reach JS without a copy.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};

use napi::sys;

use super::{Js, Value};
use crate::error::Result;
use crate::tf::aligned::AlignedBuf;
use crate::tf::tensor::Tensor;

/// ArrayBuffers made here and not yet finalized, in the whole process (finalizers may run
/// after their env's state is gone, so this cannot be per env).
static LIVE: AtomicUsize = AtomicUsize::new(0);

pub fn live_count() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// An ArrayBuffer that owns `buf` and frees it when collected.
pub fn from_aligned(js: Js, buf: AlignedBuf) -> Result<Value> {
    let (data, len) = buf.into_raw();
    // The hint carries the length free_aligned needs to rebuild the allocation.
    let out = external(js, data, len, free_aligned, len as *mut c_void).inspect_err(|_| {
        // SAFETY: N-API did not take the buffer, so it is still ours to free.
        drop(unsafe { AlignedBuf::from_raw(data, len) });
    })?;
    adjust_external_memory(js.raw_env(), len as i64);
    Ok(out)
}

/// A read's hold on a TF tensor (one reference to its buffer), shared by the ArrayBuffer over
/// that buffer and the env's list of such views (`sharing::ReadViews`). Whichever learns first
/// that the ArrayBuffer is gone releases the tensor: its finalizer, which Node runs only after
/// the event loop turns, or the list, which can tell from a weak reference right after V8 has
/// collected the ArrayBuffer.
pub struct TensorHold {
    tensor: RefCell<Option<Tensor>>,
    bytes: usize,
}

impl TensorHold {
    pub fn is_released(&self) -> bool {
        self.tensor.borrow().is_none()
    }

    /// Lets the tensor go (once), when nothing in JS can reach the ArrayBuffer over it.
    pub fn release(&self) {
        let Some(tensor) = self.tensor.borrow_mut().take() else {
            return;
        };
        // Dropping it may run a TF deallocator, which routes any JS release through the env's
        // release queue.
        drop(tensor);
        VIEW_BYTES.fetch_sub(self.bytes, Ordering::Relaxed);
    }
}

/// Bytes of TF buffers that read views hold, process-wide.
static VIEW_BYTES: AtomicUsize = AtomicUsize::new(0);

pub fn view_bytes() -> usize {
    VIEW_BYTES.load(Ordering::Relaxed)
}

/// An ArrayBuffer over a TF tensor's buffer, and the hold that keeps the tensor alive as long as
/// the ArrayBuffer may be reached. V8 counts the ArrayBuffer's bytes as external memory itself,
/// which makes large reads collect the heap now and then (in a heap of 300k objects, every
/// second 40 MB read took 5-10 ms). Taking that count back only moved the collections to the
/// next allocations (measured: the same total over 14 reads), so the count stays V8's; this
/// allocates nothing, so nothing more is reported.
pub fn from_tensor(js: Js, tensor: Tensor) -> Result<(Value, Rc<TensorHold>)> {
    let (data, len) = tensor.bytes();
    let hold = Rc::new(TensorHold {
        tensor: RefCell::new(Some(tensor)),
        bytes: len,
    });
    VIEW_BYTES.fetch_add(len, Ordering::Relaxed);
    let hint = Rc::into_raw(hold.clone()).cast_mut().cast();
    match external(js, data, len, release_hold, hint) {
        Ok(buffer) => Ok((buffer, hold)),
        Err(err) => {
            // SAFETY: N-API did not take the hint, so its count is still ours to drop.
            drop(unsafe { Rc::from_raw(hint.cast::<TensorHold>()) });
            hold.release();
            Err(err)
        }
    }
}

type Finalizer = unsafe extern "C" fn(sys::napi_env, *mut c_void, *mut c_void);

/// An external ArrayBuffer over `len` bytes at `data`; `finalize(hint)` runs once when it is
/// collected. On error the caller still owns what `hint` stands for.
fn external(
    js: Js,
    data: *mut u8,
    len: usize,
    finalize: Finalizer,
    hint: *mut c_void,
) -> Result<Value> {
    let mut out = ptr::null_mut();
    // SAFETY: the caller keeps data valid until `finalize` runs; N-API calls it at most once.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(
            js.raw_env(),
            data.cast(),
            len,
            Some(finalize),
            hint,
            &mut out,
        )
    };
    js.check(status)?;
    LIVE.fetch_add(1, Ordering::Relaxed);
    Ok(out)
}

unsafe extern "C" fn free_aligned(env: sys::napi_env, data: *mut c_void, hint: *mut c_void) {
    // SAFETY: data and the length in hint come from `from_aligned`; V8 finalizes once.
    drop(unsafe { AlignedBuf::from_raw(data.cast(), hint as usize) });
    adjust_external_memory(env, -(hint as i64));
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

unsafe extern "C" fn release_hold(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: hint is the count of the hold taken in `from_tensor`; V8 finalizes once.
    let hold = unsafe { Rc::from_raw(hint.cast::<TensorHold>()) };
    hold.release();
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

/// Tells V8 how much native memory its ArrayBuffers keep alive, so that GC runs when that
/// memory (not only the JS heap) grows.
fn adjust_external_memory(env: sys::napi_env, delta: i64) {
    let mut total = 0i64;
    // SAFETY: env is the live env of the running call or finalizer; total is a valid out-pointer.
    unsafe { sys::napi_adjust_external_memory(env, delta, &mut total) };
}
