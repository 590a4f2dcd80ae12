//! Raw N-API access for the hot paths (reading typed arrays without copying, external
//! ArrayBuffers, references). All FFI into N-API lives in this module.

pub mod external;
pub mod reference;
pub mod wakeup;

use std::cell::Cell;
use std::ffi::{c_void, CStr};
use std::ptr;

use napi::bindgen_prelude::Unknown;
use napi::sys;

use crate::error::{Error, Result};
use crate::tf::dtype::ArrayKind;

pub type Value = sys::napi_value;

/// An N-API env, usable only on its JS thread, only during the call that handed it out.
#[derive(Clone, Copy)]
pub struct Js {
    env: sys::napi_env,
}

/// A typed array's memory, borrowed from its ArrayBuffer.
pub struct TypedArrayView {
    pub kind: Option<ArrayKind>,
    pub data: *mut u8,
    /// Elements of the array's own type.
    pub length: usize,
    pub byte_length: usize,
    pub detached: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum JsType {
    Undefined,
    Null,
    Boolean,
    Number,
    String,
    Symbol,
    Object,
    Function,
    External,
    BigInt,
}

impl JsType {
    pub fn name(self) -> &'static str {
        match self {
            JsType::Undefined => "undefined",
            JsType::Null => "null",
            JsType::Boolean => "boolean",
            JsType::Number => "number",
            JsType::String => "string",
            JsType::Symbol => "symbol",
            JsType::Object => "object",
            JsType::Function => "function",
            JsType::External => "external",
            JsType::BigInt => "bigint",
        }
    }
}

macro_rules! napi_call {
    ($js:expr, $call:expr) => {{
        // SAFETY: every N-API call here gets the env of the running callback and handles that
        // belong to it; out-pointers point at live locals.
        let status = unsafe { $call };
        $js.check(status)?
    }};
}

impl Js {
    pub fn new(env: sys::napi_env) -> Js {
        Js { env }
    }

    pub fn raw_env(self) -> sys::napi_env {
        self.env
    }

    pub(crate) fn check(self, status: sys::napi_status) -> Result<()> {
        if status == sys::Status::napi_ok {
            return Ok(());
        }
        let mut info: *const sys::napi_extended_error_info = ptr::null();
        // SAFETY: the env is live; the info struct is owned by N-API and read at once.
        let message = unsafe {
            if sys::napi_get_last_error_info(self.env, &mut info) == sys::Status::napi_ok
                && !info.is_null()
                && !(*info).error_message.is_null()
            {
                CStr::from_ptr((*info).error_message)
                    .to_string_lossy()
                    .into_owned()
            } else {
                format!("N-API call failed with status {status}")
            }
        };
        Err(Error::Napi(message))
    }

    /// Throws `err` as the matching JS error class, unless a JS exception is already pending
    /// (a getter that threw), which then propagates unchanged.
    pub fn throw(self, err: &Error) -> napi::Error {
        let mut pending = false;
        // SAFETY: the env is live; code and message are NUL-free C strings built here.
        unsafe {
            sys::napi_is_exception_pending(self.env, &mut pending);
            if !pending {
                let code = c_string(err.code());
                let message = c_string(err.message());
                match err {
                    Error::Type(_) => {
                        sys::napi_throw_type_error(self.env, code.as_ptr(), message.as_ptr())
                    }
                    Error::Range(_) => {
                        sys::napi_throw_range_error(self.env, code.as_ptr(), message.as_ptr())
                    }
                    _ => sys::napi_throw_error(self.env, code.as_ptr(), message.as_ptr()),
                };
            }
        }
        napi::Error::from_status(napi::Status::PendingException)
    }

    pub fn type_of(self, value: Value) -> Result<JsType> {
        let mut t = 0;
        napi_call!(self, sys::napi_typeof(self.env, value, &mut t));
        Ok(match t {
            sys::ValueType::napi_undefined => JsType::Undefined,
            sys::ValueType::napi_null => JsType::Null,
            sys::ValueType::napi_boolean => JsType::Boolean,
            sys::ValueType::napi_number => JsType::Number,
            sys::ValueType::napi_string => JsType::String,
            sys::ValueType::napi_symbol => JsType::Symbol,
            sys::ValueType::napi_function => JsType::Function,
            sys::ValueType::napi_external => JsType::External,
            sys::ValueType::napi_bigint => JsType::BigInt,
            _ => JsType::Object,
        })
    }

    pub fn is_array(self, value: Value) -> Result<bool> {
        let mut is = false;
        napi_call!(self, sys::napi_is_array(self.env, value, &mut is));
        Ok(is)
    }

    pub fn array_length(self, value: Value) -> Result<u32> {
        let mut len = 0;
        napi_call!(self, sys::napi_get_array_length(self.env, value, &mut len));
        Ok(len)
    }

    pub fn element(self, array: Value, index: u32) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_get_element(self.env, array, index, &mut out)
        );
        Ok(out)
    }

    pub fn property(self, object: Value, key: &CStr) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_get_named_property(self.env, object, key.as_ptr(), &mut out)
        );
        Ok(out)
    }

    /// The number, or `None` when the value is not a number.
    pub fn number(self, value: Value) -> Result<Option<f64>> {
        let mut out = 0.0;
        // SAFETY: as in napi_call!; a non-number answers napi_number_expected, which is no error here.
        let status = unsafe { sys::napi_get_value_double(self.env, value, &mut out) };
        if status == sys::Status::napi_number_expected {
            return Ok(None);
        }
        self.check(status)?;
        Ok(Some(out))
    }

    pub fn boolean(self, value: Value) -> Result<Option<bool>> {
        let mut out = false;
        // SAFETY: as in napi_call!.
        let status = unsafe { sys::napi_get_value_bool(self.env, value, &mut out) };
        if status == sys::Status::napi_boolean_expected {
            return Ok(None);
        }
        self.check(status)?;
        Ok(Some(out))
    }

    pub fn bigint_i64(self, value: Value) -> Result<Option<(i64, bool)>> {
        let mut out = 0i64;
        let mut lossless = false;
        // SAFETY: as in napi_call!.
        let status =
            unsafe { sys::napi_get_value_bigint_int64(self.env, value, &mut out, &mut lossless) };
        if status == sys::Status::napi_bigint_expected {
            return Ok(None);
        }
        self.check(status)?;
        Ok(Some((out, lossless)))
    }

    /// Reads a JS string as UTF-8 into `buf` (replacing its contents) and NUL-terminates it, so
    /// names reach TF without a per-call allocation. `false` when the value is not a string.
    pub fn string_into(self, value: Value, buf: &mut Vec<u8>) -> Result<bool> {
        if buf.capacity() < 64 {
            buf.reserve(64);
        }
        let mut len = 0usize;
        // SAFETY: as in napi_call!; N-API writes at most capacity bytes including the NUL.
        let status = unsafe {
            sys::napi_get_value_string_utf8(
                self.env,
                value,
                buf.as_mut_ptr().cast(),
                buf.capacity(),
                &mut len,
            )
        };
        if status == sys::Status::napi_string_expected {
            return Ok(false);
        }
        self.check(status)?;
        if len + 1 >= buf.capacity() {
            // Possibly truncated: ask for the full length, then read again.
            napi_call!(
                self,
                sys::napi_get_value_string_utf8(self.env, value, ptr::null_mut(), 0, &mut len)
            );
            buf.reserve(len + 1);
            napi_call!(
                self,
                sys::napi_get_value_string_utf8(
                    self.env,
                    value,
                    buf.as_mut_ptr().cast(),
                    len + 1,
                    &mut len
                )
            );
        }
        // SAFETY: N-API wrote len bytes plus a NUL into the buffer.
        unsafe { buf.set_len(len + 1) };
        Ok(true)
    }

    /// A typed array's kind code, element count, data and ArrayBuffer, in one N-API call;
    /// `None` for a value that is no typed array.
    fn typedarray_info(self, value: Value) -> Result<Option<(i32, usize, *mut u8, Value)>> {
        let (mut kind, mut length, mut data, mut buffer, mut offset) =
            (0, 0usize, ptr::null_mut(), ptr::null_mut(), 0usize);
        // SAFETY: as in napi_call!; a value that is no typed array answers napi_invalid_arg.
        let status = unsafe {
            sys::napi_get_typedarray_info(
                self.env,
                value,
                &mut kind,
                &mut length,
                &mut data,
                &mut buffer,
                &mut offset,
            )
        };
        if status == sys::Status::napi_invalid_arg {
            return Ok(None);
        }
        self.check(status)?;
        Ok(Some((kind, length, data.cast(), buffer)))
    }

    /// A Float64Array, read with one N-API call for the per-op fast path (no detach check: a
    /// detached array has no elements, which its callers refuse); `None` for any other value.
    pub fn float64_array(self, value: Value) -> Result<Option<TypedArrayView>> {
        Ok(self
            .typedarray_info(value)?
            .and_then(|(kind, length, data, _)| {
                (ArrayKind::from_napi(kind) == Some(ArrayKind::Float64)).then_some(TypedArrayView {
                    kind: Some(ArrayKind::Float64),
                    data,
                    length,
                    byte_length: length * 8,
                    detached: data.is_null(),
                })
            }))
    }

    pub fn typed_array(self, value: Value) -> Result<Option<TypedArrayView>> {
        let Some((kind, length, data, buffer)) = self.typedarray_info(value)? else {
            return Ok(None);
        };
        let mut detached = false;
        napi_call!(
            self,
            sys::napi_is_detached_arraybuffer(self.env, buffer, &mut detached)
        );
        let kind = ArrayKind::from_napi(kind);
        let element_bytes = kind.map_or(1, |k| k.element_bytes());
        Ok(Some(TypedArrayView {
            kind,
            data,
            length,
            byte_length: length * element_bytes,
            detached,
        }))
    }

    pub fn number_value(self, value: f64) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(self, sys::napi_create_double(self.env, value, &mut out));
        Ok(out)
    }

    pub fn string_value(self, value: &str) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_create_string_utf8(
                self.env,
                value.as_ptr().cast(),
                value.len() as isize,
                &mut out
            )
        );
        Ok(out)
    }

    pub fn null(self) -> Result<Value> {
        let mut value = ptr::null_mut();
        napi_call!(self, sys::napi_get_null(self.env, &mut value));
        Ok(value)
    }

    pub fn object(self) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(self, sys::napi_create_object(self.env, &mut out));
        Ok(out)
    }

    pub fn set_property(self, object: Value, key: &CStr, value: Value) -> Result<()> {
        napi_call!(
            self,
            sys::napi_set_named_property(self.env, object, key.as_ptr(), value)
        );
        Ok(())
    }

    pub fn array(self, length: usize) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_create_array_with_length(self.env, length, &mut out)
        );
        Ok(out)
    }

    pub fn set_element(self, array: Value, index: u32, value: Value) -> Result<()> {
        napi_call!(self, sys::napi_set_element(self.env, array, index, value));
        Ok(())
    }

    /// A typed array of `kind` over `length` elements of `buffer`, from byte 0.
    pub fn typed_array_value(self, kind: ArrayKind, length: usize, buffer: Value) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_create_typedarray(self.env, kind as i32, length, buffer, 0, &mut out)
        );
        Ok(out)
    }

    /// A `Uint8Array` holding a copy of `bytes`.
    pub fn uint8_array_copy(self, bytes: &[u8]) -> Result<Value> {
        let buffer = self.array_buffer_copy(bytes)?;
        self.typed_array_value(ArrayKind::Uint8, bytes.len(), buffer)
    }

    /// An ArrayBuffer on V8's own memory holding a copy of `bytes`: V8 frees it when it is
    /// collected, with no finalizer to wait for.
    pub fn array_buffer_copy(self, bytes: &[u8]) -> Result<Value> {
        let mut data: *mut c_void = ptr::null_mut();
        let mut buffer = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_create_arraybuffer(self.env, bytes.len(), &mut data, &mut buffer)
        );
        if !bytes.is_empty() {
            // SAFETY: N-API just allocated bytes.len() writable bytes at data.
            unsafe { ptr::copy_nonoverlapping(bytes.as_ptr(), data.cast::<u8>(), bytes.len()) };
        }
        Ok(buffer)
    }

    pub fn global(self) -> Result<Value> {
        let mut out = ptr::null_mut();
        napi_call!(self, sys::napi_get_global(self.env, &mut out));
        Ok(out)
    }

    /// An empty ArrayBuffer, for zero-length results (external buffers need real memory).
    pub fn empty_array_buffer(self) -> Result<Value> {
        let mut data: *mut c_void = ptr::null_mut();
        let mut buffer = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_create_arraybuffer(self.env, 0, &mut data, &mut buffer)
        );
        Ok(buffer)
    }

    /// A new promise and the deferred that settles it (`resolve_undefined`).
    pub fn promise(self) -> Result<(Value, Deferred)> {
        let mut deferred = ptr::null_mut();
        let mut promise = ptr::null_mut();
        napi_call!(
            self,
            sys::napi_create_promise(self.env, &mut deferred, &mut promise)
        );
        Ok((promise, Deferred(deferred)))
    }

    /// Resolves the promise of `deferred` with `undefined`.
    pub fn resolve_undefined(self, deferred: Deferred) -> Result<()> {
        let mut undefined = ptr::null_mut();
        napi_call!(self, sys::napi_get_undefined(self.env, &mut undefined));
        napi_call!(
            self,
            sys::napi_resolve_deferred(self.env, deferred.0, undefined)
        );
        Ok(())
    }

    pub fn to_unknown(self, value: Value) -> Unknown<'static> {
        // SAFETY: value is a live handle of this env, returned straight to N-API by the caller.
        unsafe { Unknown::from_raw_unchecked(self.env, value) }
    }

    /// The per-env pointer stored by `set_instance_data`, or null before the first call.
    pub fn instance_data(self) -> Result<*mut c_void> {
        let mut out = ptr::null_mut();
        napi_call!(self, sys::napi_get_instance_data(self.env, &mut out));
        Ok(out)
    }

    /// Stores `data` for this env and registers `cleanup` to run while the env can still call
    /// into JS (before N-API tears down references), with `data` as its argument.
    pub fn set_instance_data(
        self,
        data: *mut c_void,
        cleanup: unsafe extern "C" fn(*mut c_void),
    ) -> Result<()> {
        napi_call!(
            self,
            sys::napi_set_instance_data(self.env, data, None, ptr::null_mut())
        );
        napi_call!(
            self,
            sys::napi_add_env_cleanup_hook(self.env, Some(cleanup), data)
        );
        Ok(())
    }
}

fn c_string(text: &str) -> std::ffi::CString {
    std::ffi::CString::new(text.replace('\0', " ")).unwrap_or_default()
}

/// The settling end of a promise made by `Js::promise`; settled once, on its env's JS thread.
pub struct Deferred(sys::napi_deferred);

// SAFETY: the deferred is only a token while it moves between threads; N-API is called with it
// on the JS thread alone (`resolve_undefined` takes a `Js`).
unsafe impl Send for Deferred {}

/// What becomes of an env's data after its cleanup hook ran `EnvData::shut_down`.
pub enum Teardown {
    Drop,
    /// Left to the process's end, which is under way.
    Leave,
}

/// State kept per env (each worker thread has its own), torn down by the env's cleanup hook.
pub trait EnvData: 'static {
    /// Runs once while the env can still use N-API, before its references are freed.
    fn shut_down(&mut self) -> Teardown;
}

/// Whether the calling thread is the process's main thread: there, an env's JS thread is the
/// main env's, which ends only as the process does. Linux only (`false` elsewhere).
pub fn is_process_main_thread() -> bool {
    #[cfg(target_os = "linux")]
    // SAFETY: plain system calls without arguments.
    return unsafe { libc::gettid() == libc::getpid() };
    #[cfg(not(target_os = "linux"))]
    false
}

struct EnvSlot<T> {
    env: sys::napi_env,
    /// Whether a call is using `data` (`with_env_data`).
    in_use: Cell<bool>,
    data: T,
}

/// Marks an env's data free again when the use that took it ends, by return or by unwinding.
struct InUse<'a>(&'a Cell<bool>);

impl Drop for InUse<'_> {
    fn drop(&mut self) {
        self.0.set(false);
    }
}

impl Js {
    /// Runs `body` with this env's `T` (made by `init` on first use), borrowed for `body` alone.
    /// A second use while one is live (the binding re-entered from JS that a call ran) is an
    /// error instead of a second mutable borrow of the same data.
    pub fn with_env_data<T: EnvData, R>(
        self,
        init: impl FnOnce(Js) -> Result<T>,
        body: impl FnOnce(&mut T) -> Result<R>,
    ) -> Result<R> {
        let slot = self.env_slot(init)?;
        // SAFETY: `slot` is this env's live EnvSlot<T> (`env_slot`), used on its JS thread only;
        // this borrows its flag alone, which no borrow of `data` overlaps.
        let in_use = unsafe { &(*slot).in_use };
        if in_use.replace(true) {
            return Err(Error::Invalid(
                "the binding was called again while one of its calls was running".into(),
            ));
        }
        let _in_use = InUse(in_use);
        // SAFETY: the flag was clear, so no other borrow of `data` is live: every one is made
        // here, under the flag, and ends with `body`.
        body(unsafe { &mut (*slot).data })
    }

    /// This env's slot for `T`, made by `init` on first use.
    fn env_slot<T: EnvData>(self, init: impl FnOnce(Js) -> Result<T>) -> Result<*mut EnvSlot<T>> {
        let existing = self.instance_data()?;
        if !existing.is_null() {
            // The only pointer stored as instance data is an EnvSlot<T> made below; it lives
            // until the cleanup hook, after which no JS (and so no call here) runs in this env.
            return Ok(existing.cast());
        }
        let slot = Box::into_raw(Box::new(EnvSlot {
            env: self.env,
            in_use: Cell::new(false),
            data: init(self)?,
        }));
        if let Err(err) = self.set_instance_data(slot.cast(), shut_down_slot::<T>) {
            // SAFETY: the slot was not handed to N-API.
            drop(unsafe { Box::from_raw(slot) });
            return Err(err);
        }
        Ok(slot)
    }
}

unsafe extern "C" fn shut_down_slot<T: EnvData>(arg: *mut c_void) {
    // SAFETY: arg is the EnvSlot<T> registered in env_data; the hook runs once.
    let mut slot = unsafe { Box::from_raw(arg.cast::<EnvSlot<T>>()) };
    let teardown = slot.data.shut_down();
    // SAFETY: the env is still alive during its cleanup hooks; clearing the pointer keeps any
    // later lookup from seeing freed memory.
    unsafe { sys::napi_set_instance_data(slot.env, ptr::null_mut(), None, ptr::null_mut()) };
    if let Teardown::Leave = teardown {
        std::mem::forget(slot);
    }
}

impl TypedArrayView {
    /// The elements of an attached Float64Array, writable; `None` for any other array.
    pub fn f64s_mut(&mut self) -> Option<&mut [f64]> {
        if self.kind != Some(ArrayKind::Float64) || self.detached || self.data.is_null() {
            return None;
        }
        // SAFETY: N-API reported `length` f64 elements at data (typed arrays are element-aligned),
        // in a live attached buffer that this view borrows mutably for the running call.
        Some(unsafe { std::slice::from_raw_parts_mut(self.data.cast::<f64>(), self.length) })
    }

    /// The array's bytes, borrowed for as long as the JS call that produced the view.
    pub fn bytes(&self) -> &[u8] {
        if self.byte_length == 0 || self.data.is_null() {
            return &[];
        }
        // SAFETY: N-API reported byte_length bytes at data in a live, attached ArrayBuffer; the
        // array stays reachable (it is an argument of the running call).
        unsafe { std::slice::from_raw_parts(self.data, self.byte_length) }
    }
}
