'use strict';
// Runs TF ops through the binding's fast path: each distinct (op, attrs) pair is prepared once
// (`prepareOp` reads and checks the attrs natively), and every later call passes only input ids
// and receives output ids, dtypes and shapes through one Float64Array, so no JS objects cross
// the boundary. Ops whose outputs could overflow that array, and attr combinations beyond the
// cache's bound, take the plain `executeOp` path.

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
    /** The call being recorded as a graph (js/graphs/recording.js), or null; while it runs
     * ahead of TF, its ops are recorded instead of run. */
    this.recording = null;
    /** Prepared id -> whether the op is deterministic, for recordings. */
    this.deterministic = [];
  }

  /** Runs `opName` and returns its outputs as `[{id, shape, dtype}]`. Throws the binding's errors. */
  run(opName, attrs, inputIds, numOutputs) {
    const io = this.io;
    const inputs = inputIds.length;
    const prepared = inputs <= IO_LENGTH && numOutputs * OUTPUT_ROOM <= IO_LENGTH ?
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
    for (let i = 0; i < inputs; i++) io[i] = inputIds[i];
    const outs = this.readOutputs(this.binding.runPreparedOp(prepared, io, inputs, numOutputs));
    if (recording !== null) recording.op(prepared, this.isDeterministic(prepared), inputIds, outs);
    return outs;
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
