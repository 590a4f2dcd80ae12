'use strict';
// Pooling (2-D and 3-D, max and average) and their gradients.
//
// TF's pools take SAME/VALID (MaxPool also EXPLICIT). tfjs's numeric and
// explicit paddings and rounding modes become: max pool over the input padded
// with -inf (or cropped), VALID; average pool as
// sumPool(pad(x, 0)) / sumPool(pad(ones, 0)), i.e. the mean over the window
// cells inside the input, which is what tfjs computes.

const tfc = require('@tensorflow/tfjs-core');
const {A, withTemps, padOrCrop, reshape, runOwnOp} = require('./common');
const {tfPadding, nonNegative, windowedSize, explicitNHWC, fullPads} = require('./padding');
const {sizeOf} = require('../../backend/dtypes');

function info2D(shape, attrs) {
  return tfc.backend_util.computePool2DInfo(
      shape, attrs.filterSize, attrs.strides, 1, attrs.pad, attrs.dimRoundingMode);
}

function info3D(shape, attrs) {
  return tfc.backend_util.computePool3DInfo(
      shape, attrs.filterSize, attrs.strides, 1, attrs.pad, attrs.dimRoundingMode,
      attrs.dataFormat || 'NDHWC');
}

function windowAttrs(dtype, info, is3D, padding) {
  const ksize = is3D ?
      [1, info.filterDepth, info.filterHeight, info.filterWidth, 1] :
      [1, info.filterHeight, info.filterWidth, 1];
  const strides = is3D ?
      [1, info.strideDepth, info.strideHeight, info.strideWidth, 1] :
      [1, info.strideHeight, info.strideWidth, 1];
  return [A.type('T', dtype), A.ints('ksize', ksize), A.ints('strides', strides),
          A.str('padding', padding), A.str('data_format', is3D ? 'NDHWC' : 'NHWC')];
}

const unpad = (pads) => fullPads(pads.map(([p, q]) => [-p, -q]));

/** Count of in-input cells per window (over a [1, ...spatial, 1] mask). */
function windowCounts(b, info, pads, is3D, temps) {
  const spatial = is3D ? [info.inDepth, info.inHeight, info.inWidth] :
                         [info.inHeight, info.inWidth];
  const ones = b.constant('float32', [1, ...spatial, 1], 1);
  const mask = padOrCrop(b, {id: ones, shape: [1, ...spatial, 1], dtype: 'float32'},
                         fullPads(pads), 0);
  temps.push(mask);
  const c = b.run1(is3D ? 'AvgPool3D' : 'AvgPool',
                   windowAttrs('float32', info, is3D, 'VALID'), [mask]);
  temps.push(c);
  return c;
}

/** TF's MaxPool takes explicit paddings >= 0 and smaller than the window. */
function explicitOk(info, pads, is3D) {
  return !is3D && nonNegative(pads) &&
      pads[0][0] < info.filterHeight && pads[0][1] < info.filterHeight &&
      pads[1][0] < info.filterWidth && pads[1][1] < info.filterWidth;
}

/**
 * Channels up to which a tiling max pool (window = stride, dividing the input) runs faster as a
 * Max over a re-view [n, h/kh, kh, w/kw, kw, c]: TF's MaxPool measured 350 µs on [32,24,24,1]
 * and Max 75 µs; they cross between 2 and 4 channels.
 */
const MAX_TILING_POOL_CHANNELS = 2;

function isTilingPool(info) {
  return info.filterHeight === info.strideHeight && info.filterWidth === info.strideWidth &&
      info.inHeight % info.filterHeight === 0 && info.inWidth % info.filterWidth === 0 &&
      info.padInfo.top === 0 && info.padInfo.left === 0 && info.padInfo.bottom === 0 &&
      info.padInfo.right === 0;
}

/**
 * A 2-D max pool of one channel on the package's own kernel (src/kernels): TF's MaxPool took
 * 360 µs on [32,24,24,1] with 2x2 windows, and a Max over a re-view of it 85-130 µs. Null when
 * the pool is not of that kind, or TF lacks the kernel.
 */
function singleChannelMaxPool(b, x, info) {
  const p = info.padInfo;
  const fits = info.inChannels === 1 && x.dtype === 'float32' && info.dilationHeight === 1 &&
      info.dilationWidth === 1 && nonNegative([[p.top, p.bottom], [p.left, p.right]]) &&
      Math.max(p.top, p.bottom) < info.filterHeight &&
      Math.max(p.left, p.right) < info.filterWidth &&
      windowedSize(info.inHeight, p.top, p.bottom, info.filterHeight, info.strideHeight) ===
          info.outHeight &&
      windowedSize(info.inWidth, p.left, p.right, info.filterWidth, info.strideWidth) ===
          info.outWidth;
  if (!fits) return null;
  const out = runOwnOp(b, 'TfjsNodeRs>SingleChannelMaxPool', {
    ksize: [info.filterHeight, info.filterWidth],
    strides: [info.strideHeight, info.strideWidth],
    pads: [p.top, p.bottom, p.left, p.right],
  }, [x]);
  return out === null ? null : b.wrap(out);
}

function maxPool(b, x, info, is3D) {
  const single = is3D ? null : singleChannelMaxPool(b, x, info);
  if (single !== null) return single;
  const spec = tfPadding(info);
  const op = is3D ? 'MaxPool3D' : 'MaxPool';
  if (!is3D && x.dtype === 'float32' && info.inChannels <= MAX_TILING_POOL_CHANNELS &&
      isTilingPool(info)) {
    return withTemps(b, (temps) => {
      const tiles = reshape(b, x, [info.batchSize, info.outHeight, info.filterHeight,
                                   info.outWidth, info.filterWidth, info.inChannels]);
      temps.push(tiles);
      return b.op('Max', [A.type('T', x.dtype), A.type('Tidx', 'int32'),
                          A.bool('keep_dims', false)], [tiles, b.vec([2, 4])]);
    });
  }
  if (spec.padding !== 'EXPLICIT') {
    return b.op(op, windowAttrs(x.dtype, info, is3D, spec.padding), [x]);
  }
  if (explicitOk(info, spec.pads, is3D)) {
    return b.op(op, [...windowAttrs(x.dtype, info, false, 'EXPLICIT'),
                     A.ints('explicit_paddings', explicitNHWC(spec.pads))], [x]);
  }
  return withTemps(b, (temps) => {
    const xp = padOrCrop(b, x, fullPads(spec.pads), -Infinity);
    temps.push(xp);
    return b.op(op, windowAttrs(x.dtype, info, is3D, 'VALID'), [xp]);
  });
}

function avgPool(b, x, info, is3D) {
  const spec = tfPadding(info);
  const op = is3D ? 'AvgPool3D' : 'AvgPool';
  if (spec.padding !== 'EXPLICIT') {
    return b.op(op, windowAttrs(x.dtype, info, is3D, spec.padding), [x]);
  }
  return withTemps(b, (temps) => {
    const xp = padOrCrop(b, x, fullPads(spec.pads), 0);
    temps.push(xp);
    const sums = b.run1(op, windowAttrs(x.dtype, info, is3D, 'VALID'), [xp]);
    temps.push(sums);
    const counts = windowCounts(b, info, spec.pads, is3D, temps);
    // Windows wholly outside the input average to 0, as in tfjs.
    return b.op('DivNoNan', [A.type('T', x.dtype)], [sums, counts]);
  });
}

function maxPoolGrad(b, dy, input, output, info, is3D) {
  const spec = tfPadding(info);
  const op = is3D ? 'MaxPool3DGrad' : 'MaxPoolGrad';
  const extra = is3D ? [A.type('TInput', input.dtype)] : [];
  if (spec.padding !== 'EXPLICIT') {
    return b.op(op, [...windowAttrs(dy.dtype, info, is3D, spec.padding), ...extra],
                [input, output, dy]);
  }
  if (explicitOk(info, spec.pads, is3D)) {
    return b.op(op, [...windowAttrs(dy.dtype, info, false, 'EXPLICIT'),
                     A.ints('explicit_paddings', explicitNHWC(spec.pads))],
                [input, output, dy]);
  }
  return withTemps(b, (temps) => {
    const xp = padOrCrop(b, input, fullPads(spec.pads), -Infinity);
    temps.push(xp);
    const g = b.run1(op, [...windowAttrs(dy.dtype, info, is3D, 'VALID'), ...extra],
                     [xp, output, dy]);
    temps.push(g);
    return b.wrap(padOrCrop(b, g, unpad(spec.pads), 0));
  });
}

function avgPoolGrad(b, dy, input, info, is3D) {
  const spec = tfPadding(info);
  const op = is3D ? 'AvgPool3DGrad' : 'AvgPoolGrad';
  if (spec.padding !== 'EXPLICIT') {
    return b.op(op, windowAttrs(dy.dtype, info, is3D, spec.padding),
                [b.vec(input.shape), dy]);
  }
  // tfjs's gradient spreads dy / windowSize over each window (padding
  // cells included), which is TF's VALID gradient over the padded input.
  return withTemps(b, (temps) => {
    const padded = input.shape.slice();
    spec.pads.forEach(([p, q], i) => padded[i + 1] += p + q);
    const g = b.run1(op, windowAttrs(dy.dtype, info, is3D, 'VALID'),
                     [b.vec(padded), dy]);
    temps.push(g);
    return b.wrap(padOrCrop(b, g, unpad(spec.pads), 0));
  });
}

/** A 1x1 window with stride 1 and no padding leaves the input as it is. */
function isIdentityPool(info) {
  return info.filterWidth === 1 && info.filterHeight === 1 &&
      (info.filterDepth === undefined || info.filterDepth === 1) &&
      tfc.util.arraysEqual(info.inShape, info.outShape);
}

function identityOf(b, x) {
  b.incRef(x.dataId);
  return {dataId: x.dataId, shape: x.shape, dtype: x.dtype};
}

/**
 * Runs `pool` unless the output is empty. A 2-D window larger than the (padded) input has a
 * negative output size, which tfjs's cpu backend refuses; a 3-D one an empty output, as there.
 */
function pooled(b, x, info, pool) {
  if (info.filterDepth === undefined && info.outShape.some((d) => d < 0)) {
    throw new Error(
        `Pool: the ${info.filterHeight}x${info.filterWidth} window does not fit the ` +
        `${info.inHeight}x${info.inWidth} input with this padding (output shape ` +
        `[${info.outShape}])`);
  }
  const outShape = info.outShape.map(d => Math.max(0, d));
  if (sizeOf(outShape) === 0) {
    return b.makeTensorInfo(outShape, x.dtype, b.alloc(x.dtype, 0));
  }
  return pool();
}

/** NaNs are never a window's max in tfjs: they become -inf first. */
function withoutNaN(b, x, temps) {
  if (x.dtype !== 'float32') return x;
  const nan = b.run1('IsNan', [A.type('T', 'float32')], [x]);
  temps.push(nan);
  const y = b.run1('SelectV2', [A.type('T', 'float32')],
                   [nan, b.scalar(-Infinity, 'float32'), x]);
  temps.push(y);
  return y;
}

const KERNELS = [
  {kernelName: 'MaxPool', kernelFunc: ({inputs: {x}, attrs, backend: b}) => {
    const info = info2D(x.shape, attrs);
    return isIdentityPool(info) ? identityOf(b, x) :
                                  pooled(b, x, info, () => maxPool(b, x, info, false));
  }},
  {kernelName: 'AvgPool', kernelFunc: ({inputs: {x}, attrs, backend: b}) => {
    const info = info2D(x.shape, attrs);
    return isIdentityPool(info) ? identityOf(b, x) :
                                  pooled(b, x, info, () => avgPool(b, x, info, false));
  }},
  {kernelName: 'MaxPool3D', kernelFunc: ({inputs: {x}, attrs, backend: b}) => {
    const info = info3D(x.shape, attrs);
    return pooled(b, x, info, () => maxPool(b, x, info, true));
  }},
  {kernelName: 'AvgPool3D', kernelFunc: ({inputs: {x}, attrs, backend: b}) => {
    const info = info3D(x.shape, attrs);
    return pooled(b, x, info, () => avgPool(b, x, info, true));
  }},
  {kernelName: 'MaxPoolGrad',
   kernelFunc: ({inputs: {dy, input, output}, attrs, backend: b}) =>
       maxPoolGrad(b, dy, input, output, info2D(input.shape, attrs), false)},
  {kernelName: 'AvgPoolGrad', kernelFunc: ({inputs: {dy, input}, attrs, backend: b}) =>
      avgPoolGrad(b, dy, input, info2D(input.shape, attrs), false)},
  {kernelName: 'MaxPool3DGrad',
   kernelFunc: ({inputs: {dy, input, output}, attrs, backend: b}) =>
       maxPoolGrad(b, dy, input, output, info3D(input.shape, attrs), true)},
  {kernelName: 'AvgPool3DGrad', kernelFunc: ({inputs: {dy, input}, attrs, backend: b}) =>
      avgPoolGrad(b, dy, input, info3D(input.shape, attrs), true)},
  {kernelName: 'MaxPoolWithArgmax', kernelFunc: ({inputs: {x}, attrs, backend: b}) => {
    const info = info2D(x.shape, attrs);
    const spec = tfPadding(info);
    if (spec.padding === 'EXPLICIT') {
      throw new Error('maxPoolWithArgmax supports only \'same\' and \'valid\' padding');
    }
    return withTemps(b, (temps) => b.run('MaxPoolWithArgmax', [
      A.type('T', x.dtype),
      A.ints('ksize', [1, info.filterHeight, info.filterWidth, 1]),
      A.ints('strides', [1, info.strideHeight, info.strideWidth, 1]),
      A.type('Targmax', 'int64'), A.str('padding', spec.padding),
      A.bool('include_batch_in_index', attrs.includeBatchInIndex),
    ], [withoutNaN(b, x, temps)], 2).map(o => b.wrap(o)));
  }},
];

module.exports = {KERNELS};
