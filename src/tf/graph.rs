//! `TF_Graph`: built node by node, for the runs of ops `crate::ops::deferred` executes in one session
//! call, and as the graph a SavedModel loads into.

use std::ffi::{CStr, CString};
use std::os::raw::c_int;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::dtype::DType;
use super::proto::Buffer;
use super::status::Status;
use super::tensor::Tensor;
use crate::error::{Error, Result};

#[allow(clashing_extern_declarations)]
extern "C" {
    /// Declared with `int` instead of the `TF_DataType` enum: a graph may hold dtypes (float8,
    /// int4, quantized) that the Rust enum lacks, and reading those into it would be undefined
    /// behaviour.
    #[link_name = "TF_OperationOutputType"]
    fn TF_OperationOutputTypeCode(oper_out: sys::TF_Output) -> c_int;
}

/// The dtype code TF declares for `output`, a node output of a live graph.
pub(super) fn output_type_code(output: sys::TF_Output) -> c_int {
    // SAFETY: callers pass outputs of live graphs' nodes with their index in range (made by
    // `NodeOutput` or a session's port lookup, which check it).
    unsafe { TF_OperationOutputTypeCode(output) }
}

pub struct Graph(NonNull<sys::TF_Graph>);

/// One output of a node in a `Graph`.
#[derive(Clone, Copy)]
pub struct NodeOutput {
    node: NonNull<sys::TF_Operation>,
    index: c_int,
}

impl NodeOutput {
    pub(super) fn raw(self) -> sys::TF_Output {
        sys::TF_Output {
            oper: self.node.as_ptr(),
            index: self.index,
        }
    }

    /// Output `index` of the same node, if it has that many outputs.
    pub fn at(self, index: usize) -> Option<NodeOutput> {
        // SAFETY: the node belongs to a graph that outlives its NodeOutputs (they are only made
        // by `finish` on a live graph and kept beside it).
        let outputs = unsafe { sys::TF_OperationNumOutputs(self.node.as_ptr()) };
        (index < outputs.max(0) as usize).then_some(NodeOutput {
            node: self.node,
            index: index as c_int,
        })
    }

    /// The dtype TF declares for this output (`None` for one the dtype table lacks).
    pub fn dtype(self) -> Option<DType> {
        DType::from_tf_code(output_type_code(self.raw()))
    }
}

/// A node being described: attrs and inputs are set, then `finish` adds it to the graph.
pub struct NodeBuilder<'g> {
    raw: NonNull<sys::TF_OperationDescription>,
    _graph: &'g Graph,
}

/// The name `{kind}{index}` for a node of a graph built here (unique per kind and index).
pub fn node_name(kind: &str, index: usize) -> Result<CString> {
    CString::new(format!("{kind}{index}")).map_err(|e| Error::Invalid(e.to_string()))
}

impl Graph {
    pub fn new() -> Result<Graph> {
        // SAFETY: TF_NewGraph has no preconditions.
        let raw = unsafe { sys::TF_NewGraph() };
        NonNull::new(raw)
            .map(Graph)
            .ok_or_else(|| Error::Invalid("TF_NewGraph returned no graph".into()))
    }

    /// Starts a node of type `op_type` named `name` (unique within the graph).
    pub fn node(&self, op_type: &CStr, name: &CStr) -> Result<NodeBuilder<'_>> {
        // SAFETY: graph and strings are live; TF copies the strings.
        let raw = unsafe { sys::TF_NewOperation(self.0.as_ptr(), op_type.as_ptr(), name.as_ptr()) };
        let raw = NonNull::new(raw)
            .ok_or_else(|| Error::Invalid("TF_NewOperation returned no description".into()))?;
        Ok(NodeBuilder { raw, _graph: self })
    }

    /// A `Placeholder` node named `name`, fed a tensor of `dtype` and `dims` (-1: any size).
    pub fn placeholder(
        &self,
        name: &CStr,
        dtype: DType,
        dims: &[i64],
        status: &Status,
    ) -> Result<NodeOutput> {
        let mut node = self.node(c"Placeholder", name)?;
        node.set_type(c"dtype", dtype.tf);
        node.set_shape(c"shape", Some(dims));
        node.finish(status)
    }

    /// A `Const` node named `name` holding `value`, a tensor of `dtype`.
    pub fn constant(
        &self,
        name: &CStr,
        dtype: DType,
        value: &Tensor,
        status: &Status,
    ) -> Result<NodeOutput> {
        let mut node = self.node(c"Const", name)?;
        node.set_type(c"dtype", dtype.tf);
        let set = node.set_tensor(c"value", value, status);
        // Finished even when the value failed, so the description is not leaked.
        let finished = node.finish(status);
        set?;
        finished
    }

    /// The graph as a serialized `GraphDef`.
    pub fn to_graph_def(&self, status: &Status) -> Result<Vec<u8>> {
        let buffer = Buffer::new()?;
        // SAFETY: graph and buffer are live; TF writes the serialized GraphDef into the buffer.
        unsafe { sys::TF_GraphToGraphDef(self.0.as_ptr(), buffer.0, status.raw()) };
        status.check()?;
        Ok(buffer.bytes().to_vec())
    }

    pub(super) fn raw(&self) -> *mut sys::TF_Graph {
        self.0.as_ptr()
    }
}

impl Graph {
    /// The dims TF's shape inference gives `output`; `None` unless every one is known.
    pub fn static_dims(&self, output: NodeOutput, status: &Status) -> Result<Option<Vec<i64>>> {
        // SAFETY: the graph is live and `output` is one of its nodes' outputs.
        let rank =
            unsafe { sys::TF_GraphGetTensorNumDims(self.0.as_ptr(), output.raw(), status.raw()) };
        status.check()?;
        if rank < 0 {
            return Ok(None);
        }
        let mut dims = vec![0i64; rank as usize];
        // SAFETY: as above; `dims` has room for the `rank` dims TF writes.
        unsafe {
            sys::TF_GraphGetTensorShape(
                self.0.as_ptr(),
                output.raw(),
                dims.as_mut_ptr(),
                rank,
                status.raw(),
            )
        };
        status.check()?;
        Ok(dims.iter().all(|&d| d >= 0).then_some(dims))
    }

    /// Tells TF's shape inference that `output` has `dims` (for an op whose own shape function
    /// cannot know them).
    pub fn set_static_dims(&self, output: NodeOutput, dims: &[i64], status: &Status) -> Result<()> {
        let rank = c_int::try_from(dims.len())
            .map_err(|_| Error::Range(format!("rank {} is too large", dims.len())))?;
        // SAFETY: the graph is live, `output` is one of its nodes' outputs, and `dims` holds
        // `rank` values that outlive the call.
        unsafe {
            sys::TF_GraphSetTensorShape(
                self.0.as_ptr(),
                output.raw(),
                dims.as_ptr(),
                rank,
                status.raw(),
            )
        };
        status.check()
    }
}

impl Drop for Graph {
    fn drop(&mut self) {
        // SAFETY: this Graph owns the graph and deletes it once, after the session that runs it.
        unsafe { sys::TF_DeleteGraph(self.0.as_ptr()) }
    }
}

impl NodeBuilder<'_> {
    fn raw(&self) -> *mut sys::TF_OperationDescription {
        self.raw.as_ptr()
    }

    pub fn add_input(&mut self, input: NodeOutput) {
        // SAFETY: the description and the input's node belong to the same live graph.
        unsafe { sys::TF_AddInput(self.raw(), input.raw()) }
    }

    /// Makes the node run after `input`'s node (and be dead where that node is).
    pub fn add_control_input(&mut self, input: NodeOutput) {
        // SAFETY: the description and the input's node belong to the same live graph.
        unsafe { sys::TF_AddControlInput(self.raw(), input.node.as_ptr()) }
    }

    /// Adds `inputs` as one list argument (`Pack`'s values, `ConcatV2`'s values).
    pub fn add_input_list(&mut self, inputs: &[NodeOutput]) {
        let raw: Vec<sys::TF_Output> = inputs.iter().map(|o| o.raw()).collect();
        // SAFETY: the array has raw.len() entries of nodes in the same live graph; TF copies it.
        unsafe { sys::TF_AddInputList(self.raw(), raw.as_ptr(), raw.len() as c_int) }
    }

    pub fn set_string(&mut self, name: &CStr, value: &[u8]) {
        // SAFETY: TF copies the bytes during the call.
        unsafe {
            sys::TF_SetAttrString(
                self.raw(),
                name.as_ptr(),
                value.as_ptr().cast(),
                value.len(),
            )
        }
    }

    pub fn set_string_list(&mut self, name: &CStr, values: &[&[u8]]) {
        let (ptrs, lens) = super::op::string_list(values);
        // SAFETY: both arrays have values.len() entries and outlive the call; TF copies the bytes.
        unsafe {
            sys::TF_SetAttrStringList(
                self.raw(),
                name.as_ptr(),
                ptrs.as_ptr(),
                lens.as_ptr(),
                values.len() as c_int,
            )
        }
    }

    pub fn set_int(&mut self, name: &CStr, value: i64) {
        // SAFETY: plain value; the description is live.
        unsafe { sys::TF_SetAttrInt(self.raw(), name.as_ptr(), value) }
    }

    pub fn set_float(&mut self, name: &CStr, value: f32) {
        // SAFETY: plain value; the description is live.
        unsafe { sys::TF_SetAttrFloat(self.raw(), name.as_ptr(), value) }
    }

    pub fn set_bool(&mut self, name: &CStr, value: bool) {
        // SAFETY: plain value; the description is live.
        unsafe { sys::TF_SetAttrBool(self.raw(), name.as_ptr(), value as u8) }
    }

    pub fn set_type(&mut self, name: &CStr, value: sys::TF_DataType) {
        // SAFETY: value is a member of the enum (it comes from the dtype table or an op's attrs).
        unsafe { sys::TF_SetAttrType(self.raw(), name.as_ptr(), value) }
    }

    /// A tensor attr (a Const's value); TF copies the values.
    pub fn set_tensor(&mut self, name: &CStr, value: &Tensor, status: &Status) -> Result<()> {
        // SAFETY: the description and tensor are live; TF copies the tensor into the attr.
        unsafe { sys::TF_SetAttrTensor(self.raw(), name.as_ptr(), value.raw(), status.raw()) };
        status.check()
    }

    /// A shape attr: of known rank (a dim of -1 is unknown), or `None` for an unknown rank.
    pub fn set_shape(&mut self, name: &CStr, dims: Option<&[i64]>) {
        let (ptr, rank) = dims.map_or((std::ptr::null(), -1), |d| (d.as_ptr(), d.len() as c_int));
        // SAFETY: the description is live; TF copies the `rank` dims (none for rank -1).
        unsafe { sys::TF_SetAttrShape(self.raw(), name.as_ptr(), ptr, rank) }
    }

    pub fn set_int_list(&mut self, name: &CStr, values: &[i64]) {
        // SAFETY: the slice outlives the call; TF copies it.
        unsafe {
            sys::TF_SetAttrIntList(
                self.raw(),
                name.as_ptr(),
                values.as_ptr(),
                values.len() as c_int,
            )
        }
    }

    pub fn set_type_list(&mut self, name: &CStr, values: &[sys::TF_DataType]) {
        // SAFETY: the slice outlives the call; every value is a member of the enum.
        unsafe {
            sys::TF_SetAttrTypeList(
                self.raw(),
                name.as_ptr(),
                values.as_ptr(),
                values.len() as c_int,
            )
        }
    }

    /// Adds the node to the graph (TF checks its attrs and infers its shapes here).
    pub fn finish(self, status: &Status) -> Result<NodeOutput> {
        // SAFETY: the description is consumed exactly once, here, whatever the outcome.
        let node = unsafe { sys::TF_FinishOperation(self.raw(), status.raw()) };
        status.check()?;
        NonNull::new(node)
            .map(|node| NodeOutput { node, index: 0 })
            .ok_or_else(|| Error::Invalid("TF_FinishOperation returned no node".into()))
    }
}
