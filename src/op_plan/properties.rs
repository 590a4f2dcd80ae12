//! What the graph machinery may do with each op: one table of op properties, by TF op name.
//! An op not in it runs only eagerly.

use std::ffi::CStr;

use super::attrs::{self, OwnedAttr};

/// How an op may be a graph node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    /// Pure: deterministic, its output shapes fixed by its input shapes, attrs and small integer
    /// inputs, and failing only on those, so `ops::deferred` may defer it.
    Deferrable,
    /// Pure too, but never deferred: its outputs are integers a deferred run could not key, or it
    /// fails on values (integer division by zero), which a deferred run must not delay. A whole
    /// call's graph fails where its eager call would, at the same call.
    InCalls,
    /// Stateful random: fresh values on every run of a graph, so it may be a node of a whole
    /// call's graph (a dropout mask), but is never deferred.
    Random,
}

/// Which inputs of an op may be integer tensors computed in the same graph: those whose values
/// are data, selected or compared, never an output's shape. Elsewhere (a shape, axes, sizes) a
/// computed integer would make shapes depend on values, which the JS that recorded the ops saw
/// only once.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum DataInputs {
    /// None: each input is a shape, axes or sizes.
    NoData,
    /// Element-wise: every input.
    Every,
    /// Shape and gather ops whose data is their first input.
    First,
    /// Data, then indices (GatherV2).
    FirstTwo,
    /// Indices beside data (labels, segment ids).
    Second,
    /// ConcatV2's values, before its axis.
    AllButLast,
}

#[derive(Clone, Copy, Debug)]
struct OpProperties {
    name: &'static str,
    class: Class,
    /// A product or convolution, whose time grows faster than its inputs' sizes.
    compute_bound: bool,
    /// Fails on its inputs' values (an integer division by zero, an index or a label out of
    /// range), not only on their shapes.
    fails_on_values: bool,
    /// Some TF builds register a CPU kernel for it that only a graph rewrite may run, which
    /// gives an empty tensor when run eagerly: js/kernels/families/conv.js checks the shape of
    /// its first eager run's output, so that run must not be a job (`crate::ops::pipeline`).
    probed_eagerly: bool,
    data_inputs: DataInputs,
}

const fn op(name: &'static str, class: Class) -> OpProperties {
    OpProperties {
        name,
        class,
        compute_bound: false,
        fails_on_values: false,
        probed_eagerly: false,
        data_inputs: NoData,
    }
}

impl OpProperties {
    const fn compute_bound(mut self) -> Self {
        self.compute_bound = true;
        self
    }

    const fn fails_on_values(mut self) -> Self {
        self.fails_on_values = true;
        self
    }

    const fn probed_eagerly(mut self) -> Self {
        self.probed_eagerly = true;
        self
    }

    const fn data_inputs(mut self, data_inputs: DataInputs) -> Self {
        self.data_inputs = data_inputs;
        self
    }
}

use Class::*;
use DataInputs::*;

/// Every op that can be a graph node. `TfjsNodeRs>...` are this package's own kernels
/// (`crate::kernels`).
const OPS: &[OpProperties] = &[
    op("Abs", Deferrable),
    op("Acos", Deferrable),
    op("Acosh", Deferrable),
    op("AddN", Deferrable),
    op("AddV2", Deferrable).data_inputs(Every),
    op("ArgMax", InCalls),
    op("ArgMin", InCalls),
    op("Asin", Deferrable),
    op("Asinh", Deferrable),
    op("Atan", Deferrable),
    op("Atan2", Deferrable),
    op("Atanh", Deferrable),
    op("AvgPool", Deferrable),
    op("AvgPoolGrad", Deferrable),
    op("BatchMatMulV2", Deferrable).compute_bound(),
    op("BiasAdd", Deferrable),
    op("BiasAddGrad", Deferrable),
    op("BroadcastTo", Deferrable).data_inputs(First),
    op("Cast", Deferrable).data_inputs(Every),
    op("Ceil", Deferrable),
    op("ClipByValue", Deferrable),
    op("ConcatV2", Deferrable).data_inputs(AllButLast),
    op("Conv2D", Deferrable).compute_bound(),
    op("Conv2DBackpropFilter", Deferrable).compute_bound(),
    op("Conv2DBackpropInput", Deferrable).compute_bound(),
    op("Cos", Deferrable),
    op("Cosh", Deferrable),
    op("Cumprod", InCalls),
    op("Cumsum", InCalls),
    op("DepthToSpace", InCalls),
    op("DepthwiseConv2dNative", Deferrable).compute_bound(),
    op("DepthwiseConv2dNativeBackpropFilter", Deferrable).compute_bound(),
    op("DepthwiseConv2dNativeBackpropInput", Deferrable).compute_bound(),
    op("DivNoNan", Deferrable),
    op("Elu", Deferrable),
    op("EluGrad", Deferrable),
    op("Equal", Deferrable).data_inputs(Every),
    op("Erf", Deferrable),
    op("Exp", Deferrable),
    op("ExpandDims", Deferrable).data_inputs(First),
    op("Expm1", Deferrable),
    op("Fill", Deferrable),
    op("Floor", Deferrable),
    op("FloorDiv", InCalls).fails_on_values().data_inputs(Every),
    op("FloorMod", InCalls).fails_on_values().data_inputs(Every),
    op("FusedBatchNormV3", InCalls),
    op("_FusedConv2D", InCalls).compute_bound(),
    op("_FusedDepthwiseConv2dNative", InCalls)
        .compute_bound()
        .probed_eagerly(),
    op("_FusedMatMul", InCalls).compute_bound(),
    op("GatherV2", InCalls)
        .fails_on_values()
        .data_inputs(FirstTwo),
    op("Greater", Deferrable).data_inputs(Every),
    op("GreaterEqual", Deferrable).data_inputs(Every),
    op("Identity", Deferrable).data_inputs(Every),
    op("IsFinite", Deferrable),
    op("IsInf", Deferrable),
    op("IsNan", Deferrable),
    op("L2Loss", InCalls),
    op("LeakyRelu", Deferrable),
    op("LeakyReluGrad", Deferrable),
    op("Less", Deferrable).data_inputs(Every),
    op("LessEqual", Deferrable).data_inputs(Every),
    op("Log", Deferrable),
    op("Log1p", Deferrable),
    op("LogicalAnd", Deferrable),
    op("LogicalNot", Deferrable),
    op("LogicalOr", Deferrable),
    op("LogSoftmax", Deferrable),
    op("LRN", InCalls),
    op("LRNGrad", InCalls),
    op("MatMul", Deferrable).compute_bound(),
    op("Max", Deferrable),
    op("Maximum", Deferrable).data_inputs(Every),
    op("MaxPool", Deferrable),
    op("MaxPoolGrad", Deferrable),
    op("Mean", Deferrable),
    op("Min", Deferrable),
    op("Minimum", Deferrable).data_inputs(Every),
    op("MirrorPad", InCalls),
    op("Mod", InCalls).fails_on_values().data_inputs(Every),
    op("Mul", Deferrable).data_inputs(Every),
    op("Neg", Deferrable),
    op("NotEqual", Deferrable).data_inputs(Every),
    op("OneHot", InCalls).data_inputs(First),
    op("OnesLike", Deferrable),
    op("Pack", Deferrable).data_inputs(Every),
    op("Pad", Deferrable).data_inputs(First),
    op("PadV2", Deferrable),
    op("Pow", Deferrable),
    op("Prod", Deferrable),
    op("RandomStandardNormal", Random),
    op("RandomUniform", Random),
    op("RealDiv", Deferrable),
    op("Reciprocal", Deferrable),
    op("Relu", Deferrable),
    op("Relu6", Deferrable),
    op("Relu6Grad", Deferrable),
    op("ReluGrad", Deferrable),
    op("Reshape", Deferrable).data_inputs(First),
    op("ResizeBilinear", InCalls),
    op("ResizeBilinearGrad", InCalls),
    op("ResizeNearestNeighbor", InCalls),
    op("ResizeNearestNeighborGrad", InCalls),
    op("ReverseV2", InCalls).data_inputs(First),
    op("Rint", Deferrable),
    op("Round", Deferrable),
    op("Rsqrt", Deferrable),
    op("RsqrtGrad", Deferrable),
    op("Select", Deferrable).data_inputs(Every),
    op("SelectV2", Deferrable).data_inputs(Every),
    op("Selu", Deferrable),
    op("SeluGrad", Deferrable),
    // Only in exported graphs (saved_model_export.js: a shape tfjs-converter read in JS).
    op("Shape", InCalls).data_inputs(Every),
    op("Sigmoid", Deferrable),
    op("SigmoidGrad", Deferrable),
    op("Sign", Deferrable),
    op("Sin", Deferrable),
    op("Sinh", Deferrable),
    op("Slice", Deferrable).data_inputs(First),
    op("Softmax", Deferrable),
    op("SoftmaxCrossEntropyWithLogits", InCalls),
    op("Softplus", Deferrable),
    op("SoftplusGrad", Deferrable),
    op("Softsign", Deferrable),
    op("SpaceToDepth", InCalls),
    op("SparseMatMul", Deferrable),
    op("SparseSoftmaxCrossEntropyWithLogits", InCalls)
        .fails_on_values()
        .data_inputs(Second),
    op("Split", Deferrable),
    op("SplitV", Deferrable),
    op("Sqrt", Deferrable),
    op("SqrtGrad", Deferrable),
    op("Square", Deferrable),
    op("SquaredDifference", Deferrable),
    op("Squeeze", Deferrable).data_inputs(First),
    op("StridedSlice", Deferrable).data_inputs(First),
    op("Sub", Deferrable).data_inputs(Every),
    op("Sum", Deferrable),
    op("Tan", Deferrable),
    op("Tanh", Deferrable),
    op("TanhGrad", Deferrable),
    op("TfjsNodeRs>FewChannelConv2D", Deferrable),
    op("TfjsNodeRs>SingleChannelMaxPool", Deferrable),
    op("Tile", Deferrable).data_inputs(First),
    op("Transpose", Deferrable).data_inputs(First),
    op("TruncatedNormal", Random),
    op("Unpack", Deferrable).data_inputs(First),
    op("UnsortedSegmentSum", InCalls)
        .fails_on_values()
        .data_inputs(Second),
    op("ZerosLike", Deferrable),
];

fn properties(name: &CStr) -> Option<&'static OpProperties> {
    let name = name.to_str().ok()?;
    OPS.iter().find(|op| op.name == name)
}

/// What a prepared op is as a graph node.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct NodeKind {
    /// May be deferred (`Class::Deferrable`).
    pub deferrable: bool,
    /// Draws random numbers; every other node kind is deterministic.
    pub random: bool,
    /// Fails on input values, not only on shapes.
    pub fails_on_values: bool,
    /// A product or convolution: large ones take long enough to be worth running off the JS
    /// thread on their own.
    pub compute_bound: bool,
    /// Its first eager run's outputs are checked by the JS that runs it (`probed_eagerly`).
    pub probed_eagerly: bool,
}

/// What op `name` with `attrs` is as a graph node; `None` when it runs only eagerly.
pub fn node_kind(name: &CStr, attrs: &[OwnedAttr]) -> Option<NodeKind> {
    let op = properties(name)?;
    let kind = NodeKind {
        deferrable: op.class == Deferrable,
        random: op.class == Random,
        fails_on_values: op.fails_on_values,
        compute_bound: op.compute_bound,
        probed_eagerly: op.probed_eagerly,
    };
    attrs::settable_on_node(attrs).then_some(kind)
}

/// Whether input `input` (of `count`) of op `name` may be an integer tensor computed in the same
/// graph (`DataInputs`).
pub fn takes_computed_integers(name: &CStr, input: usize, count: usize) -> bool {
    properties(name).is_some_and(|op| match op.data_inputs {
        NoData => false,
        Every => true,
        First => input == 0,
        FirstTwo => input < 2,
        Second => input == 1,
        AllButLast => input + 1 < count,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_row_per_op() {
        let mut names: Vec<&str> = OPS.iter().map(|op| op.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPS.len());
    }

    #[test]
    fn node_kinds_and_data_inputs() {
        let kind = |name: &CStr| node_kind(name, &[]);
        let mat_mul = kind(c"MatMul").unwrap();
        assert!(mat_mul.deferrable && mat_mul.compute_bound && !mat_mul.random);
        let floor_div = kind(c"FloorDiv").unwrap();
        assert!(!floor_div.deferrable && floor_div.fails_on_values);
        assert!(kind(c"RandomUniform").unwrap().random);
        assert_eq!(kind(c"Where"), None);
        assert!(takes_computed_integers(c"GatherV2", 1, 3));
        assert!(!takes_computed_integers(c"GatherV2", 2, 3));
        assert!(takes_computed_integers(c"ConcatV2", 1, 3));
        assert!(!takes_computed_integers(c"ConcatV2", 2, 3));
        assert!(!takes_computed_integers(c"Reshape", 1, 2));
        assert!(!takes_computed_integers(c"Where", 0, 1));
    }
}
