'use strict';
// Whole calls as one TF graph. A call site (a model's predict, its training step, a
// `tf.node.function`) owns a CallGraphs cache keyed by what the call depends on besides tensor
// values: its inputs' dtypes and shapes and whatever the call site adds (batch size, optimizer
// settings, trainable flags). Per key:
//
//   1. calls run eagerly while the backend records them (recording.js);
//   2. once two consecutive recordings ran the same ops on the same outside tensors (the same
//      variables, constants of equal values), the last is compiled (`compileCall`); a call
//      site running only tfjs's own JS (trust.js) needs no second: its first is compiled. A
//      first training step that made the optimizer's slots counts as if they had been there
//      (`Recording.asIfCreatedBefore`); so is a
//      recording whose repeating parts agree alike (`Recording.part`: a predict's batches),
//      from its first call. A call that may repeat the last recording has that recording
//      compiled as it starts (`speculate`; for calls of small ops, set up on the executor
//      meanwhile), runs ahead of TF on it when it can (`Recording.runAhead`: its ops are
//      recorded, not run, and the graph computes them at the end), and takes it if it repeats;
//   3. later calls feed the inputs and the variables' current values to that graph in one
//      `runCall`, make the outputs tfjs tensors, and assign the variables the call assigned.
//
// Inputs whose shapes vary (a server's requests) would make a key per shape. Once a call site
// has seen `SHAPES_BEFORE_GENERIC` shapes of one signature (the key without dims: dtypes,
// ranks, the call site's part), its calls of further shapes are recorded for one graph of any
// such shape: two recordings of different shapes that ran the same ops on the same outside
// tensors (so no constant JS computed from a shape differs) are compiled with the dims that
// differed unknown (-1), and that graph serves every call whose other dims match, its outputs'
// shapes those TF computes. A call it fails on runs eagerly, with eager's result or error.
// Where the recordings differ (a reshape to a shape JS computed), the signature records no
// more and its shapes keep graphs of their own, as above.
//
// A recording that cannot be a graph (it reads values, writes random values from JS, creates
// variables, keeps tensors it does not return), or keys that never repeat, leave the calls
// eager after a few tries. Calls inside a gradient tape, inside a kernel or another recorded
// call, while profiling, or on another backend always run eagerly.

const tfc = require('@tensorflow/tfjs-core');
const {Recording, rebuild, sameOutside} = require('./recording');
const {TensorFlowBackend} = require('../backend/tensorflow_backend');
const {loadedExports} = require('../lazy_packages');

/** Recordings per key before the key is left eager. */
const MAX_RECORDINGS = 4;
/** Keys per cache, and signatures (keys without dims); calls of further keys run eagerly. */
const MAX_KEYS = 64;
/** Shapes of one signature a call site sees before it records calls for a graph of any shape. */
const SHAPES_BEFORE_GENERIC = 2;
/** The tfjs flag that turns call graphs off (`tf.env().set(FLAG, false)`). */
const FLAG = 'TFJS_NODE_RS_CALL_GRAPHS';

tfc.env().registerFlag(FLAG, () => process.env[FLAG] !== '0');

// A recorded call that makes variables tells its recording which, and what they start as.
const engine = tfc.engine();
const makeVariable = engine.makeVariable;
engine.makeVariable = function(...args) {
  const v = makeVariable.apply(this, args);
  const recording = recordingNow();
  if (recording !== null) recording.createdVariable(v);
  return v;
};

/** Counters for `tf.node.callGraphStats()`. */
const stats = {compiled: 0, replays: 0, recordings: 0, ranAhead: 0, fromFirstCalls: 0,
  eagerKeys: 0, lastFailure: null, alive: 0, genericCompiled: 0, genericReplays: 0,
  genericFallbacks: 0};

/** Frees a cache's graphs when the cache (its model or function) is collected. */
const graphsOfCollected = new FinalizationRegistry(({runner, ids}) => {
  for (const id of ids) runner.dropCall(id);
  stats.alive -= ids.size;
});

class CallGraphs {
  /**
   * @param label names the call site in `lastFailure`
   * @param trusts tells whether the call site's calls run only JS that does the same on
   *     every call of a key (trust.js): then a call's first recording is its graph
   * @param computesOnly whether a call only computes its outputs (a predict), so that running
   *     it again gives the same: then a trusted call site's first call runs with TF behind its
   *     JS (`runPipelined`)
   */
  constructor(label, trusts = () => false, computesOnly = false) {
    this.label = label;
    this.trusts = trusts;
    this.computesOnly = computesOnly;
    this.entries = new Map();
    /** Per signature (a key without its dims), its calls of any shape (see the header): the
     * shapes seen (up to `SHAPES_BEFORE_GENERIC`), recordings that did not repeat, its graph,
     * whether it records no more (`eager`), and the last recording's description; shaped as
     * an entry for `replay` and `leaveEager` (`last` stays null: it holds no recording). */
    this.generics = new Map();
    /** Call graph ids alive, shared with the finalizer. */
    this.held = {runner: null, ids: new Set()};
  }

  /**
   * Runs `run()` (the eager call, on `inputs`, a flat list of tensors) as a graph when `key`
   * has one, else eagerly, recording it. `sideEffects`, when given, is a JS counter the call
   * moves (an optimizer's iteration count): `read()` is taken around recorded calls, and
   * `replay(delta)` moves it on replays as the recorded call did, and `restore(value)` sets it
   * back to what `read()` gave (a call that ran ahead of TF and failed at its end).
   */
  call(key, inputs, run, sideEffects) {
    const backend = tfc.backend();
    if (!ready(backend)) return run();
    // A graph compiled inside `tf.node.withDevice` runs on that device: keyed apart, by the
    // scope of this call's async context.
    if (backend.openDeviceScopes !== 0) backend.followDeviceScope();
    const signature = backend.placementKey() + '|' + key + aliasKey(inputs);
    const dims = dimsKey(inputs);
    let entry = this.entries.get(signature + dims);
    if (entry !== undefined && entry.graph !== null) {
      const replayed = this.replay(backend, entry, inputs);
      if (replayed !== undefined) return replayed;
    }
    const generic = this.genericOf(signature, dims);
    if (generic !== null) {
      if (generic.graph !== null && admits(generic.graph, inputs)) {
        const replayed = this.replay(backend, generic, inputs);
        if (replayed !== undefined) return replayed;
        if (generic.graph !== null) {
          // The graph failed: the call runs eagerly, with the result or error eager gives.
          stats.genericFallbacks++;
          return run();
        }
      }
    }
    if (entry === undefined && this.entries.size < MAX_KEYS) {
      entry = {recordings: 0, last: null, graph: null, eager: false};
      this.entries.set(signature + dims, entry);
    }
    if (generic !== null && !generic.eager &&
        (generic.described === null || generic.described.dims !== dims)) {
      return this.recordGeneric(backend, generic, entry, dims, inputs, run, sideEffects);
    }
    if (entry === undefined || entry.eager) return run();
    return this.record(backend, entry, inputs, run, sideEffects);
  }

  /**
   * The state of `signature`'s calls of any shape once its calls have had
   * `SHAPES_BEFORE_GENERIC` shapes (`dims`, this call's, counted), else null.
   */
  genericOf(signature, dims) {
    let generic = this.generics.get(signature);
    if (generic === undefined) {
      if (this.generics.size >= MAX_KEYS) return null;
      generic = {shapes: new Set(), recordings: 0, last: null, graph: null, eager: false,
        described: null};
      this.generics.set(signature, generic);
    }
    if (generic.shapes.size < SHAPES_BEFORE_GENERIC) generic.shapes.add(dims);
    return generic.shapes.size < SHAPES_BEFORE_GENERIC ? null : generic;
  }

  /**
   * Runs `run()` eagerly, recorded for `generic`'s graph: when it ran the ops of the recording
   * described before (of other dims) on the same outside tensors, the two are compiled as one
   * graph with the dims they differ in unknown. Else it serves its shape (`entry`, when the
   * cache has room for it) as in `record`: its graph when it needs no second to witness it,
   * else the recording its shape's next call may repeat.
   * A call that throws counts for nothing (a request the model cannot take must not end the
   * graph of those it can).
   */
  recordGeneric(backend, generic, entry, dims, inputs, run, sideEffects) {
    stats.recordings++;
    let recording;
    try {
      recording = new Recording(backend, inputs);
    } catch (e) {
      generic.eager = true;
      return run();
    }
    const before = sideEffects ? sideEffects.read() : undefined;
    const {result, call} = runRecorded(backend, recording, run);
    if (call === null) {
      recording.release();
      stats.lastFailure = `${this.label}: ${recording.failure}`;
      generic.eager = true;
      return result;
    }
    if (sideEffects) call.sideEffect = sideEffects.read() - before;
    call.dims = dims;
    call.inputShapes = inputs.map((t) => t.shape.slice());
    const previous = generic.described;
    const merged = previous !== null && !call.witnessOnly && previous.key === call.key &&
        sameOutside(previous.outside, call.outside) &&
        previous.sideEffect === call.sideEffect ? generalize(previous, call) : null;
    if (merged !== null) {
      const id = this.compile(backend, merged);
      if (typeof id !== 'number') {
        stats.lastFailure = `${this.label}: cannot be a graph of any shape: ${id.message}`;
        generic.eager = true;
      } else if (this.setUp(backend, id, merged)) {
        if (generic.graph !== null) this.dropGraph(generic);
        this.install(generic, backend, id, merged, sideEffects);
        stats.genericCompiled++;
      }
    } else {
      if (++generic.recordings >= MAX_RECORDINGS) {
        stats.lastFailure = `${this.label}: runs other ops or constants for other shapes`;
        generic.eager = true;
      }
      const trusted = entry !== undefined && entry.last === null && !call.witnessed &&
          !recording.drewRandom && this.trusts();
      if (entry !== undefined && entry.graph === null && !entry.eager) {
        if (call.witnessed || trusted) {
          this.compileOwn(entry, backend, call, sideEffects, trusted);
        } else if (entry.last === null) {
          // The shape's first recording, kept as `record` keeps one: its next call may repeat it.
          entry.recordings++;
          entry.last = {call, recording};
        }
      }
    }
    // Kept to compare, not to compile (ids are never reused, so once its tensors go, its fixed
    // ones still tell which tensors they were).
    generic.described = merged !== null ? merged : call;
    if (entry === undefined || entry.last === null || entry.last.recording !== recording) {
      recording.release();
    }
    return result;
  }

  record(backend, entry, inputs, run, sideEffects) {
    entry.recordings++;
    stats.recordings++;
    let recording;
    try {
      recording = new Recording(backend, inputs);
    } catch (e) {
      this.leaveEager(entry, `cannot record its inputs: ${e.message}`);
      return run();
    }
    const previous = entry.last;
    if (previous !== null && previous.speculative === undefined) {
      previous.speculative = this.speculate(backend, previous.call);
    }
    const speculative = previous !== null ? previous.speculative : null;
    if (speculative !== null && speculative.runsAhead) recording.runAhead(previous.call);
    const before = sideEffects ? sideEffects.read() : undefined;
    const trustedSite = previous === null && this.trusts();
    const pipelined = trustedSite && this.computesOnly && backend.ops.beginPipelinedCall();
    const {result, call} = pipelined ? runPipelined(backend, recording, run) :
        runRecorded(backend, recording, run);
    if (call === null) {
      recording.release();
      this.fail(entry, recording.failure);
      return result;
    }
    if (sideEffects) call.sideEffect = sideEffects.read() - before;
    const repeated = previous !== null && !call.witnessOnly && previous.call.key === call.key &&
        sameOutside(previous.call.outside, call.outside) &&
        previous.call.sideEffect === call.sideEffect;
    // A first recording of JS that does the same every call needs no second to witness it.
    const trusted = trustedSite && !call.witnessed && !recording.drewRandom;
    // Whether this recording is the key's graph: witnessed, or needing no witness.
    const compiles = repeated || call.witnessed || trusted;
    let usable = repeated && speculative !== null;
    if (recording.ahead !== null) {
      let graphFailure = null;
      if (repeated) {
        try {
          recording.fillAhead(call, this.computeAhead(backend, speculative.id, call));
          stats.ranAhead++;
        } catch (e) {
          graphFailure = e;
        }
      }
      if (recording.ahead !== null) runLate(recording, result, sideEffects, before);
      if (graphFailure !== null) {
        // The ops did not fail eagerly: the graph itself cannot compute the call.
        usable = false;
        this.fail(entry, `cannot be a graph: ${graphFailure.message}`, true);
      }
    }
    if (usable) {
      // The previous call's graph computes this one's (the same ops on the same outside
      // tensors), and it may be set up already.
      previous.speculative = null;
      this.install(entry, backend, speculative.id, call, sideEffects);
    }
    if (previous !== null) this.forget(previous);
    entry.last = null;
    if (entry.graph === null && compiles) this.compileOwn(entry, backend, call, sideEffects, trusted);
    if (compiles) {
      recording.release();
    } else {
      entry.last = {call, recording};
      if (entry.recordings >= MAX_RECORDINGS) this.fail(entry, 'runs different ops each call');
    }
    return result;
  }

  /** Compiles `call` as `entry`'s graph (`trusted`: from a first call, as trust.js allows). */
  compileOwn(entry, backend, call, sideEffects, trusted) {
    const id = this.compile(backend, call);
    if (typeof id !== 'number') {
      this.fail(entry, `cannot be a graph: ${id.message}`, true);
    } else if (this.setUp(backend, id, call)) {
      // Set up now, as a repeat's graph is by `speculate`: the key's next call runs it.
      this.install(entry, backend, id, call, sideEffects);
      if (trusted) stats.fromFirstCalls++;
    }
  }

  /**
   * The graph of `call`, a recorded call that a call just starting may repeat (`{id,
   * runsAhead}`: whether the call may run ahead of TF on it, `Recording.runAhead`), or null
   * when it cannot be a graph. A call of many small ops (`MAX_SET_UP_ELEMENTS_PER_OP` of the
   * binding, shared with deferred runs, where its measurements are) has it set up
   * on the executor meanwhile: a graph's first run is mostly the session's setup (TF's graph
   * passes and kernels, per node), which would otherwise come at the first call that runs it
   * (for a call that runs ahead, at its own end: its JS takes about as long as its eager ops
   * would); the setup run computes the call once more, on cores the call's JS leaves idle.
   */
  speculate(backend, call) {
    const id = this.compile(backend, call);
    if (typeof id !== 'number') return null;
    const runsAhead = backend.ops.callRunsAhead(id);
    return this.setUp(backend, id, call) ? {id, runsAhead} : null;
  }

  /**
   * Queues the first run of graph `id`, compiled from `call`, on the executor when the call's
   * ops are small (`MAX_SET_UP_ELEMENTS_PER_OP`), fed the call's inputs and its variables'
   * values, its outputs dropped. False, with the graph dropped, when a tensor of the call is
   * gone (a disposed variable): a call of the key will differ.
   */
  setUp(backend, id, call) {
    const perOp = backend.ops.maxSetUpElementsPerOp;
    if (call.elements > perOp * call.ops.length) return true;
    try {
      backend.ops.warmUpCall(id, feedIds(backend, call));
      return true;
    } catch (e) {
      this.dropId(id);
      return false;
    }
  }

  /**
   * The values of a call that ran ahead of TF and repeated the recorded call: graph `id` run
   * on the call's inputs and variables' values from before it; returns the native ids of its
   * outputs, then of the variables' new values.
   */
  computeAhead(backend, id, call) {
    const outs = backend.ops.runCall(id, feedIds(backend, call));
    if (!computedAsRecorded(outs, call.outputs, call.assigned.map((a) => a.variable))) {
      for (const out of outs) backend.free(out);
      throw new Error('the graph computed other shapes than the call ran ahead with');
    }
    return outs.map((out) => out.id);
  }

  /**
   * Compiles `call`; returns its graph's id, or the error that rules a graph out. Feeds: the
   * inputs and the variables' values, given anew each call, then the fixed ones; a call of
   * several shapes (`generalize`) has its inputs' dims, -1 where they vary.
   */
  compile(backend, call) {
    const fed = [];
    const fixed = [];
    const feedOf = new Array(call.outside.length);
    call.outside.forEach((o, k) => {
      if (o.fixed === undefined) {
        feedOf[k] = fed.length;
        fed.push(o);
      }
    });
    call.outside.forEach((o, k) => {
      if (o.fixed !== undefined) {
        feedOf[k] = fed.length + fixed.length;
        fixed.push(o);
      }
    });
    const toNative = (ref) => ref.outside !== undefined ? {feed: feedOf[ref.outside]} : ref;
    const fetches = call.outputs.map((o) => toNative(o.ref))
        .concat(call.assigned.map((a) => toNative(a.ref)));
    const fedDims = call.inputDims === undefined ? undefined :
        fed.map((o) => o.input !== undefined ? call.inputDims[o.input] : o.variable.shape);
    let id;
    try {
      id = backend.ops.compileCall(
          call.ops.map(({op, inputs, outs}) => ({op, inputs: inputs.map(toNative),
                                                 shapes: outs.map((o) => o.shape)})),
          fed.map((o) => fedId(backend, o)), fixed.map((o) => o.fixed), fetches, fedDims,
          // Only the outputs come back from a remote device: the variables take the values
          // assigned there as they are, and the next call feeds them there again unsent.
          call.outputs.length);
    } catch (e) {
      return e;
    }
    stats.alive++;
    this.held.runner = backend.ops;
    if (this.held.ids.size === 0) graphsOfCollected.register(this, this.held, this.held);
    this.held.ids.add(id);
    return id;
  }

  /** Makes graph `id` (compiled from `call` or from a call it repeats) the entry's graph. */
  install(entry, backend, id, call, sideEffects) {
    entry.graph = {
      id,
      backend,
      fed: call.outside.filter((o) => o.fixed === undefined)
          .map((o) => o.input !== undefined ? {input: o.input} : {variable: o.variable}),
      outputs: call.outputs,
      assigned: call.assigned.map((a) => a.variable),
      template: call.template,
      sideEffect: call.sideEffect,
      sideEffects,
      /** The inputs' dims, -1 where they may vary; null: those of the recorded call. */
      dims: call.inputDims === undefined ? null : call.inputDims,
      /** The smallest size recorded of each input dim (where `dims` has -1). */
      least: call.inputLeast === undefined ? null : call.inputLeast,
    };
    stats.compiled++;
  }

  /** Drops a recording kept for the next call to repeat, and its speculative graph. */
  forget(last) {
    last.recording.release();
    if (last.speculative) this.dropId(last.speculative.id);
  }

  /**
   * The call's result from its graph; undefined when the graph no longer fits the call, or
   * when a graph of several shapes failed on it (its error may not be eager's).
   */
  replay(backend, entry, inputs) {
    const graph = entry.graph;
    if (graph.backend !== backend) {
      this.dropGraph(entry);
      return undefined;
    }
    const fed = new Array(graph.fed.length);
    for (let k = 0; k < fed.length; k++) {
      const f = graph.fed[k];
      fed[k] = backend.idOf(f.input !== undefined ? inputs[f.input] : f.variable);
    }
    let outs;
    try {
      outs = backend.ops.runCall(graph.id, fed);
    } catch (e) {
      if (graph.dims === null) throw e;
      return undefined;
    }
    const n = graph.outputs.length;
    if (!computedAsRecorded(outs, graph.outputs, graph.assigned)) {
      // Shapes that depend on values: the recorded JS decided on others. Run it eagerly.
      for (const out of outs) backend.free(out);
      this.dropGraph(entry);
      this.leaveEager(entry, 'computes shapes from values');
      return undefined;
    }
    const engine = tfc.engine();
    const tensors = outs.map((out) => engine.makeTensorFromTensorInfo(backend.wrap(out), backend));
    for (let j = 0; j < graph.assigned.length; j++) {
      const value = tensors[n + j];
      graph.assigned[j].assign(value);
      value.dispose();
    }
    if (graph.sideEffects) graph.sideEffects.replay(graph.sideEffect);
    stats.replays++;
    if (graph.dims !== null) stats.genericReplays++;
    return rebuild(graph.template, tensors);
  }

  /** Drops every key and its graph. */
  clear() {
    for (const entry of this.entries.values()) {
      if (entry.graph !== null) this.dropGraph(entry);
      if (entry.last !== null) this.forget(entry.last);
    }
    this.entries.clear();
    for (const generic of this.generics.values()) {
      if (generic.graph !== null) this.dropGraph(generic);
    }
    this.generics.clear();
  }

  dropGraph(entry) {
    this.dropId(entry.graph.id);
    entry.graph = null;
  }

  dropId(id) {
    this.held.ids.delete(id);
    this.held.runner.dropCall(id);
    stats.alive--;
  }

  fail(entry, reason, final = false) {
    stats.lastFailure = `${this.label}: ${reason}`;
    if (final || entry.recordings >= MAX_RECORDINGS) this.leaveEager(entry, reason);
  }

  leaveEager(entry, reason) {
    stats.lastFailure = `${this.label}: ${reason}`;
    if (!entry.eager) stats.eagerKeys++;
    entry.eager = true;
    if (entry.last !== null) {
      this.forget(entry.last);
      entry.last = null;
    }
  }
}

/**
 * The call being recorded, if any, starts a part that repeats (`Recording.part`) on
 * `tensors`; `endParts()` marks where the last part ends.
 */
function recordPart(tensors) {
  const recording = recordingNow();
  if (recording !== null) recording.part(tensors);
}

function endParts() {
  const recording = recordingNow();
  if (recording !== null) recording.endParts();
}

function recordingNow() {
  const backend = tfc.backend();
  return backend instanceof TensorFlowBackend ? backend.ops.recording : null;
}

/** Whether calls may be graphs now (see the header). */
function ready(backend) {
  const engine = tfc.engine();
  const state = engine.state;
  return backend instanceof TensorFlowBackend && backend.ops.recording === null &&
      state.gradientDepth === 0 && state.kernelDepth === 0 &&
      !state.profiling && tfc.env().getBool(FLAG) && !keepsIntermediateTensors();
}

/**
 * tfjs-converter's flag; read only once it has loaded (lazy_packages.js): a program that sets
 * it has loaded it, and a LayersModel program need not load it to read `false`.
 */
function keepsIntermediateTensors() {
  return loadedExports('@tensorflow/tfjs-converter') !== null &&
      tfc.env().getBool('KEEP_INTERMEDIATE_TENSORS');
}

/**
 * Runs `run()` recorded by `recording`: `{result, call}`, `call` the description
 * (`Recording.finish`) or null. When the call throws, what its JS did before stays done, as
 * eagerly (its ops run now), and the error goes on.
 */
function runRecorded(backend, recording, run) {
  backend.ops.startRecording(recording);
  backend.pauseDeferring(true);
  try {
    const result = run();
    // While still recording: an output that is a lazy reshape gets its native view from a
    // Reshape op here, which joins the call.
    return {result, call: recording.finish(result)};
  } catch (e) {
    recording.materialize();
    recording.release();
    throw e;
  } finally {
    backend.ops.stopRecording();
    backend.pauseDeferring(false);
  }
}

/**
 * `runRecorded` for a first call whose ops run as executor jobs while its JS goes on
 * (`beginPipelinedCall`, src/ops/pipeline.rs): the call waits for them at its end. Where one
 * failed (TF refused it only as it ran), the call runs again eagerly, unrecorded (`call` null),
 * and gives what eager gives: its result, or the error of the op that fails, at the call.
 */
function runPipelined(backend, recording, run) {
  let recorded;
  try {
    recorded = runRecorded(backend, recording, run);
  } catch (e) {
    if (!backend.ops.endPipelinedCall()) throw e;
    return rerunEagerly(recording, run);
  }
  if (!backend.ops.endPipelinedCall()) return recorded;
  tfc.dispose(recorded.result);
  return rerunEagerly(recording, run);
}

function rerunEagerly(recording, run) {
  recording.release();
  recording.fail('an op queued in its first call failed');
  return {result: run(), call: null};
}

/**
 * `b`, a recorded call that ran the ops of `a` (a call, or such a merge) on inputs of other
 * dims (`inputShapes`), with every dim that differs between them -1: its inputs' (also as
 * `inputDims`, the dims its graph is compiled for), its ops' outputs' and its outputs'. Null
 * when a rank differs.
 */
function generalize(a, b) {
  let ranksAgree = true;
  const merge = (x, y) => {
    if (x.length !== y.length) ranksAgree = false;
    return y.map((d, i) => d === x[i] ? d : -1);
  };
  const withShapes = (list, before) => list.map((o, i) => ({...o, shape: merge(before[i].shape,
                                                                              o.shape)}));
  const inputShapes = b.inputShapes.map((dims, i) => merge(a.inputShapes[i], dims));
  const leastOfA = a.inputLeast || a.inputShapes;
  const merged = {
    ...b,
    ops: b.ops.map((op, n) => ({...op, outs: withShapes(op.outs, a.ops[n].outs)})),
    outputs: withShapes(b.outputs, a.outputs),
    inputShapes,
    inputDims: inputShapes,
    inputLeast: b.inputShapes.map((dims, i) => dims.map((d, j) => Math.min(d, leastOfA[i][j] ?? d))),
  };
  return ranksAgree ? merged : null;
}

/**
 * Whether a graph of any shape serves `inputs`: their dims are those `graph.dims` lists, and
 * where it lists -1, no smaller than the smallest recorded (`graph.least`). Below that a window
 * may no longer fit (a conv's output empty or negative), where TF's oneDNN kernels give a tensor
 * of the input's shape rather than eager's empty one (js/kernels/families/conv.js); such a call
 * is recorded instead, and its graph widens when it runs the same ops.
 */
function admits(graph, inputs) {
  return inputs.every((t, i) => fits(graph.dims[i], t.shape) &&
      graph.least[i].every((least, j) => t.shape[j] >= least));
}

/** Whether `shape` has the dims `want` lists (-1: any). */
function fits(want, shape) {
  return want.length === shape.length && want.every((d, i) => d === -1 || d === shape[i]);
}

/**
 * Runs the ops of a call that ran ahead of TF and will not get its values from a graph, as they
 * would have run eagerly. When one fails, as it would have failed eagerly, so does the call:
 * nothing it returned stays, and its JS counter goes back to `before`.
 */
function runLate(recording, result, sideEffects, before) {
  try {
    recording.materialize();
  } catch (failure) {
    tfc.dispose(result);
    if (sideEffects) sideEffects.restore(before);
    recording.release();
    throw failure;
  }
}

/**
 * Whether a graph's outputs (`outs`, `[{shape, dtype}]`) have the dtypes and shapes of the
 * recorded call's `outputs` (any size where a dim is -1), then of the `variables` it assigned.
 */
function computedAsRecorded(outs, outputs, variables) {
  const n = outputs.length;
  return outs.every((out, i) => {
    const want = i < n ? outputs[i] : variables[i - n];
    return fits(want.shape, out.shape) && out.dtype === want.dtype;
  });
}

/** The native ids a graph of `call` is fed, in feed order. */
function feedIds(backend, call) {
  const ids = [];
  for (const o of call.outside) {
    if (o.fixed === undefined) ids.push(fedId(backend, o));
  }
  return ids;
}

/**
 * The tensor a graph is fed for outside tensor `o` of a call: its input, or the variable's
 * value (now: a variable the call made has no value from before it).
 */
function fedId(backend, o) {
  return o.variable !== undefined && o.id < 0 ? backend.idOf(o.variable) : o.id;
}

/** Which inputs are one tensor passed twice: part of the key, as the graph feeds by position. */
function aliasKey(inputs) {
  let key = '';
  for (let i = 1; i < inputs.length; i++) {
    for (let j = 0; j < i; j++) {
      if (inputs[i].dataId === inputs[j].dataId) {
        key += `|${i}=${j}`;
        break;
      }
    }
  }
  return key;
}

/**
 * The key part of tensors' dtypes and ranks, for call sites: `CallGraphs.call` adds the
 * inputs' dims (`dimsKey`), which a call's graph of any shape leaves out.
 */
function tensorsKey(tensors) {
  let key = '';
  for (const t of tensors) key += t.dtype + '/' + t.rank;
  return key;
}

/** The key part of tensors' dims. */
function dimsKey(tensors) {
  let key = '';
  for (const t of tensors) key += '[' + t.shape.join(',') + ']';
  return key;
}

module.exports = {FLAG, CallGraphs, tensorsKey, stats, recordPart, endParts, recordingNow,
  runRecorded};
