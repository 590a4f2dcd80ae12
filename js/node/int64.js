'use strict';
// Exact int64 values for SavedModel inputs and outputs. tfjs has no int64 dtype: like
// tfjs-node, this package feeds int64 inputs from int32 tensors and returns int64 outputs as
// int32 tensors. Values beyond int32 cannot travel that way, so they travel as Int64Tensor:
// a shape and a BigInt64Array, made with `tf.node.int64Tensor()` for inputs and returned for
// int64 outputs when `predict()` / `execute()` get `{int64: 'bigint'}`.

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;

/** An int64 tensor's values held in JS: `shape`, `dtype` ('int64') and `values`. */
class Int64Tensor {
  constructor(values, shape) {
    this.values = values;
    this.shape = shape;
    this.dtype = 'int64';
  }

  get size() {
    return this.values.length;
  }

  get rank() {
    return this.shape.length;
  }

  dataSync() {
    return this.values;
  }

  async data() {
    return this.values;
  }

  /** Nothing native to free; here so that code disposing every output works unchanged. */
  dispose() {}
}

/**
 * An Int64Tensor of `values` (a BigInt64Array, or an array of bigints or safe integers) and
 * `shape` (by default `[values.length]`).
 */
function int64Tensor(values, shape) {
  let data;
  if (values instanceof BigInt64Array) {
    data = values.slice();
  } else if (Array.isArray(values)) {
    data = new BigInt64Array(values.length);
    values.forEach((v, i) => {
      if (typeof v !== 'bigint' && !Number.isSafeInteger(v)) {
        throw new TypeError(`int64Tensor: values[${i}] (${v}) is neither a bigint nor a safe integer`);
      }
      data[i] = BigInt(v);
    });
  } else {
    throw new TypeError('int64Tensor: values must be a BigInt64Array or an array of integers');
  }
  const dims = shape === undefined ? [data.length] : shape;
  if (!Array.isArray(dims) || dims.some((d) => !Number.isInteger(d) || d < 0)) {
    throw new TypeError('int64Tensor: shape must be an array of non-negative integers');
  }
  const size = dims.reduce((a, b) => a * b, 1);
  if (size !== data.length) {
    throw new Error(`int64Tensor: shape [${dims}] holds ${size} values, got ${data.length}`);
  }
  return new Int64Tensor(data, dims.slice());
}

/** The first of `values` (a BigInt64Array) outside int32, or undefined when all fit. */
function firstBeyondInt32(values) {
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (v < INT32_MIN || v > INT32_MAX) return v;
  }
  return undefined;
}

module.exports = {Int64Tensor, int64Tensor, firstBeyondInt32};
