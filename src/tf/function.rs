//! `TF_Function`: a graph as a TF function, which an eager op of the function's name runs as
//! one call on any device of the context, remote ones included.

use std::ffi::CStr;
use std::os::raw::c_int;
use std::ptr::NonNull;

use tensorflow_sys as sys;

use super::graph::{Graph, NodeOutput};
use super::status::Status;
use crate::error::{Error, Result};

pub struct Function(NonNull<sys::TF_Function>);

impl Function {
    /// The function of all of `graph`'s nodes taking `inputs` (placeholders, which become its
    /// arguments) and returning `outputs`, named `name`.
    pub fn from_graph(
        graph: &Graph,
        name: &CStr,
        inputs: &[NodeOutput],
        outputs: &[NodeOutput],
        status: &Status,
    ) -> Result<Function> {
        let count = |n: usize| {
            c_int::try_from(n).map_err(|_| Error::Range(format!("{n} function arguments")))
        };
        let inputs: Vec<sys::TF_Output> = inputs.iter().map(|i| i.raw()).collect();
        let outputs: Vec<sys::TF_Output> = outputs.iter().map(|o| o.raw()).collect();
        // SAFETY: the graph is live and the node outputs are its own; the arrays and the name
        // outlive the call; null opers with -1 mean every node, null names and options TF's
        // defaults. TF copies what it keeps.
        let raw = unsafe {
            sys::TF_GraphToFunction(
                graph.raw(),
                name.as_ptr(),
                0,
                -1,
                std::ptr::null(),
                count(inputs.len())?,
                inputs.as_ptr(),
                count(outputs.len())?,
                outputs.as_ptr(),
                std::ptr::null(),
                std::ptr::null(),
                std::ptr::null(),
                status.raw(),
            )
        };
        status.check()?;
        NonNull::new(raw)
            .map(Function)
            .ok_or_else(|| Error::Invalid("TF_GraphToFunction returned no function".into()))
    }

    pub(super) fn raw(&self) -> *mut sys::TF_Function {
        self.0.as_ptr()
    }
}

impl Drop for Function {
    fn drop(&mut self) {
        // SAFETY: this Function owns the TF_Function and deletes it once (a context it was
        // added to keeps its own copy of the definition).
        unsafe { sys::TF_DeleteFunction(self.0.as_ptr()) }
    }
}
