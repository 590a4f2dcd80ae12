//! Ops and CPU kernels this package adds to TF (c/ops.h, c/kernels.h). TF runs them like its
//! own, eagerly and inside graphs; a kernel is a type implementing `CpuKernel`.

use std::ffi::{c_void, CStr};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use tensorflow_sys as sys;

use super::dtype::DType;
use super::extern_decls as ext;
use super::status::Status;
use super::tensor::Tensor;
use crate::error::{Error, Result};

/// An op's interface, in the spec syntax of `TF_OpDefinitionBuilderAdd*`.
pub struct OpSpec {
    pub name: &'static CStr,
    pub inputs: &'static [&'static CStr],
    pub outputs: &'static [&'static CStr],
    pub attrs: &'static [&'static CStr],
}

/// A CPU kernel: made once per node from its attrs, then computed on each call, possibly from
/// several threads at once.
pub trait CpuKernel: Sized + Sync + 'static {
    /// The op it implements; the kernel is registered under the op's name.
    const SPEC: OpSpec;
    fn new(attrs: &KernelAttrs) -> Result<Self>;
    fn compute(&self, ctx: &KernelContext) -> Result<()>;
}

/// Adds `K`'s op to TF's op registry, and `K` as its CPU kernel. Graph construction, which
/// needs a shape function, learns that the outputs' shapes are unknown; the kernel works them
/// out (deferred runs know them from the eager call).
pub fn register<K: CpuKernel>(status: &Status) -> Result<()> {
    let spec = &K::SPEC;
    // SAFETY: the op builder is created, filled with live C strings and handed to
    // TF_RegisterOpDefinition, which takes it in every case.
    unsafe {
        let builder = ext::TF_NewOpDefinitionBuilder(spec.name.as_ptr());
        for input in spec.inputs {
            ext::TF_OpDefinitionBuilderAddInput(builder, input.as_ptr());
        }
        for output in spec.outputs {
            ext::TF_OpDefinitionBuilderAddOutput(builder, output.as_ptr());
        }
        for attr in spec.attrs {
            ext::TF_OpDefinitionBuilderAddAttr(builder, attr.as_ptr());
        }
        ext::TF_OpDefinitionBuilderSetShapeInferenceFunction(builder, Some(unknown_shapes));
        ext::TF_RegisterOpDefinition(builder, status.raw());
    }
    status.check()?;
    // SAFETY: the callbacks match the C signatures; TF_RegisterKernelBuilder takes the builder.
    unsafe {
        let builder = ext::TF_NewKernelBuilder(
            spec.name.as_ptr(),
            c"CPU".as_ptr(),
            Some(create::<K>),
            Some(compute::<K>),
            Some(delete::<K>),
        );
        ext::TF_RegisterKernelBuilder(spec.name.as_ptr(), builder, status.raw());
    }
    status.check()
}

unsafe extern "C" fn unknown_shapes(
    ctx: *mut ext::TF_ShapeInferenceContext,
    status: *mut sys::TF_Status,
) {
    // SAFETY: TF passes a live context and status for the duration of the call.
    unsafe { ext::TF_ShapeInferenceContextSetUnknownShape(ctx, status) };
}

/// A C API getter of a one-value attr of a kernel's node.
type ScalarAttrGetter<T> = unsafe extern "C" fn(
    *mut ext::TF_OpKernelConstruction,
    *const std::os::raw::c_char,
    *mut T,
    *mut sys::TF_Status,
);

/// The attrs of the node a kernel is made for.
pub struct KernelAttrs {
    raw: *mut ext::TF_OpKernelConstruction,
    /// For every TF call of this construction, and its failure.
    status: Status,
}

impl KernelAttrs {
    /// An int list attr that must hold exactly `N` values.
    pub fn ints<const N: usize>(&self, name: &CStr) -> Result<[i64; N]> {
        let values = self.int_list(name)?;
        let len = values.len();
        values.try_into().map_err(|_| {
            Error::Range(format!(
                "attr {} must hold {N} values, not {len}",
                name.to_string_lossy()
            ))
        })
    }

    pub fn int(&self, name: &CStr) -> Result<i64> {
        self.scalar(name, ext::TF_OpKernelConstruction_GetAttrInt64)
    }

    pub fn bool(&self, name: &CStr) -> Result<bool> {
        Ok(self.scalar(name, ext::TF_OpKernelConstruction_GetAttrBool)? != 0)
    }

    /// A one-value attr, read by `get` (one of the C API's `TF_OpKernelConstruction_GetAttr*`).
    fn scalar<T: Default>(&self, name: &CStr, get: ScalarAttrGetter<T>) -> Result<T> {
        let mut value = T::default();
        // SAFETY: `get` is a C API getter of a T; the construction context is live during
        // `create`; the out-pointer is valid.
        unsafe { get(self.raw, name.as_ptr(), &mut value, self.status.raw()) };
        self.status.check()?;
        Ok(value)
    }

    /// An int list attr.
    pub fn int_list(&self, name: &CStr) -> Result<Vec<i64>> {
        let status = &self.status;
        let (mut len, mut total) = (0i32, 0i32);
        // SAFETY: the construction context is live during `create`; the out-pointers are valid.
        unsafe {
            ext::TF_OpKernelConstruction_GetAttrSize(
                self.raw,
                name.as_ptr(),
                &mut len,
                &mut total,
                status.raw(),
            );
        }
        status.check()?;
        let mut values = vec![0i64; usize::try_from(len).unwrap_or(0)];
        // SAFETY: as above; `values` holds `len` slots, the most TF writes.
        unsafe {
            ext::TF_OpKernelConstruction_GetAttrInt64List(
                self.raw,
                name.as_ptr(),
                values.as_mut_ptr(),
                values.len() as c_int,
                status.raw(),
            );
        }
        status.check()?;
        Ok(values)
    }
}

/// One call of a kernel: its inputs, and room for its outputs.
pub struct KernelContext {
    raw: *mut ext::TF_OpKernelContext,
    /// For every TF call of this call, and its failure.
    status: Status,
}

impl KernelContext {
    pub fn input_count(&self) -> usize {
        // SAFETY: the kernel context is live during `compute`.
        usize::try_from(unsafe { ext::TF_NumInputs(self.raw) }).unwrap_or(0)
    }

    pub fn output_count(&self) -> usize {
        // SAFETY: the kernel context is live during `compute`.
        usize::try_from(unsafe { ext::TF_NumOutputs(self.raw) }).unwrap_or(0)
    }

    pub fn input(&self, index: usize) -> Result<Tensor> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: the kernel context is live during `compute`; TF hands over one reference.
        unsafe { ext::TF_GetInput(self.raw, index as c_int, &mut raw, self.status.raw()) };
        self.status.check()?;
        Tensor::adopt(raw).ok_or_else(|| Error::Invalid(format!("input {index} is missing")))
    }

    /// Float32 output `index` of `dims` in the buffer of one of the `candidates` inputs that
    /// nothing else holds, and which of them (TF's ops reuse such buffers: large new ones cost
    /// page faults); else a new one, and `None`. A caller must not get a candidate input
    /// (`input`) before, which would hold it.
    pub fn forward_f32_output(
        &self,
        index: usize,
        dims: &[i64],
        candidates: &[usize],
    ) -> Result<(Tensor, Option<usize>)> {
        let candidates: Vec<c_int> = candidates.iter().map(|&k| k as c_int).collect();
        let mut forwarded: c_int = -1;
        // SAFETY: the kernel context is live during `compute`; the candidate and dims arrays
        // hold the lengths passed and outlive the call; `forwarded` is a valid out-pointer.
        let raw = unsafe {
            ext::TF_ForwardInputOrAllocateOutput(
                self.raw,
                candidates.as_ptr(),
                candidates.len() as c_int,
                index as c_int,
                dims.as_ptr(),
                dims.len() as c_int,
                &mut forwarded,
                self.status.raw(),
            )
        };
        self.status.check()?;
        let tensor = Tensor::adopt(raw)
            .ok_or_else(|| Error::Invalid(format!("output {index} was not made")))?;
        Ok((tensor, usize::try_from(forwarded).ok()))
    }

    /// Float32 output `index`, allocated by TF with `dims` (checked to fit `usize` bytes).
    pub fn allocate_f32_output(&self, index: usize, dims: &[i64]) -> Result<Tensor> {
        let dtype = DType::from_name("float32")
            .ok_or_else(|| Error::Invalid("float32 is not a known dtype".into()))?;
        let size = dtype
            .element_bytes()
            .ok_or_else(|| Error::Invalid(format!("{} outputs are not supported", dtype.name)))?;
        let len = dims
            .iter()
            .try_fold(size, |acc, &d| usize::try_from(d).ok()?.checked_mul(acc))
            .ok_or_else(|| Error::Range(format!("output shape {dims:?} is too large")))?;
        // SAFETY: the kernel context is live during `compute`; dims outlives the call.
        let raw = unsafe {
            ext::TF_AllocateOutput(
                self.raw,
                index as c_int,
                dtype.tf,
                dims.as_ptr(),
                dims.len() as c_int,
                len,
                self.status.raw(),
            )
        };
        self.status.check()?;
        Tensor::adopt(raw).ok_or_else(|| Error::Invalid(format!("output {index} was not made")))
    }
}

/// Writes a kernel's error into `status`, as the TF status a failed kernel reports.
fn fail(status: &Status, err: &Error) -> *mut sys::TF_Status {
    let code = match err {
        Error::Tf { .. } | Error::Napi(_) => sys::TF_INTERNAL,
        Error::Type(_) | Error::Range(_) | Error::Invalid(_) => sys::TF_INVALID_ARGUMENT,
    };
    status.set(code, err.message());
    status.raw()
}

unsafe extern "C" fn create<K: CpuKernel>(ctx: *mut ext::TF_OpKernelConstruction) -> *mut c_void {
    let attrs = KernelAttrs {
        raw: ctx,
        status: Status::new(),
    };
    let made = catch_unwind(AssertUnwindSafe(|| K::new(&attrs))).unwrap_or_else(|_| {
        Err(Error::Invalid(
            "the kernel panicked while being made".into(),
        ))
    });
    match made {
        Ok(kernel) => Box::into_raw(Box::new(kernel)).cast(),
        Err(err) => {
            // SAFETY: ctx is live during this call; TF copies the status. It then deletes the
            // kernel (null) without computing it.
            unsafe { ext::TF_OpKernelConstruction_Failure(ctx, fail(&attrs.status, &err)) };
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn compute<K: CpuKernel>(kernel: *mut c_void, ctx: *mut ext::TF_OpKernelContext) {
    // SAFETY: TF computes only kernels whose `create` succeeded, so `kernel` is a live K that
    // `delete` has not freed; computing takes it by shared reference (K: Sync).
    let kernel = unsafe { &*kernel.cast::<K>() };
    let call = KernelContext {
        raw: ctx,
        status: Status::new(),
    };
    let ran = catch_unwind(AssertUnwindSafe(|| kernel.compute(&call)))
        .unwrap_or_else(|_| Err(Error::Invalid("the kernel panicked".into())));
    if let Err(err) = ran {
        // SAFETY: ctx is live during this call; TF copies the status.
        unsafe { ext::TF_OpKernelContext_Failure(ctx, fail(&call.status, &err)) };
    }
}

unsafe extern "C" fn delete<K: CpuKernel>(kernel: *mut c_void) {
    if !kernel.is_null() {
        // SAFETY: a non-null `kernel` is the Box made in `create`, freed once, here.
        drop(unsafe { Box::from_raw(kernel.cast::<K>()) });
    }
}
