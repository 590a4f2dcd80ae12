'use strict';
// Reads (dataSync) in synchronous code: memory stays bounded without the event loop turning, and
// writing into a read never changes another tensor.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {spawnSync} = require('node:child_process');
const v8 = require('node:v8');
const vm = require('node:vm');

const ROOT = path.join(__dirname, '..');
const tf = require(ROOT);
const binding = require('../binding.js');

const MB = 1024 * 1024;

/**
 * Runs `loop` (the body of a function of `tf`) in a fresh process after a warm-up of `warm`;
 * returns RSS at the start of the loop, peak RSS (VmHWM) and RSS at its end, in MB.
 */
function rssOfLoop(warm, loop, env = {}) {
  const script = `
    const tf = require(${JSON.stringify(ROOT)});
    const rssMB = () => process.memoryUsage().rss / ${MB};
    const peakMB = () => process.resourceUsage().maxRSS / 1024;
    (${warm})(tf);
    const start = rssMB();
    const check = (${loop})(tf);
    console.log(JSON.stringify({start, peak: peakMB(), end: rssMB(), check}));`;
  const run = spawnSync(process.execPath, ['-e', script],
                        {encoding: 'utf8', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3', ...env}});
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}

for (const defer of ['1', '0']) {
  test('1000 reads of 4 MB results in one synchronous loop: views stay in their budget, RSS ' +
       `under 1 GB (deferring ${defer === '1' ? 'on' : 'off'})`, () => {
    // Before: every read kept its 4 MB until the event loop turned: 4.5 GB peak. Then, with the
    // views in their budget, glibc kept the freed 4 MB blocks on some machines: 2.5-2.9 GB.
    const r = rssOfLoop(
        (tf) => tf.add(tf.ones([1 << 20]), 1).dataSync(),
        (tf) => {
          const stats = () => tf.backend().binding.stats();
          const before = stats();
          const x = tf.ones([1 << 20]);
          let sum = 0;
          let mostViewBytes = 0;
          for (let i = 0; i < 1000; i++) {
            const y = tf.add(x, i);
            sum += y.dataSync()[(i * 7919) % (1 << 20)];
            y.dispose();
            mostViewBytes = Math.max(mostViewBytes, stats().viewBytes);
          }
          const after = stats();
          return {sum, mostViewBytes, budget: after.viewBudgetBytes, mmap: after.mmapThresholdBytes,
                  reads: after.sharedReads + after.copiedReads - before.sharedReads - before.copiedReads,
                  liveBytes: after.liveBytes};
        },
        {TFJS_NODE_RS_DEFER: defer});
    assert.equal(r.check.sum, 500500);  // sum of (1 + i)
    // The package's own counts first: they hold on any machine, whatever V8 and malloc do.
    assert.equal(r.check.reads, 1000);
    assert.ok(r.check.budget > 0 && r.check.budget <= 512 * MB, `budget ${r.check.budget}`);
    assert.ok(r.check.mostViewBytes <= r.check.budget,
              `views held ${r.check.mostViewBytes / MB} MB, past their ${r.check.budget / MB} MB`);
    assert.ok(r.check.liveBytes < 64 * MB, `tensors alive hold ${r.check.liveBytes / MB} MB`);
    // glibc gives each freed block of 1 MB or more back (src/allocator.rs), so RSS follows
    // those counts instead of the heap's history.
    if (process.platform === 'linux' && process.report.getReport().header.glibcVersionRuntime) {
      assert.equal(r.check.mmap, MB);
    }
    // Then RSS, loosely: measured 576-845 MB peak on Node 20-26 (start 410-460 MB).
    assert.ok(r.peak < 1024, `peak RSS ${r.peak.toFixed(0)} MB (start ${r.start.toFixed(0)} MB)`);
    assert.ok(r.end - r.start < 600, `RSS grew ${(r.end - r.start).toFixed(0)} MB`);
  });
}

test('300k create/add/read/dispose cycles of small tensors keep RSS flat', () => {
  // Before: each read was an external ArrayBuffer whose finalizer waits for the event loop:
  // +160 MB over these cycles (+1.4 GB over a million), flat after.
  const r = rssOfLoop(
      (tf) => {
        for (let i = 0; i < 5000; i++) {
          const a = tf.tensor1d([i, 2]);
          const b = tf.add(a, 1);
          b.dataSync();
          tf.dispose([a, b]);
        }
      },
      (tf) => {
        let sum = 0;
        for (let i = 0; i < 300000; i++) {
          const a = tf.tensor1d([i, 2]);
          const b = tf.add(a, 1);
          sum += b.dataSync()[1];
          tf.dispose([a, b]);
        }
        return {sum, externalBuffers: tf.backend().binding.stats().externalBuffers};
      });
  assert.equal(r.check.sum, 900000);
  assert.ok(r.check.externalBuffers < 1000, `${r.check.externalBuffers} external buffers`);
  assert.ok(r.end - r.start < 100, `RSS grew ${(r.end - r.start).toFixed(0)} MB`);
});

test('large reads share TF\'s buffer; small ones, and reads past the budget, are copies', () => {
  const n = 1 << 16;  // 256 KB
  const x = tf.ones([n]);
  const y = tf.add(x, 1);
  y.dataSync().length;  // computed
  let before = binding.stats();
  const big = tf.add(x, 2);
  assert.equal(big.dataSync()[n - 1], 3);
  assert.equal(binding.stats().sharedReads - before.sharedReads, 1);
  before = binding.stats();
  const small = tf.add(tf.ones([16]), 1);
  assert.equal(small.dataSync()[15], 2);
  const after = binding.stats();
  assert.equal(after.sharedReads - before.sharedReads, 0);
  assert.equal(after.copiedReads - before.copiedReads, 1);
  // The readback values stay valid after the tensor is disposed.
  const kept = big.dataSync();
  tf.dispose([x, y, big, small]);
  assert.equal(kept[0], 3);

  // Views held by JS (here: all kept alive) are bounded; reads past the bound copy.
  const m = 1 << 22;  // 16 MB
  const held = [];
  before = binding.stats();
  const base = tf.ones([m]);
  for (let i = 0; i < 40; i++) {  // 640 MB held, past the 512 MiB budget
    const t = tf.add(base, i);
    held.push(t.dataSync());
    t.dispose();
  }
  const delta = binding.stats();
  assert.ok(delta.viewBytes <= delta.viewBudgetBytes, `views hold ${delta.viewBytes} bytes`);
  assert.ok(delta.copiedReads - before.copiedReads >= 8, 'no read past the budget copied');
  assert.ok(delta.sharedReads - before.sharedReads >= 1);
  held.forEach((v, i) => assert.equal(v[m - 1], 1 + i));
  base.dispose();
});

test('large outputs of background work are read as views too, sync and async, unless a later ' +
     'job takes them', async () => {
  // Graph replays are executor jobs (src/executor.rs); their outputs move to the tensors that
  // hold them, so a read shares TF's buffer as for an eager op. Values by hand: a = 1..n.
  const n = 1 << 16;
  const a = tf.range(1, n + 1);
  const three = tf.node.function((x) => [tf.add(x, 1), tf.mul(x, 2), tf.sub(x, 3)]);
  tf.dispose(three(a));
  tf.dispose(three(a));
  let before = binding.stats();
  const [p, q, r] = three(a);
  assert.ok(binding.stats().backgroundRuns > before.backgroundRuns, 'a job');
  assert.deepEqual([p.dataSync()[n - 1], q.dataSync()[n - 1], (await r.data())[n - 1]],
                   [n + 1, 2 * n, n - 3]);
  let after = binding.stats();
  assert.equal(after.sharedReads - before.sharedReads, 3);
  assert.equal(after.copiedReads - before.copiedReads, 0);
  // An output a later job takes stays with its job until that job has run (a read before then
  // copies it: the job's own handle must not see JS write into it); then it is the tensor's.
  const addOne = tf.node.function((x) => tf.add(x, 1));
  tf.dispose(addOne(addOne(a)));
  tf.dispose(addOne(addOne(a)));
  before = binding.stats();
  const once = addOne(a);
  const twice = addOne(once);
  assert.equal(twice.dataSync()[0], 3);
  assert.equal(once.dataSync()[0], 2);
  after = binding.stats();
  assert.equal(after.sharedReads - before.sharedReads, 2);
  tf.dispose([a, p, q, r, once, twice]);
});

test('views V8 has collected give their buffer back at once, without the event loop',
     {skip: typeof ArrayBuffer.prototype.transfer === 'function' &&
         'ArrayBuffer.prototype.transfer can move a view\'s memory: views wait for finalizers'},
     () => {
       // 400 reads of 4 MB dropped at once: 1.6 GB, three times the 512 MiB the views may hold.
       // Were buffers released only by finalizers (after the event loop turns), at most 128 of
       // these reads could be views. V8 collects under external memory pressure on its own, but
       // when is its choice (a loaded machine once saw 169 views), so the loop collects itself,
       // synchronously, every 100 MB: then every read must be a view.
       v8.setFlagsFromString('--expose-gc');
       const collect = vm.runInNewContext('gc');
       const T = {name: 'T', type: 'type', value: 'float32'};
       const n = 1 << 20;
       const base = binding.createTensor([n], 'float32', binding.alloc('float32', n));
       collect();  // what earlier tests left
       const before = binding.stats();
       for (let i = 0; i < 400; i++) {
         const [out] = binding.executeOp('Neg', [T], [base], 1);
         binding.tensorDataSync(out.id);
         binding.deleteTensor(out.id);
         if (i % 25 === 24) collect();
       }
       const shared = binding.stats().sharedReads - before.sharedReads;
       assert.equal(shared, 400, `${shared} of 400 reads were views`);
       binding.deleteTensor(base);
     });

// Writing into one tensor's read must not change any other tensor: small and large (a view)
// reads, through tfjs's API, for each way two tensors come to share a buffer.
const SIZES = {small: 8, large: 1 << 15};
const SHARERS = {
  'reshape': (a) => a.reshape([a.size / 2, 2]),
  'clone': (a) => a.clone(),
  'the Identity kernel': (a) => tf.engine().runKernel('Identity', {x: a}),
  'identity transpose': (a) => tf.transpose(a.reshape([a.size / 2, 2]), [0, 1]),
  'full slice': (a) => tf.slice(a, [0], [a.size]),
  'full stridedSlice': (a) => tf.stridedSlice(a, [0], [a.size], [1]),
  'cast to its dtype': (a) => tf.cast(a, 'float32'),
  'concat of one': (a) => tf.concat([a]),
  'tile by 1': (a) => tf.tile(a, [1]),
  'pad by 0': (a) => tf.pad(a, [[0, 0]]),
  'broadcastTo its shape': (a) => tf.broadcastTo(a, a.shape),
  'expandDims': (a) => tf.expandDims(a, 0),
  'variable': (a) => tf.variable(a),
};

for (const [size, n] of Object.entries(SIZES)) {
  for (const [name, share] of Object.entries(SHARERS)) {
    test(`${size} reads: a write into a read does not change another tensor (${name})`, () => {
      const a = tf.add(tf.range(0, n), 0);
      const b = share(a);
      for (const [write, other] of [[a, b], [b, a]]) {
        const values = write.dataSync();
        const was = values[1];
        values[1] = -7;
        assert.equal(other.dataSync()[1], 1, `writing into one read changed the other tensor`);
        assert.equal(tf.sum(other).dataSync()[0], n * (n - 1) / 2);
        values[1] = was;
      }
      tf.dispose([a, b]);
    });
  }
}

test('a write into a read does not change a layer\'s kernel, nor the tensor set as it', () => {
  const units = 128;
  const layer = tf.layers.dense({units, inputShape: [units], useBias: false});
  const model = tf.sequential({layers: [layer]});
  const w = tf.add(tf.ones([units, units]), 0);
  layer.setWeights([w]);  // the kernel variable now holds w's data
  const expected = model.predict(tf.ones([1, units])).dataSync()[0];
  assert.equal(expected, units);
  w.dataSync()[0] = 100;
  assert.equal(model.predict(tf.ones([1, units])).dataSync()[0], expected);
  layer.getWeights()[0].dataSync()[1] = 100;
  assert.equal(w.dataSync()[1], 1);
  w.dispose();
  model.dispose();
});
