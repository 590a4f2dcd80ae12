//! What a prepared op becomes as a node of a graph, and building that node.

use std::collections::HashSet;
use std::ffi::CStr;

use crate::error::{Error, Result};
use crate::kernels::column_sums::{sums_dims, ColumnSums};
use crate::kernels::elementwise::{broadcasts, ElementOp, Elementwise, Program};
use crate::kernels::few_channel_conv::FewChannelConv2D;
use crate::op_plan::attrs::{AttrValue, OwnedAttr};
use crate::op_plan::properties::takes_computed_integers;
use crate::op_plan::{attrs, PreparedOp};
use crate::tf::custom_op::CpuKernel;
use crate::tf::dtype::DType;
use crate::tf::graph::{node_name, Graph, NodeOutput};
use crate::tf::status::Status;
use tensorflow_sys as sys;

/// Where a node's input, or a fetched output, comes from.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum Ref {
    /// The `n`th fed tensor.
    Feed(u32),
    /// Output `output` of node `index`.
    Node { index: u32, output: u32 },
}

/// A node to build: the op, where its flat inputs come from, and what it is built as.
pub struct NodeOp<'a> {
    pub prepared: &'a PreparedOp,
    pub inputs: Vec<Ref>,
    pub built: Built,
}

/// What node a prepared op is built as (see `fusions`).
#[derive(Clone, PartialEq, Debug)]
pub enum Built {
    /// The op as it ran.
    AsRecorded,
    /// Another op of the same inputs and attrs.
    Renamed(&'static CStr),
    /// `_FusedConv2D` of a recorded Conv2D: the convolution's inputs and attrs, then the
    /// arguments of `fused_ops` (the rest of the inputs, as one list), with `epsilon`.
    FusedConv2D {
        fused_ops: Vec<&'static str>,
        epsilon: f32,
    },
    /// The recorded convolution (which adds its bias in its pass) with a ReLU after it, as
    /// `relu_fused_attr` sets.
    WithRelu,
    /// `TfjsNodeRs>Elementwise` running a chain of element-wise ops (`kernels::elementwise`)
    /// on the inputs, the first of the outputs' `shape` (as the recording saw it).
    Elementwise { program: Program, shape: Vec<i64> },
    /// `ElementOp::Step` of the input, of `shape`: a recorded Relu of a Sign (tfjs's ReLU
    /// gradient), which `fusions` builds into an element-wise chain, or else is a chain alone.
    Step { shape: Vec<i64> },
    /// `TfjsNodeRs>ColumnSums` of a recorded Sum or Mean (`mean`) over every axis but the
    /// last of its first input (the only one it takes), of `shape` as the recording saw it.
    ColumnSums {
        mean: bool,
        keep_dims: bool,
        shape: Vec<i64>,
    },
}

impl<'a> NodeOp<'a> {
    pub fn new(prepared: &'a PreparedOp, inputs: Vec<Ref>) -> NodeOp<'a> {
        NodeOp {
            prepared,
            inputs,
            built: Built::AsRecorded,
        }
    }

    /// The TF op the node is.
    pub fn op_name(&self) -> &CStr {
        match &self.built {
            Built::AsRecorded | Built::WithRelu => &self.prepared.name,
            Built::Renamed(name) => name,
            Built::FusedConv2D { .. } => c"_FusedConv2D",
            Built::Elementwise { .. } => Elementwise::SPEC.name,
            Built::ColumnSums { .. } => ColumnSums::SPEC.name,
            Built::Step { .. } => Elementwise::SPEC.name,
        }
    }
}

/// The attr that makes `prepared`, a convolution that adds its bias in its pass, apply a ReLU
/// after it too; `None` for other ops and for one that applies its ReLU already. `_FusedConv2D` has kernels for BiasAdd then Relu
/// (oneDNN's on the CPU, cuDNN's on a GPU) as for BiasAdd alone; the package's
/// FewChannelConv2D has its `relu`.
pub fn relu_fused_attr(prepared: &PreparedOp) -> Option<OwnedAttr> {
    let given = |name: &str| attrs::given(&prepared.attrs, name);
    let name = prepared.name.as_c_str();
    if name == c"_FusedConv2D" {
        let float = matches!(given("T"), Some(AttrValue::Type(t)) if *t == sys::TF_FLOAT);
        let bias_only =
            matches!(given("fused_ops"), Some(AttrValue::StringList(ops)) if ops == &[b"BiasAdd"]);
        (float && bias_only).then(|| OwnedAttr {
            name: c"fused_ops".to_owned(),
            value: AttrValue::StringList(vec![b"BiasAdd".to_vec(), b"Relu".to_vec()]),
        })
    } else if name == FewChannelConv2D::SPEC.name {
        let relu = matches!(given("relu"), Some(AttrValue::Bool(true)));
        (!relu).then(|| OwnedAttr {
            name: c"relu".to_owned(),
            value: AttrValue::Bool(true),
        })
    } else {
        None
    }
}

/// Checks that `input`, of node `at` in a graph of `feeds` feeds, comes before the node.
pub fn check_ref(input: Ref, at: usize, feeds: usize) -> Result<()> {
    let ok = match input {
        Ref::Feed(k) => (k as usize) < feeds,
        Ref::Node { index, .. } => (index as usize) < at,
    };
    ok.then_some(())
        .ok_or_else(|| Error::Invalid(format!("{input:?} does not come before its use")))
}

/// The nodes of a graph being built from recorded steps: the feeds' nodes (`Ref::Feed`), then
/// one per step (`Ref::Node`; `None` for a step left out).
pub struct BuiltNodes {
    feeds: Vec<NodeOutput>,
    nodes: Vec<Option<NodeOutput>>,
}

impl BuiltNodes {
    /// The node output `input` refers to.
    pub fn output_of(&self, input: Ref) -> Result<NodeOutput> {
        match input {
            Ref::Feed(k) => self
                .feeds
                .get(k as usize)
                .copied()
                .ok_or_else(|| Error::Invalid(format!("feed {k} does not exist"))),
            Ref::Node { index, output } => self
                .nodes
                .get(index as usize)
                .copied()
                .flatten()
                .ok_or_else(|| Error::Invalid(format!("node {index} is not built")))?
                .at(output as usize)
                .ok_or_else(|| Error::Invalid(format!("node {index} has no output {output}"))),
        }
    }
}

/// What a graph is built for, which decides what its nodes may be.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Runs in place of recorded ops (whole calls, deferred runs): only ops whose kernels the
    /// package knows as nodes (`PreparedOp::node`), and an integer computed in the graph feeds
    /// only inputs that are data (`takes_computed_integers`): such a graph needs every shape
    /// from its feeds' shapes, and TF's shape inference reads a shape or an axis from a
    /// constant, never from a node's output.
    Replay,
    /// TF's own runtime (an export), which works shapes out as it runs: any op, fed anything.
    TensorFlow,
}

/// Adds a node per step (`None`: a step nothing needs, left out) after the `feeds`' nodes,
/// named `n{index}`; returns them with the refs the nodes take.
pub fn add_steps<'a>(
    graph: &Graph,
    feeds: Vec<NodeOutput>,
    steps: impl Iterator<Item = Option<NodeOp<'a>>>,
    target: Target,
    status: &Status,
) -> Result<(BuiltNodes, HashSet<Ref>)> {
    let mut built = BuiltNodes {
        feeds,
        nodes: Vec::new(),
    };
    let mut used = HashSet::new();
    for (index, step) in steps.enumerate() {
        let Some(step) = step else {
            built.nodes.push(None);
            continue;
        };
        if target == Target::Replay && step.prepared.node.is_none() {
            return Err(Error::Invalid(format!(
                "{} cannot be a graph node",
                step.prepared.name.to_string_lossy()
            )));
        }
        let mut inputs = Vec::with_capacity(step.inputs.len());
        for (i, &input) in step.inputs.iter().enumerate() {
            let output = built.output_of(input)?;
            used.insert(input);
            if target == Target::Replay
                && matches!(input, Ref::Node { .. })
                && output.dtype().is_some_and(DType::is_integer)
                && !takes_computed_integers(&step.prepared.name, i, step.inputs.len())
            {
                return Err(Error::Invalid(format!(
                    "{} input {i} is an integer computed in the graph",
                    step.prepared.name.to_string_lossy()
                )));
            }
            inputs.push(output);
        }
        let node = add_node(graph, &step, &node_name("n", index)?, &inputs, status)?;
        built.nodes.push(Some(node));
    }
    Ok((built, used))
}

/// Adds `step` (its prepared op, built as `step.built`) as node `node_name` on `inputs` (flat,
/// as the op runs eagerly, then any fused ops' arguments), grouped into the arguments of its
/// definition: one input each, or one list.
fn add_node(
    graph: &Graph,
    step: &NodeOp<'_>,
    node_name: &CStr,
    inputs: &[NodeOutput],
    status: &Status,
) -> Result<NodeOutput> {
    match &step.built {
        Built::Elementwise { program, shape } => {
            return add_elementwise(graph, program, shape, node_name, inputs, status);
        }
        Built::Step { shape } => {
            let step = Program::of_one(ElementOp::Step);
            return add_elementwise(graph, &step, shape, node_name, inputs, status);
        }
        Built::ColumnSums {
            mean,
            keep_dims,
            shape,
        } => {
            return add_column_sums(graph, (*mean, *keep_dims), shape, node_name, inputs, status);
        }
        _ => {}
    }
    let prepared = step.prepared;
    let label = || prepared.name.to_string_lossy();
    let args = prepared.signature.input_args();
    let flat: usize = args.iter().map(|&(length, _)| length).sum();
    // A fused convolution takes its fused ops' arguments after the convolution's own inputs.
    let fused_args = inputs.len().saturating_sub(flat);
    let fused = matches!(step.built, Built::FusedConv2D { .. });
    if inputs.len() < flat || fused != (fused_args > 0) {
        return Err(Error::Invalid(format!(
            "{} takes {flat} inputs, got {}",
            label(),
            inputs.len()
        )));
    }
    let mut node = graph.node(step.op_name(), node_name)?;
    let mut at = 0;
    for &(length, list) in args {
        let group = &inputs[at..at + length];
        if list {
            node.add_input_list(group);
        } else {
            group.iter().for_each(|&input| node.add_input(input));
        }
        at += length;
    }
    if let Built::FusedConv2D { fused_ops, epsilon } = &step.built {
        node.add_input_list(&inputs[at..]);
        // `host_args`: none (quantized convolutions' scales).
        node.add_input_list(&[]);
        node.set_int(c"num_args", fused_args as i64);
        node.set_type_list(c"TArgs", &vec![sys::TF_FLOAT; fused_args]);
        let names: Vec<&[u8]> = fused_ops.iter().map(|op| op.as_bytes()).collect();
        node.set_string_list(c"fused_ops", &names);
        node.set_float(c"epsilon", *epsilon);
    }
    // The node is finished even when an attr fails, so its description is not leaked.
    let applied = if step.built != Built::WithRelu {
        attrs::apply_to_node(&mut node, &prepared.attrs)
    } else if let Some(relu) = relu_fused_attr(prepared) {
        // TF refuses an attr set twice to different values.
        let mut with_relu: Vec<OwnedAttr> = (prepared.attrs.iter())
            .filter(|a| a.name != relu.name)
            .cloned()
            .collect();
        with_relu.push(relu);
        attrs::apply_to_node(&mut node, &with_relu)
    } else {
        Err(Error::Invalid(format!("{} cannot apply a ReLU", label())))
    };
    let finished = node.finish(status);
    applied?;
    finished
}

/// A `TfjsNodeRs>ColumnSums` node (`mean`, `keep_dims`) of the product of `inputs`, the first
/// of `shape` as the recording saw it, the others of a shape that broadcasts to it
/// (`elementwise::broadcasts`), which TF's shape inference must not contradict. The output's
/// dims are given to TF, which cannot infer them for this package's ops.
fn add_column_sums(
    graph: &Graph,
    (mean, keep_dims): (bool, bool),
    shape: &[i64],
    node_name: &CStr,
    inputs: &[NodeOutput],
    status: &Status,
) -> Result<NodeOutput> {
    let Some(dims) = sums_dims(shape, keep_dims).filter(|_| !inputs.is_empty()) else {
        return Err(Error::Invalid(format!(
            "column sums take tensors of rank 1 or more, got {shape:?}"
        )));
    };
    check_static_dims(graph, inputs, shape, status)?;
    let mut node = graph.node(ColumnSums::SPEC.name, node_name)?;
    node.add_input_list(inputs);
    node.set_int(c"N", inputs.len() as i64);
    node.set_bool(c"mean", mean);
    node.set_bool(c"keep_dims", keep_dims);
    let node = node.finish(status)?;
    graph.set_static_dims(node, &dims, status)?;
    Ok(node)
}

/// Checks the dims TF's shape inference knows of `inputs` against `shape`, the recorded one of
/// the first: that one, and one that broadcasts to it for the others.
fn check_static_dims(
    graph: &Graph,
    inputs: &[NodeOutput],
    shape: &[i64],
    status: &Status,
) -> Result<()> {
    for (k, &input) in inputs.iter().enumerate() {
        let fits = graph.static_dims(input, status)?.is_none_or(|d| {
            if k == 0 {
                d == shape
            } else {
                broadcasts(&d, shape)
            }
        });
        if !fits {
            return Err(Error::Invalid(format!(
                "input {k} of a fused node over values of shape {shape:?} has another shape"
            )));
        }
    }
    Ok(())
}

/// `program` as a `TfjsNodeRs>Elementwise` node on `inputs`, whose outputs have the first
/// input's shape, `shape` as the recording saw it (`check_static_dims`; where TF's shape
/// inference does not know an input's shape, after this package's own kernels, the kernel
/// checks the element counts).
fn add_elementwise(
    graph: &Graph,
    program: &Program,
    shape: &[i64],
    node_name: &CStr,
    inputs: &[NodeOutput],
    status: &Status,
) -> Result<NodeOutput> {
    check_static_dims(graph, inputs, shape, status)?;
    let (ops, results) = program.to_attrs();
    let mut node = graph.node(Elementwise::SPEC.name, node_name)?;
    node.add_input_list(inputs);
    node.set_int(c"N", inputs.len() as i64);
    node.set_int(c"M", results.len() as i64);
    node.set_int_list(c"program", &ops);
    node.set_int_list(c"results", &results);
    let node = node.finish(status)?;
    for k in 0..results.len() {
        let output = node
            .at(k)
            .ok_or_else(|| Error::Invalid(format!("the chain has no output {k}")))?;
        graph.set_static_dims(output, shape, status)?;
    }
    Ok(node)
}
