'use strict';
// Where tfjs's cpu backend rejects an argument, this backend rejects it too (no silent empty or
// zero-padded result). The cases come from an audit of each kernel family: windows, strides,
// dilations, output shapes, index ranges. Each case is checked against cpu in the same run.
const test = require('node:test');
const assert = require('node:assert/strict');
const tf = require('..');
require('@tensorflow/tfjs-backend-cpu');

const o = (shape) => tf.ones(shape);
const i32 = (values) => tf.tensor1d(values, 'int32');

// Refused by cpu (and by this backend; the first four returned results before).
const REFUSED = {
  'avgPool, window larger than the input (valid)': () => tf.avgPool(o([1, 4, 4, 2]), 8, 1, 'valid'),
  'maxPool, window larger than the input (valid)': () => tf.maxPool(o([1, 4, 4, 2]), 8, 1, 'valid'),
  'maxPool of one channel, window larger than the input': () => tf.maxPool(o([1, 4, 4, 1]), 8, 1, 'valid'),
  'depthwiseConv2d, strides and dilations both > 1':
      () => tf.depthwiseConv2d(o([1, 8, 8, 1]), o([2, 2, 1, 1]), 2, 'valid', 'NHWC', 2),
  'maxPoolWithArgmax, window larger than the input':
      () => tf.maxPoolWithArgmax(o([1, 4, 4, 2]), 8, 1, 'valid').result,
  'conv1d, filter larger than the input': () => tf.conv1d(o([1, 3, 2]), o([5, 2, 1]), 1, 'valid'),
  'conv2d, strides and dilations both > 1':
      () => tf.conv2d(o([1, 8, 8, 1]), o([2, 2, 1, 1]), 2, 'valid', 'NHWC', 2),
  'conv2d, stride 0': () => tf.conv2d(o([1, 4, 4, 1]), o([2, 2, 1, 1]), 0, 'valid'),
  'conv2d, dilation 0': () => tf.conv2d(o([1, 4, 4, 1]), o([2, 2, 1, 1]), 1, 'valid', 'NHWC', 0),
  'conv2d, channel mismatch': () => tf.conv2d(o([1, 4, 4, 2]), o([2, 2, 3, 1]), 1, 'valid'),
  'maxPool, stride 0 (valid)': () => tf.maxPool(o([1, 4, 4, 1]), 2, 0, 'valid'),
  'maxPool, stride 0 (same)': () => tf.maxPool(o([1, 4, 4, 2]), 2, 0, 'same'),
  'gather, index past the end': () => tf.gather(tf.tensor1d([1, 2, 3]), i32([5])),
  'gather, negative index': () => tf.gather(tf.tensor1d([1, 2, 3]), i32([-1])),
  'gatherND, index out of range': () => tf.gatherND(tf.tensor1d([1, 2, 3]), tf.tensor2d([[7]], [1, 1], 'int32')),
  'scatterND, index out of range': () => tf.scatterND(tf.tensor2d([[7]], [1, 1], 'int32'), tf.tensor1d([1]), [3]),
  'oneHot, depth 0': () => tf.oneHot(i32([1]), 0),
  'slice, past the end': () => tf.slice(tf.tensor1d([1, 2, 3]), [2], [5]),
  'mirrorPad, padding as large as the input': () => tf.mirrorPad(tf.tensor1d([1, 2, 3]), [[3, 0]], 'reflect'),
  'tile, negative multiple': () => tf.tile(tf.tensor1d([1, 2, 3]), [-1]),
  'topk, k larger than the last dimension': () => tf.topk(tf.tensor1d([1, 2, 3]), 5).values,
  'reshape, wrong size': () => tf.reshape(tf.tensor1d([1, 2, 3]), [2]),
  'split, uneven': () => tf.split(tf.tensor1d([1, 2, 3]), 2)[0],
  'depthToSpace, depth not divisible': () => tf.depthToSpace(o([1, 2, 2, 3]), 2),
  'spaceToBatchND, size not divisible': () => tf.spaceToBatchND(o([1, 3, 3, 1]), [2, 2], [[0, 0], [0, 0]]),
  'batchToSpaceND, batch not divisible': () => tf.batchToSpaceND(o([3, 1, 1, 1]), [2, 2], [[0, 0], [0, 0]]),
  'bincount, negative size': () => tf.bincount(i32([1]), tf.tensor1d([]), -1),
};

// Not refused by cpu, but a silent wrong answer here before: tfjs-node (TF) refuses them.
const REFUSED_LIKE_TF = {
  'conv2dTranspose, outShape its input cannot produce (valid)':
      () => tf.conv2dTranspose(o([1, 3, 3, 1]), o([2, 2, 1, 1]), [1, 9, 9, 1], 1, 'valid'),
  'conv2dTranspose, outShape its input cannot produce (same, stride 2)':
      () => tf.conv2dTranspose(o([1, 3, 3, 1]), o([2, 2, 1, 1]), [1, 7, 7, 1], 2, 'same'),
};

function outcome(backend, f) {
  tf.setBackend(backend);
  try {
    const out = f();
    out.dataSync();
    const shape = out.shape;
    out.dispose();
    return {threw: false, shape};
  } catch (e) {
    assert.ok(e instanceof Error);
    return {threw: true, message: e.message};
  }
}

for (const [name, f] of Object.entries(REFUSED)) {
  test(`refused as cpu refuses it: ${name}`, () => {
    assert.equal(outcome('cpu', f).threw, true, 'cpu accepts it: the case is stale');
    const r = outcome('tensorflow', f);
    assert.equal(r.threw, true, `returned a tensor of shape [${r.shape}]`);
  });
}

for (const [name, f] of Object.entries(REFUSED_LIKE_TF)) {
  test(`refused as TF refuses it: ${name}`, () => {
    const r = outcome('tensorflow', f);
    assert.equal(r.threw, true, `returned a tensor of shape [${r.shape}]`);
    assert.match(r.message, /needs dy of spatial size/);
  });
}

test('the valid neighbours of those cases still run and match cpu', () => {
  const cases = [
    () => tf.avgPool(o([1, 4, 4, 2]), 4, 1, 'valid'),
    () => tf.maxPool(o([1, 4, 4, 1]), 4, 1, 'valid'),
    () => tf.avgPool3d(o([1, 4, 4, 4, 1]), 8, 1, 'valid'),  // empty, as in cpu
    () => tf.depthwiseConv2d(o([1, 8, 8, 1]), o([2, 2, 1, 1]), 1, 'valid', 'NHWC', 2),
    () => tf.conv2dTranspose(o([1, 3, 3, 1]), o([2, 2, 1, 1]), [1, 4, 4, 1], 1, 'valid'),
    () => tf.conv2dTranspose(o([1, 3, 3, 1]), o([2, 2, 1, 1]), [1, 6, 6, 1], 2, 'same'),
  ];
  for (const f of cases) {
    tf.setBackend('cpu');
    const want = f();
    const wantValues = Array.from(want.dataSync());
    tf.setBackend('tensorflow');
    const got = f();
    assert.deepEqual(got.shape, want.shape);
    assert.deepEqual(Array.from(got.dataSync()), wantValues);
  }
});
