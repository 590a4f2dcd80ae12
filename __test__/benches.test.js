'use strict';
// The benchmark harness (benches/): its models build as the suite describes them, the Keras
// column builds the same architectures, the GraphModel fixture loads and computes, and the
// targets of RESULTS.md are computed from the numbers. No timing is asserted.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');

const tf = require('..');
const models = require('../benches/models');
const report = require('../benches/report');

test('every bench LayersModel builds on this backend, with the outputs its spec declares',
     async () => {
  for (const spec of models.MODELS.filter((s) => !s.load)) {
    const model = await models.build(tf, spec);
    const outputs = model.outputs.map((o) => o.shape.slice(1));
    assert.deepStrictEqual(outputs, spec.outputShapes, spec.name);
    model.dispose();
  }
});

test('the GraphModel fixture, made by tensorflowjs_converter, gives softmax rows', async () => {
  const spec = models.byName('graph-model');
  const model = await models.build(tf, spec);
  const x = tf.randomUniform([3, 28, 28, 1]);
  const y = model.predict(x);
  assert.deepStrictEqual(y.shape, [3, 10]);
  const rows = await y.sum(1).array();
  for (const s of rows) assert.ok(Math.abs(s - 1) < 1e-5, `row sum ${s}`);
  const bytes = fs.readdirSync(models.GRAPH_MODEL_DIR)
      .reduce((n, f) => n + fs.statSync(path.join(models.GRAPH_MODEL_DIR, f)).size, 0);
  assert.ok(bytes < 64 * 1024, `fixture of ${bytes} bytes`);
  tf.dispose([x, y]);
  model.dispose();
});

const kerasPython = path.join(process.env.TFJS_NODE_RS_KERAS_VENV ||
                              path.join(os.homedir(), '.cache', 'tfjs-node-rs', 'keras-venv'),
                              'bin', 'python');

test('the Keras column builds the same architectures (parameter counts)',
     {skip: !fs.existsSync(kerasPython) && `no Keras venv at ${kerasPython}`}, async () => {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-keras-')), 'out.json');
  const task = {backend: 'keras', kind: 'params', specs: models.MODELS.map(models.describe)};
  const r = spawnSync(kerasPython, [path.join(__dirname, '..', 'benches', 'keras', 'worker.py'),
                                    JSON.stringify(task), out], {encoding: 'utf8'});
  assert.strictEqual(r.status, 0, r.stderr);
  const result = JSON.parse(fs.readFileSync(out, 'utf8'));
  assert.ifError(result.error);
  for (const spec of models.MODELS.filter((s) => !s.load)) {
    const model = await models.build(tf, spec);
    assert.strictEqual(result.params[spec.name], model.countParams(), spec.name);
    model.dispose();
  }
});

// A results object as run.js writes it, with the steady-state ms of each backend.
function results(rows) {
  const backendsRun = ['tensorflow', 'tfjs-node', 'wasm', 'keras'];
  return {
    primary: 'tensorflow', backendsRun, backends: {},
    models: rows.map(([model, method, workload, ms]) => ({
      model, method, workload,
      results: Object.fromEntries(backendsRun.map((b, i) => [b, typeof ms[i] === 'string' ?
        {error: ms[i]} : {ms: ms[i], firstMs: ms[i] * 2}])),
    })),
  };
}

test('targets are computed from the ratios of the run', () => {
  const r = report.derive(results([
    // model, method, workload, [tensorflow, tfjs-node, wasm, keras] ms
    ['dense-tiny', 'predict', false, [1, 2, 3, 9]],
    ['dense-tiny', 'fit', false, [1, 2, 1.5, 1.5]],
    ['convolutional-1filters', 'fit', false,
     [1, 3, "Kernel 'Conv2DBackpropFilter' not registered for backend 'wasm'", 2]],
    ['rnn-GRU', 'predict', false, [1, 1.9, 2.9, 5]],
    ['text-lstm', 'fit', true, [2, 4, 'n/a: x', 2]],
    ['graph-model', 'predict', true, [1, 1, 1, 'n/a: Keras has no tfjs GraphModel']],
  ]));
  const t = Object.fromEntries(r.targets.map((x) => [x.name, x]));
  const vsNode = t['every suite model, predict and fit, vs tfjs-node'];
  assert.deepStrictEqual([vsNode.value, vsNode.met], ['3/4', false]);
  assert.match(vsNode.detail, /rnn-GRU predict 1\.90/);
  // The fit wasm cannot run is left out of the wasm target.
  const vsWasm = t['every suite model, predict and fit, vs wasm'];
  assert.deepStrictEqual([vsWasm.value, vsWasm.met], ['3/3', true]);
  const rnnWasm = t['dense-tiny and the RNN predicts vs wasm'];
  assert.deepStrictEqual([rnnWasm.value, rnnWasm.met], ['1/2', false]);
  const keras = t['every fit vs Keras'];
  assert.deepStrictEqual([keras.value, keras.met], ['2/3', false]);
  assert.match(keras.detail, /text-lstm fit 1\.00/);
  const workloads = t['every user workload vs tfjs-node'];
  assert.deepStrictEqual([workloads.value, workloads.met], ['2/2', true]);
  const geo = t['user workloads\' geometric mean vs tfjs-node'];
  assert.deepStrictEqual([geo.value, geo.met], [Math.SQRT2.toFixed(2), false]);
  // First-call ratios are derived too.
  assert.strictEqual(r.models[0].firstRatios.wasm, 3);
});

test('a compute-bound row short of twice tfjs-node is set against the machine\'s FMA peak', () => {
  const r = results([['dense-large', 'fit', false, [1, 1.5, 30, 2]]]);
  // 4 GFLOP a step in 20 ms is 200 GFLOP/s, half of a 400 GFLOP/s peak; twice tfjs-node's
  // speed (40 ms) is 20 ms too: half the peak.
  r.tfGraph = {'dense-large': {'tensorflow': {fitMs: 20}, 'tfjs-node': {fitMs: 40},
                               'tfGraph': {fitMs: 21}, 'gflop': {fit: 4}}};
  r.fmaPeak = {gflops: 400, threads: 2};
  const derived = report.derive(r);
  const vsNode = derived.targets.find((t) => t.name ===
                                      'every suite model, predict and fit, vs tfjs-node');
  assert.match(vsNode.detail,
               /dense-large fit 1\.50 \(twice tfjs-node takes 50% of the FMA peak; 50% now\)/);
  const text = report.text(derived);
  assert.match(text, /dense-large +fit +20\.0 +40\.0 +21\.0 +2\.00 +0\.95 +4\.00 +200 +50% +50%/);
});

test('deferring off is compared pair by pair, each median with its interval', () => {
  // Pair i: tensorflow 1 ms, defer-off ratios[i] ms.
  const paired = (model, ratios) => {
    const mine = ratios.map(() => 1);
    return {
      model, method: 'predict', workload: false,
      results: {
        'tensorflow': {ms: 1, firstMs: 1, processes: mine, firstProcesses: mine},
        'defer-off': {ms: 1, firstMs: 1, processes: ratios, firstProcesses: ratios},
      },
    };
  };
  const eleven = [0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.2];
  const r = report.derive({
    primary: 'tensorflow', backendsRun: ['tensorflow', 'defer-off'], backends: {},
    models: [
      paired('a', eleven),
      // All below 1: slower, whatever the spread.
      paired('b', eleven.map((x) => x * 0.8)),
      paired('c', [0.96, 0.97, 0.98, 0.99, 1.01]),
      paired('d', [0.5, 0.6, 0.7, 0.9, 1.5]),
    ],
  });
  // n = 11: P(Binomial(11, 1/2) < 2) = 12/2048 <= 2.5% < P(< 3): the 2nd smallest and largest.
  assert.deepStrictEqual(r.models[0].pairedInterval, {low: 0.6, high: 1.1});
  assert.strictEqual(r.models[0].ratios['defer-off'], 0.9);
  // n = 5: even the least and the greatest cover only 1 - 2/32 of the median.
  assert.deepStrictEqual(r.models[2].pairedInterval, {low: null, high: null});
  const t = r.targets.find((x) => x.name.startsWith('deferring never slower'));
  assert.strictEqual(t.value, '1/4, 1 within noise');
  assert.strictEqual(t.met, false);
  assert.match(t.detail, /^slower: b predict 0\.72 \(95% interval 0\.48-0\.88\), d predict 0\.70; /);
  assert.match(t.detail, /within noise: a predict 0\.90 \(95% interval 0\.60-1\.10\)$/);
});

test('a ratio just short of its goal shows the decimal that tells them apart', () => {
  const r = report.derive(results([['dense-large', 'fit', false, [1, 1.998, 3, 2]]]));
  const vsNode = r.targets.find((x) => x.name === 'every suite model, predict and fit, vs tfjs-node');
  assert.deepStrictEqual([vsNode.met, vsNode.detail], [false, 'dense-large fit 1.998']);
});

test('a whole program (build to last predict) is a row of its own, against tfjs-node and ' +
     'deferring off', () => {
  const backendsRun = ['tensorflow', 'defer-off', 'tfjs-node'];
  // On predict rows: each backend's program ms per process (sorted: the median is the middle).
  const row = (model, method, programs) => ({
    model, method, workload: true,
    results: Object.fromEntries(backendsRun.map((b, i) => [b, {
      ms: 1, firstMs: 1, processes: [1, 1, 1], firstProcesses: [1, 1, 1],
      ...(programs ? {programMs: programs[i][1], programProcesses: programs[i]} : {})}])),
  });
  const r = report.derive({
    primary: 'tensorflow', backendsRun, backends: {},
    models: [
      row('mnist-convnet', 'predict', [[400, 410, 420], [480, 492, 504], [1000, 1000, 1000]]),
      row('mnist-convnet', 'fit'),
      // Deferring off faster in every pair: slower, as a program.
      row('resnet-block', 'predict', [[500, 500, 500], [400, 400, 400], [450, 450, 450]]),
    ],
  });
  assert.strictEqual(r.models[0].programRatios['tfjs-node'], 1000 / 410);
  assert.strictEqual(r.models[1].programRatios['tfjs-node'], null);
  const t = Object.fromEntries(r.targets.map((x) => [x.name, x]));
  const vsNode = t['every user workload\'s whole program vs tfjs-node'];
  assert.deepStrictEqual([vsNode.value, vsNode.met, vsNode.detail],
                         ['1/2', false, 'resnet-block whole program 0.90']);
  const deferring = t['deferring never slower: every row vs deferring off'];
  assert.deepStrictEqual([deferring.value, deferring.met], ['4/5', false]);
  assert.match(deferring.detail, /^slower: resnet-block whole program 0\.80$/);
  // One table row per model, with what its program ran.
  const text = report.text(r);
  assert.match(text, /User workloads: the whole program/);
  assert.match(text, /\nresnet-block +build, predict +500 /);
  assert.match(text, /\nmnist-convnet +build, fit, predict +410 +492 +1000 +1\.20 +2\.44\n/);
});

test('a whole process (its start to the last predict) has a table of its own, without the ' +
     'backends whose processes did not say', () => {
  // On predict rows: tensorflow's and tfjs-node's process ms per process; keras's none.
  const processes = {tensorflow: [700, 710, 720], 'tfjs-node': [1400, 1420, 1440]};
  const backendsRun = ['tensorflow', 'tfjs-node', 'keras'];
  const r = report.derive({
    primary: 'tensorflow', backendsRun, backends: {},
    models: [{model: 'mnist-convnet', method: 'predict', workload: true,
              results: Object.fromEntries(backendsRun.map((b) => [b, {
                ms: 1, firstMs: 1, processes: [1, 1, 1], firstProcesses: [1, 1, 1],
                programMs: 400, programProcesses: [400, 400, 400],
                ...(processes[b] ? {processMs: processes[b][1], processProcesses: processes[b]} : {})}]))}],
  });
  assert.strictEqual(r.models[0].processRatios['tfjs-node'], 1420 / 710);
  assert.strictEqual(r.models[0].processRatios.keras, null);
  assert.strictEqual(r.processGeomean.workloads['tfjs-node'], 2);
  const text = report.text(r);
  assert.match(text, /User workloads: the whole process, ms from the process's start/);
  assert.match(text, /\nmnist-convnet +build, predict +710 +1420 +— +2\.00 +—\n/);
});
