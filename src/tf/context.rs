//! `TFE_Context`: one per N-API env, so each worker thread runs its own eager runtime.

use std::ffi::CStr;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::signals::AsyncSignalsBlocked;
use super::status::Status;
use crate::error::{Error, Result};

pub struct Context(NonNull<sys::TFE_Context>);

impl Context {
    pub fn new(status: &Status) -> Result<Context> {
        // TF starts its worker threads here; they inherit this mask and so never take a signal.
        let _blocked = AsyncSignalsBlocked::new();
        // SAFETY: options are created, used once and deleted here; TFE_NewContext copies them.
        let raw = unsafe {
            let options = sys::TFE_NewContextOptions();
            let raw = sys::TFE_NewContext(options, status.raw());
            sys::TFE_DeleteContextOptions(options);
            raw
        };
        status.check()?;
        NonNull::new(raw)
            .map(Context)
            .ok_or_else(|| Error::Invalid("TFE_NewContext returned no context".into()))
    }

    pub(super) fn raw(&self) -> *mut sys::TFE_Context {
        self.0.as_ptr()
    }

    /// The device types the context can place ops on (`CPU`, `GPU`, ...).
    pub fn device_types(&self, status: &Status) -> Result<Vec<String>> {
        // SAFETY: the context is live; the list is read, then deleted once.
        unsafe {
            let list = sys::TFE_ContextListDevices(self.raw(), status.raw());
            status.check()?;
            let count = sys::TF_DeviceListCount(list);
            let mut types = Vec::with_capacity(count.max(0) as usize);
            for i in 0..count {
                let name = sys::TF_DeviceListType(list, i, status.raw());
                if status.check().is_ok() && !name.is_null() {
                    types.push(CStr::from_ptr(name).to_string_lossy().into_owned());
                }
            }
            sys::TF_DeleteDeviceList(list);
            Ok(types)
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is deleted once, after every op and handle made in it (the env state
        // drops those first).
        unsafe { sys::TFE_DeleteContext(self.raw()) }
    }
}

pub fn tf_version() -> String {
    // SAFETY: TF_Version returns a static C string.
    unsafe { CStr::from_ptr(sys::TF_Version()) }
        .to_string_lossy()
        .into_owned()
}
