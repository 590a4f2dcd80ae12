'use strict';
// tf.node SavedModel support: signatures read from `saved_model.pb` with a small protobuf
// reader, sessions loaded and run by the native binding (TF_LoadSessionFromSavedModel,
// TF_SessionRun) on the backend's tensor ids.

const fs = require('fs');
const path = require('path');
const tfc = require('@tensorflow/tfjs-core');
const {Reader, ProtoError, WIRE_LEN, WIRE_VARINT} = require('./proto');

const SAVED_MODEL_FILE_NAME = 'saved_model.pb';
const SAVED_MODEL_INIT_OP_KEY = '__saved_model_init_op';

/** TF DataType enum (types.proto): code -> name. */
const TF_DTYPE_NAMES = {
  1: 'DT_FLOAT', 2: 'DT_DOUBLE', 3: 'DT_INT32', 4: 'DT_UINT8', 5: 'DT_INT16', 6: 'DT_INT8',
  7: 'DT_STRING', 8: 'DT_COMPLEX64', 9: 'DT_INT64', 10: 'DT_BOOL', 11: 'DT_QINT8',
  12: 'DT_QUINT8', 13: 'DT_QINT32', 14: 'DT_BFLOAT16', 15: 'DT_QINT16', 16: 'DT_QUINT16',
  17: 'DT_UINT16', 18: 'DT_COMPLEX128', 19: 'DT_HALF', 20: 'DT_RESOURCE', 21: 'DT_VARIANT',
  22: 'DT_UINT32', 23: 'DT_UINT64',
};

/**
 * TF dtype -> [tfjs dtype of the tensors that feed or come out of it, binding dtype name].
 * As in tfjs-node, int64 and uint8 travel as int32 tensors in JS.
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

/** Binding result dtypes that tfjs lacks, and the tfjs dtype they become. */
const OUTPUT_CAST = {int64: 'int32', uint8: 'int32', int8: 'int32', int16: 'int32',
                     uint16: 'int32', uint32: 'int32', float64: 'float32', float16: 'float32',
                     bfloat16: 'float32'};

function binding() {
  return require('../backend/binding');
}

function backend() {
  const b = tfc.findBackend('tensorflow');
  if (b == null) {
    throw new Error('tf.node: the tensorflow backend is not registered');
  }
  return b;
}

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
  const tfDtype = TF_DTYPE_NAMES[raw.dtypeCode] || `DT_UNKNOWN_${raw.dtypeCode}`;
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
    throw new Error(`There is no saved_model.pb file in the directory: ${dir} (${e.code || e.message})`);
  }
  try {
    return parseSavedModel(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length));
  } catch (e) {
    if (e instanceof ProtoError) {
      throw new Error(`${file} is not a valid SavedModel proto: ${e.message}`);
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
        throw new Error(`The SavedModel does not have signature: ${signature} ` +
                        `(it has: ${Object.keys(mg.signatureDefs).join(', ') || 'none'})`);
      }
      return entry;
    }
  }
  throw new Error(`The SavedModel does not have tags: ${tags} (it has: ` +
                  `${metaGraphs.map((m) => '[' + m.tags.join(',') + ']').join(', ')})`);
}

// ------------------------------------------------------------------ running

function shapeText(shape) {
  return shape === undefined ? '<unknown rank>' :
                               '[' + shape.map((d) => (d < 0 ? '?' : d)).join(',') + ']';
}

function checkInput(t, key, info) {
  if (!(t instanceof tfc.Tensor)) {
    throw new TypeError(`SavedModel input '${key}' must be a tf.Tensor, got ${t === null ? 'null' : typeof t}`);
  }
  const mapped = DTYPE_MAP[info.tfDtype];
  if (mapped === undefined) {
    throw new Error(`SavedModel input '${key}' has dtype ${info.tfDtype}, which tfjs cannot feed`);
  }
  if (t.dtype !== mapped[0]) {
    throw new Error(`SavedModel input '${key}' must be a ${mapped[0]} tensor (${info.tfDtype}), ` +
                    `got ${t.dtype}`);
  }
  if (info.shape !== undefined) {
    const ok = info.shape.length === t.shape.length &&
        info.shape.every((d, i) => d < 0 || d === t.shape[i]);
    if (!ok) {
      throw new Error(`SavedModel input '${key}' must have shape ${shapeText(info.shape)}, ` +
                      `got [${t.shape.join(',')}]`);
    }
  }
}

/** The binding id feeding `info` from tensor `t`, and whether it is a temporary to delete. */
function feedId(b, t, info) {
  const bindingDtype = DTYPE_MAP[info.tfDtype][1];
  if (bindingDtype === t.dtype) return {id: b.idOf(t), temp: false};
  const values = t.dataSync();
  let data;
  if (bindingDtype === 'int64') {
    data = new BigInt64Array(values.length);
    for (let i = 0; i < values.length; i++) data[i] = BigInt(values[i]);
  } else {
    data = Uint8Array.from(values);
  }
  return {id: b.binding.createTensor(t.shape, bindingDtype, data), temp: true};
}

function wrapOutputs(b, outs) {
  const tensors = [];
  try {
    for (let i = 0; i < outs.length; i++) {
      let out = outs[i];
      outs[i] = null;
      const to = OUTPUT_CAST[out.dtype];
      if (to !== undefined) out = b.castRaw(out, to);
      if (!['float32', 'int32', 'bool', 'complex64', 'string'].includes(out.dtype)) {
        b.binding.deleteTensor(out.id);
        throw new Error(`SavedModel output ${i} has dtype ${out.dtype}, which tfjs cannot hold`);
      }
      const info = b.wrap(out);
      tensors.push(tfc.engine().makeTensorFromTensorInfo(info, b));
    }
  } catch (e) {
    for (const t of tensors) t.dispose();
    for (const out of outs) if (out != null) b.binding.deleteTensor(out.id);
    throw e;
  }
  return tensors;
}

let nextModelId = 0;

/** A SavedModel signature loaded into a TF session. */
class TFSavedModel {
  constructor(sessionId, signature, dir, tags) {
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
    binding().deleteSavedModel(this.sessionId);
  }

  /** [keys, tensors] of the signature inputs that `inputs` feed, in key order. */
  collectInputs(inputs) {
    if (this.disposed) throw new Error('The TFSavedModel has already been deleted!');
    const keys = Object.keys(this.signature.inputs);
    let tensors;
    if (inputs instanceof tfc.Tensor) {
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
                          'an object of named tf.Tensor');
    }
    if (tensors.length !== keys.length) {
      throw new Error(`The SavedModel signature has ${keys.length} input(s) (${keys.join()}), ` +
                      `got ${tensors.length} tensor(s)`);
    }
    keys.forEach((k, i) => checkInput(tensors[i], k, this.signature.inputs[k]));
    return [keys, tensors];
  }

  run(keys, tensors, outputNames) {
    const b = backend();
    const feeds = [];
    try {
      for (let i = 0; i < keys.length; i++) {
        feeds.push(feedId(b, tensors[i], this.signature.inputs[keys[i]]));
      }
      const outs = b.binding.runSavedModel(
          this.sessionId, feeds.map((f) => f.id),
          keys.map((k) => this.signature.inputs[k].name), outputNames);
      return wrapOutputs(b, outs);
    } finally {
      for (const f of feeds) if (f.temp) b.free(f.id);
    }
  }

  /**
   * Runs the signature. `inputs`: one tensor, an array in input-key order, or an object by
   * input key. Returns one tensor (a tensor input and one output), an array (in output-key
   * order), or an object by output key (for an object input).
   */
  predict(inputs, config) {
    const [keys, tensors] = this.collectInputs(inputs);
    const outKeys = Object.keys(this.signature.outputs);
    const result = this.run(keys, tensors, outKeys.map((k) => this.signature.outputs[k].name));
    if (inputs instanceof tfc.Tensor) return result.length === 1 ? result[0] : result;
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
   */
  execute(inputs, outputs) {
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
    const result = this.run(keys, tensors, graphNames);
    return single ? result[0] : result;
  }
}

/**
 * Loads the signature `signature` of the meta graph tagged `tags` from the SavedModel in `dir`.
 * Models of the same directory and tags share one TF session.
 */
async function loadSavedModel(dir, tags = ['serve'], signature = 'serving_default') {
  if (!Array.isArray(tags) || tags.some((t) => typeof t !== 'string')) {
    throw new TypeError('tags must be an array of strings');
  }
  if (typeof signature !== 'string') throw new TypeError('signature must be a string');
  backend();
  const metaGraphs = await getMetaGraphsFromSavedModel(dir);
  const entry = getSignatureDefEntryFromMetaGraphInfo(metaGraphs, tags, signature);
  const sessionId = binding().loadSavedModel(dir, tags);
  return new TFSavedModel(sessionId, entry, dir, tags);
}

/** Distinct SavedModel sessions loaded (models sharing a session count once). */
function getNumOfSavedModels() {
  return binding().getNumOfSavedModels();
}

module.exports = {
  getMetaGraphsFromSavedModel,
  getSignatureDefEntryFromMetaGraphInfo,
  loadSavedModel,
  getNumOfSavedModels,
  TFSavedModel,
  parseSavedModel,
};
