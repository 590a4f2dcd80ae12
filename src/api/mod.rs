//! The functions the addon exports to JS.

mod args;
mod attrs;
mod calls;
mod cluster;
mod execute;
mod info;
mod jobs;
mod libraries;
mod op_defs;
mod saved_model;
mod tensors;

use napi::bindgen_prelude::Env;

use crate::error::Result;
use crate::js::Js;

/// Runs a binding call, turning its error into the matching thrown JS error.
fn js_call<T>(env: &Env, body: impl FnOnce(Js) -> Result<T>) -> napi::Result<T> {
    let js = Js::new(env.raw());
    body(js).map_err(|err| js.throw(&err))
}
