#!/usr/bin/env node
'use strict';
// `npm install` in a development checkout (npm runs `prepare` there, never for a dependency
// installed from a registry or a tarball; the published package.json has no scripts at all, see
// scripts/pack.js): provides libtensorflow in deps/ and builds the addon (Cargo.toml and src/ next
// to package.json, napi CLI installed); TFJS_NODE_RS_SKIP_BUILD=1 skips that build. An installed
// package gets libtensorflow at its first require instead (js/first_use.js).

const path = require('path');
const {ensureLibtensorflow, log} = require('./libtensorflow');
const {build, isDevCheckout, napiCli, runMain} = require('./build');

const root = path.resolve(__dirname, '..');

async function main() {
  await ensureLibtensorflow({root, log});
  if (!isDevCheckout(root)) {
    return 0;
  }
  if (process.env.TFJS_NODE_RS_SKIP_BUILD === '1') {
    log('TFJS_NODE_RS_SKIP_BUILD=1: not building the addon');
    return 0;
  }
  if (!napiCli(root)) {
    log('the napi CLI is not installed (dev dependencies omitted?): not building the addon');
    return 0;
  }
  return build({root, log});
}

runMain(main);
