//! What a prepared op becomes as a node of a graph, and building that node.

use std::ffi::CStr;

use super::compiled::{Built, NodeOp};
use crate::error::{Error, Result};
use crate::kernels::column_sums::{sums_dims, ColumnSums};
use crate::kernels::elementwise::{broadcasts, ElementOp, Elementwise, Program};
use crate::ops::attrs;
use crate::tf::custom_op::CpuKernel;
use crate::tf::graph::{Graph, NodeOutput};
use crate::tf::status::Status;
use tensorflow_sys as sys;

/// Pure ops: deterministic, their output shapes fixed by their input shapes, attrs and small
/// integer inputs, and failing only on those (so `ops::deferred` may defer them).
const PURE: &[&str] = &[
    // Element-wise.
    "Abs",
    "Acos",
    "Acosh",
    "AddV2",
    "Asin",
    "Asinh",
    "Atan",
    "Atan2",
    "Atanh",
    "Cast",
    "Ceil",
    "ClipByValue",
    "Cos",
    "Cosh",
    "DivNoNan",
    "Elu",
    "EluGrad",
    "Equal",
    "Erf",
    "Exp",
    "Expm1",
    "Floor",
    "Greater",
    "GreaterEqual",
    "Identity",
    "IsFinite",
    "IsInf",
    "IsNan",
    "LeakyRelu",
    "LeakyReluGrad",
    "Less",
    "LessEqual",
    "Log",
    "Log1p",
    "LogicalAnd",
    "LogicalNot",
    "LogicalOr",
    "Maximum",
    "Minimum",
    "Mul",
    "Neg",
    "NotEqual",
    "OnesLike",
    "Pow",
    "RealDiv",
    "Reciprocal",
    "Relu",
    "Relu6",
    "Relu6Grad",
    "ReluGrad",
    "Rint",
    "Round",
    "Rsqrt",
    "RsqrtGrad",
    "Select",
    "SelectV2",
    "Selu",
    "SeluGrad",
    "Sigmoid",
    "SigmoidGrad",
    "Sign",
    "Sin",
    "Sinh",
    "Softplus",
    "SoftplusGrad",
    "Softsign",
    "Sqrt",
    "SqrtGrad",
    "Square",
    "SquaredDifference",
    "Sub",
    "Tan",
    "Tanh",
    "TanhGrad",
    "ZerosLike",
    // Products, biases, reductions, softmax.
    "BatchMatMulV2",
    "BiasAdd",
    "BiasAddGrad",
    "LogSoftmax",
    "MatMul",
    "Max",
    "Mean",
    "Min",
    "Prod",
    "Softmax",
    "SparseMatMul",
    "Sum",
    "AddN",
    // Shapes and slices.
    "BroadcastTo",
    "ConcatV2",
    "ExpandDims",
    "Fill",
    "Pack",
    "Pad",
    "PadV2",
    "Reshape",
    "Slice",
    "Split",
    "SplitV",
    "Squeeze",
    "StridedSlice",
    "Tile",
    "Transpose",
    "Unpack",
    // Convolutions and pooling.
    "AvgPool",
    "AvgPoolGrad",
    "Conv2D",
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput",
    "MaxPool",
    "MaxPoolGrad",
    // This package's own kernels (`kernels`).
    "TfjsNodeRs>SingleChannelConv2D",
    "TfjsNodeRs>SingleChannelMaxPool",
];

/// Ops that are pure too but never deferred: their outputs are integers a deferred run could
/// not key, or they fail on values (integer division by zero), which `ops::deferred` must not delay.
/// A whole call's graph fails where its eager call would, at the same call.
const PURE_IN_CALLS: &[&str] = &[
    "_FusedConv2D",
    "_FusedDepthwiseConv2dNative",
    "_FusedMatMul",
    "ArgMax",
    "ArgMin",
    "Cumprod",
    "Cumsum",
    "DepthToSpace",
    "FloorDiv",
    "FloorMod",
    "FusedBatchNormV3",
    "GatherV2",
    "L2Loss",
    "LRN",
    "LRNGrad",
    "MirrorPad",
    "Mod",
    "OneHot",
    "ResizeBilinear",
    "ResizeBilinearGrad",
    "ResizeNearestNeighbor",
    "ResizeNearestNeighborGrad",
    "ReverseV2",
    "SoftmaxCrossEntropyWithLogits",
    "SpaceToDepth",
    "SparseSoftmaxCrossEntropyWithLogits",
    "UnsortedSegmentSum",
];

/// Stateful random ops: fresh values on every run of a graph, so they may be nodes of a whole
/// call's graph (a dropout mask), but never deferred.
const RANDOM: &[&str] = &["RandomStandardNormal", "RandomUniform", "TruncatedNormal"];

/// Ops of `PURE_IN_CALLS` that fail on their inputs' values: an integer division by zero, an
/// index or a label out of range.
const FAILS_ON_VALUES: &[&str] = &[
    "FloorDiv",
    "FloorMod",
    "GatherV2",
    "Mod",
    "SparseSoftmaxCrossEntropyWithLogits",
    "UnsortedSegmentSum",
];

/// Products and convolutions, whose time grows faster than their inputs' sizes.
const COMPUTE_BOUND: &[&str] = &[
    "_FusedConv2D",
    "_FusedDepthwiseConv2dNative",
    "_FusedMatMul",
    "BatchMatMulV2",
    "Conv2D",
    "Conv2DBackpropFilter",
    "Conv2DBackpropInput",
    "DepthwiseConv2dNative",
    "DepthwiseConv2dNativeBackpropFilter",
    "DepthwiseConv2dNativeBackpropInput",
    "MatMul",
];

/// What a prepared op is as a graph node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NodeKind {
    /// May be deferred (see `PURE`).
    pub deferrable: bool,
    /// Draws random numbers (`RANDOM`); every other node kind is deterministic.
    pub random: bool,
    /// Fails on input values (`FAILS_ON_VALUES`), not only on shapes.
    pub fails_on_values: bool,
    /// A product or convolution (`COMPUTE_BOUND`): large ones take long enough to be worth
    /// running off the JS thread on their own.
    pub compute_bound: bool,
}

/// What op `name` with `attrs` is as a graph node; `None` when it runs only eagerly.
pub fn node_kind(name: &CStr, attrs: &[attrs::OwnedAttr]) -> Option<NodeKind> {
    let name = name.to_str().ok()?;
    let kind = if PURE.contains(&name) {
        NodeKind {
            deferrable: true,
            random: false,
            fails_on_values: false,
            compute_bound: COMPUTE_BOUND.contains(&name),
        }
    } else if PURE_IN_CALLS.contains(&name) || RANDOM.contains(&name) {
        NodeKind {
            deferrable: false,
            random: RANDOM.contains(&name),
            fails_on_values: FAILS_ON_VALUES.contains(&name),
            compute_bound: COMPUTE_BOUND.contains(&name),
        }
    } else {
        return None;
    };
    attrs::settable_on_node(attrs).then_some(kind)
}

/// Whether input `input` (of `count`) of op `name` may be an integer tensor computed in the same
/// graph: its values are data, selected or compared, never an output's shape. Elsewhere (a
/// shape, axes, sizes) a computed integer would make shapes depend on values, which the JS
/// that recorded the ops saw only once.
pub fn takes_computed_integers(name: &CStr, input: usize, count: usize) -> bool {
    /// Element-wise: every input is data.
    const EVERY_INPUT: &[&str] = &[
        "AddV2",
        "Cast",
        "Equal",
        "FloorDiv",
        "FloorMod",
        "Greater",
        "GreaterEqual",
        "Identity",
        "Less",
        "LessEqual",
        "Maximum",
        "Minimum",
        "Mod",
        "Mul",
        "NotEqual",
        "Pack",
        "Select",
        "SelectV2",
        "Sub",
    ];
    /// Shape and gather ops whose data is their first input.
    const FIRST_INPUT: &[&str] = &[
        "BroadcastTo",
        "ExpandDims",
        "GatherV2",
        "OneHot",
        "Pad",
        "Reshape",
        "ReverseV2",
        "Slice",
        "Squeeze",
        "StridedSlice",
        "Tile",
        "Transpose",
        "Unpack",
    ];
    /// Indices beside data.
    const INDICES: &[(&str, usize)] = &[
        ("GatherV2", 1),
        ("SparseSoftmaxCrossEntropyWithLogits", 1),
        ("UnsortedSegmentSum", 1),
    ];
    let Ok(name) = name.to_str() else {
        return false;
    };
    EVERY_INPUT.contains(&name)
        || (input == 0 && FIRST_INPUT.contains(&name))
        || INDICES.contains(&(name, input))
        // ConcatV2's values, before its axis.
        || (name == "ConcatV2" && input + 1 < count)
}

/// Adds `step` (its prepared op, built as `step.built`) as node `node_name` on `inputs` (flat,
/// as the op runs eagerly, then any fused ops' arguments), grouped into the arguments of its
/// definition: one input each, or one list.
pub fn add_node(
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
    if prepared.node.is_none() {
        return Err(Error::Invalid(format!(
            "{} cannot be a graph node",
            label()
        )));
    }
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
    let applied = attrs::apply_to_node(&mut node, &prepared.attrs);
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
