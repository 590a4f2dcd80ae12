//! Context lifecycle: everything the binding keeps per N-API env.

use std::sync::Arc;

use crate::error::Result;
use crate::executor::Executor;
use crate::graphs::calls::CallGraphs;
use crate::graphs::single_ops::SingleOps;
use crate::js::{EnvData, Js};
use crate::op_cache::OpCache;
use crate::ops::deferred::Tracer;
use crate::ops::PreparedOp;
use crate::release::ReleaseQueue;
use crate::sharing::ReadViews;
use crate::tensor_table::TensorTable;
use crate::tf::context::Context;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;

#[derive(Default)]
pub struct Counters {
    pub shared_creates: u64,
    pub copied_creates: u64,
    pub shared_reads: u64,
    pub copied_reads: u64,
}

/// Buffers reused by every call, so the hot path does not allocate.
#[derive(Default)]
pub struct Scratch {
    pub op_name: Vec<u8>,
    pub text: Vec<u8>,
    pub dims: Vec<i64>,
    pub outputs: Vec<TensorHandle>,
    pub ids: Vec<u64>,
}

/// Fields drop in declaration order: tensors and ops before the context they belong to.
pub struct EnvState {
    /// First: the jobs its promises wait on hold tensors of the context.
    pub executor: Executor,
    /// Before `tensors`: a run being recorded holds handles of the context.
    pub tracer: Tracer,
    pub tensors: TensorTable,
    pub saved_models: crate::saved_model::SavedModels,
    /// Before `tensors` and `context`, whose handles the call graphs hold.
    pub calls: CallGraphs,
    pub single_ops: SingleOps,
    pub ops: OpCache,
    pub prepared_ops: Vec<PreparedOp>,
    pub scratch: Scratch,
    pub context: Context,
    pub status: Status,
    pub releases: Arc<ReleaseQueue>,
    pub counters: Counters,
    pub read_views: ReadViews,
}

impl EnvState {
    /// This env's state, created on first use. Also does releases queued by TF threads.
    pub fn get(js: Js) -> Result<&'static mut EnvState> {
        let state = EnvState::get_undrained(js)?;
        state.releases.drain();
        Ok(state)
    }

    /// This env's state, leaving queued releases for the wakeup to do (so they can be observed).
    pub fn get_undrained(js: Js) -> Result<&'static mut EnvState> {
        js.env_data(EnvState::new)
    }

    /// Makes `id` hold its tensor: if a deferred run produced it, the run ends and runs; if
    /// the executor computes it, its job runs here or is waited for.
    pub fn settle(&mut self, id: u64) -> Result<()> {
        self.end_run_of(id, false)?;
        self.tensors.settle_pending(id, &self.status)
    }

    /// Makes sure `id` will hold its tensor without waiting for it: if a deferred run
    /// produced it, the run ends, as an executor job when it is one graph run.
    pub fn settle_in_background(&mut self, id: u64) -> Result<()> {
        self.end_run_of(id, self.executor.enabled)
    }

    /// Runs every deferred op and executor job now, so that each tensor is computed and no
    /// job is left running (before the context is reconfigured under them).
    pub fn finish_all_work(&mut self) -> Result<()> {
        let plans = std::mem::take(&mut self.prepared_ops);
        let ended = crate::ops::deferred::end_run(self, &plans, false);
        self.prepared_ops = plans;
        ended?;
        self.executor.wait_idle(&self.status);
        self.tensors.settle_all_pending(&self.status)
    }

    fn end_run_of(&mut self, id: u64, in_background: bool) -> Result<()> {
        let plans = std::mem::take(&mut self.prepared_ops);
        let ended = crate::ops::deferred::settle(self, &plans, id, in_background);
        self.prepared_ops = plans;
        ended
    }

    fn new(js: Js) -> Result<EnvState> {
        crate::kernels::register();
        let status = Status::new();
        let context = Context::new(&status)?;
        Ok(EnvState {
            executor: Executor::new(js)?,
            tracer: Tracer::new(),
            tensors: TensorTable::default(),
            saved_models: Default::default(),
            calls: CallGraphs::default(),
            single_ops: SingleOps::default(),
            ops: OpCache::default(),
            prepared_ops: Vec::new(),
            scratch: Scratch::default(),
            context,
            status,
            releases: ReleaseQueue::new(js)?,
            counters: Counters::default(),
            read_views: ReadViews::new(js)?,
        })
    }
}

impl EnvData for EnvState {
    fn shut_down(&mut self) {
        // Tensors borrowing JS memory release it now, on this thread, while N-API still can.
        self.executor.shut_down();
        self.scratch.outputs.clear();
        self.tracer.clear();
        self.calls.clear();
        self.single_ops.clear();
        self.tensors.clear();
        self.ops.clear();
        self.releases.shut_down();
    }
}
