'use strict';
// Native-binding benchmarks (not tests): per-op overhead against a raw C TFE_Execute loop, and
// tensor creation / readback cost by size, through alloc() and through a plain Float32Array.
//   node benches/binding.js [--quick]
const path = require('node:path');
const fs = require('node:fs');
const os = require('node:os');
const {execFileSync} = require('node:child_process');

process.env.TF_CPP_MIN_LOG_LEVEL = process.env.TF_CPP_MIN_LOG_LEVEL || '2';
const binding = require('../binding.js');
const {median} = require('./stats');

const root = path.resolve(__dirname, '..');
const quick = process.argv.includes('--quick');
const REPEATS = quick ? 3 : 7;

/** Median over REPEATS of the mean ns per call of `body` run `n` times. */
function nsPerCall(n, body) {
  const runs = [];
  for (let r = 0; r < REPEATS; r++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) body(i);
    runs.push(Number(process.hrtime.bigint() - start) / n);
  }
  return median(runs);
}

function cFloorNs() {
  const exe = path.join(os.tmpdir(), 'tfjs-node-rs-tfe-add-loop');
  const lib = path.join(root, 'deps', 'lib');
  try {
    execFileSync('gcc', ['-O2', '-o', exe, path.join(__dirname, 'c', 'tfe_add_loop.c'), `-I${path.join(root, 'deps', 'include')}`,
      `-L${lib}`, '-ltensorflow', '-l:libtensorflow_framework.so.2', `-Wl,-rpath,${lib}`], {stdio: 'pipe'});
    return Number(execFileSync(exe, [quick ? '50000' : '200000'], {encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}));
  } catch (err) {
    console.log(`(C floor not measured: ${err.message.split('\n')[0]})`);
    return NaN;
  }
}

function perOp() {
  const n = quick ? 50000 : 200000;
  const a = binding.createTensor([], 'float32', new Float32Array([1]));
  const attrs = [{name: 'T', type: 'type', value: 'float32'}];
  const inputs = [a, a];
  const objectPath = nsPerCall(n, () => binding.deleteTensor(binding.executeOp('AddV2', attrs, inputs, 1)[0].id));
  const prepared = binding.prepareOp('AddV2', attrs);
  const io = new Float64Array(16);
  const preparedPath = nsPerCall(n, () => {
    io[0] = a;
    io[1] = a;
    binding.runPreparedOp(prepared, io, 2, 1);
    binding.deleteTensor(io[0]);
  });
  const floor = cFloorNs();
  console.log('\nPer-op overhead: AddV2 on two float32 scalars, output deleted (ns per op, median)');
  console.log(`  raw C TFE_Execute loop (NewOp per call)  ${floor.toFixed(0).padStart(7)}`);
  console.log(`  executeOp (attrs read per call)          ${objectPath.toFixed(0).padStart(7)}   ${(objectPath / floor).toFixed(2)}x the C floor`);
  console.log(`  prepareOp + runPreparedOp                ${preparedPath.toFixed(0).padStart(7)}   ${(preparedPath / floor).toFixed(2)}x the C floor`);
  binding.deleteTensor(a);
  return {cFloorNs: floor, executeOpNs: objectPath, preparedNs: preparedPath};
}

function createAndRead() {
  const sizes = quick ? [1e3, 1e5, 1e7] : [1e3, 1e4, 1e5, 1e6, 1e7];
  const rows = [];
  console.log('\nCreate (createTensor) and read back (tensorDataSync) float32 tensors (µs, median)');
  console.log('  elements   create:alloc  create:Float32Array  read:shared');
  for (const size of sizes) {
    const n = size >= 1e6 ? 20 : 500;
    const aligned = binding.alloc('float32', size);
    const plain = new Float32Array(size);
    const us = (body) => nsPerCall(n, body) / 1000;
    const createAligned = us(() => binding.deleteTensor(binding.createTensor([size], 'float32', aligned)));
    const createPlain = us(() => binding.deleteTensor(binding.createTensor([size], 'float32', plain)));
    const id = binding.createTensor([size], 'float32', aligned);
    const [neg] = binding.executeOp('Neg', [{name: 'T', type: 'type', value: 'float32'}], [id], 1);
    const read = us(() => binding.tensorDataSync(neg.id));
    binding.deleteTensor(id);
    binding.deleteTensor(neg.id);
    rows.push({size, createAlignedUs: createAligned, createPlainUs: createPlain, readUs: read});
    console.log(`  ${size.toExponential(0).padEnd(9)} ${createAligned.toFixed(1).padStart(12)} ${createPlain.toFixed(1).padStart(20)} ${read.toFixed(1).padStart(12)}`);
  }
  return rows;
}

const results = {machine: `${os.cpus().length} × ${os.cpus()[0].model}`, node: process.version, tf: binding.tfVersion(), perOp: perOp(), sizes: createAndRead()};
const stats = binding.stats();
console.log(`\nstats: ${stats.sharedCreates} shared / ${stats.copiedCreates} copied creates, ${stats.sharedReads} shared reads`);
const out = path.join(__dirname, 'results');
fs.mkdirSync(out, {recursive: true});
fs.writeFileSync(path.join(out, 'binding.json'), JSON.stringify(results, null, 2));
