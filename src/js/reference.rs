//! References to JS values: strong ones keep a value alive while TF reads its memory; weak ones
//! tell whether V8 has collected a value, without waiting for its finalizer.

use std::ptr;

use napi::sys;

use super::{Js, Value};
use crate::error::Result;

/// An `napi_ref`. It may travel to other threads (TF's), but is only deleted on its env's
/// JS thread (see `crate::release`).
pub struct JsRef(sys::napi_ref);

// SAFETY: the pointer is an opaque token; it is only dereferenced by N-API on the env's thread.
unsafe impl Send for JsRef {}

impl JsRef {
    pub fn new(js: Js, value: Value) -> Result<JsRef> {
        // A count of 1 makes the reference strong.
        create(js, value, 1).map(JsRef)
    }

    /// Deletes the reference. Must run on the env's JS thread while the env is alive.
    pub fn delete(self, env: EnvToken) {
        // SAFETY: the caller is on the env's JS thread before teardown; the ref is deleted once.
        unsafe { sys::napi_delete_reference(env.0, self.0) };
    }
}

/// A weak `napi_ref`: it does not keep its value alive, and reads as empty as soon as V8 has
/// collected the value (during the collection, not when finalizers run later from the event
/// loop). JS thread only.
pub struct WeakRef(sys::napi_ref);

impl WeakRef {
    pub fn new(js: Js, value: Value) -> Result<WeakRef> {
        // A count of 0 makes the reference weak.
        create(js, value, 0).map(WeakRef)
    }

    /// Whether the value is still alive.
    pub fn is_alive(&self, js: Js) -> Result<bool> {
        let mut value = ptr::null_mut();
        // SAFETY: the reference belongs to this env and has not been deleted.
        let status = unsafe { sys::napi_get_reference_value(js.raw_env(), self.0, &mut value) };
        js.check(status)?;
        Ok(!value.is_null())
    }

    pub fn delete(self, js: Js) {
        // SAFETY: on the env's JS thread during a call; the ref is deleted once.
        unsafe { sys::napi_delete_reference(js.raw_env(), self.0) };
    }
}

fn create(js: Js, value: Value, count: u32) -> Result<sys::napi_ref> {
    let mut out = ptr::null_mut();
    // SAFETY: the env and value are live; out is a valid out-pointer.
    let status = unsafe { sys::napi_create_reference(js.raw_env(), value, count, &mut out) };
    js.check(status)?;
    Ok(out)
}

/// An env kept by objects that other threads reach (the release queue); only used, through
/// `JsRef::delete`, back on the env's JS thread.
#[derive(Clone, Copy)]
pub struct EnvToken(sys::napi_env);

// SAFETY: the pointer is an opaque token; N-API only dereferences it on the env's thread.
unsafe impl Send for EnvToken {}
// SAFETY: as above; sharing the token value across threads reads nothing through it.
unsafe impl Sync for EnvToken {}

impl EnvToken {
    pub fn of(js: Js) -> EnvToken {
        EnvToken(js.raw_env())
    }
}
