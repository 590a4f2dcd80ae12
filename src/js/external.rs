//! External ArrayBuffers: JS views over native memory, freed by their finalizer. This is how
//! aligned allocations and TF's own buffers reach JS without a copy.

use std::ffi::c_void;
use std::ptr;
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

/// An ArrayBuffer over a TF tensor's buffer; the tensor (one reference to the buffer) lives as
/// long as the ArrayBuffer does. Unlike `from_aligned`, this allocates nothing, so V8 is not told
/// of the memory: reporting the same TF buffer on every read made V8 collect on every large read.
pub fn from_tensor(js: Js, tensor: Tensor) -> Result<Value> {
    let (data, len) = tensor.bytes();
    let owner = tensor.leak();
    external(js, data, len, release_tensor, owner).inspect_err(|_| {
        // SAFETY: N-API did not take the tensor, so it is still ours to release.
        drop(unsafe { Tensor::from_leaked(owner) });
    })
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

unsafe extern "C" fn release_tensor(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: hint is the tensor leaked in `from_tensor`; V8 finalizes once. Dropping it may run a
    // TF deallocator, which routes any JS release through the env's release queue.
    drop(unsafe { Tensor::from_leaked(hint) });
    LIVE.fetch_sub(1, Ordering::Relaxed);
}

/// Tells V8 how much native memory its ArrayBuffers keep alive, so that GC runs when that
/// memory (not only the JS heap) grows.
fn adjust_external_memory(env: sys::napi_env, delta: i64) {
    let mut total = 0i64;
    // SAFETY: env is the live env of the running call or finalizer; total is a valid out-pointer.
    unsafe { sys::napi_adjust_external_memory(env, delta, &mut total) };
}
