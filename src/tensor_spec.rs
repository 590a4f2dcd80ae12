//! A tensor's dtype and dims (`TensorSpec`), what they count (elements, data bytes), and the
//! values of small integer tensors that shapes may depend on. Every layer that registers,
//! feeds or reads tensors uses these.

use crate::error::{Error, Result};
use crate::tf::dtype::DTYPES;
use crate::tf::handle::TensorHandle;
use crate::tf::status::Status;

/// Integer tensors up to this many elements are read by value where shapes may depend on them
/// (axes, perms, sizes): deferred runs key them, graphs hold them as constants.
const MAX_SHAPE_INTEGERS: usize = 16;

/// The values of `handle` (of `dtype`, `dims`) when it is an integer tensor of at most
/// `MAX_SHAPE_INTEGERS` elements, else `None`.
pub fn small_integers(
    handle: &TensorHandle,
    dtype: usize,
    dims: &[i64],
    status: &Status,
) -> Result<Option<Vec<i64>>> {
    if !is_small_integers(dtype, dims) {
        return Ok(None);
    }
    Ok(handle.resolve(status)?.integers(DTYPES[dtype]))
}

/// Whether a tensor of `spec` is one whose values `small_integers` reads.
pub fn is_small_integer_tensor(spec: &TensorSpec) -> bool {
    is_small_integers(spec.dtype, &spec.dims)
}

fn is_small_integers(dtype: usize, dims: &[i64]) -> bool {
    let small = element_count(dims).is_some_and(|count| count <= MAX_SHAPE_INTEGERS as u64);
    DTYPES[dtype].is_integer() && small
}

/// How many elements a tensor of `dims` holds; `None` for an unknown (negative) dim or a count
/// past `u64`.
pub fn element_count(dims: &[i64]) -> Option<u64> {
    dims.iter().try_fold(1u64, |count, &dim| {
        count.checked_mul(u64::try_from(dim).ok()?)
    })
}

/// Bytes of element data of a tensor of dtype `DTYPES[dtype]` and `dims` (0 for strings and
/// resources): what `stats().liveBytes` counts for it.
pub fn data_bytes(dtype: usize, dims: &[i64]) -> u64 {
    DTYPES[dtype].element_bytes().map_or(0, |size| {
        element_count(dims).map_or(0, |count| count.saturating_mul(size as u64))
    })
}

/// A tensor's dtype (its `DTYPES` row) and dims: an input a graph is fed, an output it gives.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct TensorSpec {
    pub dtype: usize,
    pub dims: Box<[i64]>,
}

impl TensorSpec {
    /// How many elements a tensor of this spec holds (0 for an unknown dim).
    pub fn elements(&self) -> u64 {
        element_count(&self.dims).unwrap_or(0)
    }

    /// The spec of an existing tensor.
    pub fn of(handle: &TensorHandle, status: &Status) -> Result<TensorSpec> {
        let dtype = handle
            .dtype_index()
            .map_err(|code| Error::Invalid(format!("dtype {code} cannot be fed")))?;
        let mut dims = Vec::new();
        handle.dims_into(&mut dims, status)?;
        Ok(TensorSpec {
            dtype,
            dims: dims.into(),
        })
    }

    /// Whether a tensor of `dims` fits this spec: the same rank, and each dim equal or of any
    /// size where this spec's is -1 (a graph fed several shapes).
    pub fn admits_dims(&self, dims: &[i64]) -> bool {
        self.dims.len() == dims.len()
            && self
                .dims
                .iter()
                .zip(dims)
                .all(|(&want, &got)| want == -1 || want == got)
    }

    /// Bytes of element data (`data_bytes`).
    pub fn byte_count(&self) -> u64 {
        data_bytes(self.dtype, &self.dims)
    }
}
