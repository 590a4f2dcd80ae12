'use strict';
// tfjs dtype <-> TensorFlow dtype facts, in one place.
//
// tfjs has five dtypes: float32, int32, bool, complex64, string. TensorFlow
// ops also produce int64, uint8, float64, ... Results of those types are
// converted right after the op that produced them (see `RESULT_CAST`), so
// every native tensor the backend keeps has a tfjs dtype.

/**
 * TF result dtype -> tfjs dtype it is cast to right after the op. Other
 * types (tfjs's five; resource, variant) are kept as they are.
 */
const RESULT_CAST = {
  int64: 'int32',
  uint8: 'int32',
  int8: 'int32',
  int16: 'int32',
  uint16: 'int32',
  uint32: 'int32',
  uint64: 'int32',
  float64: 'float32',
  float16: 'float32',
  bfloat16: 'float32',
  complex128: 'complex64',
};

/**
 * Result dtypes whose values RESULT_CAST may change (beyond float rounding): where a value
 * must come back as it is (SavedModel outputs), these are checked value by value (int64) or
 * refused, never cast.
 */
const NARROWING = new Set(['int64', 'uint32', 'uint64', 'complex128']);

/** TF's DataType enum (types.proto): its names by number, as protobufs hold them. */
const TF_DTYPE_NAMES = [
  'DT_INVALID', 'DT_FLOAT', 'DT_DOUBLE', 'DT_INT32', 'DT_UINT8', 'DT_INT16', 'DT_INT8',
  'DT_STRING', 'DT_COMPLEX64', 'DT_INT64', 'DT_BOOL', 'DT_QINT8', 'DT_QUINT8', 'DT_QINT32',
  'DT_BFLOAT16', 'DT_QINT16', 'DT_QUINT16', 'DT_UINT16', 'DT_COMPLEX128', 'DT_HALF',
  'DT_RESOURCE', 'DT_VARIANT', 'DT_UINT32', 'DT_UINT64',
];

/** tfjs's upcast rules (backend_util.upcastType), without a dependency. */
const UPCAST_RANK = {bool: 0, int32: 1, float32: 2, complex64: 3};
function upcastType(a, b) {
  if (a === b) return a;
  if (a === 'string' || b === 'string') {
    if (a === 'string' && b === 'string') return 'string';
    throw new Error(`Can not upcast ${a} with ${b}`);
  }
  return UPCAST_RANK[a] >= UPCAST_RANK[b] ? a : b;
}

/** Number of elements of a shape. */
function sizeOf(shape) {
  let size = 1;
  for (let i = 0; i < shape.length; i++) size *= shape[i];
  return size;
}

module.exports = {RESULT_CAST, NARROWING, TF_DTYPE_NAMES, upcastType, sizeOf};
