'use strict';
// Runs inside a child process started by benches/run.js: loads ONE backend, runs one task,
// writes its result as JSON to the file named by the second argument.
//
//   node --expose-gc benches/worker.js '<json task>' <out.json>
//
// task: {backend, kind: 'info' | 'models' | 'micro' | 'per-op' | 'rss' | 'clients', ...}; see run.js
// for the fields.

const fs = require('fs');
const os = require('os');
const path = require('path');

const coreFloor = require('./core_floor');

const REPO_ROOT = path.resolve(__dirname, '..');

function peerDir() {
  return process.env.TFJS_NODE_PEER_DIR || path.join(os.homedir(), '.cache', 'tfjs-node-peer');
}

async function loadBackend(name) {
  let tf;
  const info = {};
  if (name === 'tensorflow') {
    tf = require(REPO_ROOT);
  } else if (name === 'tfjs-node') {
    tf = require(path.join(peerDir(), 'app', 'node_modules', '@tensorflow', 'tfjs-node'));
  } else if (name === 'cpu') {
    tf = require('@tensorflow/tfjs');
    await tf.setBackend('cpu');
  } else if (name === 'wasm') {
    tf = require('@tensorflow/tfjs');
    require('@tensorflow/tfjs-backend-wasm');
    // Node has no Web Workers for the threaded build: single-threaded, SIMD where V8 has it.
    tf.env().set('WASM_HAS_MULTITHREAD_SUPPORT', false);
    info.wasmSimd = await tf.env().getAsync('WASM_HAS_SIMD_SUPPORT');
    info.wasmThreads = false;
    await tf.setBackend('wasm');
  } else if (name === coreFloor.NAME) {
    tf = await coreFloor.coreFloorTf();
  } else {
    throw new Error(`unknown backend ${name}`);
  }
  await tf.ready();
  // Both TF-based packages register their backend under the name 'tensorflow'.
  const expected = name === 'tfjs-node' ? 'tensorflow' : name;
  if (tf.getBackend() !== expected) {
    throw new Error(`asked for backend '${expected}', got '${tf.getBackend()}'`);
  }
  info.tfjs = tf.version && tf.version.tfjs;
  if (name === 'tensorflow' || name === 'tfjs-node') {
    const b = tf.backend();
    try {
      info.tfVersion = b.binding && typeof b.binding.tfVersion === 'function' ?
          b.binding.tfVersion() : (b.binding && b.binding.TF_Version);
    } catch (e) { /* optional */ }
  }
  return {tf, info};
}

const {now, youngGc, median, micro, perOp, rss} = require('./micro');

// ---------------------------------------------------------------- models

// The suite's 20 predicts / 10 epochs per round, unless one warm-up call shows that a round
// would take longer than `roundMs` (the pure-JS cpu backend on the big models): then fewer,
// down to 2, so that the whole suite fits in its time budget. The count used is reported.
// When even the warm-up call took longer than `slowMs`, that call is the measurement (one
// round of one call, flagged `warmupOnly`): cpu's fit of convolutional-32filters takes minutes.
function fewer(standard, warmMs, opts) {
  if (!opts.roundMs || warmMs * standard <= opts.roundMs) return standard;
  if (opts.slowMs && warmMs > opts.slowMs) return 0;
  return Math.max(2, Math.min(standard, Math.floor(opts.roundMs / warmMs)));
}

async function runModelCase(tf, spec, method, opts) {
  const model = spec.build(tf);
  const one = (list) => (list.length === 1 ? list[0] : list);
  const xs = one(spec.inputShapes.map((s) => tf.randomUniform([spec.batch, ...s])));
  const times = [];
  const budget = opts.budgetMs;
  const started = now();
  let tensorsBefore;
  let iterations;
  if (method === 'predict') {
    const w0 = now();
    const warm = model.predict(xs);
    for (const o of Array.isArray(warm) ? warm : [warm]) o.dataSync();
    tf.dispose(warm);
    const warmMs = now() - w0;
    iterations = fewer(20, warmMs, opts);
    if (iterations === 0) times.push(warmMs);
    tensorsBefore = tf.memory().numTensors;
    for (let r = 0; r < opts.rounds && iterations > 0; r++) {
      youngGc();
      const t0 = now();
      for (let i = 0; i < iterations; i++) {
        const out = model.predict(xs);
        for (const o of Array.isArray(out) ? out : [out]) o.dataSync();
        tf.dispose(out);
      }
      times.push((now() - t0) / iterations);
      if (now() - started > budget) break;
    }
  } else {
    const ys = one(spec.outputShapes.map((s) => tf.randomUniform([spec.batch, ...s])));
    model.compile({optimizer: spec.fit.optimizer(tf), loss: spec.fit.loss});
    const fitArgs = (n) => ({batchSize: spec.batch, epochs: n, verbose: 0, yieldEvery: 'never'});
    const weight = model.trainableWeights[0];
    const w0 = now();
    await model.fit(xs, ys, fitArgs(1));
    weight.read().dataSync();
    const warmMs = now() - w0;
    iterations = fewer(10, warmMs, opts);
    if (iterations === 0) times.push(warmMs);
    tensorsBefore = tf.memory().numTensors;
    for (let r = 0; r < opts.rounds && iterations > 0; r++) {
      youngGc();
      const t0 = now();
      await model.fit(xs, ys, fitArgs(iterations));
      weight.read().dataSync();
      times.push((now() - t0) / iterations);
      if (now() - started > budget) break;
    }
    tf.dispose(ys);
  }
  const leaked = tf.memory().numTensors - tensorsBefore;
  tf.dispose(xs);
  model.dispose();
  return {ms: median(times), min: Math.min(...times), rounds: times,
          iterations: iterations || 1, warmupOnly: iterations === 0, leakedTensors: leaked};
}

async function taskModels(tf, task) {
  const {byName} = require('./models');
  const out = [];
  for (const c of task.cases) {
    const spec = byName(c.model);
    try {
      const t0 = now();
      const r = await runModelCase(tf, spec, c.method, task);
      out.push({model: c.model, method: c.method, ...r});
      if (process.env.BENCH_VERBOSE) {
        console.error(`${task.backend} ${c.model} ${c.method}: ${r.ms.toFixed(2)} ms ` +
                      `(${r.rounds.length}×${r.iterations}, ${((now() - t0) / 1000).toFixed(1)} s)`);
      }
    } catch (e) {
      out.push({model: c.model, method: c.method, error: String(e && e.stack || e)});
      if (process.env.BENCH_VERBOSE) console.error(`${task.backend} ${c.model} ${c.method}: ${e}`);
    }
  }
  return out;
}

// ---------------------------------------------------------------- clients

/**
 * A real client library (scripts/clients.js) in this process: the library loads its backend
 * itself, through its own require of tfjs-node (or of tfjs, for wasm).
 */
async function taskClient(task) {
  const clients = require('../scripts/clients');
  const dir = clients.install(task.backend);
  const r = await clients.CLIENTS[task.client](dir, task.backend, {repeat: task.repeat});
  // Both TF-based packages register their backend under the name 'tensorflow'.
  const expected = task.backend === 'wasm' ? 'wasm' : 'tensorflow';
  if (r.backend !== expected) throw new Error(`${task.client} ran on '${r.backend}', not '${expected}'`);
  return {client: task.client, firstMs: r.firstMs, steadyMs: r.steadyMs};
}

// ---------------------------------------------------------------- main

async function main() {
  const task = JSON.parse(process.argv[2]);
  const outPath = process.argv[3];
  const result = {backend: task.backend, kind: task.kind};
  try {
    if (task.kind === 'clients') {
      result.clients = await taskClient(task);
    } else {
      const {tf, info} = await loadBackend(task.backend);
      result.info = info;
      if (task.kind === 'models') result.models = await taskModels(tf, task);
      else if (task.kind === 'micro') result.micro = micro(tf, task);
      else if (task.kind === 'per-op') result.perOp = perOp(tf, task);
      else if (task.kind === 'rss') result.rss = rss(tf, task);
      else if (task.kind !== 'info') throw new Error(`unknown task ${task.kind}`);
    }
  } catch (e) {
    result.error = String(e && e.stack || e);
  }
  fs.writeFileSync(outPath, JSON.stringify(result));
  // Some backends keep handles open; the result is written, so leave now.
  process.exit(0);
}

if (require.main === module) main();

module.exports = {loadBackend, runModelCase};
