//! `loadSavedModel`, `runSavedModel`, `deleteSavedModel`, `getNumOfSavedModels`: SavedModel
//! sessions whose inputs and outputs are the binding's tensor ids.

use std::ffi::CString;

use napi::bindgen_prelude::{Env, Unknown};
use napi::JsValue;

use super::args;
use super::execute::outputs_to_js;
use super::state_call;
use crate::error::{Error, Result};
use crate::executor::Work;
use crate::js::{Js, Value};
use crate::tf::dtype::{DType, DTYPES};
use crate::tf::handle::TensorHandle;
use crate::tf::session::{Port, Session};
use crate::tf::status::Status;
use crate::tf::tensor::Tensor;

/// Inputs and outputs beyond this are a caller's mistake.
const MAX_TENSORS: u32 = 4096;

/// `loadSavedModel(exportDir, tags)` → a session id. Loading the same directory with the same
/// tags again shares the session (one more reference).
#[napi_derive::napi(js_name = "loadSavedModel")]
pub fn load_saved_model(env: Env, export_dir: Unknown, tags: Unknown) -> napi::Result<f64> {
    state_call(&env, |js, state| {
        let mut buf = Vec::new();
        let dir = string(js, export_dir.raw(), &mut buf, "exportDir")?;
        let tags = strings(js, tags.raw(), "tags")?;
        if tags.is_empty() {
            return Err(Error::Invalid("tags must name at least one tag".into()));
        }
        let id = state
            .saved_models
            .load(&dir, &tags, &state.runtime.status)?;
        Ok(id as f64)
    })
}

/// Drops one reference to the session; the last one closes it.
#[napi_derive::napi(js_name = "deleteSavedModel")]
pub fn delete_saved_model(env: Env, id: Unknown) -> napi::Result<()> {
    state_call(&env, |js, state| {
        let id = args::tensor_id(js, id.raw(), "id")?;
        state.saved_models.release(id)
    })
}

/// Distinct SavedModel sessions loaded in this env.
#[napi_derive::napi(js_name = "getNumOfSavedModels")]
pub fn get_num_of_saved_models(env: Env) -> napi::Result<u32> {
    state_call(&env, |_, state| Ok(state.saved_models.len() as u32))
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
    state_call(&env, |js, state| {
        let run = RunRequest::read(js, id, input_ids, input_names, output_names)?;
        for &tid in &run.ids {
            state.settle(tid)?;
        }
        let session = state.saved_models.get(run.session)?;
        let status = &state.runtime.status;
        let mut feeds = Vec::with_capacity(run.ids.len());
        for (&tid, name) in run.ids.iter().zip(&run.inputs) {
            let handle = state
                .runtime
                .tensors
                .handle(tid)
                .map_err(|e| e.context(&format!("input '{name}'")))?;
            let port = lookup(session, name, "input")?;
            check_input(session, port, dtype_code(handle.dtype()), name)?;
            feeds.push((port, handle.resolve(status)?));
        }
        let handles = run_session(session, &feeds, &run.outputs, status)?;
        drop(feeds);
        Ok(js.to_unknown(outputs_to_js(js, state, handles)?))
    })
}

/// `runSavedModel` as an executor job (`crate::executor`), on inputs computed or still being
/// computed: returns the job's number for `whenJobDone` and `takeJobOutputs`. Inputs and names
/// are checked here; TF's errors of the run come from `takeJobOutputs`.
#[napi_derive::napi(js_name = "runSavedModelInBackground")]
pub fn run_saved_model_in_background(
    env: Env,
    id: Unknown,
    input_ids: Unknown,
    input_names: Unknown,
    output_names: Unknown,
) -> napi::Result<u32> {
    state_call(&env, |js, state| {
        let run = RunRequest::read(js, id, input_ids, input_names, output_names)?;
        let session = state.saved_models.get(run.session)?.clone();
        let mut inputs = Vec::with_capacity(run.ids.len());
        for (&tid, name) in run.ids.iter().zip(run.inputs) {
            state.settle_in_background(tid)?;
            let spec = state
                .runtime
                .tensors
                .spec(tid, &state.runtime.status)
                .map_err(|e| e.context(&format!("input '{name}'")))?;
            let port = lookup(&session, &name, "input")?;
            check_input(&session, port, DTYPES[spec.dtype].tf as i32, &name)?;
            inputs.push((
                name,
                state
                    .runtime
                    .tensors
                    .job_input(tid, &state.runtime.status)?,
            ));
        }
        for name in &run.outputs {
            lookup(&session, name, "output")?;
        }
        let outputs = run.outputs;
        let work = Work::new(move |status| {
            let mut feeds = Vec::with_capacity(inputs.len());
            for (name, input) in &inputs {
                let tensor = input.resolve(status)?.resolve(status)?;
                feeds.push((lookup(&session, name, "input")?, tensor));
            }
            run_session(&session, &feeds, &outputs, status)
        });
        let job = state.runtime.executor.submit(work)?;
        Ok(state.runtime.executor.hold(job))
    })
}

/// What a run was asked for: the session, input ids and graph tensor names, output names.
struct RunRequest {
    session: u64,
    ids: Vec<u64>,
    inputs: Vec<String>,
    outputs: Vec<String>,
}

impl RunRequest {
    fn read(
        js: Js,
        id: Unknown,
        input_ids: Unknown,
        input_names: Unknown,
        output_names: Unknown,
    ) -> Result<RunRequest> {
        let session = args::tensor_id(js, id.raw(), "id")?;
        let ids = id_list(js, input_ids.raw())?;
        let inputs = strings(js, input_names.raw(), "inputNames")?;
        let outputs = strings(js, output_names.raw(), "outputNames")?;
        if ids.len() != inputs.len() {
            return Err(Error::Range(format!(
                "runSavedModel: {} input ids but {} input names",
                ids.len(),
                inputs.len()
            )));
        }
        if outputs.is_empty() {
            return Err(Error::Invalid(
                "runSavedModel: outputNames must name at least one output".into(),
            ));
        }
        for (i, name) in inputs.iter().enumerate() {
            if inputs[..i].contains(name) {
                return Err(Error::Invalid(format!("input '{name}' is given twice")));
            }
        }
        Ok(RunRequest {
            session,
            ids,
            inputs,
            outputs,
        })
    }
}

/// Runs `session` on `feeds`, fetching the tensors named `outputs`.
fn run_session(
    session: &Session,
    feeds: &[(Port<'_>, Tensor)],
    outputs: &[String],
    status: &Status,
) -> Result<Vec<TensorHandle>> {
    let fetches = outputs
        .iter()
        .map(|name| lookup(session, name, "output"))
        .collect::<Result<Vec<_>>>()?;
    let inputs: Vec<(Port, &Tensor)> = feeds.iter().map(|(p, t)| (*p, t)).collect();
    let results = session
        .run(&inputs, &fetches, status)
        .map_err(|e| e.context("runSavedModel"))?;
    results
        .iter()
        .map(|t| TensorHandle::from_tensor(t, status))
        .collect()
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

/// The TF code of a handle's dtype, known to the binding or not.
fn dtype_code(dtype: std::result::Result<DType, i32>) -> i32 {
    dtype.map_or_else(|code| code, |d| d.tf as i32)
}

/// Refuses an input of another dtype (TF code `got`) than the graph's tensor `port`.
fn check_input(session: &Session, port: Port<'_>, got: i32, name: &str) -> Result<()> {
    let want = session.port_dtype(port);
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
