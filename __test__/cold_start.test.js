'use strict';
// Cold starts (issue 40): fresh processes as a program that runs once sees them: its first
// call's results equal a warm call's and the cpu backend's, and a program that loads and exits
// at once exits cleanly, its start-up set-ups dropped. The phases' times are
// benches/cold_start.js's.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const ROOT = path.join(__dirname, '..');
const GRAPH_MODEL = path.join(ROOT, 'benches', 'fixtures', 'graph_convnet', 'model.json');

/** Runs `code` in a fresh Node.js process in the package root; its stdout as JSON. */
function freshProcess(code) {
  const r = spawnSync(process.execPath, ['-e', code], {cwd: ROOT, encoding: 'utf8', timeout: 120000,
                                                       env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2'}});
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal || ''}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

test('a program\'s first call gives what its warm calls and the cpu backend give', () => {
  const got = freshProcess(`
    const tf = require('.');
    (async () => {
      const model = await tf.loadGraphModel(tf.io.fileSystem(${JSON.stringify(GRAPH_MODEL)}));
      const x = tf.tensor4d(Array.from({length: 2 * 28 * 28}, (_, i) => Math.sin(i) ** 2), [2, 28, 28, 1]);
      const calls = [];
      for (let i = 0; i < 5; i++) calls.push(Array.from(model.predict(x).dataSync()));
      const replays = tf.node.callGraphStats().replays;
      const pipelined = tf.backend().binding.stats().pipelinedOps;
      await tf.setBackend('cpu');
      const cpu = Array.from(model.predict(x).dataSync());
      console.log(JSON.stringify({calls, cpu, replays, pipelined}));
    })();`);
  assert.ok(got.replays >= 2, `the warm calls ran as a graph: ${got.replays} replays`);
  assert.ok(got.pipelined >= 5, `the first call's ops ran as executor jobs: ${got.pipelined}`);
  const [first, ...warm] = got.calls;
  assert.equal(first.length, 20);
  for (const call of warm) {
    call.forEach((v, i) => assert.ok(Math.abs(v - first[i]) <= 1e-5, `warm ${v} vs first ${first[i]}`));
  }
  first.forEach((v, i) => assert.ok(Math.abs(v - got.cpu[i]) <= 1e-4, `first ${v} vs cpu ${got.cpu[i]}`));
});

test('a program that loads and exits at once exits cleanly, its set-ups dropped', () => {
  // The executor's start-up set-ups (src/tf/warm_up.rs) still queued at exit are dropped, not
  // run: the ones that ran and the ones dropped add up to all that were queued.
  const got = freshProcess(`
    const tf = require('.');
    const binding = tf.backend().binding;
    process.on('exit', () => {
      const {startSetUpsQueued, startSetUpsRun, startSetUpsDropped} = binding.stats();
      console.log(JSON.stringify({startSetUpsQueued, startSetUpsRun, startSetUpsDropped}));
    });`);
  assert.ok(got.startSetUpsQueued > 0, `set-ups queued: ${JSON.stringify(got)}`);
  assert.equal(got.startSetUpsRun + got.startSetUpsDropped, got.startSetUpsQueued, JSON.stringify(got));
});

/**
 * A GraphModel, in the fresh process's code, whose first predict queues a `Transpose` by `perm`
 * on the executor (src/ops/pipeline.rs): with perm [0, 0], TF's shape function gives its shape
 * and only its kernel finds the permutation wrong. Its outputs: relu(x), and the transposed
 * tensor, or with `divide` that divided by itself by an op that is never queued (`FloorDiv`,
 * which fails on values), which so waits for the job inside the call.
 */
const TRANSPOSE_MODEL = `
  function transposeModel(tf, perm, divide) {
    const node = (name, op, input, attr) => ({name, op, input, attr});
    const float = {type: 'DT_FLOAT'};
    const nodes = [
      node('x', 'Placeholder', [], {dtype: float, shape: {shape: {dim: [{size: '2'}, {size: '3'}]}}}),
      node('perm', 'Const', [], {dtype: {type: 'DT_INT32'},
                                 value: {tensor: {dtype: 'DT_INT32', tensorShape: {dim: [{size: '2'}]}}}}),
      node('relu', 'Relu', ['x'], {T: float}),
      node('moved', 'Transpose', ['x', 'perm'], {T: float, Tperm: {type: 'DT_INT32'}}),
    ];
    if (divide) nodes.push(node('ratio', 'FloorDiv', ['moved', 'moved'], {T: float}));
    return tf.loadGraphModel(tf.io.fromMemory({
      modelTopology: {node: nodes, versions: {producer: 1}}, format: 'graph-model',
      weightSpecs: [{name: 'perm', shape: [2], dtype: 'int32'}],
      weightData: new Int32Array(perm).buffer}));
  }`;

test('a first call whose queued op fails gives eager\'s error, at the call, keeping what eager keeps', () => {
  for (const divide of [true, false]) {
    // A process per case: a prepared op whose job failed is not queued again in that process.
    const [pipelined, eager] = [true, false].map((graphs) => freshProcess(`
      const tf = require('.');
      ${TRANSPOSE_MODEL}
      (async () => {
        tf.env().set('TFJS_NODE_RS_CALL_GRAPHS', ${graphs});
        const x = tf.tensor2d([[1, -2, 3], [-4, 5, -6]]);
        const before = tf.memory().numTensors;
        const queuedBefore = tf.backend().binding.stats().pipelinedOps;
        let error = null;
        try {
          (await transposeModel(tf, [0, 0], ${divide})).predict(x);
        } catch (e) {
          error = e.message;
        }
        const kept = tf.memory().numTensors - before;
        const queued = tf.backend().binding.stats().pipelinedOps - queuedBefore;
        // A model it can compute, of the same ops, then runs as before.
        const y = (await transposeModel(tf, [1, 0], ${divide})).predict(x);
        const fine = (Array.isArray(y) ? y : [y]).map((t) => Array.from(t.dataSync()));
        console.log(JSON.stringify({error, kept, queued, fine}));
      })();`));
    assert.match(eager.error, /1 is missing from \{0,0\}/);
    assert.equal(pipelined.error, eager.error, `divide ${divide}`);
    assert.ok(pipelined.queued >= 2, `the Transpose was queued: ${pipelined.queued}`);
    assert.equal(eager.queued, 0);
    // What tfjs-converter keeps of a call that throws, eagerly too.
    assert.equal(pipelined.kept, eager.kept);
    const relu = [1, 0, 3, 0, 5, 0];
    const moved = [1, -4, -2, 5, 3, -6];
    assert.deepEqual(eager.fine, [relu, divide ? moved.map(() => 1) : moved]);
    assert.deepEqual(pipelined.fine, eager.fine);
  }
});

// The resident bytes of libtensorflow's mappings without write permission, in a fresh process.
const READ_ONLY_RSS = `
  function readOnlyRss() {
    let kb = 0;
    let counted = false;
    for (const line of require('fs').readFileSync('/proc/self/smaps', 'utf8').split('\\n')) {
      const mapping = /^[0-9a-f]+-[0-9a-f]+ (\\S+) .*\\s(\\S+)$/.exec(line);
      if (mapping) counted = !mapping[1].includes('w') && mapping[2].includes('libtensorflow');
      else if (counted && line.startsWith('Rss:')) kb += Number(line.split(/\\s+/)[1]);
    }
    return kb;
  }`;

test('at exit, libtensorflow\'s read-only pages are let go of, and TF still computes after that',
     {skip: process.platform !== 'linux'}, () => {
  // The package's own 'exit' listener (registered by require) starts the release; this one
  // runs after it, waits for the pages to go, then runs TF code again, which reads them back.
  const got = freshProcess(`
    const tf = require('.');
    ${READ_ONLY_RSS}
    tf.matMul(tf.ones([8, 8]), tf.ones([8, 8])).dataSync();
    const before = readOnlyRss();
    process.on('exit', () => {
      let after = readOnlyRss();
      for (const end = Date.now() + 5000; after > before / 4 && Date.now() < end;) after = readOnlyRss();
      const product = Array.from(tf.matMul(tf.fill([2, 3], 2), tf.fill([3, 2], 5)).dataSync());
      console.log(JSON.stringify({before, after, product}));
    });`);
  assert.ok(got.before > 50000, `libtensorflow's read-only pages in use: ${got.before} kB`);
  assert.ok(got.after < got.before / 4, `let go of: ${got.before} -> ${got.after} kB`);
  assert.deepEqual(got.product, [30, 30, 30, 30]);
});

test('a worker\'s exit leaves libtensorflow\'s pages to the process', {skip: process.platform !== 'linux'}, () => {
  const got = freshProcess(`
    const tf = require('.');
    const {Worker} = require('worker_threads');
    ${READ_ONLY_RSS}
    tf.matMul(tf.ones([8, 8]), tf.ones([8, 8])).dataSync();
    const before = readOnlyRss();
    const worker = new Worker("const tf = require(process.cwd()); tf.add(tf.ones([4]), 1).dataSync();", {eval: true});
    worker.on('exit', (code) => setTimeout(() => console.log(JSON.stringify({code, before, after: readOnlyRss()})), 300));`);
  assert.equal(got.code, 0);
  assert.ok(got.after > got.before * 0.75, `kept: ${got.before} -> ${got.after} kB`);
});
