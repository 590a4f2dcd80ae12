'use strict';
// Image codecs through TF's ops (DecodeJpeg/Png/Bmp/Gif, EncodeJpeg/Png), with tfjs-node's
// options and defaults. Decoded images are int32 tensors, as in tfjs-node.

const tfc = require('@tensorflow/tfjs-core');
const {A} = require('../kernels/families/common');
const {tensorflowBackend} = require('./backend');

const ImageType = Object.freeze({JPEG: 'jpeg', PNG: 'png', GIF: 'gif', BMP: 'BMP'});

function checkContents(contents, fn) {
  if (!(contents instanceof Uint8Array)) {
    throw new TypeError(`${fn}: contents must be a Uint8Array (or Buffer) of encoded image ` +
                        `bytes, got ${contents === null ? 'null' : typeof contents}`);
  }
  if (contents.length === 0) throw new Error(`${fn}: the image contents are empty`);
}

function checkChannels(channels, allowed, fn) {
  if (!allowed.includes(channels)) {
    throw new Error(`${fn}: channels must be one of ${allowed.join(', ')}, got ${channels}`);
  }
}

/**
 * Runs `opName` on a native tensor made from (shape, dtype, data), which is freed afterwards;
 * returns the raw output. TF's refusals become Errors that start with `what`.
 */
function runOnInput(b, what, opName, attrs, shape, dtype, data) {
  const input = b.createRaw(shape, dtype, data);
  try {
    return b.exec(opName, attrs, [input], 1)[0];
  } catch (e) {
    const err = new Error(`${what}: ${e.message}`);
    err.cause = e;
    throw err;
  } finally {
    b.free(input);
  }
}

/**
 * Runs one decode op on `contents` and returns its output as an int32 tfjs tensor. TF's
 * refusals (truncated or non-image bytes) become Errors naming the decoder.
 */
function runDecode(fn, opName, attrs, contents) {
  const b = tensorflowBackend(fn);
  let out = runOnInput(b, `${fn}: the image could not be decoded`, opName, attrs, [], 'string',
                       [contents]);
  if (out.dtype !== 'int32') out = b.castRaw(out, 'int32');
  return tfc.engine().makeTensorFromTensorInfo(b.wrap(out), b);
}

/** Decodes a JPEG into an int32 tensor [height, width, channels]. */
function decodeJpeg(contents, channels = 0, ratio = 1, fancyUpscaling = true,
                    tryRecoverTruncated = false, acceptableFraction = 1, dctMethod = '') {
  checkContents(contents, 'decodeJpeg');
  checkChannels(channels, [0, 1, 3], 'decodeJpeg');
  if (![1, 2, 4, 8].includes(ratio)) {
    throw new Error(`decodeJpeg: ratio must be 1, 2, 4 or 8, got ${ratio}`);
  }
  if (!['', 'INTEGER_FAST', 'INTEGER_ACCURATE'].includes(dctMethod)) {
    throw new Error(`decodeJpeg: dctMethod must be '', 'INTEGER_FAST' or 'INTEGER_ACCURATE', ` +
                    `got '${dctMethod}'`);
  }
  return runDecode('decodeJpeg', 'DecodeJpeg', [
    A.int('channels', channels), A.int('ratio', ratio), A.bool('fancy_upscaling', fancyUpscaling),
    A.bool('try_recover_truncated', tryRecoverTruncated),
    A.float('acceptable_fraction', acceptableFraction), A.str('dct_method', dctMethod),
  ], contents);
}

/** Decodes a PNG into an int32 tensor [height, width, channels]. */
function decodePng(contents, channels = 0, dtype = 'int32') {
  if (dtype !== 'int32') {
    throw new Error('decodeImage could only return Tensor of type `int32` for now.');
  }
  checkContents(contents, 'decodePng');
  checkChannels(channels, [0, 1, 3, 4], 'decodePng');
  return runDecode('decodePng', 'DecodePng',
                   [A.int('channels', channels), A.type('dtype', 'uint8')], contents);
}

/** Decodes a BMP into an int32 tensor [height, width, channels]. */
function decodeBmp(contents, channels = 0) {
  checkContents(contents, 'decodeBmp');
  checkChannels(channels, [0, 1, 3, 4], 'decodeBmp');
  return runDecode('decodeBmp', 'DecodeBmp', [A.int('channels', channels)], contents);
}

/** Decodes a GIF (every frame) into an int32 tensor [frames, height, width, 3]. */
function decodeGif(contents) {
  checkContents(contents, 'decodeGif');
  return runDecode('decodeGif', 'DecodeGif', [], contents);
}

/** The image type from the leading bytes (as TF's DecodeImage sniffs it). */
function getImageType(content) {
  if (content.length > 3 && content[0] === 0xff && content[1] === 0xd8 && content[2] === 0xff) {
    return ImageType.JPEG;
  }
  if (content.length > 4 && content[0] === 0x47 && content[1] === 0x49 && content[2] === 0x46 &&
      content[3] === 0x38) {
    return ImageType.GIF;
  }
  if (content.length > 8 && content[0] === 0x89 && content[1] === 0x50 &&
      content[2] === 0x4e && content[3] === 0x47 && content[4] === 0x0d &&
      content[5] === 0x0a && content[6] === 0x1a && content[7] === 0x0a) {
    return ImageType.PNG;
  }
  if (content.length > 3 && content[0] === 0x42 && content[1] === 0x4d) {
    return ImageType.BMP;
  }
  throw new Error('Expected image (BMP, JPEG, PNG, or GIF), but got unsupported image type');
}

/**
 * Decodes a JPEG, PNG, BMP or GIF (sniffed from its bytes). GIFs give [frames, h, w, 3], or
 * the first frame as [h, w, 3] with `expandAnimations: false`; others give [h, w, channels].
 */
function decodeImage(content, channels = 0, dtype = 'int32', expandAnimations = true) {
  if (dtype !== 'int32') {
    throw new Error('decodeImage could only return Tensor of type `int32` for now.');
  }
  checkContents(content, 'decodeImage');
  switch (getImageType(content)) {
    case ImageType.JPEG:
      return decodeJpeg(content, channels);
    case ImageType.PNG:
      return decodePng(content, channels);
    case ImageType.BMP:
      return decodeBmp(content, channels);
    case ImageType.GIF: {
      if (channels !== 0 && channels !== 3) {
        throw new Error(`decodeImage: GIFs decode to 3 channels, got channels ${channels}`);
      }
      const frames = decodeGif(content);
      if (expandAnimations) return frames;
      const first = tfc.tidy(() => frames.slice(0, 1).squeeze([0]));
      frames.dispose();
      return first;
    }
    default:
      return null;
  }
}

/** Runs an encode op on the image's bytes; resolves to the encoded Uint8Array. */
async function encodeImage(fn, opName, attrs, image, allowedChannels) {
  if (!(image instanceof tfc.Tensor) || image.rank !== 3) {
    throw new TypeError(`${fn}: image must be a 3D tensor [height, width, channels]`);
  }
  if (!allowedChannels.includes(image.shape[2])) {
    throw new Error(`${fn}: the image must have ${allowedChannels.join(', ')} channels, ` +
                    `got ${image.shape[2]}`);
  }
  if (image.dtype === 'string' || image.dtype === 'complex64') {
    throw new TypeError(`${fn}: image must be a numeric tensor, got ${image.dtype}`);
  }
  const b = tensorflowBackend(fn);
  const data = new Uint8Array(await image.data());
  const out = runOnInput(b, `${fn}: the image could not be encoded`, opName, attrs, image.shape,
                         'uint8', data);
  try {
    return Uint8Array.from(b.readRaw(out.id)[0]);
  } finally {
    b.free(out);
  }
}

/** Encodes an image tensor [h, w, 1|3] as JPEG. */
async function encodeJpeg(image, format = '', quality = 95, progressive = false,
                          optimizeSize = false, chromaDownsampling = true, densityUnit = 'in',
                          xDensity = 300, yDensity = 300, xmpMetadata = '') {
  if (!['', 'grayscale', 'rgb'].includes(format)) {
    throw new Error(`encodeJpeg: format must be '', 'grayscale' or 'rgb', got '${format}'`);
  }
  if (!Number.isInteger(quality) || quality < 0 || quality > 100) {
    throw new Error(`encodeJpeg: quality must be an integer in [0, 100], got ${quality}`);
  }
  if (!['in', 'cm'].includes(densityUnit)) {
    throw new Error(`encodeJpeg: densityUnit must be 'in' or 'cm', got '${densityUnit}'`);
  }
  const channels = format === 'grayscale' ? [1] : format === 'rgb' ? [3] : [1, 3];
  return encodeImage('encodeJpeg', 'EncodeJpeg', [
    A.str('format', format), A.int('quality', quality), A.bool('progressive', progressive),
    A.bool('optimize_size', optimizeSize), A.bool('chroma_downsampling', chromaDownsampling),
    A.str('density_unit', densityUnit), A.int('x_density', xDensity), A.int('y_density', yDensity),
    A.str('xmp_metadata', xmpMetadata),
  ], image, channels);
}

/** Encodes an image tensor [h, w, 1|2|3|4] as PNG; `compression` -1 (default zlib) to 9. */
async function encodePng(image, compression = 1) {
  if (!Number.isInteger(compression) || compression < -1 || compression > 9) {
    throw new Error(`encodePng: compression must be an integer in [-1, 9], got ${compression}`);
  }
  return encodeImage('encodePng', 'EncodePng', [A.int('compression', compression),
                                                A.type('T', 'uint8')],
                     image, [1, 2, 3, 4]);
}

module.exports = {
  ImageType,
  getImageType,
  decodeImage,
  decodeJpeg,
  decodePng,
  decodeBmp,
  decodeGif,
  encodeJpeg,
  encodePng,
};
