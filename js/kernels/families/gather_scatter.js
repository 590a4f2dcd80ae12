'use strict';
// Gather / scatter / unique kernels with tfjs's validation and semantics:
// tfjs's messages for bad gather arguments, 1-D scatter indices meaning one
// index per row (TF reads them as one N-D index), and unique() treating NaNs
// as equal (TF's Unique keeps every NaN).

const tfc = require('@tensorflow/tfjs-core');
const {A, withTemps, reshape} = require('./common');
const {sizeOf} = require('../../backend/dtypes');

function GatherV2({inputs, attrs, backend: b}) {
  const {x, indices} = inputs;
  const axis = tfc.util.parseAxisParam(attrs.axis, x.shape)[0];
  const batchDims = attrs.batchDims || 0;
  tfc.backend_util.segment_util.collectGatherOpShapeInfo(x, indices, axis, batchDims);
  try {
    return b.op('GatherV2', [
      A.int('batch_dims', batchDims), A.type('Tparams', x.dtype),
      A.type('Tindices', indices.dtype), A.type('Taxis', 'int32'),
    ], [x, indices, b.scalar(axis, 'int32')]);
  } catch (e) {
    const m = /indices\[[^\]]*\] = (-?\d+) is not in \[0, (\d+)\)/.exec(e.message);
    if (m) {
      e.message = `GatherV2: the index value ${m[1]} is not in [0, ${Number(m[2]) - 1}]`;
    }
    throw e;
  }
}

/** tfjs reads 1-D indices as one index per update row. */
function indices2D(b, indices, temps) {
  if (indices.shape.length !== 1) return indices;
  const r = reshape(b, indices, [indices.shape[0], 1]);
  temps.push(r);
  return r;
}

function ScatterNd({inputs, attrs, backend: b}) {
  const {indices, updates} = inputs;
  return withTemps(b, (temps) => b.op('ScatterNd', [
    A.type('T', updates.dtype), A.type('Tindices', indices.dtype),
  ], [indices2D(b, indices, temps), updates, b.vec(attrs.shape)]));
}

function TensorScatterUpdate({inputs, backend: b}) {
  const {tensor, indices, updates} = inputs;
  return withTemps(b, (temps) => b.op('TensorScatterUpdate', [
    A.type('T', tensor.dtype), A.type('Tindices', indices.dtype),
  ], [tensor, indices2D(b, indices, temps), updates]));
}

/** unique() of a 1-D float tensor holding NaNs, with NaNs equal, in JS. */
function uniqueWithNaN(b, x, values) {
  const seen = new Map();
  const uniq = [];
  const idx = b.alloc('int32', values.length);
  for (let i = 0; i < values.length; i++) {
    const key = Number.isNaN(values[i]) ? 'NaN' : values[i];
    let k = seen.get(key);
    if (k === undefined) {
      k = uniq.length;
      seen.set(key, k);
      uniq.push(values[i]);
    }
    idx[i] = k;
  }
  const out = b.alloc('float32', uniq.length);
  out.set(uniq);
  return [b.makeTensorInfo([uniq.length], 'float32', out),
          b.makeTensorInfo([values.length], 'int32', idx)];
}

function Unique({inputs, attrs, backend: b}) {
  const {x} = inputs;
  const axis = attrs.axis || 0;
  if (x.dtype === 'float32' && x.shape.length === 1) {
    const values = b.readSync(x.dataId);
    if (values.some(Number.isNaN)) return uniqueWithNaN(b, x, values);
  }
  if (sizeOf(x.shape) === 0) {
    return [b.makeTensorInfo(x.shape, x.dtype, b.alloc(x.dtype, 0)),
            b.makeTensorInfo([0], 'int32', b.alloc('int32', 0))];
  }
  return b.run('UniqueV2', [
    A.type('T', x.dtype), A.type('Taxis', 'int32'), A.type('out_idx', 'int32'),
  ], [x, b.vec([axis])], 2).map(o => b.wrap(o));
}

const KERNELS = [
  {kernelName: 'GatherV2', kernelFunc: GatherV2},
  {kernelName: 'ScatterNd', kernelFunc: ScatterNd},
  {kernelName: 'TensorScatterUpdate', kernelFunc: TensorScatterUpdate},
  {kernelName: 'Unique', kernelFunc: Unique},
];

module.exports = {KERNELS};
