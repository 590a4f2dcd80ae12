//! What a prepared op becomes as a node of a graph, and building that node.

use std::ffi::CStr;

use crate::api::{self, PreparedOp};
use crate::error::Result;
use crate::tf::graph::{Graph, NodeOutput};
use crate::tf::status::Status;

/// How an op's flat inputs group into its arguments when it becomes a graph node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum InputLayout {
    /// One tensor per argument.
    Single,
    /// All inputs form one list argument (`Pack`, `AddN`).
    List,
    /// A list argument, then one tensor (`ConcatV2`'s values, then its axis).
    ListThenOne,
}

/// Pure ops: deterministic, their output shapes fixed by their input shapes, attrs and small
/// integer inputs, and failing only on those (so `trace` may defer them).
const PURE: &[(&str, InputLayout)] = {
    use InputLayout::*;
    &[
        // Element-wise.
        ("Abs", Single),
        ("Acos", Single),
        ("Acosh", Single),
        ("AddV2", Single),
        ("Asin", Single),
        ("Asinh", Single),
        ("Atan", Single),
        ("Atan2", Single),
        ("Atanh", Single),
        ("Cast", Single),
        ("Ceil", Single),
        ("ClipByValue", Single),
        ("Cos", Single),
        ("Cosh", Single),
        ("DivNoNan", Single),
        ("Elu", Single),
        ("EluGrad", Single),
        ("Equal", Single),
        ("Erf", Single),
        ("Exp", Single),
        ("Expm1", Single),
        ("Floor", Single),
        ("Greater", Single),
        ("GreaterEqual", Single),
        ("Identity", Single),
        ("IsFinite", Single),
        ("IsInf", Single),
        ("IsNan", Single),
        ("LeakyRelu", Single),
        ("LeakyReluGrad", Single),
        ("Less", Single),
        ("LessEqual", Single),
        ("Log", Single),
        ("Log1p", Single),
        ("LogicalAnd", Single),
        ("LogicalNot", Single),
        ("LogicalOr", Single),
        ("Maximum", Single),
        ("Minimum", Single),
        ("Mul", Single),
        ("Neg", Single),
        ("NotEqual", Single),
        ("OnesLike", Single),
        ("Pow", Single),
        ("RealDiv", Single),
        ("Reciprocal", Single),
        ("Relu", Single),
        ("Relu6", Single),
        ("Relu6Grad", Single),
        ("ReluGrad", Single),
        ("Rint", Single),
        ("Round", Single),
        ("Rsqrt", Single),
        ("RsqrtGrad", Single),
        ("Select", Single),
        ("SelectV2", Single),
        ("Selu", Single),
        ("SeluGrad", Single),
        ("Sigmoid", Single),
        ("SigmoidGrad", Single),
        ("Sign", Single),
        ("Sin", Single),
        ("Sinh", Single),
        ("Softplus", Single),
        ("SoftplusGrad", Single),
        ("Softsign", Single),
        ("Sqrt", Single),
        ("SqrtGrad", Single),
        ("Square", Single),
        ("SquaredDifference", Single),
        ("Sub", Single),
        ("Tan", Single),
        ("Tanh", Single),
        ("TanhGrad", Single),
        ("ZerosLike", Single),
        // Products, biases, reductions, softmax.
        ("BatchMatMulV2", Single),
        ("BiasAdd", Single),
        ("BiasAddGrad", Single),
        ("LogSoftmax", Single),
        ("MatMul", Single),
        ("Max", Single),
        ("Mean", Single),
        ("Min", Single),
        ("Prod", Single),
        ("Softmax", Single),
        ("SparseMatMul", Single),
        ("Sum", Single),
        ("AddN", List),
        // Shapes and slices.
        ("BroadcastTo", Single),
        ("ConcatV2", ListThenOne),
        ("ExpandDims", Single),
        ("Fill", Single),
        ("Pack", List),
        ("Pad", Single),
        ("PadV2", Single),
        ("Reshape", Single),
        ("Slice", Single),
        ("Split", Single),
        ("SplitV", Single),
        ("Squeeze", Single),
        ("StridedSlice", Single),
        ("Tile", Single),
        ("Transpose", Single),
        ("Unpack", Single),
        // Convolutions and pooling.
        ("AvgPool", Single),
        ("AvgPoolGrad", Single),
        ("Conv2D", Single),
        ("Conv2DBackpropFilter", Single),
        ("Conv2DBackpropInput", Single),
        ("DepthwiseConv2dNative", Single),
        ("DepthwiseConv2dNativeBackpropFilter", Single),
        ("DepthwiseConv2dNativeBackpropInput", Single),
        ("MaxPool", Single),
        ("MaxPoolGrad", Single),
        // This package's own kernels (`kernels`).
        ("TfjsNodeRs>SingleChannelConv2D", Single),
        ("TfjsNodeRs>SingleChannelMaxPool", Single),
    ]
};

/// Ops that are pure too but never deferred: their outputs are integers a deferred run could
/// not key, or they fail on values (integer division by zero), which `trace` must not delay.
/// A whole call's graph fails where its eager call would, at the same call.
const PURE_IN_CALLS: &[&str] = &[
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

/// How a prepared op can be a graph node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NodeKind {
    pub layout: InputLayout,
    /// May be deferred (see `PURE`).
    pub deferrable: bool,
    /// Draws random numbers (`RANDOM`); every other node kind is deterministic.
    pub random: bool,
}

/// How op `name` with `attrs` can be a graph node; `None` when it runs only eagerly.
pub fn node_kind(name: &CStr, attrs: &[api::OwnedAttr]) -> Option<NodeKind> {
    let name = name.to_str().ok()?;
    let kind = match PURE.iter().find(|(op, _)| *op == name) {
        Some(&(_, layout)) => NodeKind {
            layout,
            deferrable: true,
            random: false,
        },
        None if PURE_IN_CALLS.contains(&name) || RANDOM.contains(&name) => NodeKind {
            layout: InputLayout::Single,
            deferrable: false,
            random: RANDOM.contains(&name),
        },
        None => return None,
    };
    api::settable_on_node(attrs).then_some(kind)
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

/// Adds prepared op `prepared` as node `node_name` on `inputs` (flat, as the op runs eagerly).
pub fn add_node(
    graph: &Graph,
    prepared: &PreparedOp,
    node_name: &CStr,
    inputs: &[NodeOutput],
    status: &Status,
) -> Result<NodeOutput> {
    let layout = prepared.node.map(|kind| kind.layout).ok_or_else(|| {
        crate::error::Error::Invalid(format!(
            "{} cannot be a graph node",
            prepared.name.to_string_lossy()
        ))
    })?;
    let mut node = graph.node(&prepared.name, node_name)?;
    match layout {
        InputLayout::Single => inputs.iter().for_each(|&i| node.add_input(i)),
        InputLayout::List => node.add_input_list(inputs),
        InputLayout::ListThenOne => {
            let (list, last) = inputs.split_at(inputs.len().saturating_sub(1));
            node.add_input_list(list);
            last.iter().for_each(|&i| node.add_input(i));
        }
    }
    // The node is finished even when an attr fails, so its description is not leaked.
    let applied = api::apply_to_node(&mut node, &prepared.attrs);
    let finished = node.finish(status);
    applied?;
    finished
}
