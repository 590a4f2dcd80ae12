//! C API entry points that `tensorflow-sys` does not bind, or binds with a type that cannot hold
//! every value TF returns.

use std::os::raw::{c_char, c_int};

use tensorflow_sys as sys;

#[allow(clashing_extern_declarations)]
extern "C" {
    /// Reuses an op object for a new call (c/eager/c_api_experimental.h).
    pub fn TFE_OpReset(
        op: *mut sys::TFE_Op,
        op_or_function_name: *const c_char,
        raw_device_name: *const c_char,
        status: *mut sys::TF_Status,
    );

    /// Declared with `int` instead of the `TF_DataType` enum: TF returns dtypes (float8, int4)
    /// that the Rust enum lacks, and reading those into it would be undefined behaviour.
    #[link_name = "TFE_TensorHandleDataType"]
    pub fn TFE_TensorHandleDataTypeCode(h: *mut sys::TFE_TensorHandle) -> c_int;
}
