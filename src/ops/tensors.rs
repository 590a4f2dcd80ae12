//! The env's tensors as the binding's calls see them: added from JS data, read, reshaped,
//! deleted, and the outputs of calls registered with their ids.

use super::io;
use super::runtime::Runtime;
use crate::error::{Error, Result};
use crate::js::{Js, Value};
use crate::op_plan::PreparedOp;
use crate::sharing::Sharing;
use crate::tensor_spec::element_count;
use crate::tf::dtype::{ArrayKind, DType, Layout};
use crate::tf::handle::TensorHandle;
use crate::tf::tensor::Tensor;

/// An output registered as a tensor: its id, `DTYPES` index (`None`: one JS cannot name) and
/// dims.
pub struct OutputInfo {
    pub id: u64,
    pub dtype: Option<usize>,
    pub dims: Vec<i64>,
}

impl Runtime {
    /// Registers `tensor` (of `bytes` bytes of element data) under a new id.
    pub fn add_tensor(&mut self, tensor: &Tensor, bytes: u64) -> Result<u64> {
        let handle = TensorHandle::from_tensor(tensor, &self.status)?;
        Ok(self.tensors.insert(handle, bytes))
    }

    /// Tensor `id`'s dtype, computing it first if it is not yet; an error for a dtype JS has
    /// no representation of.
    pub fn readable_dtype(&mut self, plans: &[PreparedOp], id: u64) -> Result<DType> {
        self.settle(plans, id)?;
        readable_dtype(self.tensors.handle(id)?)
    }

    /// Tensor `id`, computed first if it is not yet.
    pub fn resolve(&mut self, plans: &[PreparedOp], id: u64) -> Result<Tensor> {
        self.settle(plans, id)?;
        let resolved = self.tensors.handle(id)?.resolve(&self.status);
        self.context.shared().cleared_on_error(resolved)
    }

    /// A new handle on tensor `id`, computed first if it is not yet.
    pub fn share(&mut self, plans: &[PreparedOp], id: u64) -> Result<TensorHandle> {
        self.settle(plans, id)?;
        self.tensors.handle(id)?.share(&self.status)
    }

    /// Tensor `id`'s values, a view of TF's memory where `sharing` allows (see
    /// `Sharing::read_typed_array`); `id` must be computed.
    pub fn read_typed_array(
        &mut self,
        sharing: &mut Sharing,
        js: Js,
        id: u64,
        kind: ArrayKind,
        aliased: bool,
    ) -> Result<Value> {
        let read = sharing.read_typed_array(js, &mut self.tensors, &self.status, id, kind, aliased);
        self.context.shared().cleared_on_error(read)
    }

    /// A new id for tensor `id`'s numeric data in the shape `dims`, sharing its buffer.
    pub fn reshape(&mut self, plans: &[PreparedOp], id: u64, dims: &[i64]) -> Result<u64> {
        self.settle(plans, id)?;
        let entry = self.tensors.get(id)?;
        let handle = entry.handle()?;
        let dtype = readable_dtype(handle)?;
        if !matches!(dtype.layout, Layout::Numeric { .. }) {
            return Err(Error::Type(format!(
                "reshapeTensor: {} tensors are reshaped by the Reshape op",
                dtype.name
            )));
        }
        let mut old_dims = Vec::new();
        handle.dims_into(&mut old_dims, &self.status)?;
        let (count, new_count) = (element_count(&old_dims), element_count(dims));
        if new_count != count {
            return Err(Error::Range(format!(
                "shape {dims:?} has {} elements, the tensor {}",
                new_count.unwrap_or(u64::MAX),
                count.unwrap_or(u64::MAX)
            )));
        }
        let bytes = entry.bytes;
        let tensor = handle
            .resolve(&self.status)?
            .reshaped(dtype, dims, &self.status)?;
        // Both ids count the shared buffer, as two tensors sharing one buffer do anywhere else.
        self.add_tensor(&tensor, bytes)
    }

    pub fn delete_tensor(&mut self, id: u64) -> Result<()> {
        self.tensors.remove(id).map(drop)
    }

    /// Removes tensor `id` (computed first), handing its tensor to the caller.
    pub fn take_tensor(&mut self, plans: &[PreparedOp], id: u64) -> Result<Tensor> {
        let tensor = self.resolve(plans, id)?;
        self.tensors.remove(id)?;
        Ok(tensor)
    }

    /// Registers each of `outputs` under a new id.
    pub fn adopt_outputs(&mut self, outputs: Vec<TensorHandle>) -> Result<Vec<OutputInfo>> {
        let mut infos = Vec::with_capacity(outputs.len());
        for handle in outputs {
            let mut dims = Vec::new();
            handle.dims_into(&mut dims, &self.status)?;
            let (id, dtype) = io::adopt_output(&mut self.tensors, handle, &dims);
            infos.push(OutputInfo { id, dtype, dims });
        }
        Ok(infos)
    }

    /// Ids for `count` tensors a call running ahead of TF will compute: the first of
    /// `count` consecutive ids (see `TensorTable::reserve`).
    pub fn reserve_tensors(&mut self, count: u64) -> u64 {
        self.tensors.reserve(count)
    }

    /// Fills each reserved id with the tensor of its source id, for `reserved, source` pairs
    /// in `pairs`; each source id is gone afterwards.
    pub fn fill_tensors(&mut self, pairs: &[u64]) -> Result<()> {
        for pair in pairs.chunks_exact(2) {
            self.tensors.fill_from(pair[0], pair[1])?;
        }
        Ok(())
    }

    /// The device that ran the op producing tensor `id` (`backing`: the one holding its memory).
    pub fn tensor_device(
        &mut self,
        plans: &[PreparedOp],
        id: u64,
        backing: bool,
    ) -> Result<String> {
        self.settle(plans, id)?;
        let device = self.tensors.handle(id)?.device_name(backing, &self.status);
        self.context.shared().cleared_on_error(device)
    }
}

/// A handle's dtype, or an error for a TF dtype JS has no representation of.
fn readable_dtype(handle: &TensorHandle) -> Result<DType> {
    handle.dtype().map_err(|code| {
        Error::Type(format!(
            "the tensor's TF dtype {code} has no JS representation"
        ))
    })
}
