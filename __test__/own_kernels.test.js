'use strict';
// The package's own TF kernels (src/kernels): convs of few channels and one-channel max pools.
// They must give
// what tfjs's pure-JS cpu backend gives, eagerly and inside deferred graphs, and turn bad
// input into JS errors.

const test = require('node:test');
const assert = require('node:assert/strict');

const tf = require('..');
const binding = require('../binding.js');

const CONV = 'TfjsNodeRs>FewChannelConv2D';
const POOL = 'TfjsNodeRs>SingleChannelMaxPool';

/** Deterministic values in [-1, 1), with a few repeats so that max pools see ties. */
function values(n, seed) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (((i * 7919 + seed * 104729) % 1000) / 500) - 1;
  return out;
}

/** `fn(tf)` on the cpu backend, its output's values. */
async function onCpu(fn) {
  await tf.setBackend('cpu');
  try {
    const t = fn();
    const v = t.dataSync();
    t.dispose();
    return v;
  } finally {
    await tf.setBackend('tensorflow');
  }
}

function close(actual, expected, eps = 1e-5) {
  assert.equal(actual.length, expected.length, 'length');
  for (let i = 0; i < expected.length; i++) {
    const same = Number.isNaN(expected[i]) ? Number.isNaN(actual[i]) :
        Math.abs(actual[i] - expected[i]) <= eps * Math.max(1, Math.abs(expected[i]));
    assert.ok(same, `[${i}] ${actual[i]} != ${expected[i]}`);
  }
}

/** Counts calls of the package's own ops while `fn` runs. */
function ownOpCalls(fn) {
  const counts = {[CONV]: 0, [POOL]: 0};
  const opOf = (id) => {
    for (const [key, prepared] of tf.backend().ops.byKey) {
      if (prepared === id) return key.split('|')[0];
    }
    return null;
  };
  const {runPreparedOp, executeOp} = binding;
  binding.runPreparedOp = (id, ...rest) => {
    const op = opOf(id);
    if (op in counts) counts[op]++;
    return runPreparedOp(id, ...rest);
  };
  binding.executeOp = (name, ...rest) => {
    if (name in counts) counts[name]++;
    return executeOp(name, ...rest);
  };
  try {
    fn();
  } finally {
    Object.assign(binding, {runPreparedOp, executeOp});
  }
  return counts;
}

const convCases = [
  {x: [2, 7, 9, 1], f: [3, 3, 1, 1], pad: 'valid'},
  {x: [2, 7, 9, 1], f: [3, 2, 1, 1], pad: 'same'},
  {x: [1, 6, 6, 1], f: [5, 5, 1, 1], pad: 'valid'},
  {x: [3, 6, 4, 1], f: [2, 3, 1, 1], pad: [[0, 0], [1, 2], [0, 3], [0, 0]]},
  {x: [1, 1, 1, 1], f: [1, 1, 1, 1], pad: 'same'},
  // Few channels: an RGB image's first layer, and other counts of channels and filters.
  {x: [1, 9, 13, 3], f: [3, 3, 3, 8], pad: 'valid'},
  {x: [2, 7, 5, 3], f: [3, 3, 3, 8], pad: 'same'},
  {x: [1, 6, 11, 2], f: [2, 3, 2, 3], pad: 'same'},
  {x: [2, 5, 6, 4], f: [5, 1, 4, 5], pad: [[0, 0], [2, 1], [0, 2], [0, 0]]},
  {x: [1, 3, 4, 3], f: [1, 1, 3, 1], pad: 'valid'},
  // One channel by many filters (an MNIST convnet's first layer): groups of 16 filters, one
  // filled up (20), and a group of 8 filled up (5).
  {x: [2, 9, 11, 1], f: [3, 3, 1, 32], pad: 'valid'},
  {x: [3, 8, 8, 1], f: [3, 3, 1, 20], pad: 'same'},
  {x: [1, 5, 7, 1], f: [2, 2, 1, 5], pad: 'valid'},
];

test('convs of few channels match the cpu backend, on the package kernel', async () => {
  for (const [k, c] of convCases.entries()) {
    const xv = values(c.x.reduce((a, b) => a * b), k);
    const fv = values(c.f.reduce((a, b) => a * b), k + 50);
    const expected = await onCpu(() => tf.conv2d(tf.tensor(xv, c.x), tf.tensor(fv, c.f), 1, c.pad));
    let actual;
    const calls = ownOpCalls(() => {
      const y = tf.conv2d(tf.tensor(xv, c.x), tf.tensor(fv, c.f), 1, c.pad);
      actual = y.dataSync();
    });
    close(actual, expected);
    assert.equal(calls[CONV], 1, `${JSON.stringify(c)} ran on ${CONV}`);
  }
});

test('fused convs add their bias and ReLU in the package kernel, as the cpu backend does', async () => {
  const cases = [
    {x: [2, 9, 11, 1], f: [3, 3, 1, 32], pad: 'valid', activation: 'relu'},
    {x: [3, 8, 8, 1], f: [3, 3, 1, 20], pad: 'same', activation: 'linear'},
    {x: [2, 7, 9, 1], f: [3, 3, 1, 1], pad: 'same', activation: 'relu'},
    {x: [1, 9, 13, 3], f: [3, 3, 3, 8], pad: 'valid', activation: 'relu'},
    // Larger than 64x64 output pixels: on the kernel with a ReLU only (TF's Conv2D is faster
    // alone there), and more filters than TF's depthwise kernel takes.
    {x: [1, 70, 70, 1], f: [3, 3, 1, 16], pad: 'same', activation: 'relu', own: 1},
    {x: [1, 70, 70, 1], f: [3, 3, 1, 16], pad: 'same', activation: 'linear', own: 0},
    {x: [1, 70, 70, 1], f: [3, 3, 1, 4], pad: 'same', activation: 'relu', own: 0},
  ];
  for (const [k, c] of cases.entries()) {
    const xv = values(c.x.reduce((a, b) => a * b), k + 7);
    // A NaN goes through the sums it takes part in, and the ReLU keeps it, as TF's does.
    xv[5] = NaN;
    const fv = values(c.f.reduce((a, b) => a * b), k + 60);
    const bv = values(c.f[3], k + 90);
    const conv = () => tf.fused.conv2d({
      x: tf.tensor(xv, c.x), filter: tf.tensor(fv, c.f), bias: tf.tensor(bv, [c.f[3]]),
      strides: 1, pad: c.pad, activation: c.activation,
    });
    const expected = await onCpu(conv);
    assert.ok(expected.some(Number.isNaN) && expected.some((v) => v === 0) ===
              (c.activation === 'relu'), 'the case has NaNs, and zeros from the ReLU');
    const calls = ownOpCalls(() => close(conv().dataSync(), expected));
    assert.equal(calls[CONV], c.own === undefined ? 1 : c.own, JSON.stringify(c));
  }
});

test('convs the kernel does not cover still run (strided, dilated, many channels or filters)', async () => {
  const cases = [
    {x: [2, 8, 8, 1], f: [3, 3, 1, 2], strides: 2, dilations: 1},
    {x: [1, 8, 8, 3], f: [3, 3, 3, 8], strides: 2, dilations: 1},
    {x: [1, 9, 9, 3], f: [3, 3, 3, 8], strides: 1, dilations: 2},
    {x: [1, 8, 8, 3], f: [3, 3, 3, 16], strides: 1, dilations: 1},
    {x: [1, 8, 8, 5], f: [3, 3, 5, 4], strides: 1, dilations: 1},
  ];
  for (const [k, c] of cases.entries()) {
    const xv = values(c.x.reduce((a, b) => a * b), k + 3);
    const fv = values(c.f.reduce((a, b) => a * b), k + 4);
    const conv = () => tf.conv2d(tf.tensor(xv, c.x), tf.tensor(fv, c.f), c.strides, 'same', 'NHWC', c.dilations);
    const expected = await onCpu(conv);
    const calls = ownOpCalls(() => close(conv().dataSync(), expected));
    assert.equal(calls[CONV], 0, JSON.stringify(c));
  }
});

const poolCases = [
  {x: [2, 24, 24, 1], size: 2, stride: 2, pad: 'valid'},
  {x: [2, 7, 9, 1], size: 3, stride: 2, pad: 'same'},
  {x: [1, 5, 5, 1], size: [2, 3], stride: [1, 2], pad: 'same'},
  {x: [3, 6, 4, 1], size: 2, stride: 1, pad: 'valid'},
  {x: [1, 4, 4, 1], size: 3, stride: 1, pad: 1},
];

test('one-channel max pools match the cpu backend, on the package kernel', async () => {
  for (const [k, c] of poolCases.entries()) {
    const xv = values(c.x.reduce((a, b) => a * b), k + 7);
    const expected = await onCpu(() => tf.maxPool(tf.tensor(xv, c.x), c.size, c.stride, c.pad));
    let actual;
    const calls = ownOpCalls(() => {
      actual = tf.maxPool(tf.tensor(xv, c.x), c.size, c.stride, c.pad).dataSync();
    });
    assert.deepEqual(actual, expected);
    assert.equal(calls[POOL], 1, `${JSON.stringify(c)} ran on ${POOL}`);
  }
});

test('max pools ignore NaNs, as tfjs does', () => {
  const x = tf.tensor4d([1, 2, 3, 4, 5, 6, 7, NaN, 9], [1, 3, 3, 1]);
  assert.deepEqual(Array.from(tf.maxPool(x, 2, 1, 'valid').dataSync()), [5, 6, 7, 9]);
  const allNaN = tf.tensor4d([NaN, NaN, NaN, NaN], [1, 2, 2, 1]);
  assert.deepEqual(Array.from(tf.maxPool(allNaN, 2, 2, 'valid').dataSync()), [-Infinity]);
});

/**
 * A model of `layers()` predicting 4 [12, 12, 1] images 4 times (`predict(model, x)` runs one
 * call): each gives the cpu backend's values, and the later ones run as graphs.
 */
async function predictsAsCpuInGraphs(layers, seed, predict = (model, x) => model.predict(x)) {
  const model = tf.sequential({layers: layers()});
  const xv = values(4 * 144, seed);
  const weights = model.getWeights().map((w) => ({shape: w.shape, data: w.dataSync()}));
  const expected = await onCpu(() => {
    const m = tf.sequential({layers: layers()});
    m.setWeights(weights.map((w) => tf.tensor(w.data, w.shape)));
    return m.predict(tf.tensor(xv, [4, 12, 12, 1]));
  });
  const x = tf.tensor(xv, [4, 12, 12, 1]);
  // Whole-call graphs (js/graphs/) or deferred runs (src/trace.rs) hold the own kernels.
  const graphRuns = () => binding.stats().graphRuns + tf.node.callGraphStats().replays;
  const before = graphRuns();
  for (let i = 0; i < 4; i++) {
    const y = predict(model, x);
    close(y.dataSync(), expected);
    y.dispose();
  }
  if (binding.isDeferring() || tf.env().getBool('TFJS_NODE_RS_CALL_GRAPHS')) {
    assert.ok(graphRuns() > before, 'the predicts ran as graphs');
  }
  x.dispose();
  model.dispose();
}

test('a model of one-channel convs and pools runs its repeated predicts as one graph', async () => {
  await predictsAsCpuInGraphs(() => [
    tf.layers.conv2d({inputShape: [12, 12, 1], filters: 1, kernelSize: 3, activation: 'relu'}),
    tf.layers.conv2d({filters: 1, kernelSize: 3, padding: 'same', activation: 'relu'}),
    tf.layers.maxPooling2d({poolSize: 2}),
    tf.layers.conv2d({filters: 1, kernelSize: 2, padding: 'same'}),
    tf.layers.conv2d({filters: 1, kernelSize: 3, padding: 'same', activation: 'relu'}),
    tf.layers.flatten(),
  ], 11);
});

test('a one-channel convnet with many filters gives the cpu backend\'s values from its graphs', async () => {
  let first = true;
  await predictsAsCpuInGraphs(() => [
    tf.layers.conv2d({inputShape: [12, 12, 1], filters: 20, kernelSize: 3, activation: 'relu'}),
    tf.layers.maxPooling2d({poolSize: 2}),
    tf.layers.flatten(),
    tf.layers.dense({units: 3}),
  ], 13, (model, x) => {
    let y;
    const calls = ownOpCalls(() => { y = model.predict(x); });
    if (first) assert.equal(calls[CONV], 1, 'the first predict ran its conv on the kernel');
    first = false;
    return y;
  });
});

test('a convnet on RGB images of many widths gives the values of the cpu backend from its graphs', async () => {
  const layers = () => [
    tf.layers.conv2d({inputShape: [null, null, 3], filters: 8, kernelSize: 3, activation: 'relu'}),
    tf.layers.globalAveragePooling2d({}),
    tf.layers.dense({units: 4}),
  ];
  const model = tf.sequential({layers: layers()});
  const weights = model.getWeights().map((w) => ({shape: w.shape, data: w.dataSync()}));
  const widths = [5, 9, 12, 5, 17, 9, 12, 17];
  const inputs = widths.map((w, k) => ({shape: [1, 6, w, 3], data: values(6 * w * 3, k % 4)}));
  const expected = [];
  await tf.setBackend('cpu');
  try {
    const m = tf.sequential({layers: layers()});
    m.setWeights(weights.map((w) => tf.tensor(w.data, w.shape)));
    for (const {shape, data} of inputs) expected.push(m.predict(tf.tensor(data, shape)).dataSync());
  } finally {
    await tf.setBackend('tensorflow');
  }
  const replaysBefore = tf.node.callGraphStats().replays;
  const calls = ownOpCalls(() => {
    inputs.forEach(({shape, data}, k) => {
      const y = model.predict(tf.tensor(data, shape));
      close(y.dataSync(), expected[k]);
      y.dispose();
    });
  });
  // The first calls run op by op (on the kernel) and compile graphs holding it, the last of
  // them one for any width, which the later calls replay.
  assert.ok(calls[CONV] >= 1, 'the first call ran on the package kernel');
  if (tf.env().getBool('TFJS_NODE_RS_CALL_GRAPHS')) {
    assert.equal(tf.node.callGraphStats().replays - replaysBefore, widths.length - 3);
  }
  model.dispose();
});

test('on a GPU, and for a portable recording, the own kernels give way to the ops of TF', () => {
  const {runOwnOp} = require('../js/kernels/families/common');
  const ran = [];
  const backend = (gpu, portable) => ({
    isUsingGpuDevice: gpu,
    portableOps: () => portable,
    run1: (op) => ran.push(op),
  });
  assert.equal(runOwnOp(backend(true, false), CONV, {pads: [0, 0, 0, 0]}, []), null);
  assert.equal(runOwnOp(backend(false, true), CONV, {pads: [0, 0, 0, 0]}, []), null);
  assert.deepEqual(ran, []);
  runOwnOp(backend(false, false), CONV, {pads: [0, 0, 0, 0]}, []);
  assert.deepEqual(ran, [CONV]);
});

test('bad input to the kernels is a JS error, not a crash', () => {
  const T = (dims, n) => binding.createTensor(dims, 'float32', new Float32Array(n));
  const cases = [
    [() => binding.executeOp(CONV, [{name: 'pads', type: 'int', value: [0, 0, 0, 0]}],
                             [T([1, 4, 4, 2], 32), T([3, 3, 1, 1], 9)], 1),
     /is for 1 input channels, the input has 2/],
    [() => binding.executeOp(CONV, [{name: 'pads', type: 'int', value: [0, 0, 0, 0]}],
                             [T([4, 4, 1], 16), T([3, 3, 1, 1], 9)], 1),
     /input must be \[batch, height, width, channels\]/],
    [() => binding.executeOp(CONV, [{name: 'pads', type: 'int', value: [0, 0, 0, 0]}],
                             [T([1, 2, 2, 1], 4), T([4, 4, 1, 1], 16)], 1),
     /smaller than the window/],
    [() => binding.executeOp(CONV, [{name: 'pads', type: 'int', value: [0, -1, 0, 0]}],
                             [T([1, 4, 4, 1], 16), T([3, 3, 1, 1], 9)], 1),
     /pads must be >= 0/],
    [() => binding.executeOp(CONV, [{name: 'pads', type: 'int', value: [0, 0]}],
                             [T([1, 4, 4, 1], 16), T([3, 3, 1, 1], 9)], 1),
     /must hold 4 values/],
    [() => binding.executeOp(CONV, [{name: 'pads', type: 'int', value: [0, 0, 0, 0]},
                                    {name: 'biases', type: 'int', value: 1}],
                             [T([1, 4, 4, 1], 16), T([3, 3, 1, 2], 18), T([3], 3)], 1),
     /bias must be \[2\] \(one per filter\)/],
    [() => binding.executeOp(CONV, [{name: 'pads', type: 'int', value: [0, 0, 0, 0]},
                                    {name: 'biases', type: 'int', value: 2}],
                             [T([1, 4, 4, 1], 16), T([3, 3, 1, 1], 9), T([1], 1), T([1], 1)], 1),
     /biases must be 0 or 1/],
    [() => binding.executeOp(POOL, [{name: 'ksize', type: 'int', value: [0, 2]},
                                    {name: 'strides', type: 'int', value: [1, 1]},
                                    {name: 'pads', type: 'int', value: [0, 0, 0, 0]}],
                             [T([1, 4, 4, 1], 16)], 1),
     /ksize must be > 0/],
    [() => binding.executeOp(POOL, [{name: 'ksize', type: 'int', value: [2, 2]},
                                    {name: 'strides', type: 'int', value: [1, 1]},
                                    {name: 'pads', type: 'int', value: [2, 0, 0, 0]}],
                             [T([1, 4, 4, 1], 16)], 1),
     /smaller than the window/],
  ];
  for (const [call, message] of cases) {
    assert.throws(call, (e) => e instanceof Error && e.code === 'INVALID_ARGUMENT' &&
                              message.test(e.message), String(message));
  }
});
