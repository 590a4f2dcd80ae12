'use strict';
// Compiles a table row (table.js) into a tfjs kernelFunc. One generic
// function serves all rows; per-row work (attr builders, attr lists that only
// depend on dtypes) is done once, at registration.

const {typeAttr} = require('../backend/tensorflow_backend');
const {upcastType} = require('../backend/dtypes');

function constAttr(name, spec) {
  return Object.freeze({name, type: spec.type, value: spec.value});
}

/** Flattens a number / number[] / number[][] into [shape, values]. */
function toShapeValues(v) {
  if (typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') {
    return [[], v];
  }
  if (v.length > 0 && Array.isArray(v[0])) {
    const flat = [];
    for (const row of v) for (const x of row) flat.push(x);
    return [[v.length, v[0].length], flat];
  }
  return [[v.length], v];
}

function toArrayKeep(k) {
  return Array.isArray(k) ? k : [k];
}

function compileRow(row) {
  const opName = row.op || row.kernel;
  const inputSpecs = row.inputs || ['x'];
  const attrEntries = Object.entries(row.attrs || {});
  const numOutputs = row.outputs || 1;
  const keep = row.keep == null ? null : toArrayKeep(row.keep);
  const floatOnly = row.floatOnly === true;
  const computeAs = row.computeAs ||
      (floatOnly ? {int32: 'float32', bool: 'float32'} : null);
  const resultDtype = row.resultDtype || null;
  const opFor = row.opFor || null;

  // Which input specs are tfjs tensors (by position among tensor inputs).
  const tensorNames = [];
  let hasList = false;
  for (const s of inputSpecs) {
    if (typeof s === 'string') tensorNames.push(s);
    else if (s.src === 'list') hasList = true;
  }

  // The upcast spec (at most one per row) decides input casts.
  let upcastIdx = null;
  let hasUpcast = false;
  for (const [, spec] of attrEntries) {
    if (spec.src === 'upcast') {
      upcastIdx = spec.inputs;
      hasUpcast = true;
    }
  }

  // Attr lists that depend only on input dtypes are cached per dtype key.
  const dtypeOnly = attrEntries.every(
      ([, s]) => s.src === 'const' || s.src === 'dtype' || s.src === 'upcast');
  const attrCache = new Map();

  function buildAttrs(tensors, attrs, upcastDtype) {
    const out = new Array(attrEntries.length);
    for (let i = 0; i < attrEntries.length; i++) {
      const [name, spec] = attrEntries[i];
      switch (spec.src) {
        case 'const':
          out[i] = spec.frozen || (spec.frozen = constAttr(name, spec));
          break;
        case 'dtype':
          out[i] = typeAttr(name, tensors[spec.input].dtype);
          break;
        case 'upcast':
          out[i] = typeAttr(name, upcastDtype);
          break;
        case 'attr': {
          let v = attrs[spec.key];
          if (spec.conv !== null) v = spec.conv(v, attrs, tensors);
          out[i] = spec.type === 'type' ? typeAttr(name, v) :
                                          {name, type: spec.type, value: v};
          break;
        }
        case 'fn': {
          const v = spec.fn(attrs, tensors);
          out[i] = spec.type === 'type' ? typeAttr(name, v) :
                                          {name, type: spec.type, value: v};
          break;
        }
        case 'count':
          out[i] = {name, type: 'int', value: tensors.length};
          break;
        default:
          throw new Error(`bad attr spec for ${name}`);
      }
    }
    return out;
  }

  function upcastOf(tensors) {
    const idx = upcastIdx;
    if (idx === null) {
      let t = tensors[0].dtype;
      for (let i = 1; i < tensors.length; i++) t = upcastType(t, tensors[i].dtype);
      return t;
    }
    let t = tensors[idx[0]].dtype;
    for (let i = 1; i < idx.length; i++) t = upcastType(t, tensors[idx[i]].dtype);
    return t;
  }

  function attrTensorId(spec, attrs, tensors, backend) {
    let v = spec.src === 'attrTensor' ? attrs[spec.key] : spec.value;
    if (spec.conv !== null && spec.conv !== undefined) v = spec.conv(v, attrs, tensors);
    const dt = typeof spec.dtype === 'string' ? spec.dtype :
        typeof spec.dtype === 'function' ? spec.dtype(attrs, tensors) :
                                           tensors[spec.dtype.input].dtype;
    const [shape, values] = toShapeValues(v);
    return backend.constant(dt, shape, values);
  }

  function kernelFunc({inputs, attrs, backend}) {
    // Tensor inputs, in row order.
    let tensors;
    let inputsArray = null;
    if (hasList) {
      tensors = inputsArray = Array.isArray(inputs) ? inputs : Object.values(inputs);
    } else {
      tensors = new Array(tensorNames.length);
      for (let i = 0; i < tensorNames.length; i++) {
        const t = inputs[tensorNames[i]];
        if (t == null) {
          throw new Error(`${row.kernel}: missing input '${tensorNames[i]}'`);
        }
        tensors[i] = t;
      }
    }

    let temps = null;
    // Ops that lack a kernel for some dtypes compute them in another one
    // (float-only ops compute int32/bool inputs in float32).
    let origDtype = null;
    if (computeAs !== null) {
      // It applies to the upcast inputs, else to the first.
      const nc = hasUpcast ? tensors.length : 1;
      for (let i = 0; i < nc; i++) {
        const as = computeAs[tensors[i].dtype];
        if (as !== undefined) {
          if (temps === null) temps = [];
          if (tensors === inputsArray) tensors = tensors.slice();
          if (origDtype === null) origDtype = tensors[i].dtype;
          const c = backend.cast(tensors[i], as);
          temps.push(c);
          tensors[i] = c;
        }
      }
    }

    // Input casts for upcast rows.
    let upcastDtype = null;
    if (hasUpcast) {
      upcastDtype = upcastOf(tensors);
      const idx = upcastIdx;
      const n = idx === null ? tensors.length : idx.length;
      for (let k = 0; k < n; k++) {
        const i = idx === null ? k : idx[k];
        if (tensors[i].dtype !== upcastDtype) {
          if (temps === null) temps = [];
          if (tensors === inputsArray) tensors = tensors.slice();
          const c = backend.cast(tensors[i], upcastDtype);
          temps.push(c);
          tensors[i] = c;
        }
      }
    }

    try {
      // Attrs.
      let attrList;
      if (dtypeOnly) {
        let key = '';
        for (let i = 0; i < tensors.length; i++) key += tensors[i].dtype + ',';
        attrList = attrCache.get(key);
        if (attrList === undefined) {
          attrList = buildAttrs(tensors, attrs, upcastDtype);
          attrCache.set(key, attrList);
        }
      } else {
        attrList = buildAttrs(tensors, attrs, upcastDtype);
      }

      // Input ids, in the op's order.
      const ids = [];
      let ti = 0;
      for (let i = 0; i < inputSpecs.length; i++) {
        const s = inputSpecs[i];
        if (typeof s === 'string') {
          ids.push(backend.idOf(tensors[ti++]));
        } else if (s.src === 'list') {
          for (let j = 0; j < tensors.length; j++) ids.push(backend.idOf(tensors[j]));
        } else {
          ids.push(attrTensorId(s, attrs, tensors, backend));
        }
      }

      const n = typeof numOutputs === 'function' ? numOutputs(attrs, tensors) : numOutputs;
      const op = opFor !== null && opFor[tensors[0].dtype] || opName;
      const outs = backend.exec(op, attrList, ids, n);
      if (origDtype !== null && resultDtype === null && outs[0].dtype !== origDtype) {
        const back = backend.cast(outs[0], origDtype);
        backend.free(outs[0]);
        outs[0] = back;
      }
      if (keep !== null) {
        for (let i = 0; i < outs.length; i++) {
          if (keep.indexOf(i) < 0) backend.free(outs[i]);
        }
        if (keep.length === 1) return backend.wrap(outs[keep[0]]);
        return keep.map(i => backend.wrap(outs[i]));
      }
      if (outs.length === 1 && numOutputs === 1) {
        return backend.wrap(outs[0]);
      }
      return outs.map(o => backend.wrap(o));
    } finally {
      if (temps !== null) for (const t of temps) backend.free(t);
    }
  }

  // Fast paths for the most common shapes of rows: one or two named tensor
  // inputs, attrs depending on dtypes only, one output.
  const simple = dtypeOnly && !hasList && numOutputs === 1 && keep === null &&
      inputSpecs.every(s => typeof s === 'string');
  if (simple && inputSpecs.length === 1 && !hasUpcast) {
    const name0 = inputSpecs[0];
    return function unaryKernel({inputs, attrs, backend}) {
      const x = inputs[name0];
      if (x == null || (computeAs !== null && computeAs[x.dtype] !== undefined)) {
        return kernelFunc({inputs, attrs, backend});
      }
      let attrList = attrCache.get(x.dtype);
      if (attrList === undefined) {
        attrList = buildAttrs([x], attrs, null);
        attrCache.set(x.dtype, attrList);
      }
      return backend.wrap(backend.exec(opName, attrList, [backend.idOf(x)], 1)[0]);
    };
  }
  if (simple && inputSpecs.length === 2) {
    const name0 = inputSpecs[0], name1 = inputSpecs[1];
    const binCache = new Map();
    return function binaryKernel({inputs, attrs, backend}) {
      const a = inputs[name0], b = inputs[name1];
      if (a == null || b == null || (hasUpcast && a.dtype !== b.dtype) ||
          (computeAs !== null && (computeAs[a.dtype] !== undefined ||
                                  computeAs[b.dtype] !== undefined)) ||
          (opFor !== null && opFor[a.dtype] !== undefined)) {
        return kernelFunc({inputs, attrs, backend});
      }
      const key = hasUpcast ? a.dtype : a.dtype + ',' + b.dtype;
      let attrList = binCache.get(key);
      if (attrList === undefined) {
        attrList = buildAttrs([a, b], attrs, a.dtype);
        binCache.set(key, attrList);
      }
      return backend.wrap(backend.exec(
          opName, attrList, [backend.idOf(a), backend.idOf(b)], 1)[0]);
    };
  }
  return kernelFunc;
}

module.exports = {compileRow};
