'use strict';
// `require('tfjs-node-rs')`: the @tensorflow/tfjs API with the `tensorflow`
// backend (TensorFlow's C runtime) registered and made current.

const {startLoading} = require('./native_loader_core');

// The native runtime, with the options requested before (js/configure.js): TF makes its context
// and sets kernels up on the executor thread (src/tf/warm_up.rs) while JS goes on loading.
function startNativeRuntime() {
  const binding = require('./backend/binding');
  require('./configure').applyTo(binding);
  binding.startRuntime();
}

// Where a native thread loads the addon, and libtensorflow with it (startLoading), the runtime
// starts once tfjs's JS and the package's own have loaded and set up what needs no binding
// (below): with tfjs's packages loaded at their first use (lazy_packages.js), that JS is done
// before the library is, and requiring the binding earlier would hold the main thread until
// then (14 ms of `require` here). TF's set-ups then run
// until the program's first op, as before (1 of 54 in the suite's tasks either way). Elsewhere
// the runtime starts first, so that the set-ups run while tfjs's JS loads.
const loadsInBackground = startLoading();
if (!loadsInBackground) startNativeRuntime();
require('./lazy_packages').deferPackages(require('path').dirname(require.resolve('@tensorflow/tfjs')));
const tf = require('@tensorflow/tfjs');
const {registerTensorflowBackend, BACKEND_NAME} = require('./backend');
const {registerKernels} = require('./kernels/register');
const {installGraphs} = require('./graphs');
const node = require('./node');
const {version: packageVersion} = require('../package.json');

// What needs no binding goes first: where the addon loads on a native thread, the main thread
// would otherwise wait for it with this work still to do (2-3 ms here).
registerKernels(BACKEND_NAME);
// Before the exports below are taken: it replaces tfjs-core's `dropout`.
installGraphs();

// Libraries built on tfjs detect Node.js by `version['tfjs-node']`: it names the tfjs-node API
// this package matches, the tfjs release it re-exports.
tf.version['tfjs-node'] = tf.version.tfjs;
tf.version['tfjs-node-rs'] = packageVersion;

const version = tf.version;

// Written in the form of Babel's `export *` so that Node's CommonJS export detection
// (cjs-module-lexer) reads it: `import {tensor} from 'tfjs-node-rs'` and `import * as tf` then
// see every tfjs name, `version` and `node`, on the same module instance that `require`
// returns. Getters, as tfjs's own bundle and tfjs-node export them: a copy of every value
// would load the packages that lazy_packages.js leaves until their first use.
exports.version = version;
exports.node = node;
Object.keys(tf).forEach(function(key) {
  if (key === 'default' || key === '__esModule') return;
  if (key in exports && exports[key] === tf[key]) return;
  Object.defineProperty(exports, key, {enumerable: true, get: function() { return tf[key]; }});
});

if (loadsInBackground) startNativeRuntime();
registerTensorflowBackend();
tf.setBackend(BACKEND_NAME);
