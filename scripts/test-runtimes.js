#!/usr/bin/env node
'use strict';
// `npm run test:runtimes`: a first program (load, train, predict, read, decode an image:
// __test__/support/runtime_smoke.cjs) on the other JS runtimes users run this package on,
// Bun and Deno, from the npm registry (scripts/runtimes.js). The whole test suite needs
// node:test, which they do not carry; each smoke run is bounded in time.

const path = require('path');
const {spawnSync} = require('child_process');
const {runMain} = require('./build');
const {log} = require('./libtensorflow');
const {bunBinary, denoBinary} = require('./runtimes');

const root = path.resolve(__dirname, '..');
const SMOKE = path.join(root, '__test__', 'support', 'runtime_smoke.cjs');
const TIMEOUT_MS = 120_000;

const RUNTIMES = [
  {name: 'Bun', command: () => [bunBinary(), SMOKE, root]},
  // Deno asks for permissions: -A grants them (the addon is loaded through FFI).
  {name: 'Deno', command: () => [denoBinary(), 'run', '-A', SMOKE, root]},
];

async function main() {
  let failed = 0;
  for (const runtime of RUNTIMES) {
    const [command, ...args] = runtime.command();
    log(`${runtime.name}: ${path.basename(SMOKE)}`);
    const res = spawnSync(command, args, {cwd: root, stdio: 'inherit', timeout: TIMEOUT_MS});
    if (res.status !== 0) {
      log(`${runtime.name} failed (${res.error ? res.error.message : res.signal || `exit code ${res.status}`})`);
      failed++;
    }
  }
  return failed === 0 ? 0 : 1;
}

if (require.main === module) runMain(main);
