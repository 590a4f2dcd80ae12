//! A model's first call with TF working behind its JS. The first call of a model runs every op
//! eagerly, and TF's first run of an op (kernel, oneDNN's set-up of it) is its slowest: in
//! blazeface's first predict TF took about as long as the call's JS. So while a GraphModel's
//! first call is recorded (js/graphs/call_graphs.js, `runPipelined`), each op whose
//! outputs' dtypes and shapes TF knows before it runs (its shape function, on its inputs'
//! shapes and small integer values), and which cannot fail on values, becomes an executor job
//! that runs it eagerly: JS gets its outputs' ids and shapes at once and goes on to the next op
//! while the executor thread runs this one. Other ops run at once, as before, waiting for the
//! jobs whose outputs they take.
//!
//! The call's end waits for every job it queued (`end_pipelined_call`). A job can still fail
//! where eager TF would have failed at once (no kernel for a dtype, TF computing another shape
//! than its shape function gave); the JS side then runs the call again eagerly, so the call
//! gives eager's result or eager's error, at the call.

use std::collections::HashSet;
use std::ffi::CString;
use std::sync::{Arc, Mutex, Weak};

use super::deferred::settle;
use super::eager;
use super::io;
use super::runtime::{OpCall, Runtime};
use crate::error::{Error, Result};
use crate::executor::{Input, Job, Work};
use crate::op_plan::attrs::{self, OwnedAttr};
use crate::op_plan::PreparedOp;
use crate::tensor_spec::{is_small_integer_tensor, TensorSpec};
use crate::tf::context::SharedContext;
use crate::tf::dtype::DTYPES;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;

/// Ops on more input elements than this run at once. TF spreads such an op over its intra-op
/// threads, which spin between tasks (Eigen's thread pool) and then took the cores from the
/// call's JS: with every op queued, centernet's first predict took 200-230 ms against 150-170
/// eagerly, two cores here; with this bound, 156-162 ms, and blazeface's 53-54 against 61-70.
const MAX_INPUT_ELEMENTS: u64 = 1 << 18;

/// The pipelined call in progress, if any.
#[derive(Default)]
pub(super) struct Pipeline {
    active: bool,
    /// The jobs queued since the call began, which its end waits for: weakly, so that a job's
    /// outputs go when their tensors do, as eager ones would (a job that is gone has run).
    jobs: Vec<Weak<Job>>,
    /// The prepared ops of the jobs that failed, as the jobs report them.
    failed: Arc<Mutex<Vec<u32>>>,
    /// Prepared ops whose job failed: they run at once from then on, where eager TF reports
    /// their errors (or a result of another shape than TF inferred) at the op.
    refused: HashSet<u32>,

    /// Ops queued so, over the env's life (`stats().pipelinedOps`).
    pub(super) ops_queued: u64,
}

impl Runtime {
    /// Starts queueing the ops of a call as executor jobs (see the module's comment); false,
    /// and nothing queued, without an executor, inside a device scope, or inside a pipelined
    /// call (whose end stays the one that waits).
    pub fn begin_pipelined_call(&mut self) -> bool {
        if self.pipeline.active || !self.executor.enabled || self.context.device_scope().is_some() {
            return false;
        }
        self.pipeline.active = true;
        true
    }

    /// Stops queueing and waits for the jobs the call queued; returns whether one failed.
    pub fn end_pipelined_call(&mut self) -> bool {
        let pipeline = &mut self.pipeline;
        pipeline.active = false;
        for job in std::mem::take(&mut pipeline.jobs) {
            if let Some(job) = job.upgrade() {
                // Its error, if any, is in `failed` by the time it is done.
                let _ = job.wait(&self.status);
            }
        }
        let failed: Vec<u32> = pipeline
            .failed
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain(..)
            .collect();
        pipeline.refused.extend(&failed);
        !failed.is_empty()
    }
}

/// Queues the call as an executor job while a pipelined call is in progress, when TF knows its
/// outputs before it runs; its outputs go into `io`. `None` leaves it to the other routes.
pub(super) fn queue(state: &mut Runtime, call: &OpCall, io: &mut [f64]) -> Result<Option<u32>> {
    if !state.pipeline.active {
        return Ok(None);
    }
    let prepared = call.prepared();
    let Some(kind) = prepared.node else {
        return Ok(None);
    };
    let signature = &prepared.signature;
    if kind.random
        || kind.fails_on_values
        || kind.probed_eagerly
        || state.pipeline.refused.contains(&call.plan)
        || !signature.checked_as_node()
        || signature.check_count(call.ids.len()).is_err()
        || signature.output_count() as i64 > call.room
    {
        return Ok(None);
    }
    for &id in call.ids {
        settle(state, call.plans, id, true)?;
    }
    if state.elements_of(call.ids) > MAX_INPUT_ELEMENTS {
        return Ok(None);
    }
    let Some(specs) = inferred_outputs(state, prepared, call.ids)? else {
        return Ok(None);
    };
    io::check_room(&specs, io)?;
    let inputs = call
        .ids
        .iter()
        .map(|&id| state.tensors.job_input(id, &state.status))
        .collect::<Result<Vec<_>>>()?;
    let queued = QueuedOp {
        context: state.context.shared(),
        name: prepared.name.clone(),
        attrs: prepared.attrs.clone(),
        uses_generated_gemm: prepared.uses_generated_gemm,
        inputs,
        specs: specs.clone(),
        plan: call.plan,
        failures: state.pipeline.failed.clone(),
    };
    let job = state.executor.submit(queued.into_work())?;
    state.pipeline.jobs.push(Arc::downgrade(&job));
    state.pipeline.ops_queued += 1;
    Ok(Some(io::write_pending_outputs(
        &mut state.tensors,
        &job,
        &specs,
        io,
    )))
}

/// The outputs' dtypes and dims as TF infers them for `prepared` on the tensors of `ids`, when it
/// knows every one; `None` when not, or when the shape function refuses the call (run at once,
/// it reports that with the op's name).
fn inferred_outputs(
    state: &mut Runtime,
    prepared: &PreparedOp,
    ids: &[u64],
) -> Result<Option<Vec<TensorSpec>>> {
    let Runtime {
        tensors,
        ops,
        context,
        status,
        ..
    } = state;
    let mut input_dims = Vec::with_capacity(ids.len());
    let mut input_dtypes = Vec::with_capacity(ids.len());
    let mut constants = Vec::with_capacity(ids.len());
    for &id in ids {
        let spec = tensors.spec(id, status)?;
        // The values a shape may depend on (a shape, axes, sizes), where they are computed.
        let constant = match tensors.handle(id) {
            Ok(handle) if is_small_integer_tensor(&spec) => Some(handle.resolve(status)?),
            _ => None,
        };
        input_dims.push(spec.dims.to_vec());
        input_dtypes.push(spec.dtype);
        constants.push(constant);
    }
    let Some(dtypes) = prepared.output_dtypes(&input_dtypes) else {
        return Ok(None);
    };
    let mut checked_out = ops.take(context, &prepared.name, status)?;
    let op = &mut checked_out.op;
    let inferred = (|| {
        attrs::apply(op, &prepared.attrs, status)?;
        // Eager TF infers these from the inputs, which inference does not add.
        for (name, input) in prepared.signature.inferred_types() {
            if attrs::given(&prepared.attrs, name.to_bytes()).is_none() {
                if let Some(&dtype) = input_dtypes.get(*input) {
                    op.set_type(name, DTYPES[dtype].tf);
                }
            }
        }
        let constants: Vec<_> = constants.iter().map(Option::as_ref).collect();
        op.infer_shapes(&input_dims, &constants, status)
    })();
    ops.give_back(&prepared.name, checked_out, status);
    let Ok(shapes) = inferred else {
        return Ok(None);
    };
    if shapes.len() != dtypes.len() {
        return Ok(None);
    }
    let specs = dtypes
        .into_iter()
        .zip(shapes)
        .map(|(dtype, dims)| {
            let dims = dims.filter(|dims| dims.iter().all(|&d| d >= 0))?;
            Some(TensorSpec {
                dtype,
                dims: dims.into(),
            })
        })
        .collect();
    Ok(specs)
}

/// An op queued as a job: what it runs on, what it must give, and where it reports failing.
struct QueuedOp {
    context: SharedContext,
    name: CString,
    attrs: Vec<OwnedAttr>,
    uses_generated_gemm: bool,
    inputs: Vec<Input>,
    specs: Vec<TensorSpec>,
    /// Its prepared op, which it adds to `failures` when it fails.
    plan: u32,
    failures: Arc<Mutex<Vec<u32>>>,
}

impl QueuedOp {
    fn into_work(self) -> Work {
        Work::new(move |status| {
            let ran = self.run(status);
            if ran.is_err() {
                let mut failures = self.failures.lock().unwrap_or_else(|p| p.into_inner());
                failures.push(self.plan);
            }
            ran
        })
    }

    /// Runs the op eagerly and checks that its outputs are `specs`.
    fn run(&self, status: &Status) -> Result<Vec<TensorHandle>> {
        let inputs = Input::resolve_all(&self.inputs, status)?;
        let outputs = eager::run_detached(
            self.context,
            &self.name,
            &self.attrs,
            &inputs,
            self.specs.len(),
            self.uses_generated_gemm,
            status,
        )?;
        let label = self.name.to_string_lossy();
        if outputs.len() != self.specs.len() {
            return Err(Error::Invalid(format!(
                "{label}: TF made {} outputs, not {}",
                outputs.len(),
                self.specs.len()
            )));
        }
        for (output, spec) in outputs.iter().zip(&self.specs) {
            let computed = TensorSpec::of(output, status)?;
            if &computed != spec {
                return Err(Error::Invalid(format!(
                    "{label}: TF computed a {computed:?} output where its shape function gave {spec:?}"
                )));
            }
        }
        Ok(outputs)
    }
}
