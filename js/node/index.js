'use strict';
// The `tf.node` namespace: runtime options, SavedModel (loading and export), image codecs, TensorBoard summaries and
// TF's distributed runtime.
// Requiring it also installs the other Node-only pieces into tfjs (as tfjs-node does):
// the `file://` model handler (`tf.io.fileSystem`), `tf.io.nodeHTTPRequest` with http(s)
// loading, and the progress bar that `model.fit({verbose: 1})` shows.

const savedModel = require('./saved_model');
const savedModelExport = require('./saved_model_export');
const image = require('./image');
const tensorboard = require('./tensorboard');
const int64 = require('./int64');
const graphs = require('../graphs');
const distributed = require('./distributed');
const dataParallel = require('./data_parallel');
const runtime = require('./runtime');
const {profile} = require('./profile');
const {installIO} = require('./io');
const {installProgressBar} = require('./progbar');

installIO();
installProgressBar();

module.exports = {
  // The runtime
  configure: runtime.configure,
  runtimeInfo: runtime.runtimeInfo,
  loadOpLibrary: runtime.loadOpLibrary,
  profile,
  // SavedModel
  getMetaGraphsFromSavedModel: savedModel.getMetaGraphsFromSavedModel,
  loadSavedModel: savedModel.loadSavedModel,
  getNumOfSavedModels: savedModel.getNumOfSavedModels,
  TFSavedModel: savedModel.TFSavedModel,
  saveSavedModel: savedModelExport.saveSavedModel,
  int64Tensor: int64.int64Tensor,
  Int64Tensor: int64.Int64Tensor,
  // Images
  decodeImage: image.decodeImage,
  decodeJpeg: image.decodeJpeg,
  decodePng: image.decodePng,
  decodeBmp: image.decodeBmp,
  decodeGif: image.decodeGif,
  encodeJpeg: image.encodeJpeg,
  encodePng: image.encodePng,
  getImageType: image.getImageType,
  ImageType: image.ImageType,
  // TensorBoard
  summaryFileWriter: tensorboard.summaryFileWriter,
  SummaryFileWriter: tensorboard.SummaryFileWriter,
  tensorBoard: tensorboard.tensorBoard,
  TensorBoardCallback: tensorboard.TensorBoardCallback,
  // Whole calls as graphs
  function: graphs.graphFunction,
  callGraphStats: graphs.callGraphStats,
  // TF's distributed runtime
  startServer: distributed.startServer,
  connectToCluster: distributed.connectToCluster,
  listDevices: distributed.listDevices,
  withDevice: distributed.withDevice,
  deviceOf: distributed.deviceOf,
  distributed: {fit: dataParallel.fit, join: dataParallel.join, allReduce: dataParallel.allReduce},
};
