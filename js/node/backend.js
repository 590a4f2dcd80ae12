'use strict';
// The backend every tf.node function runs on. As in tfjs-node, tf.node works only while the
// `tensorflow` backend is current: its tensors would otherwise belong to another backend.

const tfc = require('@tensorflow/tfjs-core');
const {BACKEND_NAME} = require('../backend');
const {errorWithDetail} = require('../backend/errors');

/**
 * The current backend, which must be `tensorflow`. The message is tfjs-node's; `fn` names the
 * caller in the error's detail.
 */
function tensorflowBackend(fn) {
  const current = tfc.getBackend();
  if (current !== BACKEND_NAME) {
    throw errorWithDetail(`Expect the current backend to be "${BACKEND_NAME}", but got "${current}"`,
                          `${fn} runs on it: call tf.setBackend('${BACKEND_NAME}') first`);
  }
  return tfc.backend();
}

module.exports = {tensorflowBackend};
