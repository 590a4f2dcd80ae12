'use strict';
// The progress shown by `model.fit({verbose: 1})` (the default verbosity), as tfjs-node shows
// it: `Epoch N / M` before each epoch and a summary line after it (duration, time per step,
// loss and metrics) go to stdout through console.log, terminal or not, so logs of CI jobs,
// containers and `> log.txt` keep them; the live bar with the batch's loss and metrics goes
// to stderr, and only when stderr is a terminal.

const tfl = require('@tensorflow/tfjs-layers');

let barStream = null;

/**
 * Where the lines and the bar go; tests swap them. The bar's stream is process.stderr unless
 * set, read when a bar is drawn: Node makes `process.stderr` on its first read (a pipe's
 * stream loads `net`), which cost every `require` 1.5-2.5 ms, with or without a fit.
 */
const progressBarHelper = {
  log: (line) => console.log(line),
  get stream() {
    return barStream || process.stderr;
  },
  set stream(stream) {
    barStream = stream;
  },
};

const RENDER_THROTTLE_MS = 50;
const BASE_NUM_DIGITS = 2;
const MAX_NUM_DECIMAL_PLACES = 4;

function getDisplayDecimalPlaces(x) {
  if (!Number.isFinite(x) || x === 0 || x > 1 || x < -1) return BASE_NUM_DIGITS;
  return BASE_NUM_DIGITS - Math.floor(Math.log10(Math.abs(x)));
}

/** A number in few characters: fixed for ordinary magnitudes, exponent for tiny ones. */
function getSuccinctNumberDisplay(x) {
  const places = getDisplayDecimalPlaces(x);
  return places > MAX_NUM_DECIMAL_PLACES ? x.toExponential(BASE_NUM_DIGITS) : x.toFixed(places);
}

/** `key=value ` per metric, sorted, as tfjs-node writes them (each followed by a space). */
function formatLogs(logs, maxLength) {
  let text = '';
  for (const key of Object.keys(logs || {}).sort()) {
    if (key === 'batch' || key === 'size') continue;
    const v = logs[key];
    text += `${key}=${typeof v === 'number' ? getSuccinctNumberDisplay(v) : v} `;
  }
  if (maxLength != null && text.length > maxLength) {
    text = text.slice(0, Math.max(0, maxLength - 3)) + '...';
  }
  return text;
}

/** Batch logs may hold scalar tensors (tfjs-layers resolves them lazily): read them. */
async function resolveLogs(logs) {
  const out = {};
  for (const key of Object.keys(logs || {})) {
    const v = logs[key];
    out[key] = v != null && typeof v === 'object' && typeof v.data === 'function' ?
        (await v.data())[0] : v;
  }
  return out;
}

function formatSeconds(s) {
  if (!Number.isFinite(s)) return '?';
  return s < 10 ? s.toFixed(1) : Math.round(s).toString();
}

/**
 * The callback behind `verbose: 1`, a subclass of tfjs-layers' Callback: made when the bar is
 * installed, which is when tfjs-layers loads (js/lazy_packages.js), not when this module does.
 */
function makeProgbarLogger() {
  return class ProgbarLogger extends tfl.Callback {
    constructor() {
      super();
      this.bar = null;
    }

    async onTrainBegin() {
      const stream = progressBarHelper.stream;
      this.bar = stream != null && stream.isTTY ? stream : null;
      const {samples, batchSize, steps} = this.params || {};
      this.batchesPerEpoch = samples != null && batchSize ? Math.ceil(samples / batchSize) :
                             steps != null ? steps : 0;
    }

    async onEpochBegin(epoch) {
      progressBarHelper.log(`Epoch ${epoch + 1} / ${this.params.epochs}`);
      this.epochStart = Date.now();
      this.trainMillis = null;
      this.batchesDone = 0;
      this.lastRender = 0;
      this.barShown = false;
    }

    async onBatchEnd(batch, logs) {
      this.batchesDone++;
      const last = this.batchesDone === this.batchesPerEpoch;
      // As tfjs-node: the time per step counts the training batches, not the validation after.
      if (last) this.trainMillis = Date.now() - this.epochStart;
      if (this.bar === null) return;
      const now = Date.now();
      if (!last && now - this.lastRender < RENDER_THROTTLE_MS && this.barShown) return;
      this.lastRender = now;
      this.render(await resolveLogs(logs), now);
    }

    render(logs, now) {
      const columns = this.bar.columns || 80;
      const total = this.batchesPerEpoch;
      const done = this.batchesDone;
      const elapsed = (now - this.epochStart) / 1000;
      const eta = total > 0 ? elapsed / done * Math.max(0, total - done) : NaN;
      const counter = total > 0 ? `${done}/${total}` : `${done}`;
      const barWidth = Math.max(10, Math.floor(columns * 0.3));
      let bar;
      if (total > 0) {
        const filled = Math.min(barWidth, Math.round(barWidth * done / total));
        bar = '='.repeat(Math.max(0, filled - 1)) + (filled > 0 ? '>' : '') +
            '.'.repeat(barWidth - filled);
      } else {
        bar = '.'.repeat(barWidth);
      }
      const head = `eta=${formatSeconds(eta)} ${bar} ${counter} `;
      const line = head + formatLogs(logs, Math.max(0, columns - head.length - 1)).trimEnd();
      this.bar.write(`\r${line}\x1b[K`);
      this.barShown = true;
    }

    async onEpochEnd(epoch, logs) {
      logs = await resolveLogs(logs);
      const ms = this.trainMillis != null ? this.trainMillis : Date.now() - this.epochStart;
      const usPerStep = this.params.samples != null ? ms / this.params.samples * 1e3 :
                                                      ms / Math.max(1, this.batchesDone) * 1e3;
      if (this.barShown) this.bar.write('\r\x1b[K');
      progressBarHelper.log(`${ms.toFixed(0)}ms ${usPerStep.toFixed(0)}us/step - ${formatLogs(logs)}`);
    }
  };
}

let ProgbarLogger = null;

/** Registers the bar for `verbose >= 1` (once). */
function installProgressBar() {
  if (ProgbarLogger !== null) return;
  ProgbarLogger = makeProgbarLogger();
  tfl.registerCallbackConstructor(1, ProgbarLogger);
}

module.exports = {
  installProgressBar,
  progressBarHelper,
  getSuccinctNumberDisplay,
  getDisplayDecimalPlaces,
};
