'use strict';
// libtensorflow provided at the first require (js/first_use.js): what counts as a ready install,
// how the set-up script is run (its command, its JSON outcome, its failures), and Yarn PnP's zip
// archives refused with the setting that works. The real download, the two processes starting at
// once and each package manager's layout are exercised by `npm run test:install`.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const {missingPart, provideAtFirstUse} = require('../js/first_use.js');
const {TF_VERSION, LIBS, GPU_PACKAGE} = require('../js/libtensorflow_facts.js');
const {cudaLibraryPaths} = require('../js/cuda.js');
const {scratchDirs, quietLog} = require('./support/scratch.js');

const tempDir = scratchDirs('tfjs-node-rs-first-use-');
const NO_DRIVER = () => null;

// A package root whose deps/ links to a shared copy holding the libraries (as set-up leaves it).
function readyInstall({name = 'tfjs-node-rs', source} = {}) {
  const dir = tempDir('install');
  const root = path.join(dir, 'node_modules', name);
  const shared = path.join(dir, 'cache', `libtensorflow-${TF_VERSION}-linux-x64`);
  fs.mkdirSync(path.join(shared, 'lib'), {recursive: true});
  for (const lib of LIBS) fs.writeFileSync(path.join(shared, 'lib', lib), 'elf');
  fs.writeFileSync(path.join(shared, '.complete'), JSON.stringify({version: TF_VERSION, kind: source ? 'directory' : 'wheel', source: source || 'a wheel'}));
  fs.mkdirSync(root, {recursive: true});
  fs.writeFileSync(path.join(root, 'package.json'), JSON.stringify({name}));
  fs.symlinkSync(shared, path.join(root, 'deps'));
  const addonDir = path.join(dir, 'node_modules', '.pnpm', 'platform', 'node_modules', 'tfjs-node-rs-linux-x64-gnu');
  fs.mkdirSync(addonDir, {recursive: true});
  return {root, shared, addonDir};
}

const check = (opts) => missingPart({env: {}, fsImpl: fs, driver: NO_DRIVER, addonDir: null, ...opts});

test('missingPart: a set-up install is ready; each missing part is named', () => {
  const {root, shared, addonDir} = readyInstall();
  assert.equal(check({root}), null);
  // The addon elsewhere (pnpm's layout) needs its own deps/ leading to the same libraries.
  assert.match(check({root, addonDir}), /tfjs-node-rs-linux-x64-gnu\/deps does not lead to .*tfjs-node-rs\/deps/);
  fs.symlinkSync(shared, path.join(addonDir, 'deps'));
  assert.equal(check({root, addonDir}), null);
  // The addon in the root package itself (a development build): deps/ alone.
  assert.equal(check({root, addonDir: root}), null);
  // $TFJS_NODE_RS_LIBTENSORFLOW set to another directory than deps/ was made from.
  assert.match(check({root, env: {TFJS_NODE_RS_LIBTENSORFLOW: '/opt/tf'}}), /TFJS_NODE_RS_LIBTENSORFLOW names another directory/);
  // The cache cleaned: the link dangles.
  fs.rmSync(path.join(shared, 'lib'), {recursive: true});
  assert.match(check({root}), /deps no longer leads to the libraries \(the cache was cleaned\?\)/);
  fs.rmSync(shared, {recursive: true});
  assert.match(check({root}), /deps no longer leads to the libraries/);
  fs.rmSync(path.join(root, 'deps'));
  assert.match(check({root}), /deps is not set up/);
});

test('missingPart: on Windows the addon\'s folder needs no deps/ (no rpath: deps/lib goes on PATH)', () => {
  const {root, addonDir} = readyInstall();
  assert.match(check({root, addonDir}), /does not lead to/);
  assert.equal(check({root, addonDir, platform: 'win32'}), null);
});

test('missingPart: deps/ made from $TFJS_NODE_RS_LIBTENSORFLOW serves while that is set to it', () => {
  const {root} = readyInstall({source: '/opt/tf'});
  assert.equal(check({root, env: {TFJS_NODE_RS_LIBTENSORFLOW: '/opt/tf'}}), null);
  assert.equal(check({root}), null);
});

test('missingPart: the GPU package wants its CUDA libraries with a driver or TFJS_NODE_RS_CUDA=1', () => {
  const {root} = readyInstall({name: GPU_PACKAGE});
  const driver = () => ({version: '550.54.15', where: 'test'});
  assert.equal(check({root}), null);
  assert.equal(check({root, driver, env: {TFJS_NODE_RS_CUDA: '0'}}), null);
  assert.match(check({root, driver}), /the CUDA libraries are not set up/);
  assert.match(check({root, env: {TFJS_NODE_RS_CUDA: '1'}}), /the CUDA libraries are not set up/);
  for (const lib of cudaLibraryPaths(path.join(root, 'cuda'))) {
    fs.mkdirSync(path.dirname(lib), {recursive: true});
    fs.writeFileSync(lib, 'elf');
  }
  assert.equal(check({root, driver}), null);
});

test('provideAtFirstUse: nothing runs for a ready install', () => {
  const {root} = readyInstall();
  const run = () => assert.fail('the set-up script ran');
  assert.equal(provideAtFirstUse({root, addonDir: root, env: {}, driver: NO_DRIVER, run, makeError: (m) => new Error(m), log: quietLog()}), null);
});

test('provideAtFirstUse: runs the set-up script with this runtime, one log line, and its JSON outcome', () => {
  const {root, addonDir} = readyInstall();
  const log = quietLog();
  const calls = [];
  const run = (cmd, args, opts) => {
    calls.push({cmd, args, opts});
    return {status: 0, stdout: 'noise\n{"ok":true,"deps":"x"}\n'};
  };
  const why = provideAtFirstUse({root, addonDir, env: {A: '1'}, driver: NO_DRIVER, run, makeError: (m) => new Error(m), log});
  assert.match(why, /does not lead to/);
  assert.equal(calls.length, 1);
  assert.equal(calls[0].cmd, process.execPath);
  assert.deepEqual(calls[0].args, [path.join(root, 'scripts', 'libtensorflow.js'), '--json', '--addon-dir', addonDir]);
  // Progress and log lines reach the user's stderr as they happen; stdout carries the outcome.
  assert.deepEqual(calls[0].opts.stdio, ['ignore', 'pipe', 'inherit']);
  assert.deepEqual(calls[0].opts.env, {A: '1'});
  assert.equal(log.lines.length, 1);
  assert.match(log.lines[0], new RegExp(`^first use of this install \\(.*\\): providing libtensorflow ${TF_VERSION.replace(/\./g, '\\.')} now, once`));
});

test('provideAtFirstUse: a failed set-up is one Error with its reason and what to run', () => {
  const {root} = readyInstall();
  fs.rmSync(path.join(root, 'deps'));
  const makeError = (m) => Object.assign(new Error(m), {code: 'TEST'});
  const attempt = (res) => {
    try {
      provideAtFirstUse({root, addonDir: null, env: {}, driver: NO_DRIVER, run: () => res, makeError, log: quietLog()});
    } catch (err) {
      assert.equal(err.code, 'TEST');
      return err.message;
    }
    return assert.fail('no error');
  };
  const told = attempt({status: 1, stdout: '{"ok":false,"message":"cannot reach https://pypi.org/simple/ (ENOTFOUND)"}\n'});
  assert.match(told, new RegExp(`^libtensorflow ${TF_VERSION.replace(/\./g, '\\.')} could not be provided: cannot reach https://pypi\\.org/simple/ \\(ENOTFOUND\\)`));
  assert.ok(told.includes(`node ${path.join(root, 'scripts', 'libtensorflow.js')}`), told);
  assert.match(attempt({status: null, signal: 'SIGKILL', stdout: ''}), /could not be provided: it exited with signal SIGKILL/);
  assert.match(attempt({error: new Error('spawn ENOENT')}), /could not run node .*libtensorflow\.js to provide libtensorflow: spawn ENOENT/);
});

test('provideAtFirstUse: a package inside a zip archive (Yarn Plug\'n\'Play) is refused with the setting that works', () => {
  const root = '/home/u/.yarn/berry/cache/tfjs-node-rs-file-1.zip/node_modules/tfjs-node-rs';
  assert.throws(
    () => provideAtFirstUse({root, addonDir: null, env: {}, driver: NO_DRIVER, run: () => assert.fail('ran'), makeError: (m) => new Error(m), log: quietLog()}),
    /inside a zip archive \(Yarn Plug'n'Play\), where libtensorflow cannot be placed: set `nodeLinker: node-modules` in \.yarnrc\.yml/,
  );
});
