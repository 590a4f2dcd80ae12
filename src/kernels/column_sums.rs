//! `TfjsNodeRs>ColumnSums`: the sums (or means) over every axis but the last of a float tensor,
//! or of the product of its inputs (the first a tensor, the others of its shape, one value, or
//! a vector along the last axis), as TF's `Sum` and `Mean` with those axes compute them of the
//! tensor or of the `Mul`s' result. A training step takes them for every bias's gradient and
//! for a batch norm's statistics and gradients (over the N, H and W of NHWC activations; the
//! gradients sum products); TF's reduction kernel made about 8 GB/s of them here (2.3 ms for a
//! convnet's [128, 24, 24, 64] bias gradient, 0.15-0.2 ms for a [32, 32, 32, 16] one), where
//! one core reads 28-43 GB/s.
//!
//! The rows are summed in blocks of `BLOCK` elements, each block's sums added to the total:
//! the error stays that of blocked sums (TF's own float reductions are blocked too, so both are
//! within float tolerance of the exact sum, not equal to each other bit for bit).

use std::ops::Range;

use super::threads;
use crate::error::{Error, Result};
use crate::tf::custom_op::{CpuKernel, KernelAttrs, KernelContext, OpSpec};

/// Elements summed apart before they are added to the total (64 KB: in the L2 cache).
const BLOCK: usize = 1 << 14;
/// Elements, at least, of the rows summed side by side: a long run of independent sums that
/// fills the vector registers whatever the number of columns (a bias of 16 channels would
/// otherwise be a loop of 16).
const LANES: usize = 256;

/// A factor of the values summed: a tensor of their shape, one value, or a vector along the
/// last axis (one value per column).
#[derive(Clone, Copy)]
pub enum Factor<'a> {
    Values(&'a [f32]),
    Scalar(f32),
    Columns(&'a [f32]),
}

impl<'a> Factor<'a> {
    /// `values`, a factor of `len` values of `columns` columns.
    fn of(values: &'a [f32], len: usize, columns: usize) -> Result<Factor<'a>> {
        match values {
            _ if values.len() == len => Ok(Factor::Values(values)),
            &[value] => Ok(Factor::Scalar(value)),
            _ if values.len() == columns => Ok(Factor::Columns(values)),
            _ => Err(Error::Range(format!(
                "a factor of {} values of a sum over {len} values of {columns} columns",
                values.len()
            ))),
        }
    }
}

/// The columns of the product of `factors` (`len` values, rows of `columns`; the first
/// factor a tensor of them) summed into `sums`, a part of the rows on each core (`threads`),
/// whose sums are then added in order. In a training step the values were just written by a
/// kernel on every core, and read back from the caches of both (the ResNet block's step: 20.7
/// -> 19.9 ms against one thread).
fn column_sums(factors: &[Factor<'_>], len: usize, columns: usize, sums: &mut [f32]) -> Result<()> {
    sums.fill(0.0);
    if columns == 0 || len == 0 {
        return Ok(());
    }
    let rows = len / columns;
    let ranges = threads::ranges(rows, threads::parts(len), 1);
    let mut partials = vec![0f32; ranges.len() * columns];
    let parts: Vec<_> = ranges
        .into_iter()
        .zip(partials.chunks_mut(columns))
        .collect();
    threads::run_parts(parts, |(range, part)| {
        sum_rows(
            factors,
            range.start * columns..range.end * columns,
            columns,
            part,
        );
        Ok(())
    })?;
    for part in partials.chunks(columns) {
        sums.iter_mut().zip(part).for_each(|(s, &p)| *s += p);
    }
    Ok(())
}

/// One part's column sums, of the values `range` (whole rows): `LANES` values or a few more at
/// a time are added to as many rows of sums, which are folded into the columns' at the end. A
/// product is computed a block at a time (the factors multiplied in order, as TF's `Mul`
/// ops would).
fn sum_rows(factors: &[Factor<'_>], range: Range<usize>, columns: usize, sums: &mut [f32]) {
    let width = LANES.div_ceil(columns) * columns;
    let chunk = BLOCK.div_ceil(width) * width;
    let mut total = vec![0f32; width];
    let mut block = vec![0f32; width];
    let mut product = Vec::new();
    for start in range.clone().step_by(chunk) {
        let end = (start + chunk).min(range.end);
        let values = match factors {
            [Factor::Values(values)] => &values[start..end],
            _ => {
                multiply(factors, start..end, columns, &mut product);
                &product[..]
            }
        };
        block.fill(0.0);
        let mut wide = values.chunks_exact(width);
        for run in &mut wide {
            block.iter_mut().zip(run).for_each(|(s, &x)| *s += x);
        }
        let rest = wide.remainder();
        block.iter_mut().zip(rest).for_each(|(s, &x)| *s += x);
        total.iter_mut().zip(&block).for_each(|(t, &b)| *t += b);
    }
    for row in total.chunks_exact(columns) {
        sums.iter_mut().zip(row).for_each(|(s, &x)| *s += x);
    }
}

/// The product of `factors` over the values `range` (whole rows of `columns`) into `product`.
fn multiply(factors: &[Factor<'_>], range: Range<usize>, columns: usize, product: &mut Vec<f32>) {
    product.clear();
    product.resize(range.len(), 1.0);
    for (k, factor) in factors.iter().enumerate() {
        match *factor {
            Factor::Values(values) if k == 0 => product.copy_from_slice(&values[range.clone()]),
            Factor::Values(values) => product
                .iter_mut()
                .zip(&values[range.clone()])
                .for_each(|(p, &x)| *p *= x),
            Factor::Scalar(x) => product.iter_mut().for_each(|p| *p *= x),
            Factor::Columns(vector) => product.chunks_exact_mut(columns).for_each(|row| {
                row.iter_mut().zip(vector).for_each(|(p, &x)| *p *= x);
            }),
        }
    }
}

/// The dims of the column sums of a tensor of `dims` (not empty): its last, alone or after a 1
/// for each other (`keep_dims`).
pub fn sums_dims(dims: &[i64], keep_dims: bool) -> Option<Vec<i64>> {
    let (&columns, leading) = dims.split_last()?;
    Some(if keep_dims {
        leading.iter().map(|_| 1).chain([columns]).collect()
    } else {
        vec![columns]
    })
}

pub struct ColumnSums {
    mean: bool,
    keep_dims: bool,
}

impl CpuKernel for ColumnSums {
    const SPEC: OpSpec = OpSpec {
        name: c"TfjsNodeRs>ColumnSums",
        inputs: &[c"factors: N * float"],
        outputs: &[c"sums: float"],
        attrs: &[c"N: int >= 1", c"mean: bool", c"keep_dims: bool"],
    };

    fn new(attrs: &KernelAttrs) -> Result<Self> {
        Ok(ColumnSums {
            mean: attrs.bool(c"mean")?,
            keep_dims: attrs.bool(c"keep_dims")?,
        })
    }

    fn compute(&self, ctx: &KernelContext) -> Result<()> {
        let first = ctx.input(0)?;
        let dims = first.dims();
        let out_dims = sums_dims(&dims, self.keep_dims)
            .ok_or_else(|| Error::Invalid("column sums of a scalar".into()))?;
        let mut output = ctx.allocate_f32_output(0, &out_dims)?;
        let sums = output.f32s_mut()?;
        let len = first.f32s()?.len();
        let columns = sums.len();
        let tensors = (1..ctx.input_count())
            .map(|k| ctx.input(k))
            .collect::<Result<Vec<_>>>()?;
        let factors = std::iter::once(&first)
            .chain(&tensors)
            .map(|t| t.f32s().and_then(|values| Factor::of(values, len, columns)))
            .collect::<Result<Vec<_>>>()?;
        if !matches!(factors.first(), Some(Factor::Values(_))) {
            return Err(Error::Invalid(
                "the first factor of column sums must be whole".into(),
            ));
        }
        column_sums(&factors, len, columns, sums)?;
        if self.mean {
            // As TF's Mean: the sum divided by the count, a float (0 / 0 for no rows).
            let rows = dims[..dims.len() - 1].iter().product::<i64>() as f32;
            sums.iter_mut().for_each(|s| *s /= rows);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_each_column_over_parts_and_blocks() {
        // 300000 rows of 3: several parts and blocks, and a last block of fewer rows.
        let rows = 300_001;
        let values: Vec<f32> = (0..rows * 3).map(|i| ((i % 7) as f32) - 3.0).collect();
        let mut sums = [0f32; 3];
        column_sums(&[Factor::Values(&values)], values.len(), 3, &mut sums).unwrap();
        for (c, &got) in sums.iter().enumerate() {
            let exact: f64 = (0..rows).map(|r| (((r * 3 + c) % 7) as f64) - 3.0).sum();
            assert_eq!(got as f64, exact, "column {c}");
        }
    }

    #[test]
    fn sums_a_product_of_a_tensor_a_vector_and_a_scalar() {
        // 70001 rows of 4 (two parts), times a vector per column and 0.5.
        let (rows, columns) = (70_001, 4);
        let x: Vec<f32> = (0..rows * columns)
            .map(|i| ((i % 5) as f32) - 2.0)
            .collect();
        let y: Vec<f32> = (0..rows * columns).map(|i| (i % 3) as f32).collect();
        let v = [1.0, -2.0, 4.0, 0.25];
        let factors = [
            Factor::Values(&x),
            Factor::Columns(&v),
            Factor::Values(&y),
            Factor::Scalar(0.5),
        ];
        let mut sums = [0f32; 4];
        column_sums(&factors, x.len(), columns, &mut sums).unwrap();
        for (c, &got) in sums.iter().enumerate() {
            let exact: f64 = (0..rows)
                .map(|r| r * columns + c)
                .map(|i| x[i] as f64 * v[c] as f64 * y[i] as f64 * 0.5)
                .sum();
            assert_eq!(got as f64, exact, "column {c}");
        }
        assert!(
            Factor::of(&[1.0; 3], 8, 4).is_err(),
            "neither whole, one, nor a column each"
        );
    }

    #[test]
    fn no_rows_or_columns_sum_to_zeros() {
        let mut sums = [1f32; 4];
        column_sums(&[Factor::Values(&[])], 0, 4, &mut sums).unwrap();
        assert_eq!(sums, [0.0; 4]);
        column_sums(&[Factor::Values(&[])], 0, 0, &mut []).unwrap();
    }
}
