'use strict';
// Whole calls as graphs (js/graphs/): a model's predict, training and test steps, GraphModel
// execute and tf.node.function run as one TF graph from their third call with the same key,
// their second when they run only tfjs's own JS (js/graphs/trust.js; a predict of several
// batches from its first, its batches witnessing one another).
// Nothing may change but speed: values as eager (and as tfjs's cpu backend), fresh random
// values per call, variables and optimizer state as eager, changes seen at once, tensor
// counts as eager, errors at the call, and a switch that turns it off.

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');

const tf = require('..');
const binding = require('../binding.js');

const FLAG = 'TFJS_NODE_RS_CALL_GRAPHS';

function close(actual, expected, eps = 1e-4, what = '') {
  assert.strictEqual(actual.length, expected.length, `${what} length`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= eps * Math.max(1, Math.abs(expected[i])),
              `${what}[${i}] ${actual[i]} != ${expected[i]}`);
  }
}

/** Runs `fn` with call graphs on `backend` ('tensorflow' with graphs on or off, or 'cpu'). */
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

const replays = () => tf.node.callGraphStats().replays;
/** Native tensors alive, less the constants the backend caches (scalars calls make). */
const uncachedTensors = () => binding.stats().liveTensors - tf.memory().numCachedConstants;

/** What `run()` returns with call graphs, checked against eager calls and tfjs's cpu backend. */
async function graphsAsEagerAndCpu(run) {
  const graphs = await on('graphs', run);
  close(graphs, await on('eager', run), 1e-5, 'eager');
  close(graphs, await on('cpu', run), 1e-4, 'cpu');
  return graphs;
}

const init = (seed) => tf.initializers.glorotUniform({seed});

/** A convnet with batch norm, trained with adam on sparse labels, with an accuracy metric. */
function convnet() {
  const m = tf.sequential();
  m.add(tf.layers.conv2d({filters: 4, kernelSize: 3, inputShape: [8, 8, 1],
                          kernelInitializer: init(1), activation: 'relu'}));
  m.add(tf.layers.batchNormalization());
  m.add(tf.layers.maxPooling2d({poolSize: 2}));
  m.add(tf.layers.flatten());
  m.add(tf.layers.dense({units: 3, kernelInitializer: init(2), activation: 'softmax'}));
  m.compile({optimizer: tf.train.adam(0.01), loss: 'sparseCategoricalCrossentropy',
             metrics: ['accuracy']});
  return m;
}

function data(n = 32) {
  const xs = Array.from({length: n * 64}, (_, i) => Math.sin(i * 0.37));
  return {
    x: tf.tensor4d(xs, [n, 8, 8, 1]),
    y: tf.tensor2d(Array.from({length: n}, (_, i) => i % 3), [n, 1]),
  };
}

/** Trains and evaluates the convnet; returns every number a user sees of it. */
async function trainConvnet() {
  const m = convnet();
  const {x, y} = data();
  const h = await m.fit(x, y, {epochs: 5, batchSize: 8, shuffle: false, verbose: 0});
  const lossOnBatch = await m.trainOnBatch(x, y);
  const evaluated = m.evaluate(x, y, {batchSize: 16}).map((t) => t.dataSync()[0]);
  const predicted = Array.from(m.predict(x).dataSync());
  const weights = m.getWeights().map((w) => Array.from(w.dataSync()));
  const result = {loss: h.history.loss, acc: h.history.acc, lossOnBatch: lossOnBatch[0],
                  evaluated, predicted, weights, iterations: m.optimizer.iterations};
  m.dispose();
  x.dispose();
  y.dispose();
  return result;
}

test('fit, trainOnBatch, evaluate and predict replay as graphs and match eager and cpu',
     async () => {
       const before = replays();
       const graphs = await on('graphs', trainConvnet);
       assert.ok(replays() - before >= 15, `replays: ${replays() - before}`);
       const eager = await on('eager', trainConvnet);
       const cpu = await on('cpu', trainConvnet);
       for (const [name, want, eps] of [['eager', eager, 1e-5], ['cpu', cpu, 1e-4]]) {
         close(graphs.loss, want.loss, eps, `${name} loss`);
         close(graphs.acc, want.acc, eps, `${name} acc`);
         close([graphs.lossOnBatch], [want.lossOnBatch], eps, `${name} trainOnBatch`);
         close(graphs.evaluated, want.evaluated, eps, `${name} evaluate`);
         close(graphs.predicted, want.predicted, eps, `${name} predict`);
         // Kernel, bias, batch norm's gamma, beta and moving statistics, the dense layer.
         graphs.weights.forEach((w, i) => close(w, want.weights[i], eps, `${name} weight ${i}`));
         assert.strictEqual(graphs.iterations, want.iterations, `${name} optimizer iterations`);
       }
     });

test('a convolution TF runs fused with its bias and relu (_FusedConv2D) is a graph node', async () => {
  const run = async () => {
    const m = tf.sequential();
    m.add(tf.layers.conv2d({filters: 8, kernelSize: 3, inputShape: [6, 6, 16], activation: 'relu',
                            kernelInitializer: init(8), biasInitializer: 'ones'}));
    m.add(tf.layers.depthwiseConv2d({kernelSize: 2, activation: 'relu', depthwiseInitializer: init(9)}));
    m.add(tf.layers.flatten());
    const x = tf.tensor4d(Array.from({length: 2 * 6 * 6 * 16}, (_, i) => Math.sin(i * 0.1)), [2, 6, 6, 16]);
    const out = [];
    for (let i = 0; i < 4; i++) out.push(...m.predict(x).dataSync());
    m.dispose();
    return out;
  };
  const before = replays();
  const graphs = await on('graphs', run);
  assert.strictEqual(replays() - before, 3, 'tfjs\'s own layers: a graph from the second call');
  close(graphs, await on('cpu', run), 1e-4, 'cpu');
});

test('a ReLU capped at 6 (Relu, then ClipByValue) runs as Relu6 in graphs, as eager and cpu',
     async () => {
       // Graphs build ClipByValue(Relu(x), 0, 6) as Relu6(x); other caps stay as they ran.
       for (const maxValue of [6, 5]) {
         const run = async () => {
           const m = tf.sequential();
           m.add(tf.layers.dense({units: 16, inputShape: [4], kernelInitializer: init(6),
                                  biasInitializer: 'ones'}));
           m.add(tf.layers.reLU({maxValue}));
           const x = tf.tensor2d(Array.from({length: 12}, (_, i) => 20 * Math.sin(i)), [3, 4]);
           const out = [];
           for (let i = 0; i < 3; i++) out.push(...m.predict(x).dataSync());
           m.dispose();
           x.dispose();
           return out;
         };
         const before = replays();
         const values = await graphsAsEagerAndCpu(run);
         assert.ok(replays() - before >= 2, 'replayed');
         assert.ok(values.some((v) => v === maxValue) && values.some((v) => v === 0) &&
                   values.some((v) => v > 0 && v < maxValue), `clipped both ways: ${values}`);
       }
     });


test('a convolution, its inference batch norm and its ReLU are one fused node in graphs, as ' +
     'eager and cpu', async () => {
  // Conv2D -> FusedBatchNormV3 (-> Relu or Relu6) builds as one _FusedConv2D (graphs::fusions);
  // a convolution whose output something else takes too stays as it ran.
  const bn = (seed) => tf.layers.batchNormalization({
    gammaInitializer: tf.initializers.randomUniform({minval: 0.5, maxval: 1.5, seed}),
    betaInitializer: tf.initializers.randomNormal({seed: seed + 1}),
    movingMeanInitializer: tf.initializers.randomNormal({seed: seed + 2}),
    movingVarianceInitializer: tf.initializers.randomUniform({minval: 0.5, maxval: 2, seed}),
  });
  const conv = (filters, seed) => tf.layers.conv2d({filters, kernelSize: 3, padding: 'same',
                                                    useBias: false, kernelInitializer: init(seed)});
  const build = () => {
    const input = tf.input({shape: [6, 6, 3]});
    const a = tf.layers.reLU({maxValue: 6}).apply(bn(10).apply(conv(8, 1).apply(input)));
    const b = tf.layers.activation({activation: 'relu'}).apply(bn(20).apply(conv(8, 2).apply(a)));
    const c = bn(30).apply(conv(4, 3).apply(b));
    // Not fused: the convolution's output is taken by the batch norm and by the sum.
    const taken = conv(4, 4).apply(c);
    const d = tf.layers.add().apply([bn(40).apply(taken), taken]);
    return tf.model({inputs: input, outputs: tf.layers.flatten().apply(d)});
  };
  const fused = () => binding.stats().fusedNodes;
  const compiled = () => tf.node.callGraphStats().compiled;
  let counts = null;
  const run = async () => {
    const m = build();
    const x = tf.tensor4d(Array.from({length: 2 * 6 * 6 * 3}, (_, i) => 3 * Math.sin(i * 0.7)),
                          [2, 6, 6, 3]);
    const [fusedBefore, compiledBefore] = [fused(), compiled()];
    const out = [];
    for (let i = 0; i < 3; i++) {
      const y = m.predict(x);
      out.push(...y.dataSync());
      y.dispose();
    }
    // graphsAsEagerAndCpu runs with graphs first.
    counts ??= [fused() - fusedBefore, compiled() - compiledBefore];
    m.dispose();
    x.dispose();
    return out;
  };
  const values = await graphsAsEagerAndCpu(run);
  assert.ok(values.some((v) => v < 0) && values.some((v) => v > 0), 'the last sum is signed');
  const [fusedNodes, graphs] = counts;
  assert.ok(graphs >= 1, 'compiled');
  assert.strictEqual(fusedNodes, 3 * graphs, 'three fused convolutions per graph');
});
test('a convolution then an Activation layer\'s ReLU is one node in graphs, predicting and ' +
     'training, as eager and cpu', async () => {
  // graphs::fusions (fuse_conv_relu): a Conv2D layer adds its bias in the conv's op (the
  // package's FewChannelConv2D for one input channel, TF's _FusedConv2D for 20), and the Relu of
  // the Activation layer after it becomes the op's own ReLU; in training, the ReLU's gradient
  // takes the fused op's output.
  const build = () => {
    const m = tf.sequential();
    m.add(tf.layers.conv2d({filters: 20, kernelSize: 3, inputShape: [10, 10, 1],
                            kernelInitializer: init(21), biasInitializer: 'ones'}));
    m.add(tf.layers.activation({activation: 'relu'}));
    m.add(tf.layers.conv2d({filters: 16, kernelSize: 3, kernelInitializer: init(22),
                            biasInitializer: tf.initializers.constant({value: -0.2})}));
    m.add(tf.layers.activation({activation: 'relu'}));
    m.add(tf.layers.flatten());
    m.add(tf.layers.dense({units: 3, kernelInitializer: init(23), activation: 'softmax'}));
    return m;
  };
  const n = 8;
  const data = () => [
    tf.tensor4d(Array.from({length: n * 100}, (_, i) => Math.sin(i * 0.37)), [n, 10, 10, 1]),
    tf.oneHot(tf.tensor1d(Array.from({length: n}, (_, i) => i % 3), 'int32'), 3),
  ];
  const fused = () => binding.stats().fusedNodes;
  let counts = null;
  const run = async () => {
    const m = build();
    const [x, y] = data();
    const before = fused();
    const out = [];
    for (let i = 0; i < 3; i++) {
      const p = m.predict(x);
      out.push(...p.dataSync());
      p.dispose();
    }
    const predicted = fused() - before;
    m.compile({optimizer: tf.train.sgd(0.1), loss: 'categoricalCrossentropy'});
    const h = await m.fit(x, y, {epochs: 4, batchSize: n, shuffle: false, verbose: 0});
    if (tf.getBackend() === 'tensorflow' && tf.env().getBool(FLAG)) {
      counts ??= [predicted, fused() - before - predicted];
    }
    out.push(...h.history.loss, ...m.getWeights().flatMap((w) => Array.from(w.dataSync())));
    m.dispose();
    tf.dispose([x, y]);
    return out;
  };
  await graphsAsEagerAndCpu(run);
  const [predictFused, fitFused] = counts;
  assert.ok(predictFused >= 2, `the predict graph's two convolutions took their ReLUs: ${predictFused}`);
  // The two convolutions with their ReLUs, and the training step's other fused nodes (4 when
  // the ReLUs are not fused: column sums of the bias gradients, element-wise chains).
  assert.ok(fitFused >= 6, `the training graph's fused nodes: ${fitFused}`);
});

test('a training step fuses convolution, bias and relu, relu gradients and column sums', async () => {
  // graphs::fusions in a training step: the second convolution (16 input channels), its bias and
  // relu as one _FusedConv2D, whose relu gradient (tfjs's step: Sign, then Relu) takes its
  // output; bias gradients and batch norm statistics (Sum and Mean over all axes but the last,
  // 36864 elements) as TfjsNodeRs>ColumnSums. Trained weights and losses as eager and cpu.
  const counts = [];
  const run = async () => {
    const m = tf.sequential();
    m.add(tf.layers.conv2d({filters: 16, kernelSize: 3, padding: 'same', activation: 'relu',
                            inputShape: [12, 12, 1], kernelInitializer: init(11)}));
    m.add(tf.layers.batchNormalization());
    m.add(tf.layers.conv2d({filters: 16, kernelSize: 3, padding: 'same', activation: 'relu',
                            kernelInitializer: init(12), biasInitializer: 'ones'}));
    m.add(tf.layers.globalAveragePooling2d({}));
    m.add(tf.layers.dense({units: 3, kernelInitializer: init(13), activation: 'softmax'}));
    m.compile({optimizer: tf.train.adam(0.01), loss: 'sparseCategoricalCrossentropy'});
    const n = 32;
    const x = tf.tensor4d(Array.from({length: n * 144}, (_, i) => Math.sin(i * 0.23)),
                          [n, 12, 12, 1]);
    const y = tf.tensor2d(Array.from({length: n}, (_, i) => i % 3), [n, 1]);
    const fused = binding.stats().fusedNodes;
    const h = await m.fit(x, y, {epochs: 4, batchSize: 16, shuffle: false, verbose: 0});
    if (tf.getBackend() === 'tensorflow' && tf.env().getBool(FLAG)) {
      counts.push(binding.stats().fusedNodes - fused);
    }
    const out = [...h.history.loss, ...m.getWeights().flatMap((w) => Array.from(w.dataSync()))];
    m.dispose();
    tf.dispose([x, y]);
    return out;
  };
  const graphs = await on('graphs', run);
  close(graphs, await on('eager', run), 1e-4, 'eager');
  close(graphs, await on('cpu', run), 1e-4, 'cpu');
  // One fused convolution, its relu gradient and a second relu gradient, the three column
  // sums of the biases' gradients and the batch norm's mean, and element-wise chains.
  assert.ok(counts[0] >= 6, `fused nodes: ${counts[0]}`);
});

test('a chain of element-wise ops runs as one fused node with the bits of its ops', async () => {
  // graphs::fusions builds chains of element-wise float ops as one TfjsNodeRs>Elementwise node
  // (kernels::elementwise), which must give exactly what TF's kernels give: NaNs, infinities,
  // signed zeros and denormals (flushed, as TF's threads flush them) included. 70000 elements:
  // the kernel splits them across threads, each in the caller's float mode.
  const n = 70000;
  const special = [NaN, -0, 0, Infinity, -Infinity, 1e-40, -1e-40, 3e38, -2];
  const values = (seed) => Float32Array.from({length: n}, (_, i) =>
    i % 97 < special.length ? special[i % 97] : 10 * Math.sin(seed * i + 1));
  const a = tf.tensor1d(values(0.37));
  const b = tf.tensor1d(values(0.91));
  const chain = (x, y) => {
    const m = tf.maximum(x.mul(2).sub(y), tf.minimum(y, x));
    const r = x.square().add(1).sqrt().div(y.neg()).relu();
    // tf.step: TF's Relu of its Sign, one op of the chain (NaN and denormals give 0).
    return {first: m.add(r).mul(tf.step(x)), second: r.mul(tf.scalar(0.5)).sub(m.div(y))};
  };
  const f = tf.node.function(chain);
  const fused = () => binding.stats().fusedNodes;
  const before = fused();
  for (let i = 0; i < 3; i++) {
    // The function's graph, and the ops run one by one as TF's eager kernels (not deferred
    // into a graph: TF's kernels flush denormals on its pool's threads and eagerly, but not
    // on the thread that runs a graph).
    const got = f(a, b);
    binding.pauseDeferring(true);
    let want;
    try {
      want = chain(a, b);
    } finally {
      binding.pauseDeferring(false);
    }
    for (const k of ['first', 'second']) {
      const [g, w] = [got[k].dataSync(), want[k].dataSync()];
      const bits = (arr) => new Uint32Array(arr.buffer, arr.byteOffset, arr.length);
      const differ = bits(g).findIndex((v, j) => v !== bits(w)[j] && !(isNaN(g[j]) && isNaN(w[j])));
      assert.strictEqual(differ, -1, `${k}[${differ}]: ${g[differ]} != ${w[differ]} (call ${i})`);
    }
    tf.dispose([got, want]);
  }
  assert.ok(fused() > before, 'the chain was fused');
  tf.dispose([a, b]);
});

test('replayed calls leave the tensor counts of eager calls', async () => {
  const counts = async () => {
    const m = convnet();
    const {x, y} = data(16);
    const base = tf.memory().numTensors;
    const seen = [];
    for (let i = 0; i < 5; i++) {
      await m.fit(x, y, {epochs: 1, batchSize: 8, verbose: 0});
      const p = m.predict(x);
      seen.push(tf.memory().numTensors - base);
      p.dispose();
    }
    m.dispose();
    tf.dispose([x, y]);
    return seen;
  };
  const graphs = await on('graphs', counts);
  const eager = await on('eager', counts);
  assert.deepStrictEqual(graphs, eager);
});

const compiled = () => tf.node.callGraphStats().compiled;

test('a predict of several batches is a graph from its second call, as eager and cpu', async () => {
  const run = async () => {
    const m = convnet();
    const out = [];
    for (const n of [32, 30]) {
      // 4 batches of 8; then 8, 8, 8 and 6.
      const {x} = data(n);
      const before = compiled();
      out.push(...m.predict(x, {batchSize: 8}).dataSync());
      const after = compiled();
      const replayed = replays();
      out.push(...m.predict(x, {batchSize: 8}).dataSync());
      if (tf.getBackend() === 'tensorflow' && tf.env().getBool(FLAG)) {
        assert.strictEqual(after - before, 1, `${n} samples: compiled by the first predict`);
        assert.strictEqual(replays() - replayed, 1, `${n} samples: the second replays`);
      }
      x.dispose();
    }
    m.dispose();
    return out;
  };
  await graphsAsEagerAndCpu(run);
});

test('a predict of several small batches sets its graph up on the executor as it compiles', async () => {
  // Its batches witness one another, so its first call compiles the graph; the graph's first
  // run (TF's setup of it) is queued then, not left to the second call.
  const runs = () => tf.backend().binding.stats().backgroundRuns;
  const run = async () => {
    const m = tf.sequential({layers: [
      tf.layers.dense({units: 4, inputShape: [3], activation: 'relu', kernelInitializer: init(2)}),
      tf.layers.dense({units: 2, kernelInitializer: init(3)})]});
    const x = tf.tensor2d([[1, -2, 3], [0.5, 1, -1], [2, 2, 2], [-1, 0, 1], [3, -3, 0.25],
                           [1, 1, 1], [0, 0, 0], [-2, 4, 1]]);
    const graphed = tf.getBackend() === 'tensorflow' && tf.env().getBool(FLAG);
    const out = [];
    const before = graphed ? runs() : 0;
    const compiledBefore = compiled();
    out.push(...m.predict(x, {batchSize: 2}).dataSync());
    if (graphed) {
      assert.strictEqual(compiled() - compiledBefore, 1, 'compiled by the first predict');
      assert.strictEqual(runs() - before, 1, 'its setup run queued by the first predict');
    }
    const replayed = replays();
    out.push(...m.predict(x, {batchSize: 2}).dataSync());
    if (graphed) assert.strictEqual(replays() - replayed, 1, 'the second replays');
    m.dispose();
    x.dispose();
    return out;
  };
  await graphsAsEagerAndCpu(run);
});

test('batches whose JS writes different values do not witness one another', async () => {
  // A layer adding how often it ran: each batch, and each call, writes another constant.
  class AddCount extends tf.layers.Layer {
    constructor() {
      super({});
      this.count = 0;
    }
    call(inputs) {
      this.count++;
      return tf.add(Array.isArray(inputs) ? inputs[0] : inputs, tf.scalar(this.count));
    }
    static get className() {
      return 'AddCount';
    }
  }
  const m = tf.sequential();
  m.add(tf.layers.dense({units: 2, inputShape: [3], kernelInitializer: 'ones', useBias: false}));
  m.add(new AddCount());
  const x = tf.ones([4, 3]);
  const before = compiled();
  for (let call = 0; call < 6; call++) {
    const got = Array.from(m.predict(x, {batchSize: 2}).dataSync());
    // Batch b of call c added 2c + b + 1 to 3.
    const want = [0, 0, 1, 1].map((b) => 3 + 2 * call + b + 1);
    close(got, want.flatMap((v) => [v, v]), 0, `call ${call}`);
  }
  assert.strictEqual(compiled(), before, 'never a graph');
  m.dispose();
  x.dispose();
});

test('a training step that made the optimizer\'s slots is the graph of the next', async () => {
  const run = async () => {
    const m = convnet();
    const {x, y} = data(8);
    const losses = [];
    const compiledAt = [];
    for (let step = 0; step < 4; step++) {
      const before = compiled();
      losses.push(...await m.trainOnBatch(x, y));
      if (compiled() > before) compiledAt.push(step);
    }
    const weights = m.getWeights().flatMap((w) => Array.from(w.dataSync()));
    m.dispose();
    tf.dispose([x, y]);
    return {losses, weights, compiledAt};
  };
  const graphs = await on('graphs', run);
  assert.deepStrictEqual(graphs.compiledAt, [0], 'adam made its slots in step 0, which compiles');
  for (const [name, want, eps] of [['eager', await on('eager', run), 1e-5],
    ['cpu', await on('cpu', run), 1e-4]]) {
    close(graphs.losses, want.losses, eps, `${name} losses`);
    close(graphs.weights, want.weights, eps, `${name} weights`);
  }
});

test('a repeat runs ahead of TF on the graph of the call it repeats, set up meanwhile', () => {
  // Eight small products and sums per call: a call of small ops (CallGraphs.speculate).
  let factor = 2;
  const chain = (x) => {
    let y = x;
    for (let i = 0; i < 8; i++) y = y.mul(tf.scalar(factor)).add(x);
    return y;
  };
  // (((1·f + 1)·f + 1)…): 8 times.
  const want = () => {
    let y = 1;
    for (let i = 0; i < 8; i++) y = y * factor + 1;
    return new Array(4).fill(y);
  };
  const f = tf.node.function(chain);
  const a = tf.ones([2, 2]);
  const value = (fn, x) => {
    const y = fn(x);
    const got = Array.from(y.dataSync());
    y.dispose();
    return got;
  };
  const start = binding.stats();
  const startCached = tf.memory().numCachedConstants;
  const aheadBefore = tf.node.callGraphStats().ranAhead;
  const since = () => {
    const now = binding.stats();
    return {graphs: now.callGraphs - start.callGraphs,
            runs: now.backgroundRuns - start.backgroundRuns,
            ahead: tf.node.callGraphStats().ranAhead - aheadBefore};
  };
  close(value(f, a), want(), 0, 'call 1');
  assert.deepStrictEqual(since(), {graphs: 0, runs: 0, ahead: 0}, 'call 1 only records');
  close(value(f, a), want(), 0, 'call 2');
  assert.deepStrictEqual(since(), {graphs: 1, runs: 2, ahead: 1},
                         'call 2 set call 1\'s graph up, kept it, and ran ahead on it');
  close(value(f, a), want(), 0, 'call 3, a replay');

  // A function whose every call writes another constant: each call stops running ahead at its
  // first product, and no graph is kept.
  const g = tf.node.function(chain);
  const graphsBefore = binding.stats().callGraphs;
  for (let call = 0; call < 6; call++) {
    factor = call + 3;
    close(value(g, a), want(), 1e-6, `g call ${call}`);
  }
  assert.strictEqual(binding.stats().callGraphs, graphsBefore, 'no graph kept');

  // Large products: their graph's setup is not worth computing the call again for.
  const big = tf.ones([256, 256]);
  const h = tf.node.function((x) => tf.matMul(x, x));
  const runsBefore = binding.stats().backgroundRuns;
  for (let call = 0; call < 2; call++) h(big).dispose();
  assert.strictEqual(binding.stats().backgroundRuns, runsBefore + 1, 'only the call\'s own run');
  tf.dispose([a, big]);
  assert.strictEqual(uncachedTensors(), start.liveTensors - startCached, 'no id left behind');
});

test('a call running ahead that reads a value or runs other ops runs its ops then, as eagerly',
     () => {
       let course = 'exp';
       let read = false;
       const seen = [];
       const f = tf.node.function((x) => {
         const y = x.mul(tf.scalar(2)).add(tf.scalar(1));
         if (read) seen.push(...y.dataSync());
         const z = course === 'exp' ? y.div(tf.scalar(10)).exp() : y.div(tf.scalar(10)).log();
         return z.mul(tf.scalar(3));
       });
       const x = tf.tensor1d([0, 1, 2]);
       const want = (op) => [0, 1, 2].map((v) => 3 * op((2 * v + 1) / 10));
       const value = () => {
         const y = f(x);
         const got = Array.from(y.dataSync());
         y.dispose();
         return got;
       };
       const start = uncachedTensors();
       close(value(), want(Math.exp), 1e-6, 'call 1');
       read = true;
       close(value(), want(Math.exp), 1e-6, 'call 2 reads an op output');
       close(seen, [1, 3, 5], 0, 'the value read');
       read = false;
       course = 'log';
       close(value(), want(Math.log), 1e-6, 'call 3 takes another op at its fourth');
       course = 'exp';
       for (let call = 4; call < 8; call++) close(value(), want(Math.exp), 1e-6, `call ${call}`);
       x.dispose();
       assert.strictEqual(uncachedTensors(), start, 'no id left behind');
     });

test('a call running ahead that throws keeps what it did before, as eagerly', () => {
  const start = uncachedTensors();
  const zeros = tf.zeros([2]);
  const v = tf.variable(zeros);
  zeros.dispose();
  let fail = false;
  const f = tf.node.function((x) => {
    v.assign(v.add(x));
    if (fail) throw new Error('thrown by the call');
    return v.mul(tf.scalar(2));
  });
  const x = tf.ones([2]);
  const first = f(x);
  close(Array.from(first.dataSync()), [2, 2], 0, 'call 1');
  first.dispose();
  fail = true;
  assert.throws(() => f(x), /thrown by the call/);
  close(Array.from(v.dataSync()), [2, 2], 0, 'the assignment before the throw');
  fail = false;
  for (let call = 3; call < 7; call++) {
    const y = f(x);
    close(Array.from(y.dataSync()), [2 * call, 2 * call], 0, `call ${call}`);
    y.dispose();
  }
  tf.dispose([v, x]);
  assert.strictEqual(uncachedTensors(), start, 'no id left behind');
});

test('a training step whose graph fails on values fails as eagerly, replayed or running ahead',
     async () => {
  // An embedding's gather fails on an index out of range. With tfjs's own loss the step is a
  // graph from its second call, and the replay fails; with a loss of the program's own the
  // step waits for a witness and runs ahead: the graph fails at the end of the call, then its
  // ops run eagerly and fail as eager would have. Either leaves weights and count as they
  // were before the step.
  const run = (loss) => async () => {
    const m = tf.sequential();
    m.add(tf.layers.embedding({inputDim: 5, outputDim: 2, inputLength: 3,
                               embeddingsInitializer: init(3)}));
    m.add(tf.layers.flatten());
    m.add(tf.layers.dense({units: 1, kernelInitializer: init(4)}));
    m.compile({optimizer: tf.train.sgd(0.1), loss});
    const x = tf.tensor2d([[0, 1, 2], [3, 4, 0]], [2, 3], 'int32');
    const bad = tf.tensor2d([[0, 1, 2], [3, 7, 0]], [2, 3], 'int32');
    const y = tf.tensor2d([[1], [-1]]);
    const losses = [await m.trainOnBatch(x, y)];
    const weights = () => m.getWeights().flatMap((w) => Array.from(w.dataSync()));
    const before = {weights: weights(), iterations: m.optimizer.iterations};
    let failed = false;
    try {
      await m.trainOnBatch(bad, y);
    } catch (e) {
      failed = true;
    }
    assert.ok(failed, 'the step with index 7 fails');
    close(weights(), before.weights, 0, 'weights after the failed step');
    assert.strictEqual(m.optimizer.iterations, before.iterations, 'iterations');
    for (let step = 0; step < 3; step++) losses.push(await m.trainOnBatch(x, y));
    const out = losses.concat(weights());
    m.dispose();
    tf.dispose([x, bad, y]);
    return out;
  };
  const replayed = replays();
  await graphsAsEagerAndCpu(run('meanSquaredError'));
  assert.ok(replays() > replayed, 'steps replayed');
  const ahead = tf.node.callGraphStats().ranAhead;
  await graphsAsEagerAndCpu(run((y, p) => tf.losses.meanSquaredError(y, p)));
  assert.ok(tf.node.callGraphStats().ranAhead > ahead, 'steps ran ahead');
});

test('only calls of tfjs\'s own JS are graphs from their first recording', async () => {
  // A layer of the program's own may write other values on each call (here a count of its
  // calls), so its model's calls wait for a second call to witness the first; so does an
  // instance whose call is replaced, and a training step drawing noise in JS.
  class Counted extends tf.layers.Layer {
    constructor() {
      super({});
      this.calls = 0;
    }
    call(inputs) {
      this.calls++;
      return tf.tidy(() => tf.add(Array.isArray(inputs) ? inputs[0] : inputs, 1));
    }
    static get className() {
      return 'Counted';
    }
  }
  tf.serialization.registerClass(Counted);
  const x = tf.tensor2d([[1, 2], [3, 4]]);
  const dense = () => tf.layers.dense({units: 2, inputShape: [2], kernelInitializer: init(5)});
  const replaysOf = (m, calls) => {
    const before = replays();
    const outs = [];
    for (let i = 0; i < calls; i++) outs.push(Array.from(m.predict(x).dataSync()));
    return {replayed: replays() - before, outs};
  };
  const first = tf.node.callGraphStats().fromFirstCalls;
  const own = tf.sequential({layers: [dense()]});
  assert.strictEqual(replaysOf(own, 4).replayed, 3, 'tfjs\'s layers: from the second call');
  assert.strictEqual(tf.node.callGraphStats().fromFirstCalls, first + 1);
  const custom = tf.sequential({layers: [dense(), new Counted()]});
  const counted = replaysOf(custom, 4);
  assert.strictEqual(counted.replayed, 2, 'a layer of its own: from the third call');
  const eager = await on('eager', () => Array.from(custom.predict(x).dataSync()));
  for (const out of counted.outs) close(out, eager, 1e-6, 'custom layer');
  const patched = tf.sequential({layers: [dense()]});
  const call = patched.layers[0].call;
  patched.layers[0].call = function(...args) {
    return call.apply(this, args);
  };
  assert.strictEqual(replaysOf(patched, 4).replayed, 2, 'a replaced call: from the third call');
  const noisy = tf.sequential({layers: [dense(), tf.layers.gaussianNoise({stddev: 1})]});
  noisy.compile({optimizer: 'sgd', loss: 'meanSquaredError'});
  const before = replays();
  const losses = [];
  for (let step = 0; step < 4; step++) losses.push(await noisy.trainOnBatch(x, x));
  assert.strictEqual(replays(), before, 'noise drawn in JS: never a graph');
  assert.strictEqual(new Set(losses).size, 4, `fresh noise every step: ${losses}`);
  for (const m of [own, custom, patched, noisy]) m.dispose();
  x.dispose();
});

test('dropout draws a fresh mask on every replay of a training step', async () => {
  const m = tf.sequential();
  m.add(tf.layers.dropout({rate: 0.5, inputShape: [64]}));
  m.add(tf.layers.dense({units: 1, kernelInitializer: 'ones', useBias: false}));
  m.compile({optimizer: tf.train.sgd(0), loss: 'meanSquaredError'});
  const x = tf.ones([4, 64]);
  const y = tf.zeros([4, 1]);
  const before = replays();
  const losses = [];
  for (let i = 0; i < 8; i++) losses.push((await m.trainOnBatch(x, y)));
  assert.ok(replays() - before >= 5, 'the training step replays');
  // Each loss is the mean of (sum of 64 inputs kept and doubled)^2: a fresh mask each call.
  assert.ok(new Set(losses).size >= 7, `losses repeat: ${losses}`);
  for (const loss of losses) assert.ok(loss > 500 && loss < 10000, `loss ${loss}`);
  // The mask of an explicit dropout keeps about half, scaled by 2.
  const drop = tf.node.function((t) => tf.dropout(t, 0.5));
  const masks = [];
  for (let i = 0; i < 5; i++) masks.push(Array.from(drop(tf.ones([1000])).dataSync()));
  for (const mask of masks) {
    assert.ok(mask.every((v) => v === 0 || v === 2), 'values 0 or 2');
    const kept = mask.filter((v) => v === 2).length;
    assert.ok(kept > 400 && kept < 600, `kept ${kept}`);
  }
  assert.notDeepStrictEqual(masks[3], masks[4]);
  m.dispose();
});

test('setWeights, trainable changes, a new optimizer setting and a new shape are seen at once',
     async () => {
       const run = async () => {
         const m = tf.sequential();
         m.add(tf.layers.dense({units: 2, inputShape: [3], kernelInitializer: init(3)}));
         m.add(tf.layers.dense({units: 1, kernelInitializer: init(4)}));
         m.compile({optimizer: tf.train.sgd(0.01), loss: 'meanSquaredError'});
         const x = tf.tensor2d([[1, 2, 3], [0, -1, 2], [3, 1, 0], [1, 1, 1]]);
         const y = tf.tensor2d([[1], [0], [2], [1]]);
         const seen = [];
         const predict = (t) => seen.push(...m.predict(t).dataSync());
         for (let i = 0; i < 4; i++) predict(x);
         m.setWeights([tf.ones([3, 2]), tf.zeros([2]), tf.ones([2, 1]), tf.zeros([1])]);
         predict(x);
         predict(x.slice([0, 0], [2, 3]));
         for (let i = 0; i < 4; i++) seen.push(...(await m.fit(x, y, {epochs: 1, verbose: 0})).history.loss);
         m.layers[0].trainable = false;
         m.compile({optimizer: tf.train.sgd(0.01), loss: 'meanSquaredError'});
         for (let i = 0; i < 4; i++) seen.push(...(await m.fit(x, y, {epochs: 1, verbose: 0})).history.loss);
         m.optimizer.setLearningRate(0.001);
         for (let i = 0; i < 4; i++) seen.push(...(await m.fit(x, y, {epochs: 1, verbose: 0})).history.loss);
         predict(x);
         m.dispose();
         return seen;
       };
       await graphsAsEagerAndCpu(run);
     });

test('tf.node.function: one graph per input signature, values as eager', async () => {
  let traced = 0;
  const f = tf.node.function((a, b, scale) => {
    traced++;
    return {sum: a.add(b).mul(scale), prod: tf.matMul(a, b, false, true)};
  });
  const a = tf.tensor2d([[1, 2], [3, 4]]);
  const b = tf.tensor2d([[5, 6], [7, 8]]);
  const before = replays();
  for (let i = 0; i < 5; i++) {
    const {sum, prod} = f(a, b, 2);
    close(Array.from(sum.dataSync()), [12, 16, 20, 24]);
    close(Array.from(prod.dataSync()), [17, 23, 39, 53]);
    tf.dispose([sum, prod]);
  }
  assert.strictEqual(traced, 2, 'recorded twice, then replayed');
  assert.strictEqual(replays() - before, 3);
  // A plain argument is part of the key; a new shape is a new key.
  close(Array.from(f(a, b, 3).sum.dataSync()), [18, 24, 30, 36]);
  close(Array.from(f(tf.ones([1, 2]), tf.ones([1, 2]), 1).sum.dataSync()), [2, 2]);
  // The same tensor passed twice is its own key, fed by position.
  for (let i = 0; i < 4; i++) close(Array.from(f(a, a, 1).sum.dataSync()), [2, 4, 6, 8]);
  close(Array.from(f(a, b, 1).sum.dataSync()), [6, 8, 10, 12]);
  // A scalar input that equals a constant the function uses: fed, not taken for the constant.
  const addOne = tf.node.function((s) => s.add(tf.scalar(1)));
  for (const v of [1, 1, 1, 5, 7]) assert.strictEqual(addOne(tf.scalar(v)).dataSync()[0], v + 1);
});

test('calls that read values or draw random numbers in JS stay eager and correct', async () => {
  const reads = tf.node.function((t) => t.mul(t.max().dataSync()[0]));
  for (const v of [1, 2, 3, 4, 5]) {
    assert.strictEqual(reads(tf.tensor1d([v, 1])).dataSync()[0], v * v);
  }
  const random = tf.node.function((t) => t.add(tf.randomNormal(t.shape)));
  const draws = [];
  for (let i = 0; i < 6; i++) draws.push(random(tf.zeros([4])).dataSync()[0]);
  assert.strictEqual(new Set(draws).size, 6, 'fresh random values each call');
});

test('a stateful RNN, whose state lives in JS between calls, predicts as eagerly', async () => {
  const run = async () => {
    const m = tf.sequential();
    m.add(tf.layers.simpleRNN({units: 3, stateful: true, batchInputShape: [2, 4, 2],
                               kernelInitializer: init(6), recurrentInitializer: init(7)}));
    const x = tf.tensor3d(Array.from({length: 16}, (_, i) => Math.sin(i)), [2, 4, 2]);
    const out = [];
    for (let i = 0; i < 6; i++) out.push(...m.predict(x).dataSync());
    m.resetStates();
    out.push(...m.predict(x).dataSync());
    m.dispose();
    return out;
  };
  close(await on('graphs', run), await on('cpu', run), 1e-5);
});

test('a replayed call fails where the eager call fails, with TF\'s message', async () => {
  const divide = tf.node.function((a, b) => tf.floorDiv(a, b));
  const a = tf.tensor1d([7, 8], 'int32');
  for (let i = 0; i < 4; i++) close(Array.from(divide(a, tf.tensor1d([2, 3], 'int32')).dataSync()), [3, 2]);
  assert.ok(tf.node.callGraphStats().compiled >= 1);
  const before = tf.memory().numTensors;
  assert.throws(() => divide(a, tf.tensor1d([2, 0], 'int32')), /Integer division by zero/);
  assert.strictEqual(tf.memory().numTensors, before + 1, 'only the divisor was created');
});

test('gradients through a model call see its ops (taped calls run eagerly)', async () => {
  const run = async () => {
    const m = tf.sequential();
    m.add(tf.layers.dense({units: 2, inputShape: [3], kernelInitializer: init(5)}));
    const x = tf.tensor2d([[1, 2, 3], [0, -1, 2]]);
    for (let i = 0; i < 3; i++) m.predict(x).dispose();
    const {grads} = tf.variableGrads(() => m.predict(x).square().sum());
    const out = Object.values(grads).map((g) => Array.from(g.dataSync()));
    m.dispose();
    return out;
  };
  const graphs = await on('graphs', run);
  const cpu = await on('cpu', run);
  graphs.forEach((g, i) => close(g, cpu[i], 1e-5, `grad ${i}`));
});

test('GraphModel execute, predict and executeAsync replay and match the file made by TF',
     async () => {
       const dir = path.join(__dirname, 'fixtures', 'model_io', 'graph_model');
       const want = require(path.join(dir, 'expected.json'));
       const model = await tf.loadGraphModel(tf.io.fileSystem(path.join(dir, 'model.json')));
       const x = tf.tensor(want.inputs.x.values, want.inputs.x.shape);
       const before = replays();
       for (let i = 0; i < 4; i++) {
         close(Array.from(model.predict(x).dataSync()), want.outputs.y.values, 1e-6);
         close(Array.from((await model.executeAsync(x)).dataSync()), want.outputs.y.values, 1e-6);
       }
       assert.ok(replays() - before >= 4, 'replayed');
       const graphs = binding.stats().callGraphs;
       model.dispose();
       assert.strictEqual(binding.stats().callGraphs, graphs - 2, 'dispose drops its 2 graphs');
     });

test('a GraphModel whose flatten reads a size computed from the input\'s shape replays',
     async () => {
       // Converted by the tensorflowjs converter: Shape -> StridedSlice -> Pack -> Reshape, whose
       // shape tfjs-converter reads back; values that depend only on the shape may be read.
       const file = path.join(__dirname, '..', 'benches', 'fixtures', 'graph_convnet', 'model.json');
       const model = await tf.loadGraphModel(tf.io.fileSystem(file));
       const x = tf.tensor4d(Array.from({length: 2 * 28 * 28}, (_, i) => Math.cos(i) ** 2),
                             [2, 28, 28, 1]);
       const eager = await on('eager', () => Array.from(model.predict(x).dataSync()));
       const before = replays();
       for (let i = 0; i < 4; i++) close(Array.from(model.predict(x).dataSync()), eager, 1e-5);
       assert.strictEqual(replays() - before, 3);
       // A read of values computed from the input keeps a call eager.
       const f = tf.node.function((t) => t.mul(t.sum().dataSync()[0]));
       for (const v of [1, 2, 3, 4]) assert.strictEqual(f(tf.tensor1d([v])).dataSync()[0], v * v);
       // So does a read of random values drawn by an op.
       const g = tf.node.function((t) => t.add(tf.dropout(tf.ones([64]), 0.5).sum().dataSync()[0]));
       const sums = [];
       for (let i = 0; i < 6; i++) sums.push(g(tf.scalar(0)).dataSync()[0]);
       assert.ok(new Set(sums).size > 1, `the same sums: ${sums}`);
     });

test('the switch turns call graphs off', async () => {
  await on('eager', async () => {
    const f = tf.node.function((t) => t.add(1));
    const before = tf.node.callGraphStats();
    for (let i = 0; i < 5; i++) assert.strictEqual(f(tf.scalar(1)).dataSync()[0], 2);
    const after = tf.node.callGraphStats();
    assert.strictEqual(after.recordings, before.recordings);
    assert.strictEqual(after.replays, before.replays);
  });
});

test('compileCall and runCall refuse malformed calls with errors, never a crash', () => {
  const attrT = [{name: 'T', type: 'type', value: 'float32'}];
  const add = binding.prepareOp('AddV2', attrT);
  const neg = binding.prepareOp('Neg', attrT);
  const matMul = binding.prepareOp('MatMul', [...attrT, {name: 'transpose_a', type: 'bool', value: false},
    {name: 'transpose_b', type: 'bool', value: false}]);
  const f = binding.createTensor([2], 'float32', binding.alloc('float32', 2));
  const i = binding.createTensor([2], 'int32', binding.alloc('int32', 2));
  const m = binding.createTensor([2, 3], 'float32', binding.alloc('float32', 6));
  const compileNeg = (id) => binding.compileCall([{op: neg, inputs: [{feed: 0}]}], [id], [], [{node: 0}]);
  const io = (...ids) => Float64Array.from({length: 64}, (_, k) => ids[k] || 0);
  const refused = [
    [() => binding.compileCall([{op: add, inputs: [{feed: 0}]}], [f], [], [{node: 0}]), /AddV2 takes 2 inputs, got 1/],
    [() => binding.compileCall([{op: add, inputs: [{feed: 0}, {feed: 1}]}], [f, i], [], [{node: 0}]),
      /Inconsistent values for attr 'T'/],
    [() => binding.compileCall([{op: neg, inputs: [{node: 0}]}], [f], [], [{node: 0}]), /does not come before/],
    [() => binding.compileCall([{op: neg, inputs: [{feed: 5}]}], [f], [], [{node: 0}]), /does not come before/],
    [() => binding.compileCall([{op: neg, inputs: [{feed: 0}]}], [f], [], [{node: 0, output: 7}]),
      /has no output 7/],
    [() => binding.compileCall([{op: neg, inputs: [{feed: 0, node: 0}]}], [f], [], [{node: 0}]),
      /a call ref is/],
    [() => binding.compileCall([{op: 99999, inputs: [{feed: 0}]}], [f], [], [{node: 0}]), /does not exist/],
    [() => compileNeg(123456789), /unknown or was deleted/],
    [() => binding.compileCall([{op: matMul, inputs: [{feed: 0}, {feed: 1}]}], [m, m], [], [{node: 0}]),
      /Dimensions must be equal, but are 3 and 2/],
    [() => binding.runCall(compileNeg(f), io(f), 3), /unknown or was deleted/],
    [() => binding.runCall(compileNeg(f), io(i), 1), /feed 0 must be float32 \[2\], got int32 \[2\]/],
    [() => binding.runCall(987654, io(), 0), /does not exist/],
    [() => binding.runCall(compileNeg(f), [f], 1), /io must be a Float64Array/],
    [() => binding.runCall(compileNeg(m), new Float64Array([m, 0]), 1), /too few for the outputs/],
    [() => binding.warmUpCall(987654, io(), 0), /does not exist/],
    [() => binding.warmUpCall(compileNeg(f), io(f), 3), /unknown or was deleted/],
    [() => binding.warmUpCall(compileNeg(f), io(i), 1), /feed 0 must be float32 \[2\], got int32 \[2\]/],
    [() => binding.callRunsAhead(987654), /does not exist/],
    [() => binding.reserveTensors(1 << 30), /at most 4194304 tensors/],
    [() => binding.fillTensors(io(f, m), 1), /tensor \d+ is not reserved/],
    [() => binding.fillTensors(io(f), 100), /io holds 64 values/],
  ];
  for (const [call, message] of refused) assert.throws(call, message);
  const before = binding.stats().liveTensors;
  const graph = compileNeg(f);
  assert.strictEqual(binding.runCall(graph, io(f), 1), 1);
  assert.strictEqual(binding.stats().liveTensors, before + 1);
  assert.strictEqual(binding.dropCall(graph), true);
  assert.strictEqual(binding.dropCall(graph), false);
  // A reserved id is no tensor until filled: using it is an error; filling it moves the source.
  const reserved = binding.reserveTensors(2);
  assert.throws(() => binding.tensorDataSync(reserved), /has not been computed yet/);
  const source = binding.createTensor([2], 'float32', Float32Array.from([3, 4]));
  binding.fillTensors(io(reserved, source), 1);
  assert.deepStrictEqual(Array.from(binding.tensorDataSync(reserved)), [3, 4]);
  assert.throws(() => binding.tensorDataSync(source), /unknown or was deleted/);
  assert.throws(() => binding.fillTensors(io(reserved, f), 1), /is not reserved/);
  binding.deleteTensor(reserved);
  binding.deleteTensor(reserved + 1);
  assert.strictEqual(binding.stats().liveTensors, before + 1, 'the run\'s output is left');
});
