'use strict';
// `require('tfjs-node-rs')`: the @tensorflow/tfjs API with the `tensorflow`
// backend (TensorFlow's C runtime) registered and made current.

// libtensorflow loads on a worker thread while tfjs's JS and this package's load on this one
// (js/native_loader_core.js: loadInBackground); the binding is required once they have.
require('./native_loader_core').loadInBackground();
const tf = require('@tensorflow/tfjs');
const {registerTensorflowBackend, BACKEND_NAME} = require('./backend');
const {registerKernels} = require('./kernels/register');
const graphs = require('./graphs');
const node = require('./node');
const {version: packageVersion} = require('../package.json');

// The native runtime, with the options requested before (js/configure.js): TF sets a kernel up
// on the executor thread (src/tf/warm_up.rs) until the program's first op.
const binding = require('./backend/binding');
require('./configure').applyTo(binding);
binding.startRuntime();
registerTensorflowBackend();
registerKernels(BACKEND_NAME);
tf.setBackend(BACKEND_NAME);
// Before the exports below are taken: it replaces tfjs-core's `dropout`.
graphs.installGraphs();

// Libraries built on tfjs detect Node.js by `version['tfjs-node']`: it names the tfjs-node API
// this package matches, the tfjs release it re-exports.
tf.version['tfjs-node'] = tf.version.tfjs;
tf.version['tfjs-node-rs'] = packageVersion;

const version = tf.version;

// Written as one object literal of a spread `require` and plain names because that is the
// form Node's CommonJS export detection (cjs-module-lexer) reads: `import {tensor} from
// 'tfjs-node-rs'` and `import * as tf` then see every tfjs name, `version` and `node`, on the
// same module instance that `require` returns.
module.exports = {
  ...require('@tensorflow/tfjs'),
  version,
  node,
};
