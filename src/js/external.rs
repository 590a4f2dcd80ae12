//! External ArrayBuffers: JS views over native memory, freed by their finalizer. This is how
//! aligned allocations and TF's own buffers reach JS without a copy.

use std::ffi::c_void;
use std::ptr;

use napi::sys;

use super::{Js, Value};
use crate::error::Result;
use crate::tf::aligned::AlignedBuf;
use crate::tf::tensor::Tensor;

/// An ArrayBuffer that owns `buf` and frees it when collected.
pub fn from_aligned(js: Js, buf: AlignedBuf) -> Result<Value> {
    let (data, len) = buf.into_raw();
    let mut out = ptr::null_mut();
    // SAFETY: data holds len bytes owned by the new ArrayBuffer; free_aligned reclaims them once,
    // with the length carried in the hint.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(
            js.raw_env(),
            data.cast(),
            len,
            Some(free_aligned),
            len as *mut c_void,
            &mut out,
        )
    };
    if let Err(err) = js.check(status) {
        // SAFETY: N-API did not take the buffer, so it is still ours to free.
        drop(unsafe { AlignedBuf::from_raw(data, len) });
        return Err(err);
    }
    Ok(out)
}

/// An ArrayBuffer over a TF tensor's buffer; the tensor (one reference to the buffer) lives as
/// long as the ArrayBuffer does.
pub fn from_tensor(js: Js, tensor: Tensor) -> Result<Value> {
    let (data, len) = tensor.bytes();
    let owner = tensor.leak();
    let mut out = ptr::null_mut();
    // SAFETY: the buffer stays valid while `owner` holds its reference; release_tensor drops it once.
    let status = unsafe {
        sys::napi_create_external_arraybuffer(
            js.raw_env(),
            data.cast(),
            len,
            Some(release_tensor),
            owner,
            &mut out,
        )
    };
    if let Err(err) = js.check(status) {
        // SAFETY: N-API did not take the tensor, so it is still ours to release.
        drop(unsafe { Tensor::from_leaked(owner) });
        return Err(err);
    }
    Ok(out)
}

unsafe extern "C" fn free_aligned(_env: sys::napi_env, data: *mut c_void, hint: *mut c_void) {
    // SAFETY: data and the length in hint come from `from_aligned`; V8 finalizes once.
    drop(unsafe { AlignedBuf::from_raw(data.cast(), hint as usize) });
}

unsafe extern "C" fn release_tensor(_env: sys::napi_env, _data: *mut c_void, hint: *mut c_void) {
    // SAFETY: hint is the tensor leaked in `from_tensor`; V8 finalizes once. Dropping it may run a
    // TF deallocator, which routes any JS release through the env's release queue.
    drop(unsafe { Tensor::from_leaked(hint) });
}
