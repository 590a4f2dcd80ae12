'use strict';
// index.d.ts and binding.d.ts type every public name: a TypeScript program using them all
// compiles, and one that misuses them does not.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const root = path.resolve(__dirname, '..');
const tsc = path.join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const FLAGS = ['--noEmit', '--strict', '--target', 'es2020', '--module', 'nodenext', '--moduleResolution', 'nodenext'];

/** Errors tsc reports in `file`; tfjs's own .d.ts files are not ours to fix, so only ours count. */
function typeErrors(file) {
  const result = spawnSync(process.execPath, [tsc, ...FLAGS, file], {cwd: root, encoding: 'utf8'});
  const ours = /^(index\.d\.ts|binding\.d\.ts|__test__\/|\/tmp\/|.*tfjs-node-rs-types)/;
  return result.stdout.split('\n').filter((line) => /error TS\d+/.test(line) && ours.test(path.relative(root, line.split('(')[0])));
}

test('every public name type-checks in use', {timeout: 120000}, () => {
  assert.deepEqual(typeErrors(path.join('__test__', 'types', 'usage.ts')), []);
});

test('misuse is a type error', {timeout: 120000}, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-types-'));
  const file = path.join(dir, 'misuse.ts');
  fs.writeFileSync(file, [
    `import * as tf from ${JSON.stringify(path.join(root, 'index'))};`,
    `import * as binding from ${JSON.stringify(path.join(root, 'binding'))};`,
    'tf.node.decodePng(42);',
    "binding.createTensor([1], 'float17', new Float32Array(1));",
    'tf.node.noSuchFunction();',
  ].join('\n'));
  const errors = typeErrors(file);
  assert.equal(errors.length, 3, errors.join('\n'));
});
