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

// ------------------------------------------------------------ tf.node.saveSavedModel

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-export-'));
test.after(() => fs.rmSync(scratch, {recursive: true, force: true}));
let dirs = 0;
const newDir = (label) => path.join(scratch, `${label}-${++dirs}`);
const GRAPH_MODEL = 'file://' + path.join(__dirname, '..', 'benches', 'fixtures', 'graph_convnet',
                                          'model.json');

/**
 * The architecture of Python's own SavedModel in the test (saved_model_check.py), its variable
 * names too: made once, as tfjs-layers names a second layer 'dense' 'dense_1' (its variables
 * 'dense/kernel_1'), disposed or not.
 */
const LINEAR = tf.sequential({layers: [tf.layers.dense({inputShape: [3], units: 2, name: 'dense'})]});

/** A model of each family the issue names, with weights that matter (batch norm's moving ones). */
function families() {
  const dense = tf.sequential({layers: [tf.layers.flatten({inputShape: [4, 4, 1]}),
    tf.layers.dense({units: 8, activation: 'relu'}), tf.layers.dense({units: 3, activation: 'softmax'})]});
  const conv = tf.sequential({layers: [tf.layers.conv2d({inputShape: [8, 8, 2], filters: 4,
    kernelSize: 3, activation: 'relu'}), tf.layers.maxPooling2d({poolSize: 2}), tf.layers.flatten(),
  tf.layers.dense({units: 3})]});
  const batchNorm = tf.sequential({layers: [tf.layers.dense({inputShape: [5], units: 6}),
    tf.layers.batchNormalization(), tf.layers.dense({units: 2})]});
  const bn = batchNorm.layers[1];
  bn.setWeights([tf.tensor1d([1.5, 0.5, 2, 1, 0.8, 1.2]), tf.tensor1d([0.1, -0.2, 0.3, 0, 0.5, -1]),
    tf.tensor1d([0.2, -0.1, 0.4, 1, -0.5, 0]), tf.tensor1d([2, 0.5, 1, 3, 0.25, 1])]);
  const lstm = tf.sequential({layers: [tf.layers.lstm({inputShape: [5, 3], units: 4}),
    tf.layers.dense({units: 2})]});
  const gru = tf.sequential({layers: [tf.layers.gru({inputShape: [5, 3], units: 4,
    returnSequences: true}), tf.layers.flatten(), tf.layers.dense({units: 2})]});
  const embedding = tf.sequential({layers: [tf.layers.embedding({inputShape: [6], inputDim: 10,
    outputDim: 4}), tf.layers.globalAveragePooling1d(), tf.layers.dense({units: 2})]});
  // One channel by one filter: eagerly, the package's own kernels (src/kernels), which exist in
  // this process only; an export takes TF's.
  const oneChannel = tf.sequential({layers: [tf.layers.conv2d({inputShape: [8, 8, 1], filters: 1,
    kernelSize: 3}), tf.layers.maxPooling2d({poolSize: 2}), tf.layers.flatten(),
  tf.layers.dense({units: 2})]});
  return {linear: LINEAR, dense, conv, oneChannel, batchNorm, lstm, gru, embedding};
}

/** Inputs of `rows` rows for `model`'s inputs: embedding ids for the embedding model. */
function inputsFor(name, model, rows, seed) {
  return model.inputs.map((t) => {
    const shape = [rows, ...t.shape.slice(1)];
    return name === 'embedding' ? tf.randomUniform(shape, 0, 10, 'int32', seed).cast('float32') :
        tf.randomUniform(shape, -1, 1, 'float32', seed);
  });
}

/** The signature input and output keys of the SavedModel in `dir`, as this package reads it. */
async function signatureKeys(dir) {
  const [meta] = await tf.node.getMetaGraphsFromSavedModel(dir);
  const sig = meta.signatureDefs.serving_default;
  return {inputs: Object.keys(sig.inputs), outputs: Object.keys(sig.outputs)};
}

function assertClose(actual, expected, what) {
  assert.strictEqual(actual.length, expected.length, what);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= 1e-5 + 1e-5 * Math.abs(expected[i]),
              `${what}[${i}]: ${actual[i]} vs ${expected[i]}`);
  }
}

test('saveSavedModel: this package loads each family back and gets the model\'s values', async () => {
  for (const [name, model] of Object.entries(families())) {
    const dir = newDir(name);
    const before = tf.memory().numTensors;
    await tf.node.saveSavedModel(model, dir);
    assert.strictEqual(tf.memory().numTensors, before, `${name}: no tensor kept`);
    assert.deepStrictEqual(fs.readdirSync(dir).sort(), ['saved_model.pb', 'variables']);
    assert.deepStrictEqual(fs.readdirSync(path.join(dir, 'variables')).sort(),
        ['variables.data-00000-of-00001', 'variables.index']);
    const loaded = await tf.node.loadSavedModel(dir);
    const {inputs: [key]} = await signatureKeys(dir);
    for (const rows of [1, 4]) {
      const [x] = inputsFor(name, model, rows, 7);
      const want = model.predict(x);
      const got = loaded.predict({[key]: x});
      const out = Object.values(got)[0];
      assert.deepStrictEqual(out.shape, want.shape, `${name} at ${rows} rows`);
      assertClose(out.dataSync(), want.dataSync(), `${name} at ${rows} rows`);
      tf.dispose([x, want, out]);
    }
    loaded.dispose();
  }
});

test('saveSavedModel: TF 2.21 loads each family, TFSMLayer too, and fine-tunes it', async (t) => {
  const python = tensorflowPython();
  if (!python) {
    t.skip('no TensorFlow Python venv (benches/keras/setup.sh makes one; .ci/run does)');
    return;
  }
  const models = families();
  const functional = (() => {
    const a = tf.input({shape: [3], name: 'a'});
    const b = tf.input({shape: [2], name: 'b'});
    const hidden = tf.layers.dense({units: 4, activation: 'relu', name: 'hidden'})
        .apply(tf.layers.concatenate().apply([a, b]));
    const probs = tf.layers.dense({units: 2, activation: 'softmax', name: 'probs'}).apply(hidden);
    const score = tf.layers.dense({units: 1, name: 'score'})
        .apply(tf.layers.dropout({rate: 0.5}).apply(hidden));
    return tf.model({inputs: [a, b], outputs: [probs, score]});
  })();
  const graphModel = await tf.loadGraphModel(GRAPH_MODEL);
  const jobs = [];
  const expected = [];
  const addJob = async (name, model, xs, want, options) => {
    const dir = newDir(name);
    await tf.node.saveSavedModel(model, dir, options);
    const keys = await signatureKeys(dir);
    jobs.push({dir, fineTune: name === 'lstm', inputs: Object.fromEntries(keys.inputs.map(
        (k, i) => [k, {shape: xs[i].shape, dtype: 'float32', values: Array.from(xs[i].dataSync())}]))});
    expected.push({name, keys, want: want.map((w) => ({shape: w.shape, values: w.dataSync()}))});
    tf.dispose(xs.concat(want));
  };
  for (const [name, model] of Object.entries(models)) {
    const xs = inputsFor(name, model, 7, 3);
    await addJob(name, model, xs, [model.predict(xs[0])]);
  }
  const fxs = [tf.randomUniform([6, 3], -1, 1, 'float32', 1), tf.randomUniform([6, 2], -1, 1, 'float32', 2)];
  await addJob('functional', functional, fxs, functional.predict(fxs),
               {signatures: {serving_default: {}, probs_only: {outputs: ['probs']}}});
  const gx = tf.randomUniform([3, 28, 28, 1], 0, 1, 'float32', 5);
  await addJob('graph', graphModel, [gx], [graphModel.predict(gx)]);
  // A tf.node.function of two outputs, over a trainable and a frozen variable.
  const w = tf.variable(tf.randomNormal([3, 4], 0, 1, 'float32', 1), true, 'fn/w');
  const bias = tf.variable(tf.tensor1d([0.5, -0.5, 0.25, 0]), false, 'fn/b');
  const fn = tf.node.function((x) => ({score: tf.relu(tf.add(tf.matMul(x, w), bias)),
    total: tf.sum(x, 1)}));
  const fx = tf.randomUniform([7, 3], -1, 1, 'float32', 6);
  const fout = fn(fx);
  await addJob('function', fn, [fx], [fout.score, fout.total],
               {inputs: [{name: 'x', shape: [null, 3]}]});

  const jobFile = path.join(scratch, 'jobs.json');
  fs.writeFileSync(jobFile, JSON.stringify({models: jobs, layoutDir: path.join(scratch, 'python')}));
  const run = spawnSync(python, [path.join(__dirname, 'support', 'saved_model_check.py'), jobFile],
                        {encoding: 'utf8', maxBuffer: 64 << 20,
                          env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}});
  assert.strictEqual(run.status, 0, run.stderr);
  const report = JSON.parse(run.stdout);

  expected.forEach(({name, keys, want}, m) => {
    const got = report.models[m];
    // Every input's batch dimension is unknown: TF takes any number of rows.
    for (const dims of Object.values(got.inputs)) assert.strictEqual(dims[0], -1, name);
    keys.outputs.forEach((key, j) => {
      assert.deepStrictEqual(got.outputs[key].shape, want[j].shape, `${name} ${key}`);
      assertClose(got.outputs[key].values, want[j].values, `${name} ${key} in TF`);
      if (got.tfsmLayer) assertClose(got.tfsmLayer[key].values, want[j].values, `${name} TFSMLayer`);
    });
    // The layout and the MetaGraph as Python's own simple_save writes them.
    const facts = report.facts[m];
    const py = report.pythonFacts;
    assert.deepStrictEqual(facts.files, py.files, name);
    assert.deepStrictEqual(facts.tags, py.tags, name);
    assert.deepStrictEqual(facts.saver, py.saver, name);
    // TF's public ops only: none of this package's own, no internal fused ones, no op chosen
    // for small sizes.
    const odd = facts.ops.filter((op) => op.startsWith('_') || op.includes('>') ||
                                         op === 'SparseMatMul');
    assert.deepStrictEqual(odd, [], name);
    // A GraphModel's weights are frozen in tfjs: variables, none of them trainable.
    assert.deepStrictEqual(Object.keys(facts.collections),
                           name === 'graph' ? ['variables'] : Object.keys(py.collections), name);
    if (name === 'linear') assert.deepStrictEqual(facts.collections, py.collections);
  });
  const byName = Object.fromEntries(expected.map((e, m) => [e.name, report.models[m]]));
  // A LayersModel's trainable weights train in TF; batch norm's moving statistics do not.
  assert.strictEqual(byName.batchNorm.variables, 8);
  assert.strictEqual(byName.batchNorm.trainable, 6);
  assert.strictEqual(byName.graph.trainable, 0);
  assert.deepStrictEqual([byName.function.variables, byName.function.trainable], [2, 1]);
  assert.deepStrictEqual(byName.functional.signatures, ['probs_only', 'serving_default']);
  const losses = byName.lstm.fineTune;
  assert.ok(Array.isArray(losses) && losses[2] < losses[0], `fine-tuning losses ${losses}`);
  graphModel.dispose();

  // saved_model_cli, TF's command line tool, lists the signature with its unknown batch.
  const cli = spawnSync(path.join(path.dirname(python), 'saved_model_cli'),
                        ['show', '--dir', jobs[0].dir, '--tag_set', 'serve',
                          '--signature_def', 'serving_default'],
                        {encoding: 'utf8', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}});
  assert.strictEqual(cli.status, 0, cli.stderr);
  assert.match(cli.stdout, /shape: \(-1, 3\)/);
  assert.match(cli.stdout, /Method name is: tensorflow\/serving\/predict/);
});

test('savedmodel:// saves LayersModels and GraphModels through tfjs\'s IO router', async () => {
  const model = tf.sequential({layers: [tf.layers.dense({inputShape: [3], units: 2,
    activation: 'tanh'})]});
  const graphModel = await tf.loadGraphModel(GRAPH_MODEL);
  for (const [m, x] of [[model, tf.randomUniform([4, 3], -1, 1, 'float32', 9)],
    [graphModel, tf.randomUniform([2, 28, 28, 1], 0, 1, 'float32', 9)]]) {
    const dir = newDir('router');
    const result = await m.save('savedmodel://' + dir);
    assert.strictEqual(result.modelArtifactsInfo.modelTopologyType, 'SavedModel');
    const loaded = await tf.node.loadSavedModel(dir);
    const {inputs: [key]} = await signatureKeys(dir);
    const want = m.predict(x);
    const got = Object.values(loaded.predict({[key]: x}))[0];
    assertClose(got.dataSync(), want.dataSync(), 'router');
    tf.dispose([x, want, got]);
    loaded.dispose();
  }
  graphModel.dispose();
});

test('saveSavedModel into a folder whose earlier SavedModel is still loaded checks the new one', async () => {
  const model = tf.sequential({layers: [tf.layers.dense({inputShape: [2], units: 1,
    kernelInitializer: 'ones'})]});
  const dir = newDir('again');
  const x = tf.tensor2d([[1, 2]]);
  await tf.node.saveSavedModel(model, dir);
  const {inputs: [key]} = await signatureKeys(dir);
  const before = await tf.node.loadSavedModel(dir);
  model.setWeights([tf.tensor2d([[2], [-1]]), tf.tensor1d([0.5])]);
  // The check loads the files in a session of its own: the open one still holds the old weights.
  await tf.node.saveSavedModel(model, dir);
  const old = Object.values(before.predict({[key]: x}))[0];
  assert.deepStrictEqual(Array.from(old.dataSync()), [3]);
  before.dispose();
  const after = await tf.node.loadSavedModel(dir);
  const now = Object.values(after.predict({[key]: x}))[0];
  assert.deepStrictEqual(Array.from(now.dataSync()), [0.5]);
  after.dispose();
  tf.dispose([x, old, now]);
});

class ReadsItsInput extends tf.layers.Layer {
  constructor() {
    super({name: 'reads_its_input'});
  }
  call(x) {
    const t = Array.isArray(x) ? x[0] : x;
    return tf.add(t, t.dataSync()[0]);
  }
  static get className() {
    return 'ReadsItsInput';
  }
}

class LoopsOverRows extends tf.layers.Layer {
  constructor() {
    super({name: 'loops_over_rows'});
  }
  call(x) {
    const t = Array.isArray(x) ? x[0] : x;
    let y = t;
    for (let i = 0; i < t.shape[0]; i++) y = tf.add(y, 1);
    return y;
  }
  static get className() {
    return 'LoopsOverRows';
  }
}

test('saveSavedModel: what cannot be exported is an Error naming the layer, nothing written', async () => {
  const dense = () => tf.layers.dense({inputShape: [3], units: 2});
  const cases = [
    [tf.sequential({layers: [dense(), new ReadsItsInput()]}),
      /layer 'reads_its_input' cannot be exported: its call reads values computed from its inputs/],
    [tf.sequential({layers: [dense(), new LoopsOverRows()]}),
      /layer 'loops_over_rows' cannot be exported with dims of any size: it runs other ops/],
    // tfjs unrolls an RNN step by step: another length runs other ops.
    [tf.sequential({layers: [tf.layers.lstm({inputShape: [null, 3], units: 2, name: 'any_length'})]}),
      /layer 'any_length' cannot be exported with dims of any size/],
  ];
  const before = tf.memory().numTensors;
  for (const [model, message] of cases) {
    const dir = newDir('refused');
    await assert.rejects(tf.node.saveSavedModel(model, dir), message);
    assert.ok(!fs.existsSync(path.join(dir, 'saved_model.pb')));
  }
  assert.strictEqual(tf.memory().numTensors, before);
  const model = tf.sequential({layers: [dense()]});
  const dir = newDir('arguments');
  await assert.rejects(tf.node.saveSavedModel({}, dir), /must be a tf.LayersModel, a tf.GraphModel/);
  await assert.rejects(tf.node.saveSavedModel((x) => x, dir), /a function needs options.inputs/);
  await assert.rejects(tf.node.saveSavedModel((x) => tf.add(x, x.dataSync()[0]), dir,
                                              {inputs: [{shape: [null, 2]}]}),
                       /the function cannot be exported: its call reads values/);
  await assert.rejects(tf.node.saveSavedModel(model, ''), /directory must be a non-empty string/);
  await assert.rejects(tf.node.saveSavedModel(model, dir, {tags: []}), /tags must be a non-empty/);
  await assert.rejects(tf.node.saveSavedModel(model, dir, {signatures: {s: {outputs: ['nope']}}}),
                       /signature 's': the model has no output 'nope'/);
});
