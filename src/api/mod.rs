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
mod profile;
mod saved_model;
mod tensors;

use napi::bindgen_prelude::Env;

use crate::env_state::EnvState;
use crate::error::Result;
use crate::js::Js;

/// Runs a binding call, turning its error into the matching thrown JS error.
fn js_call<T>(env: &Env, body: impl FnOnce(Js) -> Result<T>) -> napi::Result<T> {
    let js = Js::new(env.raw());
    body(js).map_err(|err| js.throw(&err))
}

/// `js_call` with this env's state, borrowed for the body alone (`EnvState::with`).
fn state_call<T>(env: &Env, body: impl FnOnce(Js, &mut EnvState) -> Result<T>) -> napi::Result<T> {
    js_call(env, |js| EnvState::with(js, |state| body(js, state)))
}
