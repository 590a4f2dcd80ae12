'use strict';
// A binary TensorFlow GraphDef (`model.pb`, as tfjs-converter wrote graph models before
// model.json existed) decoded into the JSON form that `model.json`'s `modelTopology` holds
// (protobuf's JSON mapping: camelCase names, int64 as strings, bytes as base64, enums by
// name), which tfjs-converter's GraphModel reads. Only the messages a graph's nodes use.

const {Reader, ProtoError, WIRE_LEN, WIRE_I32, WIRE_I64} = require('./proto');
const {TF_DTYPE_NAMES} = require('../backend/dtypes');

// A message schema: field number -> [JSON name, kind, repeated]. A kind is a scalar kind
// below or another schema; `map` entries are schemas with key 1 and value 2.
const DIM = {1: ['size', 'int64'], 2: ['name', 'string']};
const SHAPE = {2: ['dim', DIM, true], 3: ['unknownRank', 'bool']};
const TENSOR = {
  1: ['dtype', 'dtype'], 2: ['tensorShape', SHAPE], 3: ['versionNumber', 'int32'],
  4: ['tensorContent', 'bytes'], 5: ['floatVal', 'float', true], 6: ['doubleVal', 'double', true],
  7: ['intVal', 'int32', true], 8: ['stringVal', 'bytes', true],
  9: ['scomplexVal', 'float', true], 10: ['int64Val', 'int64', true],
  11: ['boolVal', 'bool', true], 13: ['halfVal', 'int32', true],
};
const NAME_ATTR_LIST = {1: ['name', 'string']};
const LIST = {
  2: ['s', 'bytes', true], 3: ['i', 'int64', true], 4: ['f', 'float', true],
  5: ['b', 'bool', true], 6: ['type', 'dtype', true], 7: ['shape', SHAPE, true],
  8: ['tensor', TENSOR, true], 9: ['func', NAME_ATTR_LIST, true],
};
const ATTR_VALUE = {
  1: ['list', LIST], 2: ['s', 'bytes'], 3: ['i', 'int64'], 4: ['f', 'float'], 5: ['b', 'bool'],
  6: ['type', 'dtype'], 7: ['shape', SHAPE], 8: ['tensor', TENSOR], 9: ['placeholder', 'string'],
  10: ['func', NAME_ATTR_LIST],
};
NAME_ATTR_LIST[2] = ['attr', {map: ATTR_VALUE}, true];
const NODE = {
  1: ['name', 'string'], 2: ['op', 'string'], 3: ['input', 'string', true],
  4: ['device', 'string'], 5: ['attr', {map: ATTR_VALUE}, true],
};
const VERSIONS = {1: ['producer', 'int32'], 2: ['minConsumer', 'int32'],
                  3: ['badConsumers', 'int32', true]};
const GRAPH = {1: ['node', NODE, true], 4: ['versions', VERSIONS], 2: ['library', 'library']};

/** Reads one scalar of `kind` with wire type `wire`. */
function scalar(r, kind, wire) {
  switch (kind) {
    case 'string': return r.string();
    case 'bytes': return Buffer.from(r.bytesField()).toString('base64');
    case 'int64': return BigInt.asIntN(64, r.varintBig()).toString();
    case 'int32': return r.varint();
    case 'bool': return r.varint() !== 0;
    case 'dtype': {
      const code = r.varint();
      return TF_DTYPE_NAMES[code] || code;
    }
    case 'float': return wire === WIRE_I32 ? r.float32() : NaN;
    case 'double': return wire === WIRE_I64 ? r.float64() : NaN;
    default: throw new ProtoError(`unknown field kind ${kind}`);
  }
}

/** Whether a scalar kind is packable (numbers, bools and enums; not strings or bytes). */
const PACKABLE = new Set(['int64', 'int32', 'bool', 'dtype', 'float', 'double']);

function decode(r, schema) {
  const out = {};
  r.each((field, wire, rr) => {
    const spec = schema[field];
    if (spec === undefined) return false;
    const [name, kind, repeated] = spec;
    if (kind === 'library') {
      // An empty library (a set but empty field) holds nothing tfjs needs.
      if (rr.sub().done()) return;
      throw new ProtoError('the GraphDef has a function library, which tfjs graph models ' +
                           'read from model.json only: convert the model with tensorflowjs_converter');
    }
    let values;
    if (typeof kind === 'object' && kind.map !== undefined) {
      const entry = decode(rr.sub(), {1: ['key', 'string'], 2: ['value', kind.map]});
      out[name] = out[name] || {};
      out[name][entry.key || ''] = entry.value || {};
      return;
    } else if (typeof kind === 'object') {
      values = [decode(rr.sub(), kind)];
    } else if (PACKABLE.has(kind) && wire === WIRE_LEN) {
      const packed = rr.sub();
      const wireOf = kind === 'float' ? WIRE_I32 : kind === 'double' ? WIRE_I64 : 0;
      values = [];
      while (!packed.done()) values.push(scalar(packed, kind, wireOf));
    } else {
      values = [scalar(rr, kind, wire)];
    }
    if (repeated) out[name] = (out[name] || []).concat(values);
    else out[name] = values[values.length - 1];
  });
  return out;
}

/** The JSON `modelTopology` of a serialized GraphDef; throws ProtoError on bad bytes. */
function decodeGraphDef(bytes) {
  const graph = decode(new Reader(bytes), GRAPH);
  if (graph.node === undefined || graph.node.length === 0) {
    throw new ProtoError('the GraphDef has no nodes');
  }
  return graph;
}

module.exports = {decodeGraphDef};
