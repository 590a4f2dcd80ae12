'use strict';
// Kernels that differ between TensorFlow builds. The aarch64 wheel runs TF's own CPU kernels
// where x64's runs oneDNN's; TF_ENABLE_ONEDNN_OPTS=0 makes this x64 build run TF's own ones too,
// so the difference is tested here (and on arm64 itself by scripts/test-arm64.js).

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const root = path.resolve(__dirname, '..');

/** Runs `code` in a child node with TF's own kernels (oneDNN off); returns its JSON output. */
function withoutOneDnn(code) {
  const run = spawnSync(process.execPath, ['-e', code], {
    cwd: root, encoding: 'utf8', env: {...process.env, TF_ENABLE_ONEDNN_OPTS: '0'},
  });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout.trim().split('\n').pop());
}

test('dilated depthwise convolutions match cpu where TF\'s own kernel rejects dilations', () => {
  // TF's own DepthwiseConv2dNative answers UNIMPLEMENTED for dilations > 1; the backend then
  // runs it on grids of the input (SpaceToBatchND), as TF's Python depthwise_conv2d does.
  const results = withoutOneDnn(`
    const tf = require('.');
    const cases = [
      {x: [1, 5, 5, 1], f: [3, 3, 1, 1], d: 2, pad: 'valid'},
      {x: [2, 6, 7, 2], f: [2, 3, 2, 2], d: [2, 3], pad: 'same'},
      {x: [1, 8, 8, 3], f: [3, 3, 3, 1], d: 3, pad: [[0, 0], [1, 2], [2, 1], [0, 0]]},
    ];
    const run = (backend) => {
      tf.setBackend(backend);
      return cases.map((c) => {
        const n = (s) => s.reduce((a, b) => a * b, 1);
        const x = tf.tensor(Array.from({length: n(c.x)}, (_, i) => Math.sin(i) * 3), c.x);
        const f = tf.tensor(Array.from({length: n(c.f)}, (_, i) => Math.cos(i)), c.f);
        const y = tf.depthwiseConv2d(x, f, 1, c.pad, 'NHWC', c.d);
        return {shape: y.shape, values: Array.from(y.dataSync())};
      });
    };
    console.log(JSON.stringify({tensorflow: run('tensorflow'), cpu: run('cpu')}));
  `);
  assert.equal(results.tensorflow.length, 3);
  results.tensorflow.forEach((got, i) => {
    const want = results.cpu[i];
    assert.deepEqual(got.shape, want.shape, `case ${i}`);
    got.values.forEach((v, j) => assert.ok(Math.abs(v - want.values[j]) < 1e-4, `case ${i} [${j}]: ${v} vs ${want.values[j]}`));
  });
});
