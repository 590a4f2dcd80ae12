//! One-time set-ups of TF that the executor thread does as the package loads (`startRuntime`,
//! as soon as the addon is loaded, on a core the loading leaves idle), before a call needs them.
//! Where a native thread loads the addon while tfjs's JS loads (js/native_loader_core.js's
//! `startLoading`), they start after that JS, so fewer of them run. Each is
//! an executor set-up (`Executor::set_up`): it starts only until the program's first op, and
//! the first job waits at most for the one in progress.
//!
//! - **Small products.** They run as `SparseMatMul` (Eigen's contraction; see
//!   `EIGEN_MATMUL_MAX_WORK` in js/kernels/families/linalg.js), whose first run in a process
//!   generates its GEMM code: 30-40 ms on the first product of a program, where tfjs-node's
//!   `BatchMatMulV2` (oneDNN's matmul primitive) takes 5-8. The code generation is process-wide
//!   (TF guards it with a `pthread_once`), so one product on any thread sets it up for all.
//! - **Graph passes.** oneDNN's layout pass (`MklLayoutRewritePass`), which runs in every
//!   session's first run, asks for each node type (op and `T`) whether oneDNN has kernels for it,
//!   and answers from a cache of its thread: the first time, by scanning TF's whole kernel
//!   registry four times, about 1.2 ms per node type here. A graph's first run goes to the
//!   executor thread, so each node type new to it cost a model's first graph run that much:
//!   12-15 ms of dense-large's first training step (37 ms, later steps 21), 25-30 ms of an LSTM's
//!   or a convnet's. So the executor thread runs a graph holding one node of each node type
//!   tfjs models' graphs hold, none of them computed (their inputs are the untaken branch of a
//!   `Switch`): the pass sees them all. Measured (single processes, alternating with the code
//!   before): the first graph run of dense-large's training step 40 -> 26 ms, an LSTM's 57 ->
//!   33, convolutional-32filters' 70 -> 43, dense-tiny's 17 -> 2.5; first calls unchanged.
//!   It is done in parts of a few node types, most common first, as long as the program has
//!   called no op (about 60 of the 108 node types are set up by the time `require` returns);
//!   set-ups that ran later, in the program's pauses, held up the jobs that came during one
//!   (dense-tiny's 0.2 ms predicts by up to 3 ms in a full benchmark run). Handing the executor
//!   thread each op a program runs, as the program first runs it, instead cost the first call
//!   5-20%: that work then competed with the call for the cores.

use std::ffi::CStr;

use super::dtype::DType;
use super::graph::{node_name, Graph, NodeOutput};
use super::session::Session;
use super::status::Status;
use super::tensor::Tensor;
use crate::error::{Error, Result};

/// Runs a 2x2 `SparseMatMul` in a graph of its own on the calling thread.
pub fn set_up_small_products(status: &Status) -> Result<()> {
    let session = Session::in_caller_thread(status)?;
    let graph = session.graph();
    let float = Dtype::Float.dtype()?;
    // 2x2: Eigen computes a 1x1 product itself, without the generated code.
    let ones: Vec<u8> = [1f32; 4].iter().flat_map(|x| x.to_ne_bytes()).collect();
    let ones = Tensor::copy_of(float, &[2, 2], &ones)?;
    let value = graph.constant(c"ones", float, &ones, status)?;
    let mut product = graph.node(c"SparseMatMul", c"product")?;
    product.add_input(value);
    product.add_input(value);
    product.set_type(c"Ta", float.tf);
    product.set_type(c"Tb", float.tf);
    let product = product.finish(status)?;
    session.run(&[], &[session.port_of(product)], status)?;
    Ok(())
}

/// `MODEL_NODE_TYPES` are set up in parts of this many (2-3 ms each), so that the program's
/// first op stops the set-up within one part.
const NODE_TYPES_PER_PART: usize = 2;

/// How many parts `set_up_graph_passes` takes.
pub fn graph_pass_parts() -> usize {
    MODEL_NODE_TYPES.len().div_ceil(NODE_TYPES_PER_PART)
}

/// Runs a graph holding a node of each node type of part `part` of `MODEL_NODE_TYPES` on the
/// calling thread, none of them computed. Returns how many node types TF built (all, unless
/// TF's ops changed).
pub fn set_up_graph_passes(part: usize, status: &Status) -> Result<usize> {
    let node_types = MODEL_NODE_TYPES
        .chunks(NODE_TYPES_PER_PART)
        .nth(part)
        .ok_or_else(|| Error::Range(format!("no part {part} of the node types")))?;
    let session = Session::in_caller_thread(status)?;
    let graph = session.graph();
    let mut branches = Branches::new(graph, status)?;
    let mut nodes = Vec::with_capacity(node_types.len());
    for (k, node_type) in node_types.iter().enumerate() {
        // A node type TF refuses is left out: its first graph run looks it up, as before.
        if let Ok(node) = node_type.build(graph, k, &mut branches, status) {
            nodes.push(node);
        }
    }
    let mut all = graph.node(c"NoOp", c"all")?;
    nodes.iter().for_each(|&node| all.add_control_input(node));
    let all = all.finish(status)?;
    let feeds: Vec<_> = branches
        .fed
        .iter()
        .map(|(input, empty)| (session.port_of(*input), empty))
        .collect();
    let fetches: Vec<_> = branches.taken.iter().map(|&t| session.port_of(t)).collect();
    session.run_with_targets(&feeds, &fetches, &[all], status)?;
    Ok(nodes.len())
}

/// The dtypes of the node types' inputs.
#[derive(Clone, Copy)]
enum Dtype {
    Float,
    Int,
    Bool,
}

impl Dtype {
    const COUNT: usize = 3;

    fn dtype(self) -> Result<DType> {
        let name = match self {
            Dtype::Float => "float32",
            Dtype::Int => "int32",
            Dtype::Bool => "bool",
        };
        DType::from_name(name).ok_or_else(|| Error::Invalid(format!("no {name} dtype")))
    }
}

/// An argument of an op: one input, or a list of `n`.
#[derive(Clone, Copy)]
enum Arg {
    One(Dtype),
    List(usize, Dtype),
}

const F: Arg = Arg::One(Dtype::Float);
const I: Arg = Arg::One(Dtype::Int);
const B: Arg = Arg::One(Dtype::Bool);

/// An attr TF cannot infer from the inputs.
enum Attr {
    Int(i64),
    Ints(&'static [i64]),
    Str(&'static [u8]),
    Strs(&'static [&'static [u8]]),
    Type(Dtype),
}

/// A node type: the op, its arguments, the attrs it needs besides those of its inputs' dtypes.
struct NodeType {
    op: &'static CStr,
    args: &'static [Arg],
    attrs: &'static [(&'static CStr, Attr)],
}

const fn node(op: &'static CStr, args: &'static [Arg]) -> NodeType {
    NodeType {
        op,
        args,
        attrs: &[],
    }
}

const fn with(
    op: &'static CStr,
    args: &'static [Arg],
    attrs: &'static [(&'static CStr, Attr)],
) -> NodeType {
    NodeType { op, args, attrs }
}

const CONV: &[(&CStr, Attr)] = &[
    (c"strides", Attr::Ints(&[1, 1, 1, 1])),
    (c"padding", Attr::Str(b"VALID")),
];
const POOL: &[(&CStr, Attr)] = &[
    (c"ksize", Attr::Ints(&[1, 2, 2, 1])),
    (c"strides", Attr::Ints(&[1, 2, 2, 1])),
    (c"padding", Attr::Str(b"VALID")),
];
const FUSED_CONV: &[(&CStr, Attr)] = &[
    (c"strides", Attr::Ints(&[1, 1, 1, 1])),
    (c"padding", Attr::Str(b"VALID")),
    (c"num_args", Attr::Int(1)),
    (c"fused_ops", Attr::Strs(&[b"BiasAdd"])),
];
const DRAW_FLOATS: &[(&CStr, Attr)] = &[(c"dtype", Attr::Type(Dtype::Float))];
const TWO: &[(&CStr, Attr)] = &[(c"num_split", Attr::Int(2))];

/// The node types of the graphs of tfjs models as this package's kernels build them (the
/// benchmarks' models hold 60 of them), most common first, since the parts are set up in order:
/// dense layers with their losses and optimizers, then convolutions, pooling and batch norm,
/// recurrent and attention layers' shapes and slices, metrics, dropout, embeddings, then the
/// rest of layers' activations and tfjs-converter models' common ops. Only ops with a `T` attr,
/// which the pass looks node types up by; float unless a shape, index or mask, and the int32
/// forms of the ops that models compute shapes with.
const MODEL_NODE_TYPES: &[NodeType] = &[
    // Dense layers, mean squared error, sgd.
    node(c"MatMul", &[F, F]),
    node(c"BiasAdd", &[F, F]),
    node(c"Relu", &[F]),
    node(c"AddV2", &[F, F]),
    node(c"Mul", &[F, F]),
    node(c"Sub", &[F, F]),
    node(c"RealDiv", &[F, F]),
    node(c"Sum", &[F, I]),
    node(c"Mean", &[F, I]),
    node(c"Reshape", &[F, I]),
    node(c"Reshape", &[I, I]),
    node(c"Sign", &[F]),
    node(c"Square", &[F]),
    node(c"Neg", &[F]),
    // Softmax, cross-entropies, adam, rmsprop.
    node(c"Softmax", &[F]),
    node(c"Log", &[F]),
    node(c"Exp", &[F]),
    node(c"ClipByValue", &[F, F, F]),
    node(c"Sqrt", &[F]),
    node(c"Pow", &[F, F]),
    node(c"Sigmoid", &[F]),
    node(c"Tanh", &[F]),
    // Convolutions, pooling, batch norm.
    with(c"Conv2D", &[F, F], CONV),
    with(c"Conv2DBackpropFilter", &[F, I, F], CONV),
    with(c"Conv2DBackpropInput", &[I, F, F], CONV),
    with(
        c"_FusedConv2D",
        &[F, F, Arg::List(1, Dtype::Float), Arg::List(0, Dtype::Float)],
        FUSED_CONV,
    ),
    with(c"MaxPool", &[F], POOL),
    with(c"MaxPoolGrad", &[F, F, F], POOL),
    node(c"FusedBatchNormV3", &[F, F, F, F, F]),
    node(c"Rsqrt", &[F]),
    node(c"Relu6", &[F]),
    with(c"DepthwiseConv2dNative", &[F, F], CONV),
    with(c"DepthwiseConv2dNativeBackpropFilter", &[F, I, F], CONV),
    with(c"DepthwiseConv2dNativeBackpropInput", &[I, F, F], CONV),
    with(
        c"_FusedDepthwiseConv2dNative",
        &[F, F, Arg::List(1, Dtype::Float)],
        FUSED_CONV,
    ),
    with(c"AvgPool", &[F], POOL),
    with(c"AvgPoolGrad", &[I, F], POOL),
    node(c"PadV2", &[F, I, F]),
    // Recurrent and attention layers: slices, splits, stacks.
    node(c"Transpose", &[F, I]),
    node(c"ConcatV2", &[Arg::List(2, Dtype::Float), I]),
    node(c"Pack", &[Arg::List(2, Dtype::Float)]),
    node(c"Pack", &[Arg::List(2, Dtype::Int)]),
    node(c"Slice", &[F, I, I]),
    node(c"Slice", &[I, I, I]),
    node(c"StridedSlice", &[F, I, I, I]),
    node(c"StridedSlice", &[I, I, I, I]),
    with(c"Split", &[I, F], TWO),
    with(c"SplitV", &[F, I, I], TWO),
    with(c"Unpack", &[F], &[(c"num", Attr::Int(2))]),
    node(c"Tile", &[F, I]),
    node(c"ReverseV2", &[F, I]),
    node(c"BatchMatMulV2", &[F, F]),
    // Metrics, dropout, embeddings, clipping and guards.
    node(c"Equal", &[F, F]),
    node(c"Equal", &[I, I]),
    node(c"ArgMax", &[F, I]),
    node(c"Greater", &[F, F]),
    node(c"GreaterEqual", &[F, F]),
    node(c"Less", &[F, F]),
    node(c"LessEqual", &[F, F]),
    node(c"SelectV2", &[B, F, F]),
    node(c"Floor", &[F]),
    with(c"RandomUniform", &[I], DRAW_FLOATS),
    node(c"UnsortedSegmentSum", &[F, I, I]),
    node(c"ZerosLike", &[F]),
    node(c"OnesLike", &[F]),
    node(c"IsNan", &[F]),
    node(c"Abs", &[F]),
    node(c"Log1p", &[F]),
    node(c"Maximum", &[F, F]),
    node(c"Minimum", &[F, F]),
    // Other activations, losses and reductions.
    node(c"Elu", &[F]),
    node(c"EluGrad", &[F, F]),
    node(c"Selu", &[F]),
    node(c"LeakyRelu", &[F]),
    node(c"Softplus", &[F]),
    node(c"Softsign", &[F]),
    node(c"LogSoftmax", &[F]),
    node(c"SoftmaxCrossEntropyWithLogits", &[F, F]),
    node(c"SparseSoftmaxCrossEntropyWithLogits", &[F, I]),
    node(c"SquaredDifference", &[F, F]),
    node(c"Max", &[F, I]),
    node(c"Min", &[F, I]),
    node(c"Prod", &[F, I]),
    node(c"ArgMin", &[F, I]),
    node(c"AddN", &[Arg::List(2, Dtype::Float)]),
    node(c"L2Loss", &[F]),
    node(c"Cumsum", &[F, I]),
    node(c"BiasAddGrad", &[F]),
    with(c"RandomStandardNormal", &[I], DRAW_FLOATS),
    with(c"TruncatedNormal", &[I], DRAW_FLOATS),
    // tfjs-converter models' other common ops.
    node(c"Identity", &[F]),
    node(c"ExpandDims", &[F, I]),
    node(c"Squeeze", &[F]),
    node(c"ConcatV2", &[Arg::List(2, Dtype::Int), I]),
    node(c"Fill", &[I, F]),
    node(c"BroadcastTo", &[F, I]),
    node(c"Pad", &[F, I]),
    node(c"OneHot", &[I, I, F, F]),
    node(c"Select", &[B, F, F]),
    node(c"NotEqual", &[F, F]),
    node(c"DivNoNan", &[F, F]),
    node(c"Reciprocal", &[F]),
    node(c"Round", &[F]),
    node(c"Ceil", &[F]),
    node(c"ResizeBilinear", &[F, I]),
    node(c"ResizeNearestNeighbor", &[F, I]),
];

impl NodeType {
    fn build(
        &self,
        graph: &Graph,
        k: usize,
        branches: &mut Branches,
        status: &Status,
    ) -> Result<NodeOutput> {
        let name = node_name("node", k)?;
        let mut inputs = Vec::with_capacity(self.args.len());
        for arg in self.args {
            let (n, dtype) = match *arg {
                Arg::One(dtype) => (1, dtype),
                Arg::List(n, dtype) => (n, dtype),
            };
            inputs.push(vec![branches.untaken(graph, dtype, status)?; n]);
        }
        let mut node = graph.node(self.op, &name)?;
        for (arg, inputs) in self.args.iter().zip(&inputs) {
            match arg {
                Arg::One(_) => node.add_input(inputs[0]),
                Arg::List(..) => node.add_input_list(inputs),
            }
        }
        // The node is finished even when a dtype fails, so its description is not leaked.
        let mut set = Ok(());
        for (name, attr) in self.attrs {
            match attr {
                Attr::Int(v) => node.set_int(name, *v),
                Attr::Ints(v) => node.set_int_list(name, v),
                Attr::Str(v) => node.set_string(name, v),
                Attr::Strs(v) => node.set_string_list(name, v),
                Attr::Type(dtype) => match dtype.dtype() {
                    Ok(dtype) => node.set_type(name, dtype.tf),
                    Err(e) => set = Err(e),
                },
            }
        }
        let finished = node.finish(status);
        set?;
        finished
    }
}

/// Per dtype, a fed input (an empty tensor, as a graph's inputs are fed: the pass looks up the
/// feed's node type too) and the two branches of a `Switch` on it whose predicate is a constant
/// `false`: the taken one is fetched (as a graph's outputs are), the other never carries a
/// tensor. The input's shape is unknown, so shape functions accept any node built on it.
struct Branches {
    predicate: NodeOutput,
    untaken: [Option<NodeOutput>; Dtype::COUNT],
    fed: Vec<(NodeOutput, Tensor)>,
    taken: Vec<NodeOutput>,
}

impl Branches {
    fn new(graph: &Graph, status: &Status) -> Result<Branches> {
        let boolean = Dtype::Bool.dtype()?;
        let no = Tensor::copy_of(boolean, &[], &[0])?;
        Ok(Branches {
            predicate: graph.constant(c"never", boolean, &no, status)?,
            untaken: [None; Dtype::COUNT],
            fed: Vec::new(),
            taken: Vec::new(),
        })
    }

    fn untaken(&mut self, graph: &Graph, of: Dtype, status: &Status) -> Result<NodeOutput> {
        let slot = of as usize;
        if let Some(output) = self.untaken[slot] {
            return Ok(output);
        }
        let dtype = of.dtype()?;
        let mut input = graph.node(c"Placeholder", &node_name("input", slot)?)?;
        input.set_type(c"dtype", dtype.tf);
        input.set_shape(c"shape", None);
        let input = input.finish(status)?;
        let mut switch = graph.node(c"Switch", &node_name("switch", slot)?)?;
        switch.add_input(input);
        switch.add_input(self.predicate);
        let switch = switch.finish(status)?;
        let untaken = switch
            .at(1)
            .ok_or_else(|| Error::Invalid("Switch has no second output".into()))?;
        self.fed.push((input, Tensor::copy_of(dtype, &[0], &[])?));
        self.taken.push(switch);
        self.untaken[slot] = Some(untaken);
        Ok(untaken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_model_node_type_is_built_and_nothing_fails() {
        let status = Status::new();
        let built: Result<Vec<usize>> = (0..graph_pass_parts())
            .map(|part| set_up_graph_passes(part, &status))
            .collect();
        let built = built.map(|counts| counts.iter().sum::<usize>());
        assert_eq!(
            built.map_err(|e| format!("{e:?}")),
            Ok(MODEL_NODE_TYPES.len())
        );
        assert!(set_up_graph_passes(graph_pass_parts(), &status).is_err());
    }

    #[test]
    fn node_types_are_listed_once() {
        let mut seen = std::collections::HashSet::new();
        for t in MODEL_NODE_TYPES {
            let dtypes: Vec<_> = t
                .args
                .iter()
                .map(|a| match a {
                    Arg::One(d) | Arg::List(_, d) => *d as u8,
                })
                .collect();
            assert!(seen.insert((t.op, dtypes)), "{:?} twice", t.op);
        }
    }
}
