'use strict';
// The `saved_model.pb` a TF1-style SavedModel export writes (issue 38): a SavedModel with one
// MetaGraphDef holding the inference GraphDef, the SaverDef that names the checkpoint's
// restore path, the 'variables' collections (VariableDef bytes, which Python's v1 loader
// reads to rebuild variables) and the signature defs. Field numbers are those of TF's
// saved_model.proto, meta_graph.proto, saver.proto, tensor_shape.proto and variable.proto.

const {Writer} = require('./proto');
const {TF_DTYPE_NAMES} = require('../backend/dtypes');

const SAVED_MODEL_SCHEMA_VERSION = 1;
const PREDICT_METHOD_NAME = 'tensorflow/serving/predict';
/** SaverDef.CheckpointFormatVersion.V2: the format TF's SaveV2 op writes. */
const SAVER_FORMAT_V2 = 2;

function dtypeCode(tfDtype) {
  const code = TF_DTYPE_NAMES.indexOf(tfDtype);
  if (code <= 0) throw new Error(`SavedModel export: unknown TF dtype '${tfDtype}'`);
  return code;
}

/** TensorShapeProto: dims of -1 are unknown (the batch dimension); no shape = unknown rank. */
function shapeMessage(shape) {
  const w = new Writer();
  if (shape === undefined) {
    w.varint(3, 1);
    return w;
  }
  for (const size of shape) {
    const dim = new Writer();
    dim.varint(1, size);
    w.message(2, dim);
  }
  return w;
}

/** TensorInfo {name: 'node:0', dtype, tensor_shape}. */
function tensorInfoMessage({name, tfDtype, shape}) {
  const w = new Writer();
  w.string(1, name);
  w.varint(2, dtypeCode(tfDtype));
  w.message(3, shapeMessage(shape));
  return w;
}

/** One entry of a `map<string, M>` field. */
function mapEntry(w, field, key, valueWriter) {
  const entry = new Writer();
  entry.string(1, key);
  entry.message(2, valueWriter);
  w.message(field, entry);
}

function signatureDefMessage({inputs, outputs}) {
  const w = new Writer();
  for (const [key, info] of Object.entries(inputs)) mapEntry(w, 1, key, tensorInfoMessage(info));
  for (const [key, info] of Object.entries(outputs)) mapEntry(w, 2, key, tensorInfoMessage(info));
  w.string(3, PREDICT_METHOD_NAME);
  return w;
}

/** SaverDef of a V2 checkpoint, unsharded. */
function saverDefMessage({filenameTensorName, saveTensorName, restoreOpName}) {
  const w = new Writer();
  w.string(1, filenameTensorName);
  w.string(2, saveTensorName);
  w.string(3, restoreOpName);
  w.varint(7, SAVER_FORMAT_V2);
  return w;
}

/** VariableDef of a resource variable: the handle, its initializer and its read. */
function variableDefBytes({variableName, initializerName, snapshotName, initialValueName,
  trainable}) {
  const w = new Writer();
  w.string(1, variableName);
  w.string(2, initializerName);
  w.string(3, snapshotName);
  w.varint(5, 1);
  if (initialValueName) w.string(6, initialValueName);
  w.varint(7, trainable ? 1 : 0);
  return w.finish();
}

/** CollectionDef {bytes_list {value: [...]}}. */
function bytesListCollection(values) {
  const list = new Writer();
  for (const v of values) list.bytes(1, v);
  const w = new Writer();
  w.message(2, list);
  return w;
}

/**
 * The bytes of `saved_model.pb`.
 * @param {object} spec
 * @param {string[]} spec.tags  e.g. ['serve']
 * @param {string} spec.tensorflowVersion  the libtensorflow version the graph was built for
 * @param {Uint8Array} spec.graphDef  a serialized GraphDef
 * @param {object} [spec.saver]  {filenameTensorName, saveTensorName, restoreOpName}; none for
 *     a graph without variables
 * @param {object[]} spec.variables  VariableDef fields, see variableDefBytes
 * @param {object} spec.signatures  name -> {inputs, outputs}: key -> {name, tfDtype, shape}
 */
function encodeSavedModel({tags, tensorflowVersion, graphDef, saver, variables, signatures}) {
  const metaInfo = new Writer();
  for (const tag of tags) metaInfo.string(4, tag);
  metaInfo.string(5, tensorflowVersion);

  const metaGraph = new Writer();
  metaGraph.message(1, metaInfo);
  metaGraph.bytes(2, graphDef);
  if (saver != null) metaGraph.message(3, saverDefMessage(saver));
  if (variables.length > 0) {
    const defs = variables.map(variableDefBytes);
    mapEntry(metaGraph, 4, 'variables', bytesListCollection(defs));
    const trainable = defs.filter((_, i) => variables[i].trainable);
    if (trainable.length > 0) {
      mapEntry(metaGraph, 4, 'trainable_variables', bytesListCollection(trainable));
    }
  }
  for (const [key, sig] of Object.entries(signatures)) {
    mapEntry(metaGraph, 5, key, signatureDefMessage(sig));
  }

  const savedModel = new Writer();
  savedModel.varint(1, SAVED_MODEL_SCHEMA_VERSION);
  savedModel.message(2, metaGraph);
  return savedModel.finish();
}

module.exports = {encodeSavedModel, PREDICT_METHOD_NAME};
