'use strict';
// The addon's load on a worker thread while tfjs's JS loads (startLoading in
// js/native_loader_core.js): where it starts, that everything the load needs is done before it,
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

const ROOT = path.join(__dirname, '..');
const LINUX = {platform: 'linux', arch: 'x64', glibc: '2.36', napi: '9', node: 'v22.0.0'};
const NO_PROVIDING = () => null;

/** startLoading with the injected system and cores; the files its worker was asked to load. */
function startWith({system = LINUX, cores = 2, env = {}, ...options} = {}) {
  const started = [];
  const startWorker = (addon) => {
    started.push({addon, logLevel: env.TF_CPP_MIN_LOG_LEVEL});
    return true;
  };
  const onWorker = loader.startLoading({system, cores, env, provide: NO_PROVIDING, startWorker, ...options});
  return {onWorker, started};
}

test('startLoading starts the worker on the addon binding.js loads, after the log level is set', () => {
  const {onWorker, started} = startWith();
  assert.equal(onWorker, true);
  assert.equal(started.length, 1);
  assert.equal(started[0].addon, loader.addonCandidates()[0]);
  assert.equal(path.basename(started[0].addon), loader.ADDON_FILE);
  // TF reads it as the library loads.
  assert.equal(started[0].logLevel, '2');
});

test('no worker on Windows, with one core, when turned off, or without an addon file', () => {
  assert.deepEqual(startWith({system: {...LINUX, platform: 'win32'}}), {onWorker: false, started: []});
  assert.deepEqual(startWith({cores: 1}), {onWorker: false, started: []});
  assert.deepEqual(startWith({env: {TFJS_NODE_RS_LOAD_ON_WORKER: '0'}}), {onWorker: false, started: []});
  assert.equal(startWith({env: {TFJS_NODE_RS_LOAD_ON_WORKER: '1'}}).onWorker, true);
  const noFiles = {...fs, statSync: () => { throw new Error('ENOENT'); }};
  const noPackage = () => { throw new Error('Cannot find module'); };
  assert.deepEqual(startWith({fsImpl: noFiles, resolve: noPackage}), {onWorker: false, started: []});
});

test('a system the checks refuse throws before any worker starts', () => {
  const started = [];
  assert.throws(() => loader.startLoading({system: {...LINUX, glibc: null}, cores: 2, env: {}, provide: NO_PROVIDING,
                                           startWorker: (addon) => started.push(addon)}),
                (err) => err.code === loader.ERROR_CODE && /musl/.test(err.message));
  assert.deepEqual(started, []);
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
                                            backend: tf.getBackend(), code: globalThis.workerCode || null}));`;

const RECORD_WORKERS = `
  const Original = workers.Worker;
  workers.Worker = class extends Original {
    constructor(code, options) {
      super(code, options);
      globalThis.workerCode = code;
    }
  };`;

test('a program whose worker loaded the addon computes on it, and exits', {skip: os.availableParallelism() < 2 && 'one core: no worker'}, () => {
  const got = freshProcess(RECORD_WORKERS, COMPUTE);
  assert.equal(got.dot, 32);
  assert.equal(got.backend, 'tensorflow');
  assert.match(got.code, /^process\.dlopen\(/);
  assert.ok(got.code.includes(JSON.stringify(loader.addonCandidates()[0])), got.code);
  // Turned off, the main thread loads it.
  const off = freshProcess(RECORD_WORKERS, COMPUTE, {TFJS_NODE_RS_LOAD_ON_WORKER: '0'});
  assert.deepEqual(off, {dot: 32, backend: 'tensorflow', code: null});
});

test('a worker that cannot start, or fails, leaves the load to the main thread', () => {
  const refused = freshProcess(`
    workers.Worker = class {
      constructor() {
        throw new Error('ERR_ACCESS_DENIED');
      }
    };`, COMPUTE);
  assert.deepEqual(refused, {dot: 32, backend: 'tensorflow', code: null});
  // Its 'error' event is dropped, not thrown in the program.
  const failed = freshProcess(`
    const Original = workers.Worker;
    workers.Worker = class extends Original {
      constructor(code, options) {
        super('throw new Error("the worker failed")', options);
      }
    };`, `setTimeout(() => { ${COMPUTE} }, 200);`);
  assert.deepEqual(failed, {dot: 32, backend: 'tensorflow', code: null});
});
