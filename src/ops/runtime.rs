//! The op runtime's state: the parts `Runtime` owns, visible to `ops`' modules alone, and
//! `OpCall`, one op call as it travels through them.

use super::deferred_runs::DeferredRuns;
use super::pipeline::Pipeline;
use crate::error::Result;
use crate::executor::{Executor, SetUpCounts};
use crate::graphs::calls::CallGraphs;
use crate::graphs::single_ops::SingleOps;
use crate::js::Js;
use crate::op_cache::OpCache;
use crate::op_plan::PreparedOp;
use crate::tensor_table::TensorTable;
use crate::tf::context::Context;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;
use crate::tf::warm_up;

/// Buffers reused by every call, so the hot path does not allocate: an op's outputs (filled by
/// the op's run, read by the io writer and by deferred runs) and their dims.
#[derive(Default)]
pub(super) struct Scratch {
    pub(super) dims: Vec<i64>,
    pub(super) outputs: Vec<TensorHandle>,
}

/// One op call as it travels from the binding to TF: prepared op `plan` of `plans` on the
/// tensors of `ids`, with room for `room` outputs.
pub struct OpCall<'a> {
    pub plans: &'a [PreparedOp],
    pub plan: u32,
    pub ids: &'a [u64],
    pub room: i64,
    /// Whether an input is an executor job's output not yet computed: such a call is never
    /// deferred, and queued after that job where it can be.
    pub pending: bool,
}

impl OpCall<'_> {
    pub fn prepared(&self) -> &PreparedOp {
        &self.plans[self.plan as usize]
    }
}

/// What running op calls uses of the env, borrowed apart from the prepared ops the calls read.
/// Fields drop in declaration order: whatever holds tensor handles before the context.
pub struct Runtime {
    /// First: the jobs its promises wait on hold tensors of the context.
    pub(super) executor: Executor,
    /// Before `tensors`: a run being recorded holds handles of the context.
    pub(super) deferred: DeferredRuns,
    pub(super) tensors: TensorTable,
    /// Before `tensors` and `context`, whose handles the call graphs hold.
    pub(super) calls: CallGraphs,
    pub(super) single_ops: SingleOps,
    pub(super) pipeline: Pipeline,
    pub(super) ops: OpCache,
    pub(super) scratch: Scratch,
    pub(super) context: Context,
    pub(super) status: Status,
}

/// What `stats()` reports of the runtime.
pub struct RuntimeCounts {
    pub live_tensors: usize,
    pub live_bytes: u64,
    pub deferred_ops: u64,
    pub compiled_runs: u64,
    pub graph_runs: u64,
    pub call_graphs: usize,
    pub fused_nodes: u64,
    pub background_runs: u64,
    pub pipelined_ops: u64,
    pub set_ups: SetUpCounts,
}

impl Runtime {
    pub fn new(js: Js) -> Result<Runtime> {
        let status = Status::new();
        let context = Context::new(&status)?;
        let mut executor = Executor::new(js)?;
        if executor.enabled {
            // One-time set-ups, while the program loads and goes on to its first call (see
            // `warm_up`). Nothing here is the program's to hear of: where one fails, TF does it
            // at the first call that needs it, as it would have, and reports its own errors there.
            let _ = executor.set_up(|status| drop(warm_up::set_up_small_products(status)));
            // With one core the graph passes' set-up would only delay the program: it is done for
            // node types a program may never run, on the core the program loads on.
            if std::thread::available_parallelism().is_ok_and(|n| n.get() > 1) {
                for part in 0..warm_up::graph_pass_parts() {
                    let _ = executor.set_up(move |status| {
                        drop(warm_up::set_up_graph_passes(part, status));
                    });
                }
            }
        }
        Ok(Runtime {
            executor,
            deferred: DeferredRuns::new(),
            tensors: TensorTable::default(),
            calls: CallGraphs::default(),
            single_ops: SingleOps::default(),
            pipeline: Pipeline::default(),
            ops: OpCache::default(),
            scratch: Scratch::default(),
            context,
            status,
        })
    }

    /// How many elements the tensors of `ids` hold together (none for an id not known).
    pub(super) fn elements_of(&self, ids: &[u64]) -> u64 {
        ids.iter()
            .map(|&id| {
                let spec = self.tensors.spec(id, &self.status);
                spec.map_or(0, |spec| spec.elements())
            })
            .fold(0, u64::saturating_add)
    }

    /// The status object calls on this runtime report TF's errors through.
    pub fn status(&self) -> &Status {
        &self.status
    }

    /// Whether the context has a GPU device.
    pub fn uses_gpu(&self) -> Result<bool> {
        let types = self.context.device_types(&self.status)?;
        Ok(types.iter().any(|t| t == "GPU"))
    }

    /// Whether repeated runs of ops are deferred and run as one graph (`deferred`).
    pub fn is_deferring(&self) -> bool {
        self.deferred.enabled()
    }

    /// Pauses deferring (ops run at once while paused), or resumes it.
    pub fn pause_deferring(&mut self, paused: bool) {
        self.deferred.pause(paused);
    }

    pub fn counts(&self) -> RuntimeCounts {
        let deferred = &self.deferred.counters;
        RuntimeCounts {
            live_tensors: self.tensors.len(),
            live_bytes: self.tensors.live_bytes(),
            deferred_ops: deferred.deferred_ops,
            compiled_runs: deferred.compiled_runs,
            graph_runs: deferred.graph_runs,
            call_graphs: self.calls.len(),
            fused_nodes: self.calls.fused_nodes,
            // The executor's jobs besides the ops of first calls (counted apart).
            background_runs: self.executor.jobs_made - self.pipeline.ops_queued,
            pipelined_ops: self.pipeline.ops_queued,
            set_ups: self.executor.set_up_counts(),
        }
    }

    /// Drops every tensor and job (env shutdown), on this thread, while N-API can still
    /// release the JS memory they borrow.
    pub fn shut_down(&mut self) {
        self.executor.shut_down();
        self.scratch.outputs.clear();
        self.deferred.clear();
        self.calls.clear();
        self.single_ops.clear();
        self.tensors.clear();
        self.ops.clear();
    }
}
