'use strict';
// Cold starts (issue 40): libtensorflow loaded on a worker thread while tfjs's JS loads
// (js/native_loader_core.js: loadInBackground), where that is done and where not, what a
// failure before the load leaves to `load()`, and fresh processes as a program that runs once
// sees them: its first call's results equal a warm call's and the cpu backend's, and a program
// that loads and exits at once exits cleanly. The phases' times are benches/cold_start.js's.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const {loadsInBackground, loadInBackground} = require('../js/native_loader_core.js');

const ROOT = path.join(__dirname, '..');
const GRAPH_MODEL = path.join(ROOT, 'benches', 'fixtures', 'graph_convnet', 'model.json');

/** Runs `code` in a fresh Node.js process in the package root; its stdout as JSON. */
function freshProcess(code) {
  const r = spawnSync(process.execPath, ['-e', code], {cwd: ROOT, encoding: 'utf8', timeout: 120000,
                                                       env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2'}});
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal || ''}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

test('libtensorflow loads in the background in Node.js on Linux and macOS, on the main thread only', () => {
  const node = {bun: undefined, deno: undefined};
  assert.equal(loadsInBackground({platform: 'linux', versions: node, isMainThread: true}), true);
  assert.equal(loadsInBackground({platform: 'darwin', versions: node, isMainThread: true}), true);
  // Windows puts the libraries' folder on PATH for the load: a change the whole process sees.
  assert.equal(loadsInBackground({platform: 'win32', versions: node, isMainThread: true}), false);
  assert.equal(loadsInBackground({platform: 'linux', versions: {bun: '1.4.5'}, isMainThread: true}), false);
  assert.equal(loadsInBackground({platform: 'linux', versions: {deno: '2.9.6'}, isMainThread: true}), false);
  assert.equal(loadsInBackground({platform: 'linux', versions: node, isMainThread: false}), false);
});

test('a failure before the load starts nothing and throws nothing: load() explains it', () => {
  const refused = () => {
    throw new Error('no libtensorflow here');
  };
  assert.equal(loadInBackground({provide: refused}), false);
  const unsupported = {platform: 'linux', arch: 'mips', glibc: '2.36', napi: '9', node: 'v20.0.0'};
  assert.equal(loadInBackground({system: unsupported}), false);
});

test('a fresh process loads libtensorflow in the background, then the binding as usual', () => {
  const got = freshProcess(`
    const started = require('./js/native_loader_core').loadInBackground();
    const tf = require('.');
    const sum = tf.add(tf.tensor1d([1, 2]), tf.tensor1d([10, 20])).arraySync();
    console.log(JSON.stringify({started, backend: tf.getBackend(), sum,
                                others: Object.keys(tf.engine().registry)}));`);
  assert.deepEqual(got, {started: true, backend: 'tensorflow', sum: [11, 22], others: ['tensorflow']});
});

test('a program\'s first call gives what its warm calls and the cpu backend give', () => {
  const got = freshProcess(`
    const tf = require('.');
    (async () => {
      const model = await tf.loadGraphModel(tf.io.fileSystem(${JSON.stringify(GRAPH_MODEL)}));
      const x = tf.tensor4d(Array.from({length: 2 * 28 * 28}, (_, i) => Math.sin(i) ** 2), [2, 28, 28, 1]);
      const calls = [];
      for (let i = 0; i < 5; i++) calls.push(Array.from(model.predict(x).dataSync()));
      const replays = tf.node.callGraphStats().replays;
      await tf.setBackend('cpu');
      const cpu = Array.from(model.predict(x).dataSync());
      console.log(JSON.stringify({calls, cpu, replays}));
    })();`);
  assert.ok(got.replays >= 2, `the warm calls ran as a graph: ${got.replays} replays`);
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
