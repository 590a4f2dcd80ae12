//! Op objects kept between calls: `TFE_OpReset` on a used op skips the allocation and setup
//! that `TFE_NewOp` does on every call. Op definitions, which every call is checked against, are
//! read from TF once per op name.

use std::collections::HashMap;
use std::ffi::CStr;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use crate::error::Result;
use crate::op_plan::validate::OpChecks;
use crate::tensor_table::IdHasher;
use crate::tf::context::Context;
use crate::tf::op::Op;
use crate::tf::op_def::OpDef;
use crate::tf::status::Status;

#[derive(Default)]
pub struct OpCache {
    /// Keyed by op name; the names are short, so the table's cheap hasher serves well.
    idle: HashMap<Box<[u8]>, Op, BuildHasherDefault<IdHasher>>,
    checks: HashMap<Box<[u8]>, Rc<OpChecks>, BuildHasherDefault<IdHasher>>,
}

/// An op taken from the cache for one call; `OpCache::give_back` returns it.
pub struct CheckedOut {
    key: Option<Box<[u8]>>,
    pub op: Op,
}

impl OpCache {
    /// An op for `name`, placed on the context's device scope when one is active (ops come back
    /// reset to no device preference).
    pub fn take(&mut self, context: &Context, name: &CStr, status: &Status) -> Result<CheckedOut> {
        let mut checked_out = match self.idle.remove_entry(name.to_bytes()) {
            Some((key, op)) => CheckedOut { key: Some(key), op },
            None => CheckedOut {
                key: None,
                op: Op::new(context.shared(), name, status)?,
            },
        };
        if let Some(device) = context.device_scope() {
            checked_out.op.set_device(device, status)?;
        }
        Ok(checked_out)
    }

    /// Resets the op at once, so it holds no input tensors while idle, and keeps it for the next
    /// call of the same name. An op that fails to reset is dropped.
    pub fn give_back(&mut self, name: &CStr, mut checked_out: CheckedOut, status: &Status) {
        if checked_out.op.reset(name, status).is_ok() {
            let key = checked_out.key.unwrap_or_else(|| name.to_bytes().into());
            self.idle.insert(key, checked_out.op);
        }
    }

    /// The definition of op `name` and the checks of its calls, read from TF on the first call.
    pub fn checks(&mut self, name: &CStr, status: &Status) -> Result<Rc<OpChecks>> {
        if let Some(checks) = self.checks.get(name.to_bytes()) {
            return Ok(checks.clone());
        }
        let checks = Rc::new(OpChecks::new(OpDef::lookup(name, status)?));
        self.checks.insert(name.to_bytes().into(), checks.clone());
        Ok(checks)
    }

    pub fn clear(&mut self) {
        self.idle.clear();
        self.checks.clear();
    }
}
