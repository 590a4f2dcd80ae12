'use strict';
// tfjs conv/pool padding -> TF padding.
//
// tfjs allows 'same', 'valid', a number, or explicit [[t, b], [l, r]]
// paddings with a rounding mode for the output size. TF's ops take SAME,
// VALID and (some of them) EXPLICIT. For anything but SAME/VALID we derive
// per-dim [before, after] amounts that make TF's output size equal tfjs's:
// after = (out - 1) * stride + effectiveFilter - in - before, which may be
// negative (the input is then cropped at the end).

/**
 * Returns {padding: 'SAME'|'VALID'} or {padding: 'EXPLICIT', pads} where
 * pads is [[before, after], ...] over the spatial dims (H, W) or (D, H, W).
 * `outDims` overrides the output's spatial size (a gradient's dy may not have
 * the size the forward op would give; tfjs computes it anyway).
 */
function tfPadding(convInfo, outDims) {
  const p = convInfo.padInfo;
  const is3D = convInfo.outDepth !== undefined && p.front !== undefined;
  const dims = is3D ?
    [['inDepth', 'outDepth', 'strideDepth', 'effectiveFilterDepth', p.front],
     ['inHeight', 'outHeight', 'strideHeight', 'effectiveFilterHeight', p.top],
     ['inWidth', 'outWidth', 'strideWidth', 'effectiveFilterWidth', p.left]] :
    [['inHeight', 'outHeight', 'strideHeight', 'effectiveFilterHeight', p.top],
     ['inWidth', 'outWidth', 'strideWidth', 'effectiveFilterWidth', p.left]];
  const outs = outDims || dims.map(([, outK]) => convInfo[outK]);
  const sameOut = dims.every(([, outK], i) => convInfo[outK] === outs[i]);
  if ((p.type === 'SAME' || p.type === 'VALID') && sameOut) {
    return {padding: p.type};
  }
  const pads = dims.map(([inK, , sK, fK, before], i) => {
    const after = (outs[i] - 1) * convInfo[sK] + convInfo[fK] -
        convInfo[inK] - before;
    return [before, after];
  });
  return {padding: 'EXPLICIT', pads};
}

/** True when explicit pads are all >= 0 (no cropping needed). */
function nonNegative(pads) {
  return pads.every(([a, b]) => a >= 0 && b >= 0);
}

/**
 * Window positions along an axis of `size` padded by `before` and `after`: what this package's
 * own kernels (src/kernels) produce, for checking it against tfjs's output shape.
 */
function windowedSize(size, before, after, window, stride) {
  return Math.floor((size + before + after - window) / stride) + 1;
}

/** NHWC explicit_paddings attr value from spatial pads. */
function explicitNHWC(pads) {
  const out = [0, 0];
  for (const [a, b] of pads) out.push(a, b);
  out.push(0, 0);
  return out;
}

/** Full-rank [[before, after]] for NHWC / NDHWC from spatial pads. */
function fullPads(pads) {
  return [[0, 0], ...pads, [0, 0]];
}

module.exports = {tfPadding, nonNegative, windowedSize, explicitNHWC, fullPads};
