'use strict';
// Bad input never reaches TF unchecked: each case throws a JS error with a clear message.
const test = require('node:test');
const assert = require('node:assert/strict');
const binding = require('../binding.js');

const T = (dtype) => ({name: 'T', type: 'type', value: dtype});
const f32 = (values) => binding.createTensor([values.length], 'float32', new Float32Array(values));

function detachedArray() {
  const array = new Float32Array(4);
  structuredClone(array.buffer, {transfer: [array.buffer]});
  return array;
}

const deleted = f32([1]);
binding.deleteTensor(deleted);

// [description, call, expected error class, code, message pattern]
const cases = [
  ['unknown dtype', () => binding.createTensor([1], 'float17', new Float32Array(1)), TypeError, 'ERR_INVALID_ARG_TYPE', /unknown dtype 'float17'/],
  ['dtype vs array type', () => binding.createTensor([2], 'int32', new Float32Array(2)), TypeError, 'ERR_INVALID_ARG_TYPE', /int32 tensor must be a Int32Array, got Float32Array/],
  ['data not a typed array', () => binding.createTensor([2], 'float32', [1, 2]), TypeError, 'ERR_INVALID_ARG_TYPE', /must be a Float32Array, got object/],
  ['too few elements for the shape', () => binding.createTensor([2, 3], 'float32', new Float32Array(5)), RangeError, 'ERR_OUT_OF_RANGE', /needs 6 Float32Array elements, got 5/],
  ['too many elements for the shape', () => binding.createTensor([2], 'float32', new Float32Array(3)), RangeError, 'ERR_OUT_OF_RANGE', /needs 2/],
  ['negative dim', () => binding.createTensor([-1, 2], 'float32', new Float32Array(2)), RangeError, 'ERR_OUT_OF_RANGE', /shape\[0\] must be >= 0, got -1/],
  ['fractional dim', () => binding.createTensor([1.5], 'float32', new Float32Array(1)), RangeError, 'ERR_OUT_OF_RANGE', /shape\[0\] must be an integer/],
  ['overflowing dims', () => binding.createTensor([2 ** 40, 2 ** 40], 'float32', new Float32Array(1)), RangeError, 'ERR_OUT_OF_RANGE', /too many elements/],
  ['shape not an array', () => binding.createTensor(3, 'float32', new Float32Array(3)), TypeError, 'ERR_INVALID_ARG_TYPE', /shape must be an array, got number/],
  ['dim not a number', () => binding.createTensor(['2'], 'float32', new Float32Array(2)), TypeError, 'ERR_INVALID_ARG_TYPE', /shape\[0\] must be a number, got string/],
  ['detached ArrayBuffer', () => binding.createTensor([4], 'float32', detachedArray()), TypeError, 'ERR_INVALID_ARG_TYPE', /detached/],
  ['complex64 needs interleaved pairs', () => binding.createTensor([2], 'complex64', new Float32Array(2)), RangeError, 'ERR_OUT_OF_RANGE', /needs 4/],
  ['string count vs shape', () => binding.createTensor([2], 'string', [new Uint8Array(1)]), RangeError, 'ERR_OUT_OF_RANGE', /needs 2 strings, got 1/],
  ['string item not bytes', () => binding.createTensor([1], 'string', ['abc']), TypeError, 'ERR_INVALID_ARG_TYPE', /data\[0\] must be a Uint8Array/],
  ['resource tensors from JS', () => binding.createTensor([1], 'resource', new Uint8Array(1)), TypeError, 'ERR_INVALID_ARG_TYPE', /cannot create a resource tensor/],
  ['alloc of strings', () => binding.alloc('string', 3), TypeError, 'ERR_INVALID_ARG_TYPE', /not backed by a typed array/],
  ['alloc of a negative length', () => binding.alloc('float32', -1), RangeError, 'ERR_OUT_OF_RANGE', /length must be >= 0/],
  ['alloc beyond memory', () => binding.alloc('float64', 2 ** 52), RangeError, 'ERR_OUT_OF_RANGE', /cannot allocate/],
  ['unknown tensor id', () => binding.tensorDataSync(123456789), Error, 'ERR_INVALID_ARG_VALUE', /tensor id 123456789 is unknown or was deleted/],
  ['deleted tensor id', () => binding.tensorDataSync(deleted), Error, 'ERR_INVALID_ARG_VALUE', /unknown or was deleted/],
  ['deleting twice', () => binding.deleteTensor(deleted), Error, 'ERR_INVALID_ARG_VALUE', /unknown or was deleted/],
  ['negative tensor id', () => binding.deleteTensor(-3), RangeError, 'ERR_OUT_OF_RANGE', /must be a tensor id/],
  ['unknown op', () => binding.executeOp('NoSuchOp', [], [], 1), Error, 'NOT_FOUND', /NoSuchOp: .*NoSuchOp/],
  ['op name not a string', () => binding.executeOp(42, [], [], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /op name must be a string/],
  ['attr of the wrong type', () => binding.executeOp('AddV2', [{name: 'T', type: 'int', value: 1}], [f32([1]), f32([1])], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /AddV2 attr 'T' is declared as type, given int/],
  ['attr that the op lacks', () => binding.executeOp('AddV2', [{name: 'bogus', type: 'int', value: 1}], [f32([1]), f32([1])], 1), Error, 'INVALID_ARGUMENT', /AddV2: .*bogus/],
  ['unknown attr type name', () => binding.executeOp('AddV2', [{name: 'T', type: 'tensor', value: 1}], [], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /not one of string, int, float, bool, type, shape/],
  ['list given for a scalar attr', () => binding.executeOp('LeakyRelu', [T('float32'), {name: 'alpha', type: 'float', value: [1, 2]}], [f32([1])], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /takes one float, given an array/],
  ['scalar given for a list attr', () => binding.executeOp('Conv2D', [T('float32'), {name: 'strides', type: 'int', value: 1}], [], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /'strides' must be an array/],
  ['attr value of the wrong JS type', () => binding.executeOp('MatMul', [T('float32'), {name: 'transpose_a', type: 'bool', value: 'yes'}], [], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /transpose_a' must be a boolean, got string/],
  ['type attr with an unknown dtype', () => binding.executeOp('AddV2', [T('float99')], [], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /unknown dtype 'float99'/],
  ['shape attr with a dim below -1', () => binding.executeOp('EnsureShape', [T('float32'), {name: 'shape', type: 'shape', value: [-2]}], [f32([1])], 1), RangeError, 'ERR_OUT_OF_RANGE', /must be >= -1/],
  ['attrs not an array', () => binding.executeOp('AddV2', {T: 'float32'}, [], 1), TypeError, 'ERR_INVALID_ARG_TYPE', /attrs must be an array/],
  ['input of the wrong dtype', () => binding.executeOp('AddV2', [T('int32')], [f32([1]), f32([1])], 1), Error, 'INVALID_ARGUMENT', /AddV2: .*expected to be a int32 tensor/],
  ['too few inputs', () => binding.executeOp('AddV2', [T('float32')], [f32([1])], 1), Error, 'INVALID_ARGUMENT', /AddV2: /],
  ['incompatible shapes', () => binding.executeOp('AddV2', [T('float32')], [f32([1, 2]), f32([1, 2, 3])], 1), Error, 'INVALID_ARGUMENT', /Incompatible shapes/],
  ['MatMul of mismatched inner dims', () => binding.executeOp('MatMul', [T('float32')], [binding.createTensor([2, 3], 'float32', new Float32Array(6)), binding.createTensor([2, 3], 'float32', new Float32Array(6))], 1), Error, 'INVALID_ARGUMENT', /MatMul: /],
  ['a deleted tensor as input', () => binding.executeOp('Neg', [T('float32')], [deleted], 1), Error, 'ERR_INVALID_ARG_VALUE', /Neg input 0: tensor id \d+ is unknown or was deleted/],
  ['numOutputs below what the op makes', () => binding.executeOp('Split', [T('float32'), {name: 'num_split', type: 'int', value: 2}], [binding.createTensor([], 'int32', new Int32Array([0])), f32([1, 2])], 1), Error, 'INVALID_ARGUMENT', /Split: /],
  ['N attr that disagrees with the inputs', () => binding.executeOp('ConcatV2', [T('float32'), {name: 'N', type: 'int', value: 3}, {name: 'Tidx', type: 'type', value: 'int32'}], [f32([1]), f32([2]), binding.createTensor([], 'int32', new Int32Array([0]))], 1), Error, 'INVALID_ARGUMENT', /ConcatV2: takes 4 inputs with these attrs \(its inputs: values, axis\), given 3/],
  ['required attrs missing', () => binding.executeOp('Conv2D', [T('float32')], [f32([1]), f32([1])], 1), Error, 'INVALID_ARGUMENT', /Conv2D: missing attrs that have no default: 'strides', 'padding'/],
  ['a negative list length attr', () => binding.executeOp('AddN', [T('float32'), {name: 'N', type: 'int', value: -1}], [], 1), Error, 'INVALID_ARGUMENT', /AddN: /],
  ['a shape attr of rank > 254', () => binding.executeOp('EnsureShape', [T('float32'), {name: 'shape', type: 'shape', value: new Array(300).fill(1)}], [f32([1])], 1), Error, 'INVALID_ARGUMENT', /over the limit of 254/],
  ['an op output too large to exist', () => binding.executeOp('Fill', [T('float32'), {name: 'index_type', type: 'type', value: 'int32'}], [binding.createTensor([3], 'int32', new Int32Array([1e9, 1e9, 1e9])), binding.createTensor([], 'float32', new Float32Array([1]))], 1), Error, 'INVALID_ARGUMENT', /Fill: .*2\*\*63/],
  ['an int attr beyond int32 where TF wants int32', () => binding.executeOp('OneHot', [T('float32'), {name: 'axis', type: 'int', value: 2 ** 40}, {name: 'TI', type: 'type', value: 'int32'}], [binding.createTensor([1], 'int32', new Int32Array([0])), binding.createTensor([], 'int32', new Int32Array([3])), f32([1]), f32([0])], 1), Error, 'INVALID_ARGUMENT', /out of range for an int32/],
  ['reading a resource handle', () => binding.tensorDataSync(binding.executeOp('VarHandleOp', [{name: 'dtype', type: 'type', value: 'float32'}, {name: 'shape', type: 'shape', value: [1]}, {name: 'container', type: 'string', value: ''}, {name: 'shared_name', type: 'string', value: 'v'}], [], 1)[0].id), TypeError, 'ERR_INVALID_ARG_TYPE', /resource tensor holds no readable data/],
  ['a prepared op that does not exist', () => binding.runPreparedOp(99999, new Float64Array(4), 0, 1), Error, 'ERR_INVALID_ARG_VALUE', /prepared op 99999 does not exist/],
  ['a prepared op without a Float64Array', () => binding.runPreparedOp(binding.prepareOp('Neg', [T('float32')]), [1], 1, 1), TypeError, 'ERR_INVALID_ARG_TYPE', /io must be a Float64Array/],
  ['an io array too small for the outputs', () => binding.runPreparedOp(binding.prepareOp('Neg', [T('float32')]), new Float64Array([binding.createTensor([2, 2], 'float32', new Float32Array(4))]), 1, 1), RangeError, 'ERR_OUT_OF_RANGE', /too few for the outputs/],
  ['prepareOp with an attr of the wrong type', () => binding.prepareOp('AddV2', [{name: 'T', type: 'bool', value: true}]), TypeError, 'ERR_INVALID_ARG_TYPE', /declared as type, given bool/],
  ['numOutputs out of range', () => binding.executeOp('Neg', [T('float32')], [f32([1])], -1), RangeError, 'ERR_OUT_OF_RANGE', /numOutputs must be in/],
];

test(`bad input: ${cases.length} cases, each with its error`, () => {
  assert.ok(cases.length >= 20);
  for (const [what, call, ErrorClass, code, message] of cases) {
    assert.throws(call, (err) => {
      assert.ok(err instanceof ErrorClass, `${what}: ${err.constructor.name} is not a ${ErrorClass.name} (${err.message})`);
      assert.equal(err.code, code, `${what}: code ${err.code} (${err.message})`);
      assert.match(err.message, message, what);
      return true;
    }, what);
  }
});

test('a call re-entered from JS it runs (a getter of its shape) throws, and the outer call goes on', () => {
  // The binding borrows its per-env state for one call at a time; a second call made from
  // inside the first (here by an array element's getter that the shape read runs) is refused
  // with an error rather than given the same state to change.
  const shape = [2];
  let inner = null;
  Object.defineProperty(shape, 0, {get() {
    try {
      f32([1]);
    } catch (e) {
      inner = e;
    }
    return 2;
  }});
  const id = binding.createTensor(shape, 'float32', new Float32Array([3, 4]));
  assert.ok(inner instanceof Error);
  assert.match(inner.message, /called again while one of its calls was running/);
  assert.deepEqual(Array.from(binding.tensorDataSync(id)), [3, 4]);
  binding.deleteTensor(id);
});

test('the binding keeps working after every error', () => {
  const [out] = binding.executeOp('AddV2', [T('float32')], [f32([1]), f32([2])], 1);
  assert.deepEqual(Array.from(binding.tensorDataSync(out.id)), [3]);
});

test('an io array too small frees the outputs it could not report', () => {
  const before = binding.stats().liveTensors;
  const input = binding.createTensor([2, 2], 'float32', new Float32Array(4));
  const neg = binding.prepareOp('Neg', [T('float32')]);
  assert.throws(() => binding.runPreparedOp(neg, new Float64Array([input]), 1, 1), RangeError);
  binding.deleteTensor(input);
  assert.equal(binding.stats().liveTensors, before);
});
