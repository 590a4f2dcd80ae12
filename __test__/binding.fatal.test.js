'use strict';
// Calls that TF itself answers with a crash, an abort or a hang: the binding checks each call
// against the op's definition (and a few kernels' own rules) first, so each is a JS Error.
// Each case runs in its own process, so that a regression shows as that case's signal or
// timeout instead of taking the test runner down.
const test = require('node:test');
const assert = require('node:assert/strict');
const path = require('node:path');
const {execFile} = require('node:child_process');

const bindingPath = path.join(__dirname, '..', 'binding.js');

// Helpers the cases' source uses, defined in each child.
const prelude = `
const binding = require(${JSON.stringify(bindingPath)});
const T = (dtype) => ({ name: 'T', type: 'type', value: dtype });
const int = (name, value) => ({ name, type: 'int', value });
const str = (name, value) => ({ name, type: 'string', value });
const f32 = (shape) => binding.createTensor(shape, 'float32', new Float32Array(shape.reduce((a, b) => a * b, 1)));
const i32 = (values) => binding.createTensor([values.length], 'int32', new Int32Array(values));
const scalarI32 = (value) => binding.createTensor([], 'int32', new Int32Array([value]));
const f64 = (shape) => binding.createTensor(shape, 'float64', new Float64Array(shape.reduce((a, b) => a * b, 1)));
const c64 = (shape) => binding.createTensor(shape, 'complex64', new Float32Array(2 * shape.reduce((a, b) => a * b, 1)));
// A file where a directory belongs (DumpTensor), and a file that holds no records (RecordInput).
const scratch = require('fs').mkdtempSync(require('path').join(require('os').tmpdir(), 'fatal-'));
require('fs').writeFileSync(scratch + '/file', 'x');
const prepared = (name, attrs, ids, numOutputs) => {
  const io = new Float64Array(64);
  io.set(ids);
  return binding.runPreparedOp(binding.prepareOp(name, attrs), io, ids.length, numOutputs);
};
`;

// [what, call (source), error code, message pattern]
const cases = [
  ['more inputs than the op takes (SIGSEGV)', `binding.executeOp('AddV2', [T('float32')], [f32([1]), f32([1]), f32([1])], 1)`,
    'INVALID_ARGUMENT', /AddV2: takes 2 inputs with these attrs \(its inputs: x, y\), given 3/],
  ['more inputs than the op takes, prepared (SIGSEGV)', `prepared('AddV2', [T('float32')], [f32([1]), f32([1]), f32([1])], 1)`,
    'INVALID_ARGUMENT', /AddV2: takes 2 inputs .*given 3/],
  ['a required attr left out (abort in the op rewrite)', `binding.executeOp('Conv2DBackpropInput', [T('float32'), int('strides', [1, 1, 1, 1])], [i32([1, 4, 4, 1]), f32([2, 2, 1, 1]), f32([1, 3, 3, 1])], 1)`,
    'INVALID_ARGUMENT', /Conv2DBackpropInput: missing attrs that have no default: 'padding'/],
  ['Conv2DBackpropFilter strides of length 2 (CHECK)', `binding.executeOp('Conv2DBackpropFilter', [T('float32'), int('strides', [1, 1]), str('padding', 'VALID')], [f32([1, 4, 4, 1]), i32([2, 2, 1, 1]), f32([1, 3, 3, 1])], 1)`,
    'INVALID_ARGUMENT', /Conv2DBackpropFilter: attr 'strides' must have 4 items, given 2/],
  ['Conv2DBackpropInput strides of length 3 (CHECK)', `binding.executeOp('Conv2DBackpropInput', [T('float32'), int('strides', [1, 1, 1]), str('padding', 'VALID')], [i32([1, 4, 4, 1]), f32([2, 2, 1, 1]), f32([1, 3, 3, 1])], 1)`,
    'INVALID_ARGUMENT', /attr 'strides' must have 4 items, given 3/],
  ['depthwise backprop strides of length 1 (CHECK)', `binding.executeOp('DepthwiseConv2dNativeBackpropFilter', [T('float32'), int('strides', [1]), str('padding', 'VALID')], [f32([1, 4, 4, 1]), i32([2, 2, 1, 1]), f32([1, 3, 3, 1])], 1)`,
    'INVALID_ARGUMENT', /DepthwiseConv2dNativeBackpropFilter: attr 'strides' must have 4 items, given 1/],
  ['LSTMBlockCell with a scalar cs_prev (CHECK)', `binding.executeOp('LSTMBlockCell', [T('float32')], [f32([1, 2]), f32([]), f32([1, 3]), f32([5, 12]), f32([3]), f32([3]), f32([3]), f32([12])], 7)`,
    'INVALID_ARGUMENT', /LSTMBlockCell: input 1 must have rank 2, given rank 0/],
  ['QuantizeAndDequantizeV3 with axis -3 (CHECK)', `binding.executeOp('QuantizeAndDequantizeV3', [T('float32'), int('axis', -3)], [f32([2, 2, 2]), f32([]), f32([]), scalarI32(8)], 1)`,
    'INVALID_ARGUMENT', /QuantizeAndDequantizeV3: attr 'axis' must be at least -1, given -3/],
  ['AddN with N 1e9 and no inputs (bad_alloc)', `binding.executeOp('AddN', [T('float32'), int('N', 1e9)], [], 1)`,
    'INVALID_ARGUMENT', /AddN: takes 1000000000 inputs .*given 0/],
  ['the Abort op', `binding.executeOp('Abort', [], [], 0)`,
    'ERR_INVALID_ARG_VALUE', /Abort: the op ends the process, so the binding does not run it/],
  ['Unstage, which blocks forever', `binding.executeOp('Unstage', [{ name: 'dtypes', type: 'type', value: ['float32'] }], [], 1)`,
    'ERR_INVALID_ARG_VALUE', /Unstage: the op blocks until another op stages data/],
  ['Unstage, prepared', `binding.prepareOp('Unstage', [{ name: 'dtypes', type: 'type', value: ['float32'] }])`,
    'ERR_INVALID_ARG_VALUE', /Unstage: the op blocks/],
  // Found by scripts/fuzz.js.
  ['more outputs than numOutputs (Unpack of num 2^31-1 hung)', `binding.executeOp('Unpack', [int('num', 2 ** 31 - 1)], [c64([])], 1)`,
    'INVALID_ARGUMENT', /Unpack: makes 2147483647 outputs with these attrs, more than numOutputs 1/],
  ['LSTMBlockCellGrad of a rank-1 h_prev (CHECK)', `binding.executeOp('LSTMBlockCellGrad', [{ name: 'use_peephole', type: 'bool', value: true }], [[0, 2], [0, 1], [0], [], [0, 3], [4, 2, 1, 4], [0, 1, 2, 2], [2], [0, 2, 3, 4], [3], [1], [1, 1, 3], [], [2, 1, 0, 1], [], [4, 1]].map(f32), 16)`,
    'INVALID_ARGUMENT', /LSTMBlockCellGrad: input 2 must have rank 2, given rank 1/],
  ['TensorScatterUpdate of mismatched updates (CHECK; TF\'s shape function says why)', `binding.executeOp('TensorScatterUpdate', [T('float32'), { name: 'Tindices', type: 'type', value: 'int32' }], [f32([0, 1, 1, 4]), binding.createTensor([0, 2, 2, 1], 'int32', new Int32Array(0)), f32([0])], 1)`,
    'INVALID_ARGUMENT', /TensorScatterUpdate: Dimensions \[0,3\) of indices/],
  ['QuantizeAndDequantizeV3 of a [1,2,1,1] input_max (CHECK)', `binding.executeOp('QuantizeAndDequantizeV3', [T('float64')], [f64([1]), f64([]), f64([1, 2, 1, 1]), scalarI32(8)], 1)`,
    'INVALID_ARGUMENT', /QuantizeAndDequantizeV3: Shapes must be equal rank/],
  ['IRFFT of FFT length 0 (assertion in the FFT library)', `binding.executeOp('IRFFT', [{ name: 'Treal', type: 'type', value: 'float32' }, { name: 'Tcomplex', type: 'type', value: 'complex64' }], [c64([3, 4]), i32([0])], 1)`,
    'INVALID_ARGUMENT', /IRFFT: input 1 must hold values above 0, holds 0/],
  ['AudioSpectrogram of window_size -1 (std::length_error)', `binding.executeOp('AudioSpectrogram', [int('window_size', -1), int('stride', 3)], [f32([2, 3])], 1)`,
    'INVALID_ARGUMENT', /AudioSpectrogram: attr 'window_size' must be at least 2, given -1/],
  ['Conv2D of a rank-2 input (CHECK)', `binding.executeOp('Conv2D', [T('float32'), int('strides', [1, 1, 2, 1]), str('padding', 'VALID')], [f32([1, 3]), f32([1, 1])], 1)`,
    'INVALID_ARGUMENT', /Conv2D: input 0 must have rank 4, given rank 2/],
  ['FakeQuantWithMinMaxVarsPerChannel of a scalar input (CHECK)', `binding.executeOp('FakeQuantWithMinMaxVarsPerChannel', [], [f32([]), f32([3]), f32([0])], 1)`,
    'INVALID_ARGUMENT', /FakeQuantWithMinMaxVarsPerChannel: /],
  ['CustomAggregator of num_bins -1 (CHECK)', `binding.executeOp('CustomAggregator', [str('id', 'a'), int('calibration_method', 3), int('num_bins', -1)], [f32([4, 4])], 4)`,
    'INVALID_ARGUMENT', /CustomAggregator: attr 'num_bins' must be at least 0, given -1/],
  ['SparseCrossHashed of a non-scalar num_buckets (CHECK)', `binding.executeOp('SparseCrossHashed', [int('N', 0), { name: 'sparse_types', type: 'type', value: [] }, { name: 'dense_types', type: 'type', value: [] }], [binding.createTensor([3, 1], 'int64', new BigInt64Array(3)), binding.createTensor([4, 0], 'bool', new Uint8Array(0)), binding.createTensor([1, 2, 2], 'int64', new BigInt64Array(4))], 3)`,
    'INVALID_ARGUMENT', /SparseCrossHashed: input 0 must be a scalar, given rank 2/],
  ['RandomPoissonV2 of rate NaN, which never ends', `binding.executeOp('RandomPoissonV2', [{ name: 'dtype', type: 'type', value: 'float32' }], [i32([2]), binding.createTensor([1], 'float32', new Float32Array([NaN]))], 1)`,
    'INVALID_ARGUMENT', /RandomPoissonV2: input 1 must hold no NaN/],
  ['DumpTensor into a path that is not a directory (SIGSEGV)', `binding.executeOp('DumpTensor', [str('log_dir_path', scratch + '/file'), str('file_name', 'y'), T('int64'), { name: 'enabled', type: 'bool', value: false }, str('func_name', 'f'), str('node_name', 'n')], [binding.createTensor([1], 'int64', new BigInt64Array(1))], 0)`,
    'ERR_INVALID_ARG_VALUE', /DumpTensor: the op belongs to TF's debugger and crashes when it cannot write its dump/],
  ['_ScopedAllocator (SIGFPE)', `binding.executeOp('_ScopedAllocator', [{ name: 'shapes', type: 'shape', value: [[1, 2, 2, 1], [4, 1, 3], [2, 2], [0, 2, 0, 3]] }, { name: 'shape', type: 'shape', value: [4] }, T('string'), str('sa_name', ''), int('id', 0), int('expected_call_count', 3)], [], 1)`,
    'ERR_INVALID_ARG_VALUE', /_ScopedAllocator: the op belongs to Grappler's scoped allocator/],
  ['Conv3D of a rank-2 input (CHECK)', `binding.executeOp('Conv3D', [T('float32'), int('strides', [1, 1, 1, 1, 1]), str('padding', 'VALID')], [f32([2, 2]), f32([1, 1, 1, 1, 1])], 1)`,
    'INVALID_ARGUMENT', /Conv3D: input 0 must have rank 5, given rank 2/],
  ['ScatterNd of a scalar shape', `binding.executeOp('ScatterNd', [T('float32'), { name: 'Tindices', type: 'type', value: 'int32' }], [binding.createTensor([1, 1], 'int32', new Int32Array(1)), f32([1]), scalarI32(3)], 1)`,
    'INVALID_ARGUMENT', /ScatterNd: Shape must be rank 1 but is rank 0/],
  ['LearnedUnigramCandidateSampler of range_max 2^31-1, which runs for minutes', `binding.executeOp('LearnedUnigramCandidateSampler', [int('num_true', 1), int('num_sampled', 1), { name: 'unique', type: 'bool', value: false }, int('range_max', 2147483647)], [binding.createTensor([1, 1], 'int64', new BigInt64Array(1))], 3)`,
    'INVALID_ARGUMENT', /LearnedUnigramCandidateSampler: attr 'range_max' must be at most 134217728/],
  ['RecordInput of a file without records, which blocks', `binding.executeOp('RecordInput', [str('file_pattern', scratch + '/file')], [], 1)`,
    'ERR_INVALID_ARG_VALUE', /RecordInput: the op blocks/],
];

function runAlone(source) {
  const script = `${prelude}
try { ${source}; console.log(JSON.stringify({ returned: true })); }
catch (err) { console.log(JSON.stringify({ error: err.constructor.name, code: err.code, message: err.message })); }`;
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], {cwd: require('os').tmpdir(), timeout: 30000, killSignal: 'SIGKILL', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}},
      (error, stdout, stderr) => resolve({error, stdout, stderr}));
  });
}

for (const [what, source, code, message] of cases) {
  test(`no kill: ${what}`, async () => {
    const {error, stdout, stderr} = await runAlone(source);
    assert.equal(error, null, `${what}: the process died (${error && (error.signal || error.code)}): ${stderr.slice(-400)}`);
    const result = JSON.parse(stdout.trim().split('\n').pop());
    assert.equal(result.error, 'Error', what);
    assert.equal(result.code, code, `${what}: ${result.message}`);
    assert.match(result.message, message, what);
  });
}

test('the op definitions the checks read are exposed: opNames and opDef', () => {
  const binding = require(bindingPath);
  const names = binding.opNames();
  assert.ok(names.includes('AddN') && names.includes('TfjsNodeRs>FewChannelConv2D'));
  const addN = binding.opDef('AddN');
  assert.deepEqual(addN.inputs, [{name: 'inputs', typeAttr: 'T', numberAttr: 'N'}]);
  const n = addN.attrs.find((a) => a.name === 'N');
  assert.equal(n.kind, 'int');
  assert.equal(n.hasDefault, false);
  assert.equal(n.minimum, 1);
  const conv = binding.opDef('Conv2D');
  assert.deepEqual(conv.attrs.find((a) => a.name === 'padding').allowedValues, ['SAME', 'VALID', 'EXPLICIT']);
  assert.equal(conv.attrs.find((a) => a.name === 'dilations').hasDefault, true);
  assert.throws(() => binding.opDef('NoSuchOp'), (err) => err.code === 'NOT_FOUND');
});

test('the checks keep well-formed calls working: defaults, inferred dtypes, lists', () => {
  const binding = require(bindingPath);
  const f32 = (values) => binding.createTensor([values.length], 'float32', new Float32Array(values));
  // T inferred from the inputs, N given.
  const [sum] = binding.executeOp('AddN', [{name: 'N', type: 'int', value: 3}, {name: 'T', type: 'type', value: 'float32'}], [f32([1]), f32([2]), f32([3])], 1);
  assert.deepEqual(Array.from(binding.tensorDataSync(sum.id)), [6]);
  // T inferred from a single input; a list given by a list(type) attr.
  const [neg] = binding.executeOp('Neg', [], [f32([1, -2])], 1);
  assert.deepEqual(Array.from(binding.tensorDataSync(neg.id)), [-1, 2]);
  const outs = binding.executeOp('IdentityN', [{name: 'T', type: 'type', value: ['float32', 'float32']}], [f32([1]), f32([2])], 2);
  assert.equal(outs.length, 2);
});
