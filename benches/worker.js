'use strict';
// Runs inside a child process started by benches/run.js: loads ONE backend, runs one task,
// writes its result as JSON to the file named by the second argument.
//
//   node --expose-gc benches/worker.js '<json task>' <out.json>
//
// task: {backend, kind: 'info' | 'model' | 'micro' | 'per-op' | 'rss' | 'shapes' | 'clients', ...}; see run.js
// for the fields.

const fs = require('fs');
const os = require('os');
const path = require('path');

const REPO_ROOT = path.resolve(__dirname, '..');

function peerDir() {
  return process.env.TFJS_NODE_PEER_DIR || path.join(os.homedir(), '.cache', 'tfjs-node-peer');
}

/** This package with its per-op deferring off, as a column of its own. */
const DEFER_OFF = 'defer-off';

/** What a backend's process needs in its environment. */
function backendEnv(name) {
  return name === DEFER_OFF ? {TFJS_NODE_RS_DEFER: '0'} : {};
}

async function loadBackend(name) {
  let tf;
  const info = {};
  if (name === 'tensorflow' || name === DEFER_OFF) {
    tf = require(REPO_ROOT);
    const deferring = require(path.join(REPO_ROOT, 'binding.js')).isDeferring();
    if (deferring !== (name === 'tensorflow')) {
      throw new Error(`${name}: deferring is ${deferring ? 'on' : 'off'} (TFJS_NODE_RS_DEFER)`);
    }
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
  } else if (name === require('./core_floor').NAME) {
    // Required here, not above: it loads tfjs-core, which a cold start (benches/cold_start.js)
    // times as a part of the backend's own require.
    tf = await require('./core_floor').coreFloorTf();
  } else {
    throw new Error(`unknown backend ${name}`);
  }
  await tf.ready();
  // Both TF-based packages register their backend under the name 'tensorflow'.
  const expected = name === 'tfjs-node' || name === DEFER_OFF ? 'tensorflow' : name;
  if (tf.getBackend() !== expected) {
    throw new Error(`asked for backend '${expected}', got '${tf.getBackend()}'`);
  }
  info.tfjs = tf.version && tf.version.tfjs;
  if (name === 'tensorflow' || name === DEFER_OFF || name === 'tfjs-node') {
    const b = tf.backend();
    try {
      info.tfVersion = b.binding && typeof b.binding.tfVersion === 'function' ?
          b.binding.tfVersion() : (b.binding && b.binding.TF_Version);
    } catch (e) { /* optional */ }
  }
  return {tf, info};
}

const {now, micro, perOp, rss} = require('./micro');
const models = require('./models');

// ---------------------------------------------------------------- models

// Slow cases on the pure-JS `cpu` backend only (run.js sets the budgets for it alone): fewer
// than the suite's 20 predicts / 10 epochs when the first call shows they would take longer
// than `roundMs`, down to 2; none when the first call took longer than `slowMs` (then the first
// call is the measurement, flagged `firstOnly`: cpu's fit of convolutional-32filters takes
// minutes an epoch). Every other backend runs the suite's counts.
function fewer(standard, firstMs, task) {
  if (!task.roundMs || firstMs * standard <= task.roundMs) return standard;
  if (task.slowMs && firstMs > task.slowMs) return 0;
  return Math.max(2, Math.min(standard, Math.floor(task.roundMs / firstMs)));
}

const sum = (xs) => xs.reduce((s, x) => s + x, 0);

/**
 * fit as a user program calls it, then as the suite times it: the first `fit` of one epoch
 * (one training step: the data set is one batch), then one `fit` of `fitEpochs` epochs; each
 * followed by a `dataSync()` of the first trainable weight, so that deferred work is counted.
 */
async function timeFit(tf, model, spec, xs, task) {
  const ys = models.targets(tf, spec);
  const weight = model.trainableWeights[0];
  const fit = async (epochs) => {
    const t0 = now();
    await model.fit(xs, ys, {batchSize: spec.batch, epochs, verbose: 0, yieldEvery: 'never'});
    weight.read().dataSync();
    return now() - t0;
  };
  try {
    const firstMs = await fit(1);
    const epochs = fewer(task.fitEpochs, firstMs, task);
    const ms = epochs ? await fit(epochs) / epochs : firstMs;
    return {firstMs, ms, epochs, firstOnly: epochs === 0};
  } catch (e) {
    return {error: String(e && e.stack || e)};
  } finally {
    tf.dispose(ys);
  }
}

/**
 * predict as the suite times it: one warm-up call (the first call, reported as such), then
 * `predictCalls` calls, each `predict` + `dataSync()` of every output + dispose; the steady
 * state is their total / count, the mean a user's loop sees. Each call is timed too.
 */
function timePredict(tf, model, xs, task) {
  const call = () => {
    const t0 = now();
    const out = model.predict(xs);
    for (const o of Array.isArray(out) ? out : [out]) o.dataSync();
    tf.dispose(out);
    return now() - t0;
  };
  const firstMs = call();
  const calls = fewer(task.predictCalls, firstMs, task);
  const tensorsBefore = tf.memory().numTensors;
  const callMs = [];
  for (let i = 0; i < calls; i++) callMs.push(call());
  return {firstMs, ms: calls ? sum(callMs) / calls : firstMs, calls, firstOnly: calls === 0,
          callMs, leakedTensors: tf.memory().numTensors - tensorsBefore};
}

/**
 * One model, as a user program runs it: build (or load), compile, fit, then predict. When fit
 * fails (a backend without a gradient kernel), predict still runs, on the untrained model.
 * `programMs`: the whole program, from the build to the end of the last predict, where it ran
 * all of the suite's calls (not the cpu backend's shortened cases, nor a failed fit);
 * `processMs`: the same end from the process's start, the backend's `require` included.
 */
async function taskModel(tf, task) {
  const spec = models.byName(task.model);
  const t0 = now();
  const model = await models.build(tf, spec);
  const out = {model: spec.name, buildMs: now() - t0,
               params: typeof model.countParams === 'function' ? model.countParams() : null};
  const xs = models.inputs(tf, spec);
  if (spec.fit) out.fit = await timeFit(tf, model, spec, xs, task);
  out.predict = timePredict(tf, model, xs, task);
  const fitRanAll = !spec.fit || out.fit.epochs === task.fitEpochs;
  if (fitRanAll && out.predict.calls === task.predictCalls) {
    out.processMs = now();
    out.programMs = out.processMs - t0;
  }
  tf.dispose(xs);
  model.dispose();
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
      if (task.kind === 'model') result.model = await taskModel(tf, task);
      else if (task.kind === 'micro') result.micro = micro(tf, task);
      else if (task.kind === 'per-op') result.perOp = perOp(tf, task);
      else if (task.kind === 'rss') result.rss = rss(tf, task);
      else if (task.kind === 'shapes') result.shapes = require('./shapes').shapes(tf);
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

module.exports = {DEFER_OFF, backendEnv, loadBackend, taskModel};
