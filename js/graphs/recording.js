'use strict';
// What one eager call did, as the backend saw it: the prepared ops it ran and where each op's
// inputs came from (an earlier op of the call, or a tensor from outside it), the tensors it
// wrote from JS, and anything that rules a graph out (a read of values that may differ
// between calls, an op off the fast path, a SavedModel run). `finish` turns it into the
// description that `compileCall` takes, with a key that two calls share exactly when they ran
// the same ops on the same outside tensors, so that the graph of one computes what the other
// computed.
//
// A call that may repeat an earlier one can run ahead of TF (`runAhead`): while its ops are
// the earlier call's, on tensors described alike, they are recorded without running, each
// output a reserved id of the shape it had then; the graph of the earlier call computes them
// at the end. Anything else (another op, a read of such an output, anything that rules a graph
// out) first runs the ops recorded so far (`materialize`), and the call goes on eagerly.

const tfc = require('@tensorflow/tfjs-core');
const {sameShape} = require('../backend/tensorflow_backend');
const {sizeOf} = require('../backend/dtypes');

/**
 * Elements of JS-written data compared between calls (tfjs's gradients write `ones` of their
 * input's size); a call writing more stays eager.
 */
const MAX_WRITTEN_ELEMENTS = 1 << 26;

class Recording {
  /**
   * @param backend the tensorflow backend
   * @param inputs the call's input tensors, in the order replays feed them
   * Throws when an input or a variable cannot have a native tensor of its own (strings).
   */
  constructor(backend, inputs) {
    this.backend = backend;
    this.failure = null;
    /** `[{op, inputs: [ref], outs: [{id, shape, dtype}]}]`, ref being `{node, output}` or
     * `{outside: k}`. */
    this.ops = [];
    /** Native id -> ref, for every output of the call's ops and every outside tensor. */
    this.refs = new Map();
    /** Native ids of the outside tensors, by first use; each kept alive until `release`. */
    this.outside = [];
    /** Native id -> `{shape, dtype, values}` of what the call wrote from JS. */
    this.written = new Map();
    this.writtenElements = 0;
    /** Records the call made from JS values (`backend.write`), uploaded or not. */
    this.wroteRecs = new WeakSet();
    /** Native ids of op outputs that depend on inputs, variables or random ops. */
    this.varying = new Set();
    /** Native id -> input position. Uploaded first, so that the upload is not recorded. */
    this.inputIds = new Map();
    for (let i = 0; i < inputs.length; i++) {
      const id = backend.ownId(inputs[i]);
      if (!this.inputIds.has(id)) this.inputIds.set(id, i);
    }
    /** Native id -> variable, for the variables the call may read or assign. */
    this.variables = new Map();
    this.variablesBefore = new Map();
    const registered = Object.values(tfc.engine().registeredVariables);
    this.variableCount = registered.length;
    for (const v of registered) {
      if (backend.peek(v.dataId) === undefined) continue;
      const id = backend.ownId(v);
      this.variables.set(id, v);
      this.variablesBefore.set(v, id);
    }
    this.tensorsBefore = tfc.engine().state.numTensors;
    /** `{variable, id}` of the variables the call made, and the native id they started as. */
    this.madeVariables = [];
    /** Elements of every output of the call's ops: what its graph would compute, roughly. */
    this.elements = 0;
    /** While the call runs ahead of TF (`runAhead`): `{expected, first, next, end, freed}`. */
    this.ahead = null;
    /** Parts of the call that repeat (`part`), and where the last one ends. */
    this.parts = [];
    this.partsEnd = null;
    /** Whether the call drew random numbers in JS (trust.js). */
    this.drewRandom = false;
    /** Kernels take ops any TF has, whatever the sizes (a call recorded for a SavedModel). */
    this.portable = false;
  }

  /**
   * The call starts a part that repeats (a batch of a predict), on the tensors `inputs`.
   * Two parts that run the same ops on the same outside tensors witness what two calls
   * would: that the ops the call's JS runs do not change from one run to the next. Mark the
   * parts' end with `endParts`.
   */
  part(inputs) {
    const refs = new Map();
    inputs.forEach((t, i) => {
      const ref = this.refs.get(this.backend.idOf(t));
      if (ref !== undefined && !refs.has(refKey(ref))) refs.set(refKey(ref), i);
    });
    this.parts.push({start: this.ops.length, inputs: refs});
  }

  endParts() {
    this.partsEnd = this.ops.length;
  }

  /** Whether the first two parts ran the same ops on the same outside tensors. */
  partsAgree() {
    if (this.parts.length < 2 || this.partsEnd === null) return false;
    const [a, b] = this.parts;
    const bEnd = this.parts.length > 2 ? this.parts[2].start : this.partsEnd;
    if (b.start - a.start !== bEnd - b.start || a.inputs.size !== b.inputs.size) return false;
    const x = this.partKey(a, b.start);
    const y = this.partKey(b, bEnd);
    return x.key === y.key && sameOutside(x.fixed, y.fixed);
  }

  /**
   * A part's ops as a string that two parts share when they run the same ops wired alike:
   * their own nodes by position in the part, their inputs by position among them, inputs and
   * variables of the call as themselves; fixed tensors by order of use (`fixed`, their
   * descriptions, which must agree too: a batch writes its own constants from JS).
   */
  partKey(part, end) {
    let key = '';
    const fixed = [];
    const fixedAt = new Map();
    for (let i = part.start; i < end; i++) {
      const {op, inputs} = this.ops[i];
      key += op + '(';
      for (const ref of inputs) {
        if (ref.outside !== undefined) {
          const outside = this.describeOutside(this.outside[ref.outside]);
          if (outside.fixed === undefined) {
            key += 'x' + ref.outside;
          } else {
            if (!fixedAt.has(ref.outside)) {
              fixedAt.set(ref.outside, fixed.length);
              fixed.push(outside);
            }
            key += 'f' + fixedAt.get(ref.outside);
          }
        } else if (ref.node >= part.start) {
          key += 'n' + (ref.node - part.start) + '.' + ref.output;
        } else {
          const input = part.inputs.get(refKey(ref));
          key += input !== undefined ? 'i' + input : 'e' + refKey(ref);
        }
        key += ',';
      }
      key += ')';
    }
    return {key, fixed};
  }

  /** The call made variable `v` (an optimizer's slot, on its first step). */
  createdVariable(v) {
    this.madeVariables.push({variable: v, id: this.backend.idOf(v)});
  }

  /** The call made the tensor of `rec` from JS values. */
  wrote(rec) {
    this.wroteRecs.add(rec);
  }

  /**
   * The call reads the values of `rec`. JS decides on them from here on, so a graph of the call
   * is right only if they are the same every call: values that depend on neither its inputs,
   * nor variables, nor random ops, only on tensors from before the call and on values it wrote
   * itself, which recordings compare (a flatten's size from the input's shape).
   */
  read(rec) {
    if (rec.id >= 0) {
      this.readId(rec.id);
    } else if (this.wroteRecs.has(rec)) {
      // Written from JS and read back before any upload: no recording would compare them.
      this.fail('reads values it wrote from JS');
    }
  }

  readId(id) {
    if (this.isReserved(id)) this.materialize();
    this.refOf(id);
    if (this.varying.has(id) || this.inputIds.has(id) || this.variables.has(id)) {
      this.fail('reads values computed from its inputs, variables or random numbers');
    }
  }

  fail(reason) {
    this.materialize();
    if (this.failure === null) this.failure = reason;
  }

  /**
   * Prepared op `op` ran on native `inputIds`, giving `outs` (`[{id, shape, dtype}]`). Its
   * outputs vary between calls when `deterministic` is false or an input varies.
   */
  op(op, deterministic, inputIds, outs) {
    this.add(op, deterministic, inputIds, inputIds.map((id) => this.refOf(id)), outs);
  }

  add(op, deterministic, inputIds, inputs, outs) {
    for (const {shape} of outs) this.elements += sizeOf(shape);
    const node = this.ops.length;
    let varies = !deterministic;
    for (let i = 0; i < inputIds.length && !varies; i++) {
      const id = inputIds[i];
      varies = this.varying.has(id) || this.inputIds.has(id) || this.variables.has(id);
    }
    this.ops.push({op, inputs, outs});
    for (let j = 0; j < outs.length; j++) {
      this.refs.set(outs[j].id, {node, output: j});
      if (varies) this.varying.add(outs[j].id);
    }
  }

  /**
   * Runs the call ahead of TF while it repeats `expected` (the description of a call whose
   * graph will compute this one; see the header).
   */
  runAhead(expected) {
    let count = 0;
    for (const {outs} of expected.ops) count += outs.length;
    const first = this.backend.ops.reserveTensors(count);
    this.ahead = {expected, first, next: first, end: first + count, freed: []};
  }

  /**
   * Prepared op `op` on native `inputIds`, while running ahead: its outputs
   * (`[{id, shape, dtype}]`, reserved ids), recorded, when it is the expected call's next op
   * on inputs wired alike; else null, once the ops so far have run (the caller runs this one).
   */
  opAhead(op, deterministic, inputIds) {
    const {expected} = this.ahead;
    const want = expected.ops[this.ops.length];
    if (want !== undefined && want.op === op && want.inputs.length === inputIds.length) {
      const outsideBefore = this.outside.length;
      const inputs = inputIds.map((id) => this.refOf(id));
      let alike = inputs.every((ref, i) => sameRef(ref, want.inputs[i]));
      for (let k = outsideBefore; alike && k < this.outside.length; k++) {
        const was = expected.outside[k];
        alike = was !== undefined && sameOutsideTensor(this.describeOutside(this.outside[k]), was);
      }
      if (alike) {
        const outs = want.outs.map(({shape, dtype}) => ({id: this.ahead.next++, shape: shape.slice(),
                                                          dtype}));
        this.add(op, deterministic, inputIds, inputs, outs);
        return outs;
      }
    }
    this.materialize();
    return null;
  }

  /** The output (`{id, shape, dtype}`) node ref `ref` stands for. */
  outOf(ref) {
    return this.ops[ref.node].outs[ref.output];
  }

  /** Whether `id` is one of the ids reserved for running ahead, none of them computed. */
  isReserved(id) {
    const ahead = this.ahead;
    return ahead !== null && id >= ahead.first && id < ahead.end;
  }

  /** Takes `id`, a reserved id JS no longer holds, to delete with the rest (`settleReserved`). */
  freeReserved(id) {
    if (!this.isReserved(id)) return false;
    this.ahead.freed.push(id);
    return true;
  }

  /**
   * Stops running ahead: the ops recorded so far run now, in order, and fill their reserved
   * ids (those JS let go of are deleted after). Nothing when the call is not running ahead.
   */
  materialize() {
    const ahead = this.ahead;
    if (ahead === null) return;
    this.ahead = null;
    const runner = this.backend.ops;
    const computed = new Map();
    const idOf = (ref) => ref.outside !== undefined ? this.outside[ref.outside] :
        computed.get(this.outOf(ref).id);
    let failed = true;
    try {
      for (const {op, inputs, outs} of this.ops) {
        const got = runner.runPrepared(op, inputs.map(idOf), outs.length);
        got.forEach((out, j) => computed.set(outs[j].id, out.id));
        if (!got.every((out, j) => sameShape(out.shape, outs[j].shape))) {
          throw new Error('an op run ahead of TF computed another shape than it had before');
        }
      }
      failed = false;
    } finally {
      settleReserved(runner, ahead, computed);
      if (failed) this.unassignUncomputed(ahead, computed);
    }
  }

  /**
   * After an op run late failed (`materialize`), as it would have failed eagerly before the
   * call's JS went on: variables the JS then assigned values that no op computed get their
   * values from before the call back, as if the JS had stopped at the failure.
   */
  unassignUncomputed(ahead, computed) {
    const backend = this.backend;
    for (const [v, before] of this.variablesBefore) {
      const rec = backend.peek(v.dataId);
      const id = rec === undefined ? -1 : rec.id;
      if (id < ahead.first || id >= ahead.end || computed.has(id)) continue;
      const ref = this.refs.get(before);
      if (ref === undefined || ref.outside === undefined) continue;  // not held: gone
      const info = backend.wrap({id: backend.shareId(before), shape: v.shape.slice(),
                                 dtype: v.dtype});
      const value = tfc.engine().makeTensorFromTensorInfo(info, backend);
      v.assign(value);
      value.dispose();
    }
  }

  /**
   * Ends running ahead with the outputs of the graph that computed the call: `fetched` holds
   * the native ids of its outputs, then of the assigned variables' values, as the call's
   * description lists them.
   */
  fillAhead(call, fetched) {
    const ahead = this.ahead;
    this.ahead = null;
    const runner = this.backend.ops;
    const computed = new Map();
    const ends = call.outputs.concat(call.assigned);
    ends.forEach(({ref}, k) => {
      const reserved = this.outOf(ref).id;
      if (computed.has(reserved)) runner.deleteTensor(fetched[k]);
      else computed.set(reserved, fetched[k]);
    });
    settleReserved(runner, ahead, computed);
  }

  /** The call made native tensor `id` from JS `data`. */
  created(id, shape, dtype, data) {
    this.writtenElements += data.length;
    if (this.writtenElements > MAX_WRITTEN_ELEMENTS) {
      this.fail(`writes more than ${MAX_WRITTEN_ELEMENTS} elements from JS`);
      return;
    }
    // Kept, not copied: a tensor's data is never written after it is made.
    const values = Array.isArray(data) ? data.map((bytes) => Buffer.from(bytes)) : data;
    this.written.set(id, {shape: shape.slice(), dtype, values});
  }

  refOf(id) {
    let ref = this.refs.get(id);
    if (ref === undefined) {
      ref = {outside: this.outside.length};
      this.outside.push(this.backend.shareId(id));
      this.refs.set(id, ref);
    }
    return ref;
  }

  /**
   * Ends the recording of a call that returned `result`: the call's description
   * (`{key, ops, outside, outputs, assigned, template, witnessed}`: `witnessed` when its parts
   * agree, see `part`), or null with `this.failure` set.
   */
  finish(result) {
    const backend = this.backend;
    const engine = tfc.engine();
    const flat = [];
    const template = flatten(result, flat);
    if (template === undefined) this.fail('returns something other than tensors');
    if (this.failure !== null) return null;
    const outputs = [];
    const newOutputs = new Set();
    for (const t of flat) {
      const ref = this.refs.get(backend.idOf(t));
      if (ref === undefined || ref.outside !== undefined) {
        this.fail('returns a tensor none of its ops computed');
        return null;
      }
      outputs.push({ref, shape: t.shape.slice(), dtype: t.dtype});
      newOutputs.add(t.id);
    }
    const assigned = [];
    const registered = engine.registeredVariables;
    for (const [v, before] of this.variablesBefore) {
      if (v.isDisposed || registered[v.name] !== v) {
        this.fail('disposes a variable');
        return null;
      }
      const now = backend.idOf(v);
      if (now === before) continue;
      const ref = this.refs.get(now);
      if (ref === undefined || ref.outside !== undefined) {
        this.fail('assigns a variable a value none of its ops computed');
        return null;
      }
      assigned.push({variable: v, ref});
    }
    // By creation, not by registration: tfjs lists variables with numeric names (an
    // optimizer's slots) first, so a call that made some would order them otherwise.
    assigned.sort((a, b) => a.variable.id - b.variable.id);
    const createdCount = Object.keys(registered).length - this.variableCount;
    if (createdCount !== this.madeVariables.length) {
      this.fail('creates or disposes variables');
      return null;
    }
    // Replays create only the outputs, as the eager call must have done.
    if (engine.state.numTensors - this.tensorsBefore !== newOutputs.size + createdCount) {
      this.fail('keeps tensors it does not return');
      return null;
    }
    if (createdCount > 0) return {...this.asIfCreatedBefore(outputs, assigned), template};
    const outside = this.outside.map((id) => this.describeOutside(id));
    const key = callKey(this.ops, outputs, assigned);
    return {key, ops: this.ops, outside, outputs, assigned, template, elements: this.elements,
            witnessed: this.partsAgree()};
  }

  /**
   * A call that made variables (a training step's first, making the optimizer's slots), as
   * the next call will be if the call's JS does the same again: the variables are outside
   * tensors, and the ops that only computed their first values are gone. Such a description
   * (`witnessOnly`) is not compiled unless the next recording, which is compared with it,
   * agrees.
   */
  asIfCreatedBefore(outputs, assigned) {
    const made = new Map();
    for (const c of this.madeVariables) {
      const ref = this.refs.get(c.id);
      if (ref !== undefined) made.set(refKey(ref), c.variable);
    }
    // Ops every output of which is a first value, or is used only by such ops: backwards.
    const kept = new Array(this.ops.length).fill(true);
    const usedBy = new Map();
    this.ops.forEach(({inputs}, node) => {
      for (const ref of inputs) {
        const k = refKey(ref);
        if (!usedBy.has(k)) usedBy.set(k, []);
        usedBy.get(k).push(node);
      }
    });
    const ends = new Set(outputs.concat(assigned).map((o) => refKey(o.ref)));
    for (let node = this.ops.length - 1; node >= 0; node--) {
      let feedsFirstValue = false;
      let onlyThat = true;
      for (let output = 0; output < this.ops[node].outs.length; output++) {
        const k = node + '.' + output;
        const users = usedBy.get(k) || [];
        if (made.has(k)) feedsFirstValue = true;
        else if (users.length > 0 && users.every((u) => !kept[u])) feedsFirstValue = true;
        else if (users.length > 0 || ends.has(k)) onlyThat = false;
      }
      if (feedsFirstValue && onlyThat) kept[node] = false;
    }
    // What is left, renumbered, with outside tensors numbered by first use as a recording does.
    const nodeOf = new Array(this.ops.length);
    const ops = [];
    const outside = [];
    const outsideOf = new Map();
    const outsideRef = (k, describe) => {
      if (!outsideOf.has(k)) {
        outsideOf.set(k, outside.length);
        outside.push(describe());
      }
      return {outside: outsideOf.get(k)};
    };
    const remap = (ref) => {
      const k = refKey(ref);
      const variable = made.get(k);
      if (variable !== undefined) return outsideRef(k, () => ({variable, id: -1}));
      if (ref.outside !== undefined) {
        return outsideRef(k, () => this.describeOutside(this.outside[ref.outside]));
      }
      return {node: nodeOf[ref.node], output: ref.output};
    };
    this.ops.forEach(({op, inputs, outs}, node) => {
      if (!kept[node]) return;
      nodeOf[node] = ops.length;
      ops.push({op, inputs: inputs.map(remap), outs});
    });
    const remapped = (list) => list.map((o) => ({...o, ref: remap(o.ref)}));
    const madeAssigned = this.madeVariables
        .filter((c) => this.backend.idOf(c.variable) !== c.id)
        .map((c) => ({variable: c.variable, ref: this.refs.get(this.backend.idOf(c.variable))}));
    if (madeAssigned.some((a) => a.ref === undefined || a.ref.outside !== undefined)) {
      this.fail('assigns a variable a value none of its ops computed');
      return null;
    }
    const asIf = {outputs: remapped(outputs), assigned: remapped(assigned.concat(madeAssigned))};
    return {key: callKey(ops, asIf.outputs, asIf.assigned), ops, outside, ...asIf,
            elements: this.elements, witnessOnly: true};
  }

  /** What a replay feeds for outside tensor `id`: an input, a variable's value, or itself. */
  describeOutside(id) {
    const input = this.inputIds.get(id);
    if (input !== undefined) return {input, id};
    const variable = this.variables.get(id);
    if (variable !== undefined) return {variable, id};
    return {fixed: id, written: this.written.get(id)};
  }

  /** Drops the recording's hold on the outside tensors. */
  release() {
    for (const id of this.outside) this.backend.dropId(id);
    this.outside = [];
  }
}

/** A string two calls share when they ran the same ops, wired alike, to the same ends. */
function callKey(ops, outputs, assigned) {
  let key = '';
  for (const {op, inputs} of ops) key += op + '(' + inputs.map(refKey).join(',') + ')';
  key += '>' + outputs.map((o) => refKey(o.ref)).join(',');
  return key + '>' + assigned.map((a) => refKey(a.ref)).join(',');
}

function sameRef(a, b) {
  return a.outside === b.outside && a.node === b.node && a.output === b.output;
}

function refKey(ref) {
  return ref.outside !== undefined ? 'x' + ref.outside : ref.node + '.' + ref.output;
}

/**
 * Pushes the tensors of `value` (a tensor, or arrays / plain objects of them) onto `flat`;
 * returns how to rebuild it (`rebuild`), or undefined when it holds anything else.
 */
function flatten(value, flat) {
  if (value instanceof tfc.Tensor) {
    flat.push(value);
    return 0;
  }
  if (Array.isArray(value)) {
    const items = value.map((v) => flatten(v, flat));
    return items.includes(undefined) ? undefined : items;
  }
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const entries = {};
    for (const [k, v] of Object.entries(value)) {
      entries[k] = flatten(v, flat);
      if (entries[k] === undefined) return undefined;
    }
    return {entries};
  }
  return undefined;
}

/** The value `template` (from `flatten`) describes, with its tensors taken from `flat` in order. */
function rebuild(template, flat, at = {next: 0}) {
  if (template === 0) return flat[at.next++];
  if (Array.isArray(template)) return template.map((t) => rebuild(t, flat, at));
  const out = {};
  for (const [k, t] of Object.entries(template.entries)) out[k] = rebuild(t, flat, at);
  return out;
}

/** Whether two calls' outside tensors are the same, so one's graph computes the other. */
function sameOutside(a, b) {
  return a.length === b.length && a.every((x, k) => sameOutsideTensor(x, b[k]));
}

/** Whether two outside tensors' descriptions (`describeOutside`) are of the same tensor. */
function sameOutsideTensor(x, y) {
  if (x.input !== undefined || y.input !== undefined) return x.input === y.input;
  if (x.variable !== undefined || y.variable !== undefined) return x.variable === y.variable;
  return x.fixed === y.fixed || sameWritten(x.written, y.written);
}

/**
 * Ends running ahead: fills reserved ids with computed ones (`computed`: reserved -> computed),
 * then deletes those JS let go of and those no op took.
 */
function settleReserved(runner, ahead, computed) {
  runner.fillTensors(computed);
  for (const id of ahead.freed) runner.deleteTensor(id);
  for (let id = ahead.next; id < ahead.end; id++) runner.deleteTensor(id);
}

function sameWritten(a, b) {
  if (a === undefined || b === undefined || a.dtype !== b.dtype) return false;
  if (a.shape.length !== b.shape.length || a.shape.some((d, i) => d !== b.shape[i])) return false;
  const x = a.values;
  const y = b.values;
  if (x.length !== y.length) return false;
  if (ArrayBuffer.isView(x) && ArrayBuffer.isView(y)) {
    // Bytes, not elements: as fast as memcmp (tfjs's gradients write `ones` of their input's
    // size every call; compared element by element, a ResNet step spent 150 ms here), and
    // exact: -0 differs from 0, as Object.is has it.
    return bytesOf(x).equals(bytesOf(y));
  }
  for (let i = 0; i < x.length; i++) {
    if (Buffer.isBuffer(x[i]) ? !x[i].equals(y[i]) : !Object.is(x[i], y[i])) return false;
  }
  return true;
}

function bytesOf(view) {
  return Buffer.from(view.buffer, view.byteOffset, view.byteLength);
}

module.exports = {Recording, rebuild, sameOutside, sameRef};
