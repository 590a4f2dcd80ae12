'use strict';
// `require('tfjs-node-rs/configure')`: runtime options set before `require('tfjs-node-rs')`
// starts TensorFlow (see js/configure.js). Loads no TensorFlow.
module.exports = require('./js/configure');
