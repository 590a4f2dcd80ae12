'use strict';
// V8's code cache for the modules `require('tfjs-node-rs')` loads (js/code_cache.js), off unless
// asked for: written at a first process's exit, used by the next, made again when V8 rejects it,
// never in the way when it cannot be written; the results are those of a load without it.

const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const {entryPath, ENV_VARIABLE} = require('../js/code_cache');
const {scratchDirs} = require('./support/scratch');

const ROOT = path.join(__dirname, '..');
const tempDir = scratchDirs('tfjs-node-rs-code-cache-');

/** A model's prediction and a kernel's error, then how the load went in the cache. */
const PROGRAM = `
  const tf = require('.');
  const model = tf.sequential({layers: [tf.layers.dense({units: 3, inputShape: [2],
    kernelInitializer: 'ones', biasInitializer: 'zeros', activation: 'relu'})]});
  const y = Array.from(model.predict(tf.tensor2d([[1, -2], [3, 4]])).dataSync());
  let message;
  try { tf.tensor([1, 2]).reshape([3]); } catch (e) { message = e.message; }
  console.log(JSON.stringify({y, message, cache: tf.node.runtimeInfo().codeCache}));`;

/** PROGRAM in a fresh process with the cache setting `setting` (undefined: none); its last
 * line's JSON. */
function run(setting) {
  const env = {...process.env, [ENV_VARIABLE]: setting};
  if (setting === undefined) delete env[ENV_VARIABLE];
  const child = spawnSync(process.execPath, ['-e', PROGRAM],
                          {cwd: ROOT, env, encoding: 'utf8', timeout: 120000});
  assert.strictEqual(child.status, 0, child.stderr);
  const lines = child.stdout.trim().split('\n');
  return JSON.parse(lines[lines.length - 1]);
}

/** The cache's entries under `base` (one folder for this runtime). */
function entries(base) {
  const [folder, ...others] = fs.readdirSync(base);
  assert.deepStrictEqual(others, []);
  return fs.readdirSync(path.join(base, folder)).map((name) => path.join(base, folder, name));
}

// Hand-computed: relu(x · ones(2, 3)): [1, -2] sums to -1, [3, 4] to 7.
const EXPECTED = {y: [0, 0, 0, 7, 7, 7], message: 'Size(2) must match the product of shape 3'};

test('asked for, the first process writes the cache at exit and the next compiles its load from it', () => {
  const base = tempDir('cache');
  const first = run(base);
  assert.strictEqual(first.cache.hits, 0);
  assert.ok(first.cache.misses > 20, JSON.stringify(first.cache));
  assert.strictEqual(path.dirname(first.cache.directory), base);
  assert.strictEqual(entries(base).length, first.cache.misses);

  const second = run(base);
  assert.deepStrictEqual(second.cache, {...first.cache, hits: first.cache.misses, misses: 0});
  const off = run('0');
  const unset = run(undefined);
  for (const none of [off, unset]) {
    assert.deepStrictEqual(none.cache, {directory: null, hits: 0, misses: 0, rejected: 0});
  }
  for (const result of [first, second, off, unset]) {
    assert.deepStrictEqual({y: result.y, message: result.message}, EXPECTED);
  }
});

test('a cache V8 rejects is compiled without and made again', () => {
  const base = tempDir('rejected');
  const {misses} = run(base).cache;
  for (const file of entries(base)) fs.writeFileSync(file, Buffer.alloc(fs.statSync(file).size, 7));
  const damaged = run(base);
  assert.deepStrictEqual([damaged.cache.hits, damaged.cache.misses, damaged.cache.rejected],
                         [0, misses, misses]);
  assert.deepStrictEqual({y: damaged.y, message: damaged.message}, EXPECTED);
  assert.strictEqual(run(base).cache.hits, misses);
});

test('a folder that cannot be written means no cache', () => {
  const file = path.join(tempDir('unwritable'), 'a-file');
  fs.writeFileSync(file, '');
  const result = run(path.join(file, 'cache'));
  assert.deepStrictEqual(result.cache, {directory: null, hits: 0, misses: 0, rejected: 0});
  assert.deepStrictEqual({y: result.y, message: result.message}, EXPECTED);
});

test('a module file rewritten with the same size and mtime gets another entry', async () => {
  const dir = tempDir('entry');
  const file = path.join(dir, 'module.js');
  // npm's tarballs give every file this mtime.
  const npmTime = new Date('1985-10-26T08:15:00Z');
  fs.writeFileSync(file, 'module.exports = 1;');
  fs.utimesSync(file, npmTime, npmTime);
  const before = {entry: entryPath(dir, file), mtimeMs: fs.statSync(file).mtimeMs};
  await new Promise((resolve) => setTimeout(resolve, 50));
  fs.writeFileSync(file, 'module.exports = 2;');
  fs.utimesSync(file, npmTime, npmTime);
  assert.strictEqual(fs.statSync(file).mtimeMs, before.mtimeMs);
  assert.notStrictEqual(entryPath(dir, file), before.entry);
  assert.strictEqual(entryPath(dir, path.join(dir, 'missing.js')), null);
});
