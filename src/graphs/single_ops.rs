//! Single ops as one-node graphs, so that an op can be an executor job (`crate::executor`):
//! an op on a tensor still being computed, or a large product or convolution, whose outputs'
//! shapes TF's shape inference knows from its inputs' shapes (and small integer inputs'
//! values). One graph per op and input signature, built on first use.

use std::collections::HashMap;
use std::sync::Arc;

use super::compiled::{CompiledGraph, Feed};
use super::nodes::{NodeOp, Ref};
use crate::op_plan::PreparedOp;
use crate::tensor_spec::TensorSpec;
use crate::tf::status::Status;

/// Graphs kept; past it the cache starts over (a program whose shapes never repeat).
const MAX_GRAPHS: usize = 1024;

/// What a graph of one op is built for: the op, and per input its spec and, for an input that
/// is a constant of the graph, its values.
#[derive(PartialEq, Eq, Hash)]
struct Key {
    plan: u32,
    inputs: Vec<(TensorSpec, Option<Vec<i64>>)>,
}

#[derive(Default)]
pub struct SingleOps {
    /// `None`: TF cannot say the op's output shapes before it runs, or cannot build it.
    graphs: HashMap<Key, Option<Arc<CompiledGraph>>>,
}

/// An input of the op: a tensor fed on each run, or one whose values the graph holds.
pub struct OpInput<'a> {
    pub spec: TensorSpec,
    /// `Some`: a constant of the graph, with these integer values.
    pub constant: Option<(&'a crate::tf::handle::TensorHandle, Vec<i64>)>,
}

impl SingleOps {
    /// The graph of prepared op `plan` on `inputs`, fetching its `outputs` outputs; `None`
    /// when its outputs' shapes are not known before it runs.
    pub fn graph(
        &mut self,
        plans: &[PreparedOp],
        plan: u32,
        inputs: &[OpInput],
        outputs: usize,
        status: &Status,
    ) -> Option<Arc<CompiledGraph>> {
        let key = Key {
            plan,
            inputs: inputs
                .iter()
                .map(|input| {
                    let values = input.constant.as_ref().map(|(_, values)| values.clone());
                    (input.spec.clone(), values)
                })
                .collect(),
        };
        if let Some(known) = self.graphs.get(&key) {
            return known.clone();
        }
        if self.graphs.len() >= MAX_GRAPHS {
            self.graphs.clear();
        }
        let graph = build(&plans[plan as usize], inputs, outputs, status).map(Arc::new);
        self.graphs.insert(key, graph.clone());
        graph
    }

    pub fn clear(&mut self) {
        self.graphs.clear();
    }
}

fn build(
    prepared: &PreparedOp,
    inputs: &[OpInput],
    outputs: usize,
    status: &Status,
) -> Option<CompiledGraph> {
    let feeds: Vec<Feed> = inputs
        .iter()
        .map(|input| match &input.constant {
            Some((handle, _)) => Feed::Constant(handle),
            None => Feed::Placeholder(input.spec.clone()),
        })
        .collect();
    let node = NodeOp::new(prepared, (0..inputs.len() as u32).map(Ref::Feed).collect());
    let fetches: Vec<Ref> = (0..outputs as u32)
        .map(|output| Ref::Node { index: 0, output })
        .collect();
    let graph = CompiledGraph::build(&feeds, std::iter::once(Some(node)), &fetches, status).ok()?;
    graph.static_outputs().is_some().then_some(graph)
}
