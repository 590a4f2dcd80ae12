//! Reading and checking JS arguments, with messages that name the argument.

use std::ffi::CStr;

use crate::error::{Error, Result};
use crate::js::{Js, Value};
use crate::tensor_spec;
use crate::tf::dtype::DType;

/// The largest integer a JS number holds exactly.
const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

/// Reads a string argument into `buf` as a NUL-terminated C string.
pub fn c_str<'a>(js: Js, value: Value, buf: &'a mut Vec<u8>, what: &str) -> Result<&'a CStr> {
    if !js.string_into(value, buf)? {
        return Err(Error::Type(format!(
            "{what} must be a string, got {}",
            js.type_of(value)?.name()
        )));
    }
    CStr::from_bytes_with_nul(buf)
        .map_err(|_| Error::Type(format!("{what} must not contain NUL characters")))
}

pub fn integer(js: Js, value: Value, what: &str) -> Result<i64> {
    let Some(n) = js.number(value)? else {
        if let Some((n, lossless)) = js.bigint_i64(value)? {
            return if lossless {
                Ok(n)
            } else {
                Err(Error::Range(format!("{what} does not fit in 64 bits")))
            };
        }
        return Err(Error::Type(format!(
            "{what} must be a number, got {}",
            js.type_of(value)?.name()
        )));
    };
    integer_of_number(n, what)
}

/// `n` as an integer, refused unless a JS number holds it exactly.
fn integer_of_number(n: f64, what: &str) -> Result<i64> {
    if n.fract() != 0.0 || !n.is_finite() || n.abs() > MAX_SAFE_INTEGER {
        return Err(Error::Range(format!("{what} must be an integer, got {n}")));
    }
    Ok(n as i64)
}

pub fn float(js: Js, value: Value, what: &str) -> Result<f64> {
    js.number(value)?.ok_or_else(|| {
        Error::Type(format!(
            "{what} must be a number, got {}",
            type_name(js, value)
        ))
    })
}

pub fn boolean(js: Js, value: Value, what: &str) -> Result<bool> {
    js.boolean(value)?.ok_or_else(|| {
        Error::Type(format!(
            "{what} must be a boolean, got {}",
            type_name(js, value)
        ))
    })
}

pub fn array_length(js: Js, value: Value, what: &str) -> Result<u32> {
    if !js.is_array(value)? {
        return Err(Error::Type(format!(
            "{what} must be an array, got {}",
            type_name(js, value)
        )));
    }
    js.array_length(value)
}

/// A dtype given by name (`'float32'`) or by TF enum value.
pub fn dtype(js: Js, value: Value, buf: &mut Vec<u8>, what: &str) -> Result<DType> {
    if let Some(code) = js.number(value)? {
        return DType::from_tf_code(code as i32)
            .filter(|_| code.fract() == 0.0)
            .ok_or_else(|| {
                Error::Range(format!(
                    "{what}: {code} is not a TF dtype this binding supports"
                ))
            });
    }
    let name = c_str(js, value, buf, what)?.to_str().unwrap_or("");
    DType::from_name(name).ok_or_else(|| Error::Type(format!("{what}: unknown dtype '{name}'")))
}

/// Dims of a shape: integers >= 0, or >= -1 where unknown sizes are allowed.
pub fn dims_into(
    js: Js,
    value: Value,
    allow_unknown: bool,
    dims: &mut Vec<i64>,
    what: &str,
) -> Result<()> {
    dims.clear();
    let rank = array_length(js, value, what)?;
    let min = if allow_unknown { -1 } else { 0 };
    for i in 0..rank {
        let dim = integer(js, js.element(value, i)?, &format!("{what}[{i}]"))?;
        if dim < min {
            return Err(Error::Range(format!(
                "{what}[{i}] must be >= {min}, got {dim}"
            )));
        }
        dims.push(dim);
    }
    Ok(())
}

/// The element count of known dims (`tensor_spec::element_count`), refused past what a JS
/// number holds exactly.
pub fn element_count(dims: &[i64], what: &str) -> Result<usize> {
    tensor_spec::element_count(dims)
        .filter(|&n| n as f64 <= MAX_SAFE_INTEGER)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::Range(format!("{what} {dims:?} has too many elements")))
}

/// A tensor id as JS holds it.
pub fn tensor_id(js: Js, value: Value, what: &str) -> Result<u64> {
    let id = integer(js, value, what)?;
    id_from_integer(id, what)
}

/// A tensor id as an io array (a `Float64Array`) holds it, bounded as `tensor_id` bounds it.
pub fn tensor_id_of_number(id: f64, what: &str) -> Result<u64> {
    id_from_integer(integer_of_number(id, what)?, what)
}

fn id_from_integer(id: i64, what: &str) -> Result<u64> {
    u64::try_from(id).map_err(|_| Error::Range(format!("{what} must be a tensor id, got {id}")))
}

pub fn type_name(js: Js, value: Value) -> &'static str {
    js.type_of(value)
        .map_or("an unreadable value", |t| t.name())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn element_counts() {
        assert_eq!(element_count(&[], "s").unwrap(), 1);
        assert_eq!(element_count(&[2, 3, 4], "s").unwrap(), 24);
        assert_eq!(element_count(&[0, 5], "s").unwrap(), 0);
        assert!(element_count(&[1 << 40, 1 << 40], "s").is_err());
        assert!(element_count(&[-1], "s").is_err());
    }
}
