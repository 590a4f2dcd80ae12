'use strict';
// Ops through executeOp against hand-computed results, and every dtype through a round trip.
const test = require('node:test');
const assert = require('node:assert/strict');
const binding = require('../binding.js');

const T = (dtype) => ({name: 'T', type: 'type', value: dtype});

function tensor(shape, dtype, data) {
  return binding.createTensor(shape, dtype, data);
}

function run(op, attrs, inputs, numOutputs = 1) {
  return binding.executeOp(op, attrs, inputs, numOutputs);
}

function read(info) {
  return Array.from(binding.tensorDataSync(info.id));
}

test('every dtype round-trips through createTensor and tensorDataSync', () => {
  const cases = [
    ['float32', new Float32Array([1.5, -2, 3.25, 0]), Float32Array],
    ['int32', new Int32Array([1, -2, 2147483647, -2147483648]), Int32Array],
    ['bool', new Uint8Array([1, 0, 1, 1]), Uint8Array],
    ['uint8', new Uint8Array([0, 1, 128, 255]), Uint8Array],
    ['int64', new BigInt64Array([1n, -2n, 9007199254740993n, -(2n ** 63n)]), BigInt64Array],
    ['complex64', new Float32Array([1, 2, 3, 4, 5, 6, 7, 8]), Float32Array],
    ['float64', new Float64Array([Math.PI, -1e300, 0, 2]), Float64Array],
  ];
  for (const [dtype, data, Kind] of cases) {
    const id = tensor([2, 2], dtype, data);
    const back = binding.tensorDataSync(id);
    assert.ok(back instanceof Kind, `${dtype} reads back as ${Kind.name}`);
    assert.deepEqual(Array.from(back), Array.from(data), dtype);
    binding.deleteTensor(id);
  }
});

test('strings round-trip as UTF-8 bytes, including empty and long ones', () => {
  const words = ['', 'héllo', 'x'.repeat(1000), '日本語'];
  const id = tensor([4], 'string', words.map((w) => new TextEncoder().encode(w)));
  const back = binding.tensorDataSync(id);
  assert.deepEqual(back.map((b) => new TextDecoder().decode(b)), words);
  binding.deleteTensor(id);
});

test('scalars and empty tensors', () => {
  const scalar = tensor([], 'float32', new Float32Array([7]));
  assert.deepEqual(Array.from(binding.tensorDataSync(scalar)), [7]);
  const empty = tensor([0, 3], 'int32', new Int32Array(0));
  assert.equal(binding.tensorDataSync(empty).length, 0);
  const [sum] = run('AddV2', [T('int32')], [empty, empty]);
  assert.deepEqual(sum.shape, [0, 3]);
  for (const id of [scalar, empty, sum.id]) binding.deleteTensor(id);
});

test('AddV2 broadcasts', () => {
  const a = tensor([2, 2], 'float32', new Float32Array([1, 2, 3, 4]));
  const b = tensor([2], 'float32', new Float32Array([10, 20]));
  const [out] = run('AddV2', [T('float32')], [a, b]);
  assert.deepEqual(out.shape, [2, 2]);
  assert.equal(out.dtype, 'float32');
  assert.deepEqual(read(out), [11, 22, 13, 24]);
});

test('MatMul honours transpose attrs', () => {
  // a = [[1,2,3],[4,5,6]] (2x3), b = [[1,0],[0,1],[1,1]] (3x2)
  const a = tensor([2, 3], 'float32', new Float32Array([1, 2, 3, 4, 5, 6]));
  const b = tensor([3, 2], 'float32', new Float32Array([1, 0, 0, 1, 1, 1]));
  const attrs = (ta, tb) => [T('float32'), {name: 'transpose_a', type: 'bool', value: ta}, {name: 'transpose_b', type: 'bool', value: tb}];
  const [ab] = run('MatMul', attrs(false, false), [a, b]);
  assert.deepEqual(ab.shape, [2, 2]);
  assert.deepEqual(read(ab), [4, 5, 10, 11]);
  // aᵀ·a: 3x3, entry (i,j) = sum_k a[k][i]*a[k][j]
  const [ata] = run('MatMul', attrs(true, false), [a, a]);
  assert.deepEqual(ata.shape, [3, 3]);
  assert.deepEqual(read(ata), [17, 22, 27, 22, 29, 36, 27, 36, 45]);
  // a·aᵀ: 2x2
  const [aat] = run('MatMul', attrs(false, true), [a, a]);
  assert.deepEqual(read(aat), [14, 32, 32, 77]);
});

test('Conv2D with strides and padding lists', () => {
  // 1x4x4x1 input 1..16, 2x2x1x1 filter of ones, stride 2, VALID: sums of 2x2 blocks.
  const x = tensor([1, 4, 4, 1], 'float32', Float32Array.from({length: 16}, (_, i) => i + 1));
  const w = tensor([2, 2, 1, 1], 'float32', new Float32Array([1, 1, 1, 1]));
  const attrs = (padding, strides) => [
    T('float32'),
    {name: 'strides', type: 'int', value: strides},
    {name: 'padding', type: 'string', value: padding},
    {name: 'data_format', type: 'string', value: 'NHWC'},
    {name: 'dilations', type: 'int', value: [1, 1, 1, 1]},
  ];
  const [valid] = run('Conv2D', attrs('VALID', [1, 2, 2, 1]), [x, w]);
  assert.deepEqual(valid.shape, [1, 2, 2, 1]);
  assert.deepEqual(read(valid), [1 + 2 + 5 + 6, 3 + 4 + 7 + 8, 9 + 10 + 13 + 14, 11 + 12 + 15 + 16]);
  // SAME with stride 1: 4x4 output; the last row/column only sees the input's edge.
  const [same] = run('Conv2D', attrs('SAME', [1, 1, 1, 1]), [x, w]);
  assert.deepEqual(same.shape, [1, 4, 4, 1]);
  const out = read(same);
  assert.equal(out[0], 1 + 2 + 5 + 6);
  assert.equal(out[3], 4 + 8);
  assert.equal(out[15], 16);
  // EXPLICIT padding: one zero row on top only.
  const explicit = [
    ...attrs('EXPLICIT', [1, 1, 1, 1]),
    {name: 'explicit_paddings', type: 'int', value: [0, 0, 1, 0, 0, 0, 0, 0]},
  ];
  const [padded] = run('Conv2D', explicit, [x, w]);
  assert.deepEqual(padded.shape, [1, 4, 3, 1]);
  assert.deepEqual(read(padded).slice(0, 3), [1 + 2, 2 + 3, 3 + 4]);
});

test('ConcatV2 takes a list input', () => {
  const a = tensor([1, 2], 'int32', new Int32Array([1, 2]));
  const b = tensor([2, 2], 'int32', new Int32Array([3, 4, 5, 6]));
  const c = tensor([1, 2], 'int32', new Int32Array([7, 8]));
  const axis = tensor([], 'int32', new Int32Array([0]));
  const [out] = run('ConcatV2', [T('int32'), {name: 'N', type: 'int', value: 3}, {name: 'Tidx', type: 'type', value: 'int32'}], [a, b, c, axis]);
  assert.deepEqual(out.shape, [4, 2]);
  assert.deepEqual(read(out), [1, 2, 3, 4, 5, 6, 7, 8]);
});

test('Split returns several outputs', () => {
  const axis = tensor([], 'int32', new Int32Array([1]));
  const x = tensor([2, 3], 'float32', new Float32Array([1, 2, 3, 4, 5, 6]));
  const outs = run('Split', [T('float32'), {name: 'num_split', type: 'int', value: 3}], [axis, x], 3);
  assert.equal(outs.length, 3);
  assert.deepEqual(outs.map((o) => o.shape), [[2, 1], [2, 1], [2, 1]]);
  assert.deepEqual(outs.map(read), [[1, 4], [2, 5], [3, 6]]);
  assert.equal(new Set(outs.map((o) => o.id)).size, 3);
});

test('Cast between dtypes, including int64 and uint8 results', () => {
  const x = tensor([4], 'float32', new Float32Array([1.7, -2.2, 300, 0]));
  const cast = (to) => run('Cast', [{name: 'SrcT', type: 'type', value: 'float32'}, {name: 'DstT', type: 'type', value: to}, {name: 'Truncate', type: 'bool', value: false}], [x])[0];
  const i32 = cast('int32');
  assert.equal(i32.dtype, 'int32');
  assert.deepEqual(read(i32), [1, -2, 300, 0]);
  const i64 = cast('int64');
  assert.equal(i64.dtype, 'int64');
  assert.deepEqual(read(i64), [1n, -2n, 300n, 0n]);
  const b = cast('bool');
  assert.deepEqual(read(b), [1, 1, 1, 0]);
  const u8 = cast('uint8');
  assert.equal(u8.dtype, 'uint8');
  assert.deepEqual(read(u8).slice(0, 2), [1, 254]);
});

test('Reshape takes its shape as a tensor; shape attrs accept unknown dims and rank', () => {
  const x = tensor([2, 3], 'float32', new Float32Array([1, 2, 3, 4, 5, 6]));
  const shape = tensor([2], 'int32', new Int32Array([3, -1]));
  const [out] = run('Reshape', [T('float32'), {name: 'Tshape', type: 'type', value: 'int32'}], [x, shape]);
  assert.deepEqual(out.shape, [3, 2]);
  assert.deepEqual(read(out), [1, 2, 3, 4, 5, 6]);
  // EnsureShape checks against a shape attr with an unknown (-1) dim, and null for unknown rank.
  const ensure = (s) => run('EnsureShape', [T('float32'), {name: 'shape', type: 'shape', value: s}], [x])[0];
  assert.deepEqual(ensure([2, -1]).shape, [2, 3]);
  assert.deepEqual(ensure(null).shape, [2, 3]);
  assert.throws(() => ensure([3, -1]), (e) => e.code === 'INVALID_ARGUMENT');
});

test('string, float and list-of-type attrs reach TF', () => {
  const x = tensor([3], 'float32', new Float32Array([0.1, 0.5, 0.9]));
  const [bucketized] = run('Bucketize', [T('float32'), {name: 'boundaries', type: 'float', value: [0.3, 0.6]}], [x]);
  assert.deepEqual(read(bucketized), [0, 1, 2]);
  const [leaky] = run('LeakyRelu', [T('float32'), {name: 'alpha', type: 'float', value: 0.5}], [tensor([2], 'float32', new Float32Array([-2, 2]))]);
  assert.deepEqual(read(leaky), [-1, 2]);
  const s = tensor([2], 'string', ['a,b', 'c'].map((w) => new TextEncoder().encode(w)));
  const [joined] = run('ReduceJoin', [{name: 'keep_dims', type: 'bool', value: false}, {name: 'separator', type: 'string', value: '|'}], [s, tensor([], 'int32', new Int32Array([0]))]);
  assert.equal(new TextDecoder().decode(binding.tensorDataSync(joined.id)[0]), 'a,b|c');
  // IdentityN: a list(type) attr and as many outputs as inputs.
  const outs = run('IdentityN', [{name: 'T', type: 'type', value: ['float32', 'string']}], [x, s], 2);
  assert.deepEqual(outs.map((o) => o.dtype), ['float32', 'string']);
});

test('attr types can also be given as tfjs-node TF_ATTR_* numbers', () => {
  const a = tensor([1], 'int32', new Int32Array([2]));
  const [out] = run('AddV2', [{name: 'T', type: 4, value: 'int32'}], [a, a]);
  assert.deepEqual(read(out), [4]);
});

test('prepared ops: attrs read once, ids and shapes through a Float64Array', () => {
  const names = binding.dtypeNames();
  const io = new Float64Array(32);
  const add = binding.prepareOp('AddV2', [T('int32')]);
  const a = tensor([2, 2], 'int32', new Int32Array([1, 2, 3, 4]));
  for (let i = 0; i < 3; i++) {
    io[0] = a;
    io[1] = a;
    assert.equal(binding.runPreparedOp(add, io, 2, 1), 1);
    const [id, dtype, rank] = io;
    assert.equal(names[dtype], 'int32');
    assert.equal(rank, 2);
    assert.deepEqual([io[3], io[4]], [2, 2]);
    assert.deepEqual(Array.from(binding.tensorDataSync(id)), [2, 4, 6, 8]);
    binding.deleteTensor(id);
  }
  // Several outputs are laid out one after the other: id, dtype, rank, dims...
  const split = binding.prepareOp('Split', [T('float32'), {name: 'num_split', type: 'int', value: 2}]);
  io[0] = tensor([], 'int32', new Int32Array([0]));
  io[1] = tensor([4, 1], 'float32', new Float32Array([1, 2, 3, 4]));
  assert.equal(binding.runPreparedOp(split, io, 2, 2), 2);
  assert.deepEqual(Array.from(io.subarray(0, 10)).map((v, i) => (i === 0 || i === 5 ? 'id' : v)), ['id', 0, 2, 2, 1, 'id', 0, 2, 2, 1]);
  assert.deepEqual(Array.from(binding.tensorDataSync(io[5])), [3, 4]);
});

test('reshapeTensor re-views a buffer under another shape without copying', () => {
  const data = binding.alloc('float32', 6);
  data.set([1, 2, 3, 4, 5, 6]);
  const id = tensor([2, 3], 'float32', data);
  const view = binding.reshapeTensor(id, [3, 2]);
  const [product] = run('MatMul', [T('float32')], [view, id]); // [3,2] x [2,3]
  assert.deepEqual(product.shape, [3, 3]);
  assert.deepEqual(read(product), [9, 12, 15, 19, 26, 33, 29, 40, 51]);
  data[0] = 10; // same memory
  assert.equal(binding.tensorDataSync(view)[0], 10);
  assert.throws(() => binding.reshapeTensor(id, [4, 2]), /has 8 elements, the tensor 6/);
  assert.throws(() => binding.reshapeTensor(tensor([1], 'string', [new Uint8Array(1)]), [1, 1]), /Reshape op/);
});
