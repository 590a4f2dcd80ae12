'use strict';
// Convolutions: Conv2D/3D, depthwise, dilation, their gradients, and the
// fused forms (TF's _FusedConv2D / _FusedDepthwiseConv2dNative).
//
// NCHW inputs are transposed to NHWC around the NHWC op (TF's CPU kernels are
// NHWC-only). Paddings TF lacks are turned into EXPLICIT paddings, or into a
// pad/crop of the input followed by a VALID op (padding.js).

const tfc = require('@tensorflow/tfjs-core');
const {A, withTemps, transpose, reshape, slice, padOrCrop, binary, runOwnOp} = require('./common');
const {tfPadding, nonNegative, windowedSize, explicitNHWC, fullPads} = require('./padding');
const {applyActivation, fusedOpsFor, biasVector, addBias} = require('./activation');
const {sizeOf} = require('../../backend/dtypes');

const TO_NHWC = [0, 2, 3, 1];
const TO_NCHW = [0, 3, 1, 2];

const nhwcShape = (s) => [s[0], s[2], s[3], s[1]];

/** tfjs explicit pads given for NCHW, in NHWC order. */
function padToNHWC(pad) {
  if (Array.isArray(pad)) return [pad[0], pad[2], pad[3], pad[1]];
  return pad;
}

function toNHWC(b, x, nchw, temps) {
  if (!nchw) return x;
  const t = transpose(b, x, TO_NHWC);
  temps.push(t);
  return t;
}

/** Wraps an NHWC raw result, transposing it back for NCHW. */
function finish(b, out, nchw, temps) {
  if (!nchw) return b.wrap(out);
  temps.push(out);
  return b.wrap(transpose(b, out, TO_NCHW));
}

/**
 * The output of a forward conv that has no elements (a 'valid' window wider than the input, a
 * batch of 0), made here, or null when it has some: TF's oneDNN kernels (Conv2D,
 * DepthwiseConv2dNative, Conv3D and the fused ones, in the x64 build) return a tensor of the
 * input's shape for such a call instead of an empty one. `outShape`: channels last; a negative
 * dim is left to TF, which refuses it. Bias and activation of nothing are nothing too.
 */
function emptyConv(b, dtype, outShape, nchw) {
  if (outShape.some((d) => d < 0) || sizeOf(outShape) !== 0) return null;
  const shape = nchw ? [outShape[0], outShape[3], outShape[1], outShape[2]] : outShape;
  return b.makeTensorInfo(shape, dtype, b.alloc(dtype, 0));
}

/**
 * The gradient of a conv whose output has no elements, made here, or null when it has some: the
 * sum over nothing is zeros of `shape` (the input's or the filter's). TF's CPU kernels return
 * memory never written for it (Conv2DBackpropFilter and DepthwiseConv2dNativeBackpropFilter of
 * an empty out_backprop gave NaN and stray values in the aarch64 build).
 */
function emptyGradient(b, dy, shape) {
  if (sizeOf(dy.shape) !== 0) return null;
  return b.run1('Fill', [A.type('T', dy.dtype), A.type('index_type', 'int32')],
                [b.vec(shape), b.constant(dy.dtype, [], 0)]);
}

/** tfjs's conv info of a forward 2-D conv, for the NHWC input `xx`. */
function forwardInfo(xx, filter, attrs, nchw, depthwise) {
  if (depthwise) {
    // tfjs's cpu kernel refuses these; TF would run them.
    const dilations = attrs.dilations == null ? [1, 1] : attrs.dilations;
    tfc.util.assert(
        tfc.backend_util.eitherStridesOrDilationsAreOne(attrs.strides, dilations),
        () => 'Error in depthwiseConv2d: Either strides or dilations must be 1. ' +
            `Got strides ${attrs.strides} and dilations '${dilations}'`);
  }
  return tfc.backend_util.computeConv2DInfo(
      xx.shape, filter.shape, attrs.strides, attrs.dilations || 1,
      nchw ? padToNHWC(attrs.pad) : attrs.pad, attrs.dimRoundingMode, depthwise,
      'channelsLast');
}

/**
 * Padding attrs for a 2-D op, or a padded/cropped input for a VALID op:
 * returns {input, attrs} where attrs are padding + explicit_paddings.
 */
function paddingFor(b, x, info, temps, allowExplicit = true) {
  const spec = tfPadding(info);
  if (spec.padding !== 'EXPLICIT') {
    return {input: x, attrs: [A.str('padding', spec.padding)], pads: null};
  }
  if (allowExplicit && nonNegative(spec.pads)) {
    return {
      input: x,
      attrs: [A.str('padding', 'EXPLICIT'),
              A.ints('explicit_paddings', explicitNHWC(spec.pads))],
      pads: null,
    };
  }
  const padded = padOrCrop(b, x, fullPads(spec.pads), 0);
  temps.push(padded);
  return {input: padded, attrs: [A.str('padding', 'VALID')], pads: spec.pads};
}

function strides4(info) {
  return A.ints('strides', [1, info.strideHeight, info.strideWidth, 1]);
}
function dilations4(info) {
  return A.ints('dilations', [1, info.dilationHeight, info.dilationWidth, 1]);
}

/**
 * Output channels up to which a conv of one input channel runs faster as a depthwise conv (the
 * same filter layout, [h, w, 1, out]): measured 290 -> 210 µs on [32,28,28,1] * [3,3,1,1]; from
 * 8 channels Conv2D is faster.
 */
const MAX_DEPTHWISE_AS_CONV_CHANNELS = 4;

/**
 * Input channels and filters up to which, and multiply-adds up to which, a conv of stride and
 * dilation 1 runs on the package's own kernel (src/kernels/few_channel_conv.rs): an image
 * model's first layer on images of any size, where oneDNN's Conv2D creates a primitive for
 * each new input shape (0.2-0.3 ms a new size). Measured through tfjs, a call and its read,
 * this kernel against TF's Conv2D (2 runs each): [1,32,16,3]*[3,3,3,8] 0.07 against 0.24-0.29
 * ms, [1,32,216,3] 0.31 against 0.40-0.46, [1,32,415,3] 0.40 against 0.57-0.60, [8,32,32,3]
 * 0.34 against 0.46-0.49, [4,64,64,3] (3.5 million multiply-adds) 0.44 against 0.44-0.48.
 * Past the limits TF's is as fast or faster: 16 filters ([1,64,64,3]*[3,3,3,16] 0.37-0.38
 * against 0.33-0.35), 5.4 million multiply-adds ([32,28,28,3]*8, 'same': 0.43 against
 * 0.39-0.44), 11 million ([1,224,224,3]*8: 2.1-2.2 against 1.8-1.9).
 */
const FEW_CHANNELS = 4;
const FEW_FILTERS = 8;
const FEW_CHANNEL_MAX_WORK = 4e6;

/**
 * Filters up to which a conv of one input channel (an MNIST convnet's first layer) runs on the
 * package's own kernel, on images of up to `ONE_CHANNEL_MAX_PIXELS` output pixels, or of any size
 * when a ReLU is fused and the filters are more than TF's depthwise kernel takes (by 2 and 4
 * filters on [1,512,512,1] the two took turns: 1.6-1.7 ms against 1.5-3.7). Measured through
 * tfjs, a call and its dispose, TF's ops against this kernel (µs, 2 runs each): [32,28,28,1] 'valid' by 32 filters 287-295 against 236-258, with
 * bias and ReLU 635-909 (Conv2D, BiasAdd, Relu) against 240-269; by 64 filters 374-538 against
 * 293-297; by 2 and 4 filters (TF's depthwise kernel) 348-387 against 194-211; [8,64,64,1] 'same'
 * by 16 241-275 against 174-219; [128,28,28,1] by 32 648-663 against 587-603. On larger images
 * TF's Conv2D is faster alone ([1,512,512,1] by 8: 623-723 against 1392-1450) but not with a
 * ReLU after it ([1,224,224,1] by 32: 904-1165 against 408-460; [1,512,512,1] by 8: 2054-2180
 * against 1432-1440).
 */
const ONE_CHANNEL_MAX_FILTERS = 64;
const ONE_CHANNEL_MAX_PIXELS = 64 * 64;

/**
 * A conv of few input channels and filters (or of one channel by one filter: 35-60 µs on
 * [32,28,28,1] * [3,3,1,1], where TF's depthwise kernel took 200-400 µs), stride and dilation
 * 1, on the package's own kernel; then, in the same pass, `bias` (a [filters] vector) and a ReLU
 * when `relu`. Null when the conv is not of that kind, or TF lacks the kernel.
 */
function fewChannelConv(b, x, filter, info, bias = null, relu = false) {
  const p = info.padInfo;
  const work = info.batchSize * info.outHeight * info.outWidth * info.outChannels *
      info.filterHeight * info.filterWidth * info.inChannels;
  const few = (info.inChannels === 1 && info.outChannels === 1) ||
      (info.inChannels === 1 && info.outChannels <= ONE_CHANNEL_MAX_FILTERS &&
       (info.outHeight * info.outWidth <= ONE_CHANNEL_MAX_PIXELS ||
        (relu && info.outChannels > MAX_DEPTHWISE_AS_CONV_CHANNELS))) ||
      (info.inChannels > 1 && info.inChannels <= FEW_CHANNELS && info.outChannels <= FEW_FILTERS &&
       work <= FEW_CHANNEL_MAX_WORK);
  const fits = few && x.dtype === 'float32' &&
      info.strideHeight === 1 && info.strideWidth === 1 && info.dilationHeight === 1 &&
      info.dilationWidth === 1 && nonNegative([[p.top, p.bottom], [p.left, p.right]]) &&
      windowedSize(info.inHeight, p.top, p.bottom, info.filterHeight, 1) === info.outHeight &&
      windowedSize(info.inWidth, p.left, p.right, info.filterWidth, 1) === info.outWidth;
  if (!fits) return null;
  const attrs = {pads: [p.top, p.bottom, p.left, p.right]};
  if (bias !== null) attrs.biases = 1;
  if (relu) attrs.relu = true;
  return runOwnOp(b, 'TfjsNodeRs>FewChannelConv2D', attrs,
                  bias !== null ? [x, filter, bias] : [x, filter]);
}

function conv2dRaw(b, x, filter, info, temps) {
  const few = fewChannelConv(b, x, filter, info);
  if (few !== null) return few;
  if (info.inChannels === 1 && info.outChannels <= MAX_DEPTHWISE_AS_CONV_CHANNELS &&
      info.strideHeight === info.strideWidth && info.dilationHeight === 1 &&
      info.dilationWidth === 1 && x.dtype === 'float32') {
    return depthwiseRaw(b, x, filter, info, temps);
  }
  const {input, attrs} = paddingFor(b, x, info, temps);
  return b.run1('Conv2D', [
    A.type('T', x.dtype), strides4(info), A.bool('use_cudnn_on_gpu', true),
    ...attrs, A.str('data_format', 'NHWC'), dilations4(info),
  ], [input, filter]);
}

// Whether this libtensorflow's DepthwiseConv2dNative takes dilations: x64's oneDNN kernel does;
// TF's own CPU kernel, the one of the aarch64 build, rejects them (UNIMPLEMENTED, "Current
// kernel implementation does not support dilations"). Learned from the first dilated call.
let depthwiseTakesDilations = true;

function depthwiseRaw(b, x, filter, info, temps) {
  const p = info.padInfo;
  const dilated = info.dilationHeight > 1 || info.dilationWidth > 1;
  // tfjs allows dilations only with stride 1; SpaceToBatchND takes no negative paddings.
  const splittable = dilated && nonNegative([[p.top, p.bottom], [p.left, p.right]]);
  if (splittable && !depthwiseTakesDilations) return dilatedDepthwise(b, x, filter, info, temps);
  const {input, attrs} = paddingFor(b, x, info, temps);
  try {
    return b.run1('DepthwiseConv2dNative', [
      A.type('T', x.dtype), strides4(info), ...attrs,
      A.str('data_format', 'NHWC'), dilations4(info),
    ], [input, filter]);
  } catch (e) {
    if (!(splittable && e && e.code === 'UNIMPLEMENTED')) throw e;
    depthwiseTakesDilations = false;
    return dilatedDepthwise(b, x, filter, info, temps);
  }
}

/**
 * A depthwise conv dilated by (dh, dw) at stride 1, as TF's Python depthwise_conv2d runs it: the
 * padded input split into dh*dw interleaved grids (SpaceToBatchND), an undilated VALID conv of
 * each, and the grids put back together (BatchToSpaceND). The same products and sums, exactly.
 */
function dilatedDepthwise(b, x, filter, info, temps) {
  const {dilationHeight: dh, dilationWidth: dw} = info;
  const p = info.padInfo;
  // Pad the end of each axis up to a multiple of the block; the output loses as many rows.
  const extraH = (dh - ((info.inHeight + p.top + p.bottom) % dh)) % dh;
  const extraW = (dw - ((info.inWidth + p.left + p.right) % dw)) % dw;
  const ints = (name) => A.type(name, 'int32');
  const grids = b.run1('SpaceToBatchND', [A.type('T', x.dtype), ints('Tblock_shape'), ints('Tpaddings')], [
    x, b.vec([dh, dw]), b.constant('int32', [2, 2], [p.top, p.bottom + extraH, p.left, p.right + extraW]),
  ]);
  temps.push(grids);
  const conv = b.run1('DepthwiseConv2dNative', [
    A.type('T', x.dtype), A.ints('strides', [1, 1, 1, 1]), A.str('padding', 'VALID'),
    A.str('data_format', 'NHWC'), A.ints('dilations', [1, 1, 1, 1]),
  ], [grids, filter]);
  temps.push(conv);
  return b.run1('BatchToSpaceND', [A.type('T', x.dtype), ints('Tblock_shape'), ints('Tcrops')], [
    conv, b.vec([dh, dw]), b.constant('int32', [2, 2], [0, extraH, 0, extraW]),
  ]);
}

function Conv2D({inputs, attrs, backend: b}) {
  const {x, filter} = inputs;
  const nchw = attrs.dataFormat === 'NCHW';
  return withTemps(b, (temps) => {
    const xx = toNHWC(b, x, nchw, temps);
    const info = forwardInfo(xx, filter, attrs, nchw, false);
    return emptyConv(b, x.dtype, info.outShape, nchw) ||
        finish(b, conv2dRaw(b, xx, filter, info, temps), nchw, temps);
  });
}

/**
 * Gradient w.r.t. the input of a 2-D conv-like op `opName` whose inputs are
 * (input_sizes, filter, out_backprop).
 */
function backpropInput(b, opName, dy, filter, inShape, info, extraAttrs, temps) {
  const empty = emptyGradient(b, dy, inShape);
  if (empty !== null) return empty;
  // A dy smaller than the forward output of inShape (conv2dTranspose with an outShape its
  // input cannot produce) would come back zero-padded to inShape; TF and tfjs-node refuse it.
  if (dy.shape[1] < info.outHeight || dy.shape[2] < info.outWidth) {
    throw new Error(
        `${opName}: the output shape [${inShape}] needs dy of spatial size ` +
        `[${info.outHeight},${info.outWidth}] (its forward conv's output), got ` +
        `[${dy.shape[1]},${dy.shape[2]}]`);
  }
  // tfjs reads dy only within the forward output's size; a larger dy (which
  // tfjs accepts) is cropped to it.
  if (dy.shape[1] > info.outHeight || dy.shape[2] > info.outWidth) {
    const size = [dy.shape[0], Math.min(dy.shape[1], info.outHeight),
                  Math.min(dy.shape[2], info.outWidth), dy.shape[3]];
    dy = slice(b, dy, [0, 0, 0, 0], size);
    temps.push(dy);
  }
  const spec = tfPadding(info, dy.shape.slice(1, 3));
  const base = [A.type('T', dy.dtype), strides4(info), ...extraAttrs,
                A.str('data_format', 'NHWC'), dilations4(info)];
  if (spec.padding !== 'EXPLICIT' || nonNegative(spec.pads)) {
    const padAttrs = spec.padding !== 'EXPLICIT' ?
        [A.str('padding', spec.padding)] :
        [A.str('padding', 'EXPLICIT'),
         A.ints('explicit_paddings', explicitNHWC(spec.pads))];
    return b.run1(opName, [...base, ...padAttrs], [b.vec(inShape), filter, dy]);
  }
  // Gradient w.r.t. the padded/cropped input, then undo the pad/crop.
  const padded = inShape.slice();
  spec.pads.forEach(([p, q], i) => padded[i + 1] += p + q);
  const g = b.run1(opName, [...base, A.str('padding', 'VALID')],
                   [b.vec(padded), filter, dy]);
  temps.push(g);
  return padOrCrop(b, g, fullPads(spec.pads.map(([p, q]) => [-p, -q])), 0);
}

/** Gradient w.r.t. the filter: inputs (input, filter_sizes, out_backprop). */
function backpropFilter(b, opName, x, dy, filterShape, info, extraAttrs, temps) {
  const empty = emptyGradient(b, dy, filterShape);
  if (empty !== null) return empty;
  const {input, attrs} = paddingFor(b, x, info, temps);
  return b.run1(opName, [
    A.type('T', x.dtype), strides4(info), ...extraAttrs, ...attrs,
    A.str('data_format', 'NHWC'), dilations4(info),
  ], [input, b.vec(filterShape), dy]);
}

function Conv2DBackpropInput({inputs, attrs, backend: b}) {
  const {dy, filter} = inputs;
  const nchw = attrs.dataFormat === 'NCHW';
  return withTemps(b, (temps) => {
    const dyy = toNHWC(b, dy, nchw, temps);
    const inShape = nchw ? nhwcShape(attrs.inputShape) : attrs.inputShape;
    const info = tfc.backend_util.computeConv2DInfo(
        inShape, filter.shape, attrs.strides, 1,
        nchw ? padToNHWC(attrs.pad) : attrs.pad, attrs.dimRoundingMode, false,
        'channelsLast');
    const out = backpropInput(b, 'Conv2DBackpropInput', dyy, filter, inShape, info,
                              [A.bool('use_cudnn_on_gpu', true)], temps);
    return finish(b, out, nchw, temps);
  });
}

function Conv2DBackpropFilter({inputs, attrs, backend: b}) {
  const {x, dy} = inputs;
  const nchw = attrs.dataFormat === 'NCHW';
  return withTemps(b, (temps) => {
    const xx = toNHWC(b, x, nchw, temps);
    const dyy = toNHWC(b, dy, nchw, temps);
    const info = tfc.backend_util.computeConv2DInfo(
        xx.shape, attrs.filterShape, attrs.strides, 1,
        nchw ? padToNHWC(attrs.pad) : attrs.pad, attrs.dimRoundingMode, false,
        'channelsLast');
    return b.wrap(backpropFilter(b, 'Conv2DBackpropFilter', xx, dyy,
                                 attrs.filterShape, info,
                                 [A.bool('use_cudnn_on_gpu', true)], temps));
  });
}

function DepthwiseConv2dNative({inputs, attrs, backend: b}) {
  const {x, filter} = inputs;
  const nchw = attrs.dataFormat === 'NCHW';
  return withTemps(b, (temps) => {
    const xx = toNHWC(b, x, nchw, temps);
    const info = forwardInfo(xx, filter, attrs, nchw, true);
    return emptyConv(b, x.dtype, info.outShape, nchw) ||
        finish(b, depthwiseRaw(b, xx, filter, info, temps), nchw, temps);
  });
}

function DepthwiseConv2dNativeBackpropInput({inputs, attrs, backend: b}) {
  const {dy, filter} = inputs;
  return withTemps(b, (temps) => {
    const info = tfc.backend_util.computeConv2DInfo(
        attrs.inputShape, filter.shape, attrs.strides, attrs.dilations,
        attrs.pad, attrs.dimRoundingMode, true);
    return b.wrap(backpropInput(b, 'DepthwiseConv2dNativeBackpropInput', dy,
                                filter, attrs.inputShape, info, [], temps));
  });
}

function DepthwiseConv2dNativeBackpropFilter({inputs, attrs, backend: b}) {
  const {x, dy} = inputs;
  return withTemps(b, (temps) => {
    const info = tfc.backend_util.computeConv2DInfo(
        x.shape, attrs.filterShape, attrs.strides, attrs.dilations, attrs.pad,
        attrs.dimRoundingMode, true);
    return b.wrap(backpropFilter(b, 'DepthwiseConv2dNativeBackpropFilter', x, dy,
                                 attrs.filterShape, info, [], temps));
  });
}

// ------------------------------------------------------------------ 3-D

function conv3dAttrs(dtype, info, withDilations = true) {
  const attrs = [
    A.type('T', dtype),
    A.ints('strides', [1, info.strideDepth, info.strideHeight, info.strideWidth, 1]),
    A.str('padding', info.padInfo.type === 'SAME' ? 'SAME' : 'VALID'),
    A.str('data_format', 'NDHWC'),
  ];
  if (withDilations) {
    attrs.push(A.ints('dilations', [1, info.dilationDepth, info.dilationHeight,
                                    info.dilationWidth, 1]));
  }
  return attrs;
}

function Conv3D({inputs, attrs, backend: b}) {
  const {x, filter} = inputs;
  const info = tfc.backend_util.computeConv3DInfo(
      x.shape, filter.shape, attrs.strides, attrs.dilations, attrs.pad);
  return emptyConv(b, x.dtype, info.outShape, false) || b.op('Conv3D', conv3dAttrs(x.dtype, info), [x, filter]);
}

function Conv3DBackpropInputV2({inputs, attrs, backend: b}) {
  const {dy, filter} = inputs;
  const info = tfc.backend_util.computeConv3DInfo(
      attrs.inputShape, filter.shape, attrs.strides, 1, attrs.pad);
  const empty = emptyGradient(b, dy, attrs.inputShape);
  if (empty !== null) return b.wrap(empty);
  return b.op('Conv3DBackpropInputV2',
              [...conv3dAttrs(dy.dtype, info), A.type('Tshape', 'int32')],
              [b.vec(attrs.inputShape), filter, dy]);
}

function Conv3DBackpropFilterV2({inputs, attrs, backend: b}) {
  const {x, dy} = inputs;
  const info = tfc.backend_util.computeConv3DInfo(
      x.shape, attrs.filterShape, attrs.strides, 1, attrs.pad);
  const empty = emptyGradient(b, dy, attrs.filterShape);
  if (empty !== null) return b.wrap(empty);
  return b.op('Conv3DBackpropFilterV2', conv3dAttrs(x.dtype, info),
              [x, b.vec(attrs.filterShape), dy]);
}

// ------------------------------------------------------------- dilation

function dilationSetup(b, x, filter, attrs, temps) {
  const info = tfc.backend_util.computeDilation2DInfo(
      x.shape, filter.shape, attrs.strides, attrs.pad, 'NHWC', attrs.dilations);
  const spec = tfPadding(info);
  let input = x;
  let padding = spec.padding;
  if (padding === 'EXPLICIT') {
    input = padOrCrop(b, x, fullPads(spec.pads), -Infinity);
    temps.push(input);
    padding = 'VALID';
  }
  const opAttrs = [
    A.type('T', x.dtype),
    A.ints('strides', [1, info.strideHeight, info.strideWidth, 1]),
    A.ints('rates', [1, info.dilationHeight, info.dilationWidth, 1]),
    A.str('padding', padding),
  ];
  return {input, opAttrs, pads: padding !== spec.padding ? spec.pads : null};
}

function Dilation2D({inputs, attrs, backend: b}) {
  const {x, filter} = inputs;
  return withTemps(b, (temps) => {
    const {input, opAttrs} = dilationSetup(b, x, filter, attrs, temps);
    return b.op('Dilation2D', opAttrs, [input, filter]);
  });
}

function Dilation2DBackpropInput({inputs, attrs, backend: b}) {
  const {x, filter, dy} = inputs;
  return withTemps(b, (temps) => {
    const {input, opAttrs, pads} = dilationSetup(b, x, filter, attrs, temps);
    const g = b.run1('Dilation2DBackpropInput', opAttrs, [input, filter, dy]);
    if (pads === null) return b.wrap(g);
    temps.push(g);
    return b.wrap(padOrCrop(b, g, fullPads(pads.map(([p, q]) => [-p, -q])), 0));
  });
}

function Dilation2DBackpropFilter({inputs, attrs, backend: b}) {
  const {x, filter, dy} = inputs;
  return withTemps(b, (temps) => {
    const {input, opAttrs} = dilationSetup(b, x, filter, attrs, temps);
    return b.op('Dilation2DBackpropFilter', opAttrs, [input, filter, dy]);
  });
}

// ---------------------------------------------------------------- fused

const unsupported = new Set();

/** Input channels from which TF's fused conv kernel is faster than the separate ops. */
const FUSED_CONV_MIN_IN_CHANNELS = 8;

/**
 * Runs TF's fused conv op when the bias and activation fit it, otherwise the
 * conv, a bias add and the activation as separate ops.
 */
function fusedConv(b, {x, filter, bias, preluActivationWeights}, attrs, depthwise) {
  const nchw = attrs.dataFormat === 'NCHW';
  return withTemps(b, (temps) => {
    const xx = toNHWC(b, x, nchw, temps);
    const info = forwardInfo(xx, filter, attrs, nchw, depthwise);
    const empty = emptyConv(b, x.dtype, info.outShape, nchw);
    if (empty !== null) return empty;
    const channels = info.outChannels;
    // TF fuses a bias along the channels: a 1-D one, or NHWC [1, .., C].
    const biasNHWC = bias != null && (!nchw || bias.shape.length === 1) ? bias : null;
    const opName = depthwise ? '_FusedDepthwiseConv2dNative' : '_FusedConv2D';
    const spec = tfPadding(info);
    const vec = biasNHWC !== null ? biasVector(b, biasNHWC, channels, temps) : null;
    const fusedOps = vec != null ? fusedOpsFor(attrs.activation) : null;
    // A conv the package's own kernel takes adds the bias and the ReLU in its pass.
    const activation = attrs.activation || 'linear';
    if (!depthwise && vec !== null && (activation === 'linear' || activation === 'relu')) {
      const own = fewChannelConv(b, xx, filter, info, vec, activation === 'relu');
      if (own !== null) return finish(b, own, nchw, temps);
    }
    // Measured here (oneDNN build): _FusedConv2D beats Conv2D + BiasAdd + Relu from about 16
    // input channels on (9.3 vs 11.4 ms at 32), but is 1.8-3x slower with 1 or 3 of them.
    // A SavedModel's graph takes the three public ops, which TF's graph optimizer fuses again.
    const fusedPays = (depthwise || info.inChannels >= FUSED_CONV_MIN_IN_CHANNELS) &&
        !b.portableOps();
    if (fusedOps !== null && fusedPays && x.dtype === 'float32' && !unsupported.has(opName) &&
        (spec.padding !== 'EXPLICIT' || (!depthwise && nonNegative(spec.pads)))) {
      const padAttrs = spec.padding !== 'EXPLICIT' ?
          [A.str('padding', spec.padding)] :
          [A.str('padding', 'EXPLICIT'),
           A.ints('explicit_paddings', explicitNHWC(spec.pads))];
      const opAttrs = depthwise ? [
        A.type('T', 'float32'), A.int('num_args', 1), strides4(info), ...padAttrs,
        A.str('data_format', 'NHWC'), dilations4(info), A.strs('fused_ops', fusedOps),
        A.float('leakyrelu_alpha', attrs.leakyreluAlpha == null ? 0.2 : attrs.leakyreluAlpha),
      ] : [
        A.type('T', 'float32'), A.types('TArgs', ['float32']), A.int('num_args', 1),
        strides4(info), ...padAttrs, A.str('data_format', 'NHWC'), dilations4(info),
        A.bool('use_cudnn_on_gpu', true), A.strs('fused_ops', fusedOps),
        A.float('leakyrelu_alpha', attrs.leakyreluAlpha == null ? 0.2 : attrs.leakyreluAlpha),
      ];
      let out = null;
      try {
        out = b.run1(opName, opAttrs, [xx, filter, vec]);
      } catch (e) {
        if (e && (e.code === 'NOT_FOUND' || e.code === 'UNIMPLEMENTED')) {
          unsupported.add(opName);
        }
      }
      // Some TF builds register a fused kernel that only a graph rewrite may
      // run (on CPU, _FusedDepthwiseConv2dNative returns an empty tensor):
      // such a kernel is not used again.
      if (out !== null && !tfc.util.arraysEqual(out.shape, info.outShape)) {
        b.free(out);
        out = null;
        unsupported.add(opName);
      }
      if (out !== null) return finish(b, out, nchw, temps);
    }
    // Separate ops: conv, then bias and activation in the caller's layout
    // (for NCHW, a 1-D bias or PReLU weights run along the channels).
    let out = depthwise ? depthwiseRaw(b, xx, filter, info, temps) :
                          conv2dRaw(b, xx, filter, info, temps);
    if (nchw) {
      temps.push(out);
      out = transpose(b, out, TO_NCHW);
    }
    const channelwise = (t) => {
      if (!nchw || t == null || t.shape.length !== 1 || t.shape[0] === 1) return t;
      const r = reshape(b, t, [t.shape[0], 1, 1]);
      temps.push(r);
      return r;
    };
    if (bias != null) {
      temps.push(out);
      out = nchw ? binary(b, 'AddV2', out, channelwise(bias)) : addBias(b, out, bias, temps);
    }
    out = applyActivation(b, out, attrs.activation,
                          channelwise(preluActivationWeights), attrs.leakyreluAlpha);
    return b.wrap(out);
  });
}

function FusedConv2D({inputs, attrs, backend}) {
  return fusedConv(backend, inputs, attrs, false);
}

function FusedDepthwiseConv2D({inputs, attrs, backend}) {
  return fusedConv(backend, inputs, attrs, true);
}


const KERNELS = [
  {kernelName: 'Conv2D', kernelFunc: Conv2D},
  {kernelName: 'Conv2DBackpropInput', kernelFunc: Conv2DBackpropInput},
  {kernelName: 'Conv2DBackpropFilter', kernelFunc: Conv2DBackpropFilter},
  {kernelName: 'DepthwiseConv2dNative', kernelFunc: DepthwiseConv2dNative},
  {kernelName: 'DepthwiseConv2dNativeBackpropInput',
   kernelFunc: DepthwiseConv2dNativeBackpropInput},
  {kernelName: 'DepthwiseConv2dNativeBackpropFilter',
   kernelFunc: DepthwiseConv2dNativeBackpropFilter},
  {kernelName: 'Conv3D', kernelFunc: Conv3D},
  {kernelName: 'Conv3DBackpropInputV2', kernelFunc: Conv3DBackpropInputV2},
  {kernelName: 'Conv3DBackpropFilterV2', kernelFunc: Conv3DBackpropFilterV2},
  {kernelName: 'Dilation2D', kernelFunc: Dilation2D},
  {kernelName: 'Dilation2DBackpropInput', kernelFunc: Dilation2DBackpropInput},
  {kernelName: 'Dilation2DBackpropFilter', kernelFunc: Dilation2DBackpropFilter},
  {kernelName: 'FusedConv2D', kernelFunc: FusedConv2D},
  {kernelName: 'FusedDepthwiseConv2D', kernelFunc: FusedDepthwiseConv2D},
];

module.exports = {KERNELS, TO_NHWC, TO_NCHW};
