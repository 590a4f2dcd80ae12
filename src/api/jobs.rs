//! `whenReady`, `whenJobDone`, `takeJobOutputs`: waiting for executor jobs (`crate::executor`)
//! without holding the JS thread.

use napi::bindgen_prelude::{Env, Unknown};
use napi::JsValue;

use super::args;
use super::execute::outputs_to_js;
use super::state_call;

/// `null` when tensor `id` holds its values (or fails at once on a read); else a promise that
/// resolves once it does, while the work computing it runs on the executor thread (a deferred
/// run it comes from is started there). A read after that does not wait.
#[napi_derive::napi(
    js_name = "whenReady",
    ts_args_type = "id: number",
    ts_return_type = "Promise<void> | null"
)]
pub fn when_ready(env: Env, id: Unknown) -> napi::Result<Unknown<'static>> {
    state_call(&env, |js, state| {
        let id = args::tensor_id(js, id.raw(), "id")?;
        let value = match state.runtime.when_ready(&state.prepared_ops, js, id)? {
            Some(promise) => promise,
            None => js.null()?,
        };
        Ok(js.to_unknown(value))
    })
}

/// A promise that resolves (never rejects) once job `job` (a number from
/// `runSavedModelInBackground`) is done.
#[napi_derive::napi(
    js_name = "whenJobDone",
    ts_args_type = "job: number",
    ts_return_type = "Promise<void>"
)]
pub fn when_job_done(env: Env, job: u32) -> napi::Result<Unknown<'static>> {
    state_call(&env, |js, state| {
        let promise = state.runtime.when_job_done(js, job)?;
        Ok(js.to_unknown(promise))
    })
}

/// The outputs of job `job` as `[{id, shape, dtype}]` (waiting for it when it is not done),
/// or TF's error of its run; the number is forgotten either way.
#[napi_derive::napi(
    js_name = "takeJobOutputs",
    ts_args_type = "job: number",
    ts_return_type = "TensorInfo[]"
)]
pub fn take_job_outputs(env: Env, job: u32) -> napi::Result<Unknown<'static>> {
    state_call(&env, |js, state| {
        let outputs = state.runtime.take_job_outputs(job)?;
        Ok(js.to_unknown(outputs_to_js(js, outputs)?))
    })
}

/// Finishes the job in progress and stops the executor thread: `process.exit()` runs no env
/// cleanup hooks before the process's own destructors, which would tear TensorFlow down under a
/// job still running. Called from a `process` `'exit'` listener (js/backend/tensorflow_backend.js).
#[napi_derive::napi(js_name = "stopBackgroundWork")]
pub fn stop_background_work(env: Env) -> napi::Result<()> {
    state_call(&env, |_, state| {
        state.runtime.stop_background_work();
        Ok(())
    })
}

/// Starts letting go of libtensorflow's read-only pages on another thread while the process
/// exits (src/library_pages.rs); nothing outside the process's main thread. Called from the
/// `'exit'` listener that stops background work.
#[napi_derive::napi(js_name = "releaseLibraryPages")]
pub fn release_library_pages() {
    crate::library_pages::release_in_background();
}
