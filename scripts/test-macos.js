#!/usr/bin/env node
'use strict';
// `npm run test:macos` (run by .ci/run): what can be verified of the macOS arm64 package on this
// Linux machine, where nothing macOS can run:
//
//   1. cross-builds tfjs-node-rs.darwin-arm64.node when it is missing or stale (scripts/build.js
//      --target aarch64-apple-darwin: cargo-zigbuild and zig, installed under ~/.cache on first
//      use, link it against the macosx_12_0_arm64 wheel's dylibs, unpacked by the same code that
//      unpacks them on a Mac) and packs tfjs-node-rs-darwin-arm64, which checks the addon
//      (scripts/macho.js's checkMacAddon: arm64, macOS <= 12.0, its ad-hoc signature's pages, the
//      two @rpath TF dylibs and libSystem only, rpaths that reach deps/lib beside it and the root
//      package's, and every symbol dyld binds exported by the library it is bound to: the TF
//      dylibs, a macOS node executable's N-API, libSystem's stubs);
//   2. prints that check's summary, and the tarball's contents and size.
//
// The loader's macOS paths (platform checks, dyld's "Library not loaded" explained) are unit
// tests with injected probes (__test__/native_loader.test.js).

const fs = require('fs');
const os = require('os');
const path = require('path');
const {pack} = require('./pack');
const {checkMacAddon, checkInputs} = require('./macho');
const {runMain} = require('./build');
const {log} = require('./libtensorflow');

const TARGET = 'aarch64-apple-darwin';

async function main() {
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-macos-'));
  try {
    const packed = await pack({out, build: true, targets: [TARGET]});
    const [mac] = packed.platforms;
    log(`${path.basename(mac.file)}: ${(mac.size / 1024).toFixed(0)} kB (${mac.files.join(', ')})`);
    const res = checkMacAddon(checkInputs({fetch: true}));
    for (const line of res.summary.split('\n')) log(line);
    log('PASS');
    return 0;
  } finally {
    fs.rmSync(out, {recursive: true, force: true});
  }
}

runMain(main);
