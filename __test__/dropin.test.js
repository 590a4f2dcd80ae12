'use strict';
// Programs written for @tensorflow/tfjs-node run unchanged: every import form, the names
// tfjs-node 4.22 exports (recorded from it in fixtures/tfjs-node-4.22-names.json), and its
// version key.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const {spawnSync} = require('node:child_process');
const {tf, readJson, tmpDir} = require('./fixtures/helpers');

const root = path.resolve(__dirname, '..');
const tfjsNode = readJson('tfjs-node-4.22-names.json');

/** A project folder whose node_modules/tfjs-node-rs is this checkout, as npm would link it. */
function project() {
  const dir = tmpDir('tfjs-node-rs-dropin-');
  fs.mkdirSync(path.join(dir, 'node_modules'));
  fs.symlinkSync(root, path.join(dir, 'node_modules', 'tfjs-node-rs'), 'dir');
  return dir;
}

function runNode(cwd, file) {
  const run = spawnSync(process.execPath, [file], {cwd, encoding: 'utf8'});
  assert.equal(run.status, 0, run.stderr);
  return run.stdout;
}

test('ES modules: namespace, named and default imports, one tfjs instance with require', () => {
  const dir = project();
  fs.writeFileSync(path.join(dir, 'main.mjs'), `
    import * as tf from 'tfjs-node-rs';
    import {tensor, node, version, getBackend} from 'tfjs-node-rs';
    import tfDefault from 'tfjs-node-rs';
    import {createRequire} from 'node:module';
    const tfRequired = createRequire(import.meta.url)('tfjs-node-rs');
    const sum = tf.add(tensor([1, 2]), tf.scalar(3));
    console.log(JSON.stringify({
      sum: Array.from(sum.dataSync()),
      backend: getBackend(),
      nodeFns: typeof node.decodeImage + ' ' + typeof tf.node.loadSavedModel,
      version: version['tfjs-node'],
      sameInstance: tfDefault === tfRequired && tf.tensor === tfRequired.tensor &&
          tf.engine() === tfRequired.engine(),
      // Node adds 'default' and, from 23 on, 'module.exports' to a CommonJS namespace.
      names: Object.keys(tf).filter((k) => k !== 'default' && k !== 'module.exports').sort(),
    }));
  `);
  const got = JSON.parse(runNode(dir, 'main.mjs'));
  assert.deepEqual(got.sum, [4, 5]);
  assert.equal(got.backend, 'tensorflow');
  assert.equal(got.nodeFns, 'function function');
  assert.equal(got.version, tfjsNode['@tensorflow/tfjs-node']);
  assert.equal(got.sameInstance, true);
  // The namespace has every name require() gives, so every name tfjs-node's has.
  assert.deepEqual(got.names, Object.keys(tf).sort());
  for (const name of tfjsNode.tf) assert.ok(got.names.includes(name), `import * lacks ${name}`);
});

test('a TypeScript program compiled with module nodenext type-checks and runs', () => {
  const dir = project();
  fs.writeFileSync(path.join(dir, 'package.json'), '{"type": "module"}\n');
  fs.writeFileSync(path.join(dir, 'main.ts'), [
    "import * as tf from 'tfjs-node-rs';",
    "import {tensor2d} from 'tfjs-node-rs';",
    'const y = tf.matMul(tensor2d([[1, 2]]), tensor2d([[3], [4]]));',
    "const v: string = tf.version['tfjs-node'];",
    'console.log(JSON.stringify({y: Array.from(y.dataSync()), v, tensors: (tf.backend() as ' +
        'unknown as tf.TensorFlowBackend).getNumOfTFTensors() > 0}));',
  ].join('\n'));
  const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const compile = spawnSync(process.execPath, [tsc, '--strict', '--skipLibCheck', '--target', 'es2020',
    '--module', 'nodenext', '--moduleResolution', 'nodenext', 'main.ts'], {cwd: dir, encoding: 'utf8'});
  assert.equal(compile.status, 0, compile.stdout + compile.stderr);
  assert.deepEqual(JSON.parse(runNode(dir, 'main.js')), {y: [11], v: '4.22.0', tensors: true});
});

test("tf.version['tfjs-node'] is the tfjs-node API this package matches", () => {
  assert.equal(tf.version['tfjs-node'], tfjsNode['@tensorflow/tfjs-node']);
  assert.equal(tf.version['tfjs-node-rs'], require('../package.json').version);
});

test('every name tfjs-node 4.22 exports in tf, tf.io and tf.node is here', () => {
  for (const [what, names, ns] of [['tf', tfjsNode.tf, tf], ['tf.io', tfjsNode.io, tf.io],
    ['tf.node', tfjsNode.node, tf.node]]) {
    const missing = names.filter((name) => !(name in ns));
    assert.deepEqual(missing, [], `${what} lacks names tfjs-node exports`);
  }
});

test('backend.getNumOfTFTensors() counts native tensors, as tfjs-node users check leaks', () => {
  const backend = tf.backend();
  const before = backend.getNumOfTFTensors();
  const a = tf.tensor1d([1, 2, 3]);
  const b = tf.add(a, a);  // a is uploaded, b is TF's output
  assert.equal(backend.getNumOfTFTensors(), before + 2);
  tf.dispose([a, b]);
  assert.equal(backend.getNumOfTFTensors(), before);
  assert.equal(backend.getNumOfSavedModels(), tf.node.getNumOfSavedModels());
});

test('tf.node image functions need the tensorflow backend, as in tfjs-node', async () => {
  const png = fs.readFileSync(path.join(__dirname, 'fixtures', 'images', fs.readdirSync(
      path.join(__dirname, 'fixtures', 'images')).find((f) => f.endsWith('.png'))));
  await tf.setBackend('cpu');
  try {
    // tfjs-node's text, whole (its specs compare it exactly); what to do is in e.detail.
    assert.throws(() => tf.node.decodeImage(png), (e) => {
      assert.equal(e.message, 'Expect the current backend to be "tensorflow", but got "cpu"');
      assert.match(e.detail, /^decode\w+ runs on it: call tf\.setBackend\('tensorflow'\) first$/);
      return true;
    });
    assert.throws(() => tf.node.decodePng(png), /but got "cpu"/);
    const img = tf.zeros([2, 2, 3], 'int32');
    await assert.rejects(tf.node.encodePng(img), /but got "cpu"/);
    img.dispose();
  } finally {
    await tf.setBackend('tensorflow');
  }
  tf.node.decodeImage(png).dispose();
});
