'use strict';
// Helpers shared by the hand-written kernels: attr constructors and small
// native building blocks (transpose, reshape, pad, slice, ...) that return
// raw outputs `{id, shape, dtype}` the caller frees or wraps.

const {typeAttr, cachedAttrs} = require('../../backend/tensorflow_backend');

const A = {
  type: typeAttr,
  int: (name, value) => ({name, type: 'int', value}),
  ints: (name, value) => ({name, type: 'int', value}),
  float: (name, value) => ({name, type: 'float', value}),
  bool: (name, value) => ({name, type: 'bool', value: Boolean(value)}),
  str: (name, value) => ({name, type: 'string', value}),
  strs: (name, value) => ({name, type: 'string', value}),
  types: (name, value) => ({name, type: 'type', value}),
};

/**
 * Runs `fn(temps)`; every raw output pushed on `temps` is freed afterwards,
 * whether `fn` returns or throws.
 */
function withTemps(backend, fn) {
  const temps = [];
  try {
    return fn(temps);
  } finally {
    for (const t of temps) backend.free(t);
  }
}

function transpose(b, x, perm) {
  return b.run1('Transpose', [A.type('T', x.dtype), A.type('Tperm', 'int32')],
                [x, b.vec(perm)]);
}

/**
 * x under another shape, as a raw output. Numeric tensors are re-viewed natively (same buffer, no
 * op, no copy), or not at all when the native tensor already has that shape (a lazy reshape
 * undone); strings take TF's Reshape op.
 */
function reshape(b, x, shape) {
  if (x.dtype === 'string') {
    return b.run1('Reshape', [A.type('T', x.dtype), A.type('Tshape', 'int32')],
                  [x, b.vec(shape)]);
  }
  const rec = b.uploaded(x);
  const id = rec === null ? b.nativeView(x.id, x.shape, shape, x.dtype) :
                            b.nativeView(rec.id, rec.nativeShape, shape, x.dtype);
  return {id, shape, dtype: x.dtype};
}

function slice(b, x, begin, size) {
  return b.run1('Slice', [A.type('T', x.dtype), A.type('Index', 'int32')],
                [x, b.vec(begin), b.vec(size)]);
}

/**
 * Pads (`value`) or crops each dim of x by `pads[i] = [before, after]`;
 * negative amounts crop. Returns a raw output (a fresh tensor).
 */
function padOrCrop(b, x, pads, value) {
  const temps = [];
  try {
    let cur = x;
    let shape = x.shape;
    if (pads.some(([p, q]) => p < 0 || q < 0)) {
      const begin = pads.map(([p]) => Math.max(0, -p));
      const size = shape.map((d, i) =>
          d - begin[i] - Math.max(0, -pads[i][1]));
      cur = slice(b, cur, begin, size);
      temps.push(cur);
      shape = size;
    }
    const pos = pads.map(([p, q]) => [Math.max(0, p), Math.max(0, q)]);
    if (pos.every(([p, q]) => p === 0 && q === 0)) {
      if (cur === x) {
        return b.run1('Identity', [A.type('T', x.dtype)], [x]);
      }
      temps.pop();
      return cur;
    }
    const flat = [];
    for (const [p, q] of pos) flat.push(p, q);
    return b.run1('PadV2', [A.type('T', x.dtype), A.type('Tpaddings', 'int32')],
                  [cur, b.constant('int32', [pos.length, 2], flat),
                   b.scalar(value, x.dtype)]);
  } finally {
    for (const t of temps) b.free(t);
  }
}

function binary(b, op, x, y) {
  return b.run1(op, [A.type('T', x.dtype)], [x, y]);
}

function unary(b, op, x) {
  return b.run1(op, [A.type('T', x.dtype)], [x]);
}

/** A TensorInfo sharing x's data (Identity without a copy). */
function identity(backend, x) {
  backend.incRef(x.dataId);
  return {dataId: x.dataId, shape: x.shape, dtype: x.dtype};
}

/** The package's own ops (src/kernels) that TF reported missing: their registration failed. */
const missingOwnOps = new Set();
/** op -> attrs key -> the attrs array, so the op runner finds its prepared op at once. */
const OWN_OP_ATTRS = new Map();

/**
 * Runs one of the package's own ops with `attrValues` (`{name: value}`: an array is an int list,
 * a number an int, a boolean a bool); null when TF lacks the op, or on a GPU, for the caller to
 * take TF's own ops instead.
 */
function runOwnOp(b, op, attrValues, inputs) {
  if (missingOwnOps.has(op)) return null;
  // The package's own ops exist in this process only.
  if (b.portableOps()) return null;
  // Their kernels are CPU kernels: on a GPU, TF would copy their inputs to the host and their
  // outputs back, where its own GPU kernels take neither copy.
  if (b.isUsingGpuDevice) return null;
  const byKey = cachedAttrs(OWN_OP_ATTRS, op, () => new Map());
  const attrs = cachedAttrs(byKey, JSON.stringify(attrValues), () => Object.entries(attrValues)
      .map(([k, v]) => (Array.isArray(v) ? A.ints(k, v) :
                        typeof v === 'boolean' ? A.bool(k, v) : A.int(k, v))));
  try {
    return b.run1(op, attrs, inputs);
  } catch (e) {
    if (!e || e.code !== 'NOT_FOUND') throw e;
    missingOwnOps.add(op);
    return null;
  }
}

module.exports = {
  A, cachedAttrs, withTemps, transpose, reshape, slice, padOrCrop, binary, unary, identity,
  runOwnOp,
};
