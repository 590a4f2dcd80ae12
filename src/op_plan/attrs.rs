//! Op attributes as owned values (`OwnedAttr`), checked against the op's definition before they
//! reach TF (TF aborts the process on some mismatches), then applied to an eager op or a graph
//! node: once per call, or once per prepared op and reused. `crate::api::attrs` reads them
//! from JS.

use std::ffi::{CStr, CString};

use tensorflow_sys as sys;

use crate::error::{Error, Result};
use crate::tf::graph::NodeBuilder;
use crate::tf::op::Op;
use crate::tf::status::Status;

#[derive(Clone)]
pub enum AttrValue {
    String(Vec<u8>),
    Int(i64),
    Float(f32),
    Bool(bool),
    Type(sys::TF_DataType),
    /// `None`: unknown rank.
    Shape(Option<Vec<i64>>),
    StringList(Vec<Vec<u8>>),
    IntList(Vec<i64>),
    FloatList(Vec<f32>),
    BoolList(Vec<bool>),
    TypeList(Vec<sys::TF_DataType>),
    ShapeList(Vec<Option<Vec<i64>>>),
}

#[derive(Clone)]
pub struct OwnedAttr {
    pub name: CString,
    pub value: AttrValue,
}

/// The value of attr `name` among `attrs`: the last one given, as TF keeps the last one set.
pub fn given(attrs: &[OwnedAttr], name: impl AsRef<[u8]>) -> Option<&AttrValue> {
    let name = name.as_ref();
    attrs
        .iter()
        .rev()
        .find(|a| a.name.to_bytes() == name)
        .map(|a| &a.value)
}

pub fn apply(op: &mut Op, attrs: &[OwnedAttr], status: &Status) -> Result<()> {
    for OwnedAttr { name, value } in attrs {
        let name: &CStr = name;
        match value {
            AttrValue::String(s) => op.set_string(name, s),
            AttrValue::Int(v) => op.set_int(name, *v),
            AttrValue::Float(v) => op.set_float(name, *v),
            AttrValue::Bool(v) => op.set_bool(name, *v),
            AttrValue::Type(v) => op.set_type(name, *v),
            AttrValue::Shape(dims) => op.set_shape(name, dims.as_deref(), status)?,
            AttrValue::StringList(items) => {
                let views: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                op.set_string_list(name, &views);
            }
            AttrValue::IntList(v) => op.set_int_list(name, v),
            AttrValue::FloatList(v) => op.set_float_list(name, v),
            AttrValue::BoolList(v) => op.set_bool_list(name, v),
            AttrValue::TypeList(v) => op.set_type_list(name, v),
            AttrValue::ShapeList(shapes) => op.set_shape_list(name, shapes, status)?,
        }
    }
    Ok(())
}

/// Whether `apply_to_node` can set every one of `attrs` (the kinds a graph node of a deferred
/// run needs; ops with other kinds run eagerly).
pub fn settable_on_node(attrs: &[OwnedAttr]) -> bool {
    attrs.iter().all(|a| {
        matches!(
            a.value,
            AttrValue::String(_)
                | AttrValue::StringList(_)
                | AttrValue::Int(_)
                | AttrValue::Float(_)
                | AttrValue::Bool(_)
                | AttrValue::Type(_)
                | AttrValue::IntList(_)
                | AttrValue::TypeList(_)
        )
    })
}

/// `apply` for a graph node; kinds `settable_on_node` rejects are an error.
pub fn apply_to_node(node: &mut NodeBuilder, attrs: &[OwnedAttr]) -> Result<()> {
    for OwnedAttr { name, value } in attrs {
        let name: &CStr = name;
        match value {
            AttrValue::String(s) => node.set_string(name, s),
            AttrValue::StringList(items) => {
                let views: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
                node.set_string_list(name, &views);
            }
            AttrValue::Int(v) => node.set_int(name, *v),
            AttrValue::Float(v) => node.set_float(name, *v),
            AttrValue::Bool(v) => node.set_bool(name, *v),
            AttrValue::Type(v) => node.set_type(name, *v),
            AttrValue::IntList(v) => node.set_int_list(name, v),
            AttrValue::TypeList(v) => node.set_type_list(name, v),
            _ => {
                return Err(Error::Invalid(format!(
                    "attr '{}' cannot be set on a graph node",
                    name.to_string_lossy()
                )))
            }
        }
    }
    Ok(())
}
