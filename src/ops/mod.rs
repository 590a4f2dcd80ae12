//! Running op calls: the one path from the binding's fast path to TF. A prepared op
//! (`op_plan::PreparedOp`: name, attrs, checked signature) called on tensor ids either
//! - becomes an executor job, when waiting for it would hold the JS thread (`background`);
//! - is deferred into the run being recorded, to run later as one graph (`deferred`);
//! - or runs now, eagerly (`eager`).
//!
//! Its outputs reach JS in the io format (`io`).

mod background;
mod cluster;
pub mod deferred;
mod eager;
mod io;

pub use eager::run_ids;
pub use io::{adopt_output, check_room, write_outputs, write_pending_outputs};

use crate::error::Result;
use crate::executor::Executor;
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
use deferred::DeferredRuns;

/// Buffers reused by every call, so the hot path does not allocate: an op's outputs (filled by
/// the op's run, read by the io writer and by deferred runs), their dims, and dtype names read
/// from JS.
#[derive(Default)]
pub struct Scratch {
    pub text: Vec<u8>,
    pub dims: Vec<i64>,
    pub outputs: Vec<TensorHandle>,
}

/// What running op calls uses of the env, borrowed apart from the prepared ops the calls read.
/// Fields drop in declaration order: whatever holds tensor handles before the context.
pub struct Runtime {
    /// First: the jobs its promises wait on hold tensors of the context.
    pub executor: Executor,
    /// Before `tensors`: a run being recorded holds handles of the context.
    pub deferred: DeferredRuns,
    pub tensors: TensorTable,
    /// Before `tensors` and `context`, whose handles the call graphs hold.
    pub calls: CallGraphs,
    pub single_ops: SingleOps,
    pub ops: OpCache,
    pub scratch: Scratch,
    pub context: Context,
    pub status: Status,
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
            ops: OpCache::default(),
            scratch: Scratch::default(),
            context,
            status,
        })
    }

    /// Makes `id` hold its tensor: if a deferred run produced it, the run ends and runs; if
    /// the executor computes it, its job runs here or is waited for.
    pub fn settle(&mut self, plans: &[PreparedOp], id: u64) -> Result<()> {
        deferred::settle(self, plans, id, false)?;
        self.tensors.settle_pending(id, &self.status)
    }

    /// Makes sure `id` will hold its tensor without waiting for it: if a deferred run
    /// produced it, the run ends, as an executor job when it is one graph run.
    pub fn settle_in_background(&mut self, plans: &[PreparedOp], id: u64) -> Result<()> {
        let in_background = self.executor.enabled;
        deferred::settle(self, plans, id, in_background)
    }

    /// Runs every deferred op and executor job now, so that each tensor is computed and no
    /// job is left running (before the context is reconfigured under them).
    pub fn finish_all_work(&mut self, plans: &[PreparedOp]) -> Result<()> {
        deferred::end_run(self, plans, false)?;
        self.executor.wait_idle();
        self.tensors.settle_all_pending(&self.status)
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

/// Runs prepared op `plan` (of `plans`) on `ids`, writing its outputs into `io` as
/// `runPreparedOp` returns them. Returns the output count.
pub fn run_prepared(
    state: &mut Runtime,
    plans: &[PreparedOp],
    plan: u32,
    ids: &[u64],
    room: i64,
    io: &mut [f64],
) -> Result<u32> {
    state.executor.note_work();
    // Only graph nodes may be queued or deferred; they alone need to know.
    let pending =
        plans[plan as usize].node.is_some() && ids.iter().any(|&id| state.tensors.is_pending(id));
    if let Some(count) = background::run_in_background(state, plans, plan, ids, pending, room, io)?
    {
        return Ok(count);
    }
    deferred::run_or_defer(state, plans, plan, ids, pending, room, io)
}
