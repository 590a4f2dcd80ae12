'use strict';
// TensorBoard summaries: event files (TFRecord framing of `Event` protos) written in JS, the
// same records TF's summary writer ops produce, and the `tensorBoard()` callback for model.fit.

const fs = require('fs');
const os = require('os');
const path = require('path');
const tfc = require('@tensorflow/tfjs-core');
const tfl = require('@tensorflow/tfjs-layers');
const {BACKEND_NAME} = require('../backend');
const {TF_DTYPE_NAMES} = require('../backend/dtypes');
const {Writer} = require('./proto');

// ------------------------------------------------------------------ TFRecord framing

const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[i] = c >>> 0;
  }
  return table;
})();

/** CRC-32C (Castagnoli) of `bytes`. */
function crc32c(bytes) {
  let crc = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) crc = CRC32C_TABLE[(crc ^ bytes[i]) & 0xff] ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/** The masked CRC TFRecord files store: rotate right by 15, plus a constant. */
function maskedCrc32c(bytes) {
  const crc = crc32c(bytes);
  return ((((crc >>> 15) | (crc << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** One TFRecord: length (u64 LE), its masked CRC, the data, the data's masked CRC. */
function tfRecord(data) {
  const header = Buffer.alloc(12);
  header.writeBigUInt64LE(BigInt(data.length), 0);
  header.writeUInt32LE(maskedCrc32c(header.subarray(0, 8)), 8);
  const footer = Buffer.alloc(4);
  footer.writeUInt32LE(maskedCrc32c(data), 0);
  return Buffer.concat([header, data, footer]);
}

// ------------------------------------------------------------------ Event protos

const DT_FLOAT = TF_DTYPE_NAMES.indexOf('DT_FLOAT');
const DT_STRING = TF_DTYPE_NAMES.indexOf('DT_STRING');

/** event.proto `Event` with `wall_time`, `step` and one of `file_version` / `summary`. */
function eventProto({wallTime, step, fileVersion, summaryValue}) {
  const e = new Writer();
  e.double(1, wallTime);
  if (step != null) e.varint(2, step);
  if (fileVersion != null) e.string(3, fileVersion);
  if (summaryValue != null) {
    const summary = new Writer();
    summary.message(1, summaryValue);
    e.message(5, summary);
  }
  return e.finish();
}

/** `SummaryMetadata` with optional plugin data and description. */
function summaryMetadata({pluginName, content, description}) {
  const m = new Writer();
  if (pluginName != null) {
    const plugin = new Writer();
    plugin.string(1, pluginName);
    if (content != null && content.length > 0) plugin.bytes(2, content);
    m.message(1, plugin);
  }
  if (description) m.string(3, description);
  return m;
}

/** A float32 `TensorProto` of `shape` holding `values` (as tensor_content). */
function floatTensorProto(shape, values) {
  const t = new Writer();
  t.varint(1, DT_FLOAT);
  const shapeProto = new Writer();
  for (const d of shape) {
    const dim = new Writer();
    dim.varint(1, d);
    shapeProto.message(2, dim);
  }
  t.message(2, shapeProto);
  const content = Buffer.alloc(4 * values.length);
  for (let i = 0; i < values.length; i++) content.writeFloatLE(values[i], 4 * i);
  if (content.length > 0) t.bytes(4, content);
  return t;
}

// ------------------------------------------------------------------ histogram buckets

/**
 * `[leftEdge, rightEdge, count]` rows for `values`, as tfjs-node computes them: `bucketCount`
 * equal-width buckets from min to max (the last one closed), one unit-wide bucket around a
 * single repeated value, none for no values.
 */
function histogramBuckets(values, bucketCount = 30) {
  if (!Number.isInteger(bucketCount) || bucketCount <= 0) {
    throw new Error(`Expected bucket count to be a strictly positive integer, but it was ${bucketCount}`);
  }
  const n = values.length;
  if (n === 0) return [];
  const f = Math.fround;
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < n; i++) {
    const v = f(values[i]);
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const range = f(max - min);
  if (range === 0) return [[f(min - 0.5), f(min + 0.5), n]];
  const width = f(range / bucketCount);
  const counts = new Array(bucketCount).fill(0);
  for (let i = 0; i < n; i++) {
    const idx = Math.floor(f(f(f(values[i]) - min) / width));
    counts[Math.max(0, Math.min(idx, bucketCount - 1))]++;
  }
  const step = f(range / bucketCount);
  const edges = [];
  for (let i = 0; i < bucketCount; i++) edges.push(f(min + i * step));
  edges.push(max);
  return counts.map((c, i) => [edges[i], edges[i + 1], c]);
}

// ------------------------------------------------------------------ the writer

let fileCounter = 0;
const liveWriters = new Set();
let exitHookInstalled = false;

function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const w of liveWriters) {
      try {
        w.flush();
      } catch (e) {
        // The process is exiting; a failed flush cannot be reported anywhere useful.
      }
    }
  });
}

function checkStep(step) {
  if (!Number.isInteger(step)) {
    throw new Error(`step is expected to be an integer, but is instead ${step}`);
  }
}

/** Writes TensorBoard event files in `logdir` (one file per writer). */
class SummaryFileWriter {
  constructor(logdir, maxQueue = 10, flushMillis = 120000, filenameSuffix = '.v2') {
    if (typeof logdir !== 'string' || logdir === '') {
      throw new TypeError('logdir must be a non-empty string');
    }
    this.logdir = logdir;
    this.maxQueue = maxQueue == null ? 10 : maxQueue;
    this.flushMillis = flushMillis == null ? 120000 : flushMillis;
    fs.mkdirSync(logdir, {recursive: true});
    const now = Date.now() / 1000;
    const name = `events.out.tfevents.${String(Math.floor(now)).padStart(10, '0')}.` +
        `${os.hostname()}.${process.pid}.${fileCounter++}${filenameSuffix == null ? '.v2' : filenameSuffix}`;
    this.file = path.join(logdir, name);
    this.queue = [];
    this.timer = null;
    fs.writeFileSync(this.file, tfRecord(eventProto({wallTime: now, fileVersion: 'brain.Event:2'})));
    liveWriters.add(this);
    installExitHook();
  }

  /**
   * The backend the writer's tensors are read on, as in tfjs-node (whose writer is a TF
   * resource): programs check `writer.backend.getNumOfTFTensors()` around a write.
   */
  get backend() {
    return tfc.findBackend(BACKEND_NAME);
  }

  enqueue(summaryValue, step) {
    this.queue.push(tfRecord(eventProto({wallTime: Date.now() / 1000, step, summaryValue})));
    if (this.queue.length > this.maxQueue) {
      this.flush();
    } else if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), this.flushMillis);
      this.timer.unref();
    }
  }

  /**
   * Writes a scalar (`Summary.Value.simple_value`, as TF's WriteScalarSummary does).
   * `value`: a number or a scalar tensor.
   */
  scalar(name, value, step, description) {
    checkStep(step);
    let v = value;
    if (value instanceof tfc.Tensor) {
      if (value.rank !== 0) {
        throw new Error(`A non-scalar tensor (rank ${value.rank}) is passed to writeScalarSummary()`);
      }
      v = value.dataSync()[0];
    }
    if (typeof v !== 'number' && typeof v !== 'boolean') {
      throw new TypeError(`scalar value must be a number or a scalar tensor, got ${typeof v}`);
    }
    const sv = new Writer();
    sv.string(1, name);
    sv.float(2, Number(v));
    if (description) sv.message(9, summaryMetadata({description}));
    this.enqueue(sv, step);
  }

  /**
   * Writes a histogram of `data` (any shape) in `buckets` equal-width buckets, as a
   * `histograms` plugin tensor of `[leftEdge, rightEdge, count]` rows (tfjs-node's format).
   */
  histogram(name, data, step, buckets, description) {
    checkStep(step);
    let values;
    if (data instanceof tfc.Tensor) {
      if (data.dtype === 'string') throw new TypeError('histogram data must be numeric');
      values = data.dataSync();
    } else if (Array.isArray(data) || ArrayBuffer.isView(data)) {
      values = data;
    } else {
      throw new TypeError('histogram data must be a tensor or an array of numbers');
    }
    const rows = histogramBuckets(values, buckets === undefined ? 30 : buckets);
    const sv = new Writer();
    sv.string(1, name);
    sv.message(8, floatTensorProto([rows.length, 3], rows.flat()));
    // HistogramPluginData{version: 0} serializes to no bytes.
    sv.message(9, summaryMetadata({pluginName: 'histograms', content: null, description}));
    this.enqueue(sv, step);
  }

  /**
   * Writes a text summary (the `text` plugin: a scalar string tensor; TensorBoard renders it
   * as Markdown), as Python's `tf.summary.text` does.
   */
  text(name, value, step, description) {
    checkStep(step);
    if (typeof value !== 'string') throw new TypeError('text value must be a string');
    const tensor = new Writer();
    tensor.varint(1, DT_STRING);
    tensor.message(2, new Writer());                  // tensor_shape: a scalar
    tensor.string(8, value);                          // string_val
    const sv = new Writer();
    sv.string(1, name);
    sv.message(8, tensor);
    sv.message(9, summaryMetadata({pluginName: 'text', content: null, description}));
    this.enqueue(sv, step);
  }

  /** Writes queued events to the file. */
  flush() {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    if (this.queue.length === 0) return;
    const data = Buffer.concat(this.queue);
    this.queue = [];
    fs.appendFileSync(this.file, data);
  }
}

const writerCache = new Map();

/**
 * The summary writer for `logdir` (one per directory, shared by later calls). Events are
 * queued and written when more than `maxQueue` are waiting, `flushMillis` after the first
 * one, on `flush()` and at process exit.
 */
function summaryFileWriter(logdir, maxQueue = 10, flushMillis = 120000, filenameSuffix = '.v2') {
  if (typeof logdir !== 'string' || logdir === '') {
    throw new Error('Expected logdir to be a non-empty string, but it was ' + logdir);
  }
  let w = writerCache.get(logdir);
  if (w === undefined) {
    w = new SummaryFileWriter(logdir, maxQueue, flushMillis, filenameSuffix);
    writerCache.set(logdir, w);
  }
  return w;
}

// ------------------------------------------------------------------ the model.fit callback

const SKIPPED_LOG_KEYS = new Set(['batch', 'size', 'num_steps']);

/**
 * Logs metrics to `logdir/train` and `logdir/val` (keys starting `val_`) after each epoch
 * (`epoch_<metric>`, step = epoch + 1), also after each batch with `updateFreq: 'batch'`
 * (`batch_<metric>`, step = batches seen), and weight histograms every `histogramFreq` epochs.
 */
class TensorBoardCallback extends tfl.Callback {
  constructor(logdir = './logs', args) {
    super();
    this.logdir = logdir;
    this.args = Object.assign({}, args);
    if (this.args.updateFreq == null) this.args.updateFreq = 'epoch';
    if (!['batch', 'epoch'].includes(this.args.updateFreq)) {
      throw new Error(`Expected updateFreq to be 'batch' or 'epoch', but got ${this.args.updateFreq}`);
    }
    if (this.args.histogramFreq == null) this.args.histogramFreq = 0;
    if (!Number.isInteger(this.args.histogramFreq) || this.args.histogramFreq < 0) {
      throw new Error(`Expected histogramFreq to be a positive integer, but got ${this.args.histogramFreq}`);
    }
    this.batchesSeen = 0;
    this.trainWriter = null;
    this.valWriter = null;
  }

  async onBatchEnd(batch, logs) {
    this.batchesSeen++;
    if (this.args.updateFreq !== 'epoch') this.logMetrics(logs, 'batch_', this.batchesSeen);
  }

  async onEpochEnd(epoch, logs) {
    this.logMetrics(logs, 'epoch_', epoch + 1);
    if (this.args.histogramFreq > 0 && epoch % this.args.histogramFreq === 0) {
      this.logWeights(epoch);
    }
  }

  async onTrainEnd() {
    if (this.trainWriter != null) this.trainWriter.flush();
    if (this.valWriter != null) this.valWriter.flush();
  }

  logMetrics(logs, prefix, step) {
    if (logs == null) return;
    for (const key of Object.keys(logs)) {
      if (SKIPPED_LOG_KEYS.has(key)) continue;
      const value = logs[key];
      if (key.startsWith('val_')) {
        this.ensureValWriterCreated().scalar(prefix + key.slice(4), value, step);
      } else {
        this.ensureTrainWriterCreated().scalar(prefix + key, value, step);
      }
    }
  }

  logWeights(step) {
    if (this.model == null) return;
    const writer = this.ensureTrainWriterCreated();
    for (const w of this.model.weights) {
      const value = w.read();
      writer.histogram(w.name, value, step);
    }
  }

  // tfjs-node's names: programs call them to reach `trainWriter` / `valWriter` before a fit.
  ensureTrainWriterCreated() {
    if (this.trainWriter == null) this.trainWriter = summaryFileWriter(path.join(this.logdir, 'train'));
    return this.trainWriter;
  }

  ensureValWriterCreated() {
    if (this.valWriter == null) this.valWriter = summaryFileWriter(path.join(this.logdir, 'val'));
    return this.valWriter;
  }
}

/** A `model.fit` callback writing TensorBoard logs under `logdir`. */
function tensorBoard(logdir = './logs', args) {
  return new TensorBoardCallback(logdir, args);
}

module.exports = {
  SummaryFileWriter,
  summaryFileWriter,
  TensorBoardCallback,
  tensorBoard,
  histogramBuckets,
  crc32c,
  maskedCrc32c,
  tfRecord,
};
