'use strict';
// tf.node SavedModel support against SavedModels exported by Python TensorFlow 2.21
// (scripts/make_fixtures.py); expected values are the ones Python computed.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const {tf, fixture, readJson, tmpDir, assertClose, assertNoLeak} = require('./fixtures/helpers');

const MODELS = ['keras_mlp', 'multi_sig', 'dtypes'];
const DT_NAMES = {1: 'DT_FLOAT', 3: 'DT_INT32', 4: 'DT_UINT8', 7: 'DT_STRING', 9: 'DT_INT64',
                  10: 'DT_BOOL'};
const dir = (name) => fixture('saved_model', name);
const expected = (name) => readJson('saved_model', name, 'expected.json');

/** A tfjs tensor from a fixture value {dtype, shape, values}; int64 and uint8 as int32. */
function toTensor({dtype, shape, values}) {
  switch (dtype) {
    case 'int64': return tf.tensor(values.map(Number), shape, 'int32');
    case 'uint8': case 'int32': return tf.tensor(values, shape, 'int32');
    case 'float32': return tf.tensor(values, shape, 'float32');
    case 'bool': return tf.tensor(values, shape, 'bool');
    case 'string': return tf.tensor(values, shape, 'string');
    default: throw new Error(`no fixture conversion for ${dtype}`);
  }
}

function assertTensor(t, want, what) {
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
           await assertNoLeak(() => {
             const inputs = {};
             for (const [k, v] of Object.entries(run.inputs)) inputs[k] = toTensor(v);
             const out = model.predict(inputs);
             assert.deepEqual(Object.keys(out).sort(), Object.keys(run.outputs).sort());
             for (const [k, want] of Object.entries(run.outputs)) {
               assertTensor(out[k], want, `${name}/${run.signature}/${k}`);
             }
             tf.dispose([inputs, out]);
           });
           model.dispose();
         }
       }
       assert.equal(tf.node.getNumOfSavedModels(), 0);
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

       await assert.rejects(tf.node.loadSavedModel(dir('multi_sig'), ['gpu']),
                            /does not have tags: gpu/);
       await assert.rejects(tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'nope'),
                            /does not have signature: nope/);
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
    assert.throws(() => model.predict([a]), /has 2 input\(s\) \(a,b\), got 1/);
    assert.throws(() => model.predict(a), /has 2 input\(s\)/);
    const f = tf.tensor1d([1, 2, 3], 'float32');
    assert.throws(() => model.predict({a: f, b}), /input 'a' must be a int32 tensor \(DT_INT32\), got float32/);
    const m = tf.tensor2d([[1, 2, 3]], [1, 3], 'int32');
    assert.throws(() => model.predict({a: m, b}), /input 'a' must have shape \[\?\], got \[1,3\]/);
    assert.throws(() => model.predict({a: 3, b}), /must be a tf.Tensor/);
    assert.throws(() => model.predict(null), TypeError);
    tf.dispose([f, m]);
  });
  // Length mismatch between a and b reaches TF, which reports it as an error.
  const c = tf.tensor1d([1, 2], 'int32');
  await assertNoLeak(() => {
    assert.throws(() => model.predict({a, b: c}), (e) => e instanceof Error && /Incompatible shapes|must have|shape/i.test(e.message));
  });
  const out = model.predict({a, b});
  assert.deepEqual(Array.from(out.sum.dataSync()), [5, 7, 9]);
  tf.dispose([a, b, c, out]);

  const stats = await tf.node.loadSavedModel(dir('multi_sig'), ['serve'], 'stats');
  const wrong = tf.zeros([3, 2]);
  assert.throws(() => stats.predict(wrong), /input 'm' must have shape \[2,2\], got \[3,2\]/);
  wrong.dispose();
  stats.dispose();
  model.dispose();
  assert.equal(tf.node.getNumOfSavedModels(), 0);
});

test('the raw binding validates graph names, dtypes and shapes itself', async () => {
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
  assert.throws(() => binding.runSavedModel(id, [x4], [inName], [outName]), /must have shape \[\?,3\]/);
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
