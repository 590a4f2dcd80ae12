//! CPU kernels this package adds to TF: for ops whose TF kernels are slow at the sizes tfjs
//! models use, for chains of element-wise ops fused into one node of a call's graph
//! (`elementwise`), and for a call's sums over every axis but the last (`column_sums`). They
//! are registered once per process, before the first context is made, and then run like TF's
//! own: eagerly, and inside graphs.

pub mod column_sums;
pub mod elementwise;
pub mod few_channel_conv;
mod single_channel_pool;
mod threads;

use std::sync::Once;

use crate::error::{Error, Result};
use crate::tf::custom_op;
use crate::tf::status::Status;

use column_sums::ColumnSums;
use elementwise::Elementwise;
use few_channel_conv::FewChannelConv2D;
use single_channel_pool::SingleChannelMaxPool;

/// The sizes of a batch of NHWC images `[batch, height, width, channels]`, the channels apart
/// (`with_channels`), or of one channel (`from_dims`).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Images {
    batch: usize,
    height: usize,
    width: usize,
}

impl Images {
    fn from_dims(dims: &[i64]) -> Result<Images> {
        match Images::with_channels(dims)? {
            (images, 1) => Ok(images),
            _ => Err(Error::Range(format!(
                "input must be [batch, height, width, 1], got {dims:?}"
            ))),
        }
    }

    /// The images of NHWC `dims`, and their channels (at least one).
    fn with_channels(dims: &[i64]) -> Result<(Images, usize)> {
        let size = |d: i64| usize::try_from(d).map_err(|_| Error::Range(format!("dim {d} < 0")));
        let &[batch, height, width, channels] = dims else {
            return Err(Error::Range(format!(
                "input must be [batch, height, width, channels], got {dims:?}"
            )));
        };
        let channels = size(channels)?;
        if channels == 0 {
            return Err(Error::Range(format!("input {dims:?} has no channels")));
        }
        let images = Images {
            batch: size(batch)?,
            height: size(height)?,
            width: size(width)?,
        };
        Ok((images, channels))
    }

    fn image_len(&self) -> usize {
        self.height * self.width
    }

    fn len(&self) -> usize {
        self.batch * self.image_len()
    }

    fn dims(&self) -> [i64; 4] {
        [self.batch, self.height, self.width, 1].map(|d| d as i64)
    }

    /// The images a `window` sliding by `strides` over these, padded by `pads`, produces:
    /// `(padded - window) / stride + 1` positions per axis, none when the window is larger by
    /// up to a stride (as in TF and tfjs), an error when it is larger still.
    fn windowed(&self, pads: Pads, window: Extent, strides: Extent) -> Result<Images> {
        let out = |extent: usize, before: usize, after: usize, window: usize, stride: usize| {
            extent
                .checked_add(before)
                .and_then(|e| e.checked_add(after))
                .and_then(|e| e.checked_add(stride))
                .and_then(|e| e.checked_sub(window))
                .map(|room| room / stride)
        };
        let height = out(
            self.height,
            pads.top,
            pads.bottom,
            window.height,
            strides.height,
        );
        let width = out(
            self.width,
            pads.left,
            pads.right,
            window.width,
            strides.width,
        );
        match (height, width) {
            (Some(height), Some(width)) => Ok(Images {
                batch: self.batch,
                height,
                width,
            }),
            _ => Err(Error::Range(format!(
                "padded input {:?} (pads {pads:?}) is smaller than the window {window:?}",
                self.dims()
            ))),
        }
    }
}

/// A window's or a stride's height and width, each at least 1.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Extent {
    height: usize,
    width: usize,
}

impl Extent {
    const ONE: Extent = Extent {
        height: 1,
        width: 1,
    };

    fn new([height, width]: [i64; 2], what: &str) -> Result<Extent> {
        let side = |v: i64| {
            usize::try_from(v)
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| Error::Range(format!("{what} must be > 0, got {v}")))
        };
        Ok(Extent {
            height: side(height)?,
            width: side(width)?,
        })
    }
}

/// Zero (conv) or ignored (pool) rows and columns around each image.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pads {
    top: usize,
    bottom: usize,
    left: usize,
    right: usize,
}

impl Pads {
    /// From an attr's `[top, bottom, left, right]`.
    fn new([top, bottom, left, right]: [i64; 4]) -> Result<Pads> {
        let side = |value: i64| {
            usize::try_from(value)
                .map_err(|_| Error::Range(format!("pads must be >= 0, got {value}")))
        };
        Ok(Pads {
            top: side(top)?,
            bottom: side(bottom)?,
            left: side(left)?,
            right: side(right)?,
        })
    }
}

/// Calls `work` compiled for the widest vectors the CPU has (AVX-512F, else AVX2, else the
/// target's baseline): the kernels' loops over plain arrays are written for the compiler to
/// vectorize, and the widest vectors do most per instruction. `work` and what it calls with
/// `#[inline(always)]` are inlined here, so they are compiled for the chosen features.
fn with_widest_vectors<R>(work: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F, checked just before.
            return unsafe { with_avx512(work) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2, checked just before.
            return unsafe { with_avx2(work) };
        }
    }
    work()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn with_avx512<R>(work: impl FnOnce() -> R) -> R {
    work()
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn with_avx2<R>(work: impl FnOnce() -> R) -> R {
    work()
}

/// Registers the ops and their kernels, once per process. A failure leaves TF without the
/// ops, and the JS kernels that would use them fall back to TF's own ops when TF reports them
/// missing (`NOT_FOUND`), so it is no reason to refuse to start.
pub fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let status = Status::new();
        let _ = custom_op::register::<FewChannelConv2D>(&status)
            .and_then(|()| custom_op::register::<SingleChannelMaxPool>(&status))
            .and_then(|()| custom_op::register::<Elementwise>(&status))
            .and_then(|()| custom_op::register::<ColumnSums>(&status));
    });
}
