//! `TfjsNodeRs>ColumnSums`: the sums (or means) of a float tensor over every axis but the last,
//! as TF's `Sum` and `Mean` with those axes compute them. A training step takes them for every
//! bias's gradient and for a batch norm's statistics and gradients (over the N, H and W of
//! NHWC activations); TF's reduction kernel made about 8 GB/s of them here (2.3 ms for a
//! convnet's [128, 24, 24, 64] bias gradient, 0.15-0.2 ms for a [32, 32, 32, 16] one), where
//! one core reads 28-43 GB/s.
//!
//! The rows are summed in blocks of `BLOCK` elements, each block's sums added to the total:
//! the error stays that of blocked sums (TF's own float reductions are blocked too, so both are
//! within float tolerance of the exact sum, not equal to each other bit for bit).

use super::threads;
use crate::error::{Error, Result};
use crate::tf::custom_op::{CpuKernel, KernelAttrs, KernelContext, OpSpec};

/// Elements summed apart before they are added to the total (64 KB: in the L2 cache).
const BLOCK: usize = 1 << 14;
/// Elements, at least, of the rows summed side by side: a long run of independent sums that
/// fills the vector registers whatever the number of columns (a bias of 16 channels would
/// otherwise be a loop of 16).
const LANES: usize = 256;

/// The columns of `values` (rows of `columns` floats each) summed into `sums`, a part of the
/// rows on each core (`threads`), whose sums are then added in order. In a training step the
/// values were just written by a kernel on every core, and read back from the caches of both
/// (the ResNet block's step: 20.7 -> 19.9 ms against one thread).
fn column_sums(values: &[f32], columns: usize, sums: &mut [f32]) -> Result<()> {
    sums.fill(0.0);
    if columns == 0 {
        return Ok(());
    }
    let rows = values.len() / columns;
    let ranges = threads::ranges(rows, threads::parts(values.len()), 1);
    let mut partials = vec![0f32; ranges.len() * columns];
    let parts: Vec<_> = ranges
        .into_iter()
        .zip(partials.chunks_mut(columns))
        .collect();
    threads::run_parts(parts, |(range, part)| {
        sum_rows(
            &values[range.start * columns..range.end * columns],
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

/// One part's column sums: whole rows, `LANES` elements or a few more at a time, are added to
/// as many rows of sums, which are folded into the columns' at the end.
fn sum_rows(values: &[f32], columns: usize, sums: &mut [f32]) {
    let width = LANES.div_ceil(columns) * columns;
    let mut total = vec![0f32; width];
    let mut block = vec![0f32; width];
    for rows in values.chunks(BLOCK.div_ceil(width) * width) {
        block.fill(0.0);
        let mut wide = rows.chunks_exact(width);
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
        inputs: &[c"values: float"],
        outputs: &[c"sums: float"],
        attrs: &[c"mean: bool", c"keep_dims: bool"],
    };

    fn new(attrs: &KernelAttrs) -> Result<Self> {
        Ok(ColumnSums {
            mean: attrs.bool(c"mean")?,
            keep_dims: attrs.bool(c"keep_dims")?,
        })
    }

    fn compute(&self, ctx: &KernelContext) -> Result<()> {
        let input = ctx.input(0)?;
        let dims = input.dims();
        let out_dims = sums_dims(&dims, self.keep_dims)
            .ok_or_else(|| Error::Invalid("column sums of a scalar".into()))?;
        let mut output = ctx.allocate_f32_output(0, &out_dims)?;
        let sums = output.f32s_mut()?;
        let values = input.f32s()?;
        column_sums(values, sums.len(), sums)?;
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
        column_sums(&values, 3, &mut sums).unwrap();
        for (c, &got) in sums.iter().enumerate() {
            let exact: f64 = (0..rows).map(|r| (((r * 3 + c) % 7) as f64) - 3.0).sum();
            assert_eq!(got as f64, exact, "column {c}");
        }
    }

    #[test]
    fn no_rows_or_columns_sum_to_zeros() {
        let mut sums = [1f32; 4];
        column_sums(&[], 4, &mut sums).unwrap();
        assert_eq!(sums, [0.0; 4]);
        column_sums(&[], 0, &mut []).unwrap();
    }
}
