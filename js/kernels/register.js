'use strict';
// Registers every kernel of the `tensorflow` backend: the table rows through
// the one generic kernelFunc, then the hand-written families.

const tfc = require('@tensorflow/tfjs-core');
const {ROWS} = require('./table');
const {compileRow} = require('./run_table');

const FAMILIES = [
  require('./families/basic'),
  require('./families/gather_scatter'),
  require('./families/conv'),
  require('./families/pool'),
  require('./families/linalg'),
  require('./families/image'),
  require('./families/sparse_ragged'),
];

/** All kernel configs: [{kernelName, kernelFunc}]. */
function kernelConfigs() {
  const configs = new Map();
  for (const row of ROWS) {
    configs.set(row.kernel, {kernelName: row.kernel, kernelFunc: compileRow(row)});
  }
  for (const family of FAMILIES) {
    for (const k of family.KERNELS) {
      if (configs.has(k.kernelName)) {
        throw new Error(`kernel ${k.kernelName} is both in the table and a family`);
      }
      configs.set(k.kernelName, k);
    }
  }
  return [...configs.values()];
}

function registerKernels(backendName) {
  const names = [];
  for (const {kernelName, kernelFunc} of kernelConfigs()) {
    if (tfc.getKernel(kernelName, backendName) == null) {
      tfc.registerKernel({kernelName, backendName, kernelFunc});
    }
    names.push(kernelName);
  }
  return names;
}

module.exports = {registerKernels, kernelConfigs};
