'use strict';
// tf.node.profile: what TF ran while a function ran (src/tf/trace.rs records it natively:
// eager ops, session runs with each node as TF's step stats time it, executor jobs, the JS
// thread's waits), as a Chrome trace (Perfetto, chrome://tracing) and a summary: where the
// JS thread's time went, and the ops that took the most, returned and written for
// TensorBoard (scalars, and a text table of the top ops).

const fs = require('fs');
const path = require('path');
const {performance} = require('perf_hooks');

const {tensorflowBackend} = require('./backend');
const {SummaryFileWriter} = require('./tensorboard');

/** Ops listed in the summary's `topOps`. */
const TOP_OPS = 20;

/**
 * Runs `fn` (sync or async) while recording what TF runs; resolves with `{result, summary,
 * traceFile, tensorboardDir}` once `fn` has. With `logdir`, writes the trace there as
 * `<name>.trace.json` (default name: the time) and the summary as a TensorBoard run,
 * `<logdir>/<name>`. `fn`'s error rejects the promise, after the recording stops.
 */
async function profile(fn, {logdir, name} = {}) {
  const label = 'tf.node.profile';
  if (typeof fn !== 'function') throw new TypeError(`${label}: fn must be a function`);
  const backend = tensorflowBackend(label);
  backend.startProfile();
  const startUs = backend.profileClockUs();
  const loopBefore = eventLoopUtilization();
  let recorded;
  let result;
  try {
    result = await fn();
  } finally {
    const endUs = backend.profileClockUs();
    const idleMs = eventLoopUtilization(loopBefore).idle;
    recorded = {...backend.stopProfile(), startUs, endUs, idleMs};
  }
  const summary = summarize(recorded);
  const out = {result, summary, traceFile: null, tensorboardDir: null};
  if (logdir !== undefined) {
    const run = name === undefined ? new Date(recorded.startUs / 1000).toISOString()
        .replace(/[:.]/g, '-') : String(name);
    fs.mkdirSync(logdir, {recursive: true});
    out.traceFile = path.join(logdir, `${run}.trace.json`);
    fs.writeFileSync(out.traceFile, JSON.stringify(chromeTrace(recorded)));
    out.tensorboardDir = path.join(logdir, run);
    writeSummary(out.tensorboardDir, summary);
  }
  return out;
}

/** The summary as a TensorBoard run: one scalar per part of the time, a table of the top ops. */
function writeSummary(dir, summary) {
  const writer = new SummaryFileWriter(dir);
  const {jsThread} = summary;
  const scalars = {wall_ms: summary.wallMs, executor_ms: summary.executorMs,
    'js_thread/eager_ms': jsThread.eagerMs, 'js_thread/graph_ms': jsThread.graphMs,
    'js_thread/wait_ms': jsThread.waitMs, 'js_thread/idle_ms': jsThread.idleMs,
    'js_thread/js_ms': jsThread.jsMs};
  for (const [tag, value] of Object.entries(scalars)) writer.scalar(`profile/${tag}`, value, 0);
  const rows = summary.topOps.map((o) => `| ${o.op} | ${o.where} | ${o.count} | ` +
      `${o.totalMs.toFixed(3)} |`);
  writer.text('profile/top_ops', ['| op | where | count | total ms |', '|---|---|---|---|',
    ...rows].join('\n'), 0);
  writer.flush();
}

/**
 * The event loop's idle and active time since `before` (Node's; runtimes without it: none
 * idle).
 */
function eventLoopUtilization(before) {
  if (typeof performance.eventLoopUtilization !== 'function') return {idle: 0, active: 0};
  return performance.eventLoopUtilization(before);
}

/**
 * Where the JS thread's wall time went (eager ops, session runs, synchronous waits for executor
 * jobs, the event loop idle while work ran elsewhere, and the rest: JS), what the executor
 * thread ran meanwhile, and the ops that took longest in all.
 */
function summarize({spans, jsTid, startUs, endUs, idleMs}) {
  const onJs = (kind) => spans.filter((s) => s.kind === kind && s.tid === jsTid)
      .reduce((sum, s) => sum + s.durationUs, 0) / 1000;
  const wallMs = (endUs - startUs) / 1000;
  const eagerMs = onJs('eager op');
  const graphMs = onJs('session run');
  const waitMs = onJs('wait');
  const executorMs = spans.filter((s) => s.kind === 'executor job' && s.tid !== jsTid)
      .reduce((sum, s) => sum + s.durationUs, 0) / 1000;
  const byOp = new Map();
  for (const s of spans) {
    if (s.kind !== 'eager op' && s.kind !== 'graph node') continue;
    const where = s.kind === 'eager op' ? 'eager' : 'graph';
    const key = `${where}:${s.op}`;
    const entry = byOp.get(key) || {op: s.op, where, count: 0, totalMs: 0};
    entry.count++;
    entry.totalMs += s.durationUs / 1000;
    byOp.set(key, entry);
  }
  const topOps = [...byOp.values()].sort((a, b) => b.totalMs - a.totalMs).slice(0, TOP_OPS);
  return {
    wallMs,
    jsThread: {eagerMs, graphMs, waitMs, idleMs,
      jsMs: wallMs - eagerMs - graphMs - waitMs - idleMs},
    executorMs,
    graphNodes: spans.filter((s) => s.kind === 'graph node').length,
    eagerOps: spans.filter((s) => s.kind === 'eager op').length,
    topOps,
  };
}

/** The spans as Chrome's trace event format (times in µs from the profile's start). */
function chromeTrace({spans, jsTid, startUs}) {
  const events = [];
  const threads = new Map([[jsTid, 'JS thread']]);
  for (const s of spans) {
    if (!threads.has(s.tid)) {
      threads.set(s.tid, s.thread !== '' ? s.thread : `TF thread ${s.tid}`);
    }
    events.push({name: s.kind === 'graph node' ? `${s.op} ${s.name}` : s.name, cat: s.kind,
                 ph: 'X', ts: s.startUs - startUs, dur: s.durationUs, pid: 1, tid: s.tid,
                 args: s.op === '' ? {} : {op: s.op}});
  }
  for (const [tid, name] of threads) {
    events.push({name: 'thread_name', ph: 'M', pid: 1, tid, args: {name}});
  }
  events.push({name: 'process_name', ph: 'M', pid: 1, tid: jsTid, args: {name: 'tfjs-node-rs'}});
  return {traceEvents: events, displayTimeUnit: 'ms'};
}

module.exports = {profile};
