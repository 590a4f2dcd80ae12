//! `TFE_Op`: one eager op call — its inputs, typed attribute setters, and execution.

use std::ffi::CStr;
use std::os::raw::c_void;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::context::SharedContext;
use super::extern_decls::{
    TFE_InferShapes, TFE_OpReset, TF_DeleteShapeAndTypeList, TF_NewShapeAndTypeList,
    TF_ShapeAndTypeListSetShape,
};
use super::handle::TensorHandle;
use super::status::Status;
use super::tensor::Tensor;
use crate::error::{Error, Result};

pub struct Op(NonNull<sys::TFE_Op>);

/// Output slots `execute` keeps on the stack.
const STACK_OUTPUTS: usize = 8;

/// An attribute's declared type, from the op's definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttrKind {
    pub ty: sys::TF_AttrType,
    pub is_list: bool,
}

impl Op {
    pub fn new(context: SharedContext, name: &CStr, status: &Status) -> Result<Op> {
        // SAFETY: the context is live and the name a valid C string.
        let raw = unsafe { sys::TFE_NewOp(context.raw(), name.as_ptr(), status.raw()) };
        status.check()?;
        NonNull::new(raw)
            .map(Op)
            .ok_or_else(|| Error::Invalid("TFE_NewOp returned no op".into()))
    }

    /// Clears inputs and attrs and retargets the op, so one object serves many calls.
    pub fn reset(&mut self, name: &CStr, status: &Status) -> Result<()> {
        // SAFETY: the op is live; a null device name means "no device preference".
        unsafe { TFE_OpReset(self.raw(), name.as_ptr(), std::ptr::null(), status.raw()) };
        status.check()
    }

    /// Places the op on `device` (a full or partial device name, e.g. `/job:worker/task:1`).
    pub fn set_device(&mut self, device: &CStr, status: &Status) -> Result<()> {
        // SAFETY: the op is live and the name a valid C string, which TF copies.
        unsafe { sys::TFE_OpSetDevice(self.raw(), device.as_ptr(), status.raw()) };
        status.check()
    }

    fn raw(&self) -> *mut sys::TFE_Op {
        self.0.as_ptr()
    }

    pub fn add_input(&mut self, input: &TensorHandle, status: &Status) -> Result<()> {
        // SAFETY: op and handle are live; TF takes its own reference to the handle.
        unsafe { sys::TFE_OpAddInput(self.raw(), input.raw(), status.raw()) };
        status.check()
    }

    /// The declared type of `name`, or TF's error when the op has no such attribute.
    pub fn attr_kind(&self, name: &CStr, status: &Status) -> Result<AttrKind> {
        let mut is_list = 0u8;
        // SAFETY: the op is live; is_list is a valid out-pointer.
        let ty = unsafe {
            sys::TFE_OpGetAttrType(self.raw(), name.as_ptr(), &mut is_list, status.raw())
        };
        status.check()?;
        Ok(AttrKind {
            ty,
            is_list: is_list != 0,
        })
    }

    pub fn set_string(&mut self, name: &CStr, value: &[u8]) {
        // SAFETY: TF copies the bytes during the call.
        unsafe {
            sys::TFE_OpSetAttrString(
                self.raw(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
            )
        }
    }

    pub fn set_int(&mut self, name: &CStr, value: i64) {
        // SAFETY: plain value; the op is live.
        unsafe { sys::TFE_OpSetAttrInt(self.raw(), name.as_ptr(), value) }
    }

    pub fn set_float(&mut self, name: &CStr, value: f32) {
        // SAFETY: plain value; the op is live.
        unsafe { sys::TFE_OpSetAttrFloat(self.raw(), name.as_ptr(), value) }
    }

    pub fn set_bool(&mut self, name: &CStr, value: bool) {
        // SAFETY: plain value; the op is live.
        unsafe { sys::TFE_OpSetAttrBool(self.raw(), name.as_ptr(), value as u8) }
    }

    pub fn set_type(&mut self, name: &CStr, value: sys::TF_DataType) {
        // SAFETY: value is a member of the enum (it comes from the dtype table).
        unsafe { sys::TFE_OpSetAttrType(self.raw(), name.as_ptr(), value) }
    }

    /// `dims == None` is a shape of unknown rank; `-1` dims are unknown sizes.
    pub fn set_shape(&mut self, name: &CStr, dims: Option<&[i64]>, status: &Status) -> Result<()> {
        let (ptr, rank) = dims.map_or((std::ptr::null(), -1), |d| (d.as_ptr(), d.len() as i32));
        // SAFETY: dims outlive the call; TF copies them.
        unsafe { sys::TFE_OpSetAttrShape(self.raw(), name.as_ptr(), ptr, rank, status.raw()) };
        status.check()
    }

    pub fn set_string_list(&mut self, name: &CStr, values: &[&[u8]]) {
        let (ptrs, lens) = string_list(values);
        // SAFETY: both arrays have values.len() entries and outlive the call; TF copies the bytes.
        unsafe {
            sys::TFE_OpSetAttrStringList(
                self.raw(),
                name.as_ptr(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                values.len() as i32,
            )
        }
    }

    pub fn set_int_list(&mut self, name: &CStr, values: &[i64]) {
        // SAFETY: the slice outlives the call; TF copies it.
        unsafe {
            sys::TFE_OpSetAttrIntList(
                self.raw(),
                name.as_ptr(),
                values.as_ptr(),
                values.len() as i32,
            )
        }
    }

    pub fn set_float_list(&mut self, name: &CStr, values: &[f32]) {
        // SAFETY: the slice outlives the call; TF copies it.
        unsafe {
            sys::TFE_OpSetAttrFloatList(
                self.raw(),
                name.as_ptr(),
                values.as_ptr(),
                values.len() as i32,
            )
        }
    }

    pub fn set_bool_list(&mut self, name: &CStr, values: &[bool]) {
        let bytes: Vec<u8> = values.iter().map(|&b| b as u8).collect();
        // SAFETY: the bytes outlive the call; TF copies them.
        unsafe {
            sys::TFE_OpSetAttrBoolList(
                self.raw(),
                name.as_ptr(),
                bytes.as_ptr(),
                bytes.len() as i32,
            )
        }
    }

    pub fn set_type_list(&mut self, name: &CStr, values: &[sys::TF_DataType]) {
        // SAFETY: the slice outlives the call; every value is a member of the enum.
        unsafe {
            sys::TFE_OpSetAttrTypeList(
                self.raw(),
                name.as_ptr(),
                values.as_ptr(),
                values.len() as i32,
            )
        }
    }

    /// Each entry is `None` for unknown rank, or dims with `-1` for unknown sizes.
    pub fn set_shape_list(
        &mut self,
        name: &CStr,
        shapes: &[Option<Vec<i64>>],
        status: &Status,
    ) -> Result<()> {
        let mut ptrs: Vec<*const i64> = shapes
            .iter()
            .map(|s| s.as_ref().map_or(std::ptr::null(), |d| d.as_ptr()))
            .collect();
        let ranks: Vec<i32> = shapes
            .iter()
            .map(|s| s.as_ref().map_or(-1, |d| d.len() as i32))
            .collect();
        // SAFETY: every pointer and rank describe a live slice (or null for unknown rank).
        unsafe {
            sys::TFE_OpSetAttrShapeList(
                self.raw(),
                name.as_ptr(),
                ptrs.as_mut_ptr(),
                ranks.as_ptr(),
                shapes.len() as i32,
                status.raw(),
            )
        };
        status.check()
    }

    /// Runs the op's shape function (TF's own checks of ranks and dims, which some kernels
    /// CHECK instead of failing) on the shapes of inputs, with the attrs set so far.
    pub fn check_shapes(&self, input_dims: &[Vec<i64>], status: &Status) -> Result<()> {
        self.infer_shapes(input_dims, &[], status).map(drop)
    }

    /// The op's outputs' shapes as its shape function infers them from the inputs' shapes
    /// (`input_dims`), the attrs set so far, and the values of the inputs in `constants` (one
    /// entry per input, or none at all: the shapes, axes and sizes a shape may depend on).
    /// Per output: `None` for an unknown rank, else its dims, -1 where a size is unknown.
    pub fn infer_shapes(
        &self,
        input_dims: &[Vec<i64>],
        constants: &[Option<&Tensor>],
        status: &Status,
    ) -> Result<Vec<Option<Vec<i64>>>> {
        let mut tensors: Vec<*mut sys::TF_Tensor> = constants
            .iter()
            .map(|c| c.map_or(std::ptr::null_mut(), |t| t.raw()))
            .collect();
        let tensors_ptr = if tensors.len() == input_dims.len() && !tensors.is_empty() {
            tensors.as_mut_ptr()
        } else {
            std::ptr::null_mut()
        };
        let mut inferred = Vec::new();
        // SAFETY: the list has input_dims.len() slots, each set from a live slice that TF copies;
        // `tensors_ptr` is null or has one (possibly null) live tensor per input, which TF only
        // reads; the output list TF makes is read while it lives and deleted here; the other
        // optional arguments are null.
        unsafe {
            let shapes = TF_NewShapeAndTypeList(input_dims.len() as i32);
            for (i, dims) in input_dims.iter().enumerate() {
                TF_ShapeAndTypeListSetShape(shapes, i as i32, dims.as_ptr(), dims.len() as i32);
            }
            let mut outputs = std::ptr::null_mut();
            TFE_InferShapes(
                self.raw(),
                shapes,
                tensors_ptr,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut outputs,
                std::ptr::null_mut(),
                status.raw(),
            );
            TF_DeleteShapeAndTypeList(shapes);
            if !outputs.is_null() {
                let list = &*outputs;
                for k in 0..usize::try_from(list.num_items).unwrap_or(0) {
                    let item = &*list.items.add(k);
                    inferred.push(usize::try_from(item.num_dims).ok().map(|rank| {
                        if rank == 0 {
                            Vec::new()
                        } else {
                            std::slice::from_raw_parts(item.dims, rank).to_vec()
                        }
                    }));
                }
                TF_DeleteShapeAndTypeList(outputs);
            }
        }
        status.check()?;
        Ok(inferred)
    }

    /// Runs the op. `outputs` gives room for the outputs; returns how many TF produced.
    pub fn execute(
        &mut self,
        outputs: &mut Vec<TensorHandle>,
        room: usize,
        status: &Status,
    ) -> Result<()> {
        // Most ops have a few outputs: their slots live on the stack, not in a per-call Vec.
        let mut stack = [std::ptr::null_mut::<sys::TFE_TensorHandle>(); STACK_OUTPUTS];
        let mut heap = Vec::new();
        let raw: &mut [*mut sys::TFE_TensorHandle] = if room <= STACK_OUTPUTS {
            &mut stack[..room]
        } else {
            heap.resize(room, std::ptr::null_mut());
            &mut heap
        };
        let mut count = room as i32;
        // SAFETY: raw has `count` slots; TF fills at most that many and writes back the real count.
        unsafe { sys::TFE_Execute(self.raw(), raw.as_mut_ptr(), &mut count, status.raw()) };
        if let Err(error) = status.check() {
            if let Some(context) = SharedContext::of_op(self.raw()) {
                context.clear_executor_error();
            }
            return Err(error);
        }
        outputs.extend(
            raw.iter()
                .take(count.max(0) as usize)
                .filter_map(|&handle| TensorHandle::adopt(handle)),
        );
        Ok(())
    }
}

impl Drop for Op {
    fn drop(&mut self) {
        // SAFETY: this Op owns the TFE_Op and deletes it once.
        unsafe { sys::TFE_DeleteOp(self.raw()) }
    }
}

/// The pointer and length arrays that TF's string-list attr setters take for `values`.
pub(super) fn string_list(values: &[&[u8]]) -> (Vec<*const c_void>, Vec<usize>) {
    let ptrs = values.iter().map(|v| v.as_ptr().cast()).collect();
    let lens = values.iter().map(|v| v.len()).collect();
    (ptrs, lens)
}
