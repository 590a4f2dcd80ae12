'use strict';
// The addon's load on a native thread while tfjs's JS loads (startLoading and backgroundLoader in
// js/native_loader_core.js, the preload addon in preload/): where it starts, that everything the
// load needs is done before it starts, and that a program gets the same results whether the
// addon was loaded in the background, could not be, or was not asked to. In a file of its own:
// startLoading marks this process's load as prepared, which the injected loads of
// native_loader.test.js must not see.

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

/** startLoading with the injected system and a stand-in background load; the files it was given. */
function startWith({system = LINUX, env = {}, started = true, ...options} = {}) {
  const given = [];
  const loadInBackground = (file) => {
    given.push({file, logLevel: env.TF_CPP_MIN_LOG_LEVEL});
    return started;
  };
  const inBackground = loader.startLoading({system, env, provide: NO_PROVIDING, loadInBackground, ...options});
  return {inBackground, given};
}

test('startLoading loads the addon binding.js loads in the background, after the log level is set', () => {
  const {inBackground, given} = startWith();
  assert.equal(inBackground, true);
  assert.equal(given.length, 1);
  assert.equal(given[0].file, loader.addonCandidates()[0]);
  assert.equal(path.basename(given[0].file), loader.ADDON_FILE);
  // TF reads it as the library loads.
  assert.equal(given[0].logLevel, '2');
  // A load that did not start, or no background loader: the main thread loads it.
  assert.equal(startWith({started: false}).inBackground, false);
  assert.equal(loader.startLoading({system: LINUX, env: {}, provide: NO_PROVIDING, loadInBackground: null}), false);
});

test('without an addon file, nothing loads in the background', () => {
  const noFiles = {...fs, statSync: () => { throw new Error('ENOENT'); }};
  const noPackage = () => { throw new Error('Cannot find module'); };
  assert.deepEqual(startWith({fsImpl: noFiles, resolve: noPackage}), {inBackground: false, given: []});
});

test('a system the checks refuse throws before anything loads', () => {
  const given = [];
  assert.throws(() => loader.startLoading({system: {...LINUX, glibc: null}, env: {}, provide: NO_PROVIDING,
                                           loadInBackground: (file) => given.push(file)}),
                (err) => err.code === loader.ERROR_CODE && /musl/.test(err.message));
  assert.deepEqual(given, []);
});

/** backgroundLoader on a stand-in system whose preload addon records what it was asked. */
function loaderWith(options = {}) {
  const calls = [];
  const dlopen = (module, file) => {
    calls.push(['dlopen', file]);
    module.exports.loadInBackground = (addon) => calls.push(['loadInBackground', addon]);
  };
  const onlyPreload = {...fs, statSync: (p) => {
    if (path.basename(p) !== loader.PRELOAD_FILE) throw new Error('ENOENT');
    return {};
  }};
  const load = loader.backgroundLoader({env: {}, platform: 'linux', cores: 2, versions: {node: '22.0.0'},
                                        fsImpl: onlyPreload, dlopen, ...options});
  return {load, calls};
}

test('the background load runs on Node.js with two cores or more, not on Windows, Bun or Deno, or when turned off', () => {
  const {load, calls} = loaderWith();
  assert.equal(load('/pkg/the-addon.node'), true);
  // The preload addon beside the addon, then the addon's load on its thread.
  assert.deepEqual(calls, [['dlopen', path.join('/pkg', loader.PRELOAD_FILE)], ['loadInBackground', '/pkg/the-addon.node']]);

  for (const options of [{platform: 'win32'}, {cores: 1}, {env: {TFJS_NODE_RS_BACKGROUND_LOAD: '0'}},
    {versions: {node: '22.0.0', bun: '1.2.0'}}, {versions: {node: '22.0.0', deno: '2.0.0'}}]) {
    assert.equal(loaderWith(options).load, null, JSON.stringify(options));
  }
  assert.notEqual(loaderWith({env: {TFJS_NODE_RS_BACKGROUND_LOAD: '1'}}).load, null);
  // No preload addon file, or one that cannot be loaded (addons refused by the permission
  // model): false, and the main thread loads.
  const missing = loaderWith({fsImpl: {...fs, statSync: () => { throw new Error('ENOENT'); }}});
  assert.equal(missing.load('/pkg/the-addon.node'), false);
  assert.deepEqual(missing.calls, []);
  const refused = loaderWith({dlopen: () => { throw new Error('ERR_DLOPEN_DISABLED'); }});
  assert.equal(refused.load('/pkg/the-addon.node'), false);
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
 * first, through --require) able to replace process.dlopen; the program's last stdout line as JSON.
 */
function freshProcess(hook, code, env = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-background-'));
  try {
    const hookFile = path.join(dir, 'hook.js');
    fs.writeFileSync(hookFile, `'use strict';\n${hook}\n`);
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
                                            backend: tf.getBackend(), loads: globalThis.loads}));`;

// Records each process.dlopen on the main thread: the file's name, and whether libtensorflow was
// in the process's memory map already when the load began (put there by the background thread).
const RECORD_LOADS = `
  const dlopen = process.dlopen;
  globalThis.loads = [];
  process.dlopen = (module, file) => {
    const mapped = require('fs').readFileSync('/proc/self/maps', 'utf8').includes('libtensorflow');
    globalThis.loads.push({file: require('path').basename(file), tfMappedBefore: mapped});
    return dlopen(module, file);
  };`;

test('a program whose addon loaded in the background computes on it, and exits',
     {skip: (os.availableParallelism() < 2 || process.platform !== 'linux') && 'Linux with two cores or more only'}, () => {
       const addon = path.basename(loader.addonCandidates()[0]);
       const got = freshProcess(RECORD_LOADS, COMPUTE);
       assert.deepEqual(got, {dot: 32, backend: 'tensorflow', loads: [
         {file: loader.PRELOAD_FILE, tfMappedBefore: false},
         // The main thread's load found libtensorflow loaded, or being loaded, by the thread.
         {file: addon, tfMappedBefore: true},
       ]});
       // Turned off, the main thread loads it, and the preload addon is not loaded.
       const off = freshProcess(RECORD_LOADS, COMPUTE, {TFJS_NODE_RS_BACKGROUND_LOAD: '0'});
       assert.deepEqual(off, {dot: 32, backend: 'tensorflow', loads: [{file: addon, tfMappedBefore: false}]});
     });

test('a preload addon that cannot be loaded leaves the load to the main thread', () => {
  const got = freshProcess(`
    const dlopen = process.dlopen;
    process.dlopen = (module, file) => {
      if (file.includes('preload')) throw new Error('refused');
      return dlopen(module, file);
    };
    globalThis.loads = 'main';`, COMPUTE);
  assert.deepEqual(got, {dot: 32, backend: 'tensorflow', loads: 'main'});
});
