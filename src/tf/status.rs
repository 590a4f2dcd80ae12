//! `TF_Status` as a Rust `Result`: every TF call is followed by `check()`.

use std::ffi::CStr;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use crate::error::{Error, Result};

pub struct Status(NonNull<sys::TF_Status>);

impl Status {
    pub fn new() -> Status {
        // SAFETY: TF_NewStatus has no preconditions; it aborts on allocation failure, never returns null.
        let raw = unsafe { sys::TF_NewStatus() };
        Status(NonNull::new(raw).expect("TF_NewStatus returned null"))
    }

    pub fn raw(&self) -> *mut sys::TF_Status {
        self.0.as_ptr()
    }

    /// The outcome of the last call that wrote this status, then reset to OK for the next one
    /// (some TF calls only write the status when they fail).
    pub fn check(&self) -> Result<()> {
        // SAFETY: the status is live for self's lifetime; TF_Message returns a string owned by it,
        // which is copied before TF_SetStatus overwrites it.
        unsafe {
            let code = sys::TF_GetCode(self.raw());
            if code == sys::TF_OK {
                return Ok(());
            }
            let message = CStr::from_ptr(sys::TF_Message(self.raw()))
                .to_string_lossy()
                .into_owned();
            sys::TF_SetStatus(self.raw(), sys::TF_OK, c"".as_ptr());
            Err(Error::Tf {
                code: code_name(code),
                message,
            })
        }
    }

    /// Sets the status to `code` with `message` (NULs dropped), as a failed TF call would.
    pub fn set(&self, code: sys::TF_Code, message: &str) {
        let message = std::ffi::CString::new(message.replace('\0', "")).unwrap_or_default();
        // SAFETY: the status is live; TF copies the message.
        unsafe { sys::TF_SetStatus(self.raw(), code, message.as_ptr()) };
    }
}

impl Default for Status {
    fn default() -> Self {
        Status::new()
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        // SAFETY: the pointer came from TF_NewStatus and is deleted once.
        unsafe { sys::TF_DeleteStatus(self.raw()) }
    }
}

pub fn code_name(code: sys::TF_Code) -> &'static str {
    use sys::TF_Code::*;
    match code {
        TF_OK => "OK",
        TF_CANCELLED => "CANCELLED",
        TF_UNKNOWN => "UNKNOWN",
        TF_INVALID_ARGUMENT => "INVALID_ARGUMENT",
        TF_DEADLINE_EXCEEDED => "DEADLINE_EXCEEDED",
        TF_NOT_FOUND => "NOT_FOUND",
        TF_ALREADY_EXISTS => "ALREADY_EXISTS",
        TF_PERMISSION_DENIED => "PERMISSION_DENIED",
        TF_UNAUTHENTICATED => "UNAUTHENTICATED",
        TF_RESOURCE_EXHAUSTED => "RESOURCE_EXHAUSTED",
        TF_FAILED_PRECONDITION => "FAILED_PRECONDITION",
        TF_ABORTED => "ABORTED",
        TF_OUT_OF_RANGE => "OUT_OF_RANGE",
        TF_UNIMPLEMENTED => "UNIMPLEMENTED",
        TF_INTERNAL => "INTERNAL",
        TF_UNAVAILABLE => "UNAVAILABLE",
        TF_DATA_LOSS => "DATA_LOSS",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_status_becomes_an_error_and_resets() {
        let status = Status::new();
        // SAFETY: the status is live; the message is a valid C string.
        unsafe { sys::TF_SetStatus(status.raw(), sys::TF_NOT_FOUND, c"no such op".as_ptr()) };
        match status.check() {
            Err(Error::Tf { code, message }) => {
                assert_eq!(code, "NOT_FOUND");
                assert_eq!(message, "no such op");
            }
            other => panic!("expected a TF error, got {other:?}"),
        }
        assert!(status.check().is_ok());
    }
}
