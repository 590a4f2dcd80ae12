'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');

/**
 * The Python with TensorFlow 2.21 of benches/keras's venv (`TFJS_NODE_RS_KERAS_VENV`, default
 * ~/.cache/tfjs-node-rs/keras-venv), if this machine has it.
 */
function tensorflowPython() {
  const venv = process.env.TFJS_NODE_RS_KERAS_VENV ||
      path.join(os.homedir(), '.cache', 'tfjs-node-rs', 'keras-venv');
  const python = path.join(venv, 'bin', 'python');
  return fs.existsSync(python) ? python : undefined;
}

module.exports = {tensorflowPython};
