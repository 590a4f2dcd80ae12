'use strict';
// Matrix and normalisation kernels that need logic: _FusedMatMul on TF's
// fused MatMul kernel, FusedBatchNorm on FusedBatchNormV3 (or composed when
// its parameters are not per-channel vectors), Multinomial with tfjs's
// seed semantics, SearchSorted on LowerBound/UpperBound.

const tfc = require('@tensorflow/tfjs-core');
const {A, cachedAttrs, withTemps, reshape} = require('./common');
const {sameShape} = require('../../backend/tensorflow_backend');
const {applyActivation, fusedOpsFor, biasVector, addBias} = require('./activation');
const {sizeOf} = require('../../backend/dtypes');
const {compileRow} = require('../run_table');
const {upcast, attr} = require('../spec');

let fusedMatMulUnsupported = false;

/**
 * m*k*n up to which TF's _FusedMatMul beats MatMul + BiasAdd + activation when each op runs
 * eagerly. Measured here: 0.4-0.8x their time up to ~10M (a dense layer of an RNN or a small
 * MLP, where per-op cost dominates), 1.1-1.3x from 32M on (128x4000x1000: 7.0 vs 5.6 ms), where
 * Eigen's fused contraction is slower. With deferred runs the three ops go into one graph and
 * the plain product is cheaper (32x100x200: MatMul 29 us, _FusedMatMul 47 us; dense-tiny
 * predict 0.85-0.94 vs 0.99-1.28 ms), so the fused op is used only where no graph is made.
 */
const FUSED_MATMUL_MAX_WORK = 16e6;

/** The general case: TF's BatchMatMulV2 with tfjs's upcast (bools computed as int32). */
const batchMatMulV2 = compileRow({
  kernel: 'BatchMatMul', op: 'BatchMatMulV2', inputs: ['a', 'b'], computeAs: {bool: 'int32'},
  attrs: {
    T: upcast(), adj_x: attr('bool', 'transposeA', Boolean),
    adj_y: attr('bool', 'transposeB', Boolean),
  },
});

/**
 * A single product (2-D operands, as tfjs's gradients pass them, or a batch of one, as its
 * fused matMul does) runs as a plain 2-D product: BatchMatMulV2 measured 136 µs where MatMul
 * took 17 on [128,20]x[20,60], and up to 1.25x MatMul's time on dense layers. A batch of one
 * is re-viewed as 2-D (no copy).
 */
function BatchMatMul({inputs, attrs, backend: b}) {
  const {a, b: bb} = inputs;
  if (!isSingleMatMul(a, bb)) return batchMatMulV2({inputs, attrs, backend: b});
  const out = matMulRaw(b, a, bb, Boolean(attrs.transposeA), Boolean(attrs.transposeB));
  return a.shape.length === 3 ? b.wrapAs(out, [1, ...out.shape]) : b.wrap(out);
}

/** Whether a x b is one 2-D product: both operands 2-D, or both a batch of one. */
function isSingleMatMul(a, bb) {
  if (a.dtype !== bb.dtype || !MATMUL_DTYPES.has(a.dtype)) return false;
  if (a.shape.length === 2 && bb.shape.length === 2) return true;
  return a.shape.length === 3 && bb.shape.length === 3 && a.shape[0] === 1 && bb.shape[0] === 1;
}

/**
 * m*k*n up to which a float32 product runs on SparseMatMul, which (without sparsity hints) is
 * Eigen's plain contraction, instead of MatMul, which TF hands to oneDNN. Between ops of a model
 * (cold caches) oneDNN's set-up dominates small products: an RNN step's [32,20]x[20,60] took
 * 34 µs as MatMul and 22-27 µs as SparseMatMul; from about 1M multiply-adds oneDNN is faster
 * (128x100x200: 75 vs 147 µs).
 */
const EIGEN_MATMUL_MAX_WORK = 700000;

/**
 * a x b of same-dtype operands as a raw output, through a 2-D product when both are a batch of
 * one (its output is then 2-D: [m, n], not [1, m, n]).
 */
function matMulRaw(b, a, bb, transposeA, transposeB) {
  if (!isSingleMatMul(a, bb)) {
    return b.run1('BatchMatMulV2', productAttrs('BatchMatMulV2', a.dtype, transposeA, transposeB),
                  [a, bb]);
  }
  return withTemps(b, (temps) => {
    const a2 = a.shape.length === 3 ? reshape(b, a, a.shape.slice(1)) : a;
    if (a2 !== a) temps.push(a2);
    const b2 = bb.shape.length === 3 ? reshape(b, bb, bb.shape.slice(1)) : bb;
    if (b2 !== bb) temps.push(b2);
    const m = transposeA ? a2.shape[1] : a2.shape[0];
    const k = transposeA ? a2.shape[0] : a2.shape[1];
    const n = transposeB ? b2.shape[0] : b2.shape[1];
    const op = a.dtype === 'float32' && m * k * n <= EIGEN_MATMUL_MAX_WORK &&
        !b.portableOps() ? 'SparseMatMul' : 'MatMul';
    return b.run1(op, productAttrs(op, a.dtype, transposeA, transposeB), [a2, b2]);
  });
}

/** op -> dtype -> the four attrs arrays by (transposeA, transposeB), built once each. */
const PRODUCT_ATTRS = new Map();

/**
 * The attrs of product `op` (MatMul, SparseMatMul or BatchMatMulV2), one array per combination,
 * so the op runner finds its prepared op without building a key.
 */
function productAttrs(op, dtype, transposeA, transposeB) {
  const byDtype = cachedAttrs(PRODUCT_ATTRS, op, () => new Map());
  const arrays = cachedAttrs(byDtype, dtype, () => [false, true].flatMap((ta) => [false, true].map(
      (tb) => {
        if (op === 'BatchMatMulV2') {
          return [A.type('T', dtype), A.bool('adj_x', ta), A.bool('adj_y', tb)];
        }
        const types = op === 'SparseMatMul' ? [A.type('Ta', dtype), A.type('Tb', dtype)] :
                                              [A.type('T', dtype)];
        return [...types, A.bool('transpose_a', ta), A.bool('transpose_b', tb)];
      })));
  return arrays[(transposeA ? 2 : 0) + (transposeB ? 1 : 0)];
}

const MATMUL_DTYPES = new Set(['float32', 'int32', 'complex64']);

function _FusedMatMul({inputs, attrs, backend: b}) {
  const {a, b: bb, bias, preluActivationWeights} = inputs;
  const {transposeA, transposeB, activation, leakyreluAlpha} = attrs;
  return withTemps(b, (temps) => {
    const batchA = a.shape.length === 3 ? a.shape[0] : 1;
    const batchB = bb.shape.length === 3 ? bb.shape[0] : 1;
    const m = transposeA ? a.shape[a.shape.length - 1] : a.shape[a.shape.length - 2];
    const n = transposeB ? bb.shape[bb.shape.length - 2] : bb.shape[bb.shape.length - 1];
    const k = transposeA ? a.shape[a.shape.length - 2] : a.shape[a.shape.length - 1];
    const fusedOps = bias != null ? fusedOpsFor(activation) : null;
    // Unfused where the product joins a graph: there the separate nodes ran faster (LSTM
    // predict's call graph 2.0 vs 2.9 ms with _FusedMatMul).
    if (fusedOps !== null && !b.opsJoinGraphs() && !fusedMatMulUnsupported &&
        m * k * n <= FUSED_MATMUL_MAX_WORK &&
        batchA === 1 &&
        batchB === 1 && a.dtype === 'float32') {
      const vec = biasVector(b, bias, n, temps);
      if (vec !== null) {
        const a2 = a.shape.length === 3 ? reshape(b, a, a.shape.slice(1)) : a;
        if (a2 !== a) temps.push(a2);
        const b2 = bb.shape.length === 3 ? reshape(b, bb, bb.shape.slice(1)) : bb;
        if (b2 !== bb) temps.push(b2);
        let out = null;
        try {
          out = b.run1('_FusedMatMul', fusedMatMulAttrs(transposeA, transposeB, fusedOps,
                                                        leakyreluAlpha), [a2, b2, vec]);
        } catch (e) {
          if (e && (e.code === 'NOT_FOUND' || e.code === 'UNIMPLEMENTED')) {
            fusedMatMulUnsupported = true;
          }
        }
        if (out !== null) return b.wrapAs(out, [1, m, n]);
      }
    }
    let out = matMulRaw(b, a, bb, Boolean(transposeA), Boolean(transposeB));
    if (bias != null) {
      temps.push(out);
      out = addBias(b, out, bias, temps);
    }
    out = applyActivation(b, out, activation, preluActivationWeights, leakyreluAlpha);
    // A batch-of-one product comes back 2-D; tfjs expects [batch, m, n].
    const shape = [Math.max(batchA, batchB), m, n];
    return sameShape(out.shape, shape) ? b.wrap(out) : b.wrapAs(out, shape);
  });
}

/** _FusedMatMul's attrs, one array per combination. */
const fusedMatMulAttrsByKey = new Map();
function fusedMatMulAttrs(transposeA, transposeB, fusedOps, leakyreluAlpha) {
  const alpha = leakyreluAlpha == null ? 0.2 : leakyreluAlpha;
  const key = `${Boolean(transposeA)}|${Boolean(transposeB)}|${fusedOps.join(',')}|${alpha}`;
  return cachedAttrs(fusedMatMulAttrsByKey, key, () => [
    A.bool('transpose_a', transposeA), A.bool('transpose_b', transposeB),
    A.type('T', 'float32'), A.int('num_args', 1), A.strs('fused_ops', fusedOps),
    A.float('leakyrelu_alpha', alpha),
  ]);
}

function FusedBatchNorm({inputs, attrs, backend: b}) {
  const {x, mean, variance, scale, offset} = inputs;
  const eps = attrs.varianceEpsilon;
  const channels = x.shape[x.shape.length - 1];
  const isVec = (t) => t == null || (t.shape.length === 1 && t.shape[0] === channels);
  return withTemps(b, (temps) => {
    if (x.shape.length === 4 && x.dtype === 'float32' && isVec(mean) &&
        isVec(variance) && isVec(scale) && isVec(offset)) {
      const ones = scale != null ? scale : b.constant('float32', [channels], 1);
      const zeros = offset != null ? offset : b.constant('float32', [channels], 0);
      const outs = b.run('FusedBatchNormV3', [
        A.type('T', 'float32'), A.type('U', 'float32'), A.float('epsilon', eps),
        A.str('data_format', 'NHWC'), A.bool('is_training', false),
      ], [x, ones, zeros, mean, variance], 6);
      for (let i = 1; i < outs.length; i++) b.free(outs[i]);
      return b.wrap(outs[0]);
    }
    // (x - mean) * rsqrt(variance + eps) * scale + offset, with broadcasting.
    const T = [A.type('T', x.dtype)];
    const ve = b.run1('AddV2', T, [variance, b.scalar(eps, x.dtype)]);
    temps.push(ve);
    let inv = b.run1('Rsqrt', T, [ve]);
    temps.push(inv);
    if (scale != null) {
      inv = b.run1('Mul', T, [inv, scale]);
      temps.push(inv);
    }
    const centered = b.run1('Sub', T, [x, mean]);
    temps.push(centered);
    let out = b.run1('Mul', T, [centered, inv]);
    if (offset != null) {
      temps.push(out);
      out = b.run1('AddV2', T, [out, offset]);
    }
    return b.wrap(out);
  });
}

/**
 * tfjs passes a seed (Math.random() when the user gave none); TF's
 * StatelessMultinomial gives the same samples for the same seed.
 */
function Multinomial({inputs, attrs, backend: b}) {
  const {logits} = inputs;
  const {numSamples, seed, normalized} = attrs;
  const s = Number.isInteger(seed) ? seed : Math.floor(seed * 0x7fffffff);
  return withTemps(b, (temps) => {
    let lg = logits;
    if (normalized) {
      lg = b.run1('Log', [A.type('T', logits.dtype)], [logits]);
      temps.push(lg);
    }
    return b.op('StatelessMultinomial', [
      A.type('T', lg.dtype), A.type('Tseed', 'int32'),
      A.type('output_dtype', 'int32'),
    ], [lg, b.scalar(numSamples, 'int32'),
        b.vec([s | 0, Math.floor(s / 0x100000000) | 0])]);
  });
}

function SearchSorted({inputs, attrs, backend: b}) {
  const {sortedSequence, values} = inputs;
  const op = attrs.side === 'right' ? 'UpperBound' : 'LowerBound';
  return withTemps(b, (temps) => {
    let s = sortedSequence, v = values;
    if (s.dtype !== v.dtype) {
      const dt = s.dtype === 'float32' || v.dtype === 'float32' ? 'float32' : 'int32';
      if (s.dtype !== dt) {
        s = b.cast(s, dt);
        temps.push(s);
      }
      if (v.dtype !== dt) {
        v = b.cast(v, dt);
        temps.push(v);
      }
    }
    if (sizeOf(values.shape) === 0) {
      return b.makeTensorInfo(values.shape, 'int32', b.alloc('int32', 0));
    }
    return b.op(op, [A.type('T', s.dtype), A.type('out_type', 'int32')], [s, v]);
  });
}

/** Einsum, after tfjs's checks of the equation (tfjs rejects e.g. traces). */
function Einsum({inputs, attrs, backend: b}) {
  const tensors = Array.isArray(inputs) ? inputs : Object.values(inputs);
  const {allDims, idDims} =
      tfc.backend_util.decodeEinsumEquation(attrs.equation, tensors.length);
  tfc.backend_util.checkEinsumDimSizes(allDims.length, idDims, tensors);
  return b.op('Einsum', [
    A.str('equation', attrs.equation), A.int('N', tensors.length),
    A.type('T', tensors[0].dtype),
  ], tensors);
}

const KERNELS = [
  {kernelName: 'BatchMatMul', kernelFunc: BatchMatMul},
  {kernelName: 'Einsum', kernelFunc: Einsum},
  {kernelName: '_FusedMatMul', kernelFunc: _FusedMatMul},
  {kernelName: 'FusedBatchNorm', kernelFunc: FusedBatchNorm},
  {kernelName: 'Multinomial', kernelFunc: Multinomial},
  {kernelName: 'SearchSorted', kernelFunc: SearchSorted},
];

module.exports = {KERNELS};
