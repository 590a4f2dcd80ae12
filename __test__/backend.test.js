'use strict';
// The `tensorflow` backend through the public tfjs API: registration, dtypes,
// zero-copy data, memory accounting, errors, and the kernel table.

const test = require('node:test');
const assert = require('node:assert');

const tf = require('..');
const binding = require('../binding.js');
const {ROWS} = require('../js/kernels/table');
const {kernelConfigs} = require('../js/kernels/register');

const backend = () => tf.backend();

/** TF's words for an op name it does not know. */
const UNKNOWN_OP = /neither a type of a primitive operation|Op type not registered/;

function close(actual, expected, eps = 1e-5) {
  assert.strictEqual(actual.length, expected.length, 'length');
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i], e = expected[i];
    if (Number.isNaN(e)) {
      assert.ok(Number.isNaN(a), `[${i}] ${a} is not NaN`);
    } else {
      assert.ok(Math.abs(a - e) <= eps * Math.max(1, Math.abs(e)),
                `[${i}] ${a} != ${e}`);
    }
  }
}

test('require returns the tfjs API on the tensorflow backend', () => {
  assert.strictEqual(tf.getBackend(), 'tensorflow');
  assert.strictEqual(tf.version['tfjs-node-rs'], require('../package.json').version);
  assert.strictEqual(typeof tf.tensor, 'function');
  assert.strictEqual(typeof tf.layers.dense, 'function');
  assert.strictEqual(typeof tf.node, 'object');
  // Registered above cpu (1) and webgl (2).
  assert.ok(tf.engine().registryFactory.tensorflow.priority > 2);
  assert.ok(tf.findBackend('tensorflow') !== null);
  // What client libraries check to tell tfjs-node is present (tfjs-node's binding has it too).
  assert.strictEqual(backend().binding.TF_Version, binding.tfVersion());
});

test('registers every kernel tfjs-node registers, and more', () => {
  const mine = new Set(kernelConfigs().map(k => k.kernelName));
  const tfjsNode = `_FusedMatMul Abs Acos Acosh Add AddN All Any ArgMax ArgMin Asin Asinh
    Atan Atan2 Atanh AvgPool AvgPool3D AvgPool3DGrad AvgPoolGrad BatchMatMul BatchToSpaceND
    Bincount BroadcastArgs Cast Ceil ClipByValue Complex ComplexAbs Concat Conv2D
    Conv2DBackpropFilter Conv2DBackpropInput Conv3D Conv3DBackpropFilterV2
    Conv3DBackpropInputV2 Cos Cosh CropAndResize Cumprod Cumsum DepthToSpace
    DepthwiseConv2dNative DepthwiseConv2dNativeBackpropFilter
    DepthwiseConv2dNativeBackpropInput Diag Dilation2D Dilation2DBackpropFilter
    Dilation2DBackpropInput Einsum Elu EluGrad Equal Erf Exp ExpandDims Expm1 FFT Fill
    FlipLeftRight Floor FloorDiv FusedBatchNorm FusedConv2D FusedDepthwiseConv2D GatherNd
    GatherV2 Greater GreaterEqual Identity IFFT Imag IsFinite IsInf IsNan LeakyRelu Less
    LessEqual LinSpace Log Log1p LogicalAnd LogicalNot LogicalOr LRN LRNGrad Max Maximum
    MaxPool MaxPool3D MaxPool3DGrad MaxPoolGrad Mean Min Minimum MirrorPad Mod Multinomial
    Multiply Neg NonMaxSuppressionV3 NonMaxSuppressionV4 NonMaxSuppressionV5 NotEqual
    OneHot OnesLike Pack PadV2 Pow Prelu Prod Range Real RealDiv Reciprocal Relu Relu6
    Reshape ResizeBilinear ResizeBilinearGrad ResizeNearestNeighbor
    ResizeNearestNeighborGrad Reverse Round Rsqrt ScatterNd Select Selu Sigmoid Sign Sin
    Sinh Slice Softmax Softplus SpaceToBatchND SparseToDense SplitV Sqrt Square
    SquaredDifference StaticRegexReplace Step StridedSlice Sub Sum Tan Tanh
    TensorScatterUpdate Tile TopK Transpose Unique Unpack UnsortedSegmentSum ZerosLike`
      .split(/\s+/).filter(Boolean);
  assert.strictEqual(tfjsNode.length, 155);
  for (const k of tfjsNode) assert.ok(mine.has(k), `missing kernel ${k}`);
  for (const k of ['BitwiseAnd', 'DenseBincount', 'SearchSorted', 'MaxPoolWithArgmax',
                   'SparseFillEmptyRows', 'SparseReshape', 'SparseSegmentMean',
                   'SparseSegmentSum', 'RaggedGather', 'RaggedRange',
                   'RaggedTensorToTensor', 'StringNGrams', 'StringSplit',
                   'StringToHashBucketFast', 'Transform', 'RotateWithOffset']) {
    assert.ok(mine.has(k), `missing kernel ${k}`);
    assert.ok(tf.getKernel(k, 'tensorflow'), `${k} not registered`);
  }
});

test('every table row names a TF op that exists', () => {
  for (const row of ROWS) {
    const op = row.op || row.kernel;
    const ops = [op, ...Object.values(row.opFor || {})];
    for (const name of ops) {
      // Without attrs and inputs TF refuses the call, but not as unknown.
      assert.throws(() => binding.executeOp(name, [], [], 1), (e) => {
        assert.ok(!UNKNOWN_OP.test(e.message), `${row.kernel}: ${name}: ${e.message}`);
        return true;
      });
    }
  }
  assert.throws(() => binding.executeOp('NoSuchOpAnywhere', [], [], 1),
                (e) => e.code === 'NOT_FOUND' && UNKNOWN_OP.test(e.message));
});

test('dtypes round-trip through tfjs', async () => {
  tf.engine().startScope();
  const f = tf.tensor([1.5, -2, 3.25], [3], 'float32');
  close(await tf.add(f, 0).data(), [1.5, -2, 3.25]);
  assert.strictEqual(tf.add(f, 0).dtype, 'float32');

  const i = tf.tensor([1, -2, 2147483647], [3], 'int32');
  const i2 = tf.mul(i, tf.scalar(1, 'int32'));
  assert.strictEqual(i2.dtype, 'int32');
  assert.deepStrictEqual(Array.from(await i2.data()), [1, -2, 2147483647]);

  const b = tf.tensor([true, false, true], [3], 'bool');
  const nb = tf.logicalNot(b);
  assert.strictEqual(nb.dtype, 'bool');
  assert.deepStrictEqual(Array.from(await nb.data()), [0, 1, 0]);

  const c = tf.complex([1, 2], [3, -4]);
  assert.strictEqual(c.dtype, 'complex64');
  const c2 = tf.add(c, c);
  close(await tf.real(c2).data(), [2, 4]);
  close(await tf.imag(c2).data(), [6, -8]);
  close(await c2.data(), [2, 6, 4, -8]);
  close(await tf.abs(tf.complex([3], [4])).data(), [5]);

  const s = tf.tensor(['héllo', '', 'wörld'], [3], 'string');
  const s2 = tf.reshape(tf.stack([s, s]), [6]);
  assert.strictEqual(s2.dtype, 'string');
  assert.deepStrictEqual(await s2.data(), ['héllo', '', 'wörld', 'héllo', '', 'wörld']);
  const eq = tf.equal(s, tf.tensor(['héllo', 'x', 'wörld']));
  assert.deepStrictEqual(Array.from(await eq.data()), [1, 0, 1]);
  const gt = tf.greater(s, tf.tensor(['hello', 'z', 'wörld']));
  assert.deepStrictEqual(Array.from(await gt.data()), [1, 0, 0]);
  tf.engine().endScope();
});

test('int64 and uint8 results of TF ops come back as int32', async () => {
  // StringToHashBucketFast returns int64 in TF.
  const h = tf.string.stringToHashBucketFast(['a', 'b', 'c', 'a'], 1000);
  assert.strictEqual(h.dtype, 'int32');
  const hv = Array.from(await h.data());
  assert.ok(hv.every(v => v >= 0 && v < 1000));
  assert.strictEqual(hv[0], hv[3]);

  // Raw TF outputs of other integer types are cast right after the op.
  const be = backend();
  const x = tf.tensor([0, 7, 255, 300], [4], 'int32');
  for (const dt of ['uint8', 'int64', 'int16', 'uint32']) {
    const out = be.run1('Cast', [{name: 'SrcT', type: 'type', value: 'int32'},
                                 {name: 'DstT', type: 'type', value: dt}], [x]);
    assert.strictEqual(out.dtype, 'int32', dt);
    const t = tf.engine().makeTensorFromTensorInfo(be.wrap(out));
    const expected = dt === 'uint8' ? [0, 7, 255, 44] : [0, 7, 255, 300];
    assert.deepStrictEqual(Array.from(await t.data()), expected, dt);
    t.dispose();
  }
  // float64 results become float32.
  const d = be.run1('Cast', [{name: 'SrcT', type: 'type', value: 'int32'},
                             {name: 'DstT', type: 'type', value: 'float64'}], [x]);
  assert.strictEqual(d.dtype, 'float32');
  be.free(d);
});

test('tensors are shared with TF, not copied', async () => {
  const be = backend();
  // Values written into the backend's aligned memory are shared on upload.
  const n = 1 << 15;  // reads of 64 KiB and more share TF's buffer
  const values = be.alloc('float32', n);
  for (let i = 0; i < values.length; i++) values[i] = i;
  const t = tf.tensor(values, [n]);
  const before = binding.stats();
  const y = tf.add(t, t);
  const mid = binding.stats();
  assert.strictEqual(mid.sharedCreates - before.sharedCreates, 1);
  assert.strictEqual(mid.copiedCreates - before.copiedCreates, 0);

  // Reading an op's result returns TF's own buffer.
  const out = y.dataSync();
  const after = binding.stats();
  assert.strictEqual(after.sharedReads - mid.sharedReads, 1);
  assert.strictEqual(after.copiedReads - mid.copiedReads, 0);
  assert.strictEqual(out[n - 1], 2 * (n - 1));
  assert.strictEqual(out[7], 14);
  // A second read needs no call into the binding.
  assert.strictEqual(y.dataSync(), out);
  assert.strictEqual(binding.stats().sharedReads, after.sharedReads);

  // Values not yet used by an op are read where the user put them.
  const z = tf.tensor(values, [n]);
  assert.strictEqual(z.dataSync(), values);
  tf.dispose([t, y, z]);
});

test('read, readSync, time and memory()', async () => {
  const a = tf.tensor([1, 2, 3]);
  const b = tf.square(a);
  close(await b.data(), [1, 4, 9]);
  close(b.dataSync(), [1, 4, 9]);
  const timing = await tf.time(() => tf.matMul(tf.ones([64, 64]), tf.ones([64, 64])));
  assert.ok(timing.kernelMs >= 0 && timing.wallMs >= 0);
  const m = tf.memory();
  assert.strictEqual(m.unreliable, false);
  assert.ok(m.numBytesInTF > 0);
  assert.ok(m.numNativeTensors > 0);
  tf.dispose([a, b]);
});

test('memory returns to its start after tidy and dispose', () => {
  const warm = tf.tidy(() => tf.sum(tf.mul(tf.ones([8, 8]), 3), 1));
  warm.dispose();
  const start = tf.memory();
  const startIds = backend().numDataIds();
  const kept = tf.tidy(() => {
    const x = tf.ones([8, 8]);
    const y = tf.mul(x, 3);
    const z = tf.sum(y, 1);
    tf.conv2d(tf.ones([1, 5, 5, 2]), tf.ones([3, 3, 2, 4]), 1, 'same');
    return z;
  });
  assert.strictEqual(tf.memory().numTensors, start.numTensors + 1);
  kept.dispose();
  const end = tf.memory();
  assert.strictEqual(end.numTensors, start.numTensors);
  assert.strictEqual(end.numBytes, start.numBytes);
  assert.strictEqual(end.numDataBuffers, start.numDataBuffers);
  assert.strictEqual(end.numBytesInTF, start.numBytesInTF);
  assert.strictEqual(end.numNativeTensors, start.numNativeTensors);
  assert.strictEqual(backend().numDataIds(), startIds);
});

test('the live native tensor count is back where it started after 10k ops', () => {
  const x = tf.tensor2d([[1, 2], [3, 4]]);
  const step = () => tf.tidy(() => {
    let y = tf.add(x, 1);
    y = tf.matMul(y, x);
    y = tf.relu(tf.sub(y, 5));
    y = tf.sum(y, 0);
    y = tf.concat([y, y]);
    return tf.reshape(tf.transpose(tf.reshape(y, [2, 2])), [4]);
  });
  step().dispose();  // warm the constant cache
  const start = binding.stats().liveTensors;
  for (let i = 0; i < 10000 / 8; i++) step().dispose();
  assert.strictEqual(binding.stats().liveTensors, start);
  x.dispose();
});

test('misuse gives tfjs errors, not crashes', () => {
  const a = tf.tensor2d([[1, 2], [3, 4]]);
  // Incompatible shapes.
  assert.throws(() => tf.matMul(a, tf.ones([3, 2])), Error);
  assert.throws(() => tf.add(tf.ones([2, 3]), tf.ones([4, 5])), Error);
  // Wrong dtypes.
  assert.throws(() => tf.matMul(tf.tensor(['a']), tf.tensor(['b'])), Error);
  assert.throws(() => tf.conv2d(tf.ones([1, 3, 3, 1], 'int32'), tf.ones([2, 2, 1, 1]), 1, 'same'),
                Error);
  // Disposed tensors.
  const d = tf.ones([2]);
  d.dispose();
  assert.throws(() => tf.add(d, 1), /disposed/);
  // Unsupported attribute values.
  assert.throws(() => tf.conv2d(tf.ones([1, 3, 3, 1]), tf.ones([2, 2, 1, 1]), 1, 'bogus'),
                Error);
  assert.throws(() => tf.maxPool(tf.ones([1, 3, 3, 1]), 2, 1, 'same', 'sideways'), Error);
  assert.throws(() => tf.gather(tf.ones([3]), tf.tensor1d([5], 'int32')),
                /index value 5 is not in \[0, 2\]/);
  assert.throws(() => tf.reshape(a, [3]), Error);
  // TF's own refusals keep their code.
  try {
    backend().run1('AddV2', [], [a, tf.ones([3])]);
    assert.fail('expected a throw');
  } catch (e) {
    assert.strictEqual(e.code, 'INVALID_ARGUMENT');
    assert.strictEqual(e.op, 'AddV2');
  }
  // The backend still works afterwards.
  close(tf.add(a, 1).dataSync(), [2, 3, 4, 5]);
});

test('a kernel beyond tfjs-node: searchSorted, bitwiseAnd, denseBincount', async () => {
  const s = tf.searchSorted([1, 3, 5, 7], [0, 3, 6, 9], 'left');
  assert.deepStrictEqual(Array.from(await s.data()), [0, 1, 3, 4]);
  const u = tf.upperBound([1, 3, 5, 7], [3]);
  assert.deepStrictEqual(Array.from(await u.data()), [2]);
  const ba = tf.bitwiseAnd(tf.tensor1d([12, 10], 'int32'), tf.tensor1d([10, 6], 'int32'));
  assert.deepStrictEqual(Array.from(await ba.data()), [8, 2]);
  const db = tf.denseBincount(tf.tensor1d([1, 1, 3], 'int32'), tf.tensor1d([], 'float32'), 4);
  close(await db.data(), [0, 2, 0, 1]);
  const {result, indexes} =
      tf.maxPoolWithArgmax(tf.tensor4d([1, 5, 3, 2], [1, 2, 2, 1]), 2, 1, 'valid');
  close(await result.data(), [5]);
  assert.deepStrictEqual(Array.from(await indexes.data()), [1]);
  // (tfjs rotates about (width, height) * center, pixel corners, not centers.)
  const image = tf.tensor4d([...Array(24).keys()], [1, 3, 4, 2]);
  close(await tf.image.rotateWithOffset(image, Math.PI).data(),
        [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 22, 23, 20, 21, 18, 19, 0, 0, 14, 15, 12, 13, 10, 11]);
  close(await tf.image.rotateWithOffset(image, 1.3, [1, 2], [0.3, 0.6]).data(),
        [6, 7, 14, 15, 22, 23, 1, 2, 4, 5, 12, 13, 20, 21, 1, 2, 10, 11, 18, 19, 1, 2, 1, 2]);
});

test('a reshape is a new tensor over the same native tensor, made native only when needed', () => {
  const x = tf.tensor2d([[1, 2, 3], [4, 5, 6]]);
  const eye = tf.tensor2d([[1, 0], [0, 1]]);
  tf.add(x, 0).dispose();  // upload x and eye, and cache transpose's perm
  tf.add(eye, 0).dispose();
  tf.tidy(() => tf.transpose(tf.add(tf.ones([3, 2]), 0)));
  // While runs are deferred, a view an op needs is made by TF's Reshape op, whose shape is a
  // cached constant: cache it too.
  tf.tidy(() => tf.transpose(tf.reshape(tf.add(x, 0), [3, 2])));
  const live = binding.stats().liveTensors;
  const y = tf.reshape(x, [3, 2]);
  const z = tf.reshape(y, [1, 2, 3]);
  assert.strictEqual(binding.stats().liveTensors, live, 'no native tensor per reshape');
  x.dispose();
  close(z.dataSync(), [1, 2, 3, 4, 5, 6]);
  // An op on the [3, 2] view sees that shape, and the view outlives its source.
  const t = tf.transpose(y);
  assert.deepStrictEqual(t.shape, [2, 3]);
  close(t.dataSync(), [1, 3, 5, 2, 4, 6]);
  // matMul re-views its operands as 3-D and the result back as 2-D without native reshapes.
  const p = tf.matMul(y, eye);
  assert.deepStrictEqual(p.shape, [3, 2]);
  close(p.dataSync(), [1, 2, 3, 4, 5, 6]);
  tf.dispose([y, z, t, p, eye]);
  assert.strictEqual(binding.stats().liveTensors, live - 2,
                     'x\'s native tensor is freed with its last view');
});

test('equal scalars share one native constant, which outlives the cache', () => {
  const before = binding.stats().liveTensors;
  const xs = [];
  for (let i = 0; i < 50; i++) xs.push(tf.add(tf.scalar(0.25), tf.scalar(0.5)));
  const made = binding.stats().liveTensors - before;
  assert.ok(made <= 52, `${made} native tensors for 50 sums of two shared scalars`);
  for (const x of xs) close(x.dataSync(), [0.75]);
  // Writing into one's data does not change the others (nor the cached constant).
  xs[0].dataSync()[0] = 100;
  const a = tf.scalar(0.25);
  tf.add(a, 1).dispose();  // uploaded: a now shares the cached constant 0.25
  a.dataSync()[0] = 7;
  close(xs[1].dataSync(), [0.75]);
  close(tf.add(tf.scalar(0.25), tf.scalar(0.5)).dataSync(), [0.75]);
  a.dispose();
  // -0 and 0 are different constants.
  assert.strictEqual(tf.div(1, tf.scalar(-0)).dataSync()[0], -Infinity);
  assert.strictEqual(tf.div(1, tf.scalar(0)).dataSync()[0], Infinity);
  tf.dispose(xs);
});

test('one-channel convolutions and tiling max pools (own fast paths) match the cpu backend', async () => {
  const cases = (t) => {
    const out = [];
    for (const f of [1, 2, 4, 8]) {
      const x = t.tensor4d(Array.from({length: 2 * 9 * 9}, (_, i) => Math.sin(i)), [2, 9, 9, 1]);
      const w = t.tensor4d(Array.from({length: 9 * f}, (_, i) => Math.cos(i)), [3, 3, 1, f]);
      for (const [stride, pad] of [[1, 'valid'], [2, 'same'], [1, 'same']]) {
        out.push(t.conv2d(x, w, stride, pad));
        out.push(t.grad((ww) => t.conv2d(x, ww, stride, pad).sum())(w));
        out.push(t.grad((xx) => t.conv2d(xx, w, stride, pad).sum())(x));
      }
    }
    for (const c of [1, 2, 3]) {
      const x = t.tensor4d(Array.from({length: 2 * 8 * 6 * c}, (_, i) => Math.sin(i * 7)),
                           [2, 8, 6, c]);
      out.push(t.maxPool(x, 2, 2, 'valid'), t.maxPool(x, [4, 3], [4, 3], 'valid'),
               t.maxPool(x, 3, 3, 'valid'), t.maxPool(x, 2, 2, 'same'));
      out.push(t.grad((xx) => t.maxPool(xx, 2, 2, 'valid').sum())(x));
    }
    return out.map((o) => ({shape: o.shape, values: Array.from(o.dataSync())}));
  };
  const ours = tf.tidy(() => cases(tf));
  await tf.setBackend('cpu');
  try {
    const reference = tf.tidy(() => cases(tf));
    reference.forEach((r, i) => {
      assert.deepStrictEqual(ours[i].shape, r.shape, `case ${i} shape`);
      close(ours[i].values, r.values, 1e-4);
    });
  } finally {
    await tf.setBackend('tensorflow');
  }
});

test('convolutions whose output is empty give the empty output and zero gradients, as the cpu backend', async () => {
  const cases = (t) => {
    const ones = (shape) => t.ones(shape);
    const out = [
      t.conv2d(ones([1, 10, 2, 3]), ones([3, 3, 3, 8]), 1, 'valid'),
      t.conv2d(ones([1, 3, 10, 2]), ones([3, 3, 3, 8]), 1, 'valid', 'NCHW'),
      t.conv2d(ones([0, 10, 5, 3]), ones([3, 3, 3, 8]), 1, 'valid'),
      t.depthwiseConv2d(ones([1, 10, 2, 3]), ones([3, 3, 3, 2]), 1, 'valid'),
      t.fused.conv2d({x: ones([1, 10, 2, 3]), filter: ones([3, 3, 3, 8]), strides: 1, pad: 'valid', bias: ones([8]), activation: 'relu'}),
      t.fused.depthwiseConv2d({x: ones([1, 10, 2, 3]), filter: ones([3, 3, 3, 2]), strides: 1, pad: 'valid', bias: ones([6])}),
      t.conv3d(ones([1, 4, 10, 2, 3]), ones([3, 3, 3, 3, 8]), 1, 'valid'),
      // Gradients through an empty output: zeros of the input's and the filter's shapes (TF's
      // aarch64 kernels return memory never written for them).
      ...t.grads((x, w) => t.conv2d(x, w, 1, 'valid').sum())([ones([1, 10, 2, 3]), ones([3, 3, 3, 8])]),
      ...t.grads((x, w) => t.depthwiseConv2d(x, w, 1, 'valid').sum())([ones([1, 10, 2, 3]), ones([3, 3, 3, 2])]),
      ...t.grads((x, w) => t.conv3d(x, w, 1, 'valid').sum())([ones([1, 4, 10, 2, 3]), ones([3, 3, 3, 3, 8])]),
    ];
    return out.map((o) => ({shape: o.shape, values: Array.from(o.dataSync())}));
  };
  const ours = tf.tidy(() => cases(tf));
  await tf.setBackend('cpu');
  try {
    assert.deepStrictEqual(ours, tf.tidy(() => cases(tf)));
  } finally {
    await tf.setBackend('tensorflow');
  }
});

test('step (relu\'s gradient, computed as Relu(Sign(x))) keeps tfjs\'s values at NaN, ±0 and ±Inf', () => {
  const x = tf.tensor1d([NaN, -0, 0, Infinity, -Infinity, -2, 3.5]);
  const got = Array.from(tf.step(x).dataSync());
  assert.ok(Number.isNaN(got[0]));
  assert.deepStrictEqual(got.slice(1), [0, 0, 1, 0, 0, 1]);
  assert.ok(!Object.is(got[1], -0), 'step(-0) is +0');
  close(tf.step(x, 0.5).dataSync(), [NaN, 0.5, 0.5, 1, 0.5, 0.5, 1]);
  assert.deepStrictEqual(Array.from(tf.step(tf.tensor1d([-3, 0, 4], 'int32')).dataSync()), [0, 0, 1]);
  const g = tf.grad((v) => tf.relu(v).sum())(tf.tensor1d([-1, 0, 2]));
  assert.deepStrictEqual(Array.from(g.dataSync()), [0, 0, 1]);
  tf.dispose([x, g]);
});
