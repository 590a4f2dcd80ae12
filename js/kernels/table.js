'use strict';
// The kernel table: tfjs kernels that map onto one TF op with attributes.
//
// A row: {kernel, op (default: kernel), inputs, attrs, ...options}
//   inputs  tfjs input names in the TF op's order ('x', 'a', ...), `list()`
//           for list inputs, or constant tensors made from tfjs attrs
//           (`fromAttr('axis')`) or from values (`constant(...)`).
//   attrs   {TF attr name: source}; see spec.js.
// Options:
//   outputs      number of TF outputs (or fn(attrs, inputs)) when not 1;
//                all are returned unless `keep` says which.
//   keep         index (or list of indices) of the outputs returned; the
//                others are freed.
//   opFor        {dtype: op} to run another op for some input dtype.
//   computeAs    {dtype: dtype}: the op lacks a kernel for some input dtypes,
//                so such inputs are cast (e.g. bool -> int32) and the result
//                is cast back to the input's dtype (what tfjs's cpu backend
//                returns), unless `resultDtype`. It applies to the upcast
//                inputs of the row, else to the first input.
//   floatOnly    computeAs {int32: 'float32', bool: 'float32'}.
//   resultDtype  the dtype a computeAs row's result keeps ('float32', 'bool').
//
// Hand-written kernels (families/*.js) are for mappings that need logic.

const tfc = require('@tensorflow/tfjs-core');
const {
  dtype, upcast, type, int, bool, attr, computed, count, list, fromAttr,
  constant,
} = require('./spec');

// ------------------------------------------------------------ converters

const toArray = (v) => (Array.isArray(v) ? v : [v]);

/** Reduction axes: null/undefined means all axes of input 0. */
const axes = (v, attrs, inputs) => {
  if (v == null) return inputs[0].shape.map((_, i) => i);
  return toArray(v);
};

const upper = (v) => String(v).toUpperCase();

const normAxis = (axis, rank) => (axis < 0 ? axis + rank : axis);

/**
 * Slice begin/size made full-rank and explicit, like tfjs does; a size that runs to the end of
 * its dim is -1 (TF's "the rest"), so that a slice of whole dims (tfjs-layers' predict slices
 * its one batch) does not depend on their sizes, and a call's graph serves any (call_graphs.js).
 */
const sliceBegin = (v, attrs, inputs) =>
    tfc.slice_util.parseSliceParams(inputs[0], attrs.begin, attrs.size)[0];
const sliceSize = (v, attrs, [x]) => {
  const [begin, size] = tfc.slice_util.parseSliceParams(x, attrs.begin, attrs.size);
  return size.map((n, i) => begin[i] + n === x.shape[i] ? -1 : n);
};

const ones = (v, attrs) => v || attrs.begin.map(() => 1);

const attrDtype = (key, dflt) => (attrs) => attrs[key] || dflt;

// ---------------------------------------------------------------- rows

const T = dtype(0);

/** TF's op lacks bool: compute bools as int32, the result back to bool. */
const BOOL_AS_INT = {computeAs: {bool: 'int32'}};
/** ... with an int32 result, as tfjs's cumulative sums of bools have. */
const BOOL_SUMS_AS_INT = {computeAs: {bool: 'int32'}, resultDtype: 'int32'};

/** A unary op `T -> T` with the same name in tfjs and TF. */
const unary = (kernel, op, extra) =>
    Object.assign({kernel, op: op || kernel, inputs: ['x'], attrs: {T}}, extra);

/** A float-only unary op; int32/bool inputs are computed in float32. */
const floatUnary = (kernel, op, extra) =>
    unary(kernel, op, Object.assign({floatOnly: true}, extra));

/** A binary op `(T, T) -> T'` with tfjs's upcast of T. */
const binary = (kernel, op, extra) => Object.assign(
    {kernel, op: op || kernel, inputs: ['a', 'b'], attrs: {T: upcast()}}, extra);

/** A reduction with `keep_dims` and an axis input. */
const reduction = (kernel, op, axisKey = 'axis') => ({
  kernel,
  op: op || kernel,
  inputs: ['x', fromAttr(axisKey, 'int32', axes)],
  attrs: {keep_dims: attr('bool', 'keepDims', Boolean), T, Tidx: type('int32')},
});

const ROWS = [
  // ---- unary math
  floatUnary('Acos'), floatUnary('Acosh'), floatUnary('Asin'),
  floatUnary('Asinh'), floatUnary('Atan'), floatUnary('Atanh'),
  floatUnary('Cos'), floatUnary('Cosh'), floatUnary('Sin'), floatUnary('Sinh'),
  floatUnary('Tanh'), floatUnary('Erf'),
  // tan's large arguments lose precision in float32 (tfjs computes in doubles).
  unary('Tan', null, {computeAs: {float32: 'float64', int32: 'float64',
                                  bool: 'float64'}}),
  floatUnary('Exp', null, {resultDtype: 'float32'}),
  floatUnary('Expm1'), floatUnary('Log'), floatUnary('Log1p'),
  floatUnary('Sqrt'), floatUnary('Rsqrt'), floatUnary('Sigmoid'),
  floatUnary('Softplus'), floatUnary('Elu'), floatUnary('Selu'),
  floatUnary('Ceil'), floatUnary('Floor'), floatUnary('Round'),
  floatUnary('IsNan', null, {resultDtype: 'bool'}),
  floatUnary('IsInf', null, {resultDtype: 'bool'}),
  floatUnary('IsFinite', null, {resultDtype: 'bool'}),
  unary('Neg', null, BOOL_AS_INT), unary('Square', null, BOOL_AS_INT),
  unary('Relu', null, BOOL_AS_INT), unary('Relu6', null, BOOL_AS_INT),
  floatUnary('Reciprocal'),
  unary('ZerosLike'), unary('OnesLike'),
  {kernel: 'LogicalNot', inputs: ['x'], attrs: {}},
  {kernel: 'ComplexAbs', inputs: ['x'], attrs: {T, Tout: type('float32')}},
  {kernel: 'Real', inputs: ['input'], attrs: {T, Tout: type('float32')}},
  {kernel: 'Imag', inputs: ['input'], attrs: {T, Tout: type('float32')}},
  {kernel: 'Complex', inputs: ['real', 'imag'],
   attrs: {T, Tout: type('complex64')}},
  {kernel: 'FFT', inputs: ['input'], attrs: {Tcomplex: T}},
  {kernel: 'IFFT', inputs: ['input'], attrs: {Tcomplex: T}},
  {kernel: 'LeakyRelu', inputs: ['x'], floatOnly: true, resultDtype: 'float32',
   attrs: {alpha: attr('float', 'alpha'), T}},
  {kernel: 'EluGrad', inputs: ['dy', 'y'], attrs: {T: upcast()}},
  {kernel: 'Softmax', inputs: ['logits'], attrs: {T}},
  {kernel: 'LogSoftmax', inputs: ['logits'], attrs: {T}},
  {kernel: 'StaticRegexReplace', inputs: ['x'], attrs: {
    pattern: attr('string', 'pattern'),
    rewrite: attr('string', 'rewrite'),
    replace_global: attr('bool', 'replaceGlobal', Boolean),
  }},
  {kernel: 'StringToHashBucketFast', inputs: ['input'],
   attrs: {num_buckets: attr('int', 'numBuckets')}},

  // ---- binary
  binary('Add', 'AddV2', {opFor: {string: 'Add'}, ...BOOL_AS_INT}),
  binary('Sub', null, BOOL_AS_INT),
  binary('Multiply', 'Mul', BOOL_AS_INT),
  binary('RealDiv'),
  binary('Maximum', null, BOOL_AS_INT),
  binary('Minimum', null, BOOL_AS_INT),
  binary('Mod', 'FloorMod', BOOL_AS_INT),
  binary('Pow', null, BOOL_AS_INT),
  binary('SquaredDifference', null, BOOL_AS_INT),
  binary('Atan2', null, {floatOnly: true}),
  binary('Equal', null, {attrs: {T: upcast(),
                                 incompatible_shape_error: bool(true)}}),
  binary('NotEqual', null, {attrs: {T: upcast(),
                                    incompatible_shape_error: bool(true)}}),
  {kernel: 'LogicalAnd', inputs: ['a', 'b'], attrs: {}},
  {kernel: 'LogicalOr', inputs: ['a', 'b'], attrs: {}},
  {kernel: 'BitwiseAnd', inputs: ['a', 'b'], attrs: {T: upcast()}},
  {kernel: 'BroadcastArgs', inputs: ['s0', 's1'], attrs: {T: upcast()}},

  // ---- reductions
  reduction('Sum'), reduction('Prod'),
  Object.assign(reduction('Mean'), {floatOnly: true, resultDtype: 'float32'}),
  Object.assign(reduction('Max', 'Max', 'reductionIndices'), BOOL_AS_INT),
  Object.assign(reduction('Min'), BOOL_AS_INT),
  {kernel: 'All', inputs: ['x', fromAttr('axis', 'int32', axes)],
   attrs: {keep_dims: attr('bool', 'keepDims', Boolean), Tidx: type('int32')}},
  {kernel: 'Any', inputs: ['x', fromAttr('axis', 'int32', axes)],
   attrs: {keep_dims: attr('bool', 'keepDims', Boolean), Tidx: type('int32')}},
  {kernel: 'ArgMax', inputs: ['x', fromAttr('axis')],
   attrs: {T, Tidx: type('int32'), output_type: type('int32')}},
  {kernel: 'ArgMin', inputs: ['x', fromAttr('axis')],
   attrs: {T, Tidx: type('int32'), output_type: type('int32')}},
  {kernel: 'Cumsum', inputs: ['x', fromAttr('axis')], ...BOOL_SUMS_AS_INT, attrs: {
    exclusive: attr('bool', 'exclusive', Boolean),
    reverse: attr('bool', 'reverse', Boolean), T, Tidx: type('int32'),
  }},
  {kernel: 'Cumprod', inputs: ['x', fromAttr('axis')], ...BOOL_SUMS_AS_INT, attrs: {
    exclusive: attr('bool', 'exclusive', Boolean),
    reverse: attr('bool', 'reverse', Boolean), T, Tidx: type('int32'),
  }},

  // ---- shapes and layout
  {kernel: 'ExpandDims', inputs: ['input', fromAttr('dim')],
   attrs: {T, Tdim: type('int32')}},
  {kernel: 'Transpose', inputs: ['x', fromAttr('perm')],
   attrs: {T, Tperm: type('int32')}},
  {kernel: 'Tile', inputs: ['x', fromAttr('reps')],
   attrs: {T, Tmultiples: type('int32')}},
  {kernel: 'Reverse', op: 'ReverseV2',
   inputs: ['x', fromAttr('dims', 'int32',
                          (v, attrs, [x]) => tfc.util.parseAxisParam(v, x.shape))],
   attrs: {Tidx: type('int32'), T}},
  {kernel: 'FlipLeftRight', op: 'ReverseV2', inputs: ['image', constant([2])],
   attrs: {Tidx: type('int32'), T}},
  {kernel: 'Pack', inputs: [list()],
   attrs: {N: count(), T, axis: attr('int', 'axis')}},
  {kernel: 'BroadcastTo', inputs: ['x', fromAttr('shape')],
   attrs: {T, Tidx: type('int32')}},
  {kernel: 'MirrorPad', inputs: ['x', fromAttr('paddings')],
   attrs: {T, Tpaddings: type('int32'), mode: attr('string', 'mode', upper)}},
  {kernel: 'PadV2', inputs: ['x', fromAttr('paddings'),
                             fromAttr('constantValue', dtype(0))],
   attrs: {T, Tpaddings: type('int32')}},
  {kernel: 'SpaceToBatchND',
   inputs: ['x', fromAttr('blockShape'), fromAttr('paddings')],
   attrs: {T, Tblock_shape: type('int32'), Tpaddings: type('int32')}},
  {kernel: 'BatchToSpaceND',
   inputs: ['x', fromAttr('blockShape'), fromAttr('crops')],
   attrs: {T, Tblock_shape: type('int32'), Tcrops: type('int32')}},
  {kernel: 'DepthToSpace', inputs: ['x'], attrs: {
    T, block_size: attr('int', 'blockSize'),
    data_format: attr('string', 'dataFormat'),
  }},
  {kernel: 'ClipByValue', inputs: ['x', fromAttr('clipValueMin', dtype(0)),
                                   fromAttr('clipValueMax', dtype(0))],
   attrs: {T}},
  {kernel: 'Select', op: 'SelectV2', inputs: ['condition', 't', 'e'],
   attrs: {T: upcast(1, 2)}},

  {kernel: 'Unpack', inputs: ['value'],
   outputs: (attrs, [x]) => x.shape[normAxis(attrs.axis, x.shape.length)],
   attrs: {
     num: computed('int', (attrs, [x]) =>
                              x.shape[normAxis(attrs.axis, x.shape.length)]),
     axis: attr('int', 'axis'), T,
   }},
  {kernel: 'Slice', inputs: ['x', fromAttr('begin', 'int32', sliceBegin),
                             fromAttr('size', 'int32', sliceSize)],
   attrs: {T, Index: type('int32')}},
  {kernel: 'StridedSlice', inputs: [
    'x', fromAttr('begin'), fromAttr('end'), fromAttr('strides', 'int32', ones),
  ], attrs: {
    T, Index: type('int32'),
    begin_mask: attr('int', 'beginMask'), end_mask: attr('int', 'endMask'),
    ellipsis_mask: attr('int', 'ellipsisMask'),
    new_axis_mask: attr('int', 'newAxisMask'),
    shrink_axis_mask: attr('int', 'shrinkAxisMask'),
  }},
  {kernel: 'AddN', inputs: [list()], attrs: {N: count(), T: upcast()}},

  // ---- creation
  {kernel: 'Fill', inputs: [fromAttr('shape'),
                            fromAttr('value', attrDtype('dtype', 'float32'))],
   attrs: {T: attr('type', 'dtype', (v) => v || 'float32'),
           index_type: type('int32')}},
  {kernel: 'LinSpace', inputs: [fromAttr('start', 'float32'),
                                fromAttr('stop', 'float32'), fromAttr('num')],
   attrs: {T: type('float32'), Tidx: type('int32')}},
  {kernel: 'OneHot', inputs: [
    'indices', fromAttr('depth'), fromAttr('onValue', attrDtype('dtype', 'int32')),
    fromAttr('offValue', attrDtype('dtype', 'int32')),
  ], attrs: {axis: int(-1), T: attr('type', 'dtype', (v) => v || 'int32'),
             TI: dtype(0)}},
  {kernel: 'Diag', inputs: ['x'], attrs: {T}, computeAs: {bool: 'int32'}},

  // ---- gather / scatter / segments
  {kernel: 'GatherNd', inputs: ['params', 'indices'],
   attrs: {Tparams: dtype(0), Tindices: dtype(1)}},
  {kernel: 'UnsortedSegmentSum',
   inputs: ['x', 'segmentIds', fromAttr('numSegments')],
   attrs: {T, Tindices: dtype(1), Tnumsegments: type('int32')}},
  {kernel: 'SparseSegmentSum', inputs: ['data', 'indices', 'segmentIds'],
   attrs: {T, Tidx: dtype(1), Tsegmentids: dtype(2)}},
  {kernel: 'SparseSegmentMean', inputs: ['data', 'indices', 'segmentIds'],
   attrs: {T, Tidx: dtype(1), Tsegmentids: dtype(2)}, computeAs: {int32: 'float32'}},
  {kernel: 'SparseToDense', inputs: ['sparseIndices', fromAttr('outputShape'),
                                     'sparseValues', 'defaultValue'],
   attrs: {validate_indices: bool(true), T: dtype(1), Tindices: dtype(0)}},
  {kernel: 'Bincount', inputs: ['x', fromAttr('size'), 'weights'],
   attrs: {T: dtype(1)}},
  {kernel: 'DenseBincount', inputs: ['x', fromAttr('size'), 'weights'], attrs: {
    Tidx: dtype(0), T: dtype(1),
    binary_output: attr('bool', 'binaryOutput', Boolean),
  }},
  {kernel: 'MatrixBandPart', inputs: ['input', 'numLower', 'numUpper'],
   attrs: {T, Tindex: dtype(1)}},

  // ---- nn
  {kernel: 'LRN', inputs: ['x'], attrs: {
    depth_radius: attr('int', 'depthRadius'), bias: attr('float', 'bias'),
    alpha: attr('float', 'alpha'), beta: attr('float', 'beta'), T,
  }},
  {kernel: 'LRNGrad', inputs: ['dy', 'x', 'y'], attrs: {
    depth_radius: attr('int', 'depthRadius'), bias: attr('float', 'bias'),
    alpha: attr('float', 'alpha'), beta: attr('float', 'beta'), T,
  }},
  {kernel: 'TopK', op: 'TopKV2', inputs: ['x', fromAttr('k')], outputs: 2,
   attrs: {sorted: attr('bool', 'sorted', (v) => v !== false), T,
           index_type: type('int32')}},

  // ---- images
  {kernel: 'ResizeBilinear', inputs: ['images', fromAttr('size')], attrs: {
    T, align_corners: attr('bool', 'alignCorners', Boolean),
    half_pixel_centers: attr('bool', 'halfPixelCenters', Boolean),
  }},
  {kernel: 'ResizeBilinearGrad', inputs: ['dy', 'images'], attrs: {
    T: dtype(1), align_corners: attr('bool', 'alignCorners', Boolean),
    half_pixel_centers: attr('bool', 'halfPixelCenters', Boolean),
  }},
  {kernel: 'ResizeNearestNeighbor', inputs: ['images', fromAttr('size')], attrs: {
    T, align_corners: attr('bool', 'alignCorners', Boolean),
    half_pixel_centers: attr('bool', 'halfPixelCenters', Boolean),
  }},
  {kernel: 'CropAndResize',
   inputs: ['image', 'boxes', 'boxInd', fromAttr('cropSize')], attrs: {
     T, method: attr('string', 'method'),
     extrapolation_value: attr('float', 'extrapolationValue'),
   }},
  {kernel: 'NonMaxSuppressionV3', inputs: [
    'boxes', 'scores', fromAttr('maxOutputSize'),
    fromAttr('iouThreshold', 'float32'), fromAttr('scoreThreshold', 'float32'),
  ], attrs: {T, T_threshold: type('float32')}},
  {kernel: 'NonMaxSuppressionV4', inputs: [
    'boxes', 'scores', fromAttr('maxOutputSize'),
    fromAttr('iouThreshold', 'float32'), fromAttr('scoreThreshold', 'float32'),
  ], outputs: 2, attrs: {
    T, T_threshold: type('float32'),
    pad_to_max_output_size: attr('bool', 'padToMaxOutputSize', Boolean),
  }},
  {kernel: 'NonMaxSuppressionV5', inputs: [
    'boxes', 'scores', fromAttr('maxOutputSize'),
    fromAttr('iouThreshold', 'float32'), fromAttr('scoreThreshold', 'float32'),
    fromAttr('softNmsSigma', 'float32'),
  ], outputs: 3, keep: [0, 1], attrs: {T, pad_to_max_output_size: bool(false)}},

  // ---- strings
  {kernel: 'StringNGrams', inputs: ['data', 'dataSplits'], outputs: 2, attrs: {
    separator: attr('string', 'separator'),
    ngram_widths: attr('int', 'nGramWidths'),
    left_pad: attr('string', 'leftPad'), right_pad: attr('string', 'rightPad'),
    pad_width: attr('int', 'padWidth'),
    preserve_short_sequences: attr('bool', 'preserveShortSequences', Boolean),
    Tsplits: dtype(1),
  }},
];

module.exports = {ROWS};
