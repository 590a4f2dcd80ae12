//! `TfjsNodeRs>FewChannelConv2D`: a 2-D convolution of an NHWC input of few channels
//! `[n, h, w, c]` by a filter `[kh, kw, c, o]`, stride and dilation 1, zero padding
//! `pads = [top, bottom, left, right]`; then, fused, a bias of the `o` filters (when `biases`
//! is 1) and a ReLU (`relu`). TF's kernels are built for many channels:
//! - one channel by one filter: TF hands it to oneDNN's depthwise kernel, which measured
//!   200-400 µs on `[32,28,28,1] * [3,3,1,1]` here (it splits the work across the intra-op
//!   pool, whose hand-offs cost more than the arithmetic); this kernel takes 35-60 µs per call
//!   through tfjs;
//! - an image model's first layer (a few channels, a few filters): oneDNN creates a primitive
//!   (and generates its code) for each new input shape, 0.2-0.3 ms each time an image of a new
//!   size comes, where this kernel has nothing to set up, and computes small images faster
//!   (js/kernels/families/conv.js has the numbers and the sizes it is used for);
//! - a first layer of one channel and many filters (an MNIST convnet's): oneDNN's convolution
//!   runs a GEMM whose inner dimension is the 9 taps, then the bias and the ReLU are passes of
//!   their own over the whole output.
//!
//! Both work on each image inside its zero padding, and vectorize along the axis that has the
//! lanes: with several filters, the filters (`Conv::rows`: each tap's weights for a group of
//! 8 or 16 filters times each of `PIXELS` output pixels' input value); with one channel by one
//! filter, the positions (`Conv::planes`: one long run per tap over the whole image). Measured
//! on the kernel alone (2 cores, AVX-512), one channel by 32 filters on [32, 28, 28, 1]: 130-160
//! µs, where the loop that vectorized along 8 filters took 630; through tfjs, with a bias and a
//! ReLU, 240-270 µs against 635-909 for TF's Conv2D, BiasAdd and Relu.

use std::ops::Range;

use super::{threads, with_widest_vectors, Extent, Images, Pads};
use crate::error::{Error, Result};
use crate::tf::custom_op::{CpuKernel, KernelAttrs, KernelContext, OpSpec};

pub struct FewChannelConv2D {
    pads: Pads,
    relu: bool,
}

impl CpuKernel for FewChannelConv2D {
    const SPEC: OpSpec = OpSpec {
        name: c"TfjsNodeRs>FewChannelConv2D",
        inputs: &[c"input: float", c"filter: float", c"bias: biases * float"],
        outputs: &[c"output: float"],
        attrs: &[
            c"pads: list(int)",
            c"biases: int >= 0 = 0",
            c"relu: bool = false",
        ],
    };

    fn new(attrs: &KernelAttrs) -> Result<Self> {
        if attrs.int(c"biases")? > 1 {
            return Err(Error::Range("biases must be 0 or 1".into()));
        }
        Ok(FewChannelConv2D {
            pads: Pads::new(attrs.ints::<4>(c"pads")?)?,
            relu: attrs.bool(c"relu")?,
        })
    }

    fn compute(&self, ctx: &KernelContext) -> Result<()> {
        let input = ctx.input(0)?;
        let filter = ctx.input(1)?;
        let geometry = Geometry::new(&input.dims(), &filter.dims(), self.pads)?;
        let bias = match ctx.input_count() {
            3 => Some(ctx.input(2)?),
            _ => None,
        };
        if let Some(bias) = &bias {
            if bias.dims() != [geometry.filters as i64] {
                return Err(Error::Range(format!(
                    "bias must be [{}] (one per filter), got {:?}",
                    geometry.filters,
                    bias.dims()
                )));
            }
        }
        let epilogue = Epilogue {
            bias: bias.as_ref().map(|b| b.f32s()).transpose()?,
            relu: self.relu,
        };
        let mut output = ctx.allocate_f32_output(0, &geometry.output_dims())?;
        convolve(
            input.f32s()?,
            filter.f32s()?,
            &epilogue,
            output.f32s_mut()?,
            &geometry,
        )
    }
}

/// What each sum becomes before it is stored: the filter's bias added (where the sums start,
/// or as they are stored), then a ReLU (`finish`).
struct Epilogue<'a> {
    bias: Option<&'a [f32]>,
    relu: bool,
}

impl Epilogue<'_> {
    /// A ReLU as TF's: negative values to zero, NaN kept.
    #[inline(always)]
    fn finish(&self, sum: f32) -> f32 {
        if self.relu && sum < 0.0 {
            0.0
        } else {
            sum
        }
    }
}

/// Sizes of one call, checked against each other.
#[derive(Debug, PartialEq)]
struct Geometry {
    input: Images,
    channels: usize,
    filter: Extent,
    filters: usize,
    output: Images,
    pads: Pads,
}

impl Geometry {
    fn new(input: &[i64], filter: &[i64], pads: Pads) -> Result<Geometry> {
        let (input, channels) = Images::with_channels(input)?;
        let &[filter_height, filter_width, filter_channels, filters] = filter else {
            return Err(Error::Range(format!(
                "filter must be [height, width, in channels, out channels], got {filter:?}"
            )));
        };
        if usize::try_from(filter_channels).ok() != Some(channels) {
            return Err(Error::Range(format!(
                "filter {filter:?} is for {filter_channels} input channels, the input has {channels}"
            )));
        }
        let filters = usize::try_from(filters)
            .ok()
            .filter(|&f| f > 0)
            .ok_or_else(|| Error::Range(format!("filter {filter:?} has no output channels")))?;
        let filter = Extent::new([filter_height, filter_width], "filter height and width")?;
        Ok(Geometry {
            input,
            channels,
            filter,
            filters,
            output: input.windowed(pads, filter, Extent::ONE)?,
            pads,
        })
    }

    fn output_dims(&self) -> [i64; 4] {
        let [batch, height, width, _] = self.output.dims();
        [batch, height, width, self.filters as i64]
    }
}

/// `output = input * filter`, each sum finished by `epilogue`, for buffers of `geometry`'s
/// sizes (see the module's comment).
fn convolve(
    input: &[f32],
    filter: &[f32],
    epilogue: &Epilogue,
    output: &mut [f32],
    g: &Geometry,
) -> Result<()> {
    let (source, k, out) = (g.input, g.filter, g.output);
    let (channels, filters) = (g.channels, g.filters);
    let taps = k.height * k.width * channels;
    let sizes_agree = input.len() == source.len() * channels
        && filter.len() == taps * filters
        && output.len() == out.len() * filters
        && epilogue.bias.is_none_or(|b| b.len() == filters);
    if !sizes_agree {
        return Err(Error::Invalid(
            "buffer sizes do not match the shapes".into(),
        ));
    }
    if output.is_empty() {
        return Ok(());
    }
    let p = g.pads;
    let padded = Padded {
        width: source.width + p.left + p.right,
        height: source.height + p.top + p.bottom,
        channels,
    };
    // Each image inside its zero padding; without padding, the input as it is.
    let padded_images;
    let images: &[f32] = if p.top + p.bottom + p.left + p.right == 0 {
        input
    } else {
        padded_images = pad(input, source, channels, p, padded);
        &padded_images
    };
    let conv = Conv {
        images,
        padded,
        filter: k,
        output: out,
        filters,
    };
    // The output's rows (of every image) in parts, one per core for large convs.
    let out_row_len = out.width * filters;
    let rows = source.batch * out.height;
    let parts = threads::parts(output.len() * taps / FMAS_PER_ELEMENT);
    // One channel by one filter: in runs over whole images (see `Conv::planes`).
    let plane_runs = channels == 1 && filters == 1;
    let align = if plane_runs { out.height } else { 1 };
    let mut split = Vec::with_capacity(parts);
    let mut rest = output;
    for range in threads::ranges(rows, parts, align) {
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(range.len() * out_row_len);
        split.push((range, part));
        rest = tail;
    }
    if plane_runs {
        threads::run_parts(split, |(rows, out)| {
            with_widest_vectors(
                #[inline(always)]
                || conv.planes(rows.start / conv.output.height, filter, epilogue, out),
            );
            Ok(())
        })
    } else {
        // One channel known when compiled: 2-4x faster there (compiled for 3, the loop took 5x
        // longer than for any count). Groups of 8 filters for up to 8: 16 lanes would store
        // each pixel's sums in two parts.
        match (conv.padded.channels, filters <= 8) {
            (1, true) => conv.all_rows::<1, 8>(split, filter, epilogue),
            (1, false) => conv.all_rows::<1, 16>(split, filter, epilogue),
            (_, true) => conv.all_rows::<0, 8>(split, filter, epilogue),
            (_, false) => conv.all_rows::<0, 16>(split, filter, epilogue),
        }
    }
}

/// The images of `input` (of `source`'s sizes and `channels`), each inside zero padding `p`
/// (`padded` in all).
fn pad(input: &[f32], source: Images, channels: usize, p: Pads, padded: Padded) -> Vec<f32> {
    let padded_len = padded.height * padded.width * channels;
    let mut images = vec![0.0f32; source.batch * padded_len];
    let row_len = source.width * channels;
    if row_len > 0 {
        for (y, row) in input.chunks_exact(row_len).enumerate() {
            let (image, y) = (y / source.height, y % source.height);
            let at = image * padded_len + ((y + p.top) * padded.width + p.left) * channels;
            images[at..at + row_len].copy_from_slice(row);
        }
    }
    images
}

/// Multiply-adds that take about as long as an element-wise op's element, for
/// `threads::parts`: what makes a conv large enough to split.
const FMAS_PER_ELEMENT: usize = 16;

/// Output pixels computed at once: each tap's weights are loaded once for all of them.
const PIXELS: usize = 4;

/// The filters in groups of `G` (the last one filled up with zeros), each group's taps
/// `[row][column][channel]` of `G` values; `filter` is `[row][column][channel][filter]`.
/// Of one tap, the bias: each group's sums start at its values (zeros without one).
fn filter_groups<const G: usize>(filter: &[f32], taps: usize, filters: usize) -> Vec<[f32; G]> {
    let mut weights = vec![[0.0f32; G]; filters.div_ceil(G) * taps];
    for (at, &value) in filter.iter().enumerate() {
        let (tap, f) = (at / filters, at % filters);
        weights[(f / G) * taps + tap][f % G] = value;
    }
    weights
}

/// An image's zero-padded size.
#[derive(Clone, Copy)]
struct Padded {
    width: usize,
    height: usize,
    channels: usize,
}

/// One call's padded images and what its sums go to.
struct Conv<'a> {
    images: &'a [f32],
    padded: Padded,
    filter: Extent,
    output: Images,
    filters: usize,
}

impl Conv<'_> {
    fn image(&self, image: usize) -> &[f32] {
        let len = self.padded.height * self.padded.width * self.padded.channels;
        &self.images[image * len..][..len]
    }

    /// Every part of `split` (output rows and where they go) by `rows`, on the kernels'
    /// threads, the filters in groups of `G`.
    fn all_rows<const C: usize, const G: usize>(
        &self,
        split: Vec<(Range<usize>, &mut [f32])>,
        filter: &[f32],
        epilogue: &Epilogue,
    ) -> Result<()> {
        let taps = self.filter.height * self.filter.width * self.padded.channels;
        let weights = filter_groups::<G>(filter, taps, self.filters);
        let starts = filter_groups::<G>(epilogue.bias.unwrap_or(&[]), 1, self.filters);
        threads::run_parts(split, |(rows, out)| {
            with_widest_vectors(
                #[inline(always)]
                || self.rows::<C, G>(rows, &weights, &starts, epilogue, out),
            );
            Ok(())
        })
    }

    /// Output rows `rows` (counted over every image), `PIXELS` output pixels at a time, each
    /// filter group's sums vectorized along the filters, starting at `starts` (a group's bias),
    /// finished by `epilogue`; a pixel's groups one after another, so that its sums are stored
    /// as one run. `C` is the channels: 1, or 0 for `self.padded.channels`, not known when
    /// compiled.
    #[inline(always)]
    fn rows<const C: usize, const G: usize>(
        &self,
        rows: Range<usize>,
        weights: &[[f32; G]],
        starts: &[[f32; G]],
        epilogue: &Epilogue,
        out: &mut [f32],
    ) {
        let taps = self.filter.height * self.filter.width * self.padded.channels;
        let out_row_len = self.output.width * self.filters;
        for (row, out_row) in rows.zip(out.chunks_exact_mut(out_row_len)) {
            let (image, y) = (row / self.output.height, row % self.output.height);
            let image = self.image(image);
            let mut x = 0;
            while x + PIXELS <= self.output.width {
                for (group, group_weights) in weights.chunks_exact(taps).enumerate() {
                    let sums =
                        self.sum_pixels::<PIXELS, C, G>(image, y, x, group_weights, starts[group]);
                    self.store(sums, x, group, epilogue, out_row);
                }
                x += PIXELS;
            }
            while x < self.output.width {
                for (group, group_weights) in weights.chunks_exact(taps).enumerate() {
                    let sums =
                        self.sum_pixels::<1, C, G>(image, y, x, group_weights, starts[group]);
                    self.store(sums, x, group, epilogue, out_row);
                }
                x += 1;
            }
        }
    }

    /// The sums of output pixels `x..x + N` of row `y`, of the filter group of `weights`, from
    /// `start`: for each tap, its weights times each pixel's input value.
    #[inline(always)]
    fn sum_pixels<const N: usize, const C: usize, const G: usize>(
        &self,
        image: &[f32],
        y: usize,
        x: usize,
        weights: &[[f32; G]],
        start: [f32; G],
    ) -> [[f32; G]; N] {
        // A channel count known when compiled makes the slicing below divisions by constants.
        let c = if C == 0 { self.padded.channels } else { C };
        let pw = self.padded.width;
        let kw = self.filter.width;
        let mut sums = [start; N];
        for (ky, row_weights) in weights.chunks_exact(kw * c).enumerate() {
            // The input these N pixels' sums read in row `y + ky`: zipped slices below, so that
            // no access is bounds-checked in the loop.
            let window = &image[((y + ky) * pw + x) * c..][..(N + kw - 1) * c];
            for (kx, tap_weights) in row_weights.chunks_exact(c).enumerate() {
                let pixels = window[kx * c..].chunks_exact(c);
                for (pixel_sums, pixel) in sums.iter_mut().zip(pixels) {
                    for (w, &value) in tap_weights.iter().zip(pixel) {
                        for lane in 0..G {
                            pixel_sums[lane] += value * w[lane];
                        }
                    }
                }
            }
        }
        sums
    }

    /// Stores the sums of pixels `x..x + N`, filter group `group`, into `out_row`, finished by
    /// `epilogue` (its bias is in the sums already).
    #[inline(always)]
    fn store<const N: usize, const G: usize>(
        &self,
        mut sums: [[f32; G]; N],
        x: usize,
        group: usize,
        epilogue: &Epilogue,
        out_row: &mut [f32],
    ) {
        let first = group * G;
        let count = G.min(self.filters - first);
        for (n, pixel_sums) in sums.iter_mut().enumerate() {
            for sum in pixel_sums.iter_mut() {
                *sum = epilogue.finish(*sum);
            }
            let at = (x + n) * self.filters + first;
            // A whole group as one fixed-size copy: the compiler makes it a vector store,
            // where a copy of a length known only at run time is a call to memmove.
            let whole = out_row.get_mut(at..at + G).filter(|_| count == G);
            if let Some(whole) = whole.and_then(|w| <&mut [f32; G]>::try_from(w).ok()) {
                *whole = *pixel_sums;
            } else {
                for (out, &sum) in out_row[at..at + count].iter_mut().zip(pixel_sums.iter()) {
                    *out = sum;
                }
            }
        }
    }

    /// Whole images from `first` on (of one channel, by one filter, whose only tap values are
    /// `taps`), vectorized along the positions: each tap adds its shifted plane times the tap to
    /// the sums as one contiguous run, `sums[i] += plane[i + ky * width + kx] * tap`, where
    /// `i = y * width + x` spans whole padded rows; the columns past the output's width are
    /// computed and dropped.
    #[inline(always)]
    fn planes(&self, first: usize, taps: &[f32], epilogue: &Epilogue, out: &mut [f32]) {
        let pw = self.padded.width;
        let span = self.output.height * pw;
        let mut sums = vec![0.0f32; span];
        let out_len = self.output.image_len();
        let bias = epilogue.bias.map_or(0.0, |b| b[0]);
        for (image, out_image) in out.chunks_exact_mut(out_len).enumerate() {
            let plane = self.image(first + image);
            sums.fill(0.0);
            for ky in 0..self.filter.height {
                for kx in 0..self.filter.width {
                    let tap = taps[ky * self.filter.width + kx];
                    let run = &plane[ky * pw + kx..];
                    // The last row's final `kx` sums would read past the plane; they are
                    // columns past the output's width.
                    let len = span.min(run.len());
                    for (sum, &value) in sums[..len].iter_mut().zip(&run[..len]) {
                        *sum += value * tap;
                    }
                }
            }
            for (out_row, sum_row) in out_image
                .chunks_exact_mut(self.output.width)
                .zip(sums.chunks_exact(pw))
            {
                for (out, &sum) in out_row.iter_mut().zip(sum_row) {
                    *out = epilogue.finish(sum + bias);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pads(top: i64, bottom: i64, left: i64, right: i64) -> Pads {
        Pads::new([top, bottom, left, right]).unwrap()
    }

    fn run(input: &[f32], dims: [i64; 4], filter: &[f32], fdims: [i64; 4], p: Pads) -> Vec<f32> {
        let epilogue = Epilogue {
            bias: None,
            relu: false,
        };
        run_finished(input, dims, filter, fdims, p, &epilogue)
    }

    fn run_finished(
        input: &[f32],
        dims: [i64; 4],
        filter: &[f32],
        fdims: [i64; 4],
        p: Pads,
        epilogue: &Epilogue,
    ) -> Vec<f32> {
        let g = Geometry::new(&dims, &fdims, p).unwrap();
        let mut out = vec![f32::NAN; g.output.len() * g.filters];
        convolve(input, filter, epilogue, &mut out, &g).unwrap();
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
    fn bias_and_relu_finish_each_sum() {
        // 3x3 input 1..9; filter 0 is [[1, 0], [0, -1]] (-4 everywhere), filter 1 picks the
        // lower right value (5, 6, 8, 9); biases 1 and -6: sums -3 and -1, 0, 2, 3; the ReLU
        // keeps what is not negative. [row][column][filter] order: the filters interleave.
        let input: Vec<f32> = (1..=9).map(|v| v as f32).collect();
        let filter = [1., 0., 0., 0., 0., 0., -1., 1.];
        let bias = [1., -6.];
        let finished = |relu| {
            let epilogue = Epilogue {
                bias: Some(&bias),
                relu,
            };
            run_finished(
                &input,
                [1, 3, 3, 1],
                &filter,
                [2, 2, 1, 2],
                pads(0, 0, 0, 0),
                &epilogue,
            )
        };
        assert_eq!(finished(false), vec![-3., -1., -3., 0., -3., 2., -3., 3.]);
        assert_eq!(finished(true), vec![0., 0., 0., 0., 0., 2., 0., 3.]);
        // One channel by one filter (the runs over whole images), and 20 filters (a group of
        // 16 and one filled up): each output is the input value times the filter's weight,
        // plus its bias, through the ReLU.
        let weights: Vec<f32> = (0..20).map(|f| f as f32 - 10.).collect();
        let biases: Vec<f32> = (0..20).map(|f| f as f32 * 0.5).collect();
        for filters in [1usize, 20] {
            let epilogue = Epilogue {
                bias: Some(&biases[..filters]),
                relu: true,
            };
            let out = run_finished(
                &input,
                [1, 3, 3, 1],
                &weights[..filters],
                [1, 1, 1, filters as i64],
                pads(0, 0, 0, 0),
                &epilogue,
            );
            let expected: Vec<f32> = (1..=9)
                .flat_map(|v| {
                    (0..filters).map(move |f| v as f32 * (f as f32 - 10.) + f as f32 * 0.5)
                })
                .map(|sum| sum.max(0.))
                .collect();
            assert_eq!(out, expected, "{filters} filters");
        }
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
    fn channels_and_filters_are_summed_and_kept_apart() {
        // One 1x2 image of two channels: pixels (1, 10) and (2, 20). A 1x1 filter of two
        // output channels, [[1, 100], [0.5, 1000]] (in channel by out channel): output channel
        // 0 is a + 0.5 b, channel 1 is 100 a + 1000 b, per pixel, NHWC.
        let out = run(
            &[1., 10., 2., 20.],
            [1, 1, 2, 2],
            &[1., 100., 0.5, 1000.],
            [1, 1, 2, 2],
            pads(0, 0, 0, 0),
        );
        assert_eq!(out, vec![6., 10100., 12., 20200.]);
        // Three channels (an RGB image, all of ones), 'same' 3x3 filters of twos for channel 0
        // and threes for channels 1 and 2 in output channel 0, ones in output channel 1: a
        // corner sees 4 pixels (4 * (2 + 3 + 3) = 32 and 4 * 3 = 12), an edge 6, the middle 9.
        let mut filter = Vec::new();
        for _tap in 0..9 {
            filter.extend_from_slice(&[2., 1., 3., 1., 3., 1.]);
        }
        let out = run(
            &[1.; 27],
            [1, 3, 3, 3],
            &filter,
            [3, 3, 3, 2],
            pads(1, 1, 1, 1),
        );
        let per_pixel = [4., 6., 4., 6., 9., 6., 4., 6., 4.];
        let expected: Vec<f32> = per_pixel.iter().flat_map(|n| [8. * n, 3. * n]).collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn shapes_that_do_not_fit_are_errors() {
        let none = pads(0, 0, 0, 0);
        assert!(Geometry::new(&[1, 2, 2, 3], &[1, 1, 1, 1], none).is_err());
        assert!(Geometry::new(&[1, 2, 2, 3], &[1, 1, 3, 0], none).is_err());
        assert!(Geometry::new(&[1, 2, 2, 0], &[1, 1, 0, 1], none).is_err());
        assert!(Geometry::new(&[1, 1, 2, 1], &[3, 1, 1, 1], none).is_err());
        // A filter one larger than the input leaves an empty output, as in TF and tfjs.
        let g = Geometry::new(&[1, 2, 2, 1], &[3, 3, 1, 1], none).unwrap();
        assert_eq!(g.output_dims(), [1, 0, 0, 1]);
        assert!(Geometry::new(&[1, 2, 2, 1], &[0, 1, 1, 1], none).is_err());
        assert!(Geometry::new(&[2, 2, 1], &[1, 1, 1, 1], none).is_err());
        assert!(Pads::new([0, -1, 0, 0]).is_err());
        let g = Geometry::new(&[0, 5, 5, 3], &[3, 3, 3, 8], none).unwrap();
        assert_eq!(g.output_dims(), [0, 3, 3, 8]);
        let epilogue = Epilogue {
            bias: None,
            relu: false,
        };
        assert!(convolve(&[], &[0.; 216], &epilogue, &mut [], &g).is_ok());
    }
}
