'use strict';
// Loads the native addon through the napi-generated loader at the repo root.
// Only the backend core (tensorflow_backend.js) runs ops through it.

// TensorFlow's info logs (oneDNN, CPU features) are noise for users.
if (process.env.TF_CPP_MIN_LOG_LEVEL === undefined) {
  process.env.TF_CPP_MIN_LOG_LEVEL = '2';
}

let binding;
try {
  binding = require('../../binding.js');
} catch (e) {
  const err = new Error(
      'tfjs-node-rs: the native addon could not be loaded (' +
      (e && e.message) + '). Run `npm run build` to build it.');
  err.cause = e;
  throw err;
}

module.exports = binding;
