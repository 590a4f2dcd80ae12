//! Op attributes from JS `{name, type, value}` objects, read into `OwnedAttr`s
//! (`crate::op_plan::attrs`) and checked against the op's definition.

use sys::TF_AttrType::{self, *};
use tensorflow_sys as sys;

use super::args;
use crate::error::{Error, Result};
use crate::js::{Js, JsType, Value};
use crate::op_plan::attrs::{AttrValue, OwnedAttr};
use crate::tf::op::Op;
use crate::tf::status::Status;

/// Reads `attrs` (an array, or null/undefined for none), checking each against `op`'s definition.
pub fn read(
    js: Js,
    op: &Op,
    op_name: &str,
    attrs: Value,
    status: &Status,
) -> Result<Vec<OwnedAttr>> {
    if matches!(js.type_of(attrs)?, JsType::Undefined | JsType::Null) {
        return Ok(Vec::new());
    }
    let count = args::array_length(js, attrs, "attrs")?;
    let mut text = Vec::new();
    let mut out = Vec::with_capacity(count as usize);
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
            &mut text,
            &format!("attrs[{i}].name"),
        )?
        .to_owned();
        let what = format!("{op_name} attr '{}'", name.to_string_lossy());
        let declared = op
            .attr_kind(&name, status)
            .map_err(|e| e.context(op_name))?;
        let given = attr_type(js, js.property(attr, c"type")?, &mut text, &what)?;
        if given != declared.ty {
            return Err(Error::Type(format!(
                "{what} is declared as {}{}, given {}",
                if declared.is_list { "a list of " } else { "" },
                type_label(declared.ty),
                type_label(given)
            )));
        }
        let value = js.property(attr, c"value")?;
        let value = if declared.is_list {
            read_list(js, declared.ty, value, &what)?
        } else {
            if declared.ty != TF_ATTR_SHAPE && js.is_array(value)? {
                return Err(Error::Type(format!(
                    "{what} takes one {}, given an array",
                    type_label(declared.ty)
                )));
            }
            read_one(js, declared.ty, value, &mut text, &what)?
        };
        out.push(OwnedAttr { name, value });
    }
    Ok(out)
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

fn read_one(
    js: Js,
    ty: TF_AttrType,
    value: Value,
    text: &mut Vec<u8>,
    what: &str,
) -> Result<AttrValue> {
    Ok(match ty {
        TF_ATTR_STRING => {
            AttrValue::String(args::c_str(js, value, text, what)?.to_bytes().to_vec())
        }
        TF_ATTR_INT => AttrValue::Int(args::integer(js, value, what)?),
        TF_ATTR_FLOAT => AttrValue::Float(args::float(js, value, what)? as f32),
        TF_ATTR_BOOL => AttrValue::Bool(args::boolean(js, value, what)?),
        TF_ATTR_TYPE => AttrValue::Type(args::dtype(js, value, text, what)?.tf),
        TF_ATTR_SHAPE => AttrValue::Shape(read_shape(js, value, what)?),
        other => {
            return Err(Error::Type(format!(
                "{what}: {} attrs cannot be set from JS",
                type_label(other)
            )))
        }
    })
}

fn read_shape(js: Js, value: Value, what: &str) -> Result<Option<Vec<i64>>> {
    if matches!(js.type_of(value)?, JsType::Null | JsType::Undefined) {
        return Ok(None);
    }
    let mut dims = Vec::new();
    args::dims_into(js, value, true, &mut dims, what)?;
    Ok(Some(dims))
}

fn read_list(js: Js, ty: TF_AttrType, value: Value, what: &str) -> Result<AttrValue> {
    let len = args::array_length(js, value, what)?;
    let mut text = Vec::new();
    let items = (0..len)
        .map(|i| {
            let item = js.element(value, i)?;
            read_one(js, ty, item, &mut text, &format!("{what}[{i}]"))
        })
        .collect::<Result<Vec<_>>>()?;
    macro_rules! collect {
        ($variant:ident, $list:ident) => {
            AttrValue::$list(
                items
                    .into_iter()
                    .filter_map(|v| match v {
                        AttrValue::$variant(x) => Some(x),
                        _ => None,
                    })
                    .collect(),
            )
        };
    }
    Ok(match ty {
        TF_ATTR_STRING => collect!(String, StringList),
        TF_ATTR_INT => collect!(Int, IntList),
        TF_ATTR_FLOAT => collect!(Float, FloatList),
        TF_ATTR_BOOL => collect!(Bool, BoolList),
        TF_ATTR_TYPE => collect!(Type, TypeList),
        TF_ATTR_SHAPE => collect!(Shape, ShapeList),
        other => {
            return Err(Error::Type(format!(
                "{what}: lists of {} cannot be set from JS",
                type_label(other)
            )))
        }
    })
}
