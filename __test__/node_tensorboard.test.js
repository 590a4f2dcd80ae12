'use strict';
// TensorBoard event files, read back with a TFRecord/Event parser written here (its own
// CRC-32C and protobuf decoding), checking every value written.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const {tf, tmpDir} = require('./fixtures/helpers');

// ------------------------------------------------------------------ an independent reader

function crc32cBitwise(bytes) {
  let crc = ~0;
  for (const b of bytes) {
    crc ^= b;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0x82f63b78 & -(crc & 1));
  }
  return ~crc >>> 0;
}

function unmask(masked) {
  const rot = (masked - 0xa282ead8) >>> 0;
  return ((rot >>> 17) | (rot << 15)) >>> 0;
}

/** Splits a TFRecord file into its records, checking both CRCs of each. */
function readRecords(file) {
  const buf = fs.readFileSync(file);
  const records = [];
  let pos = 0;
  while (pos < buf.length) {
    assert.ok(pos + 12 <= buf.length, 'truncated record header');
    const len = Number(buf.readBigUInt64LE(pos));
    assert.equal(unmask(buf.readUInt32LE(pos + 8)), crc32cBitwise(buf.subarray(pos, pos + 8)),
                 'length CRC');
    const data = buf.subarray(pos + 12, pos + 12 + len);
    assert.equal(data.length, len, 'truncated record');
    assert.equal(unmask(buf.readUInt32LE(pos + 12 + len)), crc32cBitwise(data), 'data CRC');
    records.push(data);
    pos += 16 + len;
  }
  return records;
}

/** Decodes a message into {field: [raw values]}: varints as BigInt, I64/I32 as Buffers. */
function decode(buf) {
  const out = {};
  let pos = 0;
  const varint = () => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[pos++];
      v |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
      shift += 7n;
    }
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >> 3;
    let value;
    switch (key & 7) {
      case 0: value = varint(); break;
      case 1: value = buf.subarray(pos, pos + 8); pos += 8; break;
      case 2: {
        const len = Number(varint());
        value = buf.subarray(pos, pos + len);
        pos += len;
        break;
      }
      case 5: value = buf.subarray(pos, pos + 4); pos += 4; break;
      default: throw new Error(`wire type ${key & 7}`);
    }
    (out[field] = out[field] || []).push(value);
  }
  return out;
}

/** Event protos of one file as plain objects. */
function readEvents(file) {
  return readRecords(file).map((rec) => {
    const e = decode(rec);
    const event = {wallTime: e[1][0].readDoubleLE(0)};
    if (e[2]) event.step = Number(e[2][0]);
    if (e[3]) event.fileVersion = e[3][0].toString('utf8');
    if (e[5]) {
      event.values = (decode(e[5][0])[1] || []).map((v) => {
        const f = decode(v);
        const value = {tag: f[1][0].toString('utf8')};
        if (f[2]) value.simpleValue = f[2][0].readFloatLE(0);
        if (f[9]) {
          const m = decode(f[9][0]);
          value.metadata = {};
          if (m[1]) {
            const p = decode(m[1][0]);
            value.metadata.pluginName = p[1][0].toString('utf8');
            value.metadata.content = p[2] ? p[2][0] : Buffer.alloc(0);
          }
          if (m[3]) value.metadata.description = m[3][0].toString('utf8');
        }
        if (f[8]) {
          const t = decode(f[8][0]);
          const dims = (decode(t[2][0])[2] || []).map((d) => Number(decode(d)[1][0]));
          const content = t[4] ? t[4][0] : Buffer.alloc(0);
          const values = [];
          for (let i = 0; i < content.length; i += 4) values.push(content.readFloatLE(i));
          value.tensor = {dtype: Number(t[1][0]), shape: dims, values};
        }
        return value;
      });
    }
    return event;
  });
}

function eventFiles(dir) {
  return fs.readdirSync(dir).filter((f) => f.startsWith('events.out.tfevents.'))
      .map((f) => path.join(dir, f));
}

function onlyEvents(dir) {
  const files = eventFiles(dir);
  assert.equal(files.length, 1, `one event file in ${dir}`);
  const events = readEvents(files[0]);
  assert.equal(events[0].fileVersion, 'brain.Event:2');
  return events.slice(1);
}

// ------------------------------------------------------------------ tests

test('scalars: every value, step and tag is in the event file', () => {
  const logdir = path.join(tmpDir(), 'scalars');
  const w = tf.node.summaryFileWriter(logdir);
  assert.equal(tf.node.summaryFileWriter(logdir), w, 'one writer per logdir');
  const t0 = Date.now() / 1000;
  const values = [0.5, -3.25, 1e-7, 12345.678];
  values.forEach((v, i) => w.scalar('loss', v, i));
  const s = tf.scalar(2.5);
  w.scalar('from_tensor', s, 10, 'a described scalar');
  s.dispose();
  assert.throws(() => w.scalar('bad', tf.tensor1d([1, 2]), 1), /non-scalar/);
  assert.throws(() => w.scalar('bad', 1, 1.5), /integer/);
  w.flush();
  const files = eventFiles(logdir);
  assert.equal(files.length, 1);
  assert.match(path.basename(files[0]), /^events\.out\.tfevents\.\d{10}\..+\.v2$/);
  const events = onlyEvents(logdir);
  assert.equal(events.length, 5);
  values.forEach((v, i) => {
    assert.equal(events[i].step, i);
    assert.equal(events[i].values.length, 1);
    assert.equal(events[i].values[0].tag, 'loss');
    assert.equal(events[i].values[0].simpleValue, Math.fround(v));
    assert.ok(events[i].wallTime >= t0 - 1 && events[i].wallTime <= Date.now() / 1000 + 1);
  });
  assert.equal(events[4].values[0].tag, 'from_tensor');
  assert.equal(events[4].step, 10);
  assert.equal(events[4].values[0].simpleValue, 2.5);
  assert.equal(events[4].values[0].metadata.description, 'a described scalar');
});

test('histograms: buckets cover the data and count every value', () => {
  const logdir = path.join(tmpDir(), 'hist');
  const w = tf.node.summaryFileWriter(logdir);
  const data = [];
  for (let i = 0; i < 100; i++) data.push(Math.sin(i) * 3 + (i % 7));
  const t = tf.tensor2d(data, [10, 10]);
  w.histogram('weights', t, 3, 8, 'layer weights');
  w.histogram('default_buckets', t, 4);
  const same = tf.fill([5], 2);
  w.histogram('singular', same, 5);
  const empty = tf.tensor1d([]);
  w.histogram('empty', empty, 6);
  w.histogram('ints', tf.tensor1d([1, 2, 3, 4], 'int32'), 7, 2);
  tf.dispose([t, same, empty]);
  assert.throws(() => w.histogram('bad', [1, 2], 1, 0), /strictly positive integer/);
  w.flush();

  const events = onlyEvents(logdir);
  assert.equal(events.length, 5);
  const [h8, h30, singular, emptyEv, ints] = events.map((e) => e.values[0]);
  assert.equal(events[0].step, 3);
  for (const h of [h8, h30, singular, emptyEv, ints]) {
    assert.equal(h.metadata.pluginName, 'histograms');
    assert.equal(h.metadata.content.length, 0);
    assert.equal(h.tensor.dtype, 1);
  }
  assert.equal(h8.tag, 'weights');
  assert.equal(h8.metadata.description, 'layer weights');
  const check = (h, buckets) => {
    assert.deepEqual(h.tensor.shape, [buckets, 3]);
    const rows = [];
    for (let i = 0; i < buckets; i++) rows.push(h.tensor.values.slice(3 * i, 3 * i + 3));
    const min = Math.fround(Math.min(...data));
    const max = Math.fround(Math.max(...data));
    assert.equal(rows[0][0], min);
    assert.equal(rows[buckets - 1][1], max);
    let total = 0;
    rows.forEach(([lo, hi, count], i) => {
      if (i > 0) assert.equal(lo, rows[i - 1][1], 'contiguous buckets');
      const inside = data.filter((v) => {
        const f = Math.fround(v);
        return f >= lo && (i === buckets - 1 ? f <= hi : f < hi);
      }).length;
      // Values sitting exactly on an edge may fall either side by float32 rounding.
      assert.ok(Math.abs(inside - count) <= 1, `bucket ${i}: ${count} vs ${inside}`);
      total += count;
    });
    assert.equal(total, data.length);
  };
  check(h8, 8);
  check(h30, 30);
  assert.deepEqual(singular.tensor.shape, [1, 3]);
  assert.deepEqual(singular.tensor.values, [1.5, 2.5, 5]);
  assert.deepEqual(emptyEv.tensor.shape, [0, 3]);
  assert.deepEqual(emptyEv.tensor.values, []);
  assert.deepEqual(ints.tensor.values, [1, 2.5, 2, 2.5, 4, 2]);
});

test('events are queued until maxQueue is exceeded, flush() or the flush timer', async () => {
  const logdir = path.join(tmpDir(), 'queue');
  const w = tf.node.summaryFileWriter(logdir, 2, 50);
  w.scalar('a', 1, 1);
  w.scalar('a', 2, 2);
  assert.equal(onlyEvents(logdir).length, 0);
  w.scalar('a', 3, 3);
  assert.equal(onlyEvents(logdir).length, 3);
  w.scalar('a', 4, 4);
  assert.equal(onlyEvents(logdir).length, 3);
  await new Promise((r) => setTimeout(r, 150));
  assert.deepEqual(onlyEvents(logdir).map((e) => e.values[0].simpleValue), [1, 2, 3, 4]);
});

test('the reader rejects a corrupted record (its CRCs are real)', () => {
  const logdir = path.join(tmpDir(), 'crc');
  const w = tf.node.summaryFileWriter(logdir);
  w.scalar('x', 1, 1);
  w.flush();
  const [file] = eventFiles(logdir);
  const buf = fs.readFileSync(file);
  buf[buf.length - 6] ^= 0x01;
  fs.writeFileSync(file, buf);
  assert.throws(() => readRecords(file), /data CRC/);
});

test('tensorBoard() callback logs what model.fit reports', async () => {
  const logdir = tmpDir();
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 3, inputShape: [2], activation: 'relu'}));
  model.add(tf.layers.dense({units: 1}));
  model.compile({optimizer: tf.train.sgd(0.05), loss: 'meanSquaredError', metrics: ['mae']});
  const xs = tf.randomNormal([20, 2], 0, 1, 'float32', 1);
  const ys = xs.sum(1, true);
  const history = await model.fit(xs, ys, {
    epochs: 3, batchSize: 5, validationSplit: 0.2, verbose: 0,
    callbacks: [tf.node.tensorBoard(logdir, {updateFreq: 'batch', histogramFreq: 1})],
  });
  tf.dispose([xs, ys]);

  const train = onlyEvents(path.join(logdir, 'train'));
  const val = onlyEvents(path.join(logdir, 'val'));
  const series = (events, tag) => events.flatMap((e) => (e.values || [])
      .filter((v) => v.tag === tag).map((v) => [e.step, v.simpleValue]));
  for (const metric of ['loss', 'mae']) {
    assert.deepEqual(series(train, `epoch_${metric}`),
                     history.history[metric].map((v, i) => [i + 1, Math.fround(v)]));
    assert.deepEqual(series(val, `epoch_${metric}`),
                     history.history[`val_${metric}`].map((v, i) => [i + 1, Math.fround(v)]));
    // 16 training samples in batches of 5: 4 batches per epoch, steps count batches seen.
    assert.deepEqual(series(train, `batch_${metric}`).map(([s]) => s),
                     Array.from({length: 12}, (_, i) => i + 1));
  }
  const histTags = new Set(train.flatMap((e) => (e.values || []).filter((v) => v.tensor)
      .map((v) => `${v.tag}@${e.step}`)));
  for (const w of model.weights) {
    for (const epoch of [0, 1, 2]) assert.ok(histTags.has(`${w.name}@${epoch}`), `${w.name}@${epoch}`);
  }
  assert.throws(() => tf.node.tensorBoard(logdir, {updateFreq: 'sometimes'}), /updateFreq/);
  assert.throws(() => tf.node.tensorBoard(logdir, {histogramFreq: -1}), /histogramFreq/);
  model.dispose();
});

test('the members tfjs-node programs reach: ensure*WriterCreated, trainWriter, writer.backend', async () => {
  const logdir = tmpDir();
  const callback = tf.node.tensorBoard(logdir);
  assert.equal(callback.trainWriter, null);
  const train = callback.ensureTrainWriterCreated();
  const val = callback.ensureValWriterCreated();
  assert.equal(callback.trainWriter, train);
  assert.equal(callback.valWriter, val);
  assert.equal(callback.ensureTrainWriterCreated(), train, 'a second call keeps the writer');
  assert.equal(train, tf.node.summaryFileWriter(path.join(logdir, 'train')));

  // A fit with the callback logs through those writers (tfjs-node's spec spies on them).
  let scalars = 0;
  const scalar = train.scalar.bind(train);
  train.scalar = (...args) => {
    scalars++;
    return scalar(...args);
  };
  const model = tf.sequential({layers: [tf.layers.dense({units: 1, inputShape: [2]})]});
  model.compile({optimizer: 'sgd', loss: 'meanSquaredError'});
  const xs = tf.ones([4, 2]);
  const ys = tf.ones([4, 1]);
  await model.fit(xs, ys, {epochs: 2, verbose: 0, callbacks: [callback]});
  assert.equal(scalars, 2, 'epoch_loss once per epoch');

  // Writing a tf.Scalar leaves TF's tensor count where it was.
  assert.equal(train.backend, tf.backend());
  const before = train.backend.getNumOfTFTensors();
  const value = tf.scalar(42);
  train.scalar('foo', value, 0);
  train.flush();
  value.dispose();
  assert.equal(train.backend.getNumOfTFTensors(), before);
  tf.dispose([xs, ys]);
  model.dispose();
});
