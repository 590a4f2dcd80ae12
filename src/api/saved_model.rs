//! `loadSavedModel`, `runSavedModel`, `deleteSavedModel`, `getNumOfSavedModels`: SavedModel
//! sessions whose inputs and outputs are the binding's tensor ids.

use std::ffi::CString;

use napi::bindgen_prelude::{Env, Unknown};
use napi::JsValue;

use super::args;
use super::execute::outputs_to_js;
use super::js_call;
use crate::env_state::EnvState;
use crate::error::{Error, Result};
use crate::js::{Js, Value};
use crate::tf::dtype::DType;
use crate::tf::handle::TensorHandle;
use crate::tf::session::{Port, Session};

/// Inputs and outputs beyond this are a caller's mistake.
const MAX_TENSORS: u32 = 4096;

/// `loadSavedModel(exportDir, tags)` → a session id. Loading the same directory with the same
/// tags again shares the session (one more reference).
#[napi_derive::napi(js_name = "loadSavedModel")]
pub fn load_saved_model(env: Env, export_dir: Unknown, tags: Unknown) -> napi::Result<f64> {
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
        let mut buf = Vec::new();
        let dir = string(js, export_dir.raw(), &mut buf, "exportDir")?;
        let tags = strings(js, tags.raw(), "tags")?;
        if tags.is_empty() {
            return Err(Error::Invalid("tags must name at least one tag".into()));
        }
        let id = state.saved_models.load(&dir, &tags, &state.status)?;
        Ok(id as f64)
    })
}

/// Drops one reference to the session; the last one closes it.
#[napi_derive::napi(js_name = "deleteSavedModel")]
pub fn delete_saved_model(env: Env, id: Unknown) -> napi::Result<()> {
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
        let id = args::tensor_id(js, id.raw(), "id")?;
        state.saved_models.release(id)
    })
}

/// Distinct SavedModel sessions loaded in this env.
#[napi_derive::napi(js_name = "getNumOfSavedModels")]
pub fn get_num_of_saved_models(env: Env) -> napi::Result<u32> {
    js_call(&env, |js| Ok(EnvState::get(js)?.saved_models.len() as u32))
}

/// `runSavedModel(id, inputIds, inputNames, outputNames)` → `[{id, shape, dtype}]`. Names are
/// graph tensors (`op:index`, or `op` for index 0). Each input is checked against the graph's
/// dtype before TF sees it. Shapes are TF's to check: a session feeds a placeholder any shape
/// (the static shape is a hint the Python client enforces, not the runtime), and tfjs-node
/// programs rely on that.
#[napi_derive::napi(js_name = "runSavedModel")]
pub fn run_saved_model(
    env: Env,
    id: Unknown,
    input_ids: Unknown,
    input_names: Unknown,
    output_names: Unknown,
) -> napi::Result<Unknown<'static>> {
    js_call(&env, |js| {
        let state = EnvState::get(js)?;
        let session_id = args::tensor_id(js, id.raw(), "id")?;
        let ids = id_list(js, input_ids.raw())?;
        let in_names = strings(js, input_names.raw(), "inputNames")?;
        let out_names = strings(js, output_names.raw(), "outputNames")?;
        if ids.len() != in_names.len() {
            return Err(Error::Range(format!(
                "runSavedModel: {} input ids but {} input names",
                ids.len(),
                in_names.len()
            )));
        }
        if out_names.is_empty() {
            return Err(Error::Invalid(
                "runSavedModel: outputNames must name at least one output".into(),
            ));
        }
        for &tid in &ids {
            state.settle(tid)?;
        }
        let session = state.saved_models.get(session_id)?;
        let status = &state.status;

        let mut tensors = Vec::with_capacity(ids.len());
        for (i, &tid) in ids.iter().enumerate() {
            let handle = state
                .tensors
                .handle(tid)
                .map_err(|e| e.context(&format!("input '{}'", in_names[i])))?;
            tensors.push(handle);
        }
        let mut feeds = Vec::with_capacity(ids.len());
        for (i, name) in in_names.iter().enumerate() {
            if in_names[..i].contains(name) {
                return Err(Error::Invalid(format!("input '{name}' is given twice")));
            }
            let port = lookup(session, name, "input")?;
            check_input(session, port, tensors[i], name)?;
            feeds.push((port, tensors[i].resolve(status)?));
        }
        let fetches = out_names
            .iter()
            .map(|name| lookup(session, name, "output"))
            .collect::<Result<Vec<_>>>()?;
        let inputs: Vec<(Port, &_)> = feeds.iter().map(|(p, t)| (*p, t)).collect();
        let results = session
            .run(&inputs, &fetches, status)
            .map_err(|e| e.context("runSavedModel"))?;
        drop(inputs);
        drop(feeds);

        let handles = results
            .iter()
            .map(|t| TensorHandle::from_tensor(t, status))
            .collect::<Result<Vec<_>>>()?;
        drop(results);
        Ok(js.to_unknown(outputs_to_js(js, state, handles)?))
    })
}

fn string(js: Js, value: Value, buf: &mut Vec<u8>, what: &str) -> Result<String> {
    let s = args::c_str(js, value, buf, what)?;
    s.to_str()
        .map(str::to_owned)
        .map_err(|_| Error::Type(format!("{what} must be valid UTF-8")))
}

fn strings(js: Js, value: Value, what: &str) -> Result<Vec<String>> {
    let len = args::array_length(js, value, what)?;
    if len > MAX_TENSORS {
        return Err(Error::Range(format!(
            "{what} has {len} items, at most {MAX_TENSORS} allowed"
        )));
    }
    let mut buf = Vec::new();
    (0..len)
        .map(|i| string(js, js.element(value, i)?, &mut buf, &format!("{what}[{i}]")))
        .collect()
}

fn id_list(js: Js, value: Value) -> Result<Vec<u64>> {
    let len = args::array_length(js, value, "inputIds")?;
    if len > MAX_TENSORS {
        return Err(Error::Range(format!(
            "inputIds has {len} items, at most {MAX_TENSORS} allowed"
        )));
    }
    (0..len)
        .map(|i| args::tensor_id(js, js.element(value, i)?, &format!("inputIds[{i}]")))
        .collect()
}

/// Splits `op:index` (index 0 when absent or not a number).
fn split_name(name: &str) -> (&str, i32) {
    match name.rsplit_once(':') {
        Some((op, index)) => match index.parse::<i32>() {
            Ok(i) => (op, i),
            Err(_) => (name, 0),
        },
        None => (name, 0),
    }
}

fn lookup<'a>(session: &'a Session, name: &str, role: &str) -> Result<Port<'a>> {
    let (op, index) = split_name(name);
    let op_c = CString::new(op)
        .map_err(|_| Error::Type(format!("{role} name '{name}' contains a NUL character")))?;
    session.port(&op_c, index).ok_or_else(|| {
        Error::Invalid(format!(
            "the SavedModel graph has no {role} tensor '{name}'"
        ))
    })
}

fn dtype_label(code: i32) -> String {
    DType::from_tf_code(code).map_or_else(|| format!("TF dtype {code}"), |d| d.name.to_string())
}

fn check_input(session: &Session, port: Port<'_>, handle: &TensorHandle, name: &str) -> Result<()> {
    let want = session.port_dtype(port);
    let got = match handle.dtype() {
        Ok(d) => d.tf as i32,
        Err(code) => code,
    };
    if want != got {
        return Err(Error::Type(format!(
            "input '{name}' must be a {} tensor, got {}",
            dtype_label(want),
            dtype_label(got)
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::split_name;

    #[test]
    fn names_split_at_the_last_colon() {
        assert_eq!(split_name("serving_default_x:0"), ("serving_default_x", 0));
        assert_eq!(
            split_name("StatefulPartitionedCall:2"),
            ("StatefulPartitionedCall", 2)
        );
        assert_eq!(split_name("plain"), ("plain", 0));
        assert_eq!(split_name("a:b"), ("a:b", 0));
    }
}
