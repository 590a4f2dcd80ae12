//! Runs of SavedModel sessions (`crate::saved_model`) whose inputs and outputs are the env's
//! tensors: on the JS thread, or as an executor job.

use std::sync::Arc;

use super::runtime::Runtime;
use super::tensors::OutputInfo;
use crate::error::Result;
use crate::executor::Work;
use crate::op_plan::PreparedOp;
use crate::saved_model::SessionRun;
use crate::tf::dtype::DTYPES;
use crate::tf::session::Session;

impl Runtime {
    /// Runs `session` fed the tensors of `ids` (one per `run.inputs` name), on this thread.
    pub fn run_saved_model(
        &mut self,
        plans: &[PreparedOp],
        session: &Session,
        ids: &[u64],
        run: &SessionRun,
    ) -> Result<Vec<OutputInfo>> {
        for &id in ids {
            self.settle(plans, id)?;
        }
        let mut feeds = Vec::with_capacity(ids.len());
        for (&id, name) in ids.iter().zip(&run.inputs) {
            let handle = self
                .tensors
                .handle(id)
                .map_err(|e| e.context(&format!("input '{name}'")))?;
            let got = handle.dtype().map_or_else(|code| code, |d| d.tf as i32);
            let port = SessionRun::checked_input(session, name, got)?;
            feeds.push((port, handle.resolve(&self.status)?));
        }
        let outputs = run.run(session, &feeds, &self.status)?;
        drop(feeds);
        self.adopt_outputs(outputs)
    }

    /// `run_saved_model` as an executor job, on inputs computed or still being computed:
    /// returns the held job's ticket (see `when_job_done`, `take_job_outputs`). Inputs and
    /// names are checked here; the run's own errors come with its outputs.
    pub fn run_saved_model_in_background(
        &mut self,
        plans: &[PreparedOp],
        session: Arc<Session>,
        ids: &[u64],
        run: SessionRun,
    ) -> Result<u32> {
        let mut inputs = Vec::with_capacity(ids.len());
        for (&id, name) in ids.iter().zip(&run.inputs) {
            self.settle_in_background(plans, id)?;
            let spec = self
                .tensors
                .spec(id, &self.status)
                .map_err(|e| e.context(&format!("input '{name}'")))?;
            SessionRun::checked_input(&session, name, DTYPES[spec.dtype].tf as i32)?;
            inputs.push(self.tensors.job_input(id, &self.status)?);
        }
        run.check_outputs(&session)?;
        let work = Work::new(move |status| {
            let mut feeds = Vec::with_capacity(inputs.len());
            for (input, name) in inputs.iter().zip(&run.inputs) {
                let tensor = input.resolve(status)?.resolve(status)?;
                feeds.push((SessionRun::input(&session, name)?, tensor));
            }
            run.run(&session, &feeds, status)
        });
        let job = self.executor.submit(work)?;
        Ok(self.executor.hold(job))
    }
}
