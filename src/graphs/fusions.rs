//! Rewrites of a recorded call's ops into fewer graph nodes: each replaces a chain of ops that
//! tfjs runs one by one with one TF op of the same result, saving passes over the data.
//! TF's Grappler remapper finds such chains too, but it runs over the whole graph at every
//! compile, which cost more than it saved elsewhere: measured with it on (and nothing else of
//! Grappler), an LSTM's first 10 predicts after fit took 15 ms each instead of 4, and a
//! convnet's training epochs 34 ms instead of 29.

use std::collections::HashMap;
use std::ffi::CStr;

use super::nodes::{relu_fused_attr, Built, NodeOp, Ref};
use crate::error::Result;
use crate::kernels::elementwise::{broadcasts, ElementOp, Instruction, Program};
use crate::op_plan::attrs::{self, AttrValue};
use crate::tensor_spec::{small_integers, TensorSpec};
use crate::tf::dtype::DTYPES;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;
use tensorflow_sys as sys;

/// What a call's recording tells of the values its graph computes: the dtypes and dims of the
/// tensors it takes (`feeds`: the fed ones, new each call, then the `fixed` ones, the same
/// every call), and the shapes of each recorded op's outputs (none when not known; -1 for a
/// dim that differs between calls).
pub struct Recorded<'a> {
    pub feeds: &'a [TensorSpec],
    pub fixed: &'a [TensorHandle],
    pub shapes: Vec<&'a [Vec<i64>]>,
}

impl Recorded<'_> {
    /// `input`'s tensor and spec when it is a fixed feed (a value every call has).
    fn fixed(&self, input: Ref) -> Option<(&TensorHandle, &TensorSpec)> {
        let Ref::Feed(k) = input else { return None };
        let fed = self.feeds.len() - self.fixed.len();
        let handle = (k as usize)
            .checked_sub(fed)
            .and_then(|f| self.fixed.get(f))?;
        Some((handle, self.feeds.get(k as usize)?))
    }

    /// The value of `input` when it is a fixed float scalar.
    fn fixed_scalar(&self, input: Ref, status: &Status) -> Result<Option<f64>> {
        let Some((handle, spec)) = self.fixed(input).filter(|(_, s)| s.dims.is_empty()) else {
            return Ok(None);
        };
        let values = handle.resolve(status)?.floats(DTYPES[spec.dtype]);
        Ok(values.and_then(|v| v.first().copied()))
    }

    /// The values of `input` when it is a fixed tensor of a few integers (an op's axes).
    fn fixed_integers(&self, input: Ref, status: &Status) -> Result<Option<Vec<i64>>> {
        let Some((handle, spec)) = self.fixed(input) else {
            return Ok(None);
        };
        small_integers(handle, spec.dtype, &spec.dims, status)
    }

    /// The shape of `input` as every call runs it: none when a dim differs between calls (-1 in
    /// a graph of several shapes), as the rewrites build nodes of one shape.
    fn shape_of(&self, input: Ref) -> Option<&[i64]> {
        let dims = match input {
            Ref::Node { index, output } => self
                .shapes
                .get(index as usize)?
                .get(output as usize)
                .map(Vec::as_slice),
            Ref::Feed(k) => self.feeds.get(k as usize).map(|spec| &spec.dims[..]),
        };
        dims.filter(|dims| dims.iter().all(|&d| d >= 0))
    }
}

/// Applies every rewrite to `steps` (the recorded ops, in order) of a graph fetching `fetches`
/// (rewritten where they name a fused op's output); returns how many nodes are fused ones.
pub fn fuse(
    steps: &mut [Option<NodeOp<'_>>],
    fetches: &mut [Ref],
    recorded: &Recorded<'_>,
    status: &Status,
) -> Result<usize> {
    fuse_clipped_relu(steps, recorded, status)?;
    // After the clips: a Relu that only a clip took is then needed by nothing.
    let mut uses = prune(steps, fetches);
    fuse_conv_batch_norm(steps, &mut uses);
    fuse_steps(steps, &mut uses, recorded);
    fuse_conv_bias_relu(steps, &mut uses, recorded);
    fuse_conv_relu(steps, &mut uses);
    untile_channels(steps, &mut uses, recorded);
    fuse_column_sums(steps, &mut uses, recorded, status)?;
    fuse_elementwise(steps, fetches, &uses, recorded)?;
    let fused = |step: &NodeOp<'_>| !matches!(step.built, Built::AsRecorded);
    Ok(steps.iter().flatten().filter(|step| fused(step)).count())
}

/// ClipByValue(Relu(x), 0, 6) is Relu6(x), in one pass over the data instead of two: tfjs-layers'
/// `reLU({maxValue: 6})` (MobileNets) runs the two ops; in a predict of a MobileNet they took 20
/// of 45 ms. Each such clip is built as Relu6 on the Relu's input, with the Relu's attrs; the
/// Relu is left to what else takes it (TF prunes a node nothing needs). The bounds must be
/// values every call has.
fn fuse_clipped_relu(
    steps: &mut [Option<NodeOp<'_>>],
    recorded: &Recorded<'_>,
    status: &Status,
) -> Result<()> {
    for i in 0..steps.len() {
        let Some(clip) = &steps[i] else { continue };
        if clip.op_name() != c"ClipByValue" || clip.inputs.len() != 3 {
            continue;
        }
        let Ref::Node { index, output: 0 } = clip.inputs[0] else {
            continue;
        };
        let Some(Some(relu)) = steps.get(index as usize) else {
            continue;
        };
        // The clip takes the Relu's output: the same dtype, so the Relu's attrs fit Relu6.
        if relu.op_name() != c"Relu" {
            continue;
        }
        if recorded.fixed_scalar(clip.inputs[1], status)? != Some(0.0)
            || recorded.fixed_scalar(clip.inputs[2], status)? != Some(6.0)
        {
            continue;
        }
        let fused = NodeOp {
            prepared: relu.prepared,
            inputs: relu.inputs.clone(),
            built: Built::Renamed(c"Relu6"),
        };
        steps[i] = Some(fused);
    }
    Ok(())
}

/// Elements from which a Sum or Mean over every axis but the last runs as `ColumnSums`: on
/// fewer, TF's kernel costs about as much, and keeps its own bits.
const COLUMN_SUMS_MIN_ELEMENTS: i64 = 1 << 14;

/// Factors, at most, of a product whose column sums are one node.
const MAX_FACTORS: usize = 4;

/// A float Sum or Mean over every axis but the last (a bias's gradient, a batch norm's
/// statistics and their gradients, over NHWC activations) is built as `TfjsNodeRs>ColumnSums`
/// (`kernels::column_sums`): one pass over the data at the speed of memory, where TF's reduction
/// made a third of it (a convnet's training step: 3.2 of 45 ms in two Sums, then 1.4). The
/// Muls that only the sum takes are left out, their factors multiplied as the node sums (a batch
/// norm's gradient sums products of the activations' gradient, the normalized activations and
/// a vector of the channels). The axes must be values every call has.
fn fuse_column_sums(
    steps: &mut [Option<NodeOp<'_>>],
    uses: &mut HashMap<Ref, usize>,
    recorded: &Recorded<'_>,
    status: &Status,
) -> Result<()> {
    for index in 0..steps.len() {
        let Some(step) = &steps[index] else { continue };
        let mean = match step.op_name().to_bytes() {
            b"Sum" => false,
            b"Mean" => true,
            _ => continue,
        };
        let (&[values, axes_input], Built::AsRecorded) = (&step.inputs[..], &step.built) else {
            continue;
        };
        let Some(shape) = recorded.shape_of(values) else {
            continue;
        };
        let rank = shape.len() as i64;
        if !is_float(step)
            || rank < 2
            || shape.iter().product::<i64>() < COLUMN_SUMS_MIN_ELEMENTS
            || recorded.shape_of(output(index, 0)).is_none()
        {
            continue;
        }
        let Some(mut axes) = recorded.fixed_integers(axes_input, status)? else {
            continue;
        };
        axes.iter_mut().filter(|a| **a < 0).for_each(|a| *a += rank);
        axes.sort_unstable();
        axes.dedup();
        if axes != (0..rank - 1).collect::<Vec<_>>() {
            continue;
        }
        let keep_dims = matches!(attr(step, c"keep_dims"), Some(AttrValue::Bool(true)));
        let (prepared, shape) = (step.prepared, shape.to_vec());
        let mut factors = vec![values];
        let mut products = Vec::new();
        // Each factor that is a float Mul of the sum's shape, taken only here, is its two.
        while factors.len() < MAX_FACTORS {
            let Some((k, at, taken)) = factors.iter().enumerate().find_map(|(k, &f)| {
                product_of(steps, uses, recorded, f, &shape).map(|(at, taken)| (k, at, taken))
            }) else {
                break;
            };
            products.push(at);
            factors.splice(k..=k, taken);
        }
        // The first factor is a tensor of the sum's shape (a product of them has one).
        let Some(whole) = factors
            .iter()
            .position(|&f| recorded.shape_of(f) == Some(&shape[..]))
        else {
            continue;
        };
        factors.swap(0, whole);
        for at in products {
            uses.remove(&output(at, 0));
            steps[at] = None;
        }
        if let Some(n) = uses.get_mut(&axes_input) {
            *n = n.saturating_sub(1);
        }
        steps[index] = Some(NodeOp {
            prepared,
            inputs: factors,
            built: Built::ColumnSums {
                mean,
                keep_dims,
                shape,
            },
        });
    }
    Ok(())
}

/// Where `factor`'s op is and what it takes, when it is a float Mul (as recorded) of values of
/// `shape`, whose inputs broadcast to it, and whose value only one op takes.
fn product_of(
    steps: &[Option<NodeOp<'_>>],
    uses: &HashMap<Ref, usize>,
    recorded: &Recorded<'_>,
    factor: Ref,
    shape: &[i64],
) -> Option<(usize, [Ref; 2])> {
    let Ref::Node { index, output: 0 } = factor else {
        return None;
    };
    let mul = steps.get(index as usize)?.as_ref()?;
    let fits = mul.op_name() == c"Mul"
        && mul.built == Built::AsRecorded
        && is_float(mul)
        && uses.get(&factor) == Some(&1)
        && recorded.shape_of(factor) == Some(shape)
        && mul
            .inputs
            .iter()
            .all(|&i| recorded.shape_of(i).is_some_and(|d| broadcasts(d, shape)));
    let &[a, b] = &mul.inputs[..] else {
        return None;
    };
    fits.then_some((index as usize, [a, b]))
}

/// Activations `_FusedConv2D` applies after a batch norm, which oneDNN's fused convolution
/// (what TF's oneDNN graph pass makes of it) runs too.
const BATCH_NORM_ACTIVATIONS: &[&str] = &["Relu", "Relu6"];

/// Conv2D, then an inference FusedBatchNormV3 (then Relu or Relu6) is one `_FusedConv2D`: the
/// convolution normalizes and activates each output as it writes it, where the three ops made
/// three passes over the activations. tfjs-layers runs them so for every convolution followed
/// by `batchNormalization` in a predict (MobileNets, ResNets): `benches/` MobileNet's predict
/// 44 -> 32 ms, the ResNet block's 3.6 -> 2.5 ms. Only where nothing else takes the
/// convolution's or the batch norm's outputs (a training step's gradients do), and for float
/// NHWC data, as TF's fused kernel requires.
/// `uses` (see `prune`) stays the count of every output's takers.
fn fuse_conv_batch_norm(steps: &mut [Option<NodeOp<'_>>], uses: &mut HashMap<Ref, usize>) {
    // From the end, so that a batch norm an activation follows is fused with it, not alone.
    for end in (0..steps.len()).rev() {
        let Some(last) = &steps[end] else { continue };
        let activation = BATCH_NORM_ACTIVATIONS
            .iter()
            .find(|op| last.op_name().to_bytes() == op.as_bytes())
            .copied();
        let norm_at = match (activation, last.inputs.first()) {
            (Some(_), Some(&Ref::Node { index, output: 0 })) => index as usize,
            (None, _) => end,
            _ => continue,
        };
        let Some(Some(norm)) = steps.get(norm_at) else {
            continue;
        };
        if norm.op_name() != c"FusedBatchNormV3"
            || norm.inputs.len() != 5
            || !matches!(attr(norm, c"is_training"), Some(AttrValue::Bool(false)))
            || !float_nhwc(norm)
            || (1..6).any(|k| uses.contains_key(&output(norm_at, k)))
            || (norm_at != end && uses.get(&output(norm_at, 0)) != Some(&1))
        {
            continue;
        }
        let Some(AttrValue::Float(epsilon)) = attr(norm, c"epsilon") else {
            continue;
        };
        let Ref::Node { index, output: 0 } = norm.inputs[0] else {
            continue;
        };
        let conv_at = index as usize;
        let Some(Some(conv)) = steps.get(conv_at) else {
            continue;
        };
        if conv.op_name() != c"Conv2D"
            || !matches!(conv.built, Built::AsRecorded)
            || !float_nhwc(conv)
            || uses.get(&output(conv_at, 0)) != Some(&1)
        {
            continue;
        }
        let mut inputs = conv.inputs.clone();
        inputs.extend_from_slice(&norm.inputs[1..]);
        let fused = NodeOp {
            prepared: conv.prepared,
            inputs,
            built: Built::FusedConv2D {
                fused_ops: match activation {
                    Some(activation) => vec!["FusedBatchNorm", activation],
                    None => vec!["FusedBatchNorm"],
                },
                epsilon: *epsilon,
            },
        };
        for gone in [conv_at, norm_at] {
            if gone != end {
                uses.remove(&output(gone, 0));
                steps[gone] = None;
            }
        }
        steps[end] = Some(fused);
    }
}

/// A chain of element-wise ops of one shape that becomes one `TfjsNodeRs>Elementwise` node at
/// the place of one of its ops, `at`: every value it takes from outside comes before `at` (from
/// a feed, or an op before it), and every op outside it that takes its values comes after, so
/// the node can compute them all there. `at` is its first op where that holds (an optimizer's
/// update), else its last (a ReLU's gradient: the step of the forward pass's values, taken by
/// the product with the backward pass's).
struct Chain {
    at: usize,
    shape: Vec<i64>,
    members: Vec<usize>,
}

impl Chain {
    /// Ops a chain needs, at least, to be fused whatever its size: a call of the fused kernel
    /// costs about what two of TF's element-wise ops do on small tensors (an LSTM's predict,
    /// whose cells hold pairs of ops on [32, 20], was 11% slower with them fused).
    const MIN_MEMBERS: usize = 3;
    /// Elements from which a chain of two is fused: the pass over the data it saves then
    /// outweighs the call.
    const MIN_ELEMENTS_OF_TWO: i64 = 1 << 14;

    fn pays(&self) -> bool {
        let elements: i64 = self.shape.iter().product();
        self.members.len() >= Self::MIN_MEMBERS
            || (self.members.len() == 2 && elements >= Self::MIN_ELEMENTS_OF_TWO)
    }
}

/// Runs of element-wise float ops (`kernels::elementwise::ElementOp`) on values of one shape,
/// each input of that shape, one value or a vector along the last axis, are one `TfjsNodeRs>Elementwise` node: one pass
/// over the data instead of one per op (a training step's optimizer update and activation
/// gradients). The node computes the same bits as the ops. Shapes are those the recording saw;
/// building the node checks them against TF's (`nodes::add_node`).
fn fuse_elementwise(
    steps: &mut [Option<NodeOp<'_>>],
    fetches: &mut [Ref],
    uses: &HashMap<Ref, usize>,
    recorded: &Recorded<'_>,
) -> Result<()> {
    let mut chains: Vec<Chain> = Vec::new();
    let mut chain_of: Vec<Option<usize>> = vec![None; steps.len()];
    let takers = takers(steps);
    for index in 0..steps.len() {
        let Some(step) = &steps[index] else { continue };
        let Some(shape) = elementwise_shape(step, index, recorded) else {
            continue;
        };
        // The op joins the chains its inputs come from, of its shape, merged into the first
        // of them, when the merged chain has a place (an optimizer's moments start apart and
        // meet in the update); else it starts a new chain.
        let mut joined: Vec<usize> = step
            .inputs
            .iter()
            .filter_map(|&input| match input {
                Ref::Node { index: at, .. } => chain_of[at as usize],
                Ref::Feed(_) => None,
            })
            .filter(|&c| chains[c].shape == shape)
            .collect();
        joined.sort_by_key(|&c| chains[c].members.first().copied());
        joined.dedup();
        let mut members: Vec<usize> = joined
            .iter()
            .flat_map(|&c| chains[c].members.iter().copied())
            .chain([index])
            .collect();
        members.sort_unstable();
        let start = members[0];
        let at = if takes_from_before(steps, &members, start) {
            Some(start)
        } else {
            taken_after(&takers, &members, index).then_some(index)
        };
        match (joined.first(), at) {
            (Some(&c), Some(at)) => {
                for &other in &joined[1..] {
                    chains[other].members.clear();
                }
                for &m in &members {
                    chain_of[m] = Some(c);
                }
                chains[c].members = members;
                chains[c].at = at;
            }
            _ => {
                chains.push(Chain {
                    at: index,
                    shape,
                    members: vec![index],
                });
                chain_of[index] = Some(chains.len() - 1);
            }
        }
    }
    let mut renamed = HashMap::new();
    for chain in chains.iter().filter(|c| c.pays()) {
        fuse_chain(steps, uses, chain, recorded, &mut renamed)?;
    }
    let rename = |r: &mut Ref| {
        if let Some(&to) = renamed.get(r) {
            *r = to;
        }
    };
    steps
        .iter_mut()
        .flatten()
        .for_each(|step| step.inputs.iter_mut().for_each(rename));
    fetches.iter_mut().for_each(rename);
    Ok(())
}

/// A float Relu that alone takes a float Sign's values becomes `Built::Step` of the Sign's
/// input, and the Sign is left out: tfjs's ReLU gradient (its `step`) runs the two ops, each a
/// pass over the activations.
fn fuse_steps(
    steps: &mut [Option<NodeOp<'_>>],
    uses: &mut HashMap<Ref, usize>,
    recorded: &Recorded<'_>,
) {
    for index in 0..steps.len() {
        let Some(relu) = &steps[index] else { continue };
        let (
            Built::AsRecorded,
            &[Ref::Node {
                index: sign_at,
                output: 0,
            }],
        ) = (&relu.built, &relu.inputs[..])
        else {
            continue;
        };
        if relu.op_name() != c"Relu" {
            continue;
        }
        let sign_at = sign_at as usize;
        let Some(Some(sign)) = steps.get(sign_at) else {
            continue;
        };
        let Some(shape) = recorded.shape_of(output(index, 0)) else {
            continue;
        };
        if sign.op_name() != c"Sign"
            || sign.built != Built::AsRecorded
            || !is_float(sign)
            || !is_float(relu)
            || uses.get(&output(sign_at, 0)) != Some(&1)
            || sign.inputs.first().and_then(|&x| recorded.shape_of(x)) != Some(shape)
        {
            continue;
        }
        let (inputs, shape) = (sign.inputs.clone(), shape.to_vec());
        uses.remove(&output(sign_at, 0));
        steps[sign_at] = None;
        if let Some(relu) = &mut steps[index] {
            relu.inputs = inputs;
            relu.built = Built::Step { shape };
        }
    }
}

/// Input channels from which oneDNN's fused convolution beats the convolution, bias add and
/// ReLU apart (as in the JS kernel's `FUSED_CONV_MIN_IN_CHANNELS`: 1.8-3x slower with 1 or 3).
const FUSED_CONV_MIN_IN_CHANNELS: i64 = 8;

/// A training step's Conv2D, then the add of a bias of its channels, then a Relu, is one
/// `_FusedConv2D` (tfjs-core runs a fused convolution as the three ops while it records
/// gradients): two passes over the activations fewer. The ReLU's gradient takes the step of
/// the sum, which is the step of the Relu's output (the sum is above 0 where the output is), so
/// it takes that instead; nothing else may take the convolution's or the sum's values.
fn fuse_conv_bias_relu(
    steps: &mut [Option<NodeOp<'_>>],
    uses: &mut HashMap<Ref, usize>,
    recorded: &Recorded<'_>,
) {
    let takers = takers(steps);
    for end in 0..steps.len() {
        let Some((relu, add_at)) = relu_of_output(steps, end) else {
            continue;
        };
        let Some(Some(add)) = steps.get(add_at) else {
            continue;
        };
        let (true, &[Ref::Node { index, output: 0 }, bias]) =
            (add.built == Built::AsRecorded, &add.inputs[..])
        else {
            continue;
        };
        let conv_at = index as usize;
        let Some(Some(conv)) = steps.get(conv_at) else {
            continue;
        };
        let channels = recorded
            .shape_of(output(add_at, 0))
            .and_then(|dims| dims.last().copied());
        let in_channels = conv
            .inputs
            .first()
            .and_then(|&x| recorded.shape_of(x))
            .and_then(|dims| dims.last().copied());
        let steps_taking = &takers[add_at];
        if relu.op_name() != c"Relu"
            || !is_float(relu)
            || !matches!(add.op_name().to_bytes(), b"AddV2" | b"BiasAdd")
            || !float_nhwc(add)
            || channels.is_none()
            || recorded.shape_of(bias) != channels.as_ref().map(std::slice::from_ref)
            || conv.op_name() != c"Conv2D"
            || conv.built != Built::AsRecorded
            || !float_nhwc(conv)
            || in_channels.is_none_or(|c| c < FUSED_CONV_MIN_IN_CHANNELS)
            || uses.get(&output(conv_at, 0)) != Some(&1)
            || uses.get(&output(add_at, 0)) != Some(&steps_taking.len())
            || !only_steps_after(steps, steps_taking, end)
        {
            continue;
        }
        let mut inputs = conv.inputs.clone();
        inputs.push(bias);
        let fused = NodeOp {
            prepared: conv.prepared,
            inputs,
            built: Built::FusedConv2D {
                fused_ops: vec!["BiasAdd", "Relu"],
                epsilon: 0.0,
            },
        };
        take_relu_instead(steps, uses, steps_taking, end);
        uses.remove(&output(conv_at, 0));
        uses.remove(&output(add_at, 0));
        steps[conv_at] = None;
        steps[add_at] = None;
        steps[end] = Some(fused);
    }
}

/// A convolution that adds its bias in its pass (a `_FusedConv2D` of a bias, the package's
/// FewChannelConv2D), then a Relu, is the convolution with the ReLU fused (`Built::WithRelu`):
/// a pass over the activations fewer, where a Keras model has an Activation layer after a
/// Conv2D layer. As in `fuse_conv_bias_relu`, steps of the convolution's output (the ReLU's
/// gradient) take the Relu's output instead; nothing else may take the convolution's.
fn fuse_conv_relu(steps: &mut [Option<NodeOp<'_>>], uses: &mut HashMap<Ref, usize>) {
    let takers = takers(steps);
    for end in 0..steps.len() {
        let Some((relu, conv_at)) = relu_of_output(steps, end) else {
            continue;
        };
        let Some(Some(conv)) = steps.get(conv_at) else {
            continue;
        };
        let steps_taking = &takers[conv_at];
        if relu.op_name() != c"Relu"
            || !is_float(relu)
            || conv.built != Built::AsRecorded
            || relu_fused_attr(conv.prepared).is_none()
            || uses.get(&output(conv_at, 0)) != Some(&steps_taking.len())
            || !only_steps_after(steps, steps_taking, end)
        {
            continue;
        }
        let fused = NodeOp {
            prepared: conv.prepared,
            inputs: conv.inputs.clone(),
            built: Built::WithRelu,
        };
        take_relu_instead(steps, uses, steps_taking, end);
        uses.remove(&output(conv_at, 0));
        steps[conv_at] = None;
        steps[end] = Some(fused);
    }
}

/// The step at `end`, when it is a recorded op of one input, output 0 of an earlier step, and
/// that step's index: a Relu candidate (the caller checks the op).
fn relu_of_output<'s, 'a>(
    steps: &'s [Option<NodeOp<'a>>],
    end: usize,
) -> Option<(&'s NodeOp<'a>, usize)> {
    let relu = steps[end].as_ref()?;
    match (&relu.built, &relu.inputs[..]) {
        (Built::AsRecorded, &[Ref::Node { index, output: 0 }]) => Some((relu, index as usize)),
        _ => None,
    }
}

/// Makes the steps of `taking` (all but the Relu at `end`) take the Relu's output.
fn take_relu_instead(
    steps: &mut [Option<NodeOp<'_>>],
    uses: &mut HashMap<Ref, usize>,
    taking: &[usize],
    end: usize,
) {
    for &t in taking.iter().filter(|&&t| t != end) {
        if let Some(step) = &mut steps[t] {
            step.inputs = vec![output(end, 0)];
            *uses.entry(output(end, 0)).or_insert(0) += 1;
        }
    }
}

/// Whether every one of `taking` but the Relu at `end` is a step (`Built::Step`) after it.
fn only_steps_after(steps: &[Option<NodeOp<'_>>], taking: &[usize], end: usize) -> bool {
    taking.iter().all(|&t| {
        t == end
            || (t > end && matches!(&steps[t], Some(s) if matches!(s.built, Built::Step { .. })))
    })
}

/// A float Tile of a vector along the last axis (tfjs's batch norm gradient tiles its
/// statistics over the activations) that only binary element-wise ops take, each with the
/// tile's shape in its other input, is left out: they take the vector, which TF's ops
/// broadcast and element-wise chains read as a vector, instead of a pass writing the tile and
/// one reading it.
fn untile_channels(
    steps: &mut [Option<NodeOp<'_>>],
    uses: &mut HashMap<Ref, usize>,
    recorded: &Recorded<'_>,
) {
    let takers = takers(steps);
    for index in 0..steps.len() {
        let Some(tile) = &steps[index] else { continue };
        let tiled = output(index, 0);
        let (Some(shape), Some(&vector)) = (recorded.shape_of(tiled), tile.inputs.first()) else {
            continue;
        };
        let takes_with_full = |t: usize| {
            steps[t].as_ref().is_some_and(|step| {
                element_op(step).is_some_and(|op| op.arity() == 2)
                    && step.inputs.len() == 2
                    && step
                        .inputs
                        .iter()
                        .any(|&i| i != tiled && recorded.shape_of(i) == Some(shape))
            })
        };
        if tile.op_name() != c"Tile"
            || tile.built != Built::AsRecorded
            || !is_float(tile)
            || recorded.shape_of(vector).is_none_or(|dims| {
                dims.len() != shape.len() || dims == shape || !broadcasts(dims, shape)
            })
            || uses.get(&tiled) != Some(&takers[index].len())
            || !takers[index].iter().all(|&t| takes_with_full(t))
        {
            continue;
        }
        for input in &tile.inputs {
            if let Some(n) = uses.get_mut(input) {
                *n = n.saturating_sub(1);
            }
        }
        *uses.entry(vector).or_insert(0) += takers[index].len();
        uses.remove(&tiled);
        steps[index] = None;
        for &t in &takers[index] {
            if let Some(step) = &mut steps[t] {
                step.inputs
                    .iter_mut()
                    .filter(|i| **i == tiled)
                    .for_each(|i| *i = vector);
            }
        }
    }
}

/// The ops that take each op's outputs, in order.
fn takers(steps: &[Option<NodeOp<'_>>]) -> Vec<Vec<usize>> {
    let mut takers = vec![Vec::new(); steps.len()];
    for (index, step) in steps.iter().enumerate() {
        let Some(step) = step else { continue };
        for &input in &step.inputs {
            if let Ref::Node { index: from, .. } = input {
                if let Some(t) = takers.get_mut(from as usize) {
                    t.push(index);
                }
            }
        }
    }
    takers
}

/// Whether every op outside `members` (sorted) that takes their values comes after `at`.
fn taken_after(takers: &[Vec<usize>], members: &[usize], at: usize) -> bool {
    members.iter().all(|&m| {
        takers[m]
            .iter()
            .all(|&t| t > at || members.binary_search(&t).is_ok())
    })
}

/// Whether every value that ops `members` (sorted) take from outside them comes before `start`.
fn takes_from_before(steps: &[Option<NodeOp<'_>>], members: &[usize], start: usize) -> bool {
    members.iter().all(|&m| {
        steps[m].as_ref().is_some_and(|step| {
            step.inputs.iter().all(|&input| match input {
                Ref::Feed(_) => true,
                Ref::Node { index, .. } => {
                    let at = index as usize;
                    at < start || members.binary_search(&at).is_ok()
                }
            })
        })
    })
}

/// The shape of `step`'s output when it is an element-wise float op (`ElementOp`) whose inputs
/// each fit a chain of that shape (`elementwise::broadcasts`), as the call ran.
fn elementwise_shape(step: &NodeOp<'_>, index: usize, recorded: &Recorded<'_>) -> Option<Vec<i64>> {
    let fits = is_float(step) && element_op(step).is_some_and(|op| op.arity() == step.inputs.len());
    let shape = recorded.shape_of(output(index, 0)).filter(|_| fits)?;
    let inputs_fit = step.inputs.iter().all(|&input| {
        recorded
            .shape_of(input)
            .is_some_and(|dims| broadcasts(dims, shape))
    });
    inputs_fit.then(|| shape.to_vec())
}

/// The element-wise op `step` computes, if it is one.
fn element_op(step: &NodeOp<'_>) -> Option<ElementOp> {
    match step.built {
        Built::AsRecorded => ElementOp::of_tf_op(step.op_name().to_bytes()),
        Built::Step { .. } => Some(ElementOp::Step),
        _ => None,
    }
}

/// Builds `chain` as one node at its place (`at`): its program over the values it takes from
/// outside (one of its shape first, which gives the outputs theirs), with an output for each
/// value that anything outside it takes (`uses`) or fetches.
fn fuse_chain(
    steps: &mut [Option<NodeOp<'_>>],
    uses: &HashMap<Ref, usize>,
    chain: &Chain,
    recorded: &Recorded<'_>,
    renamed: &mut HashMap<Ref, Ref>,
) -> Result<()> {
    let member_at = |r: Ref| match r {
        Ref::Node { index, output: 0 } => chain.members.binary_search(&(index as usize)).ok(),
        _ => None,
    };
    // The values taken from outside, one of the chain's shape first.
    let mut outside: Vec<Ref> = Vec::new();
    for &m in &chain.members {
        let Some(step) = &steps[m] else { continue };
        for &input in &step.inputs {
            if member_at(input).is_none() && !outside.contains(&input) {
                outside.push(input);
            }
        }
    }
    let full = outside
        .iter()
        .position(|&input| recorded.shape_of(input) == Some(&chain.shape[..]));
    let Some(full) = full else { return Ok(()) };
    outside.swap(0, full);
    let value_of = |r: Ref| match member_at(r) {
        Some(j) => outside.len() + j,
        None => outside.iter().position(|&o| o == r).unwrap_or(0),
    };
    let mut instructions = Vec::with_capacity(chain.members.len());
    let mut taken_inside: HashMap<usize, usize> = HashMap::new();
    for &m in &chain.members {
        let Some(step) = &steps[m] else { return Ok(()) };
        let Some(op) = element_op(step) else {
            return Ok(());
        };
        for &input in &step.inputs {
            if let Some(j) = member_at(input) {
                *taken_inside.entry(j).or_insert(0) += 1;
            }
        }
        let a = value_of(step.inputs[0]);
        let b = step.inputs.get(1).map_or(a, |&input| value_of(input));
        instructions.push(Instruction { op, a, b });
    }
    // Members whose value something outside the chain takes or fetches, in order: output k.
    let outputs: Vec<usize> = (0..chain.members.len())
        .filter(|&j| {
            let all = uses.get(&output(chain.members[j], 0)).copied().unwrap_or(0);
            all > taken_inside.get(&j).copied().unwrap_or(0)
        })
        .collect();
    if outputs.is_empty() {
        return Ok(());
    }
    let program = Program {
        inputs: outside.len(),
        instructions,
        results: outputs.iter().map(|&j| outside.len() + j).collect(),
    };
    let Some(Some(first)) = steps.get(chain.at) else {
        return Ok(());
    };
    for (k, &j) in outputs.iter().enumerate() {
        let fused = Ref::Node {
            index: chain.at as u32,
            output: k as u32,
        };
        renamed.insert(output(chain.members[j], 0), fused);
    }
    let fused = NodeOp {
        prepared: first.prepared,
        inputs: outside,
        built: Built::Elementwise {
            program,
            shape: chain.shape.clone(),
        },
    };
    for &m in &chain.members {
        steps[m] = None;
    }
    steps[chain.at] = Some(fused);
    Ok(())
}

fn output(index: usize, output: u32) -> Ref {
    Ref::Node {
        index: index as u32,
        output,
    }
}

/// Leaves out the nodes no fetch needs (TF would prune them; fused chains must not leave
/// them taking a node that is gone), and counts how many times each output of the others is
/// taken or fetched.
fn prune(steps: &mut [Option<NodeOp<'_>>], fetches: &[Ref]) -> HashMap<Ref, usize> {
    let mut uses = HashMap::new();
    let mut needed = vec![false; steps.len()];
    let mut take = |input: Ref, needed: &mut [bool]| {
        *uses.entry(input).or_insert(0) += 1;
        if let Ref::Node { index, .. } = input {
            if let Some(flag) = needed.get_mut(index as usize) {
                *flag = true;
            }
        }
    };
    for &fetch in fetches {
        take(fetch, &mut needed);
    }
    // Nodes only take earlier ones, so a node is known to be needed before its inputs are.
    for index in (0..steps.len()).rev() {
        if !needed[index] {
            steps[index] = None;
        }
        let Some(step) = &steps[index] else { continue };
        for &input in &step.inputs {
            take(input, &mut needed);
        }
    }
    uses
}

fn attr<'a>(step: &'a NodeOp<'_>, name: &CStr) -> Option<&'a AttrValue> {
    attrs::given(&step.prepared.attrs, name.to_bytes())
}

/// Whether the op computes floats (`T`).
fn is_float(step: &NodeOp<'_>) -> bool {
    matches!(attr(step, c"T"), Some(AttrValue::Type(t)) if *t == sys::TF_FLOAT)
}

/// Whether the op computes floats in NHWC (`data_format`, NHWC by default).
fn float_nhwc(step: &NodeOp<'_>) -> bool {
    let nhwc = match attr(step, c"data_format") {
        None => true,
        Some(AttrValue::String(format)) => format == b"NHWC",
        Some(_) => false,
    };
    nhwc && is_float(step)
}
