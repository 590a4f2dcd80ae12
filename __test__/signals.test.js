'use strict';
// Signals during TF's matrix products. oneDNN's generated GEMM kernels (in TF 2.21) run with
// rsp pointing into the heap, so a signal delivered mid-kernel corrupts malloc's state and the
// process aborts later (see src/tf/signals.rs). Without the binding's guards, each child below
// dies with "corrupted size vs. prev_size" or SIGSEGV within its first few hundred products.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const ROOT = path.join(__dirname, '..');

/** Runs `body` (JS source using `tf` and `n`) in a child; returns its exit status and output. */
function runChild(setup, body) {
  const script = `
    const tf = require(${JSON.stringify(ROOT)});
    (async () => {
      ${setup}
      const a = tf.randomUniform([128, 100]), w = tf.randomUniform([100, 200]);
      const bias = tf.randomUniform([200]);
      const x = tf.randomUniform([8, 14, 14, 16]), f = tf.randomUniform([3, 3, 16, 16]);
      const expected = tf.tidy(() => tf.relu(tf.add(tf.matMul(a, w), bias))).dataSync();
      for (let i = 0; i < 400; i++) {
        // MatMul and _FusedMatMul (the kernels seen corrupting), and a convolution.
        const y = tf.fused.matMul({a, b: w, bias, activation: 'relu'});
        const z = tf.tidy(() => tf.relu(tf.matMul(a.reshape([1, 128, 100]), w.reshape([1, 100, 200]))));
        const c = tf.conv2d(x, f, 1, 'same');
        const yv = y.dataSync(), zv = z.dataSync();
        c.dataSync();
        for (let k = 0; k < yv.length; k += 997) {
          if (Math.abs(yv[k] - expected[k]) > 1e-3 || zv[k] < 0) throw new Error('wrong value at ' + k);
        }
        tf.dispose([y, z, c]);
      }
      await finish();
      console.log('done');
    })().catch((e) => { console.error(e); process.exit(1); });
  `;
  return spawnSync(process.execPath, ['-e', script], {
    encoding: 'utf8',
    env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'},
    timeout: 120000,
  });
}

function assertSurvived(result) {
  assert.equal(result.signal, null, `killed by ${result.signal}: ${result.stderr}`);
  assert.equal(result.status, 0, result.stderr);
  assert.match(result.stdout, /done/);
}

test('ops survive the inspector\'s CPU profiler sampling every 50 µs (SIGPROF to the JS thread)', () => {
  const setup = `
    const inspector = require('node:inspector');
    const session = new inspector.Session();
    session.connect();
    const post = (m, p) => new Promise((res, rej) => session.post(m, p || {}, (e, r) => (e ? rej(e) : res(r))));
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: 50 });
    await post('Profiler.start');
    const finish = () => post('Profiler.stop');
  `;
  assertSurvived(runChild(setup));
});

test('ops survive a storm of process-directed signals (SIGUSR2 with a JS handler)', () => {
  // A worker sends SIGUSR2 to the process every ~20 µs. kill() targets the process, so the kernel
  // picks a thread that does not block it: the JS thread between ops, never TF's threads.
  const setup = `
    const { Worker } = require('node:worker_threads');
    let received = 0;
    process.on('SIGUSR2', () => { received++; });
    const stop = new Int32Array(new SharedArrayBuffer(4));
    const sender = new Worker(\`
      const { workerData: stop } = require('node:worker_threads');
      const nap = new Int32Array(new SharedArrayBuffer(4));
      while (Atomics.load(stop, 0) === 0) {
        process.kill(process.pid, 'SIGUSR2');
        Atomics.wait(nap, 0, 0, 0.02);
      }
    \`, { eval: true, workerData: stop });
    const finish = async () => {
      Atomics.store(stop, 0, 1);
      await new Promise((res) => sender.on('exit', res));
      await new Promise((res) => setImmediate(res));
      if (received === 0) throw new Error('no SIGUSR2 was handled');
    };
  `;
  assertSurvived(runChild(setup));
});
