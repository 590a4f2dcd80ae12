'use strict';
// Work off the JS thread (src/executor.rs): graph runs whose outputs' shapes are known before
// they run, and large products, are computed on the binding's executor thread while JS goes
// on; `await data()` resolves when they are done, synchronous reads wait for them. Nothing
// but timing may differ from the synchronous path.

const test = require('node:test');
const assert = require('node:assert');
const path = require('path');
const {spawnSync} = require('child_process');

const tf = require('..');
const serving = require('../benches/serving');

const ROOT = path.join(__dirname, '..');

/** Counts 1 ms timer callbacks while `promise` is awaited; resolves with [value, count]. */
async function ticksDuring(promise) {
  let ticks = 0;
  const timer = setInterval(() => ticks++, 1);
  try {
    const value = await promise;
    return [value, ticks];
  } finally {
    clearInterval(timer);
  }
}

function close(actual, expected, eps) {
  assert.strictEqual(actual.length, expected.length, 'length');
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= eps * Math.max(1, Math.abs(expected[i])),
              `[${i}] ${actual[i]} != ${expected[i]}`);
  }
}

/** tanh(x·a) `length` times: a long deferred run from its second call on. */
function chain(tfx, a, length) {
  return tfx.tidy(() => {
    let x = a;
    for (let i = 0; i < length; i++) x = tfx.tanh(tfx.matMul(x, a));
    return x;
  });
}

/** Reads `t` synchronously (ending the run that computes it) and disposes it. */
function readAndDispose(t) {
  t.dataSync();
  t.dispose();
}

/** Runs `source` in a child node process with `env`; returns its result. */
function child(source, env = {}) {
  return spawnSync(process.execPath, ['-e', source],
                   {cwd: ROOT, env: {...process.env, ...env}, encoding: 'utf8', timeout: 120000});
}

test('a timer keeps firing while await data() waits on a deferred graph run', async () => {
  const a = tf.randomNormal([400, 400], 0, 1 / 20, 'float32', 7);
  readAndDispose(chain(tf, a, 24));  // learned: the run ran op by op
  const runsBefore = tf.backend().binding.stats().backgroundRuns;
  const out = chain(tf, a, 24);
  const [values, ticks] = await ticksDuring(out.data());
  assert.ok(tf.backend().binding.stats().backgroundRuns > runsBefore, 'ran on the executor');
  assert.ok(ticks >= 3, `only ${ticks} timer callbacks while the run ran`);
  const again = chain(tf, a, 24);
  assert.deepStrictEqual(Array.from(values), Array.from(again.dataSync()),
                         'the same as the synchronous read of the same run');
  out.dispose();
  again.dispose();
  a.dispose();
});

test('a timer keeps firing while await data() waits on a long chain of eager products', async () => {
  const source = `
    const tf = require('.');
    const a = tf.randomNormal([1100, 1100], 0, 1 / 33, 'float32', 3);
    let x = a;
    for (let i = 0; i < 4; i++) x = tf.tanh(tf.matMul(x, a));
    const v = x.dataSync();
    console.log(JSON.stringify(Array.from(v.subarray(0, 64))));`;
  const eager = child(source, {TFJS_NODE_RS_BACKGROUND: '0'});
  assert.strictEqual(eager.status, 0, eager.stderr);
  const a = tf.randomNormal([1100, 1100], 0, 1 / 33, 'float32', 3);
  let x = a;
  const issued = performance.now();
  for (let i = 0; i < 4; i++) x = tf.tanh(tf.matMul(x, a));
  const issueMs = performance.now() - issued;
  const [values, ticks] = await ticksDuring(x.data());
  assert.ok(ticks >= 3, `only ${ticks} timer callbacks while the products ran`);
  close(Array.from(values.subarray(0, 64)), JSON.parse(eager.stdout.trim().split('\n').pop()), 1e-6);
  assert.ok(issueMs < 2000, `issuing the ops took ${issueMs} ms`);
  tf.dispose([a, x]);
});

test('await predict().data() and await fit() give the values of the cpu backend', async () => {
  const build = (tfx) => {
    const init = (seed) => tfx.initializers.glorotUniform({seed});
    const m = tfx.sequential();
    m.add(tfx.layers.conv2d({filters: 4, kernelSize: 3, activation: 'relu', inputShape: [8, 8, 2],
                             kernelInitializer: init(1)}));
    m.add(tfx.layers.flatten());
    m.add(tfx.layers.dense({units: 3, activation: 'softmax', kernelInitializer: init(2)}));
    m.compile({optimizer: tfx.train.sgd(0.1), loss: 'categoricalCrossentropy'});
    return m;
  };
  const run = async (tfx) => {
    const m = build(tfx);
    const x = tfx.tensor4d(Float32Array.from({length: 16 * 8 * 8 * 2}, (_, i) => Math.sin(i)),
                           [16, 8, 8, 2]);
    const y = tfx.oneHot(tfx.tensor1d([...Array(16).keys()].map((i) => i % 3), 'int32'), 3)
        .toFloat();
    const seen = [];
    for (let i = 0; i < 4; i++) {
      const out = m.predict(x);
      seen.push(...(await out.data()));
      out.dispose();
      const h = await m.fit(x, y, {epochs: 1, batchSize: 8, shuffle: false, verbose: 0});
      seen.push(...h.history.loss);
    }
    tfx.dispose([x, y]);
    m.dispose();
    return seen;
  };
  const runsBefore = tf.backend().binding.stats().backgroundRuns;
  const mine = await run(tf);
  assert.ok(tf.backend().binding.stats().backgroundRuns > runsBefore, 'ran on the executor');
  await tf.setBackend('cpu');
  try {
    close(mine, await run(tf), 1e-4);
  } finally {
    await tf.setBackend('tensorflow');
  }
});

test('dispose while the work is pending is safe and counts settle as before', async () => {
  const a = tf.randomNormal([300, 300], 0, 1 / 17, 'float32', 5);
  readAndDispose(chain(tf, a, 16));
  const expected = chain(tf, a, 16);
  const want = Array.from(expected.dataSync());
  expected.dispose();
  const tensors = tf.memory().numTensors;
  const live = tf.backend().binding.stats().liveTensors;

  // The tensor read is disposed before its values are ready: they still arrive.
  const out = chain(tf, a, 16);
  const reading = out.data();
  out.dispose();
  assert.deepStrictEqual(Array.from(await reading), want);

  // The input of a pending product is disposed: the product still sees it.
  const b = tf.randomNormal([1100, 1100], 0, 1 / 33, 'float32', 9);
  const product = tf.matMul(b, b);
  const reference = spawnSync(process.execPath, ['-e', `
    const tf = require('.');
    const b = tf.randomNormal([1100, 1100], 0, 1 / 33, 'float32', 9);
    console.log(JSON.stringify(Array.from(tf.matMul(b, b).dataSync().subarray(0, 32))));`],
  {cwd: ROOT, env: {...process.env, TFJS_NODE_RS_BACKGROUND: '0'}, encoding: 'utf8'});
  b.dispose();
  close(Array.from((await product.data()).subarray(0, 32)),
        JSON.parse(reference.stdout.trim().split('\n').pop()), 1e-6);
  product.dispose();

  assert.strictEqual(tf.memory().numTensors, tensors);
  assert.strictEqual(tf.backend().binding.stats().liveTensors, live);
  a.dispose();
});

test('process exit and worker termination with work in flight are clean', () => {
  const work = `
    const tf = require('.');
    const a = tf.randomNormal([1100, 1100], 0, 1 / 33, 'float32', 3);
    let x = a;
    for (let i = 0; i < 6; i++) x = tf.matMul(x, a);
    const reading = x.data()`;
  const exit = child(`${work}; process.exit(0);`);
  assert.strictEqual(exit.status, 0, exit.stderr);
  const worker = child(`
    const {Worker} = require('worker_threads');
    const w = new Worker(${JSON.stringify(work + '; require("worker_threads").parentPort.postMessage(1)')},
                         {eval: true});
    w.on('message', () => w.terminate().then(() => {
      const tf = require('.');
      console.log('after', tf.add(tf.scalar(1), tf.scalar(2)).dataSync()[0]);
    }));`);
  assert.strictEqual(worker.status, 0, worker.stderr);
  assert.match(worker.stdout, /after 3/);
  // A pending read keeps the process alive until its values arrive.
  const waits = child(`${work}; reading.then((v) => console.log('read', v.length));`);
  assert.strictEqual(waits.status, 0, waits.stderr);
  assert.match(waits.stdout, /read 1210000/);
});

test('an HTTP server predicting per request keeps its event loop responsive', async () => {
  const server = await serving.startServer('tensorflow');
  try {
    const r = await serving.load(server.port, {clients: 200, seconds: 2, warmupSeconds: 1});
    assert.strictEqual(r.errors, 0, r.firstError);
    assert.ok(r.served > 0, 'requests were served');
    // Synchronous execution stalls the loop for the whole queue of requests (200 x ~5 ms: 0.9
    // to 1.2 s here); off the JS thread the worst stall was ~10-20 ms here, 142 ms once on a
    // loaded CI machine.
    assert.ok(r.loopDelayMs.max < 300, `event loop stalled ${r.loopDelayMs.max} ms`);
  } finally {
    server.child.kill();
  }
});

test('SavedModel predictAsync gives predict\'s values; TF\'s run errors reject with its message', async () => {
  const {fixture, readJson} = require('./fixtures/helpers');
  const run = readJson('saved_model', 'keras_mlp', 'expected.json').runs[0];
  const model = await tf.node.loadSavedModel(fixture('saved_model', 'keras_mlp'), ['serve'],
                                             run.signature);
  const before = tf.memory().numTensors;
  const [key, given] = Object.entries(run.inputs)[0];
  const input = tf.tensor(given.values, given.shape, given.dtype);
  // Queued behind the product that computes its input, still running on the executor.
  const b = tf.randomNormal([1100, 1100], 0, 1 / 33, 'float32', 9);
  const product = tf.matMul(b, b);
  const fed = tf.tidy(() => tf.add(input, tf.mul(tf.sum(product), 0)));
  const [out, ticks] = await ticksDuring(model.predictAsync({[key]: fed}));
  assert.ok(ticks >= 1, `only ${ticks} timer callbacks while the product and the run ran`);
  for (const [k, want] of Object.entries(run.outputs)) {
    close(Array.from(out[k].dataSync()), want.values, 1e-5);
    assert.deepStrictEqual(out[k].shape, want.shape);
  }
  tf.dispose([input, b, product, fed, ...Object.values(out)]);
  assert.strictEqual(tf.memory().numTensors, before);
  model.dispose();

  const add = await tf.node.loadSavedModel(fixture('saved_model', 'multi_sig'), ['serve'], 'add');
  const x = tf.tensor1d([1, 2], 'int32');
  const y = tf.tensor1d([4, 5, 6], 'int32');
  await assert.rejects(add.predictAsync({a: x, b: y}), /Incompatible shapes: \[2\] vs. \[3\]/);
  assert.throws(() => add.predict({a: x, b: y}), /Incompatible shapes: \[2\] vs. \[3\]/);
  tf.dispose([x, y]);
  add.dispose();
  assert.strictEqual(tf.memory().numTensors, before);
});

test('the kernel set-up at start (src/tf/warm_up.rs) changes no product and is no background run',
     () => {
       // A fresh process: its first products meet the set-up in progress or done; with
       // TFJS_NODE_RS_BACKGROUND=0 there is none. By hand: [[1, 2, 0], [3, 4, 1]] ·
       // [[0, 1], [2, 2], [0, 1]] = [[4, 5], [8, 12]]; a 32x5 · 5x10 product of ones is 5.
       const source = `
         const tf = require('.');
         const small = tf.matMul(tf.tensor2d([[1, 2, 0], [3, 4, 1]]), tf.tensor2d([[0, 1], [2, 2], [0, 1]]));
         const ones = tf.matMul(tf.ones([32, 5]), tf.ones([5, 10]));
         console.log(JSON.stringify({small: Array.from(small.dataSync()),
           ones: [...new Set(ones.dataSync())], runs: tf.backend().binding.stats().backgroundRuns}));`;
       for (const background of ['1', '0']) {
         const r = child(source, {TFJS_NODE_RS_BACKGROUND: background});
         assert.strictEqual(r.status, 0, r.stderr);
         const out = JSON.parse(r.stdout.trim().split('\n').pop());
         assert.deepStrictEqual(out.small, [4, 5, 8, 12], `background ${background}`);
         assert.deepStrictEqual(out.ones, [5], `background ${background}`);
         assert.strictEqual(out.runs, 0, `background ${background}: no background run`);
       }
     });

/** What TF logs when a graph of the set-up fails: a kernel it refused, or a fatal error. */
const SET_UP_FAILED = /Executor failed to create kernel|^F\d{4} /m;

test('the graph passes\' set-up at start (src/tf/warm_up.rs) changes no value, logs no error ' +
     'and ends cleanly wherever the program stops it', () => {
  // A fresh process trains right after require: its first graph runs meet the set-up in
  // progress, or stopped by the program's first op. Its values are the cpu backend's.
  const train = `
    const tf = require('.');
    async function train(backend) {
      await tf.setBackend(backend);
      const init = (seed) => tf.initializers.randomUniform({minval: -0.5, maxval: 0.5, seed});
      const m = tf.sequential();
      m.add(tf.layers.dense({units: 16, activation: 'relu', inputShape: [8], kernelInitializer: init(1)}));
      m.add(tf.layers.dense({units: 3, activation: 'softmax', kernelInitializer: init(2)}));
      m.compile({optimizer: tf.train.sgd(0.1), loss: 'categoricalCrossentropy'});
      const x = tf.tensor2d(Array.from({length: 64}, (_, i) => Math.sin(i)), [8, 8]);
      const y = tf.oneHot(tf.tensor1d([0, 1, 2, 0, 1, 2, 0, 1], 'int32'), 3);
      await m.fit(x, y, {epochs: 4, batchSize: 8, shuffle: false, verbose: 0});
      return Array.from(m.predict(x).dataSync());
    }
    (async () => {
      const values = await train('tensorflow');
      const cpu = await train('cpu');
      console.log(JSON.stringify({values, cpu}));
    })();`;
  for (const background of ['1', '0']) {
    const r = child(train, {TFJS_NODE_RS_BACKGROUND: background});
    assert.strictEqual(r.status, 0, r.stderr);
    // A failed set-up: a kernel TF refused (logged as an error) or a fatal log line. (TF's CUDA
    // build logs other errors on a machine without a GPU.)
    assert.doesNotMatch(r.stderr, SET_UP_FAILED, `background ${background}`);
    const {values, cpu} = JSON.parse(r.stdout.trim().split('\n').pop());
    close(values, cpu, 1e-5);
  }
  // Stopped during the set-up: the part in progress ends, the rest are dropped.
  const exit = child(`require('.'); process.exit(0);`);
  assert.strictEqual(exit.status, 0, exit.stderr);
  assert.doesNotMatch(exit.stderr, SET_UP_FAILED);
  const worker = child(`
    const {Worker} = require('worker_threads');
    const w = new Worker(${JSON.stringify(`require(${JSON.stringify(ROOT)})`)}, {eval: true});
    w.on('online', () => setTimeout(() => w.terminate().then(() => {
      const tf = require('.');
      console.log('after', tf.add(tf.scalar(1), tf.scalar(2)).dataSync()[0]);
    }), 50));`);
  assert.strictEqual(worker.status, 0, worker.stderr);
  assert.match(worker.stdout, /after 3/);
});
