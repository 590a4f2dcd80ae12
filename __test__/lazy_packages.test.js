'use strict';
// tfjs's packages that load at their first use (js/lazy_packages.js): the stand-ins answer what
// the packages would (their export names, versions and flags, checked against the packages
// themselves), `require` leaves them unloaded, and a program that uses one gets the package,
// with what this package adds to it, before its first call.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {spawnSync} = require('node:child_process');
const {EXPORTS, FLAGS, BACKENDS, RELEASE, ENV_VARIABLE} = require('../js/lazy_packages');

const ROOT = path.join(__dirname, '..');
const GRAPH_MODEL = path.join(ROOT, 'benches', 'fixtures', 'graph_convnet', 'model.json');

/** Runs `code` in a fresh Node.js process in the package root; its last stdout line as JSON. */
function freshProcess(code, env = {}) {
  const r = spawnSync(process.execPath, ['-e', code], {
    cwd: ROOT, encoding: 'utf8', timeout: 120000,
    env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2', ...env},
  });
  assert.equal(r.status, 0, `exit ${r.status} ${r.signal || ''}: ${r.stderr}`);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

// In the child: which of the lazy packages have loaded (their real module in require.cache).
const LOADED = `
  const loaded = () => {
    const from = require('path').dirname(require.resolve('@tensorflow/tfjs'));
    return ${JSON.stringify(Object.keys(EXPORTS))}.filter((name) => {
      const entry = require.cache[require.resolve(name, {paths: [from]})];
      if (entry === undefined) return false;
      const first = Object.keys(entry.exports).find((k) => !k.startsWith('version_'));
      return Object.getOwnPropertyDescriptor(entry.exports, first).get === undefined;
    });
  };`;

test('the stand-ins list what the packages export and register, for the release installed', () => {
  // tfjs-backend-cpu first: tfjs-backend-webgl requires it.
  const names = Object.keys(EXPORTS).sort((a, b) => (b === '@tensorflow/tfjs-backend-cpu') - (a === '@tensorflow/tfjs-backend-cpu'));
  const real = freshProcess(`
    const tfc = require('@tensorflow/tfjs-core');
    const out = {};
    for (const name of ${JSON.stringify(names)}) {
      const flagsBefore = new Set(Object.keys(tfc.env().flagRegistry));
      const backendsBefore = new Set(Object.keys(tfc.engine().registryFactory));
      const m = require(name);
      const version = Object.keys(m).find((k) => k.startsWith('version_'));
      out[name] = {
        names: Object.keys(m).sort(), version: m[version],
        release: require(name + '/package.json').version,
        flags: Object.keys(tfc.env().flagRegistry).filter((f) => !flagsBefore.has(f)).sort(),
        backends: Object.entries(tfc.engine().registryFactory).filter(([b]) => !backendsBefore.has(b))
            .map(([b, {priority}]) => ({name: b, priority})),
      };
    }
    console.log(JSON.stringify(out));`);
  for (const [name, got] of Object.entries(real)) {
    assert.deepEqual([...EXPORTS[name]].sort(), got.names, `${name}'s export names`);
    assert.deepEqual([...FLAGS[name]].sort(), got.flags, `${name}'s flags`);
    assert.deepEqual(BACKENDS[name] ? [BACKENDS[name]] : [], got.backends, `${name}'s backends`);
    assert.equal(got.release, RELEASE, `${name}'s installed release`);
    assert.equal(got.version, RELEASE, `${name}'s version string`);
  }
});

test('require leaves the packages unloaded; a GraphModel program loads tfjs-converter only', () => {
  const got = freshProcess(`${LOADED}
    const tf = require('.');
    const atRequire = loaded();
    const version = {...tf.version};
    (async () => {
      const model = await tf.loadGraphModel(tf.io.fileSystem(${JSON.stringify(GRAPH_MODEL)}));
      const y = model.predict(tf.zeros([1, 28, 28, 1]));
      console.log(JSON.stringify({atRequire, version, shape: y.shape, after: loaded(),
                                  replays: (model.predict(tf.zeros([1, 28, 28, 1])),
                                            model.predict(tf.zeros([1, 28, 28, 1])),
                                            tf.node.callGraphStats().replays)}));
    })();`);
  assert.deepEqual(got.atRequire, []);
  for (const name of ['tfjs-layers', 'tfjs-converter', 'tfjs-backend-webgl', 'tfjs-data']) {
    assert.equal(got.version[name], RELEASE, name);
  }
  assert.deepEqual(got.shape, [1, 10]);
  assert.deepEqual(got.after, ['@tensorflow/tfjs-converter']);
  assert.ok(got.replays >= 1, `GraphModel.execute is a graph call site: ${got.replays} replays`);
});

test('a LayersModel program loads tfjs-layers only, with the progress bar and graph steps', () => {
  const got = freshProcess(`${LOADED}
    const tf = require('.');
    const lines = [];
    const log = console.log;
    console.log = (line) => lines.push(String(line));
    const model = tf.sequential({layers: [tf.layers.dense({units: 1, inputShape: [2]})]});
    model.compile({optimizer: tf.train.sgd(0.1), loss: 'meanSquaredError'});
    const xs = tf.tensor2d([[1, 2], [3, 4], [5, 6], [7, 8]]);
    const ys = tf.tensor2d([[1], [2], [3], [4]]);
    model.fit(xs, ys, {epochs: 3, batchSize: 4}).then(() => {
      console.log = log;
      console.log(JSON.stringify({after: loaded(), epochs: lines.filter((l) => l.startsWith('Epoch')),
                                  replays: tf.node.callGraphStats().replays}));
    });`);
  assert.deepEqual(got.after, ['@tensorflow/tfjs-layers']);
  assert.deepEqual(got.epochs, ['Epoch 1 / 3', 'Epoch 2 / 3', 'Epoch 3 / 3']);
  assert.ok(got.replays >= 1, `the training step is a graph call site: ${got.replays} replays`);
});

test('setting a package\'s flag loads it and reaches its own hook', () => {
  const got = freshProcess(`${LOADED}
    const tf = require('.');
    const warnings = [];
    console.warn = (line) => warnings.push(String(line));
    tf.env().set('KEEP_INTERMEDIATE_TENSORS', true);
    console.log(JSON.stringify({after: loaded(), value: tf.env().getBool('KEEP_INTERMEDIATE_TENSORS'),
                                warned: warnings.some((w) => /intermediate tensors/i.test(w))}));`);
  assert.deepEqual(got.after, ['@tensorflow/tfjs-converter']);
  assert.equal(got.value, true);
  assert.equal(got.warned, true, 'tfjs-converter\'s set hook ran');
});

test('the cpu backend loads when a program makes it current, and computes there', () => {
  const got = freshProcess(`${LOADED}
    const tf = require('.');
    const names = tf.engine().backendNames().sort();
    tf.setBackend('cpu').then((ok) => {
      const sum = Array.from(tf.add(tf.tensor1d([1, 2]), 3).dataSync());
      console.log(JSON.stringify({names, ok, backend: tf.getBackend(), sum, after: loaded(),
                                  kernels: tf.getKernelsForBackend('cpu').length > 100}));
    });`);
  assert.deepEqual(got.names, ['cpu', 'tensorflow']);
  assert.equal(got.ok, true);
  assert.equal(got.backend, 'cpu');
  assert.deepEqual(got.sum, [4, 5]);
  assert.deepEqual(got.after, ['@tensorflow/tfjs-backend-cpu']);
  assert.equal(got.kernels, true, 'the cpu backend\'s kernels registered as it loaded');
});

test('the cpu backend loaded through an export is registered once, by its package', () => {
  const got = freshProcess(`${LOADED}
    const tf = require('.');
    const warnings = [];
    console.warn = (line) => warnings.push(String(line));
    const cpuClass = typeof tf.MathBackendCPU;  // loads tfjs-backend-cpu through its export
    const loadedThen = loaded();
    tf.setBackend('cpu').then((ok) => {
      console.log(JSON.stringify({cpuClass, loadedThen, ok, backend: tf.getBackend(),
                                  sum: Array.from(tf.add(tf.tensor1d([1, 2]), 3).dataSync()),
                                  registered: warnings.filter((w) => /already registered/.test(w))}));
    });`);
  assert.equal(got.cpuClass, 'function');
  assert.deepEqual(got.loadedThen, ['@tensorflow/tfjs-backend-cpu']);
  assert.equal(got.ok, true);
  assert.equal(got.backend, 'cpu');
  assert.deepEqual(got.sum, [4, 5]);
  assert.deepEqual(got.registered, []);
});

test('a class a program registers before tfjs-layers loads is not one of tfjs\'s own', () => {
  const got = freshProcess(`
    const tf = require('.');
    const {builtInLayersModel} = require('./js/graphs/trust');
    class OwnSgd extends tf.SGDOptimizer {
      static get className() { return 'OwnSgd'; }
    }
    tf.serialization.registerClass(OwnSgd);
    const build = (optimizer) => {
      const model = tf.sequential({layers: [tf.layers.dense({units: 1, inputShape: [2]})]});
      model.compile({optimizer, loss: 'meanSquaredError'});
      return builtInLayersModel(model);
    };
    console.log(JSON.stringify({own: build(new OwnSgd(0.1)), tfjs: build(tf.train.sgd(0.1))}));`);
  assert.deepEqual(got, {own: false, tfjs: true});
});

test(`${ENV_VARIABLE}=0 loads every package with tfjs, as before`, () => {
  const got = freshProcess(`${LOADED}
    require('.');
    console.log(JSON.stringify(loaded()));`, {[ENV_VARIABLE]: '0'});
  assert.deepEqual(got, Object.keys(EXPORTS));
});
