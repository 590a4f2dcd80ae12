//! C API entry points that `tensorflow-sys` does not bind, or binds with a type that cannot hold
//! every value TF returns.

use std::ffi::c_void;
use std::os::raw::{c_char, c_int, c_uchar};

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

    /// Runs op's shape function on `input_shapes` (c/c_api_experimental.h); the op's attrs are
    /// used, its inputs are not.
    pub fn TFE_InferShapes(
        op: *mut sys::TFE_Op,
        input_shapes: *mut TF_ShapeAndTypeList,
        input_tensors: *mut *mut sys::TF_Tensor,
        input_tensor_as_shapes: *mut TF_ShapeAndTypeList,
        input_resource_shapes_and_types: *mut *mut TF_ShapeAndTypeList,
        output_shapes: *mut *mut TF_ShapeAndTypeList,
        output_resource_shapes_and_types: *mut *mut *mut TF_ShapeAndTypeList,
        status: *mut sys::TF_Status,
    );
    pub fn TF_NewShapeAndTypeList(num_shapes: c_int) -> *mut TF_ShapeAndTypeList;
    pub fn TF_ShapeAndTypeListSetShape(
        list: *mut TF_ShapeAndTypeList,
        index: c_int,
        dims: *const i64,
        num_dims: c_int,
    );
    pub fn TF_DeleteShapeAndTypeList(list: *mut TF_ShapeAndTypeList);

    /// Makes a context a client of a cluster, waiting at most `init_timeout_in_ms` for its tasks
    /// (c/eager/c_api_experimental.h).
    pub fn TFE_ContextSetServerDefWithTimeout(
        ctx: *mut sys::TFE_Context,
        keep_alive_secs: c_int,
        proto: *const c_void,
        proto_len: usize,
        init_timeout_in_ms: i64,
        status: *mut sys::TF_Status,
        clear_existing_contexts: bool,
    );

    /// Starts a context's own server for collective ops (c/c_api_experimental.h).
    pub fn TFE_EnableCollectiveOps(
        ctx: *mut sys::TFE_Context,
        proto: *const c_void,
        proto_len: usize,
        status: *mut sys::TF_Status,
    );

    /// The calling thread's eager executor, in a wrapper the caller deletes (the executor itself
    /// stays the context's) (c/eager/c_api_experimental.h).
    pub fn TFE_ContextGetExecutorForThread(ctx: *mut sys::TFE_Context) -> *mut TFE_Executor;
    pub fn TFE_ExecutorWaitForAllPendingNodes(
        executor: *mut TFE_Executor,
        status: *mut sys::TF_Status,
    );
    pub fn TFE_ExecutorClearError(executor: *mut TFE_Executor);
    pub fn TFE_DeleteExecutor(executor: *mut TFE_Executor);

    /// Declared with `int` instead of the `TF_DataType` enum: TF returns dtypes (float8, int4)
    /// that the Rust enum lacks, and reading those into it would be undefined behaviour.
    #[link_name = "TFE_TensorHandleDataType"]
    pub fn TFE_TensorHandleDataTypeCode(h: *mut sys::TFE_TensorHandle) -> c_int;
}

/// Declares types that C only hands out by pointer.
macro_rules! opaque {
    ($($name:ident),*) => {
        $(
            #[repr(C)]
            pub struct $name {
                _private: [u8; 0],
            }
        )*
    };
}

/// One shape of a `TF_ShapeAndTypeList` (c/c_api_experimental.h): `num_dims` -1 for an unknown
/// rank, a dim -1 for an unknown size.
#[repr(C)]
pub struct TF_ShapeAndType {
    pub num_dims: c_int,
    pub dims: *mut i64,
    pub dtype: sys::TF_DataType,
}

/// Shape lists for `TFE_InferShapes`, made and freed by TF's functions above.
#[repr(C)]
pub struct TF_ShapeAndTypeList {
    pub num_items: c_int,
    pub items: *mut TF_ShapeAndType,
}

// An eager executor, for `TFE_ExecutorClearError`.
opaque!(TFE_Executor);

// Custom ops and CPU kernels (c/ops.h, c/kernels.h), which `tensorflow-sys` does not bind.
opaque!(
    TF_OpDefinitionBuilder,
    TF_KernelBuilder,
    TF_OpKernelConstruction,
    TF_OpKernelContext,
    TF_ShapeInferenceContext
);

extern "C" {
    pub fn TF_NewOpDefinitionBuilder(op_name: *const c_char) -> *mut TF_OpDefinitionBuilder;
    pub fn TF_OpDefinitionBuilderAddInput(b: *mut TF_OpDefinitionBuilder, spec: *const c_char);
    pub fn TF_OpDefinitionBuilderAddOutput(b: *mut TF_OpDefinitionBuilder, spec: *const c_char);
    pub fn TF_OpDefinitionBuilderAddAttr(b: *mut TF_OpDefinitionBuilder, spec: *const c_char);
    pub fn TF_RegisterOpDefinition(b: *mut TF_OpDefinitionBuilder, status: *mut sys::TF_Status);
    pub fn TF_OpDefinitionBuilderSetShapeInferenceFunction(
        b: *mut TF_OpDefinitionBuilder,
        func: Option<unsafe extern "C" fn(*mut TF_ShapeInferenceContext, *mut sys::TF_Status)>,
    );
    pub fn TF_ShapeInferenceContextSetUnknownShape(
        ctx: *mut TF_ShapeInferenceContext,
        status: *mut sys::TF_Status,
    );

    pub fn TF_NewKernelBuilder(
        op_name: *const c_char,
        device_name: *const c_char,
        create_func: Option<unsafe extern "C" fn(*mut TF_OpKernelConstruction) -> *mut c_void>,
        compute_func: Option<unsafe extern "C" fn(*mut c_void, *mut TF_OpKernelContext)>,
        delete_func: Option<unsafe extern "C" fn(*mut c_void)>,
    ) -> *mut TF_KernelBuilder;
    pub fn TF_RegisterKernelBuilder(
        kernel_name: *const c_char,
        builder: *mut TF_KernelBuilder,
        status: *mut sys::TF_Status,
    );

    pub fn TF_OpKernelConstruction_GetAttrSize(
        ctx: *mut TF_OpKernelConstruction,
        attr_name: *const c_char,
        list_size: *mut i32,
        total_size: *mut i32,
        status: *mut sys::TF_Status,
    );
    pub fn TF_OpKernelConstruction_GetAttrInt64List(
        ctx: *mut TF_OpKernelConstruction,
        attr_name: *const c_char,
        vals: *mut i64,
        max_vals: c_int,
        status: *mut sys::TF_Status,
    );
    pub fn TF_OpKernelConstruction_GetAttrBool(
        ctx: *mut TF_OpKernelConstruction,
        attr_name: *const c_char,
        val: *mut c_uchar,
        status: *mut sys::TF_Status,
    );
    pub fn TF_OpKernelConstruction_GetAttrInt64(
        ctx: *mut TF_OpKernelConstruction,
        attr_name: *const c_char,
        val: *mut i64,
        status: *mut sys::TF_Status,
    );
    pub fn TF_OpKernelConstruction_Failure(
        ctx: *mut TF_OpKernelConstruction,
        status: *mut sys::TF_Status,
    );

    pub fn TF_GetInput(
        ctx: *mut TF_OpKernelContext,
        i: c_int,
        tensor: *mut *mut sys::TF_Tensor,
        status: *mut sys::TF_Status,
    );
    pub fn TF_AllocateOutput(
        ctx: *mut TF_OpKernelContext,
        index: c_int,
        dtype: sys::TF_DataType,
        dims: *const i64,
        num_dims: c_int,
        len: usize,
        status: *mut sys::TF_Status,
    ) -> *mut sys::TF_Tensor;
    pub fn TF_OpKernelContext_Failure(ctx: *mut TF_OpKernelContext, status: *mut sys::TF_Status);
    pub fn TF_NumInputs(ctx: *mut TF_OpKernelContext) -> c_int;
    pub fn TF_ForwardInputOrAllocateOutput(
        ctx: *mut TF_OpKernelContext,
        candidate_input_indices: *const c_int,
        num_candidate_input_indices: c_int,
        output_index: c_int,
        output_dims: *const i64,
        output_num_dims: c_int,
        forwarded_input: *mut c_int,
        status: *mut sys::TF_Status,
    ) -> *mut sys::TF_Tensor;
    pub fn TF_NumOutputs(ctx: *mut TF_OpKernelContext) -> c_int;
}
