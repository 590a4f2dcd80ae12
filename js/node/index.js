'use strict';
// The `tf.node` namespace: runtime options, SavedModel (loading and export), image codecs, TensorBoard summaries and
// TF's distributed runtime.
// Requiring it also installs the other Node-only pieces into tfjs (as tfjs-node does):
// the `file://` model handler (`tf.io.fileSystem`), `tf.io.nodeHTTPRequest` with http(s)
// loading, and the progress bar that `model.fit({verbose: 1})` shows.

const graphs = require('../graphs');
const runtime = require('./runtime');
const {installIO} = require('./io');
const {installProgressBar} = require('./progbar');
const {whenLoaded} = require('../lazy_packages');

installIO();
whenLoaded('@tensorflow/tfjs-layers', installProgressBar);

const node = {
  // The runtime
  configure: runtime.configure,
  runtimeInfo: runtime.runtimeInfo,
  loadOpLibrary: runtime.loadOpLibrary,
  // Whole calls as graphs
  function: graphs.graphFunction,
  callGraphStats: graphs.callGraphStats,
};

/**
 * Adds `names` to `tf.node` as properties whose first read requires the module that `load`
 * requires and takes the member of that name from what `load` returns; the property is then a
 * plain one. Why: a program uses few of these parts, and requiring them all cost every start
 * 6-7 ms (SavedModel export alone 3.6). A program may still assign the names, as before.
 */
function addOnFirstUse(load, names) {
  const define = (name, value) => Object.defineProperty(node, name, {
    value, writable: true, enumerable: true, configurable: true,
  });
  for (const name of names) {
    Object.defineProperty(node, name, {
      enumerable: true,
      configurable: true,
      get() {
        const value = load()[name];
        define(name, value);
        return value;
      },
      set(value) {
        define(name, value);
      },
    });
  }
}

addOnFirstUse(() => require('./profile'), ['profile']);
// SavedModel
addOnFirstUse(() => require('./saved_model'),
              ['getMetaGraphsFromSavedModel', 'loadSavedModel', 'getNumOfSavedModels', 'TFSavedModel']);
addOnFirstUse(() => require('./saved_model_export'), ['saveSavedModel']);
addOnFirstUse(() => require('./int64'), ['int64Tensor', 'Int64Tensor']);
// Images
addOnFirstUse(() => require('./image'), ['decodeImage', 'decodeJpeg', 'decodePng', 'decodeBmp',
                                         'decodeGif', 'encodeJpeg', 'encodePng', 'getImageType',
                                         'ImageType']);
// TensorBoard
addOnFirstUse(() => require('./tensorboard'),
              ['summaryFileWriter', 'SummaryFileWriter', 'tensorBoard', 'TensorBoardCallback']);
// TF's distributed runtime
addOnFirstUse(() => require('./distributed'),
              ['startServer', 'connectToCluster', 'listDevices', 'withDevice', 'deviceOf']);
addOnFirstUse(() => {
  const {fit, join, allReduce} = require('./data_parallel');
  return {distributed: {fit, join, allReduce}};
}, ['distributed']);

module.exports = node;
