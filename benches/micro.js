'use strict';
// The micro-benchmarks, run inside a worker process (benches/worker.js) on one backend's `tf`:
// per-op overhead, creation up to the first op, readback (also in a realistic heap), a round trip,
// and the RSS of a 400 MB tensor (the last in a process of its own).

const {performance} = require('perf_hooks');
const {median} = require('./stats');

const now = () => performance.now();
const gc = () => { if (global.gc) global.gc(); };
// Before a timed round of many small calls only the young generation is collected. A full
// collection there made the next round of rnn-SimpleRNN predicts about 2x slower on every backend
// (9-10 ms after gc(), 4.5-5 ms after a young-generation gc, wasm and tensorflow alike; neither
// bytecode flushing nor the semi-space size explained it), so rounds measured the collection's
// aftermath rather than the backend.
const youngGc = () => { if (global.gc) global.gc({type: 'minor'}); };

function perOp(tf, task) {
  const a = tf.scalar(1);
  const b = tf.scalar(2);
  const n = task.perOpIterations;
  for (let i = 0; i < Math.min(n, 5000); i++) tf.add(a, b).dispose();
  const check = tf.add(a, b);
  if (check.dataSync()[0] !== 3) throw new Error('tf.add(1, 2) !== 3');
  check.dispose();
  const ns = [];
  for (let r = 0; r < task.perOpRounds; r++) {
    youngGc();
    const t0 = now();
    for (let i = 0; i < n; i++) tf.add(a, b).dispose();
    ns.push((now() - t0) * 1e6 / n);
  }
  tf.dispose([a, b]);
  return {ns: median(ns), min: Math.min(...ns), rounds: ns, iterations: n};
}

function repsFor(n, task) {
  return Math.max(task.minReps, Math.min(task.maxReps, Math.round(task.elementBudget / n)));
}

// Times `fn(i)` for a number of reps fitted to the size; `setup(i)` and `teardown(i)` are not timed.
function timeReps(reps, fn, setup, teardown) {
  const ms = [];
  for (let i = 0; i < reps + 1; i++) {
    if (setup) setup(i);
    const t0 = now();
    fn(i);
    const dt = now() - t0;
    if (teardown) teardown(i);
    if (i > 0) ms.push(dt);  // the first rep is a warm-up
  }
  return {ms: median(ms), min: Math.min(...ms), reps};
}

function filled(arr) {
  for (let i = 0; i < arr.length; i++) arr[i] = (i % 1000) / 8;
  return arr;
}

// Creation up to the first op: tf.tensor(source) then a 1-element slice read back, so every
// backend must have made its tensor (uploaded, copied or shared) and run an op on it, while the
// op's own cost does not grow with the size.
function createOnce(tf, src, n) {
  const t = tf.tensor1d(src);
  const s = tf.slice(t, [n - 1], [1]);
  const v = s.dataSync()[0];
  tf.dispose([t, s]);
  return v;
}

function micro(tf, task) {
  const res = {perOp: perOp(tf, task), create: {}, readback: {}, roundTrip: null};
  const backend = tf.backend();
  const sources = ['plain', 'readback'];
  if (task.backend === 'tensorflow') {
    if (typeof backend.alloc === 'function') sources.push('aligned');
    else res.alignedNote = 'the backend exposes no alloc()';
  }
  for (const source of sources) res.create[source] = {};
  for (const n of task.sizes) {
    const reps = repsFor(n, task);
    const plain = filled(new Float32Array(n));
    const expect = plain[n - 1];
    for (const source of sources) {
      let src = plain;
      let keep = null;
      if (source === 'aligned') {
        src = filled(backend.alloc('float32', n));
      } else if (source === 'readback') {
        // Data TF computed and JS read back; creating from it again is the TF → JS → TF leg.
        const base = tf.tensor1d(plain);
        keep = tf.mul(base, 1);
        base.dispose();
        src = keep.dataSync();
      }
      gc();
      const r = timeReps(reps, () => {
        const v = createOnce(tf, src, n);
        if (v !== expect) throw new Error(`create ${source} ${n}: got ${v}, want ${expect}`);
      });
      if (keep) keep.dispose();
      res.create[source][n] = r;
    }
    // Readback: dataSync of a tensor an op made (so it lives in the backend), fresh per rep.
    const base = tf.tensor1d(plain);
    let x = null;
    let got;
    gc();
    res.readback[n] = timeReps(reps, () => { got = x.dataSync(); },
                               () => { x = tf.add(base, 1); },
                               () => {
                                 if (got[n - 1] !== expect + 1) throw new Error('readback value');
                                 x.dispose(); got = null;
                               });
    base.dispose();
  }
  // JS → TF → JS → TF of a large tensor: tensor(plain) → add 1 → dataSync → tensor → slice read.
  {
    const n = task.roundTripSize;
    const plain = filled(new Float32Array(n));
    const expect = plain[n - 1] + 1;
    gc();
    res.roundTrip = {size: n, ...timeReps(repsFor(n, task), () => {
      const t1 = tf.tensor1d(plain);
      const t2 = tf.add(t1, 1);
      const back = t2.dataSync();
      const t3 = tf.tensor1d(back);
      const s = tf.slice(t3, [n - 1], [1]);
      const v = s.dataSync()[0];
      tf.dispose([t1, t2, t3, s]);
      if (v !== expect) throw new Error(`round trip: got ${v}, want ${expect}`);
    })};
  }
  res.readbackInHeap = readbackInHeap(tf, task);
  return res;
}

// Readback of a 1e7-element result in a process with a realistic heap (tfjs loaded, a model
// built and run, 300k JS objects alive). Each rep computes `base + i`, reads it and disposes it,
// timed whole, so that a collection the read causes counts wherever it lands; the same reps
// reading one element of the result instead (run first, so that no large read precedes them)
// give the cost without the full read. A read over TF's buffer is an ArrayBuffer V8 counts as
// external memory; every second 40 MB read collected that heap (5-10 ms).
function readbackInHeap(tf, task) {
  const n = task.heapReadbackSize;
  const model = tf.sequential({layers: [
    tf.layers.dense({units: 256, inputShape: [512], activation: 'relu'}),
    tf.layers.dense({units: 10}),
  ]});
  tf.tidy(() => model.predict(tf.ones([8, 512])).dataSync());
  const heap = [];
  for (let i = 0; i < 3e5; i++) heap.push({i, name: 'object ' + i, list: [i]});
  const base = tf.fill([n], 1);
  const rep = (read) => {
    const ms = [];
    for (let i = 0; i < task.heapReadbackReps + 1; i++) {
      const t0 = now();
      const y = tf.add(base, i);
      const v = read(y);
      y.dispose();
      const dt = now() - t0;
      if (v !== 1 + i) throw new Error('readback in a heap: value');
      if (i > 0) ms.push(dt);  // the first rep is a warm-up
    }
    return ms;
  };
  const one = rep((y) => tf.tidy(() => tf.slice(y, [n - 1], [1]).dataSync()[0]));
  const full = rep((y) => y.dataSync()[n - 1]);
  base.dispose();
  model.dispose();
  const objects = heap.length;
  const mean = (xs) => xs.reduce((a, x) => a + x, 0) / xs.length;
  return {ms: median(full), min: Math.min(...full), meanMs: mean(full), oneMs: median(one),
          oneMeanMs: mean(one), reps: full.length, size: n, objects};
}

// ---------------------------------------------------------------- rss

// Peak RSS added by making a 400 MB tensor from memory JS already holds, up to its first op.
function rss(tf, task) {
  const n = task.rssElements;
  // Warm the op path so first-op setup costs are not counted.
  createOnce(tf, filled(new Float32Array(1024)), 1024);
  let arr;
  if (task.source === 'aligned') {
    if (typeof tf.backend().alloc !== 'function') return {error: 'the backend exposes no alloc()'};
    arr = tf.backend().alloc('float32', n);
  } else {
    arr = new Float32Array(n);
  }
  arr.fill(1.5);
  gc();
  const before = process.resourceUsage().maxRSS;  // KiB
  const rssBefore = process.memoryUsage().rss;
  const t = tf.tensor1d(arr);
  const s = tf.slice(t, [n - 1], [1]);
  const v = s.dataSync()[0];
  if (v !== 1.5) throw new Error(`rss: got ${v}`);
  const after = process.resourceUsage().maxRSS;
  const rssAfter = process.memoryUsage().rss;
  tf.dispose([t, s]);
  return {
    bytes: n * 4,
    peakDeltaMB: (after - before) / 1024,
    rssDeltaMB: (rssAfter - rssBefore) / (1024 * 1024),
    baselineMB: before / 1024,
  };
}

module.exports = {now, gc, youngGc, micro, perOp, rss};
