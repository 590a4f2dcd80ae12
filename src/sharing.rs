//! Tensors and memory: where JS memory becomes TF memory and back, without copying when the
//! alignment allows, and counted either way.

use crate::env_state::{Counters, EnvState};
use crate::error::{Error, Result};
use crate::js::reference::JsRef;
use crate::js::{external, Js, TypedArrayView, Value};
use crate::tf::aligned::{is_tf_aligned, AlignedBuf};
use crate::tf::dtype::{ArrayKind, DType};
use crate::tf::tensor::Tensor;

/// A tensor over a typed array's memory: shared when TF accepts the address (64-byte aligned),
/// else one copy. A strong reference keeps the array alive until TF releases the memory.
pub fn tensor_from_typed_array(
    js: Js,
    state: &mut EnvState,
    dtype: DType,
    dims: &[i64],
    array: Value,
    view: &TypedArrayView,
) -> Result<Tensor> {
    let counters = &mut state.counters;
    if view.byte_length == 0 || !is_tf_aligned(view.data) {
        counters.copied_creates += 1;
        return Tensor::copy_of(dtype, dims, view.bytes());
    }
    let reference = JsRef::new(js, array)?;
    let releases = state.releases.clone();
    // SAFETY: the reference keeps the typed array, and so its ArrayBuffer's memory, alive until
    // TF runs the release; a detached buffer was refused by the caller.
    let (tensor, shared) = unsafe {
        Tensor::lend(
            dtype,
            dims,
            view.data,
            view.byte_length,
            Box::new(move || releases.release(reference)),
        )
    }?;
    if shared {
        counters.shared_creates += 1;
    } else {
        counters.copied_creates += 1;
    }
    Ok(tensor)
}

/// A typed array over the tensor's buffer (no copy); the array keeps the buffer alive.
pub fn typed_array_of_tensor(
    js: Js,
    counters: &mut Counters,
    tensor: Tensor,
    kind: ArrayKind,
) -> Result<Value> {
    let (_, byte_length) = tensor.bytes();
    let length = byte_length / kind.element_bytes();
    let buffer = if byte_length == 0 {
        js.empty_array_buffer()?
    } else {
        counters.shared_reads += 1;
        external::from_tensor(js, tensor)?
    };
    js.typed_array_value(kind, length, buffer)
}

/// A zero-filled typed array on aligned native memory, which `createTensor` shares with TF.
pub fn aligned_typed_array(js: Js, kind: ArrayKind, length: usize) -> Result<Value> {
    let bytes = length
        .checked_mul(kind.element_bytes())
        .ok_or_else(|| Error::Range(format!("cannot allocate {length} elements: too large")))?;
    let buffer = external::from_aligned(js, AlignedBuf::zeroed(bytes)?)?;
    js.typed_array_value(kind, length, buffer)
}
