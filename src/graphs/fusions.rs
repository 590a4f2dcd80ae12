//! Rewrites of a recorded call's ops into fewer graph nodes: each replaces a chain of ops that
//! tfjs runs one by one with one TF op of the same result, saving passes over the data.
//! TF's Grappler remapper finds such chains too, but it runs over the whole graph at every
//! compile, which cost more than it saved elsewhere: measured with it on (and nothing else of
//! Grappler), an LSTM's first 10 predicts after fit took 15 ms each instead of 4, and a
//! convnet's training epochs 34 ms instead of 29.

use std::collections::HashMap;
use std::ffi::CStr;

use super::compiled::{Built, NodeOp, OutputSpec, Ref};
use crate::error::Result;
use crate::ops::attrs::{AttrValue, OwnedAttr};
use crate::tf::dtype::DTYPES;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;
use tensorflow_sys as sys;

/// The tensors a call's graph takes: `fed` ones (new each call) come first, then `fixed` ones
/// (the same every call).
pub struct Feeds<'a> {
    pub fed: &'a [&'a TensorHandle],
    pub fixed: &'a [TensorHandle],
}

impl Feeds<'_> {
    fn handle(&self, input: Ref) -> Option<&TensorHandle> {
        let Ref::Feed(k) = input else { return None };
        let k = k as usize;
        match k.checked_sub(self.fed.len()) {
            None => self.fed.get(k).copied(),
            Some(k) => self.fixed.get(k),
        }
    }

    /// The value of `input` when it is a fixed scalar (a value every call has).
    fn fixed_scalar(&self, input: Ref, status: &Status) -> Result<Option<f64>> {
        let Ref::Feed(k) = input else { return Ok(None) };
        if (k as usize) < self.fed.len() {
            return Ok(None);
        }
        let Some(handle) = self.handle(input) else {
            return Ok(None);
        };
        let spec = OutputSpec::of(handle, status)?;
        if !spec.dims.is_empty() {
            return Ok(None);
        }
        let values = handle.resolve(status)?.floats(DTYPES[spec.dtype]);
        Ok(values.and_then(|v| v.first().copied()))
    }
}

/// Applies every rewrite to `steps` (the recorded ops, in order) of a graph fetching `fetches`;
/// returns how many nodes are fused ones.
pub fn fuse(
    steps: &mut [Option<NodeOp<'_>>],
    fetches: &[Ref],
    feeds: &Feeds<'_>,
    status: &Status,
) -> Result<usize> {
    fuse_clipped_relu(steps, feeds, status)?;
    fuse_conv_batch_norm(steps, fetches);
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
    feeds: &Feeds<'_>,
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
        if feeds.fixed_scalar(clip.inputs[1], status)? != Some(0.0)
            || feeds.fixed_scalar(clip.inputs[2], status)? != Some(6.0)
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

/// Activations `_FusedConv2D` applies after a batch norm, which oneDNN's fused convolution
/// (what TF's oneDNN graph pass makes of it) runs too.
const BATCH_NORM_ACTIVATIONS: &[&str] = &["Relu", "Relu6"];

/// Conv2D, then an inference FusedBatchNormV3 (then Relu or Relu6) is one `_FusedConv2D`: the
/// convolution normalizes and activates each output as it writes it, where the three ops made
/// three passes over the activations. tfjs-layers runs them so for every convolution followed
/// by `batchNormalization` in a predict (MobileNets, ResNets): `benches/` MobileNet's predict
/// 44 -> 32 ms, the ResNet block's 3.6 -> 2.5 ms. Only where nothing else takes the convolution's or the batch norm's outputs (a training
/// step's gradients do), and for float NHWC data, as TF's fused kernel requires.
fn fuse_conv_batch_norm(steps: &mut [Option<NodeOp<'_>>], fetches: &[Ref]) {
    let mut uses = prune(steps, fetches);
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
    step.prepared
        .attrs
        .iter()
        .find(|OwnedAttr { name: n, .. }| n.as_c_str() == name)
        .map(|a| &a.value)
}

/// Whether the op computes floats (`T`) in NHWC (`data_format`, NHWC by default).
fn float_nhwc(step: &NodeOp<'_>) -> bool {
    let nhwc = match attr(step, c"data_format") {
        None => true,
        Some(AttrValue::String(format)) => format == b"NHWC",
        Some(_) => false,
    };
    nhwc && matches!(attr(step, c"T"), Some(AttrValue::Type(t)) if *t == sys::TF_FLOAT)
}
