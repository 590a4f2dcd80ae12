//! `TFE_TensorHandle`: an eager tensor, the unit that ops consume and produce.

use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::dtype::{index_of_tf_code, DType, DTYPES};
use super::extern_decls::TFE_TensorHandleDataTypeCode;
use super::status::Status;
use super::tensor::Tensor;
use crate::error::{Error, Result};

pub struct TensorHandle(NonNull<sys::TFE_TensorHandle>);

// SAFETY: a TFE_TensorHandle is reference-counted with atomics and may be used and deleted on
// any thread (TF's own executors do); the binding never uses one handle from two threads at once
// (a handle moves with the job or the table entry that owns it).
unsafe impl Send for TensorHandle {}

impl TensorHandle {
    pub fn from_tensor(tensor: &Tensor, status: &Status) -> Result<TensorHandle> {
        // SAFETY: the tensor is live; the handle takes its own reference to the buffer.
        let raw = unsafe { sys::TFE_NewTensorHandle(tensor.raw(), status.raw()) };
        status.check()?;
        TensorHandle::adopt(raw)
            .ok_or_else(|| Error::Invalid("TFE_NewTensorHandle returned no handle".into()))
    }

    /// A second handle to the same tensor (no copy), which keeps the tensor alive on its own.
    pub fn share(&self, status: &Status) -> Result<TensorHandle> {
        // SAFETY: the handle is live; TF returns a new handle with its own reference.
        let raw = unsafe { sys::TFE_TensorHandleCopySharingTensor(self.raw(), status.raw()) };
        status.check()?;
        TensorHandle::adopt(raw).ok_or_else(|| {
            Error::Invalid("TFE_TensorHandleCopySharingTensor returned no handle".into())
        })
    }

    /// Takes ownership of a handle TF produced (an op's output).
    pub(super) fn adopt(raw: *mut sys::TFE_TensorHandle) -> Option<TensorHandle> {
        NonNull::new(raw).map(TensorHandle)
    }

    pub(super) fn raw(&self) -> *mut sys::TFE_TensorHandle {
        self.0.as_ptr()
    }

    /// The dtype, or the raw TF code when the binding has no row for it.
    pub fn dtype(&self) -> std::result::Result<DType, i32> {
        self.dtype_index().map(|i| DTYPES[i])
    }

    /// The dtype's row in `DTYPES`, or the raw TF code when there is none.
    pub fn dtype_index(&self) -> std::result::Result<usize, i32> {
        // SAFETY: the handle is live; the call only reads it.
        let code = unsafe { TFE_TensorHandleDataTypeCode(self.raw()) };
        index_of_tf_code(code).ok_or(code)
    }

    pub fn rank(&self, status: &Status) -> Result<i32> {
        // SAFETY: the handle is live; the call only reads it.
        let rank = unsafe { sys::TFE_TensorHandleNumDims(self.raw(), status.raw()) };
        status.check()?;
        Ok(rank)
    }

    /// Appends the handle's dims to `dims`.
    pub fn dims_into(&self, dims: &mut Vec<i64>, status: &Status) -> Result<()> {
        // SAFETY: the handle is live; indices stay below the rank TF reported.
        unsafe {
            let rank = sys::TFE_TensorHandleNumDims(self.raw(), status.raw());
            status.check()?;
            for i in 0..rank {
                dims.push(sys::TFE_TensorHandleDim(self.raw(), i, status.raw()));
            }
        }
        status.check()
    }

    /// The device that ran the op producing the handle (`backing: false`), or the device whose
    /// memory holds the tensor (`backing: true`). Waits for that op to finish.
    pub fn device_name(&self, backing: bool, status: &Status) -> Result<String> {
        // SAFETY: the handle is live; TF returns a string the handle owns, copied at once.
        unsafe {
            let name = if backing {
                sys::TFE_TensorHandleBackingDeviceName(self.raw(), status.raw())
            } else {
                sys::TFE_TensorHandleDeviceName(self.raw(), status.raw())
            };
            status.check()?;
            if name.is_null() {
                return Err(Error::Invalid("TF returned no device name".into()));
            }
            Ok(std::ffi::CStr::from_ptr(name)
                .to_string_lossy()
                .into_owned())
        }
    }

    /// The host tensor behind the handle; it shares the handle's buffer.
    pub fn resolve(&self, status: &Status) -> Result<Tensor> {
        // SAFETY: the handle is live; the returned tensor holds its own reference.
        let raw = unsafe { sys::TFE_TensorHandleResolve(self.raw(), status.raw()) };
        status.check()?;
        Tensor::adopt(raw)
            .ok_or_else(|| Error::Invalid("TFE_TensorHandleResolve returned no tensor".into()))
    }
}

/// Copies each of `handles` (tensors on another task's device) to this process, each copy's
/// result apart, in order. Each copy is a request of its own that waits for its answer: one
/// after another, every handle past the first added a round trip (a training step's loss and 4
/// new weights: 40 ms more per step at 10 ms RTT), so handles past the first are copied from
/// threads of their own, at once.
pub fn copy_each_here(handles: Vec<TensorHandle>, status: &Status) -> Vec<Result<TensorHandle>> {
    fn copy(handle: &TensorHandle, status: &Status) -> Result<TensorHandle> {
        TensorHandle::from_tensor(&handle.resolve(status)?, status)
    }
    let mut handles = handles.into_iter();
    let Some(first) = handles.next() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = handles
            .map(|handle| {
                std::thread::Builder::new()
                    .name("tfjs-node-rs copy".into())
                    .spawn_scoped(scope, move || copy(&handle, &Status::new()))
                    .map_err(|e| Error::Invalid(format!("cannot start a copy's thread: {e}")))
            })
            .collect();
        let mut copies = vec![copy(&first, status)];
        for other in others {
            copies.push(other.and_then(|thread| {
                thread
                    .join()
                    .unwrap_or_else(|_| Err(Error::Invalid("a copy's thread panicked".into())))
            }));
        }
        copies
    })
}

impl Drop for TensorHandle {
    fn drop(&mut self) {
        // SAFETY: this TensorHandle owns the handle and deletes it once.
        unsafe { sys::TFE_DeleteTensorHandle(self.raw()) }
    }
}
