'use strict';
// The SavedModel export's writers (issue 38): the `saved_model.pb` it encodes is read back
// by this package's own SavedModel reader and, where the Keras venv is present, by TF's
// generated Python protos (an independent decoder of the same .proto files); the checkpoint,
// by TF's RestoreV2 here and TF's checkpoint reader in Python.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const tf = require('..');
const {writeCheckpoint} = require('../js/node/checkpoint');
const {encodeSavedModel, PREDICT_METHOD_NAME} = require('../js/node/saved_model_writer');
const {parseSavedModel} = require('../js/node/saved_model');
const {tensorflowPython} = require('./support/tensorflow_python');

const SPEC = {
  tags: ['serve'],
  tensorflowVersion: '2.21.0',
  graphDef: new Uint8Array(0),
  saver: {filenameTensorName: 'save/Const:0', saveTensorName: 'save/control_dependency:0',
    restoreOpName: 'save/restore_all'},
  variables: [
    {variableName: 'dense/kernel:0', initializerName: 'dense/kernel/Assign',
      snapshotName: 'dense/kernel/Read/ReadVariableOp:0', trainable: true},
    {variableName: 'bn/moving_mean:0', initializerName: 'bn/moving_mean/Assign',
      snapshotName: 'bn/moving_mean/Read/ReadVariableOp:0', trainable: false},
  ],
  signatures: {
    serving_default: {
      inputs: {x: {name: 'x:0', tfDtype: 'DT_FLOAT', shape: [-1, 4]}},
      outputs: {y: {name: 'dense/BiasAdd:0', tfDtype: 'DT_FLOAT', shape: [-1, 2]},
        ids: {name: 'ArgMax:0', tfDtype: 'DT_INT64', shape: [-1]}},
    },
  },
};

test('the package reader reads tags and signatures back', () => {
  const [mg, ...rest] = parseSavedModel(encodeSavedModel(SPEC));
  assert.strictEqual(rest.length, 0);
  assert.deepStrictEqual(mg.tags, ['serve']);
  const sig = mg.signatureDefs.serving_default;
  assert.strictEqual(sig.methodName, PREDICT_METHOD_NAME);
  assert.deepStrictEqual(sig.inputs.x, {name: 'x:0', dtypeCode: 1, shape: [-1, 4]});
  assert.deepStrictEqual(sig.outputs.y, {name: 'dense/BiasAdd:0', dtypeCode: 1, shape: [-1, 2]});
  assert.deepStrictEqual(sig.outputs.ids, {name: 'ArgMax:0', dtypeCode: 9, shape: [-1]});
});

test('an unknown dtype is an error, not a silently wrong proto', () => {
  const spec = {...SPEC, signatures: {s: {inputs: {x: {name: 'x:0', tfDtype: 'DT_NOPE',
    shape: [1]}}, outputs: {}}}};
  assert.throws(() => encodeSavedModel(spec), /unknown TF dtype 'DT_NOPE'/);
});

const PYTHON_DECODE = `
import sys
from tensorflow.core.protobuf import saved_model_pb2, meta_graph_pb2, saver_pb2
from tensorflow.core.framework import variable_pb2
sm = saved_model_pb2.SavedModel.FromString(sys.stdin.buffer.read())
mg = sm.meta_graphs[0]
print('schema', sm.saved_model_schema_version, 'metagraphs', len(sm.meta_graphs))
print('tags', list(mg.meta_info_def.tags), mg.meta_info_def.tensorflow_version)
s = mg.saver_def
print('saver', s.filename_tensor_name, s.save_tensor_name, s.restore_op_name,
      saver_pb2.SaverDef.CheckpointFormatVersion.Name(s.version))
for key in sorted(mg.collection_def):
    for b in mg.collection_def[key].bytes_list.value:
        v = variable_pb2.VariableDef.FromString(b)
        print('collection', key, v.variable_name, v.initializer_name, v.snapshot_name,
              v.is_resource, v.trainable)
sig = mg.signature_def['serving_default']
print('method', sig.method_name)
for side, m in (('in', sig.inputs), ('out', sig.outputs)):
    for k in sorted(m):
        print(side, k, m[k].name, m[k].dtype, [d.size for d in m[k].tensor_shape.dim])
`;

test("TF's own protos decode it field by field", (t) => {
  const python = tensorflowPython();
  if (!python) {
    t.skip('no TensorFlow Python venv (benches/keras/setup.sh makes one)');
    return;
  }
  const run = spawnSync(python, ['-c', PYTHON_DECODE], {input: encodeSavedModel(SPEC),
    encoding: 'utf8', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}});
  assert.strictEqual(run.status, 0, run.stderr);
  assert.strictEqual(run.stdout, [
    'schema 1 metagraphs 1',
    'tags [\'serve\'] 2.21.0',
    'saver save/Const:0 save/control_dependency:0 save/restore_all V2',
    'collection trainable_variables dense/kernel:0 dense/kernel/Assign ' +
        'dense/kernel/Read/ReadVariableOp:0 True True',
    'collection variables dense/kernel:0 dense/kernel/Assign ' +
        'dense/kernel/Read/ReadVariableOp:0 True True',
    'collection variables bn/moving_mean:0 bn/moving_mean/Assign ' +
        'bn/moving_mean/Read/ReadVariableOp:0 True False',
    'method tensorflow/serving/predict',
    'in x x:0 1 [-1, 4]',
    'out ids ArgMax:0 9 [-1]',
    'out y dense/BiasAdd:0 1 [-1, 2]',
    '',
  ].join('\n'));
});

test('writeCheckpoint: TF\'s SaveV2 bundle, which TF reads back', (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-ckpt-'));
  t.after(() => fs.rmSync(dir, {recursive: true, force: true}));
  const prefix = path.join(dir, 'variables');
  const kernel = tf.tensor2d([[1.5, -2], [3, 4.25]]);
  const step = tf.tensor1d([5, 6, 7], 'int32');
  writeCheckpoint(prefix, {'dense/kernel': kernel, 'step': step});
  assert.deepStrictEqual(fs.readdirSync(dir).sort(),
      ['variables.data-00000-of-00001', 'variables.index']);
  // 4 float32 and 3 int32 values, nothing else, in the data file.
  assert.strictEqual(fs.statSync(prefix + '.data-00000-of-00001').size, 28);
  // The backend's own RestoreV2 reads it as TF wrote it.
  const b = tf.backend();
  const ids = [b.createConstant('string', [], prefix),
    b.createConstant('string', [2], ['dense/kernel', 'step']),
    b.createConstant('string', [2], ['', ''])];
  const outs = b.run('RestoreV2', [{name: 'dtypes', type: 'type', value: ['float32', 'int32']}],
      ids, 2);
  ids.forEach((id) => b.free(id));
  const [k, s] = outs.map((o) => tf.engine().makeTensorFromTensorInfo(b.wrap(o)));
  assert.deepStrictEqual(k.arraySync(), [[1.5, -2], [3, 4.25]]);
  assert.deepStrictEqual(s.arraySync(), [5, 6, 7]);
  tf.dispose([kernel, step, k, s]);

  const python = tensorflowPython();
  if (!python) return;
  const run = spawnSync(python, ['-c', `
import sys, tensorflow as tf
r = tf.train.load_checkpoint(sys.argv[1])
print(sorted((k, v.name) for k, v in r.get_variable_to_dtype_map().items()))
print(r.get_tensor('dense/kernel').tolist(), r.get_tensor('step').tolist())
`, prefix], {encoding: 'utf8', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}});
  assert.strictEqual(run.status, 0, run.stderr);
  assert.strictEqual(run.stdout, '[(\'dense/kernel\', \'float32\'), (\'step\', \'int32\')]\n' +
      '[[1.5, -2.0], [3.0, 4.25]] [5, 6, 7]\n');
});

test('writeCheckpoint refuses what SaveV2 cannot take, by name', () => {
  const dir = path.join(os.tmpdir(), 'unused');
  assert.throws(() => writeCheckpoint('', {a: tf.scalar(1)}), /prefix must be a non-empty/);
  assert.throws(() => writeCheckpoint(dir, {}), /no tensors to save/);
  assert.throws(() => writeCheckpoint(dir, {w: [1, 2]}), /'w' is not a live tf.Tensor/);
  const gone = tf.scalar(1);
  gone.dispose();
  assert.throws(() => writeCheckpoint(dir, {gone}), /'gone' is not a live tf.Tensor/);
});
