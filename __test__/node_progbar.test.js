'use strict';
// model.fit's progress with verbose 1 (the default), as tfjs-node shows it: `Epoch N / M` and a
// summary line per epoch on stdout whether or not it is a terminal; the live bar on stderr, on a
// terminal only.

const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {spawnSync} = require('node:child_process');
const {tf} = require('./fixtures/helpers');
const progbar = require('../js/node/progbar');

const root = path.resolve(__dirname, '..');

function fakeStream(isTTY) {
  return {isTTY, columns: 100, chunks: [], write(s) {
    this.chunks.push(String(s));
    return true;
  }};
}

/** Fits a small model with the bar on `stream`; returns the history and the logged lines. */
async function fit(verbose, stream, epochs = 2) {
  const saved = {...progbar.progressBarHelper};
  const lines = [];
  progbar.progressBarHelper.stream = stream;
  progbar.progressBarHelper.log = (line) => lines.push(line);
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 2, inputShape: [3], activation: 'softmax'}));
  model.compile({optimizer: 'sgd', loss: 'categoricalCrossentropy', metrics: ['accuracy']});
  const xs = tf.randomUniform([12, 3], 0, 1, 'float32', 5);
  const ys = tf.oneHot(tf.tensor1d([0, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0], 'int32'), 2);
  try {
    const args = {epochs, batchSize: 4, validationSplit: 0.25};
    if (verbose !== undefined) args.verbose = verbose;
    const history = await model.fit(xs, ys, args);
    return {history, lines};
  } finally {
    Object.assign(progbar.progressBarHelper, saved);
    tf.dispose([xs, ys]);
    model.dispose();
  }
}

/** The lines tfjs-node logs for two epochs of `history`: epoch headers and summaries. */
function assertEpochLines(lines, history) {
  assert.equal(lines.length, 4, lines.join('\n'));
  assert.equal(lines[0], 'Epoch 1 / 2');
  assert.equal(lines[2], 'Epoch 2 / 2');
  [lines[1], lines[3]].forEach((line, i) => {
    const shown = (key) => `${key}=${progbar.getSuccinctNumberDisplay(history.history[key][i])} `;
    assert.equal(line.replace(/^\d+ms \d+us\/step - /, ''),
        ['acc', 'loss', 'val_acc', 'val_loss'].map(shown).join(''), line);
  });
}

test('verbose 1 on a terminal: a live bar per epoch, epoch lines and summaries logged', async () => {
  const stream = fakeStream(true);
  const {history, lines} = await fit(1, stream);
  assertEpochLines(lines, history);
  // Live updates redraw one line with \r and carry the batch's loss and metrics.
  const bars = stream.chunks.filter((c) => c.startsWith('\reta='));
  assert.ok(bars.length >= 2, 'at least one bar update per epoch');
  assert.match(bars[bars.length - 1], /eta=\d+(\.\d)? =+> 3\/3 acc=\S+ loss=\S+/);
  // The bar is cleared before each summary is logged.
  assert.equal(stream.chunks.filter((c) => c === '\r\x1b[K').length, 2);
});

test('the default verbosity shows the progress too (as tfjs-node)', async () => {
  const {lines} = await fit(undefined, fakeStream(true), 1);
  assert.equal(lines[0], 'Epoch 1 / 1');
});

test('off a terminal: the same lines, no bar; verbose 0: nothing', async () => {
  const pipe = fakeStream(false);
  const {history, lines} = await fit(1, pipe);
  assertEpochLines(lines, history);
  assert.deepEqual(pipe.chunks, []);
  const tty = fakeStream(true);
  const quiet = await fit(0, tty);
  assert.deepEqual(tty.chunks, []);
  assert.deepEqual(quiet.lines, []);
});

test('piped stdout of a training script carries the epoch lines, as tfjs-node writes them', () => {
  const script = `
    const tf = require(${JSON.stringify(root)});
    const model = tf.sequential();
    model.add(tf.layers.dense({units: 1, inputShape: [2]}));
    model.compile({optimizer: 'sgd', loss: 'meanSquaredError', metrics: ['mae']});
    model.fit(tf.ones([8, 2]), tf.ones([8, 1]), {epochs: 2, batchSize: 4, validationSplit: 0.25})
        .then((h) => console.error(JSON.stringify(h.history)));`;
  const run = spawnSync(process.execPath, ['-e', script], {encoding: 'utf8'});
  assert.equal(run.status, 0, run.stderr);
  const history = JSON.parse(run.stderr.trim().split('\n').pop());
  const lines = run.stdout.split('\n');
  assert.equal(lines.pop(), '');
  assert.equal(lines.length, 4, run.stdout);
  lines.forEach((line, i) => {
    if (i % 2 === 0) return assert.equal(line, `Epoch ${i / 2 + 1} / 2`);
    const e = (i - 1) / 2;
    const metrics = ['loss', 'mae', 'val_loss', 'val_mae']
        .map((k) => `${k}=${progbar.getSuccinctNumberDisplay(history[k][e])} `).join('');
    assert.match(line, /^\d+ms \d+us\/step - /);
    assert.equal(line.replace(/^\d+ms \d+us\/step - /, ''), metrics);
  });
});

test('numbers are shown succinctly', () => {
  assert.equal(progbar.getSuccinctNumberDisplay(0.5), '0.500');
  assert.equal(progbar.getSuccinctNumberDisplay(0.0123), '0.0123');
  assert.equal(progbar.getSuccinctNumberDisplay(0.0000123), '1.23e-5');
  assert.equal(progbar.getSuccinctNumberDisplay(1234.5), '1234.50');
  assert.equal(progbar.getSuccinctNumberDisplay(NaN), 'NaN');
});
