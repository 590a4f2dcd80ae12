//! `TFE_Context`: one per N-API env, so each worker thread runs its own eager runtime.

use std::ffi::CStr;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::status::Status;
use crate::error::{Error, Result};

pub struct Context(NonNull<sys::TFE_Context>);

/// A serialized `ConfigProto` with `experimental.disable_thread_spinning = true` (field 16,
/// length 2, holding field 9 = 1). TF's intra-op pool otherwise spins its idle threads, which on
/// small ops (an RNN step, a dense layer of 20 units) fight the JS thread for the cores: measured
/// here, a SimpleRNN predict (benches/models.js) took 26 ms spinning and 16 ms without. Thread counts stay
/// TF's (`TF_NUM_INTRAOP_THREADS` / `TF_NUM_INTEROP_THREADS` still apply).
const CONFIG_NO_SPINNING: [u8; 5] = [0x82, 0x01, 0x02, 0x48, 0x01];

impl Context {
    pub fn new(status: &Status) -> Result<Context> {
        // SAFETY: options are created, used once and deleted here; TF copies the config bytes and
        // TFE_NewContext copies the options.
        let raw = unsafe {
            let options = sys::TFE_NewContextOptions();
            sys::TFE_ContextOptionsSetConfig(
                options,
                CONFIG_NO_SPINNING.as_ptr().cast(),
                CONFIG_NO_SPINNING.len(),
                status.raw(),
            );
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
