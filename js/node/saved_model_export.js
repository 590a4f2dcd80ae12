'use strict';
// `tf.node.saveSavedModel` (issue 38; `savedmodel://` URLs come here from io.js): a LayersModel
// or GraphModel as a TF1-style SavedModel that TensorFlow itself loads (`tf.saved_model.load`,
// Keras's TFSMLayer, TF Serving, `saved_model_cli`).
//
// The graph is the model's predict as this package runs it: the call is recorded
// (js/graphs/recording.js) with batch sizes `BATCH_SIZES` (every other unknown dim at
// `OTHER_SIZES`), kernels taking portable ops (`portableOps`: TF's public ops, none chosen by
// size). Where the two recordings ran the same ops on the same tensors, the graph serves any
// size of those dims. What JS worked out from a size differs between them, and is rewritten to
// hold for any size, or refused naming the layer (`merge`):
//   - a shape vector (a flatten's `[batch, n]`, a batch norm's re-view) whose one entry that
//     differs is the batch size times one factor, taken only by Reshape: that entry becomes -1;
//   - a shape JS read (tfjs-converter's Shape op) that is an earlier op's output's: a `Shape`
//     node of it;
//   - a tensor of one value shaped as an input (an RNN's zero state, made from its input's
//     shape): `ZerosLike` of that input, plus the value.
// The graph (src/graphs/export.rs) holds the inputs as placeholders, the variables the call
// reads as resource variables, and every other tensor as a constant; the variables' values go
// to `variables/` through TF's own SaveV2 (checkpoint.js). Before it returns, the export loads
// what it wrote with TF and checks its values against the model's at a third batch size, so a
// rewrite that does not hold is an error, never a silently wrong SavedModel.

const fs = require('fs');
const path = require('path');
const tfc = require('@tensorflow/tfjs-core');
const {LayersModel} = require('@tensorflow/tfjs-layers');
const {GraphModel} = require('@tensorflow/tfjs-converter');
const {Recording, sameRef} = require('../graphs/recording');
const {runRecorded} = require('../graphs/call_graphs');
const {typeAttr, sameShape} = require('../backend/tensorflow_backend');
const {tensorflowBackend} = require('./backend');
const {writeCheckpoint} = require('./checkpoint');
const {encodeSavedModel} = require('./saved_model_writer');
const {loadSavedModelApart} = require('./saved_model');

/** The batch sizes of the two recorded calls, and of the check after writing. */
const BATCH_SIZES = [2, 3];
const CHECK_BATCH_SIZE = 5;
/** Sizes of other unknown dims in the two recordings, and in the check. */
const OTHER_SIZES = [8, 11];
const CHECK_OTHER_SIZE = 13;
/** How far the loaded SavedModel's values may be from the model's (float rounding). */
const CHECK_TOLERANCE = 1e-4;
const TFJS_TO_TF_DTYPES = {float32: 'DT_FLOAT', int32: 'DT_INT32', bool: 'DT_BOOL'};
const SAVED_MODEL_FILE = 'saved_model.pb';
const VARIABLES_DIR = 'variables';
const CHECKPOINT_PREFIX = 'variables';

/**
 * Saves `model` (a tf.LayersModel, a tf.GraphModel, or a function of tensors such as a
 * `tf.node.function`, whose arguments `inputs` declares) as a SavedModel in `dir` (made if
 * absent). `signatures`: signature key -> `{outputs}` (output names; default all), default
 * `{serving_default: {}}`; `tags`: the MetaGraph's tags, default `['serve']`.
 * Returns tfjs's SaveResult.
 */
async function saveSavedModel(model, dir, {signatures = {serving_default: {}}, tags = ['serve'],
  inputs} = {}) {
  const name = 'tf.node.saveSavedModel';
  const spec = modelSpec(model, name, inputs);
  if (typeof dir !== 'string' || dir === '') {
    throw new TypeError(`${name}: the directory must be a non-empty string`);
  }
  checkTags(tags, name);
  const wanted = signatureOutputs(signatures, spec.outputs.map((o) => o.name), name);
  const backend = tensorflowBackend(name);

  const recorded = [];
  const madeConstants = [];
  try {
    // A model's first call may run ops its later calls do not (tfjs-converter re-views weights
    // once, kernels upload constants once): recorded too, and set aside.
    record(backend, spec, BATCH_SIZES[0], OTHER_SIZES[0]).recording.release();
    BATCH_SIZES.forEach((batch, k) => recorded.push(record(backend, spec, batch, OTHER_SIZES[k])));
    const call = merge(backend, spec, recorded, madeConstants);
    const exported = exportGraph(backend, spec, call);
    const savedModel = encodeSavedModel({
      tags,
      tensorflowVersion: backend.binding.tfVersion(),
      graphDef: exported.graphDef,
      saver: exported.saver,
      variables: exported.variables.map((v, k) => ({...v, trainable: call.variables[k].trainable})),
      signatures: signatureDefs(spec, call, wanted),
    });
    await writeSavedModel(dir, savedModel, call.variables, async () => {
      const [firstKey, firstOutputs] = Object.entries(wanted)[0];
      await checkLoaded(spec, dir, tags, firstKey, firstOutputs, name);
    });
    return {modelArtifactsInfo: {dateSaved: new Date(), modelTopologyType: 'SavedModel',
      modelTopologyBytes: savedModel.length, weightDataBytes: weightBytes(call.variables)}};
  } finally {
    for (const r of recorded) r.recording.release();
    for (const id of madeConstants) backend.free(id);
  }
}

/** The signature defs, key -> `{inputs, outputs}`, of the exported `call`. */
function signatureDefs(spec, call, wanted) {
  const defs = {};
  for (const [key, outputNames] of Object.entries(wanted)) {
    defs[key] = {
      inputs: Object.fromEntries(spec.inputs.map((input) => [input.key, {
        name: input.node + ':0', tfDtype: TFJS_TO_TF_DTYPES[input.dtype], shape: input.dims}])),
      outputs: Object.fromEntries(outputNames.map((n) => {
        const j = spec.outputs.findIndex((o) => o.name === n);
        const {dtype, dims} = call.outputSpecs[j];
        return [spec.outputs[j].key, {name: spec.outputs[j].node + ':0',
          tfDtype: TFJS_TO_TF_DTYPES[dtype], shape: dims}];
      })),
    };
  }
  return defs;
}

/**
 * Writes `saved_model.pb` and `variables/` into `dir`, then runs `check`; what was written is
 * removed again when the check (or a write) fails.
 */
async function writeSavedModel(dir, savedModel, variables, check) {
  const variablesDir = path.join(dir, VARIABLES_DIR);
  await fs.promises.mkdir(variablesDir, {recursive: true});
  try {
    await fs.promises.writeFile(path.join(dir, SAVED_MODEL_FILE), savedModel);
    if (variables.length > 0) {
      writeCheckpoint(path.join(variablesDir, CHECKPOINT_PREFIX),
                      Object.fromEntries(variables.map((v) => [v.name, v.tensor])));
    }
    await check();
  } catch (e) {
    await fs.promises.rm(path.join(dir, SAVED_MODEL_FILE), {force: true});
    await fs.promises.rm(variablesDir, {recursive: true, force: true});
    throw e;
  }
}

/**
 * What an export needs of `model`: its inputs (`{key, node, dtype, dims}`, -1 for a dim of any
 * size) and outputs (`{name, key, node}`), how to run it on a list of inputs (`run`), its
 * trainable variables, the weights that become variables besides tfjs's (`weights`), and its
 * layers.
 */
function modelSpec(model, name, inputs) {
  if (typeof model === 'function') return functionSpec(model, name, inputs);
  if (model instanceof LayersModel) {
    // The layers' names (a Sequential model leaves inputNames and outputNames empty).
    return {
      ...inputsAndOutputs(model, model.inputs.map((t) => t.sourceLayer.name),
                          model.outputs.map((t) => t.sourceLayer.name), name),
      run: (xs) => [].concat(model.predictOnBatch(xs.length === 1 ? xs[0] : xs)),
      trainable: new Set(model.trainableWeights.map((w) => w.val)),
      weights: new Map(),
      layers: layersOf(model),
      label: 'the model',
    };
  }
  if (model instanceof GraphModel) {
    const inputNames = model.inputs.map((i) => i.name);
    const outputNames = model.outputs.map((o) => o.name);
    return {
      ...inputsAndOutputs(model, inputNames, outputNames, name),
      run: (xs) => [].concat(model.execute(
          Object.fromEntries(inputNames.map((n, i) => [n, xs[i]])), outputNames)),
      trainable: new Set(),
      weights: floatWeights(model),
      layers: [],
      label: 'the model',
    };
  }
  throw new TypeError(`${name}: the model must be a tf.LayersModel, a tf.GraphModel or a ` +
                      'function of tensors (tf.node.function)');
}

/**
 * modelSpec of a function of tensors (a `tf.node.function`, or any function of tensors that
 * returns a tensor, an array of them or an object of them): its inputs as `inputs` declares
 * them (`[{name, shape, dtype}]`, null for a dim of any size), its outputs named by the keys
 * of an object it returns, else `output_<k>`; the variables it reads train as they do in tfjs.
 */
function functionSpec(fn, name, inputs) {
  if (!Array.isArray(inputs) || inputs.length === 0 || !inputs.every((i) => i !== null &&
      typeof i === 'object' && Array.isArray(i.shape))) {
    throw new TypeError(`${name}: a function needs options.inputs, [{name, shape, dtype}] with a ` +
                        'shape (null for a dim of any size) per argument');
  }
  const declared = inputs.map((i) => ({shape: i.shape, dtype: i.dtype || 'float32'}));
  const inputNames = inputs.map((i, k) => i.name === undefined ? `input_${k}` : String(i.name));
  const examples = exampleInputs({inputs: declared.map(({shape, dtype}) =>
    ({dtype, dims: shape.map((d) => d === null ? -1 : d)}))}, BATCH_SIZES[0], OTHER_SIZES[0]);
  let outputNames;
  try {
    const result = fn(...examples);
    const tensors = result instanceof tfc.Tensor ? [result] :
        Array.isArray(result) ? result : Object.values(result || {});
    outputNames = result instanceof tfc.Tensor || Array.isArray(result) ?
        tensors.map((_, k) => `output_${k}`) : Object.keys(result);
    if (tensors.length === 0 || !tensors.every((t) => t instanceof tfc.Tensor)) {
      throw new TypeError(`${name}: the function must return a tensor, or an array or object of ` +
                          'tensors');
    }
    tfc.dispose(tensors);
  } finally {
    tfc.dispose(examples);
  }
  const keys = uniqueKeys(inputNames.concat(outputNames));
  const asList = (result) => result instanceof tfc.Tensor ? [result] :
      Array.isArray(result) ? result : outputNames.map((n) => result[n]);
  return {
    inputs: declared.map(({shape, dtype}, i) => inputSpec(keys[i], dtype, shape, name)),
    outputs: outputNames.map((n, j) => outputSpec(n, keys[inputNames.length + j])),
    run: (xs) => asList(fn(...xs)),
    trainable: new Set(Object.values(tfc.engine().registeredVariables).filter((v) => v.trainable)),
    weights: new Map(),
    layers: [],
    label: 'the function',
  };
}

/** `{inputs, outputs}` of modelSpec, for inputs and outputs of these names. */
function inputsAndOutputs(model, inputNames, outputNames, name) {
  const keys = uniqueKeys(inputNames.concat(outputNames));
  return {
    inputs: model.inputs.map((t, i) => inputSpec(keys[i], t.dtype, t.shape, name)),
    outputs: outputNames.map((n, j) => outputSpec(n, keys[inputNames.length + j])),
  };
}

/**
 * A GraphModel's float weights by native id, `{name, tensor}`: variables of the SavedModel,
 * as a LayersModel's are. Integer weights (shapes, axes) stay constants, which TF's shape
 * inference reads.
 */
function floatWeights(model) {
  const backend = tensorflowBackend('tf.node.saveSavedModel');
  const weights = new Map();
  for (const [name, tensors] of Object.entries(model.weights)) {
    tensors.forEach((tensor, k) => {
      if (tensor.dtype !== 'float32') return;
      weights.set(backend.idOf(tensor), {name: tensors.length > 1 ? `${name}_${k}` : name, tensor});
    });
  }
  return weights;
}

function inputSpec(key, dtype, shape, name) {
  if (TFJS_TO_TF_DTYPES[dtype] === undefined) {
    throw new Error(`${name}: input '${key}' is of dtype ${dtype}; inputs of float32, int32 or ` +
                    'bool can be exported');
  }
  if (!Array.isArray(shape)) {
    throw new Error(`${name}: input '${key}' has no known rank; a SavedModel's inputs need one`);
  }
  return {key, node: `serving_default_${key}`, dtype,
    dims: shape.map((d) => d === null || d < 0 ? -1 : d)};
}

/** An output's names; its dtype and dims come from the recorded calls (`merge`). */
function outputSpec(name, key) {
  return {name, key, node: `outputs/${key}`};
}

/** Names as TF node names and signature keys allow ([A-Za-z0-9_]), made unique. */
function uniqueKeys(names) {
  const seen = new Set();
  return names.map((n) => {
    const base = String(n).replace(/:0$/, '').replace(/[^A-Za-z0-9_]/g, '_') || 'tensor';
    let key = base;
    for (let k = 1; seen.has(key); k++) key = `${base}_${k}`;
    seen.add(key);
    return key;
  });
}

function checkTags(tags, name) {
  if (!Array.isArray(tags) || tags.length === 0 ||
      !tags.every((t) => typeof t === 'string' && t !== '')) {
    throw new TypeError(`${name}: tags must be a non-empty array of non-empty strings`);
  }
}

/** Signature key -> the output names it returns, checked against the model's outputs. */
function signatureOutputs(signatures, outputNames, name) {
  if (signatures === null || typeof signatures !== 'object' || Object.keys(signatures).length === 0) {
    throw new TypeError(`${name}: signatures must map at least one signature key to {outputs}`);
  }
  const wanted = {};
  for (const [key, sig] of Object.entries(signatures)) {
    const outputs = sig && sig.outputs !== undefined ? sig.outputs : outputNames;
    if (!Array.isArray(outputs) || outputs.length === 0) {
      throw new TypeError(`${name}: signature '${key}': outputs must be a non-empty array of names`);
    }
    for (const o of outputs) {
      if (!outputNames.includes(o)) {
        throw new Error(`${name}: signature '${key}': the model has no output '${o}' ` +
                        `(its outputs: ${outputNames.join(', ')})`);
      }
    }
    wanted[key] = outputs;
  }
  return wanted;
}

/** A LayersModel's layers, nested models' layers included. */
function layersOf(model) {
  const layers = new Set();
  const walk = (layer) => {
    if (layers.has(layer)) return;  // a layer used twice is wrapped once
    layers.add(layer);
    if (Array.isArray(layer.layers)) layer.layers.forEach(walk);
  };
  model.layers.forEach(walk);
  return [...layers];
}

/** `dims` with the batch dim, where unknown, of `batch` and other unknown dims of `other`. */
function sized(dims, batch, other) {
  return dims.map((d, i) => d >= 0 ? d : i === 0 ? batch : other);
}

/** Example inputs of `batch` rows, other unknown dims of `other`: zeros, valid for any input. */
function exampleInputs(spec, batch, other) {
  return spec.inputs.map(({dtype, dims}) => tfc.zeros(sized(dims, batch, other), dtype));
}

/**
 * The model's call on inputs of `batch` rows, recorded with TF's own ops: `{call, recording,
 * layerOf}` (`layerOf(op)`: the innermost layer that ran op index `op`). Throws, naming the
 * layer, where the call cannot be a graph.
 */
function record(backend, spec, batch, other) {
  const inputs = exampleInputs(spec, batch, other);
  const recording = new Recording(backend, inputs);
  recording.portable = true;
  const ranges = [];
  let failedIn = null;
  const restore = spec.layers.map((layer) => {
    const own = Object.prototype.hasOwnProperty.call(layer, 'call');
    const call = layer.call;
    layer.call = function(...args) {
      const start = recording.ops.length;
      try {
        return call.apply(this, args);
      } finally {
        ranges.push({layer: layer.name, start, end: recording.ops.length});
        if (recording.failure !== null && failedIn === null) failedIn = layer.name;
      }
    };
    return () => own ? (layer.call = call) : delete layer.call;
  });
  let outcome;
  try {
    outcome = runRecorded(backend, recording, () => spec.run(inputs));
  } catch (e) {
    throw new Error(`tf.node.saveSavedModel: ${spec.label} failed on inputs of ` +
                    `${batch} rows: ${e.message}`, {cause: e});
  } finally {
    restore.forEach((undo) => undo());
    tfc.dispose(inputs);
  }
  tfc.dispose(outcome.result);
  if (outcome.call === null) {
    recording.release();
    const where = failedIn !== null ? `layer '${failedIn}'` : spec.label;
    throw new Error(`tf.node.saveSavedModel: ${where} cannot be exported: its call ` +
                    `${recording.failure}`);
  }
  const layerOf = (op) => {
    let best = null;
    for (const r of ranges) {
      if (op >= r.start && op < r.end && (best === null || r.end - r.start < best.end - best.start)) {
        best = r;
      }
    }
    return best !== null ? `layer '${best.layer}'` : spec.label;
  };
  return {call: outcome.call, recording, layerOf};
}

/**
 * The two recordings as one call that holds for any size of the unknown dims (see the header),
 * as exportCall takes it: `{ops, outputs, outputSpecs, variables, constants}`, refs `{feed}`
 * counting the inputs, then the variables, then the constants, or `{node, output}`. Constants
 * it makes go on `madeConstants`, for the caller to free.
 */
function merge(backend, spec, [a, b], madeConstants) {
  const x = a.call;
  const y = b.call;
  const differsAt = firstDifference(x.ops, y.ops);
  if (differsAt >= 0 || x.key !== y.key) {
    const where = differsAt < x.ops.length ? a.layerOf(differsAt) : b.layerOf(differsAt);
    throw new Error(`tf.node.saveSavedModel: ${where} cannot be exported with dims of any ` +
                    'size: it runs other ops for inputs of another size');
  }
  const firstUse = new Map();
  x.ops.forEach(({inputs}, n) => inputs.forEach((ref) => {
    if (ref.outside !== undefined && !firstUse.has(ref.outside)) firstUse.set(ref.outside, n);
  }));
  // One `{name, tensor, trainable}` per variable of the SavedModel.
  const variables = new Map();
  const variable = (key, name, tensor, trainable) => {
    if (!variables.has(key)) variables.set(key, {name, tensor, trainable});
    return variables.get(key);
  };
  const made = (dtype, shape, values) => {
    const id = backend.createConstant(dtype, shape, values);
    madeConstants.push(id);
    return id;
  };
  // Each outside tensor as `{input}`, `{variable}`, `{constant: id}`, or ops to build before
  // its first use (`{build}`: `[{op, inputs}]`, each input `{input}`, `{constant: id}`, a
  // recorded op's output `{node, output}`, or `{built: k}`, the k-th op of the same list).
  const sources = x.outside.map((o, k) => {
    const p = y.outside[k];
    const n = firstUse.has(k) ? firstUse.get(k) : 0;
    if (o.input !== undefined && o.input === p.input) return {input: o.input};
    if (o.variable !== undefined && o.variable === p.variable) {
      return {variable: variable(o.variable, o.variable.name, o.variable,
                                 spec.trainable.has(o.variable))};
    }
    const weight = spec.weights.get(o.fixed);
    if (weight !== undefined && o.fixed === p.fixed) {
      return {variable: variable(o.fixed, weight.name, weight.tensor, false)};
    }
    if (o.fixed === undefined || p.fixed === undefined) {
      throw new Error(`tf.node.saveSavedModel: ${a.layerOf(n)} reads other tensors for inputs ` +
                      'of another size');
    }
    const u = valuesOf(backend, o);
    const v = valuesOf(backend, p);
    if (o.fixed === p.fixed || sameValues(u, v)) return {constant: o.fixed};
    const uses = x.ops.filter(({inputs}) => inputs.some((r) => r.outside === k));
    const names = backend.ops.opNames;
    const shape = batchFreeShape(u, v);
    if (shape !== null && uses.every(({op, inputs}) => names[op] === 'Reshape' &&
                                         inputs[0].outside !== k)) {
      return {constant: made('int32', [shape.length], shape)};
    }
    const build = shapeOfRecorded(backend, x, y, n, u, v) ||
        filledLikeInput(backend, spec, o.written, p.written, made);
    if (build === null) {
      throw new Error(`tf.node.saveSavedModel: ${a.layerOf(n)} cannot be exported with dims ` +
                      'of any size: it uses a tensor that JS worked out from an input\'s size');
    }
    return {build};
  });
  const used = [...new Set(sources.filter((s) => s.variable).map((s) => s.variable))];
  const constants = [...new Set(sources.flatMap((s) => s.constant !== undefined ? [s.constant] :
      s.build ? s.build.flatMap((op) => op.inputs.filter((r) => r.constant !== undefined)
          .map((r) => r.constant)) : []))];
  // Feeds: the inputs, then the variables, then the constants.
  const inputCount = spec.inputs.length;
  const feedOf = (s) => {
    if (s.input !== undefined) return {feed: s.input};
    if (s.variable !== undefined) return {feed: inputCount + used.indexOf(s.variable)};
    return {feed: inputCount + used.length + constants.indexOf(s.constant)};
  };
  const ops = [];
  const nodeOf = new Array(x.ops.length);
  const builtAt = new Map();
  const recordedRef = (ref) => ref.outside === undefined ?
      {node: nodeOf[ref.node], output: ref.output} :
      builtAt.has(ref.outside) ? {node: builtAt.get(ref.outside), output: 0} :
          feedOf(sources[ref.outside]);
  x.ops.forEach(({op, inputs}, n) => {
    for (const ref of inputs) {
      const k = ref.outside;
      if (k === undefined || sources[k].build === undefined || builtAt.has(k)) continue;
      const first = ops.length;
      for (const step of sources[k].build) {
        ops.push({op: step.op, inputs: step.inputs.map((r) =>
          r.built !== undefined ? {node: first + r.built, output: 0} :
              r.node !== undefined ? recordedRef(r) : feedOf(r))});
      }
      builtAt.set(k, ops.length - 1);
    }
    nodeOf[n] = ops.length;
    ops.push({op, inputs: inputs.map(recordedRef)});
  });
  const keys = uniqueKeys(used.map((v) => v.name));
  return {
    ops,
    outputs: x.outputs.map((o) => recordedRef(o.ref)),
    outputSpecs: x.outputs.map((o, j) => ({dtype: o.dtype,
      dims: o.shape.map((d, i) => d === y.outputs[j].shape[i] ? d : -1)})),
    variables: used.map((v, k) => ({...v, name: variableName(v.name, keys[k])})),
    constants,
  };
}

/** The index of the first op where two recordings differ (op or inputs), else -1. */
function firstDifference(xs, ys) {
  const n = Math.max(xs.length, ys.length);
  for (let i = 0; i < n; i++) {
    const p = xs[i];
    const q = ys[i];
    if (p === undefined || q === undefined || p.op !== q.op || p.inputs.length !== q.inputs.length ||
        p.inputs.some((r, j) => !sameRef(r, q.inputs[j]))) {
      return i;
    }
  }
  return -1;
}

/**
 * A variable's name in the graph and checkpoint: tfjs's own where TF allows it (layer scopes
 * with '/'), else the unique key made from it.
 */
function variableName(name, key) {
  return /^[A-Za-z0-9.][A-Za-z0-9_.\-/]*$/.test(name) ? name : key;
}

/** The values of a recording's outside tensor: as written from JS, or read from TF. */
function valuesOf(backend, o) {
  return o.written !== undefined ? o.written.values : backend.binding.tensorDataSync(o.fixed);
}

function sameValues(u, v) {
  if (!ArrayBuffer.isView(u) || !ArrayBuffer.isView(v) || u.constructor !== v.constructor ||
      u.length !== v.length) {
    return false;
  }
  for (let i = 0; i < u.length; i++) if (!Object.is(u[i], v[i])) return false;
  return true;
}

/**
 * For two int32 shape vectors that differ in one entry only, where the first holds the first
 * batch size times a factor and the second the second batch size times the same factor: the
 * vector with -1 there (Reshape's "the rest"); else null.
 */
function batchFreeShape(u, v) {
  if (!(u instanceof Int32Array) || !(v instanceof Int32Array) || u.length !== v.length ||
      u.includes(-1)) {
    return null;
  }
  const differ = [];
  for (let i = 0; i < u.length; i++) if (u[i] !== v[i]) differ.push(i);
  if (differ.length !== 1) return null;
  const i = differ[0];
  const [b1, b2] = BATCH_SIZES;
  if (u[i] % b1 !== 0 || v[i] % b2 !== 0 || u[i] / b1 !== v[i] / b2) return null;
  const out = Array.from(u);
  out[i] = -1;
  return out;
}

/**
 * For int32 vectors `u` and `v` (tensors JS made from a shape: tfjs-converter's Shape op) that
 * are, in each recording, the shape of one output of an op before op `before`: a `Shape` of
 * that output (the latest such), as `merge`'s ops to build; else null.
 */
function shapeOfRecorded(backend, x, y, before, u, v) {
  if (!(u instanceof Int32Array) || !(v instanceof Int32Array)) return null;
  for (let n = before - 1; n >= 0; n--) {
    const outs = x.ops[n].outs;
    for (let j = 0; j < outs.length; j++) {
      if (sameShape(outs[j].shape, u) && sameShape(y.ops[n].outs[j].shape, v)) {
        const op = backend.ops.prepared('Shape', [typeAttr('T', outs[j].dtype),
          typeAttr('out_type', 'int32')]);
        return [{op, inputs: [{node: n, output: j}]}];
      }
    }
  }
  return null;
}

/**
 * For two tensors written from JS (`u`, `v`: `{shape, dtype, values}`) that hold one value,
 * the same, each shaped as one input was in its recording: `ZerosLike` of that input (cast to
 * the tensor's dtype first), plus the value when it is not 0, as `merge`'s ops to build; else
 * null.
 */
function filledLikeInput(backend, spec, u, v, made) {
  if (u === undefined || v === undefined || u.dtype !== v.dtype || u.dtype === 'string' ||
      !ArrayBuffer.isView(u.values) || u.values.length === 0) {
    return null;
  }
  const value = u.values[0];
  if (!u.values.every((e) => e === value) || !v.values.every((e) => e === value)) return null;
  const input = spec.inputs.findIndex((_, i) => sameShape(recordedShape(spec, i, 0), u.shape) &&
      sameShape(recordedShape(spec, i, 1), v.shape));
  if (input < 0) return null;
  const runner = backend.ops;
  const dtype = u.dtype;
  const ops = [];
  const inputDtype = spec.inputs[input].dtype;
  if (inputDtype !== dtype) {
    ops.push({op: runner.prepared('Cast', [typeAttr('SrcT', inputDtype), typeAttr('DstT', dtype),
      {name: 'Truncate', type: 'bool', value: false}]), inputs: [{input}]});
  }
  const from = ops.length > 0 ? {built: 0} : {input};
  ops.push({op: runner.prepared('ZerosLike', [typeAttr('T', dtype)]), inputs: [from]});
  if (value !== 0) {
    ops.push({op: runner.prepared('AddV2', [typeAttr('T', dtype)]),
      inputs: [{built: ops.length - 1}, {constant: made(dtype, [], value)}]});
  }
  return ops;
}

/** Input `i`'s shape in recording `k`. */
function recordedShape(spec, i, k) {
  return sized(spec.inputs[i].dims, BATCH_SIZES[k], OTHER_SIZES[k]);
}

/**
 * Builds the SavedModel's graph of `call` (`merge`) natively: `{graphDef, variables, saver}`,
 * as encodeSavedModel takes them.
 */
function exportGraph(backend, spec, call) {
  const exampleIds = [];
  try {
    const inputs = spec.inputs.map((input) => {
      const id = backend.createConstant(input.dtype, input.dims.map(() => 1),
                                        input.dtype === 'bool' ? [false] : [0]);
      exampleIds.push(id);
      return {name: input.node, id, dims: input.dims};
    });
    return backend.binding.exportCall(
        call.ops,
        inputs,
        call.variables.map((v) => ({name: v.name, id: backend.idOf(v.tensor)})),
        call.constants,
        spec.outputs.map((o, j) => ({name: o.node, source: call.outputs[j]})));
  } finally {
    for (const id of exampleIds) backend.free(id);
  }
}

/**
 * Loads the SavedModel just written with TF and checks that its first signature gives the
 * model's values on inputs of other sizes than those recorded (`CHECK_*`).
 */
async function checkLoaded(spec, dir, tags, signature, outputNames, name) {
  const loaded = await loadSavedModelApart(dir, tags, signature);
  const inputs = spec.inputs.map(({dtype, dims}) => {
    const shape = sized(dims, CHECK_BATCH_SIZE, CHECK_OTHER_SIZE);
    return dtype === 'float32' ? tfc.randomUniform(shape, -1, 1) : tfc.zeros(shape, dtype);
  });
  try {
    const want = tfc.tidy(() => spec.run(inputs));
    const feed = Object.fromEntries(spec.inputs.map((input, i) => [input.key, inputs[i]]));
    const got = loaded.predict(feed);
    try {
      for (const outputName of outputNames) {
        const j = spec.outputs.findIndex((o) => o.name === outputName);
        const g = got[spec.outputs[j].key];
        const w = want[j];
        const far = g === undefined || !sameShape(g.shape, w.shape) ||
            tfc.tidy(() => tfc.max(tfc.abs(tfc.sub(tfc.cast(g, 'float32'), tfc.cast(w, 'float32'))))
                .dataSync()[0] > CHECK_TOLERANCE * (1 + tfc.max(tfc.abs(tfc.cast(w, 'float32'))).dataSync()[0]));
        if (far) {
          throw new Error(`${name}: the SavedModel written to ${dir} gives other values than ` +
                          `the model for output '${outputName}' on inputs of other sizes`);
        }
      }
    } finally {
      tfc.dispose(Object.values(got));
      tfc.dispose(want);
    }
  } finally {
    tfc.dispose(inputs);
    loaded.dispose();
  }
}

function weightBytes(variables) {
  return variables.reduce((sum, v) => sum + v.tensor.size * 4, 0);
}

module.exports = {saveSavedModel};
