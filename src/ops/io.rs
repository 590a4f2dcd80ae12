//! The fast path's io format: for each output, `id, dtype index, rank, dims...` in one
//! Float64Array. Written here only; read by `OpRunner.readOutputs` (js/backend/op_runner.js).

use std::sync::Arc;

use super::runtime::{Runtime, Scratch};
use crate::error::{Error, Result};
use crate::executor::Job;
use crate::tensor_spec::{data_bytes, TensorSpec};
use crate::tensor_table::TensorTable;
use crate::tf::handle::TensorHandle;

/// Registers a new output tensor whose dims are `dims`; returns its id and dtype index.
pub fn adopt_output(
    tensors: &mut TensorTable,
    handle: TensorHandle,
    dims: &[i64],
) -> (u64, Option<usize>) {
    let index = handle.dtype_index().ok();
    let bytes = index.map_or(0, |i| data_bytes(i, dims));
    (tensors.insert(handle, bytes), index)
}

/// Writes each output's id, dtype index and shape into `io`. Outputs that do not fit are
/// dropped (and so freed) with an error, never registered under ids the caller cannot see.
pub fn write_outputs(state: &mut Runtime, io: &mut [f64]) -> Result<u32> {
    let Runtime {
        scratch,
        tensors,
        status,
        context,
        ..
    } = state;
    let Scratch { outputs, dims, .. } = scratch;
    let count = outputs.len() as u32;
    let mut at = 0;
    // Ids count up, so the outputs registered here are one contiguous run.
    let mut adopted: Option<(u64, u64)> = None;
    let mut result = Ok(count);
    for handle in outputs.drain(..) {
        dims.clear();
        if let Err(err) = handle.dims_into(dims, status) {
            // A remote op that fails on values reports it here, waiting for its shape
            // (`SharedContext::clear_executor_error`).
            context.shared().clear_executor_error();
            result = Err(err);
            break;
        }
        if output_room(dims) > io.len() - at {
            result = Err(too_small(io));
            break;
        }
        let (id, dtype) = adopt_output(tensors, handle, dims);
        adopted = Some(adopted.map_or((id, id), |(first, _)| (first, id)));
        at += write_output(&mut io[at..], id, dtype, dims);
    }
    if let (Err(_), Some((first, last))) = (&result, adopted) {
        // The call throws, so the caller never learns these ids: free them now.
        for id in first..=last {
            let _ = tensors.remove(id);
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

/// Refuses outputs of `specs` that `io` has no room for, before anything computes them.
pub fn check_room(specs: &[TensorSpec], io: &[f64]) -> Result<()> {
    let room: usize = specs.iter().map(|spec| output_room(&spec.dims)).sum();
    if room > io.len() {
        return Err(too_small(io));
    }
    Ok(())
}

/// Registers the outputs of `job`, of `specs`, as pending tensors and writes them into `io`
/// (which `check_room` accepted). Returns their count.
pub fn write_pending_outputs(
    tensors: &mut TensorTable,
    job: &Arc<Job>,
    specs: &[TensorSpec],
    io: &mut [f64],
) -> u32 {
    let mut at = 0;
    for (k, spec) in specs.iter().enumerate() {
        let id = tensors.insert_pending(job.clone(), k, spec.clone());
        at += write_output(&mut io[at..], id, Some(spec.dtype), &spec.dims);
    }
    specs.len() as u32
}
