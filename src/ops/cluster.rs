//! Changing the context under the runtime: joining a cluster, collective ops, a device scope.
//! Work in flight is finished first, and cached ops dropped: they belong to the context's
//! devices before the change.

use std::ffi::CString;

use super::runtime::Runtime;
use crate::error::Result;
use crate::op_plan::PreparedOp;
use crate::tf::context::DeviceInfo;
use crate::tf::dtype::Layout;
use crate::tf::handle::{copy_each_here, TensorHandle};

impl Runtime {
    /// Makes the context a client of the cluster in `server_def`, which names this client as
    /// its own task, `local_task`; tensors on other tasks' devices are forgotten
    /// (`forget_remote_state`).
    pub fn connect_to_cluster(
        &mut self,
        plans: &[PreparedOp],
        server_def: &[u8],
        local_task: &str,
        timeout_ms: i64,
    ) -> Result<()> {
        self.before_context_change(plans)?;
        self.forget_remote_state()?;
        self.context
            .set_server_def(server_def, local_task, timeout_ms, &self.status)
    }

    /// Starts this task's server in the context for collective ops across the cluster in
    /// `server_def`.
    pub fn enable_collective_ops(&mut self, plans: &[PreparedOp], server_def: &[u8]) -> Result<()> {
        self.before_context_change(plans)?;
        self.context.enable_collective_ops(server_def, &self.status)
    }

    /// Places every eager op from now on on `device` (`None`: TF places them), once the
    /// deferred run in progress has run where its ops were issued. Executor jobs in flight go
    /// on: each has its place already (a call graph placed in a scope keeps its device), so a
    /// remote call leaves `withDevice` without waiting for its answer.
    pub fn set_device_scope(
        &mut self,
        plans: &[PreparedOp],
        device: Option<CString>,
    ) -> Result<()> {
        self.end_deferred_run(plans)?;
        self.context.set_device_scope(device);
        Ok(())
    }

    /// The devices the context can place ops on.
    pub fn devices(&self) -> Result<Vec<DeviceInfo>> {
        self.context.devices(&self.status)
    }

    /// Copies each tensor of `ids` that lives on another task's device (a variable's value that
    /// a remote call left there: `graphs::calls::Placed`) to this process, in place: the id
    /// then holds the copy, and its remote handle goes. Tensors on the devices `keep_on` (those
    /// of device scopes still open, whose next calls use them there) stay. An executor job's output counts once
    /// the job is done; one still in flight (another scope's call) is left as it is, as are
    /// ids JS deleted. A tensor that cannot be copied (its worker is gone) is dropped, as
    /// connecting to another cluster drops remote tensors (reading it then fails), and the
    /// first such error is returned once every other tensor is here. Returns how many came.
    pub fn bring_tensors_here(&mut self, ids: &[u64], keep_on: &[String]) -> Result<u32> {
        let mut away = Vec::new();
        let mut handles = Vec::new();
        let mut first_error = None;
        for &id in ids {
            if self
                .tensors
                .pending_job(id)
                .is_some_and(|job| job.is_done())
                && self.tensors.settle_pending(id, &self.status).is_err()
            {
                // The job failed: the id holds no tensor, and its call reported the error.
                continue;
            }
            let Ok(handle) = self.tensors.handle(id) else {
                continue;
            };
            // A remote handle's device waits for its op; a failed op is a lost tensor.
            match handle.device_name(true, &self.status) {
                Ok(device) if self.context.is_local(&device) || keep_on.contains(&device) => {}
                Ok(_) => {
                    handles.push(handle.share(&self.status)?);
                    away.push(id);
                }
                Err(e) => {
                    drop(self.tensors.take_handle(id));
                    first_error.get_or_insert(e);
                }
            }
        }
        let mut brought = 0;
        for (id, copy) in away.into_iter().zip(copy_each_here(handles, &self.status)) {
            match copy {
                Ok(copy) => {
                    self.tensors.fill(id, copy);
                    brought += 1;
                }
                Err(e) => {
                    drop(self.tensors.take_handle(id));
                    first_error.get_or_insert(e);
                }
            }
        }
        match first_error {
            Some(e) => {
                // TF keeps a failed read's error on the executor, for later ops to fail with.
                self.context.shared().clear_executor_error();
                Err(e)
            }
            None => Ok(brought),
        }
    }

    fn before_context_change(&mut self, plans: &[PreparedOp]) -> Result<()> {
        self.finish_all_work(plans)?;
        self.ops.clear();
        Ok(())
    }

    /// Readies the tensors for a new cluster. Tensors on other tasks' devices are dropped
    /// (their ids stay, as tensors not computed): TF replaces the remote devices, and reading
    /// such a tensor afterwards crashes the process. This process's own tensors get fresh
    /// handles over the same memory: TF's handles cache their copies on remote devices by an op
    /// id that the new cluster's remote contexts hand out again, so a kept handle would feed
    /// another tensor's values to remote ops. Opaque handles (resources, variants) stay.
    fn forget_remote_state(&mut self) -> Result<()> {
        // Ids count up from 1 and are never reused; connecting is rare, so a scan serves.
        for id in 1..=self.tensors.last_id() {
            let Ok(handle) = self.tensors.handle(id) else {
                continue;
            };
            let local = handle
                .device_name(true, &self.status)
                .is_ok_and(|device| self.context.is_local(&device));
            if !local {
                drop(self.tensors.take_handle(id));
            } else if handle
                .dtype()
                .is_ok_and(|dtype| dtype.layout != Layout::Opaque)
            {
                let fresh =
                    TensorHandle::from_tensor(&handle.resolve(&self.status)?, &self.status)?;
                self.tensors.fill(id, fresh);
            }
        }
        Ok(())
    }
}
