'use strict';
// Which calls are graphs from their first recording, as Python's tf.function takes a
// function's first trace.
//
// A call's graph is only ever replayed for calls of the same key, and the keys of models'
// calls (models.js) hold what the JS that tfjs ships reads besides tensors: its layers,
// optimizers, losses and metrics, and tfjs-converter's op executors do the same on every call
// of a key. So when a call ran nothing but that JS, its first recording is the next call's
// graph (a first training step that made the optimizer's slots, as if they had been there).
// Other JS (a user's layer, loss, metric or optimizer, an instance's own method, a
// `tf.node.function`) may write values or run ops that change between calls of one key, so
// its recording waits for a second call to run the same ops and write the same values (the
// witness, call_graphs.js). So does a call that draws random numbers in JS (GaussianNoise,
// AlphaDropout, RandomWidth): its values differ every call, and the witness sees it.

const tfc = require('@tensorflow/tfjs-core');
const {whenLoaded} = require('../lazy_packages');
const {replaceExport} = require('./core_exports');
const {recordingNow} = require('./call_graphs');

/** The classes registered for serialization so far. */
function registeredClasses() {
  return Object.values(tfc.serialization.SerializationMap.getMap().classNameMap).map(([cls]) => cls);
}

/**
 * The classes tfjs registered for serialization (layers, models, optimizers, activations,
 * initializers, regularizers, constraints) before a program could register its own: those of
 * tfjs-core when this module loaded, and those tfjs-layers registered as it loaded.
 */
const builtInClasses = new Set(registeredClasses());
let classesBeforeLayers = null;
whenLoaded('@tensorflow/tfjs-layers', () => {
  if (classesBeforeLayers === null) return;  // it loaded before this module
  for (const cls of registeredClasses()) {
    if (!classesBeforeLayers.has(cls)) builtInClasses.add(cls);
  }
  classesBeforeLayers = null;
}, () => {
  classesBeforeLayers = new Set(registeredClasses());
});

/** Loss and metric functions of tfjs's own that `compile` takes besides their names. */
let builtInFunctions = null;
function builtInFunction(f) {
  if (builtInFunctions === null) {
    builtInFunctions = new Set(Object.values(require('@tensorflow/tfjs-layers').metrics)
        .concat(Object.values(tfc.losses)).filter((g) => typeof g === 'function'));
  }
  return builtInFunctions.has(f);
}

/** tfjs-core's random ops that draw their numbers in JS. */
const JS_RANDOM_OPS = ['randomUniform', 'randomUniformInt', 'randomNormal',
  'randomStandardNormal', 'truncatedNormal', 'randomGamma'];

/**
 * Whether `object` and every serializable object it holds (layers, cells, activations,
 * regularizers, an optimizer) are of classes tfjs registered, none with its `call` replaced
 * on the instance, and none stateful (a stateful RNN feeds each call the states the last
 * one kept in JS).
 */
function builtInObject(object, seen = new Set()) {
  if (seen.has(object)) return true;
  seen.add(object);
  if (!builtInClasses.has(object.constructor) || Object.hasOwn(object, 'call') ||
      object.stateful === true) {
    return false;
  }
  for (const value of Object.values(object)) {
    const held = Array.isArray(value) ? value : [value];
    for (const v of held) {
      if (v instanceof tfc.serialization.Serializable && !builtInObject(v, seen)) return false;
    }
  }
  return true;
}

/** Whether a loss or metrics argument of `compile` names or is tfjs's own functions only. */
function builtInSpec(spec) {
  if (spec == null || typeof spec === 'string') return true;
  if (typeof spec === 'function') return builtInFunction(spec);
  if (typeof spec !== 'object') return false;
  return Object.values(spec).every(builtInSpec);
}

/** Whether a LayersModel's calls (predict, training and test steps) run tfjs's JS only. */
function builtInLayersModel(model) {
  return builtInObject(model) && builtInSpec(model.loss) && builtInSpec(model.metrics);
}

/** Whether a GraphModel's execute runs tfjs-converter's op executors only (no custom op). */
function builtInGraphModel(model) {
  return model.executor != null &&
      Object.values(model.executor.graph.nodes).every((node) => node.category !== 'custom');
}

/**
 * Makes tfjs-core's JS random ops tell the call being recorded that it drew random numbers
 * (`Recording.drewRandom`).
 */
function watchRandomOps() {
  for (const name of JS_RANDOM_OPS) {
    const op = tfc[name];
    replaceExport(name, function(...args) {
      const recording = recordingNow();
      if (recording !== null) recording.drewRandom = true;
      return op.apply(this, args);
    });
  }
}

module.exports = {builtInLayersModel, builtInGraphModel, watchRandomOps};
