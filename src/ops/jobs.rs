//! Waiting for executor jobs (`crate::executor`) without holding the JS thread.

use super::runtime::Runtime;
use super::tensors::OutputInfo;
use crate::error::Result;
use crate::js::{Js, Value};
use crate::op_plan::PreparedOp;

impl Runtime {
    /// A promise that resolves when tensor `id` is computed, or `None` when it is already (or
    /// will be on the JS thread): a deferred run producing it ends first, as a job where it can.
    pub fn when_ready(&mut self, plans: &[PreparedOp], js: Js, id: u64) -> Result<Option<Value>> {
        self.settle_in_background(plans, id)?;
        match self.tensors.pending_job(id) {
            Some(job) if !job.is_done() => self.executor.when_done(js, job).map(Some),
            _ => Ok(None),
        }
    }

    /// A promise that resolves when held job `ticket` is done.
    pub fn when_job_done(&self, js: Js, ticket: u32) -> Result<Value> {
        let job = self.executor.held(ticket)?;
        self.executor.when_done(js, job)
    }

    /// The outputs of held job `ticket`, registered as tensors (or its error); the job is let
    /// go.
    pub fn take_job_outputs(&mut self, ticket: u32) -> Result<Vec<OutputInfo>> {
        let job = self.executor.release(ticket)?;
        let outputs = job.outputs(&self.status)?;
        self.adopt_outputs(outputs)
    }

    /// Stops the executor thread: the job in progress finishes, the queued ones are dropped.
    pub fn stop_background_work(&mut self) {
        self.executor.shut_down();
    }
}
