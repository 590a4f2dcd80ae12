'use strict';
// Registers the `tensorflow` backend with tfjs (its kernels are js/kernels/, registered by
// js/index.js).

const tfc = require('@tensorflow/tfjs-core');
const {TensorFlowBackend} = require('./tensorflow_backend');

const BACKEND_NAME = 'tensorflow';
/** Above tfjs's cpu (1) and webgl (2) backends. */
const PRIORITY = 3;

let registered = false;

function registerTensorflowBackend() {
  if (registered) return;
  registered = true;
  // Loaded now, so that a missing addon fails `require` with its reason
  // instead of tfjs quietly falling back to another backend.
  const binding = require('./binding');
  if (tfc.findBackendFactory(BACKEND_NAME) == null) {
    tfc.registerBackend(BACKEND_NAME, () => new TensorFlowBackend(binding), PRIORITY);
  }
}

module.exports = {registerTensorflowBackend, BACKEND_NAME, PRIORITY, TensorFlowBackend};
