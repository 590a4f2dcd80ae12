//! `executeOp`: runs one eager op on tensor ids and returns its outputs as new ids.

use napi::bindgen_prelude::{Env, Unknown};
use napi::JsValue;

use super::args;
use super::attrs::{self, AttrBuffers};
use super::js_call;
use crate::env_state::{EnvState, Scratch};
use crate::error::{Error, Result};
use crate::js::{Js, Value};

/// Outputs beyond this are a caller's mistake, not an op's (the widest TF ops have a few dozen).
const MAX_OUTPUTS: i64 = 4096;

/// `executeOp(name, attrs, inputIds, numOutputs)` → `[{id, shape, dtype}]`.
#[napi_derive::napi(js_name = "executeOp")]
pub fn execute_op(
    env: Env,
    name: Unknown,
    attrs: Unknown,
    input_ids: Unknown,
    num_outputs: Unknown,
) -> napi::Result<Unknown<'static>> {
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
        let mut scratch = std::mem::take(&mut state.scratch);
        let result = execute(
            js,
            state,
            &mut scratch,
            name.raw(),
            attrs.raw(),
            input_ids.raw(),
            num_outputs.raw(),
        );
        scratch.outputs.clear();
        state.scratch = scratch;
        result.map(|v| js.to_unknown(v))
    })
}

fn execute(
    js: Js,
    state: &mut EnvState,
    scratch: &mut Scratch,
    name: Value,
    attrs: Value,
    input_ids: Value,
    num_outputs: Value,
) -> Result<Value> {
    let Scratch {
        op_name,
        attr_name,
        text,
        dims,
        outputs,
    } = scratch;
    let name = args::c_str(js, name, op_name, "op name")?;
    let label = name.to_str().unwrap_or("op");
    let room = args::integer(js, num_outputs, "numOutputs")?;
    if !(0..=MAX_OUTPUTS).contains(&room) {
        return Err(Error::Range(format!(
            "{label}: numOutputs must be in 0..={MAX_OUTPUTS}, got {room}"
        )));
    }
    let status = &state.status;
    let mut checked_out = state
        .ops
        .take(&state.context, name, status)
        .map_err(|e| e.context(label))?;
    let op = &mut checked_out.op;
    let prepared = attrs::apply(
        js,
        op,
        label,
        attrs,
        &mut AttrBuffers {
            name: attr_name,
            text,
            dims,
        },
        status,
    )
    .and_then(|()| {
        let count = args::array_length(js, input_ids, "inputIds")?;
        for i in 0..count {
            let id = args::tensor_id(js, js.element(input_ids, i)?, "inputIds[i]")?;
            let entry = state
                .tensors
                .get(id)
                .map_err(|e| e.context(&format!("{label} input {i}")))?;
            op.add_input(&entry.handle, status)
                .map_err(|e| e.context(label))?;
        }
        op.execute(outputs, room as usize, status)
            .map_err(|e| e.context(label))
    });
    state.ops.give_back(name, checked_out, status);
    prepared?;

    let result = js.array(outputs.len())?;
    for (i, handle) in outputs.drain(..).enumerate() {
        dims.clear();
        handle.dims_into(dims, status)?;
        let (dtype_name, bytes) = match handle.dtype() {
            Ok(dtype) => {
                let elements = args::element_count(dims, "output shape").unwrap_or(0) as u64;
                (
                    dtype.name.to_string(),
                    elements * dtype.element_bytes().unwrap_or(0) as u64,
                )
            }
            Err(code) => (format!("tf_dtype_{code}"), 0),
        };
        let id = state.tensors.insert(handle, bytes);
        let shape = js.array(dims.len())?;
        for (d, &dim) in dims.iter().enumerate() {
            js.set_element(shape, d as u32, js.number_value(dim as f64)?)?;
        }
        let info = js.object()?;
        js.set_property(info, c"id", js.number_value(id as f64)?)?;
        js.set_property(info, c"shape", shape)?;
        js.set_property(info, c"dtype", js.string_value(&dtype_name)?)?;
        js.set_element(result, i as u32, info)?;
    }
    Ok(result)
}
