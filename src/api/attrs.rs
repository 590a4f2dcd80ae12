//! Op attributes from JS `{name, type, value}` objects, checked against the op's definition
//! before they reach TF (TF aborts the process on some mismatches).

use std::ffi::CStr;

use sys::TF_AttrType::{self, *};
use tensorflow_sys as sys;

use super::args;
use crate::error::{Error, Result};
use crate::js::{Js, JsType, Value};
use crate::tf::op::Op;
use crate::tf::status::Status;

/// Reusable buffers for attribute names and string values.
pub struct AttrBuffers<'a> {
    pub name: &'a mut Vec<u8>,
    pub text: &'a mut Vec<u8>,
    pub dims: &'a mut Vec<i64>,
}

pub fn apply(
    js: Js,
    op: &mut Op,
    op_name: &str,
    attrs: Value,
    bufs: &mut AttrBuffers,
    status: &Status,
) -> Result<()> {
    if matches!(js.type_of(attrs)?, JsType::Undefined | JsType::Null) {
        return Ok(());
    }
    let count = args::array_length(js, attrs, "attrs")?;
    for i in 0..count {
        let attr = js.element(attrs, i)?;
        if js.type_of(attr)? != JsType::Object {
            return Err(Error::Type(format!(
                "attrs[{i}] must be an object {{name, type, value}}"
            )));
        }
        let name = args::c_str(
            js,
            js.property(attr, c"name")?,
            bufs.name,
            &format!("attrs[{i}].name"),
        )?;
        let what = format!("{op_name} attr '{}'", name.to_string_lossy());
        let declared = op.attr_kind(name, status).map_err(|e| e.context(op_name))?;
        let given = attr_type(js, js.property(attr, c"type")?, bufs.text, &what)?;
        if given != declared.ty {
            return Err(Error::Type(format!(
                "{what} is declared as {}{}, given {}",
                if declared.is_list { "a list of " } else { "" },
                type_label(declared.ty),
                type_label(given)
            )));
        }
        let value = js.property(attr, c"value")?;
        if declared.is_list {
            set_list(js, op, name, declared.ty, value, status, &what)?;
        } else {
            if declared.ty != TF_ATTR_SHAPE && js.is_array(value)? {
                return Err(Error::Type(format!(
                    "{what} takes one {}, given an array",
                    type_label(declared.ty)
                )));
            }
            set_one(
                js,
                op,
                name,
                declared.ty,
                value,
                bufs.text,
                bufs.dims,
                status,
                &what,
            )?;
        }
    }
    Ok(())
}

/// `type` as a name (`'int'`) or as tfjs-node's `TF_ATTR_*` number.
fn attr_type(js: Js, value: Value, buf: &mut Vec<u8>, what: &str) -> Result<TF_AttrType> {
    if let Some(code) = js.number(value)? {
        return Ok(match code as i64 {
            0 => TF_ATTR_STRING,
            1 => TF_ATTR_INT,
            2 => TF_ATTR_FLOAT,
            3 => TF_ATTR_BOOL,
            4 => TF_ATTR_TYPE,
            5 => TF_ATTR_SHAPE,
            _ => {
                return Err(Error::Range(format!(
                    "{what}: attr type {code} is not supported"
                )))
            }
        });
    }
    let name = args::c_str(js, value, buf, &format!("{what}.type"))?;
    Ok(match name.to_bytes() {
        b"string" => TF_ATTR_STRING,
        b"int" => TF_ATTR_INT,
        b"float" => TF_ATTR_FLOAT,
        b"bool" => TF_ATTR_BOOL,
        b"type" => TF_ATTR_TYPE,
        b"shape" => TF_ATTR_SHAPE,
        other => {
            return Err(Error::Type(format!(
                "{what}: attr type '{}' is not one of string, int, float, bool, type, shape",
                String::from_utf8_lossy(other)
            )))
        }
    })
}

fn type_label(ty: TF_AttrType) -> &'static str {
    match ty {
        TF_ATTR_STRING => "string",
        TF_ATTR_INT => "int",
        TF_ATTR_FLOAT => "float",
        TF_ATTR_BOOL => "bool",
        TF_ATTR_TYPE => "type",
        TF_ATTR_SHAPE => "shape",
        TF_ATTR_TENSOR => "tensor",
        TF_ATTR_PLACEHOLDER => "placeholder",
        TF_ATTR_FUNC => "func",
    }
}

#[allow(clippy::too_many_arguments)]
fn set_one(
    js: Js,
    op: &mut Op,
    name: &CStr,
    ty: TF_AttrType,
    value: Value,
    text: &mut Vec<u8>,
    dims: &mut Vec<i64>,
    status: &Status,
    what: &str,
) -> Result<()> {
    match ty {
        TF_ATTR_STRING => {
            let s = args::c_str(js, value, text, what)?;
            op.set_string(name, s.to_bytes());
        }
        TF_ATTR_INT => op.set_int(name, args::integer(js, value, what)?),
        TF_ATTR_FLOAT => op.set_float(name, args::float(js, value, what)? as f32),
        TF_ATTR_BOOL => op.set_bool(name, args::boolean(js, value, what)?),
        TF_ATTR_TYPE => op.set_type(name, args::dtype(js, value, text, what)?.tf),
        TF_ATTR_SHAPE => {
            if matches!(js.type_of(value)?, JsType::Null | JsType::Undefined) {
                op.set_shape(name, None, status)?;
            } else {
                args::dims_into(js, value, true, dims, what)?;
                op.set_shape(name, Some(dims), status)?;
            }
        }
        other => {
            return Err(Error::Type(format!(
                "{what}: {} attrs cannot be set from JS",
                type_label(other)
            )))
        }
    }
    Ok(())
}

fn set_list(
    js: Js,
    op: &mut Op,
    name: &CStr,
    ty: TF_AttrType,
    value: Value,
    status: &Status,
    what: &str,
) -> Result<()> {
    let len = args::array_length(js, value, what)?;
    let item =
        |i: u32| -> Result<(Value, String)> { Ok((js.element(value, i)?, format!("{what}[{i}]"))) };
    match ty {
        TF_ATTR_STRING => {
            let mut owned = Vec::with_capacity(len as usize);
            for i in 0..len {
                let (v, w) = item(i)?;
                let mut buf = Vec::new();
                args::c_str(js, v, &mut buf, &w)?;
                buf.pop();
                owned.push(buf);
            }
            let views: Vec<&[u8]> = owned.iter().map(|b| b.as_slice()).collect();
            op.set_string_list(name, &views);
        }
        TF_ATTR_INT => {
            let values = (0..len)
                .map(|i| item(i).and_then(|(v, w)| args::integer(js, v, &w)))
                .collect::<Result<Vec<_>>>()?;
            op.set_int_list(name, &values);
        }
        TF_ATTR_FLOAT => {
            let values = (0..len)
                .map(|i| item(i).and_then(|(v, w)| args::float(js, v, &w).map(|f| f as f32)))
                .collect::<Result<Vec<_>>>()?;
            op.set_float_list(name, &values);
        }
        TF_ATTR_BOOL => {
            let values = (0..len)
                .map(|i| item(i).and_then(|(v, w)| args::boolean(js, v, &w)))
                .collect::<Result<Vec<_>>>()?;
            op.set_bool_list(name, &values);
        }
        TF_ATTR_TYPE => {
            let mut buf = Vec::new();
            let values = (0..len)
                .map(|i| item(i).and_then(|(v, w)| args::dtype(js, v, &mut buf, &w).map(|d| d.tf)))
                .collect::<Result<Vec<_>>>()?;
            op.set_type_list(name, &values);
        }
        TF_ATTR_SHAPE => {
            let mut shapes = Vec::with_capacity(len as usize);
            for i in 0..len {
                let (v, w) = item(i)?;
                if matches!(js.type_of(v)?, JsType::Null | JsType::Undefined) {
                    shapes.push(None);
                } else {
                    let mut dims = Vec::new();
                    args::dims_into(js, v, true, &mut dims, &w)?;
                    shapes.push(Some(dims));
                }
            }
            op.set_shape_list(name, &shapes, status)?;
        }
        other => {
            return Err(Error::Type(format!(
                "{what}: lists of {} cannot be set from JS",
                type_label(other)
            )))
        }
    }
    Ok(())
}
