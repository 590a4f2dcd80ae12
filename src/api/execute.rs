//! Op execution: `executeOp` (attrs read per call, outputs as objects) and the fast path,
//! `prepareOp` + `runPreparedOp` (attrs read once; ids and output shapes pass through a
//! Float64Array, so a call allocates no JS objects).

use std::ffi::{CStr, CString};

use napi::bindgen_prelude::{Env, Unknown};
use napi::JsValue;

use super::args;
use super::attrs::{self, OwnedAttr};
use super::js_call;
use super::validate::{self, Signature};
use crate::env_state::EnvState;
use crate::error::{Error, Result};
use crate::graphs::nodes::{self, NodeKind};
use crate::js::{Js, TypedArrayView, Value};
use crate::op_cache::OpCache;
use crate::tf::context::Context;
use crate::tf::dtype::DTYPES;
use crate::tf::handle::TensorHandle;
use crate::tf::signals::{self, AsyncSignalsBlocked};
use crate::tf::status::Status;
use crate::trace;

/// Outputs beyond this are a caller's mistake, not an op's (the widest TF ops have a few dozen).
const MAX_OUTPUTS: i64 = 4096;

/// An op name with its attributes, read and checked once.
pub struct PreparedOp {
    pub(crate) name: CString,
    pub(crate) attrs: Vec<OwnedAttr>,
    /// The inputs a call must bring, checked against the op's definition once.
    pub(crate) signature: Signature,
    uses_generated_gemm: bool,
    /// How the op can be a graph node; `None`: it only runs eagerly.
    pub(crate) node: Option<NodeKind>,
}

/// Where a call's attributes come from.
enum Attrs<'a> {
    FromJs(Js, Value),
    Prepared(&'a [OwnedAttr], &'a Signature),
}

/// One op call: what to run, and room for how many outputs.
struct Call<'a> {
    name: &'a CStr,
    /// `signals::uses_generated_gemm(name)`, which prepared ops keep.
    uses_generated_gemm: bool,
    attrs: Attrs<'a>,
    room: i64,
}

/// Runs `call` on `inputs`, appending its outputs to `outputs`. Attrs and inputs are checked
/// against the op's definition before TF sees them.
fn run<'h>(
    ops: &mut OpCache,
    context: &Context,
    status: &Status,
    outputs: &mut Vec<TensorHandle>,
    call: Call,
    inputs: impl ExactSizeIterator<Item = Result<&'h TensorHandle>>,
) -> Result<()> {
    let name = call.name;
    let label = name.to_str().unwrap_or("op");
    if !(0..=MAX_OUTPUTS).contains(&call.room) {
        return Err(Error::Range(format!(
            "{label}: numOutputs must be in 0..={MAX_OUTPUTS}, got {}",
            call.room
        )));
    }
    let mut checked_out = ops
        .take(context, name, status)
        .map_err(|e| e.context(label))?;
    let op = &mut checked_out.op;
    let ran = (|| {
        let read_now;
        let (owned, signature) = match call.attrs {
            Attrs::FromJs(js, value) => {
                let owned = attrs::read(js, op, label, value, status)?;
                let checks = ops.checks(name, status).map_err(|e| e.context(label))?;
                let signature =
                    validate::signature(checks, &owned).map_err(|e| e.context(label))?;
                read_now = (owned, signature);
                (&read_now.0[..], &read_now.1)
            }
            Attrs::Prepared(owned, signature) => (owned, signature),
        };
        signature
            .check_count(inputs.len())
            .and_then(|()| signature.check_room(call.room as usize))
            .map_err(|e| e.context(label))?;
        attrs::apply(op, owned, status).map_err(|e| e.context(label))?;
        let mut shapes = signature.wants_shape_function().then(Vec::new);
        for (i, input) in inputs.enumerate() {
            let handle = input.map_err(|e| e.context(&format!("{label} input {i}")))?;
            signature
                .check_input(i, handle, status)
                .map_err(|e| e.context(label))?;
            if let Some(shapes) = &mut shapes {
                let mut dims = Vec::new();
                handle.dims_into(&mut dims, status)?;
                shapes.push(dims);
            }
            op.add_input(handle, status).map_err(|e| e.context(label))?;
        }
        if let Some(shapes) = shapes {
            op.check_shapes(&shapes, status)
                .map_err(|e| e.context(label))?;
        }
        let _blocked = AsyncSignalsBlocked::when(call.uses_generated_gemm);
        op.execute(outputs, call.room as usize, status)
            .map_err(|e| e.context(label))
    })();
    ops.give_back(name, checked_out, status);
    ran
}

/// Runs a prepared op on the tensors of `ids` (none of them deferred), leaving the outputs in
/// `state.scratch.outputs`.
pub fn run_ids(state: &mut EnvState, prepared: &PreparedOp, ids: &[u64], room: i64) -> Result<()> {
    run_on_ids(state, prepared.call(room), ids)
}

fn run_on_ids(state: &mut EnvState, call: Call, ids: &[u64]) -> Result<()> {
    let tensors = &state.tensors;
    run(
        &mut state.ops,
        &state.context,
        &state.status,
        &mut state.scratch.outputs,
        call,
        ids.iter().map(|&id| tensors.handle(id)),
    )
}

/// Runs a prepared op on `inputs`, appending its outputs to `outputs`.
pub fn run_handles<'h>(
    ops: &mut OpCache,
    context: &Context,
    status: &Status,
    outputs: &mut Vec<TensorHandle>,
    prepared: &PreparedOp,
    inputs: impl ExactSizeIterator<Item = Result<&'h TensorHandle>>,
    room: i64,
) -> Result<()> {
    run(ops, context, status, outputs, prepared.call(room), inputs)
}

impl PreparedOp {
    fn call(&self, room: i64) -> Call<'_> {
        Call {
            name: &self.name,
            uses_generated_gemm: self.uses_generated_gemm,
            attrs: Attrs::Prepared(&self.attrs, &self.signature),
            room,
        }
    }
}

/// Registers a new output tensor whose dims are already in `dims`; returns its id and dtype index.
fn adopt_output(state: &mut EnvState, handle: TensorHandle, dims: &[i64]) -> (u64, Option<usize>) {
    let index = handle.dtype_index().ok();
    let bytes = index
        .and_then(|i| DTYPES[i].element_bytes())
        .map_or(0, |size| {
            args::element_count(dims, "output shape").unwrap_or(0) as u64 * size as u64
        });
    (state.tensors.insert(handle, bytes), index)
}

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
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
        let mut op_name = std::mem::take(&mut state.scratch.op_name);
        let result = execute(
            js,
            state,
            &mut op_name,
            name.raw(),
            attrs.raw(),
            input_ids.raw(),
            num_outputs.raw(),
        );
        state.scratch.op_name = op_name;
        state.scratch.outputs.clear();
        result.map(|v| js.to_unknown(v))
    })
}

fn execute(
    js: Js,
    state: &mut EnvState,
    op_name: &mut Vec<u8>,
    name: Value,
    attrs: Value,
    input_ids: Value,
    num_outputs: Value,
) -> Result<Value> {
    let name = args::c_str(js, name, op_name, "op name")?;
    let room = args::integer(js, num_outputs, "numOutputs")?;
    let count = args::array_length(js, input_ids, "inputIds")?;
    let ids = (0..count)
        .map(|i| args::tensor_id(js, js.element(input_ids, i)?, &format!("inputIds[{i}]")))
        .collect::<Result<Vec<u64>>>()?;
    for &id in &ids {
        state.settle(id)?;
    }
    let call = Call {
        name,
        uses_generated_gemm: signals::uses_generated_gemm(name.to_bytes()),
        attrs: Attrs::FromJs(js, attrs),
        room,
    };
    run_on_ids(state, call, &ids)?;

    let outputs = std::mem::take(&mut state.scratch.outputs);
    outputs_to_js(js, state, outputs)
}

/// Registers output handles and describes them to JS as `[{id, shape, dtype}]`.
pub(super) fn outputs_to_js(
    js: Js,
    state: &mut EnvState,
    outputs: Vec<TensorHandle>,
) -> Result<Value> {
    let result = js.array(outputs.len())?;
    let mut dims = Vec::new();
    for (i, handle) in outputs.into_iter().enumerate() {
        dims.clear();
        handle.dims_into(&mut dims, &state.status)?;
        let (id, dtype) = adopt_output(state, handle, &dims);
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
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
        let mut buf = Vec::new();
        let name = args::c_str(js, name.raw(), &mut buf, "op name")?.to_owned();
        let label = name.to_string_lossy().into_owned();
        let checked_out = state
            .ops
            .take(&state.context, &name, &state.status)
            .map_err(|e| e.context(&label))?;
        let read = attrs::read(js, &checked_out.op, &label, attrs.raw(), &state.status);
        state.ops.give_back(&name, checked_out, &state.status);
        let attrs = read?;
        let checks = state.ops.checks(&name, &state.status);
        let signature = checks
            .and_then(|checks| validate::signature(checks, &attrs))
            .map_err(|e| e.context(&label))?;
        state.prepared_ops.push(PreparedOp {
            signature,
            uses_generated_gemm: signals::uses_generated_gemm(name.to_bytes()),
            node: nodes::node_kind(&name, &attrs),
            name,
            attrs,
        });
        Ok((state.prepared_ops.len() - 1) as u32)
    })
}

/// Whether prepared op `prepared` can be a graph node and computes the same outputs from the
/// same inputs every time (no random numbers): values a recorded call may read back.
#[napi_derive::napi(js_name = "preparedOpIsDeterministic")]
pub fn prepared_op_is_deterministic(env: Env, prepared: u32) -> napi::Result<bool> {
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
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
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
        let mut view = io_array(js, io)?;
        let io = io_values(&mut view)?;
        let mut ids = std::mem::take(&mut state.scratch.ids);
        let ran = read_ids(io, num_inputs, &mut ids).and_then(|()| {
            let plans = std::mem::take(&mut state.prepared_ops);
            let ran = if (prepared as usize) < plans.len() {
                trace::run_prepared(state, &plans, prepared, &ids, num_outputs as i64, io)
            } else {
                Err(Error::Invalid(format!(
                    "prepared op {prepared} does not exist"
                )))
            };
            state.prepared_ops = plans;
            ran
        });
        state.scratch.ids = ids;
        ran
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

/// Reads the first `count` values of `io` into `ids`, each a tensor id.
pub(super) fn read_ids(io: &[f64], count: u32, ids: &mut Vec<u64>) -> Result<()> {
    if count as usize > io.len() {
        return Err(Error::Range(format!(
            "io holds {} values, fewer than {count} inputs",
            io.len()
        )));
    }
    ids.clear();
    for &id in &io[..count as usize] {
        ids.push(tensor_id(id)?);
    }
    Ok(())
}

/// A tensor id given as a JS number.
pub(super) fn tensor_id(id: f64) -> Result<u64> {
    if id >= 0.0 && id.fract() == 0.0 && id <= u64::MAX as f64 {
        Ok(id as u64)
    } else {
        Err(Error::Range(format!("{id} is not a tensor id")))
    }
}

/// Writes each output's id, dtype index and shape into `io`. Outputs that do not fit are
/// dropped (and so freed) with an error, never registered under ids the caller cannot see.
pub fn write_outputs(state: &mut EnvState, io: &mut [f64]) -> Result<u32> {
    let mut outputs = std::mem::take(&mut state.scratch.outputs);
    let count = outputs.len() as u32;
    let mut dims = std::mem::take(&mut state.scratch.dims);
    let mut at = 0;
    // Ids count up, so the outputs registered here are one contiguous run.
    let mut adopted: Option<(u64, u64)> = None;
    let mut result = Ok(count);
    for handle in outputs.drain(..) {
        dims.clear();
        if let Err(err) = handle.dims_into(&mut dims, &state.status) {
            result = Err(err);
            break;
        }
        if output_room(&dims) > io.len() - at {
            result = Err(too_small(io));
            break;
        }
        let (id, dtype) = adopt_output(state, handle, &dims);
        adopted = Some(adopted.map_or((id, id), |(first, _)| (first, id)));
        at += write_output(&mut io[at..], id, dtype, &dims);
    }
    state.scratch.dims = dims;
    state.scratch.outputs = outputs;
    if let (Err(_), Some((first, last))) = (&result, adopted) {
        // The call throws, so the caller never learns these ids: free them now.
        for id in first..=last {
            let _ = state.tensors.remove(id);
        }
    }
    result
}

/// The io values an output of rank `dims.len()` takes: `id, dtype index, rank, dims...`.
pub fn output_room(dims: &[i64]) -> usize {
    3 + dims.len()
}

/// Writes one output's `id, dtype index (-1: one JS cannot name), rank, dims...` at the start of
/// `io`, which `output_room` says is long enough; returns how many values it took. The one
/// writer of the io format, which `OpRunner.readOutputs` (js/backend/op_runner.js) reads.
pub fn write_output(io: &mut [f64], id: u64, dtype: Option<usize>, dims: &[i64]) -> usize {
    let room = output_room(dims);
    io[0] = id as f64;
    io[1] = dtype.map_or(-1.0, |index| index as f64);
    io[2] = dims.len() as f64;
    for (slot, &dim) in io[3..room].iter_mut().zip(dims) {
        *slot = dim as f64;
    }
    room
}

pub fn too_small(io: &[f64]) -> Error {
    Error::Range(format!(
        "io holds {} values, too few for the outputs",
        io.len()
    ))
}

/// Dtype names in the order `runPreparedOp` reports dtype indices.
#[napi_derive::napi(js_name = "dtypeNames")]
pub fn dtype_names() -> Vec<&'static str> {
    DTYPES.iter().map(|d| d.name).collect()
}
