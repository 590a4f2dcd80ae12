'use strict';
// The vocabulary of the kernel table (table.js): where each TF input and
// attr of a row comes from. run_table.js compiles rows written with these.

// ------------------------------------------------------------ attr sources

/** A type attr: the dtype of tensor input `i` (0 = first). */
const dtype = (i = 0) => ({src: 'dtype', input: i});

/**
 * A type attr: tfjs's upcast of the dtypes of tensor inputs `idx` (all
 * tensor inputs when empty); inputs of another dtype are cast to it first.
 */
const upcast = (...idx) => ({src: 'upcast', inputs: idx.length ? idx : null});

/** Constant attrs. */
const type = (value) => ({src: 'const', type: 'type', value});
const int = (value) => ({src: 'const', type: 'int', value});
const float = (value) => ({src: 'const', type: 'float', value});
const bool = (value) => ({src: 'const', type: 'bool', value});
const str = (value) => ({src: 'const', type: 'string', value});
const ints = (value) => ({src: 'const', type: 'int', value});

/**
 * An attr from the tfjs attr `key`, through `conv(value, attrs, inputs)`
 * when given. `type` is the binding's attr type.
 */
const attr = (type, key, conv) => ({src: 'attr', type, key, conv: conv || null});

/** A type or int attr computed by `fn(attrs, inputs)` (for the rare cases). */
const computed = (type, fn) => ({src: 'fn', type, fn});

/** The `N` of list inputs: the number of tensors in the list. */
const count = () => ({src: 'count'});

// ----------------------------------------------------------- input sources

/** All of the kernel's list inputs (AddN, Concat, Pack, Einsum). */
const list = () => ({src: 'list'});

/**
 * A constant tensor input made from the tfjs attr `key` (through `conv`):
 * a number gives a scalar, an array a vector, an array of arrays a matrix.
 * `dt` is its dtype: a name, `dtype(i)` for the dtype of tensor input i, or
 * `fn(attrs, inputs)`.
 */
const fromAttr = (key, dt = 'int32', conv) =>
    ({src: 'attrTensor', key, dtype: dt, conv: conv || null});

/** A constant tensor input. */
const constant = (value, dt = 'int32') =>
    ({src: 'constTensor', value, dtype: dt});

module.exports = {
  dtype, upcast, type, int, float, bool, str, ints, attr, computed, count,
  list, fromAttr, constant,
};
