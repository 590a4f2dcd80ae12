'use strict';
// `tf.dropout` with its mask drawn by TF's RandomUniform op, when the tensorflow backend runs it
// without a seed. tfjs-core draws the mask in JS and uploads it, which makes a training step
// with dropout a call that writes different data every time, so it could never be one graph
// (call_graphs.js); drawn by an op, the mask is a node that draws afresh on every run, as
// eagerly. Same distribution (uniform on [0, 1)), same arithmetic and gradient as tfjs-core's
// (the mask is not differentiated). With a seed, tfjs-core's own dropout runs: its masks
// repeat for a seed, which TF's generator cannot match.

const tfc = require('@tensorflow/tfjs-core');
const {TensorFlowBackend, typeAttr} = require('../backend/tensorflow_backend');
const {replaceExport} = require('./core_exports');

const tfjsDropout = tfc.dropout;
const RANDOM_UNIFORM_ATTRS = [
  {name: 'seed', type: 'int', value: 0},
  {name: 'seed2', type: 'int', value: 0},
  typeAttr('dtype', 'float32'),
  typeAttr('T', 'int32'),
];

function dropout(x, rate, noiseShape, seed) {
  const backend = tfc.backend();
  if (seed != null || !(backend instanceof TensorFlowBackend) || !(x instanceof tfc.Tensor) ||
      x.dtype !== 'float32' || !(rate > 0 && rate < 1)) {
    // tfjs-core's checks and messages for everything else.
    return tfjsDropout(x, rate, noiseShape, seed);
  }
  return tfc.tidy(() => {
    const shape = maskShape(x.shape, noiseShape);
    const uniform = tfc.engine().makeTensorFromTensorInfo(
        backend.op('RandomUniform', RANDOM_UNIFORM_ATTRS, [backend.vec(shape)]), backend);
    const keepProb = 1 - rate;
    const multiplier = tfc.div(tfc.floor(tfc.add(uniform, keepProb)), keepProb);
    return tfc.mul(x, multiplier);
  });
}

/** tfjs-core's noise shape: `noiseShape` with its unset dimensions taken from `shape`. */
function maskShape(shape, noiseShape) {
  if (noiseShape == null) return shape.slice();
  if (noiseShape.length !== shape.length) return noiseShape;
  return noiseShape.map((d, i) => d == null ? shape[i] : d);
}

/** Makes tfjs-core's `dropout` export this one (core_exports.js). */
function installDropout() {
  replaceExport('dropout', dropout);
}

module.exports = {installDropout};
