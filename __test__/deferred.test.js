'use strict';
// Deferred execution (src/ops/deferred.rs): repeated runs of ops are recorded, and once a run
// has ended long enough, it is deferred; once its replays have cost what setting its graph up
// would, it is compiled, its graph set up on the executor, and from then on it runs as one
// graph; results, errors and memory must be as if every op ran at once.

const test = require('node:test');
const assert = require('node:assert');
const {spawnSync} = require('child_process');
const path = require('path');

const tf = require('..');
const binding = require('../binding.js');

function close(actual, expected, eps = 1e-5) {
  assert.strictEqual(actual.length, expected.length, 'length');
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= eps * Math.max(1, Math.abs(expected[i])),
              `[${i}] ${actual[i]} != ${expected[i]}`);
  }
}

const sigmoid = (v) => 1 / (1 + Math.exp(-v));

/** h <- sigmoid(h·w + x·u + b) * tanh(h), `steps` times, on [n, k] rows; plain JS. */
function referenceSteps(x, h, w, u, b, n, k, steps) {
  let state = h.slice();
  for (let s = 0; s < steps; s++) {
    const next = new Float32Array(n * k);
    for (let r = 0; r < n; r++) {
      for (let c = 0; c < k; c++) {
        let z = b[c];
        for (let i = 0; i < k; i++) {
          z += state[r * k + i] * w[i * k + c] + x[r * k + i] * u[i * k + c];
        }
        next[r * k + c] = sigmoid(z) * Math.tanh(state[r * k + c]);
      }
    }
    state = next;
  }
  return state;
}

function tfSteps(x, h, w, u, b, steps) {
  return tf.tidy(() => {
    let state = h;
    for (let s = 0; s < steps; s++) {
      const z = tf.add(tf.add(tf.matMul(state, w), tf.matMul(x, u)), b);
      state = tf.mul(tf.sigmoid(z), tf.tanh(state));
    }
    return state;
  });
}

/**
 * Calls `call` (async, checking its own values, reading them synchronously) one call after
 * another until its run is compiled, at most `max` times. The graph is then being set up on
 * the executor: `call` replays the run until that is done.
 */
async function callUntilCompiled(call, max = 2000) {
  const before = binding.stats().compiledRuns;
  for (let calls = 0; calls < max; calls++) {
    await call();
    if (binding.stats().compiledRuns > before) return;
  }
  throw new Error(`not compiled in ${max} calls`);
}

/** `t` after ops that change no value, enough of them for the run to be deferred. */
function longPrefix(t) {
  let out = t;
  for (let i = 0; i < 8; i++) out = tf.add(out, 0);
  return out;
}

function randoms(count, seed) {
  const out = new Float32Array(count);
  let s = seed;
  for (let i = 0; i < count; i++) {
    s = (s * 1103515245 + 12345) % 2147483648;
    out[i] = (s / 2147483648) - 0.5;
  }
  return out;
}

test('a repeated run is deferred, compiled once its replays cost what a graph would, then runs as one graph, with the values of eager ops', async () => {
  const n = 4, k = 5, steps = 6;
  const wv = randoms(k * k, 1), uv = randoms(k * k, 2), bv = randoms(k, 3), hv = randoms(n * k, 4);
  const w = tf.tensor2d(wv, [k, k]), u = tf.tensor2d(uv, [k, k]), b = tf.tensor1d(bv);
  const h = tf.tensor2d(hv, [n, k]);
  let seed = 10;
  const call = async (read) => {
    const xv = randoms(n * k, seed++);
    const x = tf.tensor2d(xv, [n, k]);
    const out = tfSteps(x, h, w, u, b, steps);
    assert.deepStrictEqual(out.shape, [n, k]);
    close(await read(out), referenceSteps(xv, hv, wv, uv, bv, n, k, steps), 1e-4);
    tf.dispose([x, out]);
  };
  const before = binding.stats();
  // The first call learns each op's shapes, the second defers them and replays them: no graph
  // is made before a replay has been timed.
  for (let i = 0; i < 2; i++) await call((t) => t.dataSync());
  assert.strictEqual(binding.stats().compiledRuns, before.compiledRuns, 'compiled at once');
  await callUntilCompiled(() => call((t) => t.dataSync()));
  // An asynchronous read runs the run as an executor job, after the graph's set-up there;
  // from then on a synchronous read runs the graph too.
  const graphRuns = binding.stats().graphRuns;
  await call((t) => t.data());
  for (let i = 0; i < 3; i++) await call((t) => t.dataSync());
  const after = binding.stats();
  assert.ok(after.deferredOps - before.deferredOps >= 3 * 6 * steps, 'ops were deferred');
  assert.strictEqual(after.graphRuns - graphRuns, 4, 'the run ran as one graph');
  tf.dispose([w, u, b, h]);
});

test('many compiled runs, each in a graph of its own, keep their values when met again', async () => {
  // One run per input shape: 60 runs are compiled and set up, then each is met again, oldest
  // first.
  const shapes = Array.from({length: 60}, (_, i) => [i + 1, 3]);
  const chain = (x) => tf.tidy(() => {
    let y = x;
    for (let i = 0; i < 4; i++) y = tf.relu(tf.add(tf.mul(y, -1.5), 0.25 * i));
    return y;
  });
  const reference = (v) => {
    let y = v;
    for (let i = 0; i < 4; i++) y = Math.max(0, y * -1.5 + 0.25 * i);
    return y;
  };
  const check = async (shape, seed, read = (t) => t.dataSync()) => {
    const xv = randoms(shape[0] * shape[1], seed);
    const x = tf.tensor2d(xv, shape);
    const out = chain(x);
    close(await read(out), Array.from(xv, reference), 1e-5);
    tf.dispose([x, out]);
  };
  const before = binding.stats();
  for (const shape of shapes) {
    let seed = shape[0] * 7;
    await callUntilCompiled(() => check(shape, seed++));
  }
  const compiled = binding.stats().compiledRuns - before.compiledRuns;
  assert.strictEqual(compiled, shapes.length, `${compiled} runs compiled`);
  // Each asynchronous read queues its run after every set-up queued before it.
  await check(shapes[shapes.length - 1], 999, (t) => t.data());
  const graphRuns = binding.stats().graphRuns;
  for (const shape of shapes) await check(shape, 1000 + shape[0]);
  assert.strictEqual(binding.stats().graphRuns - graphRuns, shapes.length, 'each ran as its graph');
  assert.strictEqual(binding.stats().compiledRuns - before.compiledRuns, compiled, 'none again');
});

test('deferred outputs nobody holds are never computed; memory returns to its start', () => {
  const a = tf.tensor2d(randoms(12, 5), [3, 4]);
  let start, startNative;
  for (let call = 0; call < 5; call++) {
    if (call === 1) {
      // After the first call, which also caches the scalar constants (1.5, 0.25).
      start = tf.memory().numTensors;
      startNative = binding.stats().liveTensors;
    }
    const kept = tf.tidy(() => {
      let t = a;
      for (let i = 0; i < 12; i++) t = tf.relu(tf.sub(tf.mul(t, 1.5), 0.25));
      tf.exp(t);  // not kept: disposed by tidy before anything reads it
      return t;
    });
    const expected = Array.from(a.dataSync(), (v) => {
      let t = v;
      for (let i = 0; i < 12; i++) t = Math.max(0, Math.fround(Math.fround(t * 1.5) - 0.25));
      return t;
    });
    close(kept.dataSync(), expected);
    kept.dispose();
  }
  assert.strictEqual(tf.memory().numTensors, start);
  assert.strictEqual(binding.stats().liveTensors, startNative);
  a.dispose();
});

test('a failing op throws at its call, also inside a known run, and later runs still work', () => {
  const x = tf.ones([2, 3]);
  const w = tf.ones([3, 4]);
  const bad = tf.ones([5, 4]);
  const before = binding.stats().deferredOps;
  for (let call = 0; call < 3; call++) {
    const y = tf.tidy(() => tf.relu(tf.matMul(longPrefix(tf.add(x, 1)), w)));
    close(y.dataSync(), new Array(8).fill(6));
    y.dispose();
  }
  assert.ok(binding.stats().deferredOps > before, 'the run was deferred');
  assert.throws(() => tf.tidy(() => tf.relu(tf.matMul(longPrefix(tf.add(x, 1)), bad))),
                /Matrix size.incompatible|must match/);
  const y = tf.tidy(() => tf.relu(tf.matMul(longPrefix(tf.add(x, 1)), w)));
  close(y.dataSync(), new Array(8).fill(6));
  tf.dispose([x, w, bad, y]);
});

test('integer arguments are part of what a run is known by', () => {
  const x = tf.tensor1d([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const before = binding.stats().deferredOps;
  for (let call = 0; call < 3; call++) {
    for (const [begin, size] of [[0, 4], [3, 5], [6, 2]]) {
      const y = tf.tidy(() => tf.exp(tf.mul(tf.slice(longPrefix(x), begin, size), 0)));
      assert.deepStrictEqual(y.shape, [size]);
      close(y.dataSync(), new Array(size).fill(1));
      y.dispose();
    }
    const parts = tf.tidy(() => tf.split(longPrefix(tf.add(x, 1)), [3, 7]));
    assert.deepStrictEqual(parts.map((p) => p.shape), [[3], [7]]);
    close(parts[1].dataSync(), [4, 5, 6, 7, 8, 9, 10]);
    tf.dispose(parts);
  }
  assert.ok(binding.stats().deferredOps > before, 'the runs were deferred');
  x.dispose();
});

test('reading an output in the middle ends the run there; the rest stays correct', () => {
  const x = tf.tensor1d([1, 2, 3]);
  const before = binding.stats().deferredOps;
  for (let call = 0; call < 4; call++) {
    const a = tf.tidy(() => tf.mul(longPrefix(x), 2));
    const b = tf.add(a, 1);
    close(a.dataSync(), [2, 4, 6]);
    const c = tf.mul(b, a);
    close(c.dataSync(), [6, 20, 42]);
    tf.dispose([a, b, c]);
  }
  assert.ok(binding.stats().deferredOps > before, 'the run was deferred');
  x.dispose();
});

test('a run that always ends short runs its ops at once: deferring it would only add cost', () => {
  // A shape no other test uses, so that no long run shares the first op.
  const x = tf.tensor3d([1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2]);
  const before = binding.stats();
  for (let call = 0; call < 5; call++) {
    const y = tf.tidy(() => tf.relu(tf.sub(tf.mul(tf.add(x, 1), 2), 3)));
    close(y.dataSync(), [1, 3, 5, 7, 9, 11, 13, 15]);
    y.dispose();
  }
  const after = binding.stats();
  assert.strictEqual(after.deferredOps, before.deferredOps);
  assert.strictEqual(after.graphRuns, before.graphRuns);
  x.dispose();
});

test('TFJS_NODE_RS_DEFER=0 runs every op at its call', () => {
  const script = `
    const tf = require(${JSON.stringify(path.join(__dirname, '..'))});
    const binding = require(${JSON.stringify(path.join(__dirname, '..', 'binding.js'))});
    const x = tf.tensor1d([1, 2, 3]);
    let sum = 0;
    for (let i = 0; i < 5; i++) {
      const y = tf.tidy(() => tf.relu(tf.sub(tf.mul(tf.add(x, 1), 2), 3)));
      sum += y.dataSync()[2];
      y.dispose();
    }
    console.log(JSON.stringify({sum, deferred: binding.stats().deferredOps}));
  `;
  const run = spawnSync(process.execPath, ['-e', script], {
    env: {...process.env, TFJS_NODE_RS_DEFER: '0', TF_CPP_MIN_LOG_LEVEL: '2'},
    encoding: 'utf8',
  });
  assert.strictEqual(run.status, 0, run.stderr);
  const result = JSON.parse(run.stdout.trim().split('\n').pop());
  assert.deepStrictEqual(result, {sum: 25, deferred: 0});
});

/**
 * A run of ops over JS-shared memory, repeated until it is compiled and its graph set up, run
 * as that graph, then left open; `reported` resolves to the report.
 */
const openRunScript = `
  const binding = require(${JSON.stringify(path.join(__dirname, '..', 'binding.js'))});
  const T = [{name: 'T', type: 'type', value: 'float32'}];
  const prepared = binding.prepareOp('Mul', T);
  const io = new Float64Array(64);
  const data = binding.alloc('float32', 1024).fill(2);
  const x = binding.createTensor([1024], 'float32', data);
  function run() {
    let y = x;
    for (let i = 0; i < 12; i++) {
      io[0] = y; io[1] = x;
      binding.runPreparedOp(prepared, io, 2, 1);
      if (y !== x) binding.deleteTensor(y);
      y = io[0];
    }
    return y;
  }
  const reported = (async () => {
    for (let i = 0; i < 2000 && binding.stats().compiledRuns === 0; i++) {
      binding.tensorDataSync(run());
    }
    // An asynchronous read waits for the graph's set-up on the executor.
    const last = run();
    await binding.whenReady(last);
    binding.tensorDataSync(last);
    binding.tensorDataSync(run());
    globalThis.open = run();  // deferred, never read
    const s = binding.stats();
    return JSON.stringify({deferred: s.deferredOps > 0, graphRuns: s.graphRuns > 0});
  })();
`;

test('a worker or process that ends with a deferred run open ends cleanly', async () => {
  const {Worker} = require('node:worker_threads');
  for (let round = 0; round < 2; round++) {
    const worker = new Worker(openRunScript + `
      reported.then((report) => require('node:worker_threads').parentPort.postMessage(report));
      setInterval(() => {}, 1000);`, {eval: true});
    try {
      const report = await new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      assert.deepStrictEqual(JSON.parse(report), {deferred: true, graphRuns: true});
    } finally {
      await worker.terminate();
    }
  }
  const exited = spawnSync(process.execPath, ['-e', openRunScript + 'reported.then(console.log);'], {
    env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'},
    encoding: 'utf8',
  });
  assert.strictEqual(exited.status, 0, exited.stderr);
  assert.strictEqual(exited.signal, null);
  assert.deepStrictEqual(JSON.parse(exited.stdout.trim()), {deferred: true, graphRuns: true});
  const y = tf.tidy(() => tf.mul(tf.tensor1d([1, 2]), 3));
  close(y.dataSync(), [3, 6]);
  y.dispose();
});
