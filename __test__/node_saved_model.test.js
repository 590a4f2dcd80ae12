'use strict';
// tf.node SavedModel support against SavedModels exported by Python TensorFlow 2.21
// (scripts/make_fixtures.py); expected values are the ones Python computed.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const {tf, fixture, readJson, tmpDir, assertClose, assertNoLeak} = require('./fixtures/helpers');

const MODELS = ['keras_mlp', 'multi_sig', 'dtypes', 'edges'];
const DT_NAMES = {1: 'DT_FLOAT', 3: 'DT_INT32', 4: 'DT_UINT8', 7: 'DT_STRING', 9: 'DT_INT64',
                  10: 'DT_BOOL'};
const dir = (name) => fixture('saved_model', name);
const expected = (name) => readJson('saved_model', name, 'expected.json');

const INT32_MAX = 2 ** 31 - 1;
const fitsInt32 = (v) => v.dtype !== 'int64' || v.values.every((x) => Math.abs(Number(x)) <= INT32_MAX);

/**
 * A tfjs tensor from a fixture value {dtype, shape, values}; uint8 as int32, int64 as int32 or,
 * when `exact` (or beyond int32), as tf.node.Int64Tensor.
 */
function toTensor({dtype, shape, values}, exact = false) {
  switch (dtype) {
    case 'int64':
      if (exact || !fitsInt32({dtype, values})) return tf.node.int64Tensor(values.map(BigInt), shape);
      return tf.tensor(values.map(Number), shape, 'int32');
    case 'uint8': case 'int32': return tf.tensor(values, shape, 'int32');
    case 'float32': return tf.tensor(values, shape, 'float32');
    case 'bool': return tf.tensor(values, shape, 'bool');
    case 'string': return tf.tensor(values, shape, 'string');
    default: throw new Error(`no fixture conversion for ${dtype}`);
  }
}

function assertTensor(t, want, what) {
  if (t instanceof tf.node.Int64Tensor) {
    assert.equal(want.dtype, 'int64', `${what}: dtype`);
    assert.deepEqual(t.shape, want.shape, `${what}: shape`);
    assert.deepEqual(Array.from(t.dataSync(), String), want.values, what);
    return;
  }
  assert.ok(t instanceof tf.Tensor, `${what} is a tensor`);
  assert.deepEqual(t.shape, want.shape, `${what}: shape`);
  const values = t.dataSync();
  switch (want.dtype) {
    case 'float32':
      assert.equal(t.dtype, 'float32', `${what}: dtype`);
      assertClose(values, want.values, {what});
      break;
    case 'int64': case 'uint8': case 'int32':
      assert.equal(t.dtype, 'int32', `${what}: dtype`);
      assert.deepEqual(Array.from(values), want.values.map(Number), what);
      break;
    case 'bool':
      assert.equal(t.dtype, 'bool', `${what}: dtype`);
      assert.deepEqual(Array.from(values, Boolean), want.values, what);
      break;
    case 'string':
      assert.equal(t.dtype, 'string', `${what}: dtype`);
      assert.deepEqual(Array.from(values), want.values, what);
      break;
    default:
      throw new Error(`unexpected dtype ${want.dtype}`);
  }
}

test('getMetaGraphsFromSavedModel matches what Python reads', async () => {
  for (const name of MODELS) {
    const got = await tf.node.getMetaGraphsFromSavedModel(dir(name));
    const want = expected(name).metaGraphs;
    assert.equal(got.length, want.length, name);
    for (let m = 0; m < want.length; m++) {
      assert.deepEqual(got[m].tags, want[m].tags, `${name} tags`);
      assert.deepEqual(Object.keys(got[m].signatureDefs).sort(),
                       Object.keys(want[m].signatureDefs).sort(), `${name} signatures`);
      for (const [sig, def] of Object.entries(want[m].signatureDefs)) {
        for (const side of ['inputs', 'outputs']) {
          const g = got[m].signatureDefs[sig][side];
          assert.deepEqual(Object.keys(g).sort(), Object.keys(def[side]).sort());
          for (const [key, info] of Object.entries(def[side])) {
            const where = `${name}/${sig}/${side}/${key}`;
            assert.equal(g[key].name, info.name, where);
            assert.equal(g[key].tfDtype, DT_NAMES[info.tfDtype], where);
            assert.deepEqual(g[key].shape, info.shape === null ? undefined : info.shape, where);
          }
        }
      }
    }
  }
  const [mg] = await tf.node.getMetaGraphsFromSavedModel(dir('dtypes'));
  const inputs = mg.signatureDefs.serving_default.inputs;
  assert.equal(inputs.ids.dtype, 'int32');
  assert.equal(inputs.pixels.dtype, 'int32');
  assert.equal(inputs.words.dtype, 'string');
  assert.equal(inputs.flag.dtype, 'bool');
  assert.ok(!('__saved_model_init_op' in mg.signatureDefs));
});

test('every recorded signature run reproduces Python outputs (predict with named inputs)',
     async () => {
       for (const name of MODELS) {
         for (const run of expected(name).runs) {
           const model = await tf.node.loadSavedModel(dir(name), ['serve'], run.signature);
           // int64 values exactly ({int64: 'bigint'}), and as int32 tensors (the default),
           // which refuses outputs beyond int32.
           for (const exact of [true, false]) {
             await assertNoLeak(() => {
               const inputs = {};
               for (const [k, v] of Object.entries(run.inputs)) inputs[k] = toTensor(v, exact);
               const wide = Object.entries(run.outputs).find(([, v]) => !fitsInt32(v));
               if (!exact && wide) {
                 assert.throws(() => model.predict(inputs), new RegExp(
                     `output '${wide[0]}' is int64 and holds ${wide[1].values.find((x) => !fitsInt32({dtype: 'int64', values: [x]}))}, ` +
                     "which int32 cannot hold: pass \\{int64: 'bigint'\\}"));
                 tf.dispose(Object.values(inputs).filter((t) => t instanceof tf.Tensor));
                 return;
               }
               const out = model.predict(inputs, exact ? {int64: 'bigint'} : undefined);
               assert.deepEqual(Object.keys(out).sort(), Object.keys(run.outputs).sort());
               for (const [k, want] of Object.entries(run.outputs)) {
                 assertTensor(out[k], want, `${name}/${run.signature}/${k}${exact ? ' (exact)' : ''}`);
               }
               tf.dispose(Object.values(inputs).filter((t) => t instanceof tf.Tensor));
               tf.dispose(Object.values(out).filter((t) => t instanceof tf.Tensor));
             });
           }
           model.dispose();
         }
       }
       assert.equal(tf.node.getNumOfSavedModels(), 0);
     });

test('inputs are checked as TF checks them: shapes the signature declares but TF accepts run', async () => {
  // `loose` declares x: [] and pixel: [1]; TF's session runs other shapes (as on tfjs-node).
  const loose = await tf.node.loadSavedModel(dir('edges'), ['serve'], 'loose');
  await assertNoLeak(() => {
    const x = tf.tensor1d([1, 2.5, -3]);
    const pixel = tf.scalar(7, 'int32');
    const out = loose.predict({x, pixel});
    assert.deepEqual(out.doubled.shape, [3]);
    assertClose(out.doubled.dataSync(), [2, 5, -6]);
    assert.deepEqual(out.pixel_plus.shape, []);
    assert.deepEqual(Array.from(out.pixel_plus.dataSync()), [8]);
    // A uint8 input holding a value beyond [0, 255] is refused, not wrapped around.
    const big = tf.tensor1d([300], 'int32');
    assert.throws(() => loose.predict({x, pixel: big}), /input 'pixel' is DT_UINT8, but holds 300 at index 0/);
    tf.dispose([x, pixel, big, out]);
  });
  // A broadcastable shape the signature does not declare runs too (a: [?] fed [1,3]).
  const add = await tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'add');
  // Too few or too many tensors in an array: tfjs-node's message, whole, sync and async.
  const one = tf.tensor1d([1], 'int32');
  const lengths = {message: 'Length of input op names (2) does not match the length of input ' +
                   'tensors (3).', detail: 'the signature\'s inputs: a, b'};
  assert.throws(() => add.predict([one, one, one]), lengths);
  await assert.rejects(add.predictAsync([one, one, one]), lengths);
  one.dispose();
  const m = tf.tensor2d([[1, 2, 3]], [1, 3], 'int32');
  const b = tf.tensor1d([4, 5, 6], 'int32');
  const sum = add.predict({a: m, b}).sum;
  assert.deepEqual(sum.shape, [1, 3]);
  assert.deepEqual(Array.from(sum.dataSync()), [5, 7, 9]);
  // So does a [3,2] matrix fed to stats' m: [2,2]; its mean is of all six values.
  const stats = await tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'stats');
  const six = tf.tensor2d([[1, 2], [3, 4], [5, 6]]);
  const s = stats.predict({m: six});
  assertClose(s.mean.dataSync(), [3.5]);
  assertClose(s.max.dataSync(), [2, 4, 6]);
  tf.dispose([m, b, sum, six, s]);
  for (const model of [loose, add, stats]) model.dispose();
});

test('int64: exact through Int64Tensor, refused when int32 cannot hold it', async () => {
  const model = await tf.node.loadSavedModel(dir('edges'));
  // An int32 tensor feeds int64; outputs that fit come back as int32 tensors.
  const ids = tf.tensor1d([5, -7], 'int32');
  assert.throws(() => model.predict(ids), /output 'wide' is int64 and holds 10000000010/);
  const narrow = model.execute(ids, 'narrow');
  assert.equal(narrow.dtype, 'int32');
  assert.deepEqual(Array.from(narrow.dataSync()), [6, -6]);
  // Exact reads and feeds beyond int32.
  const exact = model.predict({ids: tf.node.int64Tensor([2n ** 40n, -1])}, {int64: 'bigint'});
  assert.ok(exact.wide instanceof tf.node.Int64Tensor);
  assert.deepEqual(Array.from(exact.wide.values), [2n ** 41n + 10000000000n, 9999999998n]);
  assert.deepEqual(Array.from(exact.narrow.values), [2n ** 40n + 1n, 0n]);
  const [wide] = model.execute(ids, ['wide'], {int64: 'bigint'});
  assert.deepEqual(Array.from(wide.values), [10000000010n, 9999999986n]);
  assert.throws(() => model.predict(ids, {int64: 'number'}), /int64 option must be 'int32' or 'bigint'/);
  assert.throws(() => tf.node.int64Tensor([1.5]), /neither a bigint nor a safe integer/);
  assert.throws(() => tf.node.int64Tensor([1n, 2n], [3]), /holds 3 values, got 2/);
  const loose = await tf.node.loadSavedModel(dir('edges'), ['serve'], 'loose');
  assert.throws(() => loose.predict({x: tf.node.int64Tensor([1n]), pixel: ids}), /input 'x' is DT_FLOAT, got an Int64Tensor/);
  tf.dispose([ids, narrow]);
  model.dispose();
  loose.dispose();
});

test('tf.node needs the tensorflow backend current, as in tfjs-node', async () => {
  const model = await tf.node.loadSavedModel(dir('multi_sig'));
  await tf.setBackend('cpu');
  try {
    const x = tf.zeros([1, 3]);
    assert.throws(() => model.predict(x), {message: 'Expect the current backend to be "tensorflow", but got "cpu"'});
    await assert.rejects(tf.node.loadSavedModel(dir('multi_sig')), /but got "cpu"/);
    x.dispose();
  } finally {
    await tf.setBackend('tensorflow');
  }
  model.dispose();
});

test('predict returns the kind it is given: tensor, array or map', async () => {
  const run = expected('keras_mlp').runs[0];
  const model = await tf.node.loadSavedModel(dir('keras_mlp'));
  assert.deepEqual(model.inputs.map((i) => [i.name, i.dtype, i.shape]),
                   [['serving_default_features', 'float32', [-1, 4]]]);
  assert.deepEqual(model.outputs.map((o) => [o.name, o.dtype, o.shape]),
                   [['StatefulPartitionedCall_1', 'float32', [-1, 3]]]);
  await assertNoLeak(() => {
    const x = toTensor(run.inputs.features);
    const single = model.predict(x);
    assertTensor(single, run.outputs.output_0, 'tensor input');
    const list = model.predict([x]);
    assert.ok(Array.isArray(list) && list.length === 1);
    assertTensor(list[0], run.outputs.output_0, 'array input');
    const map = model.predict({features: x});
    assertTensor(map.output_0, run.outputs.output_0, 'map input');
    // A batch of one row: the output is the matching row.
    const row = x.slice([1, 0], [1, 4]);
    const one = model.predict(row);
    assertClose(one.dataSync(), run.outputs.output_0.values.slice(3), {what: 'row 1'});
    tf.dispose([x, single, list, map, row, one]);
  });
  model.dispose();
});

test('execute() fetches outputs by key or by graph tensor name', async () => {
  const run = expected('multi_sig').runs.find((r) => r.signature === 'add');
  const model = await tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'add');
  await assertNoLeak(() => {
    const a = toTensor(run.inputs.a);
    const b = toTensor(run.inputs.b);
    const sum = model.execute({a, b}, 'sum');
    assertTensor(sum, run.outputs.sum, 'execute sum');
    const both = model.execute([a, b], ['product', 'sum']);
    assertTensor(both[0], run.outputs.product, 'execute product');
    assertTensor(both[1], run.outputs.sum, 'execute sum 2');
    const graphName = model.outputNodeNames.product;
    const byGraph = model.execute({a, b}, graphName);
    assertTensor(byGraph, run.outputs.product, 'execute by graph name');
    assert.throws(() => model.execute({a, b}, 'no_such_output'),
                  /no output tensor 'no_such_output'/);
    assert.throws(() => model.execute({a, b}, []), TypeError);
    tf.dispose([a, b, sum, both, byGraph]);
  });
  model.dispose();
});

test('signatures of one SavedModel share one session', async () => {
  assert.equal(tf.node.getNumOfSavedModels(), 0);
  const add = await tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'add');
  const stats = await tf.node.loadSavedModel(dir('multi_sig') + '/', ['serve'], 'stats');
  const dflt = await tf.node.loadSavedModel(dir('multi_sig'));
  assert.equal(tf.node.getNumOfSavedModels(), 1);
  const other = await tf.node.loadSavedModel(dir('dtypes'));
  assert.equal(tf.node.getNumOfSavedModels(), 2);
  add.dispose();
  stats.dispose();
  assert.equal(tf.node.getNumOfSavedModels(), 2);
  // The session stays usable for the model still holding it.
  const x = tf.tensor2d([[1, 2, 3]]);
  const y = dflt.predict(x);
  assert.deepEqual(y.shape, [1, 2]);
  tf.dispose([x, y]);
  dflt.dispose();
  assert.equal(tf.node.getNumOfSavedModels(), 1);
  other.dispose();
  assert.equal(tf.node.getNumOfSavedModels(), 0);
  assert.throws(() => other.dispose(), /already been deleted/);
  assert.throws(() => dflt.predict(tf.zeros([1, 3])), /already been deleted/);
});

test('bad SavedModel paths and contents give clear errors and leave the count alone',
     async () => {
       const before = tf.node.getNumOfSavedModels();
       await assert.rejects(tf.node.loadSavedModel('/no/such/dir'),
                            /no saved_model.pb file in the directory: \/no\/such\/dir/);
       await assert.rejects(tf.node.getMetaGraphsFromSavedModel('/no/such/dir'),
                            /no saved_model.pb/);

       const tmp = tmpDir();
       const garbage = path.join(tmp, 'garbage');
       fs.mkdirSync(garbage);
       fs.writeFileSync(path.join(garbage, 'saved_model.pb'), Buffer.from('not a protobuf \xff\xff'));
       await assert.rejects(tf.node.loadSavedModel(garbage), /not a valid SavedModel proto/);

       const truncated = path.join(tmp, 'truncated');
       fs.cpSync(dir('multi_sig'), truncated, {recursive: true});
       const pb = fs.readFileSync(path.join(truncated, 'saved_model.pb'));
       fs.writeFileSync(path.join(truncated, 'saved_model.pb'), pb.subarray(0, pb.length >> 1));
       await assert.rejects(tf.node.loadSavedModel(truncated), /not a valid SavedModel proto/);

       const empty = path.join(tmp, 'empty');
       fs.mkdirSync(empty);
       fs.writeFileSync(path.join(empty, 'saved_model.pb'), Buffer.alloc(0));
       await assert.rejects(tf.node.loadSavedModel(empty), /holds no meta graph/);

       // The graph parses but its variables are corrupt: TF itself refuses the restore.
       const badVars = path.join(tmp, 'bad_vars');
       fs.cpSync(dir('multi_sig'), badVars, {recursive: true});
       fs.writeFileSync(path.join(badVars, 'variables', 'variables.index'), Buffer.alloc(64, 7));
       await assert.rejects(tf.node.loadSavedModel(badVars), (e) => {
         assert.ok(e instanceof Error);
         assert.match(e.message, /loading SavedModel/);
         return true;
       });

       // tfjs-node's messages, whole; what the model has instead is in e.detail.
       await assert.rejects(tf.node.loadSavedModel(dir('multi_sig'), ['serve', 'gpu']),
                            {message: 'The SavedModel does not have tags: serve,gpu',
                             detail: 'its meta graphs\' tags: [serve]'});
       await assert.rejects(tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'nope'), (e) => {
         assert.equal(e.message, 'The SavedModel does not have signature: nope');
         assert.match(e.detail, /^its signatures: .*serving_default/);
         return true;
       });
       await assert.rejects(tf.node.loadSavedModel(dir('multi_sig'), 'serve'), TypeError);
       assert.equal(tf.node.getNumOfSavedModels(), before);
     });

test('bad inputs give clear errors, leak nothing and keep the session usable', async () => {
  const model = await tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'add');
  const a = tf.tensor1d([1, 2, 3], 'int32');
  const b = tf.tensor1d([4, 5, 6], 'int32');
  await assertNoLeak(() => {
    assert.throws(() => model.predict({a, c: b}), /input names are a,b, however the provided input names are a,c/);
    assert.throws(() => model.predict({a}), /input names are a,b/);
    assert.throws(() => model.predict([a]), {
      message: 'Length of input op names (2) does not match the length of input tensors (1).',
      detail: 'the signature\'s inputs: a, b',
    });
    assert.throws(() => model.predict(a), /input op names \(2\) .* input tensors \(1\)/);
    const f = tf.tensor1d([1, 2, 3], 'float32');
    assert.throws(() => model.predict({a: f, b}), /input 'a' must be a int32 tensor \(DT_INT32\), got float32/);
    assert.throws(() => model.predict({a: 3, b}), /must be a tf.Tensor/);
    assert.throws(() => model.predict(null), TypeError);
    f.dispose();
  });
  // Length mismatch between a and b reaches TF, which reports it as an error.
  const c = tf.tensor1d([1, 2], 'int32');
  await assertNoLeak(() => {
    assert.throws(() => model.predict({a, b: c}), (e) => e instanceof Error && /Incompatible shapes|must have|shape/i.test(e.message));
  });
  const out = model.predict({a, b});
  assert.deepEqual(Array.from(out.sum.dataSync()), [5, 7, 9]);
  tf.dispose([a, b, c, out]);

  model.dispose();
  assert.equal(tf.node.getNumOfSavedModels(), 0);
});

test('the raw binding validates graph names and dtypes itself, shapes through TF', async () => {
  const binding = require('../binding.js');
  const id = binding.loadSavedModel(dir('multi_sig'), ['serve']);
  const x = binding.createTensor([1, 3], 'float32', new Float32Array([1, 2, 3]));
  const xi = binding.createTensor([1, 3], 'int32', new Int32Array(3));
  const x4 = binding.createTensor([1, 4], 'float32', new Float32Array(4));
  const [mg] = await tf.node.getMetaGraphsFromSavedModel(dir('multi_sig'));
  const sig = mg.signatureDefs.serving_default;
  const inName = sig.inputs.x.name;
  const outName = sig.outputs.y.name;
  assert.throws(() => binding.runSavedModel(id, [x], ['nope:0'], [outName]), /no input tensor 'nope:0'/);
  assert.throws(() => binding.runSavedModel(id, [x], [inName], ['nope:3']), /no output tensor/);
  assert.throws(() => binding.runSavedModel(id, [xi], [inName], [outName]), /must be a float32 tensor, got int32/);
  // A shape the graph's kernels refuse is TF's error (MatMul's), not a crash.
  assert.throws(() => binding.runSavedModel(id, [x4], [inName], [outName]), /Matrix size-incompatible/);
  assert.throws(() => binding.runSavedModel(id, [x, x], [inName, inName], [outName]), /given twice/);
  assert.throws(() => binding.runSavedModel(id, [x], [], [outName]), /1 input ids but 0 input names/);
  assert.throws(() => binding.runSavedModel(id, [x], [inName], []), /at least one output/);
  assert.throws(() => binding.runSavedModel(999, [x], [inName], [outName]), /session 999 is unknown/);
  assert.throws(() => binding.loadSavedModel(dir('multi_sig'), []), /at least one tag/);
  const [y] = binding.runSavedModel(id, [x], [inName], [outName]);
  assert.deepEqual(y.shape, [1, 2]);
  assertClose(binding.tensorDataSync(y.id), [1 * 1 + 2 * 0.5 + 3 * -1.5 + 0.1, 1 * -2 + 2 * 3 + 3 * 0.25 - 0.2]);
  for (const t of [x, xi, x4, y.id]) binding.deleteTensor(t);
  binding.deleteSavedModel(id);
  assert.throws(() => binding.deleteSavedModel(id), /unknown or was deleted/);
  assert.equal(binding.getNumOfSavedModels(), 0);
});
