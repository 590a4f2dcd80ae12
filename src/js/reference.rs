//! Strong references that keep a JS value alive while TF reads its memory.

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
        let mut out = ptr::null_mut();
        // SAFETY: the env and value are live; a count of 1 makes the reference strong.
        let status = unsafe { sys::napi_create_reference(js.raw_env(), value, 1, &mut out) };
        js.check(status)?;
        Ok(JsRef(out))
    }

    /// Deletes the reference. Must run on the env's JS thread while the env is alive.
    pub fn delete(self, env: sys::napi_env) {
        // SAFETY: the caller is on the env's JS thread before teardown; the ref is deleted once.
        unsafe { sys::napi_delete_reference(env, self.0) };
    }
}
