'use strict';
// `require('tfjs-node-rs')`: the @tensorflow/tfjs API with the `tensorflow`
// backend (TensorFlow's C runtime) registered and made current.

const tf = require('@tensorflow/tfjs');
const {registerTensorflowBackend, BACKEND_NAME} = require('./backend');
const {version} = require('../package.json');

registerTensorflowBackend();
tf.setBackend(BACKEND_NAME);

tf.version['tfjs-node-rs'] = version;

const api = {};
for (const key of Object.keys(tf)) api[key] = tf[key];
api.version = tf.version;
api.node = require('./node');

module.exports = api;
