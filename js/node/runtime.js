'use strict';
// The runtime itself: its options (js/configure.js), what is in force, and op libraries.

const {configure, started} = require('../configure');
const {tensorflowBackend} = require('./backend');
const {codeCacheStats} = require('../code_cache');

/**
 * What the runtime runs with: libtensorflow's version and file, TF's thread pools, whether
 * oneDNN is on, the devices, the GPU options (with whether a GPU uses them), and how this
 * process's load went in V8's code cache.
 */
function runtimeInfo() {
  const backend = tensorflowBackend('tf.node.runtimeInfo');
  const native = backend.runtimeInfo();
  const options = started();
  const devices = backend.listDevices();
  const perCore = (n) => n === 0 ? native.cores : n;
  return {
    tfVersion: backend.tfVersion(),
    libraryPath: native.libraryPath,
    cores: native.cores,
    intraOpThreads: perCore(native.intraOpThreads),
    interOpThreads: perCore(native.interOpThreads),
    // TF reads it once at load; on by default for x86-64 Linux builds.
    oneDNN: process.env.TF_ENABLE_ONEDNN_OPTS !== '0',
    devices,
    gpu: {
      allowGrowth: options.allowGrowth,
      memoryLimitMB: options.memoryLimitMB,
      visibleDevices: options.visibleDevices.slice(),
      used: devices.some((d) => d.deviceType === 'GPU'),
    },
    codeCache: codeCacheStats(),
  };
}

/**
 * Loads a library of custom TF ops and kernels (`TF_LoadLibrary`), e.g. one a SavedModel
 * needs; returns the names of the ops it defines. TF's error names what failed (the file, a
 * missing symbol, an op registered twice).
 */
function loadOpLibrary(path) {
  if (typeof path !== 'string' || path.length === 0) {
    throw new TypeError('tf.node.loadOpLibrary: path must be a file path');
  }
  return tensorflowBackend('tf.node.loadOpLibrary').loadOpLibrary(path);
}

module.exports = {configure, runtimeInfo, loadOpLibrary};
