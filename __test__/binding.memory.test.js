'use strict';
// Zero-copy is proven, not assumed; lifetimes hold across GC, TF threads and env shutdown.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {Worker} = require('node:worker_threads');
const {spawnSync} = require('node:child_process');
const binding = require('../binding.js');

const gc = global.gc;
const T = {name: 'T', type: 'type', value: 'float32'};
const tick = () => new Promise((resolve) => setImmediate(resolve));

function statsDelta(before) {
  const now = binding.stats();
  return Object.fromEntries(Object.keys(now).map((k) => [k, now[k] - before[k]]));
}

function identity(id) {
  return binding.executeOp('Identity', [T], [id], 1)[0];
}

test('an alloc()ed array is shared: a write after createTensor is seen by the next op', () => {
  const before = binding.stats();
  const data = binding.alloc('float32', 4);
  assert.ok(data instanceof Float32Array);
  assert.deepEqual(Array.from(data), [0, 0, 0, 0]);
  data.set([1, 2, 3, 4]);
  const id = binding.createTensor([4], 'float32', data);
  data[0] = 100;
  const out = identity(id);
  assert.deepEqual(Array.from(binding.tensorDataSync(out.id)), [100, 2, 3, 4]);
  const delta = statsDelta(before);
  assert.equal(delta.sharedCreates, 1);
  assert.equal(delta.copiedCreates, 0);
  binding.deleteTensor(id);
  binding.deleteTensor(out.id);
});

test('alloc() serves every numeric dtype, complex64 with interleaved lanes', () => {
  const kinds = {float32: Float32Array, int32: Int32Array, bool: Uint8Array, uint8: Uint8Array, int64: BigInt64Array, float64: Float64Array};
  for (const [dtype, Kind] of Object.entries(kinds)) {
    const a = binding.alloc(dtype, 5);
    assert.ok(a instanceof Kind, dtype);
    assert.equal(a.length, 5);
  }
  assert.equal(binding.alloc('complex64', 3).length, 6);
  assert.equal(binding.alloc('float32', 0).length, 0);
});

test('a misaligned view is copied, counted as copied, and still correct', () => {
  const base = binding.alloc('float32', 9);
  base.set([0, 1, 2, 3, 4, 5, 6, 7, 8]);
  const view = base.subarray(1);
  const before = binding.stats();
  const id = binding.createTensor([8], 'float32', view);
  view[0] = -1; // a copy does not see this
  assert.deepEqual(Array.from(binding.tensorDataSync(identity(id).id)), [1, 2, 3, 4, 5, 6, 7, 8]);
  const delta = statsDelta(before);
  assert.equal(delta.copiedCreates, 1);
  assert.equal(delta.sharedCreates, 0);
});

test('a JS array at an address TF cannot share is copied but correct', () => {
  const before = binding.stats();
  // V8 places array data 16-byte aligned; 4 bytes further is never 64-byte aligned.
  const data = new Float32Array(new ArrayBuffer(16), 4, 3);
  data.set([1, 2, 3]);
  const id = binding.createTensor([3], 'float32', data);
  assert.deepEqual(Array.from(binding.tensorDataSync(id)), [1, 2, 3]);
  assert.equal(statsDelta(before).copiedCreates, 1);
  binding.deleteTensor(id);
});

test('a large readback shares TF\'s buffer instead of copying', () => {
  const n = 1 << 22; // 16 MiB
  const data = binding.alloc('float32', n);
  data[n - 1] = 42;
  const id = binding.createTensor([n], 'float32', data);
  const [neg] = binding.executeOp('Neg', [T], [id], 1);
  const before = binding.stats();
  const out = binding.tensorDataSync(neg.id);
  assert.equal(out.length, n);
  assert.equal(out[n - 1], -42);
  assert.equal(statsDelta(before).sharedReads, 1);
  // The readback of a tensor made from JS memory is a copy: a view would let a write change
  // the array TF borrowed.
  const same = binding.tensorDataSync(id);
  same[0] = 7;
  assert.equal(data[0], 0);
  assert.equal(statsDelta(before).copiedReads, 1);
  binding.deleteTensor(id);
  binding.deleteTensor(neg.id);
});

test('two tensors that share one buffer read as copies; the readback outlives both', () => {
  for (const n of [3, 1 << 15]) {
    const id = binding.createTensor([n], 'float32', Float32Array.from({length: n}, (_, i) => i));
    const [own] = binding.executeOp('Neg', [T], [id], 1);
    const alias = identity(own.id); // TF's Identity shares the input buffer
    const a = binding.tensorDataSync(own.id);
    const b = binding.tensorDataSync(own.id);
    const c = binding.tensorDataSync(alias.id);
    a[1] = 20;
    assert.equal(b[1], -1);
    assert.equal(c[1], -1);
    // `aliased`: the caller knows of other owners; the read is a copy.
    const d = binding.tensorDataSync(own.id, true);
    d[2] = 30;
    assert.equal(binding.tensorDataSync(alias.id)[2], -2);
    binding.deleteTensor(id);
    binding.deleteTensor(own.id);
    binding.deleteTensor(alias.id);
    gc();
    assert.equal(c[n - 1], 1 - n); // the readback keeps its values
  }
});

test('the typed array stays alive while TF holds it, after JS drops it and GC runs', async () => {
  let collected = false;
  const registry = new FinalizationRegistry(() => { collected = true; });
  let id;
  (() => {
    const data = binding.alloc('float32', 1024);
    data.fill(3);
    id = binding.createTensor([1024], 'float32', data);
    registry.register(data, 'data');
  })();
  for (let i = 0; i < 5; i++) {
    gc();
    await tick();
  }
  assert.equal(collected, false, 'collected while TF still held it');
  const [sum] = binding.executeOp('Sum', [T, {name: 'Tidx', type: 'type', value: 'int32'}, {name: 'keep_dims', type: 'bool', value: false}],
    [id, binding.createTensor([1], 'int32', new Int32Array([0]))], 1);
  assert.deepEqual(Array.from(binding.tensorDataSync(sum.id)), [3072]);
  binding.deleteTensor(id);
  for (let i = 0; i < 20 && !collected; i++) {
    gc();
    await tick();
  }
  assert.equal(collected, true, 'never collected after TF let go');
});

test('100k create/delete cycles end with no live tensors, no pending releases and bounded RSS', async () => {
  const start = binding.stats().liveTensors;
  // Finalizers of collected ArrayBuffers run from the event loop, so the loop yields now and then.
  const cycle = async (n) => {
    for (let i = 0; i < n; i++) {
      const data = binding.alloc('float32', 16);
      const a = binding.createTensor([16], 'float32', data);
      const b = binding.createTensor([4], 'float32', new Float32Array(4));
      binding.tensorDataSync(a);
      binding.deleteTensor(a);
      binding.deleteTensor(b);
      if (i % 1000 === 999) await tick();
    }
    for (let i = 0; i < 50 && binding.stats().externalBuffers > 100; i++) {
      gc();
      await tick();
    }
  };
  await cycle(10000);
  const rss = process.memoryUsage().rss;
  await cycle(90000);
  const grown = process.memoryUsage().rss - rss;
  const stats = binding.stats();
  assert.equal(stats.liveTensors, start);
  assert.equal(stats.pendingReleases, 0);
  assert.ok(stats.externalBuffers <= 100, `${stats.externalBuffers} external buffers still alive`);
  assert.ok(grown < 64 * 1024 * 1024, `RSS grew by ${(grown / 1048576).toFixed(1)} MiB`);
});

test('a release on a native (non-JS) thread is queued, then done on the JS thread', async () => {
  let collected = false;
  const registry = new FinalizationRegistry(() => { collected = true; });
  let id;
  (() => {
    const data = binding.alloc('float32', 8);
    id = binding.createTensor([8], 'float32', data);
    registry.register(data, 'data');
  })();
  binding.dropTensorOnNativeThread(id);
  assert.equal(binding.stats().pendingReleases, 1);
  for (let i = 0; i < 20 && binding.stats().pendingReleases > 0; i++) await tick();
  assert.equal(binding.stats().pendingReleases, 0);
  for (let i = 0; i < 20 && !collected; i++) {
    gc();
    await tick();
  }
  assert.equal(collected, true);
  assert.throws(() => binding.tensorDataSync(id), /unknown or was deleted/);
});

const workerScript = `
const { parentPort } = require('node:worker_threads');
const binding = require(${JSON.stringify(path.join(__dirname, '..', 'binding.js'))});
const T = { name: 'T', type: 'type', value: 'float32' };
const kept = [];
for (let i = 0; i < 200; i++) {
  const data = binding.alloc('float32', 256);
  data.fill(i);
  const id = binding.createTensor([256], 'float32', data);
  const [out] = binding.executeOp('Neg', [T], [id], 1);
  kept.push(binding.tensorDataSync(out.id));
  binding.createTensor([2], 'float32', new Float32Array(2));
}
parentPort.postMessage(binding.stats().liveTensors);
setInterval(() => {}, 1000); // stay alive until terminated
`;

test('workers terminated with live tensors leave the main thread working', async () => {
  for (let round = 0; round < 3; round++) {
    const workers = [0, 1].map(() => new Worker(workerScript, {eval: true}));
    const live = await Promise.all(workers.map((w) => new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    })));
    assert.deepEqual(live, [600, 600]); // each worker has its own env state
    await Promise.all(workers.map((w) => w.terminate()));
  }
  const id = binding.createTensor([2], 'float32', new Float32Array([1, 2]));
  const [out] = binding.executeOp('AddV2', [T], [id, id], 1);
  assert.deepEqual(Array.from(binding.tensorDataSync(out.id)), [2, 4]);
});

test('a process that exits with live tensors and readbacks exits cleanly', () => {
  const script = `
    const binding = require(${JSON.stringify(path.join(__dirname, '..', 'binding.js'))});
    const data = binding.alloc('float32', 1 << 20);
    const id = binding.createTensor([1 << 20], 'float32', data);
    globalThis.keep = [binding.tensorDataSync(id), binding.createTensor([1], 'string', [new Uint8Array([104])])];
    console.log('done');
  `;
  const result = spawnSync(process.execPath, ['-e', script], {encoding: 'utf8', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}});
  assert.equal(result.status, 0, result.stderr);
  assert.equal(result.signal, null);
  assert.match(result.stdout, /done/);
});
