//! Op objects kept between calls: `TFE_OpReset` on a used op skips the allocation and setup
//! that `TFE_NewOp` does on every call. Op definitions, which every call is checked against, are
//! read from TF once per op name.

use std::collections::HashMap;
use std::ffi::CStr;
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use crate::error::Result;
use crate::tensor_table::IdHasher;
use crate::tf::context::Context;
use crate::tf::op::Op;
use crate::tf::op_def::OpDef;
use crate::tf::status::Status;

#[derive(Default)]
pub struct OpCache {
    /// Keyed by op name; the names are short, so the table's cheap hasher serves well.
    idle: HashMap<Box<[u8]>, Op, BuildHasherDefault<IdHasher>>,
    defs: HashMap<Box<[u8]>, Rc<OpDef>, BuildHasherDefault<IdHasher>>,
}

/// An op taken from the cache for one call; `OpCache::give_back` returns it.
pub struct CheckedOut {
    key: Option<Box<[u8]>>,
    pub op: Op,
}

impl OpCache {
    pub fn take(&mut self, context: &Context, name: &CStr, status: &Status) -> Result<CheckedOut> {
        if let Some((key, op)) = self.idle.remove_entry(name.to_bytes()) {
            return Ok(CheckedOut { key: Some(key), op });
        }
        let op = Op::new(context, name, status)?;
        Ok(CheckedOut { key: None, op })
    }

    /// Resets the op at once, so it holds no input tensors while idle, and keeps it for the next
    /// call of the same name. An op that fails to reset is dropped.
    pub fn give_back(&mut self, name: &CStr, mut checked_out: CheckedOut, status: &Status) {
        if checked_out.op.reset(name, status).is_ok() {
            let key = checked_out.key.unwrap_or_else(|| name.to_bytes().into());
            self.idle.insert(key, checked_out.op);
        }
    }

    /// The definition of op `name`, read from TF on the first call.
    pub fn def(&mut self, name: &CStr, status: &Status) -> Result<Rc<OpDef>> {
        if let Some(def) = self.defs.get(name.to_bytes()) {
            return Ok(def.clone());
        }
        let def = Rc::new(OpDef::lookup(name, status)?);
        self.defs.insert(name.to_bytes().into(), def.clone());
        Ok(def)
    }

    pub fn clear(&mut self) {
        self.idle.clear();
        self.defs.clear();
    }
}
