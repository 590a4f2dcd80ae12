//! `TfjsNodeRs>SingleChannelConv2D`: a 2-D convolution of a one-channel NHWC input
//! `[n, h, w, 1]` by one `[kh, kw, 1, 1]` filter, stride and dilation 1, zero padding
//! `pads = [top, bottom, left, right]`. TF hands such a conv to oneDNN's depthwise kernel,
//! which measured 200-400 µs on `[32,28,28,1] * [3,3,1,1]` here (it splits the work across the
//! intra-op pool, whose hand-offs cost more than the arithmetic); this kernel, which adds each
//! filter tap times the shifted padded image to a sum that the compiler vectorizes, takes
//! 35-60 µs per call through tfjs on one thread.

use super::{Extent, Images, Pads};
use crate::error::{Error, Result};
use crate::tf::custom_op::{CpuKernel, KernelAttrs, KernelContext, OpSpec};

pub struct SingleChannelConv2D {
    pads: Pads,
}

impl CpuKernel for SingleChannelConv2D {
    const SPEC: OpSpec = OpSpec {
        name: c"TfjsNodeRs>SingleChannelConv2D",
        inputs: &[c"input: float", c"filter: float"],
        outputs: &[c"output: float"],
        attrs: &[c"pads: list(int)"],
    };

    fn new(attrs: &KernelAttrs) -> Result<Self> {
        Ok(SingleChannelConv2D {
            pads: Pads::new(attrs.ints::<4>(c"pads")?)?,
        })
    }

    fn compute(&self, ctx: &KernelContext) -> Result<()> {
        let input = ctx.input(0)?;
        let filter = ctx.input(1)?;
        let geometry = Geometry::new(&input.dims(), &filter.dims(), self.pads)?;
        let mut output = ctx.allocate_f32_output(0, &geometry.output.dims())?;
        convolve(input.f32s()?, filter.f32s()?, output.f32s_mut()?, &geometry)
    }
}

/// Sizes of one call, checked against each other.
#[derive(Debug, PartialEq)]
struct Geometry {
    input: Images,
    filter: Extent,
    output: Images,
    pads: Pads,
}

impl Geometry {
    fn new(input: &[i64], filter: &[i64], pads: Pads) -> Result<Geometry> {
        let &[filter_height, filter_width, 1, 1] = filter else {
            return Err(Error::Range(format!(
                "filter must be [height, width, 1, 1], got {filter:?}"
            )));
        };
        let input = Images::from_dims(input)?;
        let filter = Extent::new([filter_height, filter_width], "filter height and width")?;
        Ok(Geometry {
            input,
            filter,
            output: input.windowed(pads, filter, Extent::ONE)?,
            pads,
        })
    }
}

/// `output = input * filter` for buffers of `geometry`'s sizes. Per image, the zero-padded
/// plane (the input itself when there is no padding) is read as one flat run per filter tap:
/// `sums[i] += plane[i + ky * width + kx] * tap`, where `i = y * width + x` spans whole padded
/// rows. Long contiguous runs are what the compiler turns into vector code; the columns past the
/// output's width are computed and dropped when the rows are copied out.
fn convolve(input: &[f32], filter: &[f32], output: &mut [f32], g: &Geometry) -> Result<()> {
    let (source, k, out) = (g.input, g.filter, g.output);
    let sizes_agree = input.len() == source.len()
        && filter.len() == k.height * k.width
        && output.len() == out.len();
    if !sizes_agree {
        return Err(Error::Invalid(
            "buffer sizes do not match the shapes".into(),
        ));
    }
    if output.is_empty() {
        return Ok(());
    }
    let p = g.pads;
    let padded = p.top + p.bottom + p.left + p.right > 0;
    let (plane_height, plane_width) = (
        source.height + p.top + p.bottom,
        source.width + p.left + p.right,
    );
    let mut plane = vec![
        0.0f32;
        if padded {
            plane_height * plane_width
        } else {
            0
        }
    ];
    let span = out.height * plane_width;
    let mut sums = vec![0.0f32; span];
    for (image, out_image) in output.chunks_exact_mut(out.image_len()).enumerate() {
        let image = &input[image * source.image_len()..][..source.image_len()];
        let plane: &[f32] = if padded {
            for (y, row) in image.chunks_exact(source.width.max(1)).enumerate() {
                plane[(y + p.top) * plane_width + p.left..][..source.width].copy_from_slice(row);
            }
            &plane
        } else {
            image
        };
        sums.fill(0.0);
        for ky in 0..k.height {
            for kx in 0..k.width {
                let tap = filter[ky * k.width + kx];
                let offset = ky * plane_width + kx;
                // The last row's final `kx` sums would read past the plane; they are columns
                // past the output's width.
                let len = (span - kx).min(plane.len() - offset);
                for (sum, &value) in sums[..len].iter_mut().zip(&plane[offset..offset + len]) {
                    *sum += value * tap;
                }
            }
        }
        for (out_row, sum_row) in out_image
            .chunks_exact_mut(out.width)
            .zip(sums.chunks_exact(plane_width))
        {
            out_row.copy_from_slice(&sum_row[..out.width]);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pads(top: i64, bottom: i64, left: i64, right: i64) -> Pads {
        Pads::new([top, bottom, left, right]).unwrap()
    }

    fn run(input: &[f32], dims: [i64; 4], filter: &[f32], fdims: [i64; 4], p: Pads) -> Vec<f32> {
        let g = Geometry::new(&dims, &fdims, p).unwrap();
        let mut out = vec![f32::NAN; g.output.len()];
        convolve(input, filter, &mut out, &g).unwrap();
        out
    }

    #[test]
    fn valid_conv_matches_hand_computed_sums() {
        // 3x3 input 1..9, 2x2 filter [[1, 0], [0, -1]]: x[i][j] - x[i+1][j+1] = -4 everywhere.
        let input: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let out = run(
            &input,
            [1, 3, 3, 1],
            &[1., 0., 0., -1.],
            [2, 2, 1, 1],
            pads(0, 0, 0, 0),
        );
        assert_eq!(out, vec![-4., -4., -4., -4.]);
    }

    #[test]
    fn padding_reads_zeros_outside_the_image() {
        // 2x2 input [[1, 2], [3, 4]], 3x3 filter of ones, 'same' padding: each output is the
        // sum of its in-image neighbours, i.e. all four values.
        let out = run(
            &[1., 2., 3., 4.],
            [1, 2, 2, 1],
            &[1.; 9],
            [3, 3, 1, 1],
            pads(1, 1, 1, 1),
        );
        assert_eq!(out, vec![10., 10., 10., 10.]);
        // Asymmetric: only a right column of padding, 1x2 filter [1, 10].
        let out = run(
            &[1., 2., 3., 4.],
            [1, 2, 2, 1],
            &[1., 10.],
            [1, 2, 1, 1],
            pads(0, 0, 0, 1),
        );
        assert_eq!(out, vec![21., 2., 43., 4.]);
    }

    #[test]
    fn images_of_a_batch_stay_apart() {
        let input = [1., 2., 3., 4., 10., 20., 30., 40.];
        let out = run(
            &input,
            [2, 2, 2, 1],
            &[1., 1., 1., 1.],
            [2, 2, 1, 1],
            pads(0, 0, 0, 0),
        );
        assert_eq!(out, vec![10., 100.]);
    }

    #[test]
    fn shapes_that_do_not_fit_are_errors() {
        let none = pads(0, 0, 0, 0);
        assert!(Geometry::new(&[1, 2, 2, 3], &[1, 1, 1, 1], none).is_err());
        assert!(Geometry::new(&[1, 1, 2, 1], &[3, 1, 1, 1], none).is_err());
        // A filter one larger than the input leaves an empty output, as in TF and tfjs.
        let g = Geometry::new(&[1, 2, 2, 1], &[3, 3, 1, 1], none).unwrap();
        assert_eq!(g.output.dims(), [1, 0, 0, 1]);
        assert!(Geometry::new(&[1, 2, 2, 1], &[0, 1, 1, 1], none).is_err());
        assert!(Geometry::new(&[2, 2, 1], &[1, 1, 1, 1], none).is_err());
        assert!(Pads::new([0, -1, 0, 0]).is_err());
        let g = Geometry::new(&[0, 5, 5, 1], &[3, 3, 1, 1], none).unwrap();
        assert_eq!(g.output.dims(), [0, 3, 3, 1]);
        assert!(convolve(&[], &[0.; 9], &mut [], &g).is_ok());
    }
}
