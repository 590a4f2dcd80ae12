'use strict';
// A layers model (conv + LSTM + dense) trains with fit() on the tensorflow
// backend, and its predict() matches tfjs's cpu backend on the same weights.

const test = require('node:test');
const assert = require('node:assert');

const tf = require('..');
const binding = require('../binding.js');

/** Conv1D over a sequence, then an LSTM, then dense layers. */
function buildModel() {
  const model = tf.sequential();
  model.add(tf.layers.conv1d({inputShape: [12, 3], filters: 8, kernelSize: 3,
                              activation: 'relu', padding: 'same'}));
  model.add(tf.layers.lstm({units: 16, returnSequences: false}));
  model.add(tf.layers.dense({units: 8, activation: 'tanh'}));
  model.add(tf.layers.dense({units: 1}));
  return model;
}

/** Conv2D + max pool + dense: the fused conv and matmul kernels. */
function buildConvModel() {
  const input = tf.input({shape: [6, 6, 2]});
  const conv = tf.layers.conv2d({filters: 4, kernelSize: 3, activation: 'relu',
                                 padding: 'same'}).apply(input);
  const pooled = tf.layers.maxPooling2d({poolSize: 2}).apply(conv);
  const flat = tf.layers.flatten().apply(pooled);
  const out = tf.layers.dense({units: 3, activation: 'softmax'}).apply(flat);
  return tf.model({inputs: input, outputs: out});
}

/** Targets: a smooth function of the sequence (its weighted mean). */
function data(n) {
  const xs = [], ys = [];
  let seed = 7;
  const rand = () => (seed = (seed * 16807) % 2147483647) / 2147483647;
  for (let i = 0; i < n; i++) {
    let target = 0;
    for (let t = 0; t < 12; t++) {
      for (let c = 0; c < 3; c++) {
        const v = rand() * 2 - 1;
        xs.push(v);
        target += v * (c + 1) * (t / 12);
      }
    }
    ys.push(target / 12);
  }
  return [tf.tensor3d(xs, [n, 12, 3]), tf.tensor2d(ys, [n, 1])];
}

test('conv + LSTM + dense model trains with fit() on tensorflow', async () => {
  assert.strictEqual(tf.getBackend(), 'tensorflow');
  const model = buildModel();
  model.compile({optimizer: tf.train.adam(0.01), loss: 'meanSquaredError'});
  const [xs, ys] = data(128);
  const history = await model.fit(xs, ys, {epochs: 12, batchSize: 32, verbose: 0});
  const losses = history.history.loss;
  assert.ok(losses.every(Number.isFinite), `losses ${losses}`);
  assert.ok(losses[losses.length - 1] < losses[0] * 0.5,
            `loss went from ${losses[0]} to ${losses[losses.length - 1]}`);
  tf.dispose([xs, ys]);
  model.dispose();
});

test('predict() matches the cpu backend on the same weights', async () => {
  await tf.setBackend('tensorflow');
  const model = buildModel();
  const model2 = buildConvModel();

  const [xs] = data(16);
  const images = tf.randomNormal([5, 6, 6, 2], 0, 1, 'float32', 3);
  const weights = model.getWeights().map(w => w.arraySync());
  const weights2 = model2.getWeights().map(w => w.arraySync());
  // Predicted four times: from the third call on, each predict runs as one graph (a whole-call
  // graph, js/graphs/; or, with those off, a deferred run, src/trace.rs). Every call must give
  // the same values.
  const graphRunsBefore = binding.stats().graphRuns + tf.node.callGraphStats().replays;
  const onTfCalls = [], onTf2Calls = [];
  for (let call = 0; call < 4; call++) {
    onTfCalls.push(await model.predict(xs).data());
    onTf2Calls.push(await model2.predict(images).data());
  }
  assert.ok(binding.stats().graphRuns + tf.node.callGraphStats().replays > graphRunsBefore,
            'later predicts ran as graphs');
  const xsValues = xs.arraySync();
  const imageValues = images.arraySync();

  await tf.setBackend('cpu');
  try {
    const cpuModel = buildModel();
    cpuModel.setWeights(weights.map(w => tf.tensor(w)));
    const onCpu = await cpuModel.predict(tf.tensor(xsValues)).data();
    const cpuModel2 = buildConvModel();
    cpuModel2.setWeights(weights2.map(w => tf.tensor(w)));
    const onCpu2 = await cpuModel2.predict(tf.tensor(imageValues)).data();

    for (const [onTf, onTf2] of onTfCalls.map((v, call) => [v, onTf2Calls[call]])) {
      assert.strictEqual(onTf.length, onCpu.length);
      for (let i = 0; i < onTf.length; i++) {
        assert.ok(Math.abs(onTf[i] - onCpu[i]) < 1e-4, `[${i}] ${onTf[i]} vs ${onCpu[i]}`);
      }
      assert.strictEqual(onTf2.length, onCpu2.length);
      for (let i = 0; i < onTf2.length; i++) {
        assert.ok(Math.abs(onTf2[i] - onCpu2[i]) < 1e-4, `[${i}] ${onTf2[i]} vs ${onCpu2[i]}`);
      }
    }
    cpuModel.dispose();
    cpuModel2.dispose();
  } finally {
    await tf.setBackend('tensorflow');
  }
  model.dispose();
  model2.dispose();
});
