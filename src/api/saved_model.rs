//! `loadSavedModel`, `runSavedModel`, `deleteSavedModel`, `getNumOfSavedModels`: SavedModel
//! sessions whose inputs and outputs are the binding's tensor ids.

use napi::bindgen_prelude::{Env, Uint8Array, Unknown};
use napi::JsValue;

use super::args;
use super::execute::outputs_to_js;
use super::state_call;
use crate::error::{Error, Result};
use crate::js::{Js, Value};
use crate::saved_model::SessionRun;

/// Inputs and outputs beyond this are a caller's mistake.
const MAX_TENSORS: u32 = 4096;

/// `loadSavedModel(exportDir, tags, sessionConfig?, ownSession?)` → a session id.
/// `sessionConfig`: the session's own `ConfigProto` fields (js/configure.js), over the
/// process's. Loading the same directory with the same tags and options again shares the
/// session (one more reference), unless either load asks for a session of its own.
#[napi_derive::napi(
    js_name = "loadSavedModel",
    ts_args_type = "exportDir: string, tags: string[], sessionConfig?: Uint8Array, ownSession?: boolean"
)]
pub fn load_saved_model(
    env: Env,
    export_dir: Unknown,
    tags: Unknown,
    session_config: Option<Uint8Array>,
    own_session: Option<bool>,
) -> napi::Result<f64> {
    state_call(&env, |js, state| {
        let mut buf = Vec::new();
        let dir = string(js, export_dir.raw(), &mut buf, "exportDir")?;
        let tags = strings(js, tags.raw(), "tags")?;
        if tags.is_empty() {
            return Err(Error::Invalid("tags must name at least one tag".into()));
        }
        let config = session_config.as_deref().unwrap_or_default();
        let share = !own_session.unwrap_or(false);
        let id = state
            .saved_models
            .load(&dir, &tags, config, share, state.runtime.status())?;
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
/// graph tensors (see `SessionRun`).
#[napi_derive::napi(js_name = "runSavedModel")]
pub fn run_saved_model(
    env: Env,
    id: Unknown,
    input_ids: Unknown,
    input_names: Unknown,
    output_names: Unknown,
) -> napi::Result<Unknown<'static>> {
    state_call(&env, |js, state| {
        let (session, ids, run) = read_run(js, id, input_ids, input_names, output_names)?;
        let session = state.saved_models.get(session)?;
        let outputs = state
            .runtime
            .run_saved_model(&state.prepared_ops, session, &ids, &run)?;
        Ok(js.to_unknown(outputs_to_js(js, outputs)?))
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
        let (session, ids, run) = read_run(js, id, input_ids, input_names, output_names)?;
        let session = state.saved_models.get(session)?.clone();
        state
            .runtime
            .run_saved_model_in_background(&state.prepared_ops, session, &ids, run)
    })
}

/// What a run was asked for: the session, the input ids, the graph tensors fed and fetched.
fn read_run(
    js: Js,
    id: Unknown,
    input_ids: Unknown,
    input_names: Unknown,
    output_names: Unknown,
) -> Result<(u64, Vec<u64>, SessionRun)> {
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
    Ok((session, ids, SessionRun { inputs, outputs }))
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
