'use strict';
// tf.node.profile: a fit and a predict recorded; the trace parses, names graph nodes (fused
// ones too) and eager ops; the summary's parts add up to the wall time measured around it.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');

const tf = require('..');
const {scratchDirs} = require('./support/scratch');

const tempDir = scratchDirs('tfjs-node-rs-profile-');

function denseModel() {
  const model = tf.sequential({layers: [
    tf.layers.dense({units: 32, activation: 'relu', inputShape: [16]}),
    tf.layers.dense({units: 4, activation: 'softmax'}),
  ]});
  model.compile({optimizer: 'adam', loss: 'categoricalCrossentropy'});
  return model;
}

test('a profile of a fit and a predict names what ran and accounts for the wall time', async () => {
  const model = denseModel();
  const x = tf.randomNormal([64, 16], 0, 1, 'float32', 1);
  const y = tf.oneHot(tf.randomUniform([64], 0, 4, 'int32', 2), 4).toFloat();
  const logdir = tempDir('logs');
  let wallMs;
  const {result, summary, traceFile, tensorboardDir} = await tf.node.profile(async () => {
    const start = performance.now();
    await model.fit(x, y, {epochs: 4, batchSize: 16, verbose: 0});
    const out = model.predict(x);
    await out.data();
    wallMs = performance.now() - start;
    return out;
  }, {logdir, name: 'fit-predict'});
  assert.deepStrictEqual(result.shape, [64, 4]);
  result.dispose();

  const trace = JSON.parse(fs.readFileSync(traceFile, 'utf8'));
  assert.strictEqual(path.basename(traceFile), 'fit-predict.trace.json');
  assert.strictEqual(tensorboardDir, path.join(logdir, 'fit-predict'));
  const events = fs.readdirSync(tensorboardDir).filter((f) => f.startsWith('events.out.tfevents.'));
  assert.strictEqual(events.length, 1);
  const eventBytes = fs.readFileSync(path.join(tensorboardDir, events[0]));
  for (const tag of ['profile/wall_ms', 'profile/js_thread/eager_ms', 'profile/top_ops']) {
    assert.ok(eventBytes.includes(tag), tag);
  }
  const spans = trace.traceEvents.filter((e) => e.ph === 'X');
  const cats = new Set(spans.map((e) => e.cat));
  for (const cat of ['eager op', 'session run', 'graph node']) assert.ok(cats.has(cat), cat);
  const nodeOps = new Set(spans.filter((e) => e.cat === 'graph node').map((e) => e.args.op));
  assert.ok([...nodeOps].some((op) => op.endsWith('MatMul')), [...nodeOps].join());
  assert.ok([...nodeOps].some((op) => op.startsWith('TfjsNodeRs>')), 'a fused node is named');
  assert.ok(spans.every((e) => e.ts >= -1 && e.dur >= 0));

  // The JS thread's parts are measured apart (JS is what is left): they fit in the wall time.
  const {jsThread} = summary;
  const detail = JSON.stringify(summary);
  assert.ok(jsThread.eagerMs > 0 && jsThread.jsMs >= 0, detail);
  assert.ok(jsThread.graphMs + summary.executorMs > 0, detail);
  const parts = jsThread.eagerMs + jsThread.graphMs + jsThread.waitMs + jsThread.idleMs +
      jsThread.jsMs;
  assert.ok(Math.abs(parts - wallMs) <= 0.1 * wallMs, `${parts} vs ${wallMs}`);
  assert.ok(Math.abs(summary.wallMs - wallMs) <= 0.1 * wallMs, `${summary.wallMs} vs ${wallMs}`);
  assert.ok(summary.topOps.length > 0 && summary.topOps[0].totalMs >= summary.topOps.at(-1).totalMs);
  x.dispose();
  y.dispose();
});

test('one profile at a time; an error of fn stops the recording', async () => {
  await assert.rejects(tf.node.profile(() => {
    throw new Error('from fn');
  }), /from fn/);
  const inner = tf.node.profile(async () => {
    await assert.rejects(tf.node.profile(() => 1), /a profile is being taken already/);
  });
  await inner;
  const {summary} = await tf.node.profile(() => tf.add(tf.scalar(1), tf.scalar(2)).dataSync());
  assert.ok(summary.jsThread.idleMs >= 0);
  assert.ok(summary.eagerOps >= 1, JSON.stringify(summary));
});

test('session runs traced on two threads at once take turns: TF has one profiler a process', async () => {
  // A worker's predicts (its call graphs, run by its executor) and this thread's, recorded in
  // one profile: each traced TF_SessionRun starts TF's profiler, which a second one at the same
  // time found active ("Another profiling session active").
  const {Worker} = require('node:worker_threads');
  const predicts = `
    const tf = require(${JSON.stringify(path.join(__dirname, '..'))});
    const {parentPort} = require('node:worker_threads');
    const model = tf.sequential({layers: [tf.layers.dense({units: 64, inputShape: [64]}),
                                          tf.layers.dense({units: 8})]});
    const x = tf.ones([256, 64]);
    parentPort.once('message', () => {
      const sums = [];
      for (let i = 0; i < 60; i++) sums.push(model.predict(x).sum().dataSync()[0]);
      parentPort.postMessage(sums);
    });
    parentPort.postMessage('ready');`;
  const worker = new Worker(predicts, {eval: true});
  await new Promise((resolve) => worker.once('message', resolve));
  const model = denseModel();
  const x = tf.ones([256, 16]);
  const {result, summary} = await tf.node.profile(async () => {
    const theirs = new Promise((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    worker.postMessage('go');
    const ours = [];
    for (let i = 0; i < 60; i++) ours.push(model.predict(x).sum().dataSync()[0]);
    return [ours, await theirs];
  });
  await worker.terminate();
  const [ours, theirs] = result;
  // Every predict gives the first one's value, on both threads, to float rounding (the first
  // ran eagerly, the later ones as graphs).
  const same = (values) => values.every((v) => Math.abs(v - values[0]) <= 1e-4 * Math.abs(values[0]));
  assert.ok(same(ours) && same(theirs), JSON.stringify({ours, theirs}));
  assert.ok(summary.graphNodes > 0, JSON.stringify(summary));
});
