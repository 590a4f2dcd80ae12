#!/usr/bin/env node
'use strict';
// The checks of scripts/gpu-check.sh, on a machine with an NVIDIA GPU, in a project where
// tfjs-node-rs-gpu is installed (run from that project; `--reference OUT` is the CPU side):
//
//   1. tfjs-node-rs-gpu loads on the 'tensorflow' backend, with its CUDA libraries, and
//      isUsingGpuDevice is true (else it stops, saying what to look at);
//   2. a matMul, a conv model's predict and one fit step (convolutional-32filters of the layers
//      suite, weights set from a fixed sequence) on the GPU against the same on TF's CPU kernels:
//      a child process with CUDA_VISIBLE_DEVICES=-1; max |gpu - cpu| / max |cpu| must stay under
//      1e-2 (Ampere and newer GPUs run float32 products as TF32 by default: ~1e-3);
//   3. a tensor made from JS memory (shared with TF, which copies it to the device itself) reads
//      back right after a GPU op;
//   4. the layers suite (benches/models.js; 2 rounds per case), GPU and CPU: ms and CPU/GPU.
// Exit code 0 when 1-3 pass; the numbers are printed either way. `--dry-run` (a machine without
// a GPU, to try the script itself) goes on without a GPU and compares the CPU with itself.

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {MODELS} = require('../benches/models');
const {taskModel} = require('../benches/worker');

const PACKAGE = 'tfjs-node-rs-gpu';
const TOLERANCE = 1e-2;
/** The suite's counts (benches/run.js): 20 predicts, 10 epochs, after a first call of each. */
const SUITE = {predictCalls: 20, fitEpochs: 10};

// A fixed sequence in [-1, 1) (a 32-bit LCG), the same in every process.
function sequence(n, seed) {
  const out = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s / 2 ** 31 - 1;
  }
  return out;
}

/** The results both sides compute, as plain arrays. */
async function compute(tf) {
  const a = tf.tensor2d(sequence(512 * 1024, 1), [512, 1024]);
  const b = tf.tensor2d(sequence(1024 * 256, 2), [1024, 256]);
  const matMul = Array.from(await tf.matMul(a, b).data());

  const spec = MODELS.find((m) => m.name === 'convolutional-32filters');
  const model = spec.build(tf);
  model.setWeights(model.getWeights().map((w, i) => tf.tensor(sequence(w.size, 10 + i).map((v) => v * 0.1), w.shape)));
  const batch = 16;
  const xs = tf.tensor(sequence(batch * 28 * 28, 3).map((v) => (v + 1) / 2), [batch, 28, 28, 1]);
  const labels = tf.oneHot(tf.tensor1d(Array.from({length: batch}, (_, i) => i % 10), 'int32'), 10);
  const predict = Array.from(await model.predict(xs).data());
  model.compile({optimizer: tf.train.sgd(0.05), loss: spec.fit.loss});
  const history = await model.fit(xs, labels, {batchSize: batch, epochs: 1, verbose: 0, yieldEvery: 'never'});
  const weights = await Promise.all(model.getWeights().map(async (w) => Array.from(await w.data())));
  return {matMul, predict, loss: history.history.loss[0], weights};
}

async function suite(tf) {
  const out = [];
  for (const spec of MODELS.filter((m) => !m.workload)) {
    const r = await taskModel(tf, {model: spec.name, ...SUITE});
    out.push({model: spec.name, method: 'predict', ms: r.predict.ms});
    if (r.fit && !r.fit.error) out.push({model: spec.name, method: 'fit', ms: r.fit.ms});
  }
  return out;
}

function loadedCudaLibs() {
  const maps = fs.readFileSync('/proc/self/maps', 'utf8').split('\n').map((l) => l.split(/\s+/)[5]).filter(Boolean);
  return [...new Set(maps.filter((f) => /\/nvidia\/[^/]+\/lib\//.test(f)))];
}

function relativeError(got, want) {
  let diff = 0;
  let scale = 0;
  for (let i = 0; i < want.length; i++) {
    diff = Math.max(diff, Math.abs(got[i] - want[i]));
    scale = Math.max(scale, Math.abs(want[i]));
  }
  return got.length === want.length ? diff / (scale || 1) : Infinity;
}

async function reference(out) {
  const tf = require(PACKAGE);
  await tf.ready();
  const result = {gpu: tf.backend().isUsingGpuDevice, ...(await compute(tf)), suite: await suite(tf)};
  fs.writeFileSync(out, JSON.stringify(result));
}

async function main() {
  const failures = [];
  const check = (ok, what) => {
    console.log(`${ok ? 'PASS' : 'FAIL'}  ${what}`);
    if (!ok) failures.push(what);
  };
  const dryRun = process.argv.includes('--dry-run');
  const tf = require(PACKAGE);
  await tf.ready();
  const binding = tf.backend().binding;
  const cudaLibs = loadedCudaLibs();
  console.log(`${PACKAGE}: backend ${tf.getBackend()}, TensorFlow ${binding.TF_Version}, ${cudaLibs.length} CUDA libraries loaded` +
    `${cudaLibs.length ? ` from ${path.dirname(path.dirname(path.dirname(cudaLibs[0])))}` : ''}`);
  check(tf.getBackend() === 'tensorflow', "tf.getBackend() is 'tensorflow'");
  if (!dryRun) check(cudaLibs.length > 0, `the CUDA libraries are loaded from the package (${require.resolve(`${PACKAGE}/package.json`).replace(/package\.json$/, 'cuda')})`);
  const gpu = tf.backend().isUsingGpuDevice;
  if (!dryRun) check(gpu, 'tf.backend().isUsingGpuDevice is true');
  if (!gpu && !dryRun) {
    const {MIN_DRIVER} = require(`${PACKAGE}/js/libtensorflow_facts`);
    console.log(`TF found no GPU: see nvidia-smi, the driver version (the CUDA 12 libraries need >= ${MIN_DRIVER}), and the TF log ` +
      '(TF_CPP_MIN_LOG_LEVEL=0 node scripts/gpu-check.js).');
    return 1;
  }

  const started = Date.now();
  const own = await compute(tf);
  const ownSuite = await suite(tf);
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'gpu-check-')), 'cpu.json');
  const child = spawnSync(process.execPath, [__filename, '--reference', out], {
    stdio: ['ignore', 'inherit', 'inherit'],
    env: {...process.env, CUDA_VISIBLE_DEVICES: '-1', TF_CPP_MIN_LOG_LEVEL: '3'},
  });
  if (child.status !== 0) throw new Error(`the CPU reference run failed (exit code ${child.status})`);
  const cpu = JSON.parse(fs.readFileSync(out, 'utf8'));
  check(!cpu.gpu, 'the reference run (CUDA_VISIBLE_DEVICES=-1) ran on the CPU');
  // TF's CPU kernels are deterministic for these: on the CPU (a dry run) the two sides agree exactly.
  const compare = (what, got, want) => {
    const err = relativeError(got, want);
    check(err < TOLERANCE, `${what}: max |gpu - cpu| / max |cpu| = ${err.toExponential(2)} (< ${TOLERANCE})`);
  };
  compare('matMul [512,1024] x [1024,256]', own.matMul, cpu.matMul);
  compare('convolutional-32filters predict, batch 16', own.predict, cpu.predict);
  compare('one fit step: the loss', [own.loss], [cpu.loss]);
  compare('one fit step: every weight after it', own.weights.flat(), cpu.weights.flat());

  // JS memory handed to TF: TF copies it to the GPU for the op; the result reads back right.
  const before = binding.stats().sharedCreates;
  const data = sequence(1 << 20, 4);
  const x = tf.tensor1d(data);
  const y = await x.mul(2).add(1).data();
  check(binding.stats().sharedCreates > before && y.every((v, i) => Math.abs(v - (2 * data[i] + 1)) < 1e-5),
    'a tensor over JS memory (shared with TF) computes right on the GPU');

  console.log('\nthe layers suite (ms per call, median of 2 rounds; CPU: TF on the same machine, CUDA_VISIBLE_DEVICES=-1)');
  console.log(`${'model'.padEnd(26)} ${'method'.padEnd(8)} ${'GPU'.padStart(9)} ${'CPU'.padStart(9)}  CPU/GPU`);
  for (const [i, g] of ownSuite.entries()) {
    const c = cpu.suite[i];
    console.log(`${g.model.padEnd(26)} ${g.method.padEnd(8)} ${g.ms.toFixed(2).padStart(9)} ${c.ms.toFixed(2).padStart(9)}  ${(c.ms / g.ms).toFixed(2)}`);
  }
  console.log(`\n${failures.length ? `${failures.length} check(s) failed` : 'all checks passed'} (${((Date.now() - started) / 1000).toFixed(0)} s)`);
  return failures.length ? 1 : 0;
}

if (process.argv[2] === '--reference') {
  reference(process.argv[3]).then(() => process.exit(0), (err) => {
    console.error(err && err.stack || err);
    process.exit(1);
  });
} else {
  main().then((code) => process.exit(code), (err) => {
    console.error(err && err.stack || err);
    process.exit(1);
  });
}
