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
