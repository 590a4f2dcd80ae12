'use strict';
// Activations of tfjs's fused kernels, as TF fused_ops names or as ops.

const {A, cachedAttrs, reshape, binary} = require('./common');
const {sizeOf} = require('../../backend/dtypes');

/** TF fused_ops for BiasAdd + activation, or null when TF can't fuse it. */
const FUSED = {
  linear: ['BiasAdd'],
  relu: ['BiasAdd', 'Relu'],
  relu6: ['BiasAdd', 'Relu6'],
  elu: ['BiasAdd', 'Elu'],
  leakyrelu: ['BiasAdd', 'LeakyRelu'],
};

function fusedOpsFor(activation) {
  return FUSED[activation || 'linear'] || null;
}

/**
 * The bias as a raw 1-D [channels] tensor when it only varies along the last
 * dim (what TF's BiasAdd takes), else null.
 */
function biasVector(b, bias, channels, temps) {
  const shape = bias.shape;
  if (sizeOf(shape) !== channels) return null;
  for (let i = 0; i < shape.length - 1; i++) if (shape[i] !== 1) return null;
  if (shape.length === 1) return bias;
  if (shape.length === 0 && channels !== 1) return null;
  const v = reshape(b, bias, [channels]);
  temps.push(v);
  return v;
}

/**
 * x + bias as a raw output. A bias along x's last dim runs on TF's BiasAdd, which measured
 * 200 µs where the broadcasting AddV2 took 340 (a [32,26,26,32] conv output).
 */
function addBias(b, x, bias, temps) {
  const channels = x.shape[x.shape.length - 1];
  const vec = x.shape.length >= 2 && bias.shape.length <= x.shape.length &&
      BIAS_ADD_DTYPES.has(x.dtype) && bias.dtype === x.dtype ?
      biasVector(b, bias, channels, temps) : null;
  if (vec === null) return binary(b, 'AddV2', x, bias);
  return b.run1('BiasAdd', cachedAttrs(BIAS_ADD_ATTRS, x.dtype, () => [
    A.type('T', x.dtype), A.str('data_format', 'NHWC'),
  ]), [x, vec]);
}

/** BiasAdd's attrs by dtype, one array each. */
const BIAS_ADD_ATTRS = new Map();

const BIAS_ADD_DTYPES = new Set(['float32', 'int32']);

/**
 * Applies a tfjs activation to a raw output `x`; returns a raw output and
 * frees `x` when it made a new one.
 */
function applyActivation(b, x, activation, preluWeights, leakyreluAlpha) {
  if (activation == null || activation === 'linear') return x;
  let out;
  try {
    const T = A.type('T', x.dtype);
    switch (activation) {
      case 'relu': out = b.run1('Relu', [T], [x]); break;
      case 'relu6': out = b.run1('Relu6', [T], [x]); break;
      case 'elu': out = b.run1('Elu', [T], [x]); break;
      case 'sigmoid': out = b.run1('Sigmoid', [T], [x]); break;
      case 'tanh': out = b.run1('Tanh', [T], [x]); break;
      case 'leakyrelu':
        out = b.run1('LeakyRelu', [T, A.float('alpha', leakyreluAlpha == null ?
                                                 0.2 : leakyreluAlpha)], [x]);
        break;
      case 'prelu': {
        const pos = b.run1('Greater', [T], [x, b.scalar(0, x.dtype)]);
        try {
          const neg = b.run1('Mul', [T], [preluWeights, x]);
          try {
            out = b.run1('SelectV2', [T], [pos, x, neg]);
          } finally {
            b.free(neg);
          }
        } finally {
          b.free(pos);
        }
        break;
      }
      default:
        throw new Error(`Activation ${activation} has not been implemented ` +
                        'for the tensorflow backend');
    }
  } finally {
    b.free(x);
  }
  return out;
}

module.exports = {fusedOpsFor, biasVector, addBias, applyActivation};
