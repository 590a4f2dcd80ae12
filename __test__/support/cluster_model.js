'use strict';
// The model and data that distributed.test.js trains in one process and, data-parallel, in
// worker processes (cluster_task.js). Workers other than task 0 start from other weights
// (`seedOffset`): `fit` must give them task 0's.

/** A small dense model on fixed data: 24 samples, global batches of 8 (the last one 8 too). */
function trainingSetup(tf, seedOffset = 0) {
  const init = (seed) => tf.initializers.glorotUniform({seed: seed + 100 * seedOffset});
  const model = tf.sequential({layers: [
    tf.layers.dense({inputShape: [3], units: 4, activation: 'tanh', kernelInitializer: init(1)}),
    tf.layers.dense({units: 2, kernelInitializer: init(2)}),
  ]});
  model.compile({optimizer: tf.train.adam(0.05), loss: 'meanSquaredError'});
  const n = 24;
  const xs = Float32Array.from({length: n * 3}, (_, i) => Math.sin(i * 0.7));
  const ys = Float32Array.from({length: n * 2}, (_, i) => Math.cos(i * 0.3));
  return {
    model,
    x: tf.tensor2d(xs, [n, 3]),
    y: tf.tensor2d(ys, [n, 2]),
    fitArgs: {batchSize: 8, epochs: 3, verbose: 0},
  };
}

module.exports = {trainingSetup};
