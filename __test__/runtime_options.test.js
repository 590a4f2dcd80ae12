'use strict';
// Runtime options (tf.node.configure, tfjs-node-rs/configure, TFJS_NODE_RS_* variables),
// tf.node.runtimeInfo and tf.node.loadOpLibrary. Thread settings are checked by the threads
// TF starts, counted by name in fresh processes.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const tf = require('..');
const {configProto} = require('../configure');
const {Writer} = require('../js/node/proto');
const {scratchDirs} = require('./support/scratch');

const ROOT = path.join(__dirname, '..');
const DEPS = path.join(ROOT, 'deps');
const tempDir = scratchDirs('tfjs-node-rs-runtime-');

/** Runs `source` in a fresh node process with `env` added; returns its last line as JSON. */
function child(source, env = {}) {
  const run = spawnSync(process.execPath, ['-e', source],
                        {cwd: ROOT, env: {...process.env, ...env}, encoding: 'utf8',
                         timeout: 120000});
  assert.strictEqual(run.status, 0, run.stderr);
  const lines = run.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

/**
 * The process's threads by name after a convolution and a product, with the runtime info:
 * TF's inter-op pools' threads are named tf_Compute; its intra-op pool's threads keep the
 * name of the thread that made the first context (node's main thread: `node`, or
 * `MainThread` on Node.js 24), reported as `main`.
 */
const COUNT_THREADS = `
  const tf = require('.');
  const x = tf.randomNormal([8, 32, 32, 8], 0, 1, 'float32', 1);
  const f = tf.randomNormal([3, 3, 8, 8], 0, 1, 'float32', 2);
  for (let i = 0; i < 3; i++) tf.conv2d(x, f, 1, 'same').dataSync();
  const a = tf.randomNormal([600, 600], 0, 1, 'float32', 3);
  tf.matMul(a, a).dataSync();
  const fs = require('fs');
  const names = {};
  for (const t of fs.readdirSync('/proc/self/task')) {
    const name = fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim();
    names[name] = (names[name] || 0) + 1;
  }
  const main = fs.readFileSync('/proc/self/task/' + process.pid + '/comm', 'utf8').trim();
  const info = tf.node.runtimeInfo();
  console.log(JSON.stringify({names, main: names[main], intra: info.intraOpThreads,
                              inter: info.interOpThreads}));`;

test('thread settings from the environment size TF\'s pools', {skip: !fs.existsSync('/proc/self/task')}, () => {
  const few = child(COUNT_THREADS, {TFJS_NODE_RS_INTRA_OP_THREADS: '1',
                                    TFJS_NODE_RS_INTER_OP_THREADS: '1'});
  const more = child(COUNT_THREADS, {TFJS_NODE_RS_INTRA_OP_THREADS: '4',
                                     TFJS_NODE_RS_INTER_OP_THREADS: '3'});
  assert.deepStrictEqual([few.intra, few.inter, more.intra, more.inter], [1, 1, 4, 3]);
  // Three intra-op threads more, two inter-op threads more; nothing else changes.
  assert.strictEqual(more.main - few.main, 3, JSON.stringify([few, more]));
  assert.strictEqual(more.names.tf_Compute - few.names.tf_Compute, 2, JSON.stringify([few, more]));
});

test('a SavedModel session takes an inter-op pool of its own', {skip: !fs.existsSync('/proc/self/task')}, async () => {
  const counts = child(`
    const tf = require('.');
    const fs = require('fs');
    const dir = '__test__/fixtures/saved_model/keras_mlp';
    const computeThreads = () => fs.readdirSync('/proc/self/task').filter((t) =>
      fs.readFileSync('/proc/self/task/' + t + '/comm', 'utf8').trim() === 'tf_Compute').length;
    const x = tf.tensor2d([[0.5, -1, 2, 0], [1, 1, 1, 1]]);
    (async () => {
      const shared = await tf.node.loadSavedModel(dir);
      const expected = Array.from(shared.predict(x).dataSync());
      const before = computeThreads();
      const own = await tf.node.loadSavedModel(dir, ['serve'], 'serving_default',
                                               {interOpThreads: 3});
      const values = Array.from(own.predict(x).dataSync());
      console.log(JSON.stringify({before, after: computeThreads(), expected, values,
                                  sessions: tf.node.getNumOfSavedModels()}));
    })();`);
  assert.deepStrictEqual(counts.values, counts.expected);
  assert.strictEqual(counts.after - counts.before, 3, JSON.stringify(counts));
  assert.strictEqual(counts.sessions, 2);
  await assert.rejects(tf.node.loadSavedModel('x', ['serve'], 'serving_default',
                                              {interOpThreads: 0}), RangeError);
  await assert.rejects(tf.node.loadSavedModel('x', ['serve'], 'serving_default',
                                              {threads: 2}), /unknown option 'threads'/);
});

test('options set before require apply, over the environment\'s', () => {
  const info = child(`
    require('./configure').configure({intraOpThreads: 2, interOpThreads: 1});
    const tf = require('.');
    console.log(JSON.stringify(tf.node.runtimeInfo()));`, {TFJS_NODE_RS_INTRA_OP_THREADS: '3'});
  assert.strictEqual(info.intraOpThreads, 2);
  assert.strictEqual(info.interOpThreads, 1);
});

test('after the runtime started, configure accepts only the options in force', () => {
  const inForce = child(`
    const tf = require('.');
    tf.node.configure({});  // TF's defaults, as started: accepted
    let error = null;
    try {
      tf.node.configure({intraOpThreads: 1});
    } catch (e) {
      error = {code: e.code, message: e.message};
    }
    console.log(JSON.stringify(error));`);
  assert.strictEqual(inForce.code, 'TFJS_NODE_RS_STARTED');
  assert.match(inForce.message, /already started .*intraOpThreads one per core/);
  assert.match(inForce.message, /tfjs-node-rs\/configure/);
});

test('malformed options are refused with the option named', () => {
  assert.throws(() => tf.node.configure({intraOpThread: 2}), /unknown option 'intraOpThread'/);
  assert.throws(() => tf.node.configure({gpu: {growth: true}}), /unknown option 'gpu.growth'/);
  assert.throws(() => tf.node.configure({interOpThreads: -1}), RangeError);
  assert.throws(() => tf.node.configure({intraOpThreads: 1.5}), RangeError);
  assert.throws(() => tf.node.configure({gpu: {allowGrowth: 'yes'}}), TypeError);
  const run = spawnSync(process.execPath, ['-e', 'require(".")'],
                        {cwd: ROOT, env: {...process.env, TFJS_NODE_RS_INTER_OP_THREADS: 'many'},
                         encoding: 'utf8'});
  assert.notStrictEqual(run.status, 0);
  assert.match(run.stderr, /TFJS_NODE_RS_INTER_OP_THREADS must be a whole number >= 0, got 'many'/);
});

test('GPU options are accepted without a GPU and reported as unused', () => {
  const info = child(`
    require('./configure').configure({gpu: {allowGrowth: true, memoryLimitMB: 2048}});
    const tf = require('.');
    tf.sum(tf.ones([4])).dataSync();
    console.log(JSON.stringify(tf.node.runtimeInfo()));`, {CUDA_VISIBLE_DEVICES: '-1'});
  assert.deepStrictEqual(info.gpu, {allowGrowth: true, memoryLimitMB: 2048, visibleDevices: [],
                                    used: false});
  assert.ok(info.devices.every((d) => d.deviceType === 'CPU'));
});

test('the options become the ConfigProto TF reads', () => {
  assert.strictEqual(configProto({intraOpThreads: 0, interOpThreads: 0, allowGrowth: false,
                                  memoryLimitMB: 0, visibleDevices: []}).length, 0);
  // Hand-encoded from config.proto: intra_op_parallelism_threads (2) = 2,
  // inter_op_parallelism_threads (5) = 3, gpu_options (6) { allow_growth (4) = true,
  // visible_device_list (5) = "0,1", experimental (9) { virtual_devices (1) {
  // memory_limit_mb (1) = 512.0f } x2 } }.
  const float512 = [0x00, 0x00, 0x00, 0x44];
  const virtualDevice = [0x0a, 0x05, 0x0d, ...float512];
  const experimental = [0x4a, 0x0e, ...virtualDevice, ...virtualDevice];
  const gpu = [0x20, 0x01, 0x2a, 0x03, 0x30, 0x2c, 0x31, ...experimental];
  const expected = [0x10, 0x02, 0x28, 0x03, 0x32, gpu.length, ...gpu];
  assert.deepStrictEqual(Array.from(configProto({intraOpThreads: 2, interOpThreads: 3,
                                                 allowGrowth: true, memoryLimitMB: 512,
                                                 visibleDevices: [0, 1]})), expected);
});

test('runtimeInfo says what is in force', () => {
  const info = tf.node.runtimeInfo();
  assert.strictEqual(info.tfVersion, '2.21.0');
  assert.ok(fs.existsSync(info.libraryPath), info.libraryPath);
  assert.match(path.basename(info.libraryPath), /^libtensorflow/);
  assert.ok(info.intraOpThreads >= 1 && info.interOpThreads >= 1);
  assert.strictEqual(typeof info.oneDNN, 'boolean');
  assert.ok(info.devices.some((d) => d.deviceType === 'CPU'));
});

/** Builds an op library from `source` (in fixtures/op_library) with the C++ compiler. */
function buildOpLibrary(source) {
  const out = path.join(tempDir('op-library'), source.replace(/\.cc$/, '.so'));
  const cc = spawnSync('c++', ['-shared', '-fPIC', '-O1', `-I${path.join(DEPS, 'include')}`,
    path.join(__dirname, 'fixtures', 'op_library', source), '-o', out,
    `-L${path.join(DEPS, 'lib')}`, '-l:libtensorflow_cc.so.2', '-l:libtensorflow_framework.so.2',
    `-Wl,-rpath,${path.join(DEPS, 'lib')}`], {encoding: 'utf8'});
  assert.strictEqual(cc.status, 0, cc.stderr);
  return out;
}

const haveCompiler = spawnSync('c++', ['--version']).status === 0;

/**
 * A SavedModel whose graph is `y = TimesTwoForTest(x)` (float), signature `serving_default`,
 * tag `serve`, written field by field (saved_model.proto, meta_graph.proto, graph.proto): what
 * a model built in Python with the op library loaded would hold.
 */
function writeTimesTwoSavedModel(dir) {
  const message = (fill) => {
    const w = new Writer();
    fill(w);
    return w;
  };
  const node = (name, op, inputs, attrs) => message((w) => {
    w.string(1, name);                                        // NodeDef.name
    w.string(2, op);                                          // op
    for (const input of inputs) w.string(3, input);           // input
    for (const [key, value] of attrs) {                       // attr: map<string, AttrValue>
      w.message(5, message((e) => {
        e.string(1, key);
        e.message(2, value);
      }));
    }
  });
  const DT_FLOAT = 1;
  const floatType = message((v) => v.varint(6, DT_FLOAT));    // AttrValue.type
  const graph = message((g) => {
    g.message(1, node('x', 'Placeholder', [], [['dtype', floatType]]));
    g.message(1, node('y', 'TimesTwoForTest', ['x'], []));
  });
  const tensorInfo = (name) => message((t) => {
    t.string(1, name);                                        // TensorInfo.name
    t.varint(2, DT_FLOAT);                                    // dtype
  });
  const entry = (key, value) => message((e) => {
    e.string(1, key);
    e.message(2, value);
  });
  const signature = message((sig) => {
    sig.message(1, entry('x', tensorInfo('x:0')));            // SignatureDef.inputs
    sig.message(2, entry('y', tensorInfo('y:0')));            // outputs
    sig.string(3, 'tensorflow/serving/predict');              // method_name
  });
  const metaGraph = message((m) => {
    m.message(1, message((info) => info.string(4, 'serve'))); // meta_info_def.tags
    m.message(2, graph);                                      // graph_def
    m.message(5, entry('serving_default', signature));        // signature_def
  });
  const savedModel = message((sm) => {
    sm.varint(1, 1);                                          // saved_model_schema_version
    sm.message(2, metaGraph);                                 // meta_graphs
  });
  fs.writeFileSync(path.join(dir, 'saved_model.pb'), savedModel.finish());
}

test('an op library built from TF\'s C API loads, and its op runs eagerly and in a SavedModel', {skip: !haveCompiler && 'no C++ compiler (c++)'}, async () => {
  const library = buildOpLibrary('times_two.cc');
  const modelDir = tempDir('saved-model');
  writeTimesTwoSavedModel(modelDir);
  await assert.rejects(tf.node.loadSavedModel(modelDir), /TimesTwoForTest/);

  assert.deepStrictEqual(tf.node.loadOpLibrary(library), ['TimesTwoForTest']);
  const binding = tf.backend().binding;
  const x = binding.createTensor([3], 'float32', new Float32Array([1, -2.5, 4]));
  const [y] = binding.executeOp('TimesTwoForTest', [], [x], 1);
  assert.deepStrictEqual(y.shape, [3]);
  assert.deepStrictEqual(Array.from(binding.tensorDataSync(y.id)), [2, -5, 8]);
  binding.deleteTensor(x);
  binding.deleteTensor(y.id);
  assert.deepStrictEqual(binding.opDef('TimesTwoForTest').inputs.map((a) => a.name), ['x']);

  const model = await tf.node.loadSavedModel(modelDir);
  const input = tf.tensor2d([[1, 2], [3, 0.5]]);
  const output = model.predict(input);
  assert.deepStrictEqual(output.shape, [2, 2]);
  assert.deepStrictEqual(Array.from(await output.data()), [2, 4, 6, 1]);
  tf.dispose([input, output]);
  model.dispose();
});

test('a library that cannot load gives TF\'s reason', {skip: !haveCompiler && 'no C++ compiler (c++)'}, () => {
  const missing = path.join(tempDir('op-library'), 'absent.so');
  assert.throws(() => tf.node.loadOpLibrary(missing), (e) => {
    assert.ok(e.message.includes(missing), e.message);
    assert.match(e.message, /No such file/);
    return true;
  });
  const broken = buildOpLibrary('needs_missing_symbol.cc');
  assert.throws(() => tf.node.loadOpLibrary(broken),
                /undefined symbol: tfjs_node_rs_test_symbol_nobody_defines/);
  assert.throws(() => tf.node.loadOpLibrary(''), TypeError);
});
