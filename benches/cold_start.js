'use strict';
// Cold starts (issue 40): a program that runs once and exits, as a CLI, a job or a serverless
// function does. Each run is a fresh process that requires a backend's `tf`, loads a real
// GraphModel shipped in an npm package (@vladmandic/human's blazeface and centernet), predicts
// once on zeros and reads the result. The process times its phases apart (require, load, first
// call, read, all from the process's own start); the parent times the whole process, exit
// included. Backends alternate run by run; per backend the median of the runs.
//
//   node benches/cold_start.js BACKEND MODEL OUT   one run (what `runColdStart` spawns)
//
// The model files are read with fs and handed to `tf.io.fromMemory` on every backend: wasm's
// `@tensorflow/tfjs` has no `file://` loader, and reading them is the same work everywhere.

const {performance} = require('perf_hooks');
const fs = require('fs');
const path = require('path');
const {spawnSync} = require('child_process');
const {median} = require('./stats');

const MODELS = ['blazeface', 'centernet'];
const RUNS = 6;
const QUICK_RUNS = 2;
const PHASES = ['require', 'load', 'call', 'read'];

/** The models' folder in the clients' project (installed from the npm tarballs if missing). */
function modelsDir() {
  const project = require('../scripts/clients').install('tensorflow');
  return path.join(project, 'node_modules', '@vladmandic', 'human', 'models');
}

/** The model's files as `tf.io.fromMemory` takes them. */
function modelArtifacts(dir, model) {
  const json = JSON.parse(fs.readFileSync(path.join(dir, `${model}.json`), 'utf8'));
  const weights = Buffer.concat(json.weightsManifest.flatMap(
      (group) => group.paths.map((p) => fs.readFileSync(path.join(dir, p)))));
  return {
    modelTopology: json.modelTopology,
    format: json.format,
    generatedBy: json.generatedBy,
    convertedBy: json.convertedBy,
    signature: json.signature,
    userDefinedMetadata: json.userDefinedMetadata,
    weightSpecs: json.weightsManifest.flatMap((group) => group.weights),
    weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
  };
}

/** One run, in this process: the phases' ends in ms from the process's start. */
async function runOnce(backend, model, dir) {
  const {loadBackend} = require('./worker');
  const {tf} = await loadBackend(backend);
  const required = performance.now();
  const graphModel = await tf.loadGraphModel(tf.io.fromMemory(modelArtifacts(dir, model)));
  const loaded = performance.now();
  const shape = graphModel.inputs[0].shape.map((d) => (d === -1 || d == null ? 1 : d));
  const x = tf.zeros(shape);
  const y = graphModel.predict(x);
  const called = performance.now();
  const outputs = Array.isArray(y) ? y : [y];
  for (const t of outputs) await t.data();
  const read = performance.now();
  return {ends: {require: required, load: loaded, call: called, read}};
}

/** Phases as durations: each phase's end less the one before it (require's from the start). */
function durations(ends) {
  const out = {};
  let before = 0;
  for (const phase of PHASES) {
    out[phase] = ends[phase] - before;
    before = ends[phase];
  }
  return out;
}

/** Spawns one run; its phases and the whole process's wall time (ms). */
function spawnRun(backend, model, dir, out, env) {
  const started = performance.now();
  const child = spawnSync(process.execPath, [__filename, backend, model, dir, out],
                          {encoding: 'utf8', env, timeout: 120000});
  const wholeMs = performance.now() - started;
  try {
    const r = JSON.parse(fs.readFileSync(out, 'utf8'));
    fs.rmSync(out);
    return {...durations(r.ends), process: wholeMs};
  } catch {
    const why = child.error ? String(child.error) : `exit ${child.status}`;
    return {error: `${why}: ${String(child.stderr || '').trim().split('\n').slice(-2).join(' | ')}`};
  }
}

// This package with V8's code cache turned on (js/code_cache.js, off by default), made by an
// uncounted first run of the model: what every run after a program's first then sees.
const CODE_CACHE = 'code-cache';

/**
 * The cold-start group of `npm run bench` (`--only=cold`): `RUNS` processes per model and
 * backend (`QUICK_RUNS` with --quick), alternating; `cpu` left out (a first call of centernet
 * takes seconds there) and `defer-off` too (the same load as `tensorflow`). With `tensorflow`,
 * CODE_CACHE too.
 */
function runColdStart(opts, backends, results, {tmp, envOf}) {
  const runOn = backends.filter((b) => b !== 'cpu' && b !== 'defer-off');
  if (runOn.includes('tensorflow')) runOn.splice(runOn.indexOf('tensorflow') + 1, 0, CODE_CACHE);
  const dir = modelsDir();
  const runs = opts.quick ? QUICK_RUNS : RUNS;
  results.coldStart = {};
  for (const model of MODELS) {
    const codeCache = path.join(tmp, `code-cache-${model}`);
    const runBackend = (backend, k) => {
      const cached = backend === CODE_CACHE;
      const env = cached ? {...envOf('tensorflow'), TFJS_NODE_RS_CODE_CACHE: codeCache} : envOf(backend);
      return spawnRun(cached ? 'tensorflow' : backend, model, dir, path.join(tmp, `cold-${k}.json`), env);
    };
    if (runOn.includes(CODE_CACHE)) runBackend(CODE_CACHE, 'fill');  // writes codeCache
    const got = new Map(runOn.map((b) => [b, []]));
    for (let k = 0; k < runs; k++) {
      for (const backend of runOn.slice(k % runOn.length).concat(runOn.slice(0, k % runOn.length))) {
        got.get(backend).push(runBackend(backend, k));
      }
    }
    results.coldStart[model] = {};
    for (const [backend, list] of got) {
      const failed = list.find((r) => r.error);
      const mid = Object.fromEntries([...PHASES, 'process'].map(
          (p) => [p, median(list.map((r) => r[p]))]));
      results.coldStart[model][backend] = failed ? {error: failed.error} : mid;
      console.log(`  ${model.padEnd(10)} ${backend.padEnd(10)} ` + (failed ? `ERROR ${failed.error}` :
        `process ${mid.process.toFixed(0)} ms: require ${mid.require.toFixed(0)}, load ` +
        `${mid.load.toFixed(0)}, first call ${mid.call.toFixed(0)}, read ${mid.read.toFixed(0)}` +
        ` (median of ${list.length})`));
    }
    const ours = results.coldStart[model].tensorflow;
    for (const peer of ['tfjs-node', 'wasm']) {
      const theirs = results.coldStart[model][peer];
      if (ours && theirs && ours.process && theirs.process) {
        console.log(`  ${model.padEnd(10)} whole process: ${(theirs.process / ours.process).toFixed(2)}x ` +
                    `${peer}'s speed (${peer} ${theirs.process.toFixed(0)} ms / ${ours.process.toFixed(0)} ms)`);
      }
    }
  }
}

if (require.main === module) {
  const [backend, model, dir, out] = process.argv.slice(2);
  runOnce(backend, model, dir).then(
      (r) => fs.writeFileSync(out, JSON.stringify(r)),
      (e) => {
        console.error(e && e.stack || e);
        process.exitCode = 1;
      });
}

module.exports = {runColdStart, MODELS, CODE_CACHE};
