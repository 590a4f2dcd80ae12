'use strict';
// Runs TF work through the binding's fast path, and is the one user of its io array: each
// distinct (op, attrs) pair is prepared once (`prepareOp` reads and checks the attrs natively),
// and every later call passes only input ids and receives output ids, dtypes and shapes through
// one Float64Array, so no JS objects cross the boundary. Ops whose outputs could overflow that
// array, and attr combinations beyond the cache's bound, take the plain `executeOp` path.
// Whole calls compiled into graphs (js/graphs/) run through it too.
//
// While a call is recorded as a graph (js/graphs/recording.js: `startRecording`), the runner
// and the backend report to the recording what the call does. The recording's side of it:
//   ahead                      non-null while the call runs ahead of TF (its ops not run)
//   opAhead(op, det, inputIds) outputs of an op recorded without running it, or null
//   op(op, det, inputIds, outs) an op that ran
//   fail(reason)               something that rules a graph out
//   created(id, shape, dtype, data), wrote(rec), read(rec), readId(id)
//                              tensors made from JS data, and reads of values
//   freeReserved(id)           whether `id`, reserved for running ahead, is the recording's
//                              to delete

/** Prepared (op, attrs) pairs kept per backend; beyond this, calls use executeOp. */
const MAX_PREPARED = 4096;
/** Doubles in the io array: input ids on the way in, `id, dtype, rank, dims...` per output out. */
const IO_LENGTH = 8192;
/** Room assumed per output when deciding whether the fast path fits (rank up to 8). */
const OUTPUT_ROOM = 3 + 8;

class OpRunner {
  constructor(binding) {
    this.binding = binding;
    this.io = new Float64Array(IO_LENGTH);
    this.dtypeNames = binding.dtypeNames();
    /** `op|attrs` key -> prepared id. */
    this.byKey = new Map();
    /** The call being recorded as a graph (see the header), or null; read, never set, outside
     * this class. */
    this.recording = null;
    /** Elements per op up to which a call graph's first run is queued ahead of need. */
    this.maxSetUpElementsPerOp = binding.MAX_SET_UP_ELEMENTS_PER_OP;
    /** Prepared id -> the op's name. */
    this.opNames = [];
    /** Prepared id -> whether the op is deterministic, for recordings. */
    this.deterministic = [];
  }

  /** Runs `opName` and returns its outputs as `[{id, shape, dtype}]`. Throws the binding's errors. */
  run(opName, attrs, inputIds, numOutputs) {
    const prepared = inputIds.length <= IO_LENGTH && numOutputs * OUTPUT_ROOM <= IO_LENGTH ?
        this.prepared(opName, attrs) : -1;
    if (prepared < 0) {
      if (this.recording !== null) this.recording.fail(`${opName} takes the slow path`);
      return this.binding.executeOp(opName, attrs, inputIds, numOutputs);
    }
    const recording = this.recording;
    if (recording !== null && recording.ahead !== null) {
      const outs = recording.opAhead(prepared, this.isDeterministic(prepared), inputIds);
      if (outs !== null) return outs;
    }
    const outs = this.runPrepared(prepared, inputIds, numOutputs);
    if (recording !== null) recording.op(prepared, this.isDeterministic(prepared), inputIds, outs);
    return outs;
  }

  /** Runs prepared op `prepared` on native `inputIds`; returns its outputs. */
  runPrepared(prepared, inputIds, numOutputs) {
    const inputs = this.writeIds(inputIds);
    return this.readOutputs(this.binding.runPreparedOp(prepared, this.io, inputs, numOutputs));
  }

  /**
   * Queues the ops of the call being recorded as executor jobs, while its JS goes on, until
   * `endPipelinedCall` (src/ops/pipeline.rs); false when they run at once instead.
   */
  beginPipelinedCall() {
    return this.binding.beginPipelinedCall();
  }

  /** Waits for the jobs queued since `beginPipelinedCall`; returns whether one failed. */
  endPipelinedCall() {
    return this.binding.endPipelinedCall();
  }

  /** Reports what the backend does to `recording` until `stopRecording`. */
  startRecording(recording) {
    if (this.recording !== null) throw new Error('a call is being recorded already');
    this.recording = recording;
  }

  stopRecording() {
    this.recording = null;
  }

  /** Whether prepared op `id` is deterministic (`preparedOpIsDeterministic`), asked once. */
  isDeterministic(id) {
    let known = this.deterministic[id];
    if (known === undefined) {
      known = this.binding.preparedOpIsDeterministic(id);
      this.deterministic[id] = known;
    }
    return known;
  }

  /** Writes `ids` at the start of `io`; returns their count. */
  writeIds(ids) {
    const io = this.io;
    const count = ids.length;
    if (count > io.length) throw new RangeError(`at most ${io.length} ids fit the io array`);
    for (let i = 0; i < count; i++) io[i] = ids[i];
    return count;
  }

  // ------------------------------------------------- whole calls as graphs (js/graphs/)

  /**
   * Compiles a recorded call into one graph; returns its id. `fedIds`: tensors each call feeds
   * anew (`fedDims`, when given, their dims, -1 where calls may differ); `fixedIds`: tensors
   * every call uses as they are now. The first `returned` fetches are the call's outputs, the
   * rest the values it assigns to variables, which a call on a remote device leaves there.
   */
  compileCall(ops, fedIds, fixedIds, fetches, fedDims, returned) {
    return this.binding.compileCall(ops, fedIds, fixedIds, fetches, fedDims, returned);
  }

  /** Runs call graph `id` fed native `feedIds`; returns its outputs as `[{id, shape, dtype}]`. */
  runCall(id, feedIds) {
    return this.readOutputs(this.binding.runCall(id, this.io, this.writeIds(feedIds)));
  }

  /** Queues call graph `id`'s first run, fed `feedIds`, ahead of need; false without an executor. */
  warmUpCall(id, feedIds) {
    return this.binding.warmUpCall(id, this.io, this.writeIds(feedIds));
  }

  /** Whether call graph `id` may compute a call whose JS ran ahead of TF. */
  callRunsAhead(id) {
    return this.binding.callRunsAhead(id);
  }

  dropCall(id) {
    this.binding.dropCall(id);
  }

  /** `count` consecutive ids with no tensor yet, for ops run ahead of TF; returns the first. */
  reserveTensors(count) {
    return this.binding.reserveTensors(count);
  }

  /** Fills reserved ids with computed tensors (`computed`: reserved id -> computed id). */
  fillTensors(computed) {
    const io = this.io;
    let pairs = 0;
    for (const [reserved, id] of computed) {
      io[2 * pairs] = reserved;
      io[2 * pairs + 1] = id;
      if (++pairs * 2 === io.length) {
        this.binding.fillTensors(io, pairs);
        pairs = 0;
      }
    }
    if (pairs > 0) this.binding.fillTensors(io, pairs);
  }

  /** Deletes native tensor `id` with no owner check (ids of a recording's own). */
  deleteTensor(id) {
    this.binding.deleteTensor(id);
  }

  /**
   * The `count` outputs the binding wrote into `io` (`runPreparedOp`, `runCall`): per output
   * `id, dtype index, rank, dims...`, as `[{id, shape, dtype}]`.
   */
  readOutputs(count) {
    const io = this.io;
    const outs = new Array(count);
    let at = 0;
    for (let k = 0; k < count; k++) {
      const rank = io[at + 2];
      const shape = new Array(rank);
      for (let d = 0; d < rank; d++) shape[d] = io[at + 3 + d];
      outs[k] = {id: io[at], shape, dtype: this.dtypeNames[io[at + 1]]};
      at += 3 + rank;
    }
    return outs;
  }

  /**
   * The prepared id for (opName, attrs), preparing it on first use; -1 when the cache is full.
   * Kernels that reuse an attrs array find it on the array itself (PREPARED) without building
   * the key. The hint lives on the array rather than in a WeakMap keyed by it: callers that
   * build a fresh array per call would fill a WeakMap with entries V8 collects late (100k
   * decodeJpeg calls grew RSS by ~30 MB that way), and an array's own property goes with it.
   */
  prepared(opName, attrs) {
    const list = attrs == null ? EMPTY : attrs;
    const hint = list[PREPARED];
    if (hint !== undefined && hint.runner === this && hint.op === opName) return hint.id;
    const key = opName + attrsKey(list);
    let id = this.byKey.get(key);
    if (id === undefined) {
      if (this.byKey.size >= MAX_PREPARED) return -1;
      id = this.binding.prepareOp(opName, list);
      this.byKey.set(key, id);
      this.opNames[id] = opName;
    }
    if (Object.isExtensible(list)) list[PREPARED] = {runner: this, op: opName, id};
    return id;
  }
}

const EMPTY = Object.freeze([]);
/** Property of an attrs array: `{runner, op, id}` of the op it was last prepared for. */
const PREPARED = Symbol('tfjs-node-rs prepared op');

/** A string that differs whenever the attrs would set a different value. */
function attrsKey(attrs) {
  let key = '';
  for (let i = 0; i < attrs.length; i++) {
    const a = attrs[i];
    key += '|' + a.name + ':' + a.type + '=' + valueKey(a.value);
  }
  return key;
}

function valueKey(value) {
  if (Array.isArray(value)) {
    let key = '[';
    for (let i = 0; i < value.length; i++) key += valueKey(value[i]) + ',';
    return key + ']';
  }
  // Strings are quoted so that '1' (a string attr) and 1 (an int) differ.
  return typeof value === 'string' ? JSON.stringify(value) : String(value);
}

module.exports = {OpRunner};
