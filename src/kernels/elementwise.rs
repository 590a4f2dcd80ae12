//! `TfjsNodeRs>Elementwise`: a chain of element-wise float ops in one pass over the data. The
//! ops a training step runs one by one over each weight (an optimizer's update: adam's 14 per
//! variable) or activation (a ReLU's gradient) each read and write whole tensors; this kernel
//! computes the chain a block of elements at a time, the block's intermediate values staying
//! in cache, and writes only what the graph takes from it (`graphs::fusions` finds the chains).
//!
//! Each op computes exactly what TF's CPU kernels do (IEEE `+ - * /` and square root; NaN
//! and signed-zero rules of TF's Maximum, Minimum, Relu and Sign), with denormals flushed to
//! zero as TF's kernels compute (`threads::DenormalsFlushed`), so a fused chain gives the same
//! bits as its ops run eagerly.
//!
//! Inputs: `N` float tensors, each of the shape of the first or of one element (a scalar it
//! broadcasts). Outputs: `M` tensors of the first input's shape. `program` lists the ops as
//! `[op, a, b]` triples over values numbered inputs first, then each op's result in order
//! (`b` is ignored by one-input ops); `results` names the value of each output.

use std::ops::Range;

use super::{threads, with_widest_vectors};
use crate::error::{Error, Result};
use crate::tf::custom_op::{CpuKernel, KernelAttrs, KernelContext, OpSpec};
use crate::tf::tensor::Tensor;

/// The element-wise ops a program may hold: the TF op each computes, and its inputs.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum ElementOp {
    Add,
    Sub,
    Mul,
    Div,
    Maximum,
    Minimum,
    Neg,
    Square,
    Sqrt,
    Relu,
    /// 1 where the input is above 0, else 0: TF's Relu of its Sign (tfjs's ReLU gradient).
    Step,
}

/// Each op by its code in `program` (its index here) and by the TF op it computes.
const OPS: &[(ElementOp, &str, usize)] = &[
    (ElementOp::Add, "AddV2", 2),
    (ElementOp::Sub, "Sub", 2),
    (ElementOp::Mul, "Mul", 2),
    (ElementOp::Div, "RealDiv", 2),
    (ElementOp::Maximum, "Maximum", 2),
    (ElementOp::Minimum, "Minimum", 2),
    (ElementOp::Neg, "Neg", 1),
    (ElementOp::Square, "Square", 1),
    (ElementOp::Sqrt, "Sqrt", 1),
    (ElementOp::Relu, "Relu", 1),
    // No TF op: `graphs::fusions` finds the two ops.
    (ElementOp::Step, "Relu(Sign)", 1),
];

impl ElementOp {
    /// The op that computes TF op `name` on floats.
    pub fn of_tf_op(name: &[u8]) -> Option<ElementOp> {
        OPS.iter()
            .find(|(_, tf, _)| tf.as_bytes() == name)
            .map(|&(op, _, _)| op)
    }

    pub fn arity(self) -> usize {
        OPS.iter()
            .find(|(op, _, _)| *op == self)
            .map_or(0, |&(_, _, arity)| arity)
    }

    fn code(self) -> i64 {
        OPS.iter().position(|(op, _, _)| *op == self).unwrap_or(0) as i64
    }

    fn of_code(code: i64) -> Option<ElementOp> {
        usize::try_from(code)
            .ok()
            .and_then(|i| OPS.get(i))
            .map(|&(op, _, _)| op)
    }
}

/// One op of a program and the values it takes (inputs first, then earlier ops' results).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Instruction {
    pub op: ElementOp,
    pub a: usize,
    pub b: usize,
}

/// A chain of ops over `inputs` input values, and which values are the outputs.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Program {
    pub inputs: usize,
    pub instructions: Vec<Instruction>,
    pub results: Vec<usize>,
}

impl Program {
    /// `op` (of one input) over one input.
    pub fn of_one(op: ElementOp) -> Program {
        Program {
            inputs: 1,
            instructions: vec![Instruction { op, a: 0, b: 0 }],
            results: vec![1],
        }
    }

    /// The `program` and `results` attrs of a node running this program.
    pub fn to_attrs(&self) -> (Vec<i64>, Vec<i64>) {
        let program = self
            .instructions
            .iter()
            .flat_map(|i| [i.op.code(), i.a as i64, i.b as i64])
            .collect();
        let results = self.results.iter().map(|&r| r as i64).collect();
        (program, results)
    }

    /// The program of a node's attrs, checked: every op takes only values before it.
    fn from_attrs(inputs: usize, program: &[i64], results: &[i64]) -> Result<Program> {
        let bad = |what: String| Error::Invalid(format!("element-wise program: {what}"));
        if inputs == 0 || !program.len().is_multiple_of(3) || results.is_empty() {
            return Err(bad(format!(
                "{inputs} inputs, {} program ints, {} results",
                program.len(),
                results.len()
            )));
        }
        let value = |v: i64, before: usize| {
            usize::try_from(v)
                .ok()
                .filter(|&v| v < before)
                .ok_or_else(|| bad(format!("value {v} is not one of the {before} before it")))
        };
        let mut instructions = Vec::with_capacity(program.len() / 3);
        for triple in program.chunks_exact(3) {
            let before = inputs + instructions.len();
            let op = ElementOp::of_code(triple[0])
                .ok_or_else(|| bad(format!("op code {} is unknown", triple[0])))?;
            let a = value(triple[1], before)?;
            let b = if op.arity() == 2 {
                value(triple[2], before)?
            } else {
                a
            };
            instructions.push(Instruction { op, a, b });
        }
        let values = inputs + instructions.len();
        let results = results
            .iter()
            .map(|&r| {
                value(r, values)?
                    .checked_sub(inputs)
                    .map(|_| r as usize)
                    .ok_or_else(|| bad(format!("result {r} is an input, not an op's")))
            })
            .collect::<Result<_>>()?;
        Ok(Program {
            inputs,
            instructions,
            results,
        })
    }

    /// Runs the program over `inputs` (each `len` elements, or one, or a vector along the last
    /// axis, to broadcast), writing `outputs` (`len` elements each), in parts on all cores when
    /// there are enough elements.
    fn run(&self, inputs: &[Input<'_>], outputs: Vec<&mut [f32]>, len: usize) -> Result<()> {
        if inputs.len() != self.inputs || outputs.len() != self.results.len() {
            return Err(Error::Invalid(format!(
                "element-wise program of {} inputs and {} outputs got {} and {}",
                self.inputs,
                self.results.len(),
                inputs.len(),
                outputs.len()
            )));
        }
        for (k, input) in inputs.iter().enumerate() {
            let fits = match *input {
                Input::Values(values) => values.len() == len || values.len() == 1,
                Input::InOutput(out) => out < outputs.len(),
                Input::Channels(values) => !values.is_empty() && len.is_multiple_of(values.len()),
            };
            if !fits {
                return Err(Error::Range(format!(
                    "element-wise input {k} has neither {len} elements, nor 1, nor a divisor"
                )));
            }
        }
        // Each vector repeated over a block and one more period: any block's values are then
        // one slice of it, from the block's start modulo the period.
        let tiles: Vec<Vec<f32>> = inputs
            .iter()
            .map(|input| match *input {
                Input::Channels(values) => values
                    .iter()
                    .copied()
                    .cycle()
                    .take(BLOCK + values.len())
                    .collect(),
                _ => Vec::new(),
            })
            .collect();
        let sources: Vec<Source<'_>> = inputs
            .iter()
            .zip(&tiles)
            .map(|(&input, tile)| match input {
                Input::Values(&[value]) => Source::Scalar(value),
                Input::Values(values) => Source::Values(values),
                Input::InOutput(k) => Source::InOutput(k),
                Input::Channels(values) => Source::Tiled {
                    tile,
                    period: values.len(),
                },
            })
            .collect();
        let sources = &sources[..];
        if outputs.iter().any(|out| out.len() != len) {
            return Err(Error::Range(format!(
                "element-wise outputs must hold {len} elements"
            )));
        }
        let ranges = threads::ranges(len, threads::parts(len), BLOCK);
        let mut parts: Vec<(Range<usize>, Vec<&mut [f32]>)> =
            ranges.into_iter().map(|r| (r, Vec::new())).collect();
        for mut rest in outputs {
            for (range, outs) in &mut parts {
                let (part, tail) = std::mem::take(&mut rest).split_at_mut(range.len());
                outs.push(part);
                rest = tail;
            }
        }
        threads::run_parts(parts, |(range, mut outs)| {
            self.run_range(sources, &mut outs, range);
            Ok(())
        })
    }

    /// Runs the program over the elements `range` of `inputs`, writing `outputs` (the same
    /// elements of each output), with the widest vectors the CPU has: TF's own element-wise
    /// kernels use them, and a chain of divisions and square roots (adam's update) is bound
    /// by them, not by memory.
    fn run_range(&self, inputs: &[Source<'_>], outputs: &mut [&mut [f32]], range: Range<usize>) {
        with_widest_vectors(
            #[inline(always)]
            || self.run_range_portable(inputs, outputs, range),
        )
    }

    /// Each block's ops read every input before its outputs are written, so an input may be
    /// an output's buffer (`Source::InOutput`).
    #[inline(always)]
    fn run_range_portable(
        &self,
        inputs: &[Source<'_>],
        outputs: &mut [&mut [f32]],
        range: Range<usize>,
    ) {
        // Each op's results of a block, one after another (less than a block when all is less).
        let stride = BLOCK.min(range.len());
        let mut scratch = vec![0f32; self.instructions.len() * stride];
        for start in range.clone().step_by(BLOCK) {
            let block = Block {
                start,
                at: start - range.start,
                len: BLOCK.min(range.end - start),
                stride,
            };
            for (j, instruction) in self.instructions.iter().enumerate() {
                let (done, rest) = scratch.split_at_mut(j * stride);
                let operand = |v: usize| self.operand(v, inputs, outputs, done, block);
                apply(
                    instruction.op,
                    operand(instruction.a),
                    operand(instruction.b),
                    &mut rest[..block.len],
                );
            }
            for (out, &result) in outputs.iter_mut().zip(&self.results) {
                let at = (result - self.inputs) * stride;
                out[block.at..][..block.len].copy_from_slice(&scratch[at..at + block.len]);
            }
        }
    }

    /// Value `v` over the elements of `block`.
    #[inline(always)]
    fn operand<'a>(
        &self,
        v: usize,
        inputs: &[Source<'a>],
        outputs: &'a [&mut [f32]],
        scratch: &'a [f32],
        block: Block,
    ) -> Operand<'a> {
        match inputs.get(v).copied() {
            Some(Source::Scalar(value)) => Operand::Scalar(value),
            Some(Source::Values(values)) => Operand::Block(&values[block.start..][..block.len]),
            Some(Source::InOutput(k)) => Operand::Block(&outputs[k][block.at..][..block.len]),
            Some(Source::Tiled { tile, period }) => {
                Operand::Block(&tile[block.start % period..][..block.len])
            }
            None => {
                let at = (v - self.inputs) * block.stride;
                Operand::Block(&scratch[at..at + block.len])
            }
        }
    }
}

/// Where an input's values are: its own buffer, or that of an output TF gave it to (the
/// output is written block by block, after the block's ops read it).
#[derive(Clone, Copy)]
pub enum Input<'a> {
    Values(&'a [f32]),
    InOutput(usize),
    /// A vector along the last axis (a bias, a batch norm's statistics), repeated.
    Channels(&'a [f32]),
}

/// Where a block's operand comes from, as `Program::run` lays out its inputs: a `Channels`
/// vector (of `period` values) as a tile repeating it over a block and one more period.
#[derive(Clone, Copy)]
enum Source<'a> {
    Values(&'a [f32]),
    Scalar(f32),
    InOutput(usize),
    Tiled { tile: &'a [f32], period: usize },
}

impl<'a> Input<'a> {
    /// The values of `tensor`, an input of a chain over `len` values of `dims`.
    fn of(tensor: &'a Tensor, dims: &[i64], len: usize) -> Result<Input<'a>> {
        let values = tensor.f32s()?;
        if values.len() == len || values.len() == 1 {
            return Ok(Input::Values(values));
        }
        let input_dims = tensor.dims();
        if !broadcasts(&input_dims, dims) {
            return Err(Error::Range(format!(
                "an element-wise input of shape {input_dims:?} does not broadcast to {dims:?}"
            )));
        }
        Ok(Input::Channels(values))
    }
}

/// Whether an input of `dims` may take part in a chain over values of `shape`: of that shape, or
/// one element, or a vector along the last axis, of no higher rank (each then broadcast).
pub fn broadcasts(dims: &[i64], shape: &[i64]) -> bool {
    if dims == shape {
        return true;
    }
    let Some((&last, leading)) = dims.split_last() else {
        return true;
    };
    dims.len() <= shape.len()
        && leading.iter().all(|&d| d == 1)
        && (last == 1 || shape.last() == Some(&last))
}

/// Elements `start..start + len` of the data, at `at` in the part a thread computes; each op's
/// results of it are `stride` apart in the scratch buffer.
#[derive(Clone, Copy)]
struct Block {
    start: usize,
    at: usize,
    len: usize,
    stride: usize,
}

/// Elements per block: every op's block of results (2 KB each) stays in the L1 cache.
const BLOCK: usize = 512;

#[derive(Clone, Copy)]
enum Operand<'a> {
    Block(&'a [f32]),
    Scalar(f32),
}

#[inline(always)]
fn apply(op: ElementOp, a: Operand<'_>, b: Operand<'_>, out: &mut [f32]) {
    match op {
        ElementOp::Add => binary(out, a, b, |x, y| x + y),
        ElementOp::Sub => binary(out, a, b, |x, y| x - y),
        ElementOp::Mul => binary(out, a, b, |x, y| x * y),
        ElementOp::Div => binary(out, a, b, |x, y| x / y),
        // TF's Maximum and Minimum propagate a NaN of either input; otherwise, as std::max and
        // std::min, they return the first of equal values (-0 and 0).
        ElementOp::Maximum => binary(out, a, b, |x, y| {
            if x < y || (y.is_nan() && !x.is_nan()) {
                y
            } else {
                x
            }
        }),
        ElementOp::Minimum => binary(out, a, b, |x, y| {
            if y < x || (y.is_nan() && !x.is_nan()) {
                y
            } else {
                x
            }
        }),
        ElementOp::Neg => unary(out, a, |x| -x),
        ElementOp::Square => unary(out, a, |x| x * x),
        ElementOp::Sqrt => unary(out, a, f32::sqrt),
        // TF's Relu keeps a NaN and makes -0 (and, flushed, a denormal) +0.
        ElementOp::Relu => unary(out, a, |x| if x <= 0.0 { 0.0 } else { x }),
        // TF's Sign makes NaN and zeros 0, and a denormal a denormal that its Relu flushes.
        ElementOp::Step => unary(out, a, |x| if x > 0.0 { 1.0 } else { 0.0 }),
    }
}

#[inline(always)]
fn unary(out: &mut [f32], a: Operand<'_>, f: impl Fn(f32) -> f32) {
    match a {
        Operand::Block(a) => out.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x)),
        Operand::Scalar(x) => out.fill(f(x)),
    }
}

#[inline(always)]
fn binary(out: &mut [f32], a: Operand<'_>, b: Operand<'_>, f: impl Fn(f32, f32) -> f32) {
    match (a, b) {
        (Operand::Block(a), Operand::Block(b)) => out
            .iter_mut()
            .zip(a.iter().zip(b))
            .for_each(|(o, (&x, &y))| *o = f(x, y)),
        (Operand::Block(a), Operand::Scalar(y)) => {
            out.iter_mut().zip(a).for_each(|(o, &x)| *o = f(x, y))
        }
        (Operand::Scalar(x), Operand::Block(b)) => {
            out.iter_mut().zip(b).for_each(|(o, &y)| *o = f(x, y))
        }
        (Operand::Scalar(x), Operand::Scalar(y)) => out.fill(f(x, y)),
    }
}

pub struct Elementwise {
    program: Program,
}

impl CpuKernel for Elementwise {
    const SPEC: OpSpec = OpSpec {
        name: c"TfjsNodeRs>Elementwise",
        inputs: &[c"inputs: N * float"],
        outputs: &[c"outputs: M * float"],
        attrs: &[
            c"N: int >= 1",
            c"M: int >= 1",
            c"program: list(int)",
            c"results: list(int)",
        ],
    };

    fn new(attrs: &KernelAttrs) -> Result<Self> {
        let inputs = attrs.int(c"N")?;
        let inputs = usize::try_from(inputs)
            .map_err(|_| Error::Range(format!("N must be >= 1, got {inputs}")))?;
        Ok(Elementwise {
            program: Program::from_attrs(
                inputs,
                &attrs.int_list(c"program")?,
                &attrs.int_list(c"results")?,
            )?,
        })
    }

    fn compute(&self, ctx: &KernelContext) -> Result<()> {
        let count = ctx.input_count();
        // The outputs' dims are the first input's, read from a handle let go at once: TF gives
        // an output the buffer of an input only while nothing else holds it.
        let dims = ctx.input(0)?.dims();
        let mut unused: Vec<usize> = (0..count).collect();
        let mut in_output: Vec<Option<usize>> = vec![None; count];
        let mut outputs = Vec::with_capacity(ctx.output_count());
        for k in 0..ctx.output_count() {
            let (output, forwarded) = ctx.forward_f32_output(k, &dims, &unused)?;
            if let Some(j) = forwarded {
                unused.retain(|&c| c != j);
                in_output[j] = Some(k);
            }
            outputs.push(output);
        }
        let tensors = (0..count)
            .map(|j| match in_output[j] {
                Some(_) => Ok(None),
                None => ctx.input(j).map(Some),
            })
            .collect::<Result<Vec<_>>>()?;
        let len = dims
            .iter()
            .try_fold(1usize, |n, &d| n.checked_mul(usize::try_from(d).ok()?))
            .ok_or_else(|| Error::Range(format!("shape {dims:?} is too large")))?;
        let inputs = tensors
            .iter()
            .zip(&in_output)
            .map(|(tensor, &k)| match (tensor, k) {
                (Some(tensor), _) => Input::of(tensor, &dims, len),
                (None, Some(k)) => Ok(Input::InOutput(k)),
                (None, None) => Err(Error::Invalid("an input is missing".into())),
            })
            .collect::<Result<Vec<_>>>()?;
        let outs = outputs
            .iter_mut()
            .map(|t| t.f32s_mut())
            .collect::<Result<Vec<_>>>()?;
        self.program.run(&inputs, outs, len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn program(
        inputs: usize,
        instructions: &[(ElementOp, usize, usize)],
        results: &[usize],
    ) -> Program {
        let instructions = instructions
            .iter()
            .map(|&(op, a, b)| Instruction { op, a, b })
            .collect();
        Program {
            inputs,
            instructions,
            results: results.to_vec(),
        }
    }

    #[test]
    fn a_chain_gives_each_op_s_values_over_blocks_and_scalars() {
        // out0 = relu(x * 2 - y), out1 = sqrt(square(x)) / max(y, x); 1300 elements: 3 blocks.
        let p = program(
            3,
            &[
                (ElementOp::Mul, 0, 2),
                (ElementOp::Sub, 3, 1),
                (ElementOp::Relu, 4, 4),
                (ElementOp::Square, 0, 0),
                (ElementOp::Sqrt, 6, 6),
                (ElementOp::Maximum, 1, 0),
                (ElementOp::Div, 7, 8),
            ],
            &[5, 9],
        );
        let (attrs, results) = p.to_attrs();
        assert_eq!(Program::from_attrs(3, &attrs, &results).unwrap(), p);
        let len = 1300;
        let x: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
        let y: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
        let (mut out0, mut out1) = (vec![0f32; len], vec![0f32; len]);
        let inputs = [Input::Values(&x), Input::Values(&y), Input::Values(&[2.0])];
        p.run(&inputs, vec![&mut out0, &mut out1], len).unwrap();
        for i in 0..len {
            let relu = (x[i] * 2.0 - y[i]).max(0.0);
            assert_eq!(out0[i].to_bits(), relu.to_bits(), "out0[{i}]");
            let ratio = (x[i] * x[i]).sqrt() / if y[i] > x[i] { y[i] } else { x[i] };
            assert_eq!(out1[i].to_bits(), ratio.to_bits(), "out1[{i}]");
        }
    }

    #[test]
    fn a_vector_along_the_last_axis_repeats_across_blocks_and_parts() {
        // out = x * v - v over 260 rows of 5 (1300 elements: 3 blocks, whose starts are not
        // multiples of 5); then 300000 rows of 3, split across threads.
        let p = program(2, &[(ElementOp::Mul, 0, 1), (ElementOp::Sub, 2, 1)], &[3]);
        for (rows, columns) in [(260, 5), (300_000, 3)] {
            let len = rows * columns;
            let x: Vec<f32> = (0..len).map(|i| i as f32 * 0.25).collect();
            let v: Vec<f32> = (0..columns).map(|c| c as f32 + 1.5).collect();
            let mut out = vec![0f32; len];
            p.run(
                &[Input::Values(&x), Input::Channels(&v)],
                vec![&mut out],
                len,
            )
            .unwrap();
            for i in 0..len {
                let c = v[i % columns];
                assert_eq!(out[i], x[i] * c - c, "out[{i}]");
            }
        }
        assert!(broadcasts(&[1, 1, 5], &[4, 3, 5]) && broadcasts(&[5], &[4, 3, 5]));
        assert!(broadcasts(&[], &[4, 3, 5]) && broadcasts(&[1, 1], &[4, 3, 5]));
        assert!(!broadcasts(&[3, 1], &[4, 3, 5]) && !broadcasts(&[1, 1, 1, 5], &[4, 5]));
    }

    #[test]
    fn nan_and_signed_zero_follow_tf() {
        let p = program(
            2,
            &[
                (ElementOp::Relu, 0, 0),
                (ElementOp::Maximum, 0, 1),
                (ElementOp::Minimum, 1, 0),
            ],
            &[2, 3, 4],
        );
        let x = [f32::NAN, -0.0, 0.0, -2.0, 3.0];
        let y = [1.0, 0.0, -0.0, f32::NAN, 3.0];
        let mut outs = [[0f32; 5]; 3];
        let [a, b, c] = &mut outs;
        p.run(&[Input::Values(&x), Input::Values(&y)], vec![a, b, c], 5)
            .unwrap();
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&outs[0])[1..], bits(&[0.0, 0.0, 0.0, 3.0])[..]);
        assert!(outs[0][0].is_nan());
        assert!(outs[1][0].is_nan() && outs[1][3].is_nan() && outs[2][0].is_nan());
        // max(-0, 0) is -0 and min(0, -0) is 0: the first of equal values.
        assert_eq!(bits(&outs[1][1..3]), bits(&[-0.0, 0.0]));
        assert_eq!(bits(&outs[2][1..3]), bits(&[0.0, -0.0]));
    }

    #[test]
    fn an_input_in_an_output_s_buffer_is_read_before_it_is_written() {
        // out = x * x + y, with x in the output's buffer: 1100 elements, 3 blocks.
        let p = program(
            2,
            &[(ElementOp::Square, 0, 0), (ElementOp::Add, 2, 1)],
            &[3],
        );
        let x: Vec<f32> = (0..1100).map(|i| i as f32 * 0.5).collect();
        let y: Vec<f32> = (0..1100).map(|i| 1.0 - i as f32).collect();
        let mut out = x.clone();
        p.run(
            &[Input::InOutput(0), Input::Values(&y)],
            vec![&mut out],
            1100,
        )
        .unwrap();
        for i in 0..1100 {
            assert_eq!(out[i], x[i] * x[i] + y[i], "out[{i}]");
        }
    }

    #[test]
    fn malformed_programs_and_inputs_are_errors() {
        assert!(
            Program::from_attrs(1, &[0, 0, 1], &[1]).is_err(),
            "b after the op"
        );
        assert!(
            Program::from_attrs(1, &[99, 0, 0], &[1]).is_err(),
            "unknown op"
        );
        assert!(
            Program::from_attrs(1, &[6, 0, 0], &[2]).is_err(),
            "result out of range"
        );
        assert!(Program::from_attrs(0, &[], &[0]).is_err(), "no inputs");
        assert!(
            Program::from_attrs(1, &[6, 0, 0], &[0]).is_err(),
            "an input as a result"
        );
        let p = program(2, &[(ElementOp::Add, 0, 1)], &[2]);
        let mut out = vec![0f32; 4];
        let err = p.run(
            &[Input::Values(&[1.0; 4]), Input::Values(&[1.0; 3])],
            vec![&mut out],
            4,
        );
        assert!(err.is_err(), "an input of neither size");
    }
}
