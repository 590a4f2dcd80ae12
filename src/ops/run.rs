//! Where an op call goes: an executor job (`pipeline` in a model's first call, `background`),
//! deferred into a run (`deferred`), or at once (`eager`); and preparing ops for it.

use std::ffi::{CStr, CString};
use std::rc::Rc;

use super::runtime::{OpCall, Runtime};
use super::tensors::OutputInfo;
use super::{background, deferred, eager, pipeline};
use crate::error::Result;
use crate::op_plan::attrs::OwnedAttr;
use crate::op_plan::validate::OpChecks;
use crate::op_plan::PreparedOp;
use crate::tf::op::Op;
use crate::tf::status::Status;

impl Runtime {
    /// Runs prepared op `plan` (of `plans`) on `ids`, writing its outputs into `io` as
    /// `runPreparedOp` returns them. Returns the output count.
    pub fn run_prepared(
        &mut self,
        plans: &[PreparedOp],
        plan: u32,
        ids: &[u64],
        room: i64,
        io: &mut [f64],
    ) -> Result<u32> {
        self.executor.note_work();
        // Only graph nodes may be queued or deferred; they alone need to know.
        let pending = plans[plan as usize].node.is_some()
            && ids.iter().any(|&id| self.tensors.is_pending(id));
        let call = OpCall {
            plans,
            plan,
            ids,
            room,
            pending,
        };
        if let Some(count) = pipeline::queue(self, &call, io)? {
            return Ok(count);
        }
        if let Some(count) = background::run_in_background(self, &call, io)? {
            return Ok(count);
        }
        deferred::run_or_defer(self, &call, io)
    }

    /// Runs `prepared` (not one of the env's prepared ops) on `ids` at once, with room for
    /// `room` outputs; returns its outputs, registered as tensors.
    pub fn run_op(
        &mut self,
        plans: &[PreparedOp],
        prepared: &PreparedOp,
        ids: &[u64],
        room: i64,
    ) -> Result<Vec<OutputInfo>> {
        for &id in ids {
            self.settle(plans, id)?;
        }
        let ran = eager::run_ids(self, prepared, ids, room);
        let outputs: Vec<_> = self.scratch.outputs.drain(..).collect();
        ran?;
        self.adopt_outputs(outputs)
    }

    /// Prepares op `name`: `read_attrs` reads its attrs against one of its op objects; they
    /// are then checked against the op's definition.
    pub fn prepare_op(
        &mut self,
        name: CString,
        read_attrs: impl FnOnce(&Op, &Status) -> Result<Vec<OwnedAttr>>,
    ) -> Result<PreparedOp> {
        let label = name.to_string_lossy().into_owned();
        let checked_out = self
            .ops
            .take(&self.context, &name, &self.status)
            .map_err(|e| e.context(&label))?;
        let read = read_attrs(&checked_out.op, &self.status);
        self.ops.give_back(&name, checked_out, &self.status);
        let attrs = read?;
        let checks = self.op_checks(&name).map_err(|e| e.context(&label))?;
        PreparedOp::new(name, attrs, checks)
    }

    /// Op `name`'s definition and the checks derived from it, read from TF once per name.
    pub fn op_checks(&mut self, name: &CStr) -> Result<Rc<OpChecks>> {
        self.ops.checks(name, &self.status)
    }
}
