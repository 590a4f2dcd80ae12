'use strict';
// Serving inputs of many shapes (issue 40), inside a worker process (benches/worker.js) on one
// backend's `tf`: the convnet (conv2d of 8 3x3 filters on any height and width,
// global average pooling, dense 4) predicts `CALLS` images of one shape [1, 32, 32, 3], as many
// of one shape of the widths' mean (the same work as the next), then `CALLS` images over
// `CALLS / 2` widths, each seen twice, each a fresh model, every result read as a user's code
// reads it. Each run is timed from its model's first call, so recording and
// compiling count, as a server sees them; the widths' run is also timed apart for a width's
// first call and its second; the RSS it added and, on this package, the call graphs alive after
// it are reported too.

const {performance} = require('perf_hooks');

const CALLS = 800;
const HEIGHT = 32;

function convnet(tf) {
  const init = (seed) => tf.initializers.glorotUniform({seed});
  const model = tf.sequential();
  model.add(tf.layers.conv2d({filters: 8, kernelSize: 3, activation: 'relu',
                              inputShape: [null, null, 3], kernelInitializer: init(1)}));
  model.add(tf.layers.globalAveragePooling2d({}));
  model.add(tf.layers.dense({units: 4, kernelInitializer: init(2)}));
  return model;
}

/**
 * Ms per predict of a fresh model over `images` (`[{width, pixels}]`, one call each): in all,
 * and apart for the calls of a width seen before and those of a width new to the model (where
 * oneDNN's convolution, in TF, creates its primitive for the shape, whatever ran the call).
 */
function perCall(tf, images) {
  const model = convnet(tf);
  const seen = new Set();
  const sums = {first: 0, firsts: 0, repeat: 0, repeats: 0};
  const t0 = performance.now();
  for (const {width, pixels} of images) {
    const t = performance.now();
    const x = tf.tensor4d(pixels, [1, HEIGHT, width, 3]);
    const y = model.predict(x);
    y.dataSync();
    tf.dispose([x, y]);
    const kind = seen.has(width) ? 'repeat' : 'first';
    sums[kind] += performance.now() - t;
    sums[`${kind}s`]++;
    seen.add(width);
  }
  const ms = (performance.now() - t0) / images.length;
  model.dispose();
  return {ms, newWidthMs: sums.first / sums.firsts, seenWidthMs: sums.repeat / sums.repeats};
}

/** `CALLS` images of `widths` in turn, one array of pixels per width. */
function imagesOf(widths) {
  const pixelsOf = new Map(widths.map((width) => [width, Float32Array.from(
      {length: HEIGHT * width * 3}, (_, i) => (i % 251) / 251)]));
  return Array.from({length: CALLS}, (_, k) => {
    const width = widths[k % widths.length];
    return {width, pixels: pixelsOf.get(width)};
  });
}

/**
 * The run's inputs, also handed to benches/keras/worker.py's 'shapes' task (the same run on a
 * bare TF graph): widths 16 to 415 in a shuffled order (the same every run), each twice.
 */
function plan() {
  const widths = Array.from({length: CALLS / 2}, (_, i) => 16 + (i * 173) % (CALLS / 2));
  const meanWidth = Math.round(widths.reduce((a, w) => a + w, 0) / widths.length);
  return {calls: CALLS, height: HEIGHT, fixedWidth: 32, meanWidth, widths};
}

function shapes(tf) {
  const {widths, meanWidth, fixedWidth} = plan();
  const fixedMs = perCall(tf, imagesOf([fixedWidth])).ms;
  // One shape of the widths' mean: the same work per call as the widths, in one shape.
  const fixedMeanMs = perCall(tf, imagesOf([meanWidth])).ms;
  const images = imagesOf(widths);
  if (global.gc) global.gc();
  const rssBefore = process.memoryUsage().rss;
  const {ms: variableMs, newWidthMs, seenWidthMs} = perCall(tf, images);
  const rssDeltaMB = (process.memoryUsage().rss - rssBefore) / (1 << 20);
  const stats = tf.node && typeof tf.node.callGraphStats === 'function' ?
      tf.node.callGraphStats() : null;
  return {fixedMs, fixedMeanMs, meanWidth, variableMs, newWidthMs, seenWidthMs, rssDeltaMB,
          calls: images.length, widths: widths.length, graphsAlive: stats ? stats.alive : null};
}

module.exports = {shapes, plan};
