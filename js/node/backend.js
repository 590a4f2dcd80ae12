'use strict';
// The backend every tf.node function runs on. As in tfjs-node, tf.node works only while the
// `tensorflow` backend is current: its tensors would otherwise belong to another backend.

const tfc = require('@tensorflow/tfjs-core');
const {BACKEND_NAME} = require('../backend');

/** The current backend, which must be `tensorflow`; `fn` names the caller in the error. */
function tensorflowBackend(fn) {
  const current = tfc.getBackend();
  if (current !== BACKEND_NAME) {
    throw new Error(`${fn}: expected the current backend to be "${BACKEND_NAME}", but got ` +
                    `"${current}" (call tf.setBackend('${BACKEND_NAME}') first)`);
  }
  return tfc.backend();
}

module.exports = {tensorflowBackend};
