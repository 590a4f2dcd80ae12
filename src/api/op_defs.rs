//! `opNames`, `opDef`: TF's op registry, as the checks in `validate` read it (the fuzzer,
//! `scripts/fuzz.js`, builds its calls from these).

use napi::bindgen_prelude::Env;

use super::state_call;
use crate::error::Error;
use crate::tf::dtype::DType;
use crate::tf::op_def::{self, ArgDef, AttrDef};

/// An input or output of an op.
#[napi_derive::napi(object)]
pub struct OpArgDef {
    pub name: String,
    /// A fixed dtype; otherwise `typeAttr` or `typeListAttr` names the attr that decides it.
    pub dtype: Option<String>,
    pub type_attr: Option<String>,
    /// The int attr holding the length of a list input of one dtype.
    pub number_attr: Option<String>,
    /// The list(type) attr holding one dtype per list element.
    pub type_list_attr: Option<String>,
}

#[napi_derive::napi(object)]
pub struct OpAttrDef {
    pub name: String,
    /// TF's spelling: `int`, `list(type)`, `string`, `shape`, ...
    pub kind: String,
    /// Attrs without a default must be given: the binding refuses a call that leaves one out.
    pub has_default: bool,
    /// The least value of an int, the least length of a list.
    pub minimum: Option<f64>,
    /// Allowed strings, or allowed dtype names.
    pub allowed_values: Option<Vec<String>>,
}

#[napi_derive::napi(object)]
pub struct OpDefinition {
    pub name: String,
    pub inputs: Vec<OpArgDef>,
    pub outputs: Vec<OpArgDef>,
    pub attrs: Vec<OpAttrDef>,
    pub is_stateful: bool,
}

/// Names of every op registered with TF (its own and this package's).
#[napi_derive::napi(js_name = "opNames")]
pub fn op_names(env: Env) -> napi::Result<Vec<String>> {
    // The env's set-up registers this package's own ops.
    state_call(&env, |_, _| op_def::op_names())
}

/// The definition of op `name` (a `NOT_FOUND` error for an unknown op).
#[napi_derive::napi(js_name = "opDef")]
pub fn op_def(env: Env, name: String) -> napi::Result<OpDefinition> {
    state_call(&env, |_, state| {
        let c_name = std::ffi::CString::new(name.as_str())
            .map_err(|_| Error::Type("op name must not contain NUL".into()))?;
        let checks = state
            .runtime
            .op_checks(&c_name)
            .map_err(|e| e.context(&name))?;
        let def = &checks.def;
        Ok(OpDefinition {
            name: def.name.clone(),
            inputs: def.inputs.iter().map(arg).collect(),
            outputs: def.outputs.iter().map(arg).collect(),
            attrs: def.attrs.iter().map(attr).collect(),
            is_stateful: def.is_stateful,
        })
    })
}

fn dtype_name(code: i32) -> String {
    DType::from_tf_code(code).map_or_else(|| format!("dtype {code}"), |d| d.name.to_string())
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

fn arg(a: &ArgDef) -> OpArgDef {
    OpArgDef {
        name: a.name.clone(),
        dtype: (a.dtype != 0).then(|| dtype_name(a.dtype)),
        type_attr: non_empty(&a.type_attr),
        number_attr: non_empty(&a.number_attr),
        type_list_attr: non_empty(&a.type_list_attr),
    }
}

fn attr(a: &AttrDef) -> OpAttrDef {
    let allowed: Vec<String> = a
        .allowed_strings
        .iter()
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .chain(a.allowed_types.iter().map(|&t| dtype_name(t)))
        .collect();
    OpAttrDef {
        name: a.name.clone(),
        kind: a.kind.clone(),
        has_default: a.default.is_some(),
        minimum: a.minimum.map(|m| m as f64),
        allowed_values: (!allowed.is_empty()).then_some(allowed),
    }
}
