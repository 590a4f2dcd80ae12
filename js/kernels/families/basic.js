'use strict';
// Hand-written basic kernels: data movement without TF (Identity, Reshape of
// values not yet uploaded), Cast, Range (tfjs semantics), Concat (N >= 2 in
// TF), Split (Split or SplitV by the sizes), and element-wise ops whose tfjs
// semantics differ from TF's op (Abs of complex, Sign and Step with NaN,
// Prelu, string comparisons, FloorDiv).

const tfc = require('@tensorflow/tfjs-core');
const {A, cachedAttrs, withTemps, identity, binary, unary, reshape} = require('./common');
const {sizeOf} = require('../../backend/dtypes');

function Identity({inputs, backend}) {
  return identity(backend, inputs.x);
}

function Reshape({inputs, attrs, backend}) {
  const {x} = inputs;
  const size = sizeOf(x.shape);
  const shape = tfc.util.inferFromImplicitShape(attrs.shape, size);
  if (sizeOf(shape) !== size) {
    throw new Error(`The new shape (${shape}) has ${sizeOf(shape)} elements ` +
                    `and the old shape (${x.shape}) has ${size} elements. ` +
                    'The new shape and old shape must have the same number of elements.');
  }
  if (x.dtype === 'string') return backend.wrap(reshape(backend, x, shape));
  // Values not uploaded yet are uploaded here, once: a weight that tfjs's matMul reshapes on
  // every call (to 3-D) reaches TF once, not once per call.
  return backend.reshapeLazily(x, shape);
}

function Cast({inputs, attrs, backend}) {
  const {x} = inputs;
  const to = attrs.dtype;
  if (to === x.dtype) return identity(backend, x);
  if (to === 'string' || x.dtype === 'string') {
    throw new Error(`Cannot cast ${x.dtype} to ${to}`);
  }
  return backend.wrap(backend.cast(x, to));
}

/** tf.range, with tfjs's rules (empty ranges, a sign-flipped unit step). */
function Range({attrs, backend}) {
  const {start, stop, dtype} = attrs;
  let {step} = attrs;
  const empty = start === stop || (start < stop && step < 0) ||
      (stop < start && step > 1);
  const n = empty ? 0 : Math.abs(Math.ceil((stop - start) / step));
  const values = backend.alloc(dtype, n);
  if (stop < start && step === 1) step = -1;
  if (n > 0) values[0] = start;
  for (let i = 1; i < n; i++) values[i] = values[i - 1] + step;
  return backend.makeTensorInfo([n], dtype, values);
}

function Concat({inputs, attrs, backend}) {
  const list = Array.isArray(inputs) ? inputs : Object.values(inputs);
  const axis = tfc.util.parseAxisParam(attrs.axis, list[0].shape)[0];
  tfc.backend_util.assertParamsConsistent(list.map(t => t.shape), axis);
  const outShape = tfc.backend_util.computeOutShape(list.map(t => t.shape), axis);
  const nonEmpty = list.filter(t => sizeOf(t.shape) > 0);
  if (sizeOf(outShape) === 0 || nonEmpty.length === 0) {
    return backend.makeTensorInfo(outShape, list[0].dtype,
                                  backend.alloc(list[0].dtype, 0));
  }
  if (nonEmpty.length === 1) return identity(backend, nonEmpty[0]);
  const dtype = list.reduce((d, t) => tfc.backend_util.upcastType(d, t.dtype),
                            list[0].dtype);
  return withTemps(backend, (temps) => {
    const ins = nonEmpty.map((t) => {
      if (t.dtype === dtype) return t;
      const c = backend.cast(t, dtype);
      temps.push(c);
      return c;
    });
    const attrList = [A.int('N', ins.length), A.type('T', dtype),
                      A.type('Tidx', 'int32')];
    return backend.op('ConcatV2', attrList, [...ins, backend.scalar(axis, 'int32')]);
  });
}

function Abs({inputs, backend}) {
  const {x} = inputs;
  if (x.dtype === 'complex64') {
    return backend.op('ComplexAbs', [A.type('T', 'complex64'),
                                     A.type('Tout', 'float32')], [x]);
  }
  if (x.dtype === 'bool') {
    return identity(backend, x);
  }
  return backend.op('Abs', [A.type('T', x.dtype)], [x]);
}

/** sign(NaN) is 0 in tfjs (TF's Sign gives NaN). */
function Sign({inputs, backend}) {
  const {x} = inputs;
  if (x.dtype !== 'float32') {
    if (x.dtype === 'bool') return identity(backend, x);
    return backend.op('Sign', [A.type('T', x.dtype)], [x]);
  }
  return withTemps(backend, (temps) => {
    const s = unary(backend, 'Sign', x);
    temps.push(s);
    const nan = backend.run1('IsNan', [A.type('T', 'float32')], [x]);
    temps.push(nan);
    return backend.op('SelectV2', [A.type('T', 'float32')],
                      [nan, backend.scalar(0, 'float32'), s]);
  });
}

/** step(x) = x > 0 ? 1 : alpha, NaN stays NaN. */
function Step({inputs, attrs, backend}) {
  const {x} = inputs;
  const dt = x.dtype;
  if (attrs.alpha === 0 && (dt === 'float32' || dt === 'int32')) {
    // relu's gradient: TF's Sign keeps NaN (and maps -0 to 0), Relu then zeroes the -1s. Two
    // element-wise passes instead of four (the general case below).
    return withTemps(backend, (temps) => {
      const sign = unary(backend, 'Sign', x);
      temps.push(sign);
      return backend.wrap(unary(backend, 'Relu', sign));
    });
  }
  return withTemps(backend, (temps) => {
    const pos = backend.run1('Greater', [A.type('T', dt)], [x, backend.scalar(0, dt)]);
    temps.push(pos);
    const step = backend.run1('SelectV2', [A.type('T', dt)],
                              [pos, backend.scalar(1, dt), backend.scalar(attrs.alpha, dt)]);
    if (dt !== 'float32') return backend.wrap(step);
    temps.push(step);
    const nan = backend.run1('IsNan', [A.type('T', dt)], [x]);
    temps.push(nan);
    return backend.op('SelectV2', [A.type('T', dt)], [nan, x, step]);
  });
}

/** prelu(x, alpha) = x > 0 ? x : alpha * x. */
function Prelu({inputs, backend}) {
  const dt = tfc.backend_util.upcastType(inputs.x.dtype, inputs.alpha.dtype);
  return withTemps(backend, (temps) => {
    const [x, alpha] = [inputs.x, inputs.alpha].map((t) => {
      if (t.dtype === dt) return t;
      const c = backend.cast(t, dt);
      temps.push(c);
      return c;
    });
    const pos = backend.run1('Greater', [A.type('T', dt)], [x, backend.scalar(0, dt)]);
    temps.push(pos);
    const neg = binary(backend, 'Mul', alpha, x);
    temps.push(neg);
    return backend.op('SelectV2', [A.type('T', dt)], [pos, x, neg]);
  });
}

/** tfjs's floorDiv gives int32 for int32 inputs and floor(a / b) otherwise. */
function FloorDiv({inputs, backend}) {
  const {a, b} = inputs;
  const dt = tfc.backend_util.upcastType(a.dtype, b.dtype);
  return withTemps(backend, (temps) => {
    const ins = [a, b].map((t) => {
      if (t.dtype === dt) return t;
      const c = backend.cast(t, dt);
      temps.push(c);
      return c;
    });
    if (dt === 'bool') {
      const ca = backend.cast(ins[0], 'int32');
      temps.push(ca);
      const cb = backend.cast(ins[1], 'int32');
      temps.push(cb);
      return backend.op('FloorDiv', [A.type('T', 'int32')], [ca, cb]);
    }
    return backend.op('FloorDiv', [A.type('T', dt)], ins);
  });
}

/** Greater & co.: TF's comparison ops lack strings; compare bytes in JS. */
function comparison(kernelName, test) {
  return function({inputs, backend}) {
    const {a, b} = inputs;
    if (a.dtype === 'string' || b.dtype === 'string') {
      return compareStrings(backend, a, b, test);
    }
    const dt = tfc.backend_util.upcastType(a.dtype, b.dtype);
    return withTemps(backend, (temps) => {
      const ins = [a, b].map((t) => {
        const want = dt === 'bool' ? 'int32' : dt;
        if (t.dtype === want) return t;
        const c = backend.cast(t, want);
        temps.push(c);
        return c;
      });
      return backend.op(kernelName, [A.type('T', ins[0].dtype)], ins);
    });
  };
}

function compareBytes(x, y) {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}

function compareStrings(backend, a, b, test) {
  const outShape = tfc.backend_util.assertAndGetBroadcastShape(a.shape, b.shape);
  const av = backend.readSync(a.dataId);
  const bv = backend.readSync(b.dataId);
  const size = sizeOf(outShape);
  const out = backend.alloc('bool', size);
  const rank = outShape.length;
  const aStrides = tfc.util.computeStrides(a.shape);
  const bStrides = tfc.util.computeStrides(b.shape);
  const oStrides = tfc.util.computeStrides(outShape);
  const aBroadcast = tfc.backend_util.getBroadcastDims(a.shape, outShape);
  const bBroadcast = tfc.backend_util.getBroadcastDims(b.shape, outShape);
  for (let i = 0; i < size; i++) {
    const loc = tfc.util.indexToLoc(i, rank, oStrides);
    const aLoc = loc.slice(-a.shape.length);
    aBroadcast.forEach(d => aLoc[d] = 0);
    const bLoc = loc.slice(-b.shape.length);
    bBroadcast.forEach(d => bLoc[d] = 0);
    const ai = tfc.util.locToIndex(aLoc, a.shape.length, aStrides);
    const bi = tfc.util.locToIndex(bLoc, b.shape.length, bStrides);
    out[i] = test(compareBytes(av[ai], bv[bi])) ? 1 : 0;
  }
  return backend.makeTensorInfo(outShape, 'bool', out);
}

/** Split's attrs, one array per (dtype, count). */
const splitAttrsByKey = new Map();
function splitAttrs(dtype, count) {
  return cachedAttrs(splitAttrsByKey, dtype + '|' + count,
                     () => [A.type('T', dtype), A.int('num_split', count)]);
}

/**
 * tfjs's split. An even split runs on TF's Split, which measured 8 µs where SplitV took 11 (an
 * RNN cell splits its gates on every step); uneven sizes take SplitV.
 */
function SplitV({inputs, attrs, backend}) {
  const {x} = inputs;
  const axis = tfc.util.parseAxisParam(attrs.axis, x.shape)[0];
  const sizes = tfc.backend_util.prepareSplitSize(x, attrs.numOrSizeSplits, axis);
  const count = sizes.length;
  const axisId = backend.scalar(axis, 'int32');
  const outs = sizes.every((size) => size === sizes[0]) ?
      backend.exec('Split', splitAttrs(x.dtype, count), [axisId, backend.idOf(x)], count) :
      backend.exec('SplitV', [
        A.type('T', x.dtype), A.type('Tlen', 'int32'), A.int('num_split', count),
      ], [backend.idOf(x), backend.vec(sizes), axisId], count);
  return outs.map((out) => backend.wrap(out));
}

const KERNELS = [
  {kernelName: 'Identity', kernelFunc: Identity},
  {kernelName: 'SplitV', kernelFunc: SplitV},
  {kernelName: 'Reshape', kernelFunc: Reshape},
  {kernelName: 'Cast', kernelFunc: Cast},
  {kernelName: 'Range', kernelFunc: Range},
  {kernelName: 'Concat', kernelFunc: Concat},
  {kernelName: 'Abs', kernelFunc: Abs},
  {kernelName: 'Sign', kernelFunc: Sign},
  {kernelName: 'Step', kernelFunc: Step},
  {kernelName: 'Prelu', kernelFunc: Prelu},
  {kernelName: 'FloorDiv', kernelFunc: FloorDiv},
  {kernelName: 'Greater', kernelFunc: comparison('Greater', c => c > 0)},
  {kernelName: 'GreaterEqual', kernelFunc: comparison('GreaterEqual', c => c >= 0)},
  {kernelName: 'Less', kernelFunc: comparison('Less', c => c < 0)},
  {kernelName: 'LessEqual', kernelFunc: comparison('LessEqual', c => c <= 0)},
];

module.exports = {KERNELS};
