//! Whole calls as one graph (`crate::graphs::calls`): compiled from what JS recorded, run on
//! the JS thread or as an executor job, set up ahead of need.

use std::ffi::CString;
use std::sync::Arc;

use super::io;
use super::runtime::Runtime;
use crate::error::Result;
use crate::executor::Job;
use crate::graphs::calls::{CallGraph, RecordedOp};
use crate::graphs::export::{export_graph, ExportFeed, ExportedGraph};
use crate::graphs::nodes::Ref;
use crate::op_plan::PreparedOp;
use crate::tensor_spec::TensorSpec;

impl Runtime {
    /// The graph of a SavedModel computing `recorded` (`crate::graphs::export`): fed the
    /// `inputs` (a placeholder's name, a tensor of its dtype, its dims), reading the
    /// `variables` (a name, a tensor of its dtype and dims), holding the `constant_ids`.
    pub fn export_call(
        &mut self,
        plans: &[PreparedOp],
        recorded: &[RecordedOp],
        inputs: Vec<(CString, u64, Vec<i64>)>,
        variables: Vec<(CString, u64)>,
        constant_ids: &[u64],
        outputs: &[(CString, Ref)],
    ) -> Result<ExportedGraph> {
        let mut feeds = Vec::with_capacity(inputs.len() + variables.len() + constant_ids.len());
        for (name, id, dims) in inputs {
            let handle = self.share(plans, id)?;
            let spec = TensorSpec {
                dtype: TensorSpec::of(&handle, &self.status)?.dtype,
                dims: dims.into(),
            };
            feeds.push(ExportFeed::Input { name, spec });
        }
        for (name, id) in variables {
            let spec = TensorSpec::of(&self.share(plans, id)?, &self.status)?;
            feeds.push(ExportFeed::Variable { name, spec });
        }
        for &id in constant_ids {
            feeds.push(ExportFeed::Constant(self.share(plans, id)?));
        }
        export_graph(plans, recorded, &feeds, outputs, &self.status)
    }

    /// Compiles `recorded` into one graph fed like `fed_ids` (tensors each call feeds anew,
    /// whose dtypes type the feeds; `fed_dims`, when given, their dims, -1 where calls
    /// differ), holding the tensors of `fixed_ids` (used by every call as they are now),
    /// fetching `fetches`, of which the first `returned` (all when `None`) are the call's
    /// outputs; returns its id. Inside a device scope it runs there, as a function, and on
    /// another task's device leaves its other fetches (values it assigns) there.
    #[allow(clippy::too_many_arguments)]
    pub fn compile_call(
        &mut self,
        plans: &[PreparedOp],
        recorded: &[RecordedOp],
        fed_ids: &[u64],
        fed_dims: Option<&[Vec<i64>]>,
        fixed_ids: &[u64],
        fetches: &[Ref],
        returned: Option<usize>,
    ) -> Result<u32> {
        let mut fed = Vec::with_capacity(fed_ids.len());
        for &id in fed_ids {
            fed.push(self.share(plans, id)?);
        }
        let mut fixed = Vec::with_capacity(fixed_ids.len());
        for &id in fixed_ids {
            fixed.push(self.share(plans, id)?);
        }
        let fed: Vec<_> = fed.iter().collect();
        let graph = CallGraph::compile(
            plans,
            recorded,
            &fed,
            fed_dims,
            fixed,
            fetches,
            returned,
            &self.context,
            self.context.device_scope(),
            &self.status,
        )?;
        self.calls.insert(graph)
    }

    /// Runs call graph `call` fed `ids`, writing its outputs into `io` as `runPreparedOp` does:
    /// as an executor job when its output shapes are known and no op fails on values, else
    /// here. Returns the output count.
    pub fn run_call(
        &mut self,
        plans: &[PreparedOp],
        call: u32,
        ids: &[u64],
        io: &mut [f64],
    ) -> Result<u32> {
        if self.executor.enabled {
            if let Some(outputs) = self.calls.get(call)?.background_outputs() {
                io::check_room(outputs, io)?;
                let job = self.submit_call(plans, call, ids)?;
                let outputs = self.calls.get(call)?.background_outputs();
                return Ok(io::write_pending_outputs(
                    &mut self.tensors,
                    &job,
                    outputs.unwrap_or_default(),
                    io,
                ));
            }
        }
        for &id in ids {
            self.settle(plans, id)?;
        }
        let fed = ids
            .iter()
            .map(|&id| self.tensors.handle(id))
            .collect::<Result<Vec<_>>>()?;
        let outputs = self.calls.get_mut(call)?.run(&fed, &self.status)?;
        self.scratch.outputs.extend(outputs);
        io::write_outputs(self, io)
    }

    /// Queues call graph `call`'s first run, fed `ids`, on the executor with its outputs
    /// dropped (a session's first run is mostly TF setting it up); a later run waits for it.
    /// Returns whether it was queued (not without an executor).
    pub fn warm_up_call(&mut self, plans: &[PreparedOp], call: u32, ids: &[u64]) -> Result<bool> {
        if !self.executor.enabled || self.calls.get(call)?.is_placed() {
            return Ok(false);
        }
        let job = self.submit_call(plans, call, ids)?;
        self.calls.get_mut(call)?.warm_up(job);
        Ok(true)
    }

    /// Whether call graph `call` may compute a call whose JS ran ahead of TF (see
    /// `CallGraph::may_run_ahead`).
    pub fn call_runs_ahead(&self, call: u32) -> Result<bool> {
        Ok(self.calls.get(call)?.may_run_ahead())
    }

    /// Frees call graph `call`; false when it did not exist.
    pub fn drop_call(&mut self, call: u32) -> bool {
        self.calls.remove(call)
    }

    /// Queues a run of call graph `call` fed `ids` (computed or pending) on the executor.
    fn submit_call(&mut self, plans: &[PreparedOp], call: u32, ids: &[u64]) -> Result<Arc<Job>> {
        let mut fed = Vec::with_capacity(ids.len());
        for &id in ids {
            self.settle_in_background(plans, id)?;
            fed.push(self.tensors.job_input(id, &self.status)?);
        }
        let graph = self.calls.get_mut(call)?;
        let work = graph.background_work(fed, &self.status)?;
        // A call on another task's device waits for the network: apart, not in the queue.
        if graph.is_remote() {
            self.executor.submit_apart(work)
        } else {
            self.executor.submit(work)
        }
    }
}
