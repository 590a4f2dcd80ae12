'use strict';
// What both the install scripts (scripts/libtensorflow.js) and the loader (native_loader_core.js)
// must agree on about libtensorflow, written once.

module.exports = {
  /** The TensorFlow release the addon is built against and the install provides. */
  TF_VERSION: '2.21.0',
  /** Every platform's wheel is a manylinux_2_27 build. */
  MIN_GLIBC: [2, 27],
  /** The two libraries the addon links. */
  LIBS: ['libtensorflow_cc.so.2', 'libtensorflow_framework.so.2'],
  /** A directory holding LIBS to use instead of the wheel's (linked, not copied). */
  ENV_DIR: 'TFJS_NODE_RS_LIBTENSORFLOW',
  /** At install time: copy the libraries into the project instead of linking the shared copy. */
  COPY_ENV: 'TFJS_NODE_RS_COPY_LIBTENSORFLOW',
};
