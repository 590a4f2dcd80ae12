'use strict';
// tf.node SavedModel support: signatures read from `saved_model.pb` with a small protobuf
// reader, sessions loaded and run by the native binding (TF_LoadSessionFromSavedModel,
// TF_SessionRun) on the backend's tensor ids.

const fs = require('fs');
const path = require('path');
const tfc = require('@tensorflow/tfjs-core');
const {Reader, ProtoError, WIRE_LEN, WIRE_VARINT} = require('./proto');
const {tensorflowBackend} = require('./backend');
const {NARROWING, RESULT_CAST, TF_DTYPE_NAMES} = require('../backend/dtypes');
const {errorWithDetail} = require('../backend/errors');
const {sessionConfigProto} = require('../configure');
const {Int64Tensor, firstBeyondInt32} = require('./int64');

const SAVED_MODEL_FILE_NAME = 'saved_model.pb';
const SAVED_MODEL_INIT_OP_KEY = '__saved_model_init_op';

/**
 * TF dtype -> [tfjs dtype of the tensors that feed or come out of it, binding dtype name].
 * As in tfjs-node, int64 and uint8 travel as int32 tensors in JS (int64 values beyond int32
 * as Int64Tensor, see int64.js).
 */
const DTYPE_MAP = {
  DT_FLOAT: ['float32', 'float32'],
  DT_INT32: ['int32', 'int32'],
  DT_INT64: ['int32', 'int64'],
  DT_UINT8: ['int32', 'uint8'],
  DT_BOOL: ['bool', 'bool'],
  DT_COMPLEX64: ['complex64', 'complex64'],
  DT_STRING: ['string', 'string'],
};

/** The tfjs dtypes an output may come back as. */
const TFJS_DTYPES = new Set(['float32', 'int32', 'bool', 'complex64', 'string']);

// ------------------------------------------------------------------ saved_model.pb

function readShape(r) {
  const dims = [];
  let unknownRank = false;
  r.each((field, wire, rr) => {
    if (field === 2 && wire === WIRE_LEN) {
      let size = -1;
      rr.sub().each((f, w, d) => {
        if (f === 1 && w === WIRE_VARINT) size = d.varint();
        else return false;
      });
      dims.push(size);
    } else if (field === 3 && wire === WIRE_VARINT) {
      unknownRank = r.varint() !== 0;
    } else {
      return false;
    }
  });
  return unknownRank ? undefined : dims;
}

function readTensorInfo(r) {
  const info = {name: '', dtypeCode: 0, shape: undefined};
  r.each((field, wire, rr) => {
    if (field === 1 && wire === WIRE_LEN) info.name = rr.string();
    else if (field === 2 && wire === WIRE_VARINT) info.dtypeCode = rr.varint();
    else if (field === 3 && wire === WIRE_LEN) info.shape = readShape(rr.sub());
    else return false;
  });
  return info;
}

/** A `map<string, M>` entry: [key, value read by readValue]. */
function readMapEntry(r, readValue) {
  let key = '';
  let value;
  r.each((field, wire, rr) => {
    if (field === 1 && wire === WIRE_LEN) key = rr.string();
    else if (field === 2 && wire === WIRE_LEN) value = readValue(rr.sub());
    else return false;
  });
  return [key, value];
}

function readSignatureDef(r) {
  const sig = {inputs: {}, outputs: {}, methodName: ''};
  r.each((field, wire, rr) => {
    if ((field === 1 || field === 2) && wire === WIRE_LEN) {
      const [key, value] = readMapEntry(rr.sub(), readTensorInfo);
      sig[field === 1 ? 'inputs' : 'outputs'][key] = value || readTensorInfo(new Reader([]));
    } else if (field === 3 && wire === WIRE_LEN) {
      sig.methodName = rr.string();
    } else {
      return false;
    }
  });
  return sig;
}

function readMetaGraph(r) {
  const mg = {tags: [], signatureDefs: {}};
  r.each((field, wire, rr) => {
    if (field === 1 && wire === WIRE_LEN) {
      rr.sub().each((f, w, m) => {
        if (f === 4 && w === WIRE_LEN) mg.tags.push(m.string());
        else return false;
      });
    } else if (field === 5 && wire === WIRE_LEN) {
      const [key, value] = readMapEntry(rr.sub(), readSignatureDef);
      mg.signatureDefs[key] = value || {inputs: {}, outputs: {}, methodName: ''};
    } else {
      return false;
    }
  });
  return mg;
}

/** Parses a serialized `SavedModel` proto into `[{tags, signatureDefs}]` (raw tensor infos). */
function parseSavedModel(bytes) {
  const metaGraphs = [];
  new Reader(bytes).each((field, wire, r) => {
    if (field === 2 && wire === WIRE_LEN) metaGraphs.push(readMetaGraph(r.sub()));
    else return false;
  });
  return metaGraphs;
}

function modelTensorInfo(raw) {
  const tfDtype = (raw.dtypeCode > 0 && TF_DTYPE_NAMES[raw.dtypeCode]) || `DT_UNKNOWN_${raw.dtypeCode}`;
  const mapped = DTYPE_MAP[tfDtype];
  const info = {
    name: raw.name,
    shape: raw.shape,
    dtype: mapped ? mapped[0] : undefined,
    tfDtype,
  };
  return info;
}

function sortedEntries(obj) {
  return Object.keys(obj).sort().map((k) => [k, obj[k]]);
}

function toMetaGraphs(parsed) {
  return parsed.map((mg) => {
    const signatureDefs = {};
    for (const [key, sig] of sortedEntries(mg.signatureDefs)) {
      if (key === SAVED_MODEL_INIT_OP_KEY) continue;
      const inputs = {};
      const outputs = {};
      for (const [k, v] of sortedEntries(sig.inputs)) inputs[k] = modelTensorInfo(v);
      for (const [k, v] of sortedEntries(sig.outputs)) outputs[k] = modelTensorInfo(v);
      signatureDefs[key] = {inputs, outputs};
    }
    return {tags: mg.tags.slice(), signatureDefs};
  });
}

async function readSavedModelProto(dir) {
  if (typeof dir !== 'string' || dir === '') {
    throw new TypeError('SavedModel path must be a non-empty string');
  }
  const file = path.join(dir, SAVED_MODEL_FILE_NAME);
  let bytes;
  try {
    bytes = await fs.promises.readFile(file);
  } catch (e) {
    throw new Error(`There is no saved_model.pb file in the directory: ${dir} (${e.code || e.message})`,
                    {cause: e});
  }
  try {
    return parseSavedModel(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length));
  } catch (e) {
    if (e instanceof ProtoError) {
      throw new Error(`${file} is not a valid SavedModel proto: ${e.message}`, {cause: e});
    }
    throw e;
  }
}

/**
 * The meta graphs of the SavedModel in `dir`: their tags and signature defs (inputs and outputs
 * with name, dtype, tfDtype and shape; -1 for unknown dims, `undefined` for unknown rank).
 */
async function getMetaGraphsFromSavedModel(dir) {
  const metaGraphs = toMetaGraphs(await readSavedModelProto(dir));
  if (metaGraphs.length === 0) {
    throw new Error(`${path.join(dir, SAVED_MODEL_FILE_NAME)} holds no meta graph`);
  }
  return metaGraphs;
}

function sameElements(a, b) {
  if (a.length !== b.length) return false;
  const x = a.slice().sort();
  const y = b.slice().sort();
  return x.every((v, i) => v === y[i]);
}

function getSignatureDefEntryFromMetaGraphInfo(metaGraphs, tags, signature) {
  for (const mg of metaGraphs) {
    if (sameElements(tags, mg.tags)) {
      const entry = mg.signatureDefs[signature];
      if (entry == null) {
        throw errorWithDetail(`The SavedModel does not have signature: ${signature}`,
                              `its signatures: ${Object.keys(mg.signatureDefs).join(', ') || 'none'}`);
      }
      return entry;
    }
  }
  throw errorWithDetail(`The SavedModel does not have tags: ${tags}`,
                        `its meta graphs' tags: ${metaGraphs.map((m) => '[' + m.tags.join(',') + ']').join(', ')}`);
}

// ------------------------------------------------------------------ running

/**
 * Checks what tfjs must know to feed signature input `key`: a tensor of the dtype that feeds
 * its TF dtype (an Int64Tensor for int64 too). Shapes are left to TensorFlow, which accepts
 * any shape its placeholders and kernels accept (signature shapes are stricter than that).
 */
function checkInput(t, key, info) {
  const mapped = DTYPE_MAP[info.tfDtype];
  if (t instanceof Int64Tensor) {
    if (info.tfDtype !== 'DT_INT64') {
      throw new Error(`SavedModel input '${key}' is ${info.tfDtype}, got an Int64Tensor`);
    }
    return;
  }
  if (!(t instanceof tfc.Tensor)) {
    throw new TypeError(`SavedModel input '${key}' must be a tf.Tensor, got ${t === null ? 'null' : typeof t}`);
  }
  if (mapped === undefined) {
    throw new Error(`SavedModel input '${key}' has dtype ${info.tfDtype}, which tfjs cannot feed`);
  }
  if (t.dtype !== mapped[0]) {
    throw new Error(`SavedModel input '${key}' must be a ${mapped[0]} tensor (${info.tfDtype}), ` +
                    `got ${t.dtype}`);
  }
}

/** The native id feeding `info` from `t`, and whether it is a temporary to free. */
function feedId(b, t, key, info) {
  if (t instanceof Int64Tensor) return {id: b.createRaw(t.shape, 'int64', t.values), temp: true};
  const bindingDtype = DTYPE_MAP[info.tfDtype][1];
  if (bindingDtype === t.dtype) return {id: b.idOf(t), temp: false};
  const values = t.dataSync();
  let data;
  if (bindingDtype === 'int64') {
    data = new BigInt64Array(values.length);
    for (let i = 0; i < values.length; i++) data[i] = BigInt(values[i]);
  } else {
    data = new Uint8Array(values.length);
    for (let i = 0; i < values.length; i++) {
      if (values[i] < 0 || values[i] > 255) {
        throw new Error(`SavedModel input '${key}' is DT_UINT8, but holds ${values[i]} ` +
                        `at index ${i}, outside [0, 255]`);
      }
      data[i] = values[i];
    }
  }
  return {id: b.createRaw(t.shape, bindingDtype, data), temp: true};
}

/**
 * Int64 output `out` (freed here) as an Int64Tensor (`int64: 'bigint'`), or as an int32 tensor
 * when every value fits; a value beyond int32 is an error, never a truncated number.
 */
function readInt64Output(b, out, name, int64) {
  let values;
  try {
    values = b.readRaw(out.id).slice();
  } finally {
    b.free(out);
  }
  if (int64 === 'bigint') return new Int64Tensor(values, out.shape);
  const beyond = firstBeyondInt32(values);
  if (beyond !== undefined) {
    throw new Error(`SavedModel output '${name}' is int64 and holds ${beyond}, which int32 ` +
                    "cannot hold: pass {int64: 'bigint'} to predict() or execute() to read " +
                    'int64 outputs exactly, as tf.node.Int64Tensor (BigInt64Array values)');
  }
  return tfc.engine().makeTensor(Int32Array.from(values, Number), out.shape, 'int32', b);
}

/** The raw outputs `outs` (named `names`) as tfjs tensors (or Int64Tensors); frees them all. */
function wrapOutputs(b, outs, names, int64) {
  const tensors = [];
  try {
    for (let i = 0; i < outs.length; i++) {
      let out = outs[i];
      outs[i] = null;
      if (out.dtype === 'int64') {
        tensors.push(readInt64Output(b, out, names[i], int64));
        continue;
      }
      const to = NARROWING.has(out.dtype) ? undefined : RESULT_CAST[out.dtype];
      if (to !== undefined) out = b.castRaw(out, to);
      if (!TFJS_DTYPES.has(out.dtype)) {
        b.free(out);
        throw new Error(`SavedModel output '${names[i]}' has dtype ${out.dtype}, which tfjs ` +
                        'cannot hold');
      }
      tensors.push(tfc.engine().makeTensorFromTensorInfo(b.wrap(out), b));
    }
  } catch (e) {
    for (const t of tensors) t.dispose();
    for (const out of outs) if (out != null) b.free(out);
    throw e;
  }
  return tensors;
}

/** The `int64` option of predict() / execute(): 'int32' (the default) or 'bigint'. */
function int64Option(config) {
  const int64 = config != null && config.int64 !== undefined ? config.int64 : 'int32';
  if (int64 !== 'int32' && int64 !== 'bigint') {
    throw new Error(`SavedModel: the int64 option must be 'int32' or 'bigint', got ${int64}`);
  }
  return int64;
}

function isSingleInput(inputs) {
  return inputs instanceof tfc.Tensor || inputs instanceof Int64Tensor;
}

let nextModelId = 0;

/** A SavedModel signature loaded into a TF session. */
class TFSavedModel {
  constructor(backend, sessionId, signature, dir, tags) {
    this.backend = backend;
    this.sessionId = sessionId;
    this.signature = signature;
    this.path = dir;
    this.tags = tags.slice();
    this.id = nextModelId++;
    this.disposed = false;
  }

  static infos(map) {
    return Object.keys(map).map((key) => {
      const info = map[key];
      return {name: info.name.replace(/:0$/, ''), shape: info.shape && info.shape.slice(),
              dtype: info.dtype, tfDtype: info.tfDtype};
    });
  }

  /** The signature's inputs, in input-key order. */
  get inputs() {
    return TFSavedModel.infos(this.signature.inputs);
  }

  /** The signature's outputs, in output-key order. */
  get outputs() {
    return TFSavedModel.infos(this.signature.outputs);
  }

  /** Output key -> graph tensor name. */
  get outputNodeNames() {
    const names = {};
    for (const key of Object.keys(this.signature.outputs)) {
      names[key] = this.signature.outputs[key].name;
    }
    return names;
  }

  /** Frees this model; the session closes when no other model shares it. */
  dispose() {
    if (this.disposed) throw new Error('This SavedModel has already been deleted.');
    this.disposed = true;
    this.backend.deleteSavedModel(this.sessionId);
  }

  /** [keys, tensors] of the signature inputs that `inputs` feed, in key order. */
  collectInputs(inputs) {
    if (this.disposed) throw new Error('The TFSavedModel has already been deleted!');
    const keys = Object.keys(this.signature.inputs);
    let tensors;
    if (isSingleInput(inputs)) {
      tensors = [inputs];
    } else if (Array.isArray(inputs)) {
      tensors = inputs;
    } else if (inputs != null && typeof inputs === 'object') {
      const given = Object.keys(inputs);
      if (!sameElements(keys, given)) {
        throw new Error(`The model signatureDef input names are ${keys.join()}, however the ` +
                        `provided input names are ${given.join()}.`);
      }
      tensors = keys.map((k) => inputs[k]);
    } else {
      throw new TypeError('SavedModel inputs must be a tf.Tensor, an array of tf.Tensor or ' +
                          'an object of named tf.Tensor (or tf.node.Int64Tensor)');
    }
    if (tensors.length !== keys.length) {
      throw errorWithDetail(`Length of input op names (${keys.length}) does not match the ` +
                            `length of input tensors (${tensors.length}).`,
                            `the signature's inputs: ${keys.join(', ')}`);
    }
    keys.forEach((k, i) => checkInput(tensors[i], k, this.signature.inputs[k]));
    return [keys, tensors];
  }

  /** Runs the session on `tensors` (for input `keys`); `names` label the outputs in errors. */
  run(keys, tensors, outputNames, names, config) {
    const b = tensorflowBackend('TFSavedModel');
    const outs = this.withFeeds(b, keys, tensors, (ids, inputNames) =>
      b.runSavedModel(this.sessionId, ids, inputNames, outputNames));
    return wrapOutputs(b, outs, names, int64Option(config));
  }

  /** `run` on the binding's executor thread: the JS thread is free until the outputs exist. */
  async runInBackground(keys, tensors, outputNames, names, config) {
    const int64 = int64Option(config);
    const b = tensorflowBackend('TFSavedModel');
    const outs = this.withFeeds(b, keys, tensors, (ids, inputNames) =>
      b.runSavedModelAsync(this.sessionId, ids, inputNames, outputNames));
    return wrapOutputs(b, await outs, names, int64);
  }

  /** `start(ids, inputNames)` on native ids of `tensors`; ids made for the call freed after. */
  withFeeds(b, keys, tensors, start) {
    const feeds = [];
    try {
      for (let i = 0; i < keys.length; i++) {
        feeds.push(feedId(b, tensors[i], keys[i], this.signature.inputs[keys[i]]));
      }
      return start(feeds.map((f) => f.id), keys.map((k) => this.signature.inputs[k].name));
    } finally {
      for (const f of feeds) if (f.temp) b.free(f.id);
    }
  }

  /**
   * Runs the signature. `inputs`: one tensor, an array in input-key order, or an object by
   * input key. Returns one tensor (a tensor input and one output), an array (in output-key
   * order), or an object by output key (for an object input). `config.int64: 'bigint'`
   * returns int64 outputs as Int64Tensor.
   */
  predict(inputs, config) {
    const [keys, tensors] = this.collectInputs(inputs);
    const outKeys = Object.keys(this.signature.outputs);
    const result = this.run(keys, tensors, outKeys.map((k) => this.signature.outputs[k].name),
                            outKeys, config);
    return this.shapeResult(inputs, outKeys, result);
  }

  /**
   * `predict` without holding the JS thread: the session runs on the binding's executor thread
   * (inputs still being computed there are waited for there), and the promise resolves with
   * the same result. TF's errors of the run reject it.
   */
  async predictAsync(inputs, config) {
    const [keys, tensors] = this.collectInputs(inputs);
    const outKeys = Object.keys(this.signature.outputs);
    const result = await this.runInBackground(
        keys, tensors, outKeys.map((k) => this.signature.outputs[k].name), outKeys, config);
    return this.shapeResult(inputs, outKeys, result);
  }

  /** predict()'s result for `inputs`: one tensor, an array, or an object by output key. */
  shapeResult(inputs, outKeys, result) {
    if (isSingleInput(inputs)) return result.length === 1 ? result[0] : result;
    if (Array.isArray(inputs)) return result;
    const map = {};
    outKeys.forEach((k, i) => {
      map[k] = result[i];
    });
    return map;
  }

  /**
   * Runs the graph and returns the tensors named by `outputs`: signature output keys or graph
   * tensor names (`op:index`). One name gives one tensor; an array gives an array.
   * `config` as for predict().
   */
  execute(inputs, outputs, config) {
    const single = typeof outputs === 'string';
    const names = single ? [outputs] : outputs;
    if (!Array.isArray(names) || names.length === 0 ||
        names.some((n) => typeof n !== 'string' || n === '')) {
      throw new TypeError('execute(): outputs must be a name or a non-empty array of names');
    }
    const [keys, tensors] = this.collectInputs(inputs);
    const graphNames = names.map((n) => {
      const info = this.signature.outputs[n];
      return info !== undefined ? info.name : n;
    });
    const result = this.run(keys, tensors, graphNames, names, config);
    return single ? result[0] : result;
  }
}

/**
 * Loads the signature `signature` of the meta graph tagged `tags` from the SavedModel in `dir`.
 * Models of the same directory and tags share one TF session.
 */
async function loadSavedModel(dir, tags = ['serve'], signature = 'serving_default',
  options = {}) {
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) {
    throw new TypeError('tags must be an array of strings');
  }
  if (typeof signature !== 'string') throw new TypeError('signature must be a string');
  return loadSignature(dir, tags, signature, sessionConfigProto(options, 'loadSavedModel'), false);
}

/**
 * `loadSavedModel` in a session of its own, which no other load shares: what the files hold
 * now, though a session of an earlier SavedModel in `dir` is still open (an export's check).
 */
function loadSavedModelApart(dir, tags, signature) {
  return loadSignature(dir, tags, signature, undefined, true);
}

async function loadSignature(dir, tags, signature, sessionConfig, ownSession) {
  const b = tensorflowBackend('loadSavedModel');
  const metaGraphs = await getMetaGraphsFromSavedModel(dir);
  const entry = getSignatureDefEntryFromMetaGraphInfo(metaGraphs, tags, signature);
  const sessionId = b.loadSavedModel(dir, tags, sessionConfig, ownSession);
  return new TFSavedModel(b, sessionId, entry, dir, tags);
}

/** Distinct SavedModel sessions loaded (models sharing a session count once). */
function getNumOfSavedModels() {
  return tensorflowBackend('getNumOfSavedModels').getNumOfSavedModels();
}

module.exports = {
  getMetaGraphsFromSavedModel,
  getSignatureDefEntryFromMetaGraphInfo,
  loadSavedModel,
  loadSavedModelApart,
  getNumOfSavedModels,
  TFSavedModel,
  parseSavedModel,
};
