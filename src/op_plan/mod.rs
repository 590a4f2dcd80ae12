//! Op calls before they run: an op name with its attrs, read and checked against the op's
//! definition once (`PreparedOp`), and what the graph machinery may do with it. Every layer
//! that runs ops (`ops`, `graphs`) takes these; this module depends only on `tf`.

pub mod attrs;
pub mod properties;
pub mod validate;

use std::ffi::CString;
use std::rc::Rc;

use crate::error::Result;
use crate::tf::signals;
use attrs::OwnedAttr;
use properties::NodeKind;
use validate::{OpChecks, Signature};

/// An op name with its attributes, read and checked once.
pub struct PreparedOp {
    pub name: CString,
    pub attrs: Vec<OwnedAttr>,
    /// The inputs a call must bring, checked against the op's definition once.
    pub signature: Signature,
    /// `signals::uses_generated_gemm(name)`.
    pub uses_generated_gemm: bool,
    /// How the op can be a graph node; `None`: it only runs eagerly.
    pub node: Option<NodeKind>,
}

impl PreparedOp {
    /// Op `name` with `attrs` (read against the op's definition), checked by `checks`.
    pub fn new(name: CString, attrs: Vec<OwnedAttr>, checks: Rc<OpChecks>) -> Result<PreparedOp> {
        let label = name.to_string_lossy().into_owned();
        let signature = validate::signature(checks, &attrs).map_err(|e| e.context(&label))?;
        Ok(PreparedOp {
            signature,
            uses_generated_gemm: signals::uses_generated_gemm(name.to_bytes()),
            node: properties::node_kind(&name, &attrs),
            name,
            attrs,
        })
    }
}
