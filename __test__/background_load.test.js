'use strict';
// The addon's load on a worker thread while tfjs's JS loads (js/load_worker.js, and startLoading
// in js/native_loader_core.js): where the worker starts, that everything the load needs is done
// before it is sent the file,
// and that a program gets the same results whether the worker loaded the addon, could not be
// started, or failed. In a file of its own: startLoading marks this process's load as prepared,
// which the injected loads of native_loader.test.js must not see.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {spawnSync} = require('node:child_process');
const loader = require('../js/native_loader_core');
const {startLoadWorker, WORKER_CODE} = require('../js/load_worker');

const ROOT = path.join(__dirname, '..');
const LINUX = {platform: 'linux', arch: 'x64', glibc: '2.36', napi: '9', node: 'v22.0.0'};
const NO_PROVIDING = () => null;

/** A stand-in for js/load_worker.js's worker: the files it was sent, whether it was cancelled. */
function fakeWorker(env) {
  const worker = {
    sent: [],
    cancelled: false,
    load: (file) => worker.sent.push({file, logLevel: env.TF_CPP_MIN_LOG_LEVEL}),
    cancel: () => {
      worker.cancelled = true;
    },
  };
  return worker;
}

/** startLoading with the injected system and a stand-in worker. */
function startWith({system = LINUX, env = {}, ...options} = {}) {
  const worker = fakeWorker(env);
  const onWorker = loader.startLoading({system, env, provide: NO_PROVIDING, worker, ...options});
  return {onWorker, sent: worker.sent, cancelled: worker.cancelled};
}

test('startLoading sends the worker the addon binding.js loads, after the log level is set', () => {
  const {onWorker, sent, cancelled} = startWith();
  assert.equal(onWorker, true);
  assert.equal(cancelled, false);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].file, loader.addonCandidates()[0]);
  assert.equal(path.basename(sent[0].file), loader.ADDON_FILE);
  // TF reads it as the library loads.
  assert.equal(sent[0].logLevel, '2');
  // No worker: the main thread loads it.
  assert.equal(loader.startLoading({system: LINUX, env: {}, provide: NO_PROVIDING, worker: null}), false);
});

test('without an addon file, startLoading cancels the worker', () => {
  const noFiles = {...fs, statSync: () => { throw new Error('ENOENT'); }};
  const noPackage = () => { throw new Error('Cannot find module'); };
  assert.deepEqual(startWith({fsImpl: noFiles, resolve: noPackage}), {onWorker: false, sent: [], cancelled: true});
});

test('a system the checks refuse throws, and the worker is cancelled before it loads anything', () => {
  const worker = fakeWorker({});
  assert.throws(() => loader.startLoading({system: {...LINUX, glibc: null}, env: {}, provide: NO_PROVIDING, worker}),
                (err) => err.code === loader.ERROR_CODE && /musl/.test(err.message));
  assert.deepEqual(worker.sent, []);
  assert.equal(worker.cancelled, true);
});

/** startLoadWorker with a stand-in Worker; what was made of it. */
function startLoadWorkerWith(options = {}) {
  const made = [];
  const makeWorker = (code) => {
    const worker = {
      code, posted: [], listeners: {}, unrefed: false, terminated: false,
      on(event, fn) {
        worker.listeners[event] = fn;
      },
      unref() {
        worker.unrefed = true;
      },
      postMessage(m) {
        worker.posted.push(m);
      },
      terminate() {
        worker.terminated = true;
      },
    };
    made.push(worker);
    return worker;
  };
  const handle = startLoadWorker({env: {}, platform: 'linux', cores: 2, versions: {node: '22.0.0'}, makeWorker, ...options});
  return {handle, made};
}

test('the loading worker starts on Node.js with two cores or more, not on Windows, Bun or Deno, or when turned off', () => {
  const {handle, made} = startLoadWorkerWith();
  assert.equal(made.length, 1);
  assert.equal(made[0].code, WORKER_CODE);
  // Its errors are dropped, and it never keeps the process alive.
  assert.equal(typeof made[0].listeners.error, 'function');
  assert.doesNotThrow(() => made[0].listeners.error(new Error('the worker failed')));
  assert.equal(made[0].unrefed, true);
  handle.load('/the/addon.node');
  assert.deepEqual(made[0].posted, ['/the/addon.node']);
  handle.cancel();
  assert.equal(made[0].terminated, true);

  for (const options of [{platform: 'win32'}, {cores: 1}, {env: {TFJS_NODE_RS_LOAD_ON_WORKER: '0'}},
    {versions: {node: '22.0.0', bun: '1.2.0'}}, {versions: {node: '22.0.0', deno: '2.0.0'}}]) {
    const {handle: none, made: noneMade} = startLoadWorkerWith(options);
    assert.equal(none, null, JSON.stringify(options));
    assert.equal(noneMade.length, 0);
  }
  assert.notEqual(startLoadWorkerWith({env: {TFJS_NODE_RS_LOAD_ON_WORKER: '1'}}).handle, null);
  // Workers not allowed (the permission model): no worker, no error.
  assert.equal(startLoadWorker({env: {}, platform: 'linux', cores: 2, versions: {},
                                makeWorker: () => { throw new Error('ERR_ACCESS_DENIED'); }}), null);
});

test('after startLoading, load() goes on from the prepared state', () => {
  startWith();
  const binding = {tfVersion: () => '2.21.0', preloadLibrary() {}};
  const provide = () => {
    throw new Error('prepared twice');
  };
  assert.equal(loader.load({env: {}, requireBinding: () => binding, provide}), binding);
});

/**
 * Runs `code` after requiring the package in a fresh Node.js process, with `hook` (code run
 * first, through --require) able to replace worker_threads' Worker; the program's last stdout
 * line as JSON.
 */
function freshProcess(hook, code, env = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-background-'));
  try {
    const hookFile = path.join(dir, 'hook.js');
    fs.writeFileSync(hookFile, `'use strict';\nconst workers = require('worker_threads');\n${hook}\n`);
    const r = spawnSync(process.execPath, ['--require', hookFile, '-e', `const tf = require('.');\n${code}`],
                        {cwd: ROOT, encoding: 'utf8', timeout: 120000, env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2', ...env}});
    assert.equal(r.status, 0, `exit ${r.status} ${r.signal || ''}: ${r.stderr}`);
    return JSON.parse(r.stdout.trim().split('\n').pop());
  } finally {
    fs.rmSync(dir, {recursive: true, force: true});
  }
}

// [1, 2, 3] · [4, 5, 6] = 32, by hand.
const COMPUTE = `console.log(JSON.stringify({dot: tf.dot(tf.tensor1d([1, 2, 3]), tf.tensor1d([4, 5, 6])).dataSync()[0],
                                            backend: tf.getBackend(), code: globalThis.workerCode || null,
                                            loaded: globalThis.loaded || null}));`;

// Records the worker's code and, through a spy on the worker's process.dlopen, the file it loaded
// and how many functions the addon gave it.
const RECORD_WORKERS = `
  const Original = workers.Worker;
  workers.Worker = class extends Original {
    constructor(code, options) {
      const spy = "const dlopen = process.dlopen; process.dlopen = (module, file) => { dlopen(module, file); " +
        "require('worker_threads').parentPort.postMessage({file, functions: Object.keys(module.exports).length}); };\\n";
      super(spy + code, options);
      globalThis.workerCode = code;
      globalThis.workerLoaded = new Promise((resolve) => this.once('message', resolve));
    }
  };`;

test('a program whose worker loaded the addon computes on it, and exits', {skip: os.availableParallelism() < 2 && 'one core: no worker'}, () => {
  const got = freshProcess(RECORD_WORKERS, `
    const keepAlive = setTimeout(() => {}, 20000);
    globalThis.workerLoaded.then((loaded) => {
      clearTimeout(keepAlive);
      globalThis.loaded = loaded;
      ${COMPUTE}
    });`);
  assert.equal(got.dot, 32);
  assert.equal(got.backend, 'tensorflow');
  assert.equal(got.code, WORKER_CODE);
  assert.equal(got.loaded.file, loader.addonCandidates()[0]);
  assert.ok(got.loaded.functions > 20, JSON.stringify(got.loaded));
  // Turned off, the main thread loads it.
  const off = freshProcess(RECORD_WORKERS, COMPUTE, {TFJS_NODE_RS_LOAD_ON_WORKER: '0'});
  assert.deepEqual(off, {dot: 32, backend: 'tensorflow', code: null, loaded: null});
});

test('a worker that cannot start, or fails, leaves the load to the main thread', () => {
  const refused = freshProcess(`
    workers.Worker = class {
      constructor() {
        throw new Error('ERR_ACCESS_DENIED');
      }
    };`, COMPUTE);
  assert.deepEqual(refused, {dot: 32, backend: 'tensorflow', code: null, loaded: null});
  // Its 'error' event is dropped, not thrown in the program.
  const failed = freshProcess(`
    const Original = workers.Worker;
    workers.Worker = class extends Original {
      constructor(code, options) {
        super('throw new Error("the worker failed")', options);
      }
    };`, `setTimeout(() => { ${COMPUTE} }, 200);`);
  assert.deepEqual(failed, {dot: 32, backend: 'tensorflow', code: null, loaded: null});
});
