//! Op calls before they run: an op name with its attrs, read and checked against the op's
//! definition once (`PreparedOp`), and what the graph machinery may do with it. Every layer
//! that runs ops (`ops`, `graphs`) takes these; this module depends only on `tf`.

pub mod attrs;
pub mod properties;
pub mod validate;

use std::ffi::CString;
use std::rc::Rc;

use crate::error::Result;
use crate::tf::dtype::index_of_tf_code;
use crate::tf::signals;
use attrs::{AttrValue, OwnedAttr};
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

    /// The dtype (a `DTYPES` row) of type attr `name`: as given, or as eager TF infers it from
    /// an input (`Signature::inferred_types`). `None` when neither says.
    pub fn type_attr(&self, name: &str, input_dtypes: &[usize]) -> Option<usize> {
        if let Some(value) = attrs::given(&self.attrs, name) {
            let AttrValue::Type(dtype) = value else {
                return None;
            };
            return index_of_tf_code(*dtype as i32);
        }
        let (_, input) = self
            .signature
            .inferred_types()
            .iter()
            .find(|(attr, _)| attr.to_bytes() == name.as_bytes())?;
        input_dtypes.get(*input).copied()
    }

    /// Each output's dtype (a `DTYPES` row) on inputs of `input_dtypes`, from the op's definition
    /// and the attrs; `None` when one is not known before the op runs.
    pub fn output_dtypes(&self, input_dtypes: &[usize]) -> Option<Vec<usize>> {
        let mut dtypes = Vec::with_capacity(self.signature.output_count());
        for arg in &self.signature.def().outputs {
            if !arg.type_list_attr.is_empty() {
                let AttrValue::TypeList(types) = attrs::given(&self.attrs, &arg.type_list_attr)?
                else {
                    return None;
                };
                for &dtype in types {
                    dtypes.push(index_of_tf_code(dtype as i32)?);
                }
                continue;
            }
            let dtype = if arg.dtype != 0 {
                index_of_tf_code(arg.dtype)?
            } else {
                self.type_attr(&arg.type_attr, input_dtypes)?
            };
            let count = if arg.number_attr.is_empty() {
                1
            } else {
                let AttrValue::Int(count) = attrs::given(&self.attrs, &arg.number_attr)? else {
                    return None;
                };
                usize::try_from(*count).ok()?
            };
            dtypes.extend(std::iter::repeat_n(dtype, count));
        }
        (dtypes.len() == self.signature.output_count()).then_some(dtypes)
    }
}
