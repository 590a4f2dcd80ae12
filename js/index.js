'use strict';
// `require('tfjs-node-rs')`: the @tensorflow/tfjs API with the `tensorflow`
// backend (TensorFlow's C runtime) registered and made current.

// The native runtime first, with the options requested before (js/configure.js): TF sets a
// kernel up on the executor thread (src/tf/warm_up.rs) while tfjs's JS loads.
const binding = require('./backend/binding');
require('./configure').applyTo(binding);
binding.startRuntime();
const tf = require('@tensorflow/tfjs');
const {registerTensorflowBackend, BACKEND_NAME} = require('./backend');
const {registerKernels} = require('./kernels/register');
const {version: packageVersion} = require('../package.json');

registerTensorflowBackend();
registerKernels(BACKEND_NAME);
tf.setBackend(BACKEND_NAME);
// Before the exports below are taken: it replaces tfjs-core's `dropout`.
require('./graphs').installGraphs();

// Libraries built on tfjs detect Node.js by `version['tfjs-node']`: it names the tfjs-node API
// this package matches, the tfjs release it re-exports.
tf.version['tfjs-node'] = tf.version.tfjs;
tf.version['tfjs-node-rs'] = packageVersion;

const version = tf.version;
const node = require('./node');

// Written as one object literal of a spread `require` and plain names because that is the
// form Node's CommonJS export detection (cjs-module-lexer) reads: `import {tensor} from
// 'tfjs-node-rs'` and `import * as tf` then see every tfjs name, `version` and `node`, on the
// same module instance that `require` returns.
module.exports = {
  ...require('@tensorflow/tfjs'),
  version,
  node,
};
