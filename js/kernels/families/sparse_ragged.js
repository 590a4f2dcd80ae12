'use strict';
// Sparse, ragged and string-splitting kernels: their TF ops take int64
// index/shape inputs (cast from tfjs's int32 here) and some take list inputs
// under a named key; int64 results come back as int32 (backend core).

const {A, withTemps} = require('./common');

function asInt64(b, t, temps) {
  const c = b.cast(t, 'int64');  // a raw int64 tensor, as TF's op wants
  temps.push(c);
  return c;
}

function wrapAll(b, outs) {
  return outs.map(o => b.wrap(o));
}

function SparseFillEmptyRows({inputs, backend: b}) {
  const {indices, values, denseShape, defaultValue} = inputs;
  return withTemps(b, (temps) => wrapAll(b, b.run(
      'SparseFillEmptyRows', [A.type('T', values.dtype)],
      [asInt64(b, indices, temps), values, asInt64(b, denseShape, temps),
       defaultValue], 4)));
}

function SparseReshape({inputs, backend: b}) {
  const {inputIndices, inputShape, newShape} = inputs;
  return withTemps(b, (temps) => wrapAll(b, b.run(
      'SparseReshape', [],
      [asInt64(b, inputIndices, temps), asInt64(b, inputShape, temps),
       asInt64(b, newShape, temps)], 2)));
}

function RaggedGather({inputs, attrs, backend: b}) {
  const {paramsNestedSplits, paramsDenseValues, indices} = inputs;
  const splits = paramsNestedSplits;
  return wrapAll(b, b.run('RaggedGather', [
    A.type('Tvalues', paramsDenseValues.dtype), A.type('Tindices', indices.dtype),
    A.type('Tsplits', 'int32'), A.int('PARAMS_RAGGED_RANK', splits.length),
    A.int('OUTPUT_RAGGED_RANK', attrs.outputRaggedRank),
  ], [...splits, paramsDenseValues, indices], attrs.outputRaggedRank + 1));
}

function RaggedRange({inputs, backend: b}) {
  const {starts, limits, deltas} = inputs;
  return wrapAll(b, b.run('RaggedRange', [
    A.type('T', starts.dtype), A.type('Tsplits', 'int32'),
  ], [starts, limits, deltas], 2));
}

function RaggedTensorToTensor({inputs, attrs, backend: b}) {
  const {shape, values, defaultValue, rowPartitionTensors} = inputs;
  return b.op('RaggedTensorToTensor', [
    A.type('T', values.dtype), A.type('Tindex', 'int32'), A.type('Tshape', shape.dtype),
    A.int('num_row_partition_tensors', rowPartitionTensors.length),
    A.strs('row_partition_types', attrs.rowPartitionTypes),
  ], [shape, values, defaultValue, ...rowPartitionTensors]);
}

function StringSplit({inputs, attrs, backend: b}) {
  const {input, delimiter} = inputs;
  return wrapAll(b, b.run('StringSplit', [A.bool('skip_empty', attrs.skipEmpty)],
                          [input, delimiter], 3));
}

const KERNELS = [
  {kernelName: 'SparseFillEmptyRows', kernelFunc: SparseFillEmptyRows},
  {kernelName: 'SparseReshape', kernelFunc: SparseReshape},
  {kernelName: 'RaggedGather', kernelFunc: RaggedGather},
  {kernelName: 'RaggedRange', kernelFunc: RaggedRange},
  {kernelName: 'RaggedTensorToTensor', kernelFunc: RaggedTensorToTensor},
  {kernelName: 'StringSplit', kernelFunc: StringSplit},
];

module.exports = {KERNELS};
