'use strict';
// The call sites that run as whole graphs (call_graphs.js): LayersModel's predict loop (so
// `predict`, `predictOnBatch` and Sequential's), its training step (`fit`, `fitDataset`,
// `trainOnBatch` all run the function `makeTrainFunction` returns) and its test step
// (`evaluate`, `evaluateDataset`, validation in `fit`); GraphModel's `execute` (so `predict`)
// and `executeAsync` for models without control flow; and `tf.node.function`.
//
// Each key holds what the call's ops depend on besides tensors: structure that JS reads on
// every call (the layers, which weights train, the optimizer and its settings) is part of it,
// so that changing any of it records the call again instead of replaying a stale graph.

const tfc = require('@tensorflow/tfjs-core');
const {whenLoaded, loadedExports} = require('../lazy_packages');
const {CallGraphs, tensorsKey, recordPart, endParts} = require('./call_graphs');
const {builtInLayersModel, builtInGraphModel} = require('./trust');

/** Call-site caches per model and kind. */
const cachesOf = new WeakMap();

function cacheOf(owner, kind) {
  let caches = cachesOf.get(owner);
  if (caches === undefined) {
    caches = new Map();
    cachesOf.set(owner, caches);
  }
  let cache = caches.get(kind);
  if (cache === undefined) {
    const converter = loadedExports('@tensorflow/tfjs-converter');
    const trusts = converter !== null && owner instanceof converter.GraphModel ?
        () => builtInGraphModel(owner) : () => builtInLayersModel(owner);
    // A GraphModel's first call runs with TF behind its JS (call_graphs.js, `runPipelined`).
    // Not a LayersModel's predict: its recurrent layers' hundreds of small ops took longer
    // queued one by one (an LSTM's first predict 86 against 76 ms, a GRU's 97 against 84).
    cache = new CallGraphs(`${owner.constructor.name}.${kind}`, trusts, kind === 'execute');
    caches.set(kind, cache);
  }
  return cache;
}

/** Object identities as small numbers, for keys. */
const identities = new WeakMap();
let nextIdentity = 0;
function identity(object) {
  if (object == null) return '-';
  let id = identities.get(object);
  if (id === undefined) {
    id = ++nextIdentity;
    identities.set(object, id);
  }
  return id;
}

/** The key part of a LayersModel's structure: its layers and which of them train. */
function layersKey(model) {
  let key = `L${model.layers.length}:${model.trainable ? 1 : 0}`;
  for (const layer of model.layers) key += layer.trainable ? '1' : '0';
  return key;
}

/** The key part of a compiled model's training: what trains, how, and by what settings. */
function trainingKey(model) {
  const optimizer = model.optimizer_;
  let key = `O${identity(optimizer)}${JSON.stringify(optimizer ? optimizer.getConfig() : null)}`;
  for (const w of model.collectedTrainableWeights || []) key += ',' + w.id;
  return key + `|${model.lossFunctions ? model.lossFunctions.map(identity).join(',') : ''}`;
}

/** An optimizer's iteration count, moved on replays as the recorded step moved it. */
function iterationsOf(model) {
  const optimizer = model.optimizer_;
  if (optimizer == null || typeof optimizer.incrementIterations !== 'function') return undefined;
  return {
    read: () => optimizer.iterations,
    replay: (delta) => {
      for (let i = 0; i < delta; i++) optimizer.incrementIterations();
    },
    // tfjs-core's Optimizer keeps the count in `iterations_` and only counts it up.
    restore: (value) => {
      optimizer.iterations_ = value;
    },
  };
}

/**
 * The samples of a predict's inputs: their common first dimension; 0 when they do not agree
 * (tfjs-layers' loop reports those).
 */
function samplesOf(inputs) {
  if (inputs.length === 0 || inputs.some((t) => t.rank === 0)) return 0;
  const count = inputs[0].shape[0];
  return inputs.every((t) => t.shape[0] === count) ? count : 0;
}

/** The tensors of `value` (a tensor, or arrays / plain objects of them), in order. */
function tensorsOf(value, out = []) {
  if (value instanceof tfc.Tensor) out.push(value);
  else if (Array.isArray(value)) value.forEach((v) => tensorsOf(v, out));
  else if (value !== null && typeof value === 'object' &&
           Object.getPrototypeOf(value) === Object.prototype) {
    for (const k of Object.keys(value)) tensorsOf(value[k], out);
  }
  return out;
}

/** The key of call arguments: tensors by dtype and shape, everything else by value. */
function argsKey(value) {
  if (value instanceof tfc.Tensor) return tensorsKey([value]);
  if (Array.isArray(value)) return '[' + value.map(argsKey).join(',') + ']';
  if (value !== null && typeof value === 'object') {
    if (Object.getPrototypeOf(value) !== Object.prototype) return `#${identity(value)}`;
    return '{' + Object.keys(value).map((k) => JSON.stringify(k) + ':' + argsKey(value[k]))
        .join(',') + '}';
  }
  if (typeof value === 'function') return `#${identity(value)}`;
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

/** Makes the call sites graphs, each as its package loads (lazy_packages.js). */
function installModelGraphs() {
  whenLoaded('@tensorflow/tfjs-layers', ({LayersModel}) => installLayersModelGraphs(LayersModel));
  whenLoaded('@tensorflow/tfjs-converter', ({GraphModel}) => installGraphModelGraphs(GraphModel));
}

function installLayersModelGraphs(LayersModel) {
  const predictLoop = LayersModel.prototype.predictLoop;
  LayersModel.prototype.predictLoop = function(ins, batchSize = 32, verbose = false) {
    const inputs = tensorsOf(ins);
    const key = `${argsKey(ins)}b${batchSize}v${verbose ? 1 : 0}${layersKey(this)}`;
    return cacheOf(this, 'predict').call(
        key, inputs, () => predictInBatches(this, ins, inputs, batchSize, verbose));
  };

  /**
   * tfjs-layers' predict loop on `ins` (its tensors `inputs`), with each batch marked as a
   * part of the call (`recordPart`), so that a predict of two batches or more is a graph from
   * its first call: the loop slices the batches and concatenates their outputs as
   * tfjs-layers' does, and runs each through tfjs-layers' own loop.
   */
  function predictInBatches(model, ins, inputs, batchSize, verbose) {
    const count = samplesOf(inputs);
    if (count < 2 * batchSize || verbose) return predictLoop.call(model, ins, batchSize, verbose);
    return tfc.tidy(() => {
      const batches = [];
      for (let start = 0; start < count; start += batchSize) {
        const size = Math.min(batchSize, count - start);
        batches.push(inputs.map((t) => tfc.slice(t, start, size)));
      }
      const outputs = batches.map((batch) => {
        recordPart(batch);
        const out = predictLoop.call(model, Array.isArray(ins) ? batch : batch[0], batchSize);
        return Array.isArray(out) ? out : [out];
      });
      endParts();
      const joined = outputs[0].map((_, i) => tfc.concat(outputs.map((out) => out[i]), 0));
      return joined.length === 1 ? joined[0] : joined;
    });
  }

  const makeTrainFunction = LayersModel.prototype.makeTrainFunction;
  LayersModel.prototype.makeTrainFunction = function() {
    const step = makeTrainFunction.call(this);
    const cache = cacheOf(this, 'train');
    return (data) => cache.call(`${argsKey(data)}${layersKey(this)}${trainingKey(this)}`,
                                tensorsOf(data), () => step(data), iterationsOf(this));
  };

  const makeTestFunction = LayersModel.prototype.makeTestFunction;
  LayersModel.prototype.makeTestFunction = function() {
    makeTestFunction.call(this);
    const step = this.testFunction;
    const cache = cacheOf(this, 'test');
    this.testFunction = (data) => cache.call(
        `${argsKey(data)}${layersKey(this)}${trainingKey(this)}`, tensorsOf(data),
        () => step(data));
  };

  disposeGraphsWith(LayersModel);
}

// A disposed model's graphs go with it (they hold a GraphModel's weights), not at its GC.
function disposeGraphsWith(Model) {
  const dispose = Model.prototype.dispose;
  Model.prototype.dispose = function(...args) {
    const caches = cachesOf.get(this);
    if (caches !== undefined) {
      for (const cache of caches.values()) cache.clear();
      cachesOf.delete(this);
    }
    return dispose.apply(this, args);
  };
}

function installGraphModelGraphs(GraphModel) {
  disposeGraphsWith(GraphModel);
  const execute = GraphModel.prototype.execute;
  GraphModel.prototype.execute = function(inputs, outputs) {
    return cacheOf(this, 'execute').call(argsKey([inputs, outputs]), tensorsOf(inputs),
                                         () => execute.call(this, inputs, outputs));
  };

  const executeAsync = GraphModel.prototype.executeAsync;
  GraphModel.prototype.executeAsync = function(inputs, outputs) {
    if (this.executor == null || hasDynamicOps(this)) {
      return executeAsync.call(this, inputs, outputs);
    }
    return Promise.resolve().then(() => this.execute(inputs, outputs));
  };
}

/**
 * Whether a GraphModel's graph has ops that only `executeAsync` runs (control flow, dynamic
 * shapes, hash tables): those stay on tfjs-converter's own asynchronous executor.
 */
function hasDynamicOps(model) {
  let known = dynamicModels.get(model);
  if (known === undefined) {
    const nodes = Object.values(model.executor.graph.nodes);
    known = nodes.some((node) => ['control', 'dynamic', 'hash_table'].includes(node.category)) ||
        (model.executor.graph.functions != null &&
         Object.keys(model.executor.graph.functions).length > 0);
    dynamicModels.set(model, known);
  }
  return known;
}
const dynamicModels = new WeakMap();

/**
 * `tf.node.function(fn)`: `fn` (tensors, or arrays / plain objects of them, and plain values
 * in; the same out) as one graph per key of its arguments, like Python's `tf.function`. It runs
 * as `tf.tidy(fn)`; JS values it reads are fixed at the recording (pass them as arguments to
 * key them).
 */
function graphFunction(fn) {
  if (typeof fn !== 'function') throw new TypeError('tf.node.function: fn must be a function');
  const cache = new CallGraphs(`function ${fn.name || '(anonymous)'}`);
  return function(...args) {
    return cache.call(argsKey(args), tensorsOf(args), () => tfc.tidy(() => fn.apply(this, args)));
  };
}

module.exports = {installModelGraphs, graphFunction};
