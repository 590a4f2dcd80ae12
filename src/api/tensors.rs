//! `createTensor`, `alloc`, `tensorDataSync`, `deleteTensor`.

use napi::bindgen_prelude::{Env, Unknown};
use napi::JsValue;

use super::args;
use super::state_call;
use crate::env_state::EnvState;
use crate::error::{Error, Result};
use crate::js::{Js, Value};
use crate::sharing;
use crate::tf::dtype::Layout;
use crate::tf::tensor::Tensor;

/// Makes a tensor from `data` (a typed array matching `dtype`, or an array of `Uint8Array` for
/// strings) and returns its id.
#[napi_derive::napi(
    js_name = "createTensor",
    ts_args_type = "shape: number[], dtype: DType, data: TypedArray | Uint8Array[]"
)]
pub fn create_tensor(env: Env, shape: Unknown, dtype: Unknown, data: Unknown) -> napi::Result<f64> {
    state_call(&env, |js, state| {
        create(js, state, shape.raw(), dtype.raw(), data.raw()).map(|id| id as f64)
    })
}

fn create(js: Js, state: &mut EnvState, shape: Value, dtype: Value, data: Value) -> Result<u64> {
    let mut dims = Vec::new();
    args::dims_into(js, shape, false, &mut dims, "shape")?;
    let count = args::element_count(&dims, "shape")?;
    let dtype = args::dtype(js, dtype, &mut state.text, "dtype")?;
    let (tensor, bytes) = match dtype.layout {
        Layout::Numeric { array, lanes } => {
            let view = js.typed_array(data)?.ok_or_else(|| {
                Error::Type(format!(
                    "data for a {} tensor must be a {}, got {}",
                    dtype.name,
                    array.js_name(),
                    args::type_name(js, data)
                ))
            })?;
            if view.detached {
                return Err(Error::Type("data: its ArrayBuffer is detached".into()));
            }
            if view.kind != Some(array) {
                return Err(Error::Type(format!(
                    "data for a {} tensor must be a {}, got {}",
                    dtype.name,
                    array.js_name(),
                    view.kind.map_or("another typed array", |k| k.js_name())
                )));
            }
            if view.length != count * lanes {
                return Err(Error::Range(format!(
                    "shape {dims:?} needs {} {} elements, got {}",
                    count * lanes,
                    array.js_name(),
                    view.length
                )));
            }
            let bytes = view.byte_length as u64;
            (
                state
                    .sharing
                    .tensor_from_typed_array(js, dtype, &dims, data, &view)?,
                bytes,
            )
        }
        Layout::Strings => (string_tensor(js, &dims, count, data)?, 0),
        Layout::Opaque => {
            return Err(Error::Type(format!(
                "cannot create a {} tensor from JS",
                dtype.name
            )))
        }
    };
    state.runtime.add_tensor(&tensor, bytes)
}

fn string_tensor(js: Js, dims: &[i64], count: usize, data: Value) -> Result<Tensor> {
    let length = args::array_length(js, data, "data for a string tensor")? as usize;
    if length != count {
        return Err(Error::Range(format!(
            "shape {dims:?} needs {count} strings, got {length}"
        )));
    }
    let mut views = Vec::with_capacity(length);
    for i in 0..length as u32 {
        let item = js.element(data, i)?;
        let view = js
            .typed_array(item)?
            .filter(|v| v.kind == Some(crate::tf::dtype::ArrayKind::Uint8) && !v.detached)
            .ok_or_else(|| Error::Type(format!("data[{i}] must be a Uint8Array of UTF-8 bytes")))?;
        views.push(view);
    }
    let items: Vec<&[u8]> = views.iter().map(|v| v.bytes()).collect();
    Tensor::strings(dims, &items)
}

/// A zero-filled typed array of `length` elements of `dtype` on 64-byte-aligned memory: data
/// written into it becomes a tensor without a copy.
#[napi_derive::napi(
    ts_args_type = "dtype: NumericDType, length: number",
    ts_return_type = "TypedArray"
)]
pub fn alloc(env: Env, dtype: Unknown, length: Unknown) -> napi::Result<Unknown<'static>> {
    state_call(&env, |js, state| {
        let dtype = args::dtype(js, dtype.raw(), &mut state.text, "dtype")?;
        let Layout::Numeric { array, lanes } = dtype.layout else {
            return Err(Error::Type(format!(
                "alloc: {} tensors are not backed by a typed array",
                dtype.name
            )));
        };
        let length = args::integer(js, length.raw(), "length")?;
        let length = usize::try_from(length)
            .map_err(|_| Error::Range(format!("length must be >= 0, got {length}")))?;
        let elements = length
            .checked_mul(lanes)
            .ok_or_else(|| Error::Range(format!("cannot allocate {length} elements: too large")))?;
        Ok(js.to_unknown(sharing::aligned_typed_array(js, array, elements)?))
    })
}

/// The tensor's values: a typed array (a view of TF's buffer when no other tensor can see it,
/// else a copy; see `sharing::Sharing::read_typed_array`), or `Uint8Array[]` for strings. `aliased`: the
/// caller knows other owners of `id` (a read of it is then always a copy).
#[napi_derive::napi(
    js_name = "tensorDataSync",
    ts_args_type = "id: number, aliased?: boolean",
    ts_return_type = "TypedArray | Uint8Array[]"
)]
pub fn tensor_data_sync(
    env: Env,
    id: Unknown,
    aliased: Option<bool>,
) -> napi::Result<Unknown<'static>> {
    state_call(&env, |js, state| {
        let id = args::tensor_id(js, id.raw(), "id")?;
        let dtype = state.runtime.readable_dtype(&state.prepared_ops, id)?;
        let value = match dtype.layout {
            Layout::Numeric { array, .. } => state.runtime.read_typed_array(
                &mut state.sharing,
                js,
                id,
                array,
                aliased.unwrap_or(false),
            )?,
            Layout::Strings => {
                let tensor = state.runtime.resolve(&state.prepared_ops, id)?;
                let items = tensor.string_items();
                let out = js.array(items.len())?;
                for (i, item) in items.iter().enumerate() {
                    js.set_element(out, i as u32, js.uint8_array_copy(item)?)?;
                }
                state.sharing.counters.copied_reads += 1;
                out
            }
            Layout::Opaque => {
                return Err(Error::Type(format!(
                    "a {} tensor holds no readable data",
                    dtype.name
                )))
            }
        };
        Ok(js.to_unknown(value))
    })
}

/// A new tensor id for the tensor's buffer under another shape, without running an op or
/// copying: what a tfjs reshape is. Numeric dtypes only (strings take TF's Reshape op).
#[napi_derive::napi(
    js_name = "reshapeTensor",
    ts_args_type = "id: number, shape: number[]"
)]
pub fn reshape_tensor(env: Env, id: Unknown, shape: Unknown) -> napi::Result<f64> {
    state_call(&env, |js, state| {
        let id = args::tensor_id(js, id.raw(), "id")?;
        reshape(js, state, id, shape.raw()).map(|id| id as f64)
    })
}

fn reshape(js: Js, state: &mut EnvState, id: u64, shape: Value) -> Result<u64> {
    let mut dims = Vec::new();
    args::dims_into(js, shape, false, &mut dims, "shape")?;
    args::element_count(&dims, "shape")?;
    state.runtime.reshape(&state.prepared_ops, id, &dims)
}

#[napi_derive::napi(js_name = "deleteTensor", ts_args_type = "id: number")]
pub fn delete_tensor(env: Env, id: Unknown) -> napi::Result<()> {
    state_call(&env, |js, state| {
        let id = args::tensor_id(js, id.raw(), "id")?;
        state.runtime.delete_tensor(id)
    })
}

/// Deletes the tensor so that its buffer is freed on a native thread other than the JS thread,
/// as TF's own threads may do. Exists to exercise the release queue; see `stats().pendingReleases`.
#[napi_derive::napi(js_name = "dropTensorOnNativeThread", ts_args_type = "id: number")]
pub fn drop_tensor_on_native_thread(env: Env, id: Unknown) -> napi::Result<()> {
    state_call(&env, |js, state| {
        let id = args::tensor_id(js, id.raw(), "id")?;
        let tensor = state.runtime.take_tensor(&state.prepared_ops, id)?;
        std::thread::spawn(move || drop(tensor))
            .join()
            .map_err(|_| Error::Invalid("the native thread panicked".into()))
    })
}
