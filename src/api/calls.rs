//! `compileCall`, `runCall`, `dropCall`: whole calls as one graph (`crate::graphs::calls`);
//! `reserveTensors`, `fillTensors`: the ids of a call that runs ahead of TF.

use std::ffi::CString;

use napi::bindgen_prelude::{Env, Uint8Array, Unknown};

use super::args;
use super::execute::{io_array, io_values, read_ids, with_ids};
use super::state_call;
use crate::error::{Error, Result};
use crate::graphs::calls::RecordedOp;
use crate::graphs::nodes::Ref;
use crate::js::Js;
use crate::ops;

/// Where a recorded op's input, or a call's output, comes from: `{feed}` (the call's feeds,
/// the JS-fed ones first, then the fixed ones) or `{node, output}` (an earlier op's output).
#[napi_derive::napi(object)]
pub struct CallRef {
    pub feed: Option<u32>,
    pub node: Option<u32>,
    pub output: Option<u32>,
}

/// An op the call ran: its prepared op (`prepareOp`), its inputs, and the shapes its outputs
/// had (without them, no chain of element-wise ops is fused: see `graphs::fusions`).
#[napi_derive::napi(object)]
pub struct CallOp {
    pub op: u32,
    pub inputs: Vec<CallRef>,
    pub shapes: Option<Vec<Vec<i64>>>,
}

impl TryFrom<&CallRef> for Ref {
    type Error = Error;

    fn try_from(r: &CallRef) -> Result<Ref> {
        match (r.feed, r.node, r.output) {
            (Some(k), None, None) => Ok(Ref::Feed(k)),
            (None, Some(index), output) => Ok(Ref::Node {
                index,
                output: output.unwrap_or(0),
            }),
            _ => Err(Error::Type("a call ref is {feed} or {node, output}".into())),
        }
    }
}

fn refs(list: &[CallRef]) -> Result<Vec<Ref>> {
    list.iter().map(Ref::try_from).collect()
}

fn recorded_ops(ops: &[CallOp]) -> Result<Vec<RecordedOp>> {
    ops.iter()
        .map(|op| {
            Ok(RecordedOp {
                plan: op.op,
                inputs: refs(&op.inputs)?,
                shapes: op.shapes.clone().unwrap_or_default(),
            })
        })
        .collect()
}

/// Compiles a recorded call into one graph; returns its id for `runCall`. `fedIds` are tensors
/// of the recorded call that each call feeds anew (their dtypes type the feeds, their dims
/// too unless `fedDims` gives others: -1 for a dim whose size calls may vary); `fixedIds`
/// are tensors every call uses as they are now (the graph keeps them). The first `returned`
/// fetches (all when absent) are the call's outputs, the rest values it assigns to variables:
/// a call compiled in a scope of another task's device leaves those there.
#[napi_derive::napi(js_name = "compileCall")]
pub fn compile_call(
    env: Env,
    ops: Vec<CallOp>,
    fed_ids: Vec<f64>,
    fixed_ids: Vec<f64>,
    fetches: Vec<CallRef>,
    fed_dims: Option<Vec<Vec<i64>>>,
    returned: Option<u32>,
) -> napi::Result<u32> {
    state_call(&env, |_, state| {
        let recorded = recorded_ops(&ops)?;
        let ids = |list: &[f64]| -> Result<Vec<u64>> {
            list.iter()
                .map(|&id| args::tensor_id_of_number(id, "id"))
                .collect()
        };
        state.runtime.compile_call(
            &state.prepared_ops,
            &recorded,
            &ids(&fed_ids)?,
            fed_dims.as_deref(),
            &ids(&fixed_ids)?,
            &refs(&fetches)?,
            returned.map(|n| n as usize),
        )
    })
}

/// Runs call graph `call` on the `numFed` tensor ids in `io`; on return `io` holds its outputs
/// as `runPreparedOp` writes them. Returns the number of outputs.
#[napi_derive::napi(
    js_name = "runCall",
    ts_args_type = "call: number, io: Float64Array, numFed: number"
)]
pub fn run_call(env: Env, call: u32, io: Unknown, num_fed: u32) -> napi::Result<u32> {
    state_call(&env, |js, state| {
        let mut view = io_array(js, io)?;
        let io = io_values(&mut view)?;
        with_ids(io, num_fed, |ids, io| {
            state.runtime.run_call(&state.prepared_ops, call, ids, io)
        })
    })
}

/// Sets call graph `call` up before it is needed: its first run, fed the `numFed` tensor ids
/// in `io`, is queued on the executor and its outputs dropped (a session's first run is mostly
/// TF setting it up: its graph passes and kernels). A later run waits for it. Returns whether
/// it was queued (not without an executor).
#[napi_derive::napi(
    js_name = "warmUpCall",
    ts_args_type = "call: number, io: Float64Array, numFed: number"
)]
pub fn warm_up_call(env: Env, call: u32, io: Unknown, num_fed: u32) -> napi::Result<bool> {
    state_call(&env, |js, state| {
        let ids = ids_in(js, io, num_fed)?;
        state.runtime.warm_up_call(&state.prepared_ops, call, &ids)
    })
}

/// Elements per op, on average, up to which a call graph's first run is queued on the executor
/// ahead of need (`warmUpCall`); the bound deferred runs use too (`ops::deferred`).
#[napi_derive::napi]
pub const MAX_SET_UP_ELEMENTS_PER_OP: u32 = ops::MAX_SET_UP_ELEMENTS_PER_OP;

/// Whether call graph `call` may compute a call whose JS ran ahead of TF (its ops recorded, not
/// run: `js/graphs/recording.js`): the shape of every node output that is used is known from
/// the feeds' shapes, so the JS saw the shapes the graph computes.
#[napi_derive::napi(js_name = "callRunsAhead")]
pub fn call_runs_ahead(env: Env, call: u32) -> napi::Result<bool> {
    state_call(&env, |_, state| state.runtime.call_runs_ahead(call))
}

/// Most ids one `reserveTensors` gives.
const MAX_RESERVED: u32 = 1 << 22;

/// `count` consecutive tensor ids with no tensor yet, for the outputs of ops a call runs ahead
/// of TF; returns the first. Each is filled (`fillTensors`) or deleted (`deleteTensor`); until
/// then, using one is an error.
#[napi_derive::napi(js_name = "reserveTensors")]
pub fn reserve_tensors(env: Env, count: u32) -> napi::Result<f64> {
    state_call(&env, |_, state| {
        if count > MAX_RESERVED {
            return Err(Error::Range(format!(
                "at most {MAX_RESERVED} tensors can be reserved at once, not {count}"
            )));
        }
        Ok(state.runtime.reserve_tensors(u64::from(count)) as f64)
    })
}

/// Fills reserved ids with computed (or pending) tensors: `io` holds `pairs` pairs of ids,
/// `reserved, source`; each source id is gone afterwards.
#[napi_derive::napi(
    js_name = "fillTensors",
    ts_args_type = "io: Float64Array, pairs: number"
)]
pub fn fill_tensors(env: Env, io: Unknown, pairs: u32) -> napi::Result<()> {
    state_call(&env, |js, state| {
        let ids = ids_in(js, io, pairs.saturating_mul(2))?;
        state.runtime.fill_tensors(&ids)
    })
}

/// The first `count` tensor ids in `io`.
fn ids_in(js: Js, io: Unknown, count: u32) -> Result<Vec<u64>> {
    let mut view = io_array(js, io)?;
    read_ids(io_values(&mut view)?, count)
}

/// Frees call graph `call`; false when it did not exist.
#[napi_derive::napi(js_name = "dropCall")]
pub fn drop_call(env: Env, call: u32) -> napi::Result<bool> {
    state_call(&env, |_, state| Ok(state.runtime.drop_call(call)))
}

/// A signature input of an exported call: its placeholder's name, the tensor of the recorded
/// call it stands for (its dtype types the placeholder), and its dims (-1: any size).
#[napi_derive::napi(object)]
pub struct ExportInput {
    pub name: String,
    pub id: f64,
    pub dims: Vec<i64>,
}

/// A variable of an exported call: its name in the graph and the checkpoint, and a tensor of
/// its dtype and dims.
#[napi_derive::napi(object)]
pub struct ExportVariable {
    pub name: String,
    pub id: f64,
}

/// An output of an exported call: the name of its `Identity` node and what it is.
#[napi_derive::napi(object)]
pub struct ExportOutput {
    pub name: String,
    pub source: CallRef,
}

/// The nodes of an exported variable, as its `VariableDef` names them.
#[napi_derive::napi(object)]
pub struct ExportedVariable {
    pub variable_name: String,
    pub initializer_name: String,
    pub snapshot_name: String,
    pub initial_value_name: String,
}

/// The saver's nodes, as a `SaverDef` names them.
#[napi_derive::napi(object)]
pub struct ExportedSaver {
    pub filename_tensor_name: String,
    pub save_tensor_name: String,
    pub restore_op_name: String,
}

#[napi_derive::napi(object)]
pub struct ExportedCall {
    pub graph_def: Uint8Array,
    pub variables: Vec<ExportedVariable>,
    /// Absent when the call reads no variable.
    pub saver: Option<ExportedSaver>,
}

/// A recorded call as the graph of a SavedModel (`crate::graphs::export`): refs count the
/// `inputs`, then the `variables`, then the `constantIds` (tensors the graph holds).
#[napi_derive::napi(js_name = "exportCall")]
pub fn export_call(
    env: Env,
    ops: Vec<CallOp>,
    inputs: Vec<ExportInput>,
    variables: Vec<ExportVariable>,
    constant_ids: Vec<f64>,
    outputs: Vec<ExportOutput>,
) -> napi::Result<ExportedCall> {
    state_call(&env, |_, state| {
        let recorded = recorded_ops(&ops)?;
        let id = |id: f64| args::tensor_id_of_number(id, "id");
        let name = |name: &str| {
            CString::new(name).map_err(|_| Error::Type(format!("name '{name}' holds a NUL")))
        };
        let inputs = inputs
            .iter()
            .map(|i| Ok((name(&i.name)?, id(i.id)?, i.dims.clone())))
            .collect::<Result<Vec<_>>>()?;
        let variables = variables
            .iter()
            .map(|v| Ok((name(&v.name)?, id(v.id)?)))
            .collect::<Result<Vec<_>>>()?;
        let constants = constant_ids
            .iter()
            .map(|&c| id(c))
            .collect::<Result<Vec<_>>>()?;
        let outputs = outputs
            .iter()
            .map(|o| Ok((name(&o.name)?, Ref::try_from(&o.source)?)))
            .collect::<Result<Vec<_>>>()?;
        let exported = state.runtime.export_call(
            &state.prepared_ops,
            &recorded,
            inputs,
            variables,
            &constants,
            &outputs,
        )?;
        Ok(ExportedCall {
            graph_def: exported.graph_def.into(),
            variables: exported
                .variables
                .into_iter()
                .map(|v| ExportedVariable {
                    variable_name: v.variable,
                    initializer_name: v.initializer,
                    snapshot_name: v.snapshot,
                    initial_value_name: v.initial_value,
                })
                .collect(),
            saver: exported.saver.map(|s| ExportedSaver {
                filename_tensor_name: s.filename_tensor,
                save_tensor_name: s.save_tensor,
                restore_op_name: s.restore_op,
            }),
        })
    })
}
