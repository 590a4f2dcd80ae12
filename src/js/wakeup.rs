//! Wakes a JS thread from any thread: an N-API threadsafe function with no JS callback, whose
//! native callback runs on the JS thread.

use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use napi::sys;

use super::Js;
use crate::error::Result;

/// What the JS thread does when woken.
pub trait OnWake: Send + Sync + 'static {
    fn on_wake(&self, js: Js);
}

pub struct Wakeup(sys::napi_threadsafe_function);

// SAFETY: threadsafe functions exist to be called from any thread.
unsafe impl Send for Wakeup {}

impl Wakeup {
    /// Unref'd, so a pending wakeup never keeps the event loop (or a worker) alive.
    pub fn new<T: OnWake>(js: Js, target: Arc<T>) -> Result<Wakeup> {
        let context = Arc::into_raw(target) as *mut c_void;
        let mut tsfn = ptr::null_mut();
        let mut name = ptr::null_mut();
        // SAFETY: N-API owns the tsfn until released; `context` is reclaimed once in drop_target.
        unsafe {
            let label = "tfjs-node-rs wakeup";
            js.check(sys::napi_create_string_utf8(
                js.raw_env(),
                label.as_ptr().cast(),
                label.len() as isize,
                &mut name,
            ))?;
            let status = sys::napi_create_threadsafe_function(
                js.raw_env(),
                ptr::null_mut(),
                ptr::null_mut(),
                name,
                0,
                1,
                context,
                Some(drop_target::<T>),
                context,
                Some(call_target::<T>),
                &mut tsfn,
            );
            if let Err(err) = js.check(status) {
                drop(Arc::from_raw(context as *const T));
                return Err(err);
            }
            js.check(sys::napi_unref_threadsafe_function(js.raw_env(), tsfn))?;
        }
        Ok(Wakeup(tsfn))
    }

    /// Queues one call of `on_wake` on the JS thread. Callable from any thread until `close`.
    pub fn wake(&self) {
        // SAFETY: the tsfn is live until `close`, which the owner serializes against this call.
        unsafe {
            sys::napi_call_threadsafe_function(
                self.0,
                ptr::null_mut(),
                sys::ThreadsafeFunctionCallMode::nonblocking,
            )
        };
    }

    /// While held, a queued or coming wakeup keeps the event loop alive (a promise waits on it).
    /// JS thread only.
    pub fn hold(&self, js: Js, held: bool) -> Result<()> {
        // SAFETY: the tsfn is live until `close`; (un)ref is called on its env's JS thread.
        let status = unsafe {
            if held {
                sys::napi_ref_threadsafe_function(js.raw_env(), self.0)
            } else {
                sys::napi_unref_threadsafe_function(js.raw_env(), self.0)
            }
        };
        js.check(status)
    }

    /// Releases the tsfn; N-API finalizes it (and drops the target) on the JS thread.
    pub fn close(self) {
        // SAFETY: called once; no `wake` follows (the owner drops its Wakeup here).
        unsafe {
            sys::napi_release_threadsafe_function(self.0, sys::ThreadsafeFunctionReleaseMode::abort)
        };
    }
}

unsafe extern "C" fn call_target<T: OnWake>(
    env: sys::napi_env,
    _js_fn: sys::napi_value,
    context: *mut c_void,
    _data: *mut c_void,
) {
    // A null env means the tsfn is being torn down with calls still queued: nothing to do.
    if env.is_null() {
        return;
    }
    // SAFETY: context is the Arc<T> pointer, alive until drop_target runs after the last call.
    let target = unsafe { &*(context as *const T) };
    target.on_wake(Js::new(env));
}

unsafe extern "C" fn drop_target<T: OnWake>(
    _env: sys::napi_env,
    data: *mut c_void,
    _hint: *mut c_void,
) {
    // SAFETY: data is the pointer from Arc::into_raw in `new`, reclaimed once here.
    drop(unsafe { Arc::from_raw(data as *const T) });
}
