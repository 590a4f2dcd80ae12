#!/usr/bin/env node
'use strict';
// `npm run test:gpu-on-cpu`: the whole test suite (`npm test`, or the files given) on the GPU
// package's libtensorflow, the CUDA build from the x64 `tensorflow` wheel, on a machine without an
// NVIDIA GPU: what `tfjs-node-rs-gpu` must do there is run everything on the CPU.
//
//   1. points this checkout's deps/ at the GPU build's shared copy (the package's own install
//      code, variant 'gpu': the 546 MB wheel is downloaded into ~/.cache/tfjs-node-rs once);
//      with TFJS_NODE_RS_CUDA=1 also cuda/ at the CUDA libraries (1.5 GB of nvidia-*-cu12
//      wheels, once), which every test process then loads before TF starts; by default
//      (TFJS_NODE_RS_CUDA unset) without them, as the install leaves a machine with no driver;
//   2. checks in a child that the addon loads that libtensorflow (and the CUDA libraries) and
//      that TF reports no GPU;
//   3. runs scripts/test.js (no rebuild);
//   4. puts deps/ back as it was (the CPU build's shared copy, or the directory it was made
//      from), and removes cuda/.
//
//   node scripts/test-gpu-on-cpu.js [__test__/foo.test.js ...]

const fs = require('fs');
const path = require('path');
const {spawnSync} = require('child_process');
const {ensureLibtensorflow, sharedDir, sharedCudaDir, hostPlatform, log, exists} = require('./libtensorflow');
const {runMain} = require('./build');
const {ENV_DIR, CUDA_ENV} = require('../js/libtensorflow_facts');
const {packageCudaDir} = require('../js/cuda');

const root = path.resolve(__dirname, '..');

// What this process's children run first: which libraries the addon loaded, and TF's devices.
const LOAD_CHECK = `
const binding = require('./js/native_loader');
const maps = require('fs').readFileSync('/proc/self/maps', 'utf8').split('\\n').map((l) => l.split(/\\s+/)[5]).filter(Boolean);
console.log(JSON.stringify({
  libtensorflow: maps.find((f) => f.endsWith('/libtensorflow_cc.so.2')),
  cudaLibs: [...new Set(maps.filter((f) => /\\/nvidia\\/[^/]+\\/lib\\//.test(f)))].length,
  gpu: binding.isUsingGpuDevice(),
}));
`;

function readMarker(deps) {
  try {
    return JSON.parse(fs.readFileSync(path.join(deps, '.complete'), 'utf8'));
  } catch {
    return null;
  }
}

async function main() {
  const deps = path.join(root, 'deps');
  const before = readMarker(deps);
  const cudaMode = process.env[CUDA_ENV] === '1' ? '1' : '0';
  const gpuEnv = {...process.env, [CUDA_ENV]: cudaMode};
  delete gpuEnv[ENV_DIR];
  let status;
  try {
    fs.rmSync(deps, {recursive: true, force: true});
    await ensureLibtensorflow({root, log, env: gpuEnv, variant: 'gpu'});
    const gpuLib = path.join(sharedDir(gpuEnv, `${hostPlatform()}-gpu`), 'lib', 'libtensorflow_cc.so.2');
    const check = spawnSync(process.execPath, ['-e', LOAD_CHECK], {cwd: root, env: gpuEnv, encoding: 'utf8'});
    if (check.status !== 0) throw new Error(`loading the addon on the GPU build failed:\n${check.stderr}`);
    const loaded = JSON.parse(check.stdout.trim().split('\n').pop());
    log(`the addon runs on ${loaded.libtensorflow}, ${loaded.cudaLibs} CUDA libraries loaded, GPU: ${loaded.gpu}`);
    if (fs.realpathSync(loaded.libtensorflow) !== fs.realpathSync(gpuLib)) throw new Error(`expected ${gpuLib}`);
    if (loaded.gpu) throw new Error('TF reports a GPU: this test is for machines without one');
    if (cudaMode === '1' && !loaded.cudaLibs) throw new Error(`${CUDA_ENV}=1, but no CUDA library was loaded from ${sharedCudaDir(gpuEnv)}`);
    const res = spawnSync(process.execPath, [path.join(__dirname, 'test.js'), ...process.argv.slice(2)], {
      cwd: root, stdio: 'inherit', env: {...gpuEnv, TFJS_NODE_RS_SKIP_BUILD: '1'},
    });
    status = res.status ?? 1;
    log(`the test suite on the GPU build of libtensorflow ${status === 0 ? 'passed' : `failed (exit code ${status})`}`);
  } finally {
    // Back to the CPU build: the directory deps/ was made from, or the shared copy.
    fs.rmSync(packageCudaDir(root), {recursive: true, force: true});
    fs.rmSync(deps, {recursive: true, force: true});
    const env = {...process.env};
    delete env[ENV_DIR];
    if (before && before.kind === 'directory' && exists(before.source)) env[ENV_DIR] = before.source;
    await ensureLibtensorflow({root, log, env, variant: 'cpu'});
  }
  return status;
}

runMain(main);
