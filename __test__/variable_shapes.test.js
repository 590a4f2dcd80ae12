'use strict';
// Calls whose inputs vary in shape (js/graphs/call_graphs.js): once a call site has seen two
// shapes of one signature, two recordings of other shapes that ran the same ops on the same
// outside tensors become one graph with the varying dims unknown, which serves every shape
// that fits it. Values as eager (and as tfjs's cpu backend) for each shape, errors as eager's,
// and calls whose JS computes constants from the shape still right (per-shape graphs).

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');

const tf = require('..');

const FLAG = 'TFJS_NODE_RS_CALL_GRAPHS';

function close(actual, expected, what, eps = 1e-4) {
  assert.strictEqual(actual.length, expected.length, `${what} length`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= eps * Math.max(1, Math.abs(expected[i])),
              `${what}[${i}] ${actual[i]} != ${expected[i]}`);
  }
}

/** Runs `fn` on 'tensorflow' with call graphs on ('graphs') or off ('eager'), or on 'cpu'. */
async function on(mode, fn) {
  const before = tf.getBackend();
  tf.env().set(FLAG, mode !== 'eager');
  await tf.setBackend(mode === 'cpu' ? 'cpu' : 'tensorflow');
  try {
    return await fn();
  } finally {
    tf.env().set(FLAG, true);
    await tf.setBackend(before);
  }
}

const stats = () => tf.node.callGraphStats();

/** The convnet: any height and width, 3 channels. */
function convnet() {
  const init = (seed) => tf.initializers.glorotUniform({seed});
  const model = tf.sequential();
  model.add(tf.layers.conv2d({filters: 8, kernelSize: 3, activation: 'relu',
                              inputShape: [null, null, 3], kernelInitializer: init(1)}));
  model.add(tf.layers.globalAveragePooling2d({}));
  model.add(tf.layers.dense({units: 4, kernelInitializer: init(2)}));
  return model;
}

function image(height, width, channels = 3) {
  const n = height * width * channels;
  return tf.tensor4d(Float32Array.from({length: n}, (_, i) => ((i * 7919) % 255) / 255 - 0.5),
                     [1, height, width, channels]);
}

/** `fn(x)`'s values for each of `shapes` ([height, width]), each called `times` times. */
function valuesOf(fn, shapes, times = 1) {
  const out = [];
  for (let t = 0; t < times; t++) {
    for (const [h, w] of shapes) {
      const x = image(h, w);
      const y = fn(x);
      out.push(Array.from(y.dataSync()));
      tf.dispose([x, y]);
    }
  }
  return out;
}

const WIDTHS = [8, 9, 12, 16, 23, 31, 32, 40];

test('one graph serves a convnet\'s predicts of many widths, with eager\'s values', async () => {
  const shapes = WIDTHS.map((w) => [10, w]);
  const model = convnet();
  const expected = await on('cpu', () => valuesOf((x) => model.predict(x), shapes));
  const before = stats();
  const tensorsBefore = tf.memory().numTensors;
  const got = await on('graphs', () => valuesOf((x) => model.predict(x), shapes, 3));
  const after = stats();
  got.forEach((v, k) => close(v, expected[k % shapes.length], `width ${shapes[k % shapes.length][1]}`));
  assert.strictEqual(after.genericCompiled - before.genericCompiled, 1, after.lastFailure);
  // The first two widths have graphs of their own (a trusted call site's first calls), the
  // third is recorded for the generic graph; every later call of another width is its.
  assert.ok(after.genericReplays - before.genericReplays >= 3 * shapes.length - 7,
            `${after.genericReplays - before.genericReplays} replays`);
  assert.ok(after.alive - before.alive <= 3, `${after.alive - before.alive} graphs kept`);
  assert.strictEqual(tf.memory().numTensors, tensorsBefore);
  // Heights vary too now: the graph is compiled once more, with both dims unknown.
  const more = [[12, 9], [7, 30], [20, 20]];
  const expectedMore = await on('cpu', () => valuesOf((x) => model.predict(x), more));
  const gotMore = await on('graphs', () => valuesOf((x) => model.predict(x), more, 2));
  gotMore.forEach((v, k) => close(v, expectedMore[k % more.length], `shape ${more[k % more.length]}`));
  assert.strictEqual(stats().genericCompiled - before.genericCompiled, 2, stats().lastFailure);
  model.dispose();
});

test('a shape the model cannot take fails as eagerly', async () => {
  const model = convnet();
  const errorOf = (h, w, c) => {
    const x = image(h, w, c);
    try {
      tf.dispose(model.predict(x));
      return null;
    } catch (e) {
      return e.message;
    } finally {
      x.dispose();
    }
  };
  // Width 1 leaves the 3x3 window a negative output width, which TF refuses.
  const bad = [[10, 1, 3], [1, 30, 3], [10, 10, 4]];
  const eager = await on('eager', () => bad.map(([h, w, c]) => errorOf(h, w, c)));
  await on('graphs', () => {
    valuesOf((x) => model.predict(x), WIDTHS.map((w) => [10, w]));
    assert.ok(stats().genericCompiled > 0);
    for (let round = 0; round < 2; round++) {
      const replays = stats().genericReplays;
      bad.forEach(([h, w, c], k) => {
        assert.notStrictEqual(eager[k], null, `[${h}, ${w}, ${c}] fails eagerly`);
        assert.strictEqual(errorOf(h, w, c), eager[k], `[${h}, ${w}, ${c}]`);
      });
      // None reaches the graph: narrower than the narrowest image it was recorded with (a
      // window that no longer fits), or of other channels. They run eagerly, recorded.
      assert.strictEqual(stats().genericReplays, replays);
    }
    // The graph still serves the shapes it can.
    const replays = stats().genericReplays;
    valuesOf((x) => model.predict(x), [[10, 50]]);
    assert.strictEqual(stats().genericReplays, replays + 1);
  });
  // Width 2 leaves the window an empty output: the pooled mean of nothing, as eagerly (TF: NaN).
  const empty = await on('eager', () => valuesOf((x) => model.predict(x), [[10, 2]]));
  assert.deepStrictEqual(await on('graphs', () => valuesOf((x) => model.predict(x), [[10, 2]])), empty);
  model.dispose();
});

test('tf.node.function of any shape', async () => {
  const w = tf.tensor1d([0.5, -1, 2]);
  const fn = tf.node.function((x) => tf.sum(tf.relu(tf.mul(x, w)), [1, 2]));
  const shapes = [[3, 4], [5, 6], [7, 8], [9, 10], [3, 4]];
  const expected = await on('eager', () => valuesOf(fn, shapes));
  const before = stats();
  const got = await on('graphs', () => valuesOf(fn, shapes, 2));
  got.forEach((v, k) => close(v, expected[k % shapes.length], `shape ${shapes[k % shapes.length]}`));
  // [7, 8] and [9, 10] make the graph, which serves sizes down to 7 by 8; [3, 4] is recorded,
  // and widens it once. Every later call replays.
  assert.strictEqual(stats().genericCompiled - before.genericCompiled, 2, stats().lastFailure);
  w.dispose();
});

test('a graph of any shape that fails on values falls back to eager, with eager\'s error', async () => {
  const fn = tf.node.function((x, indices) => tf.gather(x, indices, 1));
  const call = (width, index) => {
    const x = image(4, width);
    const indices = tf.tensor1d([0, index], 'int32');
    try {
      return Array.from(fn(x, indices).dataSync());
    } catch (e) {
      return e.message;
    } finally {
      tf.dispose([x, indices]);
    }
  };
  const widths = [5, 6, 7, 8, 9, 10];
  const expected = await on('eager', () => [...widths.map((w) => call(w, 2)), call(11, 30)]);
  const before = stats();
  const got = await on('graphs', () => [...widths.map((w) => call(w, 2)), call(11, 30)]);
  assert.deepStrictEqual(got, expected);
  assert.match(got[widths.length], /the index value 30 is not in \[0, 3\]/);
  assert.ok(stats().genericCompiled > before.genericCompiled, stats().lastFailure);
  assert.strictEqual(stats().genericFallbacks - before.genericFallbacks, 1);
});

test('calls whose constants depend on the shape keep graphs per shape, with right values',
     async () => {
       // The reshape's target comes from the input's shape.
       const flat = tf.node.function((x) => tf.mul(x.reshape([x.shape[1] * x.shape[2] * 3]), 2));
       const shapes = [[2, 3], [4, 5], [6, 7], [8, 9], [2, 3], [4, 5]];
       const expected = await on('cpu', () => valuesOf(flat, shapes));
       const before = stats();
       const got = await on('graphs', () => valuesOf(flat, shapes, 3));
       got.forEach((v, k) => close(v, expected[k % shapes.length], `shape ${shapes[k % shapes.length]}`));
       assert.strictEqual(stats().genericCompiled, before.genericCompiled);
       assert.ok(stats().replays > before.replays, 'per-shape graphs still replay');
     });

test('a GraphModel whose flatten reshapes to a size read from the input\'s shape, of many batches',
     async () => {
       // tfjs-converter computes Shape -> StridedSlice -> Pack in JS: the reshape's target is a
       // constant of each batch size, so each keeps a graph of its own.
       const file = path.join(__dirname, '..', 'benches', 'fixtures', 'graph_convnet', 'model.json');
       const model = await tf.loadGraphModel(tf.io.fileSystem(file));
       const batches = [1, 2, 3, 4, 5, 1, 2, 3];
       const images = batches.map((n) => tf.tensor4d(
           Array.from({length: n * 28 * 28}, (_, i) => Math.cos(i + n) ** 2), [n, 28, 28, 1]));
       const predictAll = () => images.map((x) => {
         const y = model.predict(x);
         const v = Array.from(y.dataSync());
         y.dispose();
         return v;
       });
       const eager = await on('eager', predictAll);
       const before = stats();
       for (let round = 0; round < 3; round++) {
         const got = await on('graphs', predictAll);
         got.forEach((v, k) => close(v, eager[k], `batch ${batches[k]}`, 1e-5));
       }
       assert.strictEqual(stats().genericCompiled, before.genericCompiled);
       assert.ok(stats().replays > before.replays, 'per-shape graphs replay');
       tf.dispose(images);
       model.dispose();
     });

test('training steps of many widths (graphs per width): weights and losses as eager', async () => {
  const widths = [8, 11, 14, 17, 20, 23, 8, 11];
  const train = async () => {
    const model = convnet();
    model.compile({optimizer: tf.train.adam(0.01), loss: 'meanSquaredError'});
    const losses = [];
    for (const w of widths) {
      const x = image(6, w);
      const y = tf.tensor2d([[0.5, -0.5, 1, 0]]);
      losses.push(await model.trainOnBatch(x, y));
      tf.dispose([x, y]);
    }
    const weights = model.getWeights().map((t) => Array.from(t.dataSync()));
    model.dispose();
    return {losses, weights};
  };
  const eager = await on('eager', train);
  const before = stats();
  const graphs = await on('graphs', train);
  close(graphs.losses, eager.losses, 'losses');
  graphs.weights.forEach((w, i) => close(w, eager.weights[i], `weight ${i}`));
  // The gradient of the pooling's mean tiles by the input's dims, constants of each shape: the
  // generic recordings differ, and the widths keep graphs of their own.
  assert.strictEqual(stats().genericCompiled, before.genericCompiled);
});
