//! Which op calls become executor jobs (`crate::executor`): those whose waiting would hold the
//! JS thread.

use super::deferred::settle;
use super::io;
use super::runtime::{OpCall, Runtime};
use crate::error::Result;
use crate::graphs::compiled::CompiledGraph;
use crate::graphs::single_ops::OpInput;
use crate::tensor_spec::small_integers;

/// A product or convolution on more input elements than this (4 MiB of floats; a
/// 1024x1024 matMul takes ~30 ms here) runs on the executor rather than the JS thread.
const HEAVY_INPUT_ELEMENTS: u64 = 1 << 20;

/// Queues the call on the executor when waiting for it would hold the JS thread: an input is
/// still being computed there (`call.pending`), or it is a product or convolution of more than
/// `HEAVY_INPUT_ELEMENTS` input elements; its outputs go into `io`. Only ops that cannot fail
/// on values, whose output shapes TF infers before running them; `None` leaves the call to run
/// here (where an error is reported with the op's name).
pub fn run_in_background(
    state: &mut Runtime,
    call: &OpCall,
    io: &mut [f64],
) -> Result<Option<u32>> {
    let OpCall {
        plans,
        plan,
        ids,
        room,
        pending,
    } = *call;
    let prepared = call.prepared();
    let Some(kind) = prepared.node else {
        return Ok(None);
    };
    // In a device scope (`tf.node.withDevice`) ops run where the scope says, eagerly.
    if kind.random
        || kind.fails_on_values
        || state.deferred.paused()
        || !state.executor.enabled
        || state.context.device_scope().is_some()
    {
        return Ok(None);
    }
    let heavy = !pending && kind.compute_bound && is_heavy(state, ids);
    if !pending && !heavy {
        return Ok(None);
    }
    let signature = &prepared.signature;
    let outputs = signature.output_count();
    if !signature.checked_as_node()
        || signature.check_count(ids.len()).is_err()
        || outputs as i64 > room
    {
        return Ok(None);
    }
    for &id in ids {
        settle(state, plans, id, true)?;
    }
    let tensors = &state.tensors;
    let status = &state.status;
    let mut inputs = Vec::with_capacity(ids.len());
    for &id in ids {
        let spec = tensors.spec(id, status)?;
        let constant = match tensors.handle(id) {
            Ok(handle) => small_integers(handle, spec.dtype, &spec.dims, status)?
                .map(|values| (handle, values)),
            Err(_) => None,
        };
        inputs.push(OpInput { spec, constant });
    }
    let Some(graph) = state
        .single_ops
        .graph(plans, plan, &inputs, outputs, status)
    else {
        return Ok(None);
    };
    let specs = graph.static_outputs().unwrap_or_default();
    io::check_room(specs, io)?;
    let mut feeds = Vec::with_capacity(ids.len());
    for (&id, input) in ids.iter().zip(&inputs) {
        if input.constant.is_none() {
            feeds.push(tensors.job_input(id, status)?);
        }
    }
    drop(inputs);
    let job = state
        .executor
        .submit(CompiledGraph::run_work(graph.clone(), feeds))?;
    Ok(Some(io::write_pending_outputs(
        &mut state.tensors,
        &job,
        specs,
        io,
    )))
}

/// Whether the inputs of a compute-bound op hold more than `HEAVY_INPUT_ELEMENTS` elements.
fn is_heavy(state: &Runtime, ids: &[u64]) -> bool {
    state.elements_of(ids) > HEAVY_INPUT_ELEMENTS
}
