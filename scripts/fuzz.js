#!/usr/bin/env node
'use strict';
// Fuzzes the binding's op calls (`executeOp`, `prepareOp` + `runPreparedOp`) with random ops
// from TF's registry, random attrs, dtypes and shapes. Each batch of calls runs in a child
// process: a child killed by a signal, or stuck past the batch timeout, is a kill. The call
// that was running is found again from the seed (calls are generated from the seed alone),
// saved under the crash folder as a JSON description and a standalone script, rerun alone in
// a fresh process, and printed. The fuzzing then resumes after that call.
//
//   node scripts/fuzz.js                    short mode: seed 1, 120 batches, ~1 min (npm test runs it)
//   node scripts/fuzz.js --minutes 10       long mode: batches until the time is up
//   options: --seed N (default 1; `random` for a fresh one), --batches N, --calls N (per batch),
//            --out DIR (crash folder, default fuzz-crashes/), --timeout S (per batch, default 20)
// Exits 1 when a kill was found.

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');

const root = path.resolve(__dirname, '..');
const bindingPath = path.join(root, 'binding.js');

// Ops left out: they touch files, the network, other devices or the clock, or take inputs
// (resources, variants, functions) that random tensors cannot be. Ops the binding refuses
// (`src/api/validate.rs`) stay in: the fuzzer checks that they are refused.
const SKIPPED = /Save|Restore|WriteFile|ReadFile|MatchingFiles|Summary|Print|Debug|Dataset|Iterator|Queue|Barrier|Accumulator|Collective|Nccl|Send$|Recv$|TPU|Tpu|Xla|Rpc|Sleep|Variable|VarHandle|Resource|Lookup|Table|Mutex|Stack|TensorArray|TensorList|TensorMap|Function|PartitionedCall|^If$|^StatelessIf$|^While$|^StatelessWhile$|^Case$|^StatelessCase$|Eager|PyFunc|FileSystem|Checkpoint|Snapshot|Ragged.*Variant|Optional|Reader|ImmutableConst|Timestamp|Fingerprint.*File|LoadAndRemap|Decode(Proto|Csv|Compressed)|EncodeProto|Parse(Example|SequenceExample|SingleExample|Tensor)|SerializeTensor|Sharding|Stage|MapSize|MapClear|MapIncomplete|Unbatch|Batch(Function)?$|^_(Arg|Retval|DeviceArg|DeviceRetval)$/;
const REFUSED = new Set(['Abort', 'Unstage', 'StagePeek', 'MapPeek', 'MapUnstage', 'MapUnstageNoKey', 'OrderedMapPeek', 'OrderedMapUnstage', 'OrderedMapUnstageNoKey']);

// Dtypes a random tensor can have, with how to fill one.
const DTYPES = {
  float32: (n, r) => Float32Array.from({length: n}, () => r.value()),
  float64: (n, r) => Float64Array.from({length: n}, () => r.value()),
  int32: (n, r) => Int32Array.from({length: n}, () => r.tensorInt()),
  int64: (n, r) => BigInt64Array.from({length: n}, () => BigInt(r.tensorInt())),
  int16: (n, r) => Int16Array.from({length: n}, () => r.tensorInt()),
  int8: (n, r) => Int8Array.from({length: n}, () => r.tensorInt()),
  uint8: (n, r) => Uint8Array.from({length: n}, () => Math.abs(r.tensorInt())),
  bool: (n, r) => Uint8Array.from({length: n}, () => r.int(2)),
  complex64: (n, r) => Float32Array.from({length: 2 * n}, () => r.value()),
  string: (n, r) => Array.from({length: n}, () => Uint8Array.from(r.pick(['', 'a', 'abc', '1', 'x y']), (c) => c.charCodeAt(0))),
};
const DTYPE_NAMES = Object.keys(DTYPES);
const STRINGS = ['', 'SAME', 'VALID', 'EXPLICIT', 'NHWC', 'NCHW', 'NDHWC', 'a', 'ij,jk->ik', 'i->', 'HALF_AWAY_FROM_ZERO', 'MIN_COMBINED', 'bilinear'];

// mulberry32: small, fast, and the same everywhere.
class Random {
  constructor(seed) { this.state = seed >>> 0; }
  next() {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n) { return Math.floor(this.next() * n); }
  chance(p) { return this.next() < p; }
  pick(items) { return items[this.int(items.length)]; }
  // Tensor values stay small: a size of 1e9 in a tensor makes a legitimately huge, slow op.
  tensorInt() { return this.int(8) - 2; }
  smallInt() { return this.chance(0.05) ? this.pick([-1e9, 1e9, 2 ** 31 - 1, -(2 ** 31)]) : this.int(8) - 2; }
  value() { return this.chance(0.05) ? this.pick([NaN, Infinity, -Infinity, 0]) : Math.round((this.next() * 8 - 4) * 100) / 100; }
}

function dims(r) {
  const rank = r.pick([0, 1, 1, 2, 2, 3, 4]);
  return Array.from({length: rank}, () => r.pick([0, 1, 1, 2, 2, 3, 4]));
}

function randomDtype(r, attr) {
  const allowed = attr && attr.allowedValues ? attr.allowedValues.filter((d) => d in DTYPES) : [];
  return allowed.length && r.chance(0.9) ? r.pick(allowed) : r.pick(DTYPE_NAMES);
}

// A value for attr `a`, as the binding takes it.
function attrValue(r, a) {
  const list = a.kind.startsWith('list(');
  const kind = list ? a.kind.slice(5, -1) : a.kind;
  const one = () => {
    switch (kind) {
      case 'type': return randomDtype(r, a);
      case 'int': return r.chance(0.1) ? r.smallInt() : r.int(5) - 1;
      case 'float': return r.value();
      case 'bool': return r.chance(0.5);
      case 'string': return a.allowedValues && r.chance(0.9) ? r.pick(a.allowedValues) : r.pick(STRINGS);
      case 'shape': return r.chance(0.1) ? null : dims(r);
      default: return undefined;
    }
  };
  if (one() === undefined) return undefined;
  if (!list) return {name: a.name, type: kind, value: one()};
  const length = r.chance(0.5) ? 4 : r.int(6);
  return {name: a.name, type: kind, value: Array.from({length}, one)};
}

// One random call of a random op: everything the child needs to make it, as plain data.
function generate(r, ops) {
  const def = r.pick(ops);
  const attrs = [];
  for (const a of def.attrs) {
    if (a.hasDefault ? r.chance(0.6) : r.chance(0.03)) continue;
    const attr = attrValue(r, a);
    if (attr) attrs.push(attr);
  }
  const given = (name) => attrs.find((a) => a.name === name);
  const inputs = [];
  for (const arg of def.inputs) {
    let count = 1;
    let types = null;
    if (arg.numberAttr) count = given(arg.numberAttr) ? given(arg.numberAttr).value : 1;
    if (arg.typeListAttr) {
      types = given(arg.typeListAttr) ? given(arg.typeListAttr).value : [randomDtype(r)];
      count = types.length;
    }
    count = Math.max(0, Math.min(count, 8));
    for (let i = 0; i < count; i++) {
      const typeAttr = arg.typeAttr && given(arg.typeAttr);
      const attrDef = arg.typeAttr && def.attrs.find((a) => a.name === arg.typeAttr);
      let dtype = arg.dtype || (types && types[i]) || (typeAttr ? typeAttr.value : randomDtype(r, attrDef));
      if (!(dtype in DTYPES) || r.chance(0.03)) dtype = r.pick(DTYPE_NAMES);
      inputs.push({dtype, shape: dims(r), seed: r.int(2 ** 31)});
    }
  }
  if (r.chance(0.04)) inputs.push({dtype: 'float32', shape: dims(r), seed: r.int(2 ** 31)});
  if (inputs.length && r.chance(0.04)) inputs.pop();
  return {op: def.name, attrs, inputs, prepared: r.chance(0.3), numOutputs: 16};
}

function opDefs(binding) {
  return binding.opNames().sort()
    .filter((name) => REFUSED.has(name) || !SKIPPED.test(name))
    .map((name) => binding.opDef(name))
    .filter((def) => def.inputs.every((arg) => !arg.dtype || arg.dtype in DTYPES));
}

function batchSeed(seed, batch) { return (Math.imul(seed, 0x9e3779b1) + batch * 7919 + 1) >>> 0; }

function batchCalls(ops, seed, batch, calls) {
  const r = new Random(batchSeed(seed, batch));
  return Array.from({length: calls}, () => generate(r, ops));
}

// Makes one call; errors are the expected outcome of most random calls.
function makeCall(binding, call) {
  const ids = call.inputs.map(({dtype, shape, seed}) => {
    const n = shape.reduce((a, b) => a * b, 1);
    return binding.createTensor(shape, dtype, DTYPES[dtype](n, new Random(seed)));
  });
  try {
    if (call.prepared) {
      const io = new Float64Array(1024);
      io.set(ids);
      const count = binding.runPreparedOp(binding.prepareOp(call.op, call.attrs), io, ids.length, call.numOutputs);
      for (let at = 0, k = 0; k < count; k++) { binding.deleteTensor(io[at]); at += 3 + io[at + 2]; }
    } else {
      for (const out of binding.executeOp(call.op, call.attrs, ids, call.numOutputs)) binding.deleteTensor(out.id);
    }
    return 'ran';
  } catch (err) {
    if (!(err instanceof Error)) throw new Error(`${call.op} threw a non-Error: ${err}`, {cause: err});
    return 'error';
  } finally {
    for (const id of ids) binding.deleteTensor(id);
  }
}

// Child: runs calls [from, calls) of a batch, writing each call's index to the progress file
// before making it (a blocking file write survives the process being killed).
function child(args) {
  const binding = require(bindingPath);
  const ops = opDefs(binding);
  const calls = batchCalls(ops, args.seed, args.batch, args.calls);
  const progress = fs.openSync(args.progress, 'w');
  const counts = {ran: 0, error: 0};
  for (let i = args.from; i < calls.length; i++) {
    fs.writeSync(progress, `${i}\n`);
    counts[makeCall(binding, calls[i])]++;
  }
  fs.writeSync(progress, `done ${JSON.stringify(counts)}\n`);
  fs.closeSync(progress);
}

function reproducerScript(call) {
  return `'use strict';
// Reproducer saved by scripts/fuzz.js: one binding call that killed the process.
const binding = require(${JSON.stringify(bindingPath)});
const call = ${JSON.stringify(call, null, 2)};
${Random.toString()}
const DTYPES = {
${Object.entries(DTYPES).map(([k, v]) => `  ${k}: ${v.toString()},`).join('\n')}
};
${makeCall.toString()}
console.log(makeCall(binding, call));
`;
}

// Children run in the scratch folder: some ops write files named by their random attrs.
function runChild(args, timeoutS, cwd) {
  const res = spawnSync(process.execPath, [__filename, '--child', JSON.stringify(args)], {
    cwd, timeout: timeoutS * 1000, killSignal: 'SIGKILL', encoding: 'utf8',
    env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}, maxBuffer: 64 << 20,
  });
  const lines = fs.existsSync(args.progress) ? fs.readFileSync(args.progress, 'utf8').trim().split('\n') : [];
  const last = lines[lines.length - 1] || '';
  const timedOut = res.error && res.error.code === 'ETIMEDOUT';
  return {res, last, timedOut, killed: timedOut || res.signal !== null || (res.status !== 0 && !last.startsWith('done'))};
}

function parseArgs(argv) {
  const opts = {seed: 1, batches: 120, calls: 200, minutes: 0, out: path.join(root, 'fuzz-crashes'), timeout: 20};
  for (let i = 0; i < argv.length; i += 2) {
    const key = argv[i].replace(/^--/, '');
    if (!(key in opts)) throw new Error(`unknown option ${argv[i]}`);
    opts[key] = key === 'out' ? path.resolve(argv[i + 1]) : key === 'seed' && argv[i + 1] === 'random' ? Math.floor(Math.random() * 2 ** 31) : Number(argv[i + 1]);
  }
  if (opts.minutes) opts.batches = Infinity;
  return opts;
}

function main() {
  if (process.argv[2] === '--child') return child(JSON.parse(process.argv[3]));
  const opts = parseArgs(process.argv.slice(2));
  const ops = opDefs(require(bindingPath));
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-fuzz-'));
  const started = Date.now();
  const deadline = opts.minutes ? started + opts.minutes * 60000 : Infinity;
  const totals = {calls: 0, ran: 0, error: 0, kills: 0};
  console.log(`fuzz: seed ${opts.seed}, ${ops.length} ops, ${opts.calls} calls per batch, ${opts.minutes ? `${opts.minutes} min` : `${opts.batches} batches`}`);
  for (let batch = 0; batch < opts.batches && Date.now() < deadline; batch++) {
    let from = 0;
    while (from < opts.calls) {
      const progress = path.join(scratch, `batch-${batch}`);
      const args = {seed: opts.seed, batch, calls: opts.calls, from, progress};
      const {res, last, timedOut, killed} = runChild(args, opts.timeout, scratch);
      if (!killed) {
        const counts = JSON.parse(last.slice(5));
        totals.ran += counts.ran;
        totals.error += counts.error;
        totals.calls += counts.ran + counts.error;
        break;
      }
      const index = Number(last);
      if (!Number.isInteger(index)) throw new Error(`batch ${batch} failed before any call: ${res.stderr.slice(-2000)}`);
      totals.kills++;
      totals.calls += index - from + 1;
      const call = batchCalls(ops, opts.seed, batch, opts.calls)[index];
      fs.mkdirSync(opts.out, {recursive: true});
      const name = `seed${opts.seed}-batch${batch}-call${index}-${call.op.replace(/\W/g, '_')}`;
      const script = path.join(opts.out, `${name}.js`);
      fs.writeFileSync(script, reproducerScript(call));
      const alone = spawnSync(process.execPath, [script], {cwd: scratch, timeout: 30000, killSignal: 'SIGKILL', encoding: 'utf8', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '3'}});
      const how = timedOut ? `stuck past ${opts.timeout} s` : res.signal ? `killed by ${res.signal}` : `exit code ${res.status}`;
      const aloneHow = alone.error ? 'stuck' : alone.signal ? `killed by ${alone.signal}` : alone.status ? `exit code ${alone.status}` : 'survived';
      const record = {seed: opts.seed, batch, index, how, alone: aloneHow, call, stderr: res.stderr.slice(-3000)};
      fs.writeFileSync(path.join(opts.out, `${name}.json`), JSON.stringify(record, null, 2));
      console.log(`KILL ${how} (alone: ${aloneHow}): ${call.op} ${JSON.stringify(call.attrs)} inputs ${JSON.stringify(call.inputs.map((i) => `${i.dtype}[${i.shape}]`))}${call.prepared ? ' (prepared)' : ''}`);
      console.log(`  reproducer: ${script}`);
      from = index + 1;
    }
    if ((batch + 1) % 10 === 0) console.log(`fuzz: ${batch + 1} batches, ${totals.calls} calls, ${totals.kills} kills, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  fs.rmSync(scratch, {recursive: true, force: true});
  const seconds = (Date.now() - started) / 1000;
  console.log(`fuzz: ${totals.calls} calls in ${seconds.toFixed(0)} s (${totals.ran} ran, ${totals.error} errors), ${totals.kills} kills`);
  return totals.kills ? 1 : 0;
}

process.exitCode = main() || 0;
