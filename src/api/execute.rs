//! Op execution: `executeOp` (attrs read per call, outputs as objects) and the fast path,
//! `prepareOp` + `runPreparedOp` (attrs read once; ids and output shapes pass through a
//! Float64Array, so a call allocates no JS objects). Both run through `crate::ops`.

use std::ffi::CString;

use napi::bindgen_prelude::{Env, Unknown};
use napi::JsValue;

use super::args;
use super::attrs;
use super::state_call;
use crate::env_state::EnvState;
use crate::error::{Error, Result};
use crate::js::{Js, TypedArrayView, Value};
use crate::op_plan::PreparedOp;
use crate::ops::OutputInfo;
use crate::tf::dtype::DTYPES;

/// `executeOp(name, attrs, inputIds, numOutputs)` → `[{id, shape, dtype}]`.
#[napi_derive::napi(
    js_name = "executeOp",
    ts_args_type = "name: string, attrs: OpAttr[] | null | undefined, inputIds: number[], numOutputs: number",
    ts_return_type = "TensorInfo[]"
)]
pub fn execute_op(
    env: Env,
    name: Unknown,
    attrs: Unknown,
    input_ids: Unknown,
    num_outputs: Unknown,
) -> napi::Result<Unknown<'static>> {
    state_call(&env, |js, state| {
        let value = execute(
            js,
            state,
            name.raw(),
            attrs.raw(),
            input_ids.raw(),
            num_outputs.raw(),
        )?;
        Ok(js.to_unknown(value))
    })
}

fn execute(
    js: Js,
    state: &mut EnvState,
    name: Value,
    attrs: Value,
    input_ids: Value,
    num_outputs: Value,
) -> Result<Value> {
    let mut op_name = Vec::new();
    let name = args::c_str(js, name, &mut op_name, "op name")?;
    let room = args::integer(js, num_outputs, "numOutputs")?;
    let count = args::array_length(js, input_ids, "inputIds")?;
    let ids = (0..count)
        .map(|i| args::tensor_id(js, js.element(input_ids, i)?, &format!("inputIds[{i}]")))
        .collect::<Result<Vec<u64>>>()?;
    let prepared = prepare(js, state, name.to_owned(), attrs)?;
    let outputs = state
        .runtime
        .run_op(&state.prepared_ops, &prepared, &ids, room)?;
    outputs_to_js(js, outputs)
}

/// Describes registered outputs to JS as `[{id, shape, dtype}]`.
pub(super) fn outputs_to_js(js: Js, outputs: Vec<OutputInfo>) -> Result<Value> {
    let result = js.array(outputs.len())?;
    for (i, OutputInfo { id, dtype, dims }) in outputs.into_iter().enumerate() {
        let dtype_name = dtype.map_or("unknown", |index| DTYPES[index].name);
        let shape = js.array(dims.len())?;
        for (d, &dim) in dims.iter().enumerate() {
            js.set_element(shape, d as u32, js.number_value(dim as f64)?)?;
        }
        let info = js.object()?;
        js.set_property(info, c"id", js.number_value(id as f64)?)?;
        js.set_property(info, c"shape", shape)?;
        js.set_property(info, c"dtype", js.string_value(dtype_name)?)?;
        js.set_element(result, i as u32, info)?;
    }
    Ok(result)
}

/// Reads and checks `attrs` for op `name` once; returns a handle for `runPreparedOp`.
#[napi_derive::napi(
    js_name = "prepareOp",
    ts_args_type = "name: string, attrs: OpAttr[] | null | undefined"
)]
pub fn prepare_op(env: Env, name: Unknown, attrs: Unknown) -> napi::Result<u32> {
    state_call(&env, |js, state| {
        let mut buf = Vec::new();
        let name = args::c_str(js, name.raw(), &mut buf, "op name")?.to_owned();
        let prepared = prepare(js, state, name, attrs.raw())?;
        state.prepared_ops.push(prepared);
        Ok((state.prepared_ops.len() - 1) as u32)
    })
}

/// Op `name` with `attrs` read from JS and checked against its definition.
fn prepare(js: Js, state: &mut EnvState, name: CString, attrs: Value) -> Result<PreparedOp> {
    let label = name.to_string_lossy().into_owned();
    state.runtime.prepare_op(name, |op, status| {
        attrs::read(js, op, &label, attrs, status)
    })
}

/// Whether prepared op `prepared` can be a graph node and computes the same outputs from the
/// same inputs every time (no random numbers): values a recorded call may read back.
#[napi_derive::napi(js_name = "preparedOpIsDeterministic")]
pub fn prepared_op_is_deterministic(env: Env, prepared: u32) -> napi::Result<bool> {
    state_call(&env, |_, state| {
        let op = state
            .prepared_ops
            .get(prepared as usize)
            .ok_or_else(|| Error::Invalid(format!("prepared op {prepared} does not exist")))?;
        Ok(op.node.is_some_and(|kind| !kind.random))
    })
}

/// Runs a prepared op. `io` holds the `numInputs` input ids on entry; on return it holds, for each
/// output, `id, dtype index (into dtypeNames()), rank, dims...`. Returns the number of outputs.
#[napi_derive::napi(
    js_name = "runPreparedOp",
    ts_args_type = "prepared: number, io: Float64Array, numInputs: number, numOutputs: number"
)]
pub fn run_prepared_op(
    env: Env,
    prepared: u32,
    io: Unknown,
    num_inputs: u32,
    num_outputs: u32,
) -> napi::Result<u32> {
    state_call(&env, |js, state| {
        let mut view = io_array(js, io)?;
        let io = io_values(&mut view)?;
        with_ids(io, num_inputs, |ids, io| {
            let plans = &state.prepared_ops;
            if (prepared as usize) >= plans.len() {
                return Err(Error::Invalid(format!(
                    "prepared op {prepared} does not exist"
                )));
            }
            state
                .runtime
                .run_prepared(plans, prepared, ids, num_outputs as i64, io)
        })
    })
}

/// The `io` array of the fast path (`runPreparedOp`, `runCall`).
pub(super) fn io_array(js: Js, io: Unknown) -> Result<TypedArrayView> {
    js.float64_array(io.raw())?
        .ok_or_else(|| Error::Type("io must be a Float64Array".into()))
}

pub(super) fn io_values(view: &mut TypedArrayView) -> Result<&mut [f64]> {
    view.f64s_mut()
        .ok_or_else(|| Error::Type("io must be an attached Float64Array".into()))
}

/// The first `count` values of `io`, each a tensor id.
pub(super) fn read_ids(io: &[f64], count: u32) -> Result<Vec<u64>> {
    ids_part(io, count)?
        .iter()
        .map(|&id| args::tensor_id_of_number(id, "input id"))
        .collect()
}

/// Most input ids `with_ids` keeps on the stack.
const IDS_ON_STACK: usize = 16;

/// Calls `body` with the first `count` values of `io` read as tensor ids, and `io` itself (to
/// write outputs into). Up to `IDS_ON_STACK` ids stay on the stack, so the fast path, which
/// reads them for every op, neither allocates nor keeps a buffer in the env's state for them.
pub(super) fn with_ids<R>(
    io: &mut [f64],
    count: u32,
    body: impl FnOnce(&[u64], &mut [f64]) -> Result<R>,
) -> Result<R> {
    let values = ids_part(io, count)?;
    if values.len() > IDS_ON_STACK {
        let ids = read_ids(io, count)?;
        return body(&ids, io);
    }
    let mut ids = [0u64; IDS_ON_STACK];
    for (slot, &id) in ids.iter_mut().zip(values) {
        *slot = args::tensor_id_of_number(id, "input id")?;
    }
    body(&ids[..values.len()], io)
}

/// The first `count` values of `io`, where the ids of a call's inputs are.
fn ids_part(io: &[f64], count: u32) -> Result<&[f64]> {
    io.get(..count as usize).ok_or_else(|| {
        Error::Range(format!(
            "io holds {} values, fewer than {count} inputs",
            io.len()
        ))
    })
}

/// Dtype names in the order `runPreparedOp` reports dtype indices.
#[napi_derive::napi(js_name = "dtypeNames")]
pub fn dtype_names() -> Vec<&'static str> {
    DTYPES.iter().map(|d| d.name).collect()
}
