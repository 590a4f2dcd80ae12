'use strict';
// The model.fit progress bar: shown on a terminal with verbose 1, silent otherwise.

const test = require('node:test');
const assert = require('node:assert/strict');
const {tf} = require('./fixtures/helpers');
const progbar = require('../js/node/progbar');

function fakeStream(isTTY) {
  return {isTTY, columns: 100, chunks: [], write(s) {
    this.chunks.push(String(s));
    return true;
  }};
}

async function fit(verbose, stream, epochs = 2) {
  const saved = progbar.progressBarHelper.stream;
  progbar.progressBarHelper.stream = stream;
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 2, inputShape: [3], activation: 'softmax'}));
  model.compile({optimizer: 'sgd', loss: 'categoricalCrossentropy', metrics: ['accuracy']});
  const xs = tf.randomUniform([12, 3], 0, 1, 'float32', 5);
  const ys = tf.oneHot(tf.tensor1d([0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0], 'int32'), 2);
  try {
    const args = {epochs, batchSize: 4, validationSplit: 0.25};
    if (verbose !== undefined) args.verbose = verbose;
    return await model.fit(xs, ys, args);
  } finally {
    progbar.progressBarHelper.stream = saved;
    tf.dispose([xs, ys]);
    model.dispose();
  }
}

test('verbose 1 on a terminal: a live bar per epoch, then the epoch summary', async () => {
  const stream = fakeStream(true);
  const history = await fit(1, stream);
  const out = stream.chunks.join('');
  for (const epoch of [1, 2]) assert.match(out, new RegExp(`Epoch ${epoch} / 2\\n`));
  // Live updates redraw one line with \r and carry the batch's loss and metrics.
  const bars = stream.chunks.filter((c) => c.startsWith('\reta='));
  assert.ok(bars.length >= 2, 'at least one bar update per epoch');
  assert.match(bars[bars.length - 1], /eta=\d+(\.\d)? =+> 3\/3 acc=\S+ loss=\S+/);
  const summaries = out.split('\n').filter((l) => /us\/step - /.test(l));
  assert.equal(summaries.length, 2);
  summaries.forEach((line, i) => {
    const loss = progbar.getSuccinctNumberDisplay(history.history.loss[i]);
    const valLoss = progbar.getSuccinctNumberDisplay(history.history.val_loss[i]);
    assert.match(line, /\d+ms \d+us\/step - acc=/);
    assert.ok(line.includes(` loss=${loss} `), line);
    assert.ok(line.includes(`val_loss=${valLoss}`), line);
  });
});

test('the default verbosity shows the bar too (as tfjs-node)', async () => {
  const stream = fakeStream(true);
  await fit(undefined, stream, 1);
  assert.match(stream.chunks.join(''), /Epoch 1 \/ 1/);
});

test('nothing when the output is not a terminal or verbose is 0', async () => {
  const pipe = fakeStream(false);
  await fit(1, pipe);
  assert.deepEqual(pipe.chunks, []);
  const tty = fakeStream(true);
  await fit(0, tty);
  assert.deepEqual(tty.chunks, []);
});

test('numbers are shown succinctly', () => {
  assert.equal(progbar.getSuccinctNumberDisplay(0.5), '0.500');
  assert.equal(progbar.getSuccinctNumberDisplay(0.0123), '0.0123');
  assert.equal(progbar.getSuccinctNumberDisplay(0.0000123), '1.23e-5');
  assert.equal(progbar.getSuccinctNumberDisplay(1234.5), '1234.50');
  assert.equal(progbar.getSuccinctNumberDisplay(NaN), 'NaN');
});
