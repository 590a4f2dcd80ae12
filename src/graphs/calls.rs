//! Whole calls as graphs. The JS layer (`js/graphs/`) records the ops a call (a model's
//! predict, a training step, a `tf.node.function`) ran eagerly, and once two calls with the
//! same inputs' signature ran the same ops on the same outside tensors, the call is compiled
//! here into one graph; later calls run it as one session call, with no per-op JS at all.

use std::collections::HashMap;

use super::compiled::{CompiledGraph, NodeOp, Ref};
use crate::api::PreparedOp;
use crate::error::{Error, Result};
use crate::tf::dtype::DType;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;

/// Call graphs alive at once; past it, compiling fails and calls stay eager.
const MAX_CALL_GRAPHS: usize = 4096;

/// An op the call ran: the prepared op and where its flat inputs came from.
pub struct RecordedOp {
    pub plan: u32,
    pub inputs: Vec<Ref>,
}

/// A compiled call: the tensors JS feeds each call (its inputs, the current values of the
/// variables it reads) come first, then those it always uses (constants, a GraphModel's
/// weights), which the graph holds.
pub struct CallGraph {
    graph: CompiledGraph,
    fixed: Vec<TensorHandle>,
}

impl CallGraph {
    /// Compiles `ops` (in the order they ran) over `fed` feeds of `fed_dtypes` and the
    /// `fixed` tensors, fetching `fetches`. Refs to feeds count the fed ones first.
    pub fn compile(
        plans: &[PreparedOp],
        ops: &[RecordedOp],
        fed_dtypes: &[DType],
        fixed: Vec<TensorHandle>,
        fetches: &[Ref],
        status: &Status,
    ) -> Result<CallGraph> {
        let mut feed_dtypes = fed_dtypes.to_vec();
        for handle in &fixed {
            feed_dtypes.push(
                handle
                    .dtype()
                    .map_err(|code| Error::Invalid(format!("dtype {code} cannot be fed")))?,
            );
        }
        let mut steps = Vec::with_capacity(ops.len());
        for (index, op) in ops.iter().enumerate() {
            let prepared = plans
                .get(op.plan as usize)
                .ok_or_else(|| Error::Invalid(format!("prepared op {} does not exist", op.plan)))?;
            for &input in &op.inputs {
                check_ref(input, index, feed_dtypes.len())?;
            }
            steps.push(Some(NodeOp {
                prepared,
                inputs: op.inputs.clone(),
            }));
        }
        for &fetch in fetches {
            check_ref(fetch, ops.len(), feed_dtypes.len())?;
        }
        let graph = CompiledGraph::build(&feed_dtypes, steps.into_iter(), fetches, status)?;
        Ok(CallGraph { graph, fixed })
    }

    /// How many tensors JS feeds per call.
    pub fn fed_count(&self) -> usize {
        self.graph.feed_count() - self.fixed.len()
    }

    /// Runs the call on the `fed` tensors; returns the fetched outputs.
    pub fn run(&self, fed: &[&TensorHandle], status: &Status) -> Result<Vec<TensorHandle>> {
        if fed.len() != self.fed_count() {
            return Err(Error::Invalid(format!(
                "the call graph takes {} tensors, got {}",
                self.fed_count(),
                fed.len()
            )));
        }
        let feeds: Vec<&TensorHandle> = fed.iter().copied().chain(&self.fixed).collect();
        self.graph.run(&feeds, status)
    }
}

/// A ref of a node at position `at` (or of a fetch, at the end) must point back.
fn check_ref(input: Ref, at: usize, feeds: usize) -> Result<()> {
    let ok = match input {
        Ref::Feed(k) => (k as usize) < feeds,
        Ref::Node { index, .. } => (index as usize) < at,
    };
    ok.then_some(())
        .ok_or_else(|| Error::Invalid(format!("{input:?} does not come before its use")))
}

/// The env's call graphs by id.
#[derive(Default)]
pub struct CallGraphs {
    graphs: HashMap<u32, CallGraph>,
    next_id: u32,
}

impl CallGraphs {
    pub fn insert(&mut self, graph: CallGraph) -> Result<u32> {
        if self.graphs.len() >= MAX_CALL_GRAPHS {
            return Err(Error::Range(format!(
                "{MAX_CALL_GRAPHS} call graphs are alive: drop some first"
            )));
        }
        self.next_id = self.next_id.wrapping_add(1);
        self.graphs.insert(self.next_id, graph);
        Ok(self.next_id)
    }

    pub fn get(&self, id: u32) -> Result<&CallGraph> {
        self.graphs
            .get(&id)
            .ok_or_else(|| Error::Invalid(format!("call graph {id} does not exist")))
    }

    pub fn remove(&mut self, id: u32) -> bool {
        self.graphs.remove(&id).is_some()
    }

    pub fn len(&self) -> usize {
        self.graphs.len()
    }

    pub fn clear(&mut self) {
        self.graphs.clear();
    }
}
