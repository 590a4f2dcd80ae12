//! One op call run eagerly: a prepared op on input tensors, checked against the op's definition
//! before TF sees it (TF aborts the process on some mismatches), through the env's op cache;
//! or, checked so, on an executor thread (`run_detached`).

use std::ffi::CStr;

use super::runtime::Runtime;
use crate::error::{Error, Result};
use crate::op_cache::OpCache;
use crate::op_plan::attrs::OwnedAttr;
use crate::op_plan::{attrs, PreparedOp};
use crate::tf::context::{Context, SharedContext};
use crate::tf::handle::TensorHandle;
use crate::tf::op::Op;
use crate::tf::signals::AsyncSignalsBlocked;
use crate::tf::status::Status;
use crate::tf::trace::{SpanKind, Timing};

/// Outputs beyond this are a caller's mistake, not an op's (the widest TF ops have a few dozen).
const MAX_OUTPUTS: i64 = 4096;

/// Runs `prepared` on `inputs` with room for `room` outputs, appending them to `outputs`.
pub(super) fn run_handles<'h>(
    ops: &mut OpCache,
    context: &Context,
    status: &Status,
    outputs: &mut Vec<TensorHandle>,
    prepared: &PreparedOp,
    inputs: impl ExactSizeIterator<Item = Result<&'h TensorHandle>>,
    room: i64,
) -> Result<()> {
    let name = &prepared.name;
    let label = name.to_str().unwrap_or("op");
    if !(0..=MAX_OUTPUTS).contains(&room) {
        return Err(Error::Range(format!(
            "{label}: numOutputs must be in 0..={MAX_OUTPUTS}, got {room}"
        )));
    }
    let mut checked_out = ops
        .take(context, name, status)
        .map_err(|e| e.context(label))?;
    let op = &mut checked_out.op;
    let ran = (|| {
        let signature = &prepared.signature;
        signature
            .check_count(inputs.len())
            .and_then(|()| signature.check_room(room as usize))
            .map_err(|e| e.context(label))?;
        attrs::apply(op, &prepared.attrs, status).map_err(|e| e.context(label))?;
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
        execute(
            op,
            label,
            prepared.uses_generated_gemm,
            outputs,
            room as usize,
            status,
        )
        .map_err(|e| e.context(label))
    })();
    ops.give_back(name, checked_out, status);
    ran
}

/// Runs a prepared op on the tensors of `ids` (all computed), leaving the outputs in
/// `state.scratch.outputs`.
pub(super) fn run_ids(
    state: &mut Runtime,
    prepared: &PreparedOp,
    ids: &[u64],
    room: i64,
) -> Result<()> {
    let tensors = &state.tensors;
    run_handles(
        &mut state.ops,
        &state.context,
        &state.status,
        &mut state.scratch.outputs,
        prepared,
        ids.iter().map(|&id| tensors.handle(id)),
        room,
    )
}

/// Runs op `name` with `attrs` on `inputs` as a new op of `context`, on any thread: the eager op
/// of an executor job (`super::pipeline`), checked on the JS thread when it was queued.
pub(super) fn run_detached(
    context: SharedContext,
    name: &CStr,
    attrs: &[OwnedAttr],
    inputs: &[TensorHandle],
    room: usize,
    uses_generated_gemm: bool,
    status: &Status,
) -> Result<Vec<TensorHandle>> {
    let label = name.to_str().unwrap_or("op");
    let ran = (|| {
        let mut op = Op::new(context, name, status)?;
        attrs::apply(&mut op, attrs, status)?;
        for input in inputs {
            op.add_input(input, status)?;
        }
        let mut outputs = Vec::with_capacity(room);
        execute(
            &mut op,
            label,
            uses_generated_gemm,
            &mut outputs,
            room,
            status,
        )?;
        Ok(outputs)
    })();
    ran.map_err(|e: Error| e.context(label))
}

/// Executes `op`, its attrs and inputs set, under the op's trace span; asynchronous signals stay
/// blocked while an op that may run oneDNN's generated GEMM kernels runs (`crate::tf::signals`).
fn execute(
    op: &mut Op,
    label: &str,
    uses_generated_gemm: bool,
    outputs: &mut Vec<TensorHandle>,
    room: usize,
    status: &Status,
) -> Result<()> {
    let _blocked = AsyncSignalsBlocked::when(uses_generated_gemm);
    let _timing = Timing::begin(SpanKind::EagerOp, || (label.to_owned(), label.to_owned()));
    op.execute(outputs, room, status)
}
