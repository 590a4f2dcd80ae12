'use strict';
// Image kernels that need logic: ResizeNearestNeighborGrad (size from the
// input's shape), Transform and RotateWithOffset on ImageProjectiveTransformV3.

const {A, withTemps} = require('./common');

function ResizeNearestNeighborGrad({inputs, attrs, backend: b}) {
  const {images, dy} = inputs;
  return b.op('ResizeNearestNeighborGrad', [
    A.type('T', dy.dtype), A.bool('align_corners', attrs.alignCorners),
    A.bool('half_pixel_centers', attrs.halfPixelCenters),
  ], [dy, b.vec(images.shape.slice(1, 3))]);
}

function projective(b, image, transforms, outShape, interpolation, fillMode, fill) {
  return b.run1('ImageProjectiveTransformV3', [
    A.type('dtype', image.dtype), A.str('interpolation', interpolation),
    A.str('fill_mode', fillMode),
  ], [image, transforms, b.vec(outShape), b.scalar(fill, 'float32')]);
}

function Transform({inputs, attrs, backend: b}) {
  const {image, transforms} = inputs;
  const [, height, width] = image.shape;
  const outShape = attrs.outputShape || [height, width];
  return b.wrap(projective(b, image, transforms, outShape,
                           String(attrs.interpolation).toUpperCase(),
                           String(attrs.fillMode).toUpperCase(),
                           attrs.fillValue || 0));
}

/**
 * Rotation around (center * [width, height]), nearest neighbour, as a
 * projective transform mapping output pixels to input pixels. A per-channel
 * fill value is applied through a transformed mask.
 */
function RotateWithOffset({inputs, attrs, backend: b}) {
  const {image} = inputs;
  const {radians, fillValue, center} = attrs;
  const [, height, width, channels] = image.shape;
  const cx = width * (typeof center === 'number' ? center : center[0]);
  const cy = height * (typeof center === 'number' ? center : center[1]);
  const sin = Math.sin(radians), cos = Math.cos(radians);
  const t = [cos, -sin, cx - cx * cos + cy * sin,
             sin, cos, cy - cx * sin - cy * cos, 0, 0];
  const transforms = b.constant('float32', [1, 8], t);
  if (typeof fillValue === 'number') {
    return b.wrap(projective(b, image, transforms, [height, width], 'NEAREST',
                             'CONSTANT', fillValue));
  }
  return withTemps(b, (temps) => {
    const rotated = projective(b, image, transforms, [height, width], 'NEAREST',
                               'CONSTANT', 0);
    temps.push(rotated);
    const ones = b.constant(image.dtype, [1, height, width, 1], 1);
    const mask = projective(b, {id: ones, shape: [1, height, width, 1], dtype: image.dtype},
                            transforms, [height, width], 'NEAREST', 'CONSTANT', 0);
    temps.push(mask);
    const T = [A.type('T', image.dtype)];
    const outside = b.run1('Sub', T, [b.scalar(1, image.dtype), mask]);
    temps.push(outside);
    const fill = b.run1('Mul', T, [outside,
                                   b.constant(image.dtype, [channels], fillValue)]);
    temps.push(fill);
    return b.op('AddV2', T, [rotated, fill]);
  });
}

const KERNELS = [
  {kernelName: 'ResizeNearestNeighborGrad', kernelFunc: ResizeNearestNeighborGrad},
  {kernelName: 'Transform', kernelFunc: Transform},
  {kernelName: 'RotateWithOffset', kernelFunc: RotateWithOffset},
];

module.exports = {KERNELS};
