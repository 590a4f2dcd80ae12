#!/usr/bin/env node
'use strict';
// `npm install` hook. Always provides libtensorflow in deps/. In a development
// checkout (Cargo.toml and src/ next to package.json, napi CLI installed) it also
// builds the addon; TFJS_NODE_RS_SKIP_BUILD=1 skips that build. An installed
// package (no Rust sources) only gets libtensorflow.

const path = require('path');
const {ensureLibtensorflow, log} = require('./libtensorflow');
const {build, isDevCheckout, napiCli, runMain} = require('./build');

const root = path.resolve(__dirname, '..');

async function main() {
  await ensureLibtensorflow({root, log});
  if (!isDevCheckout(root)) {
    log(`postinstall took ${process.uptime().toFixed(2)} s`);
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
