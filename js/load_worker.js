'use strict';
// The worker thread that loads the addon, and libtensorflow with it, while the main thread
// compiles tfjs's JS (js/native_loader_core.js's startLoading says which file, once the load's
// checks pass). It starts before those checks, with nothing but Node's own modules required:
// its own start (20-32 ms from `new Worker` to its first line here) is then spent while the
// main thread runs the checks (a process report for the C library, 4-5 ms) and requires the
// loader, not before them.

const os = require('os');

// The worker's whole program: load the file it is sent, once.
const WORKER_CODE =
    "require('worker_threads').parentPort.once('message', (file) => process.dlopen({exports: {}}, file));";

/**
 * Starts the loading worker where it helps: Node.js (Bun's and Deno's workers differ), not
 * Windows (the addon finds TF's DLLs through PATH, set for the main thread's load only), two
 * cores or more (with one, the worker's start only adds to the main thread's work), and unless
 * TFJS_NODE_RS_LOAD_ON_WORKER=0. Returns `{load(file), cancel()}`, or null where no worker
 * started (also when workers are not allowed: the permission model without --allow-worker).
 * Its errors are dropped (the main thread's own load reports any failure) and it never keeps
 * the process alive.
 */
function startLoadWorker({
  env = process.env,
  platform = process.platform,
  cores = os.availableParallelism(),
  versions = process.versions,
  makeWorker = (code) => new (require('worker_threads').Worker)(code, {eval: true}),
} = {}) {
  const hostIsNode = !versions.bun && !versions.deno;
  if (env.TFJS_NODE_RS_LOAD_ON_WORKER === '0' || !hostIsNode || platform === 'win32' || cores < 2) return null;
  let worker;
  try {
    worker = makeWorker(WORKER_CODE);
  } catch {
    return null;
  }
  worker.on('error', () => {});
  worker.unref();
  return {
    load: (file) => worker.postMessage(file),
    cancel: () => worker.terminate(),
  };
}

module.exports = {startLoadWorker, WORKER_CODE};
