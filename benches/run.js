'use strict';
// `npm run bench [-- options]`: the layers suite, user workloads and the micro-benchmarks on this
// backend ('tensorflow', i.e. this package) and its peers (tfjs-node, wasm, cpu, and for models
// Python Keras 3), ratios printed, written to benches/results/*.json, and (full runs) to
// benches/RESULTS.md and benches/speed-ratios.svg.
//
// Each model runs as a user program runs it, in a process of its own per backend: build, fit
// (first epoch, then 10 epochs), one warm-up predict, 20 timed predicts (steady state: their
// mean); the first calls are reported too. Processes alternate between backends, passes times.
//
// Options:
//   --quick              a subset, one pass (for development; does not touch RESULTS.md)
//   --backends=a,b       backends to run (default: tensorflow,defer-off,tfjs-node,wasm,cpu,keras;
//                        defer-off: this package with TFJS_NODE_RS_DEFER=0)
//   --models=a,b         models to run (default: all, or the quick subset)
//   --only=models,micro,rss,shapes,cold,clients,distributed   groups to run (default: all; shapes:
//                        a convnet's predicts of one shape and of 400 widths, benches/shapes.js,
//                        and on keras the same as a bare TF graph;
//                        cold: fresh processes that load a real GraphModel, predict once and
//                        exit, their phases apart, benches/cold_start.js; tfgraph: the
//                        compute-bound suite models against the same models as bare TF graphs
//                        called from Python (keras/worker.py's 'graph' task);
//                        clients: real client libraries of tfjs-node, scripts/clients.js, on
//                        tensorflow, tfjs-node, wasm; distributed: benches/distributed.js,
//                        tf.node's distributed runtime on 127.0.0.1, this package only)
//   --passes=N           worker processes per model and backend, interleaved across backends
//                        (default 3; cpu and quick runs: 1; this package with deferring on
//                        and off: N + 2, back to back)
//   --write              write RESULTS.md and the SVG even for a partial or quick run
//   --report-only[=FILE] only regenerate RESULTS.md and the SVG from a results file
//                        (default benches/results/full.json)
// Environment:
//   TFJS_NODE_PEER_DIR   where ../shared/peers/tfjs-node/setup.sh built tfjs-node
//                        (default ~/.cache/tfjs-node-peer); the column is skipped when absent.
//   TFJS_NODE_RS_KERAS_VENV  the venv of the Keras column, made by benches/keras/setup.sh
//                        (default ~/.cache/tfjs-node-rs/keras-venv); skipped when absent.

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {DEFER_OFF, backendEnv} = require('./worker');
const {MODELS, describe} = require('./models');
const report = require('./report');

const ROOT = path.resolve(__dirname, '..');
const PRIMARY = 'tensorflow';
const CORE_FLOOR = require('./core_floor').NAME;
const {median} = require('./stats');
// DEFER_OFF (`defer-off`): this package with deferring off (TFJS_NODE_RS_DEFER=0), so that
// every row shows what deferring does, measured in the same run.
const ALL_BACKENDS = ['tensorflow', DEFER_OFF, 'tfjs-node', 'wasm', 'cpu', 'keras'];
// The backends of tfjs; the Keras column runs the models only.
const TFJS_BACKENDS = ALL_BACKENDS.filter((b) => b !== 'keras');
// The suite's counts (../shared/reference/benchmark-suite.md).
const PREDICT_CALLS = 20;
const FIT_EPOCHS = 10;
const QUICK_MODELS = ['dense-tiny', 'convolutional-1filters', 'rnn-SimpleRNN', 'graph-model'];
const GROUPS = ['models', 'micro', 'rss', 'shapes', 'cold', 'tfgraph', 'clients', 'serving', 'distributed'];
/** The compute-bound suite models, whose time is TF's kernels': the `tfgraph` group's. */
const TF_GRAPH_MODELS = ['dense-large', 'convolutional-32filters'];

function parseArgs(argv) {
  const o = {quick: false, write: false};
  for (const a of argv) {
    const [k, v] = a.replace(/^--/, '').split('=');
    if (k === 'quick') o.quick = true;
    else if (k === 'write') o.write = true;
    else if (k === 'report-only') o.reportOnly = v || path.join(__dirname, 'results', 'full.json');
    else if (k === 'backends') o.backends = v.split(',');
    else if (k === 'models') o.models = v.split(',');
    else if (k === 'only') o.only = v.split(',');
    else if (k === 'passes') o.passes = Number(v);
    else if (k === 'help' || k === 'h') {
      const lines = fs.readFileSync(__filename, 'utf8').split('\n').slice(1);
      console.log(lines.slice(0, lines.findIndex((l) => !l.startsWith('//')))
          .map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown option ${a}`);
  }
  o.backends = o.backends || ALL_BACKENDS;
  o.models = o.models || (o.quick ? QUICK_MODELS : MODELS.map((m) => m.name));
  o.only = o.only || GROUPS;
  o.passes = o.passes || 3;
  for (const m of o.models) {
    if (!MODELS.find((x) => x.name === m)) throw new Error(`unknown model ${m}`);
  }
  for (const b of o.backends) {
    if (!ALL_BACKENDS.includes(b)) throw new Error(`unknown backend ${b}`);
  }
  o.full = !o.quick && o.backends.length === ALL_BACKENDS.length &&
      o.models.length === MODELS.length && o.only.length === GROUPS.length;
  return o;
}

function peerDir() {
  return process.env.TFJS_NODE_PEER_DIR || path.join(os.homedir(), '.cache', 'tfjs-node-peer');
}

function kerasPython() {
  const venv = process.env.TFJS_NODE_RS_KERAS_VENV ||
      path.join(os.homedir(), '.cache', 'tfjs-node-rs', 'keras-venv');
  return path.join(venv, 'bin', 'python');
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-bench-'));
let seq = 0;

// Runs one task in a fresh child process; returns its JSON result (or {error}).
/** A backend's worker process's environment. */
function workerEnv(backend) {
  return {...process.env, TF_CPP_MIN_LOG_LEVEL: '2', ...backendEnv(backend)};
}

function runWorker(task, timeoutMs = 15 * 60 * 1000) {
  const out = path.join(tmp, `r${seq++}.json`);
  const [program, script] = task.backend === 'keras' ?
    [kerasPython(), path.join(__dirname, 'keras', 'worker.py')] :
    [process.execPath, path.join(__dirname, 'worker.js')];
  const child = spawnSync(program,
                          [...(task.backend === 'keras' ? [] : ['--expose-gc']), script,
                           JSON.stringify(task), out],
                          {cwd: ROOT, encoding: 'utf8', timeout: timeoutMs,
                           maxBuffer: 64 << 20, env: workerEnv(task.backend)});
  let result;
  try {
    result = JSON.parse(fs.readFileSync(out, 'utf8'));
  } catch (e) {
    const why = child.error ? String(child.error) : `exit ${child.status} ${child.signal || ''}`;
    result = {backend: task.backend, error: `worker died (${why}): ` +
                                            String(child.stderr || '').slice(-2000)};
  }
  if (result.error) {
    console.error(`  [${task.backend} ${task.kind}] ${result.error.split('\n').slice(0, 3)
        .join(' | ')}`);
  }
  return result;
}

function machine() {
  const cpus = os.cpus();
  return {
    cpu: cpus[0] ? cpus[0].model.trim() : 'unknown',
    cores: cpus.length,
    memoryGB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    loadavg: os.loadavg().map((x) => Number(x.toFixed(2))),
  };
}

// ------------------------------------------------------------------ C floor

function cFloor(quick) {
  const src = path.join(__dirname, 'c', 'tfe_add_loop.c');
  const inc = path.join(ROOT, 'deps', 'include');
  const lib = path.join(ROOT, 'deps', 'lib');
  if (!fs.existsSync(src)) return {error: 'benches/c/tfe_add_loop.c is missing'};
  if (!fs.existsSync(path.join(lib, 'libtensorflow.so'))) {
    return {error: 'deps/lib/libtensorflow.so is missing (run npm run build)'};
  }
  const bin = path.join(tmp, 'tfe_add_loop');
  const cc = spawnSync('gcc', ['-O2', src, '-o', bin, `-I${inc}`, `-L${lib}`, '-ltensorflow',
                               '-l:libtensorflow_framework.so.2', `-Wl,-rpath,${lib}`],
                       {encoding: 'utf8'});
  if (cc.status !== 0) return {error: `gcc failed: ${cc.error || cc.stderr}`};
  const runs = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) {
    const r = spawnSync(bin, [String(quick ? 50000 : 200000)],
                        {encoding: 'utf8', env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2'}});
    const ns = parseFloat(r.stdout);
    if (r.status !== 0 || !Number.isFinite(ns)) return {error: `run failed: ${r.stderr}`};
    runs.push(ns);
  }
  // Each run prints the best of its 5 rounds.
  return {ns: median(runs), min: Math.min(...runs), runs};
}

/**
 * The machine's peak rate of float32 multiply-adds over all its cores (benches/c/fma_peak.c),
 * in GFLOP/s: the ceiling of the compute-bound rows.
 */
function fmaPeak() {
  const bin = path.join(tmp, 'fma_peak');
  const cc = spawnSync('gcc', ['-O2', '-pthread', path.join(__dirname, 'c', 'fma_peak.c'),
                               '-o', bin], {encoding: 'utf8'});
  if (cc.status !== 0) return {error: `gcc failed: ${cc.error || cc.stderr}`};
  const threads = os.cpus().length;
  const r = spawnSync(bin, [String(threads)], {encoding: 'utf8'});
  const gflops = parseFloat(r.stdout);
  if (r.status !== 0 || !Number.isFinite(gflops)) return {error: 'no FMA on this CPU'};
  return {gflops, threads};
}

// ------------------------------------------------------------------ groups

/**
 * Worker processes per model and backend. A machine phase that slows everything for a few
 * seconds would otherwise land on one backend only: near-equal peers (tfjs-node, on the same TF
 * kernels) flipped between 0.8x and 1.2x from run to run. The passes interleave the backends, and
 * a case's time is the median of the passes. `cpu`, slower by far, runs one pass.
 */
function passesFor(opts, backend, cheap) {
  if (opts.quick || backend === 'cpu') return 1;
  if (backend !== PRIMARY && backend !== DEFER_OFF) return opts.passes;
  return cheap ? Math.max(CHEAP_PAIRS, opts.passes + PAIRED_EXTRA_PASSES) :
    opts.passes + PAIRED_EXTRA_PASSES;
}

/**
 * Passes beyond `--passes` of this package with deferring on and off. Their ratio is the one
 * that must hold to 5% (deferring never slower), finer than any other, so it gets more pairs.
 */
const PAIRED_EXTRA_PASSES = 2;

/**
 * Pairs for a model whose process took under `CHEAP_PROCESS_MS` in the first pass: its timed
 * calls add up to a few ms (dense-tiny's 20 predicts: 3-4 ms), which one machine hiccup or a
 * session's set-up finishing a little late moves by 10-50%, while its pairs cost little (0.4 s
 * each for dense-tiny). With 11 pairs, dense-tiny's ratio of identical code (whole-call graphs
 * pause deferring) fell below 0.95 in about one run of three; 21 pairs narrow the interval
 * report.js gives each ratio (`medianInterval`) to the 6th smallest and largest. The count is
 * set by the process's cost, never by the ratios measured.
 */
const CHEAP_PAIRS = 21;
const CHEAP_PROCESS_MS = 3000;

/**
 * One pass's order of `backends`, rotated by `rotate` so that no backend always runs first (or
 * last) on a drifting machine, with this package and DEFER_OFF back to back, in an order that
 * alternates from one `pass` to the next (so each model has each first half the time): each
 * pair met the same state of the machine, and report.js compares them pair by pair. Apart,
 * their processes differed by 2-3x between passes of one run.
 */
function passOrder(backends, rotate, pass) {
  const paired = backends.includes(PRIMARY) && backends.includes(DEFER_OFF);
  const pair = pass % 2 ? [DEFER_OFF, PRIMARY] : [PRIMARY, DEFER_OFF];
  const units = backends.filter((b) => !paired || b !== DEFER_OFF)
      .map((b) => (paired && b === PRIMARY ? pair : [b]));
  const k = rotate % units.length;
  return units.slice(k).concat(units.slice(0, k)).flat();
}

/** The cases of a model: predict, and fit where it trains. */
function methodsOf(spec) {
  return spec.fit ? ['predict', 'fit'] : ['predict'];
}

function modelTask(opts, backend, spec) {
  const task = {backend, kind: 'model', model: spec.name, spec: describe(spec),
                predictCalls: PREDICT_CALLS, fitEpochs: FIT_EPOCHS};
  // Budgets for the pure-JS cpu backend alone (see `fewer` in worker.js).
  if (backend === 'cpu') Object.assign(task, {roundMs: opts.quick ? 2000 : 4000,
                                              slowMs: opts.quick ? 5000 : 10000});
  return task;
}

/**
 * The compute-bound suite models on this package and tfjs-node against the same models as bare
 * TF graphs (their forward pass and training step each one `tf.function`, called from Python with
 * no Keras loop: what this package's call graphs run), processes alternating; medians of the
 * passes. What is left between this package and TF's own kernels is what the first two columns
 * do on top of them.
 */
function runTfGraph(opts, backends, results) {
  const runOn = ['tensorflow', 'tfjs-node', 'keras'].filter((b) => backends.includes(b));
  results.tfGraph = {};
  results.fmaPeak = fmaPeak();
  console.log(`  the machine's FMA peak: ${results.fmaPeak.error ||
                                          `${results.fmaPeak.gflops} GFLOP/s`}`);
  for (const spec of MODELS.filter((m) => TF_GRAPH_MODELS.includes(m.name))) {
    const got = new Map(runOn.map((b) => [b, []]));
    for (let pass = 0; pass < (opts.quick ? 1 : opts.passes); pass++) {
      for (const backend of runOn) {
        const task = modelTask(opts, backend, spec);
        const r = runWorker(backend === 'keras' ? {...task, kind: 'graph'} : task);
        if (r.error) continue;
        got.get(backend).push(backend === 'keras' ? r.graph :
          {predictMs: r.model.predict.ms, fitMs: r.model.fit && r.model.fit.ms});
      }
    }
    const row = {};
    for (const [backend, list] of got) {
      row[backend === 'keras' ? 'tfGraph' : backend] = {
        predictMs: median(list.map((r) => r.predictMs)), fitMs: median(list.map((r) => r.fitMs)),
      };
    }
    // The GFLOP of each call, as TF counts them for the bare graphs.
    const counted = got.get('keras') && got.get('keras')[0];
    if (counted) row.gflop = {predict: counted.predictGflop, fit: counted.fitGflop};
    results.tfGraph[spec.name] = row;
    for (const method of ['predict', 'fit']) {
      const cell = (name) => (row[name] && row[name][`${method}Ms`] != null ?
        `${row[name][`${method}Ms`].toFixed(2)} ms` : 'n/a');
      console.log(`  ${spec.name.padEnd(24)} ${method.padEnd(7)} tensorflow ${cell('tensorflow')}, ` +
                  `tfjs-node ${cell('tfjs-node')}, one TF graph from Python ${cell('tfGraph')}`);
    }
  }
}

function runModels(opts, backends, results) {
  const specs = MODELS.filter((m) => opts.models.includes(m.name));
  const runs = new Map();  // `model|backend` -> [result of each process]
  const cheap = new Set();  // models whose first process of this package was cheap
  const passes = (backend, spec) => passesFor(opts, backend, cheap.has(spec.name));
  const maxPasses = () => Math.max(...specs.flatMap((s) => backends.map((b) => passes(b, s))));
  let rotate = 0;
  for (let pass = 0; pass < maxPasses(); pass++) {
    for (const spec of specs) {
      const order = passOrder(backends, rotate, pass);
      rotate++;
      if (order.every((backend) => pass >= passes(backend, spec))) continue;
      for (const backend of order) {
        if (pass >= passes(backend, spec)) continue;
        const t0 = Date.now();
        const r = runWorker(modelTask(opts, backend, spec));
        if (pass === 0 && backend === PRIMARY && Date.now() - t0 < CHEAP_PROCESS_MS) {
          cheap.add(spec.name);
        }
        const got = r.model || {error: r.error};
        const key = `${spec.name}|${backend}`;
        if (!runs.has(key)) runs.set(key, []);
        runs.get(key).push(got);
        const show = (m) => {
          const x = got[m];
          if (!x) return null;
          return x.error ? `${m} ERROR` :
            `${m} ${x.ms.toFixed(2)} ms (first ${x.firstMs.toFixed(1)})`;
        };
        const summary = got.error ? 'ERROR' : ['fit', 'predict'].map(show).filter(Boolean)
            .join(', ');
        console.log(`  ${spec.name.padEnd(24)} ${backend.padEnd(10)} ${summary}  ` +
                    `(pass ${pass + 1}, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      }
    }
  }
  const rows = [];
  for (const spec of specs) {
    const params = {};
    for (const backend of backends) {
      const first = (runs.get(`${spec.name}|${backend}`) || []).find((g) => g.params != null);
      if (first) params[backend] = first.params;
    }
    for (const method of methodsOf(spec)) {
      const row = {model: spec.name, method, workload: !!spec.workload, results: {}};
      for (const backend of backends) {
        row.results[backend] = combineModelRuns(runs.get(`${spec.name}|${backend}`) || [],
                                                method, params[PRIMARY], params[backend]);
      }
      rows.push(row);
    }
  }
  results.models = rows;
}

/**
 * One backend's cell of a (model, method) row from its processes: the medians over processes of
 * the steady state and of the first call. A backend whose model has another parameter count
 * than this package's is an error (the same architecture is what the ratios compare).
 */
function combineModelRuns(passes, method, primaryParams, params) {
  const died = passes.find((g) => g.error);
  if (died || !passes.length) return {error: died ? died.error.split('\n')[0] : 'not run'};
  if (primaryParams != null && params != null && params !== primaryParams) {
    return {error: `a different architecture: ${params} parameters, against ${primaryParams}`};
  }
  const got = passes.map((g) => g[method]);
  if (got.some((g) => !g)) return {error: `no ${method} result`};
  const failed = got.find((g) => g.error);
  if (failed) return {error: failed.error.split('\n')[0]};
  const calls = method === 'fit' ? got.map((g) => g.epochs) : got.map((g) => g.calls);
  return {
    ms: median(got.map((g) => g.ms)), min: Math.min(...got.map((g) => g.ms)),
    firstMs: median(got.map((g) => g.firstMs)),
    processes: got.map((g) => g.ms), firstProcesses: got.map((g) => g.firstMs),
    buildMs: median(passes.map((g) => g.buildMs)),
    count: Math.min(...calls), firstOnly: got.some((g) => g.firstOnly),
    ...(method === 'predict' ? {callMs: got.map((g) => g.callMs),
                                leakedTensors: Math.max(...got.map((g) => g.leakedTensors || 0)),
                                ...programTimes(passes)} :
      {}),
  };
}

/**
 * The whole program's time (`programMs` of worker.js) and the whole process's (`processMs`),
 * carried by the predict row: the median over processes, and each process's; nothing when a
 * process did not run all of the suite's calls.
 */
function programTimes(passes) {
  const program = passes.map((g) => g.programMs);
  const process = passes.map((g) => g.processMs);
  if (program.some((ms) => ms == null)) return {};
  return {programMs: median(program), programProcesses: program,
          ...(process.some((ms) => ms == null) ? {} : {processMs: median(process), processProcesses: process})};
}

function microTask(opts, backend) {
  return opts.quick ?
      {backend, kind: 'micro', perOpIterations: 5000, perOpRounds: 5, sizes: [1e3, 1e5, 1e6],
       minReps: 3, maxReps: 50, elementBudget: 2e7, roundTripSize: 1e6,
       heapReadbackSize: 1e7, heapReadbackReps: 9} :
      {backend, kind: 'micro', perOpIterations: 20000, perOpRounds: 7,
       sizes: [1e3, 1e5, 1e6, 1e7], minReps: 5, maxReps: 200, elementBudget: 6e7,
       roundTripSize: 1e7, heapReadbackSize: 1e7, heapReadbackReps: 21};
}

// Median over processes of each process's median (and the least of the minima).
function combineTimings(list, key) {
  const ok = list.filter(Boolean);
  if (!ok.length) return null;
  return {[key]: median(ok.map((x) => x[key])), min: Math.min(...ok.map((x) => x.min)),
          processes: ok.map((x) => x[key])};
}

/**
 * Worker processes per backend for the micro-benchmarks. Slow phases of the machine last
 * seconds and move one process's per-op time by up to 2x (5.4 vs 10.5 µs for the same code), so
 * a micro number is the median of five processes, the backends' order rotating between passes.
 */
const MICRO_PASSES = 5;

function runMicro(opts, backends, results) {
  const perBackend = {};
  const coreFloorRuns = [];
  // tfjs-core's own per-op cost (benches/core_floor.js) takes its turn in the rotation too.
  const entries = [...backends, CORE_FLOOR];
  const repeats = opts.quick ? 1 : MICRO_PASSES;
  for (let rep = 0; rep < repeats; rep++) {
    const order = entries.slice(rep % entries.length)
        .concat(entries.slice(0, rep % entries.length));
    for (const backend of order) {
      const task = microTask(opts, backend);
      const isFloor = backend === CORE_FLOOR;
      const r = runWorker(isFloor ? {...task, kind: 'per-op'} : task);
      const perOp = isFloor ? r.perOp : r.micro && r.micro.perOp;
      if (isFloor) {
        if (perOp) coreFloorRuns.push(perOp);
      } else {
        perBackend[backend] = perBackend[backend] || [];
        if (r.micro) perBackend[backend].push(r.micro);
      }
      if (perOp) {
        console.log(`  micro ${backend.padEnd(10)} pass ${rep + 1}/${repeats}: per-op ` +
                    `${perOp.ns.toFixed(0)} ns`);
      }
    }
  }
  const micro = {perOp: {}, create: {}, readback: {}, roundTrip: {}, readbackInHeap: {},
                 notes: []};
  for (const backend of backends) {
    const runs = perBackend[backend];
    if (!runs.length) continue;
    micro.perOp[backend] = combineTimings(runs.map((r) => r.perOp), 'ns');
    for (const source of Object.keys(runs[0].create)) {
      micro.create[source] = micro.create[source] || {};
      for (const n of Object.keys(runs[0].create[source])) {
        micro.create[source][n] = micro.create[source][n] || {};
        micro.create[source][n][backend] =
            combineTimings(runs.map((r) => r.create[source][n]), 'ms');
      }
    }
    for (const n of Object.keys(runs[0].readback)) {
      micro.readback[n] = micro.readback[n] || {};
      micro.readback[n][backend] = combineTimings(runs.map((r) => r.readback[n]), 'ms');
    }
    micro.roundTrip[backend] = {size: runs[0].roundTrip.size,
                                ...combineTimings(runs.map((r) => r.roundTrip), 'ms')};
    micro.readbackInHeap[backend] = {size: runs[0].readbackInHeap.size,
                                     objects: runs[0].readbackInHeap.objects,
                                     oneMs: median(runs.map((r) => r.readbackInHeap.oneMs)),
                                     meanMs: median(runs.map((r) => r.readbackInHeap.meanMs)),
                                     oneMeanMs: median(runs.map((r) => r.readbackInHeap.oneMeanMs)),
                                     ...combineTimings(runs.map((r) => r.readbackInHeap), 'ms')};
    if (runs[0].alignedNote) micro.notes.push(`${backend}: ${runs[0].alignedNote}`);
  }
  micro.cFloor = cFloor(opts.quick);
  micro.coreFloor = combineTimings(coreFloorRuns, 'ns');
  results.micro = micro;
}

function runRss(opts, backends, results) {
  const rss = {};
  for (const backend of backends) {
    const sources = backend === PRIMARY ? ['plain', 'aligned'] : ['plain'];
    for (const source of sources) {
      const r = runWorker({backend, kind: 'rss', source, rssElements: 1e8});
      rss[`${backend}/${source}`] = r.rss || {error: (r.error || '').split('\n')[0]};
      if (r.rss && !r.rss.error) {
        console.log(`  rss ${backend.padEnd(10)} ${source.padEnd(8)} +` +
                    `${r.rss.peakDeltaMB.toFixed(0)} MB peak`);
      }
    }
  }
  results.rss = rss;
}

/**
 * Inputs of many shapes (benches/shapes.js): a convnet's predicts of one shape, and over 400
 * widths, in worker processes interleaved across backends (`cpu` left out; `keras` runs the
 * same plan on a bare TF graph, keras/worker.py's 'shapes' task); per backend the median of
 * the passes.
 */
function runShapes(opts, backends, results) {
  const runOn = backends.filter((b) => b !== 'cpu');
  const plan = require('./shapes').plan();
  const runs = new Map(runOn.map((b) => [b, []]));
  for (let pass = 0; pass < (opts.quick ? 1 : opts.passes); pass++) {
    for (const backend of runOn.slice(pass % runOn.length).concat(runOn.slice(0, pass % runOn.length))) {
      const r = runWorker({backend, kind: 'shapes', plan});
      const got = r.shapes || {error: (r.error || '').split('\n')[0]};
      runs.get(backend).push(got);
      console.log(`  shapes ${backend.padEnd(10)} ` + (got.error ? `ERROR ${got.error}` :
        `one shape ${got.fixedMs.toFixed(2)} ms/call (width ${got.meanWidth}: ` +
        `${got.fixedMeanMs.toFixed(2)}), ${got.widths} widths ${got.variableMs.toFixed(2)} ` +
        `ms/call (a width's first call ${got.newWidthMs.toFixed(2)}, its second ` +
        `${got.seenWidthMs.toFixed(2)}), RSS +${got.rssDeltaMB.toFixed(0)} MB` +
        (got.graphsAlive === null ? '' : `, ${got.graphsAlive} call graphs alive`)) +
        `  (pass ${pass + 1})`);
    }
  }
  results.shapes = {};
  for (const [backend, passes] of runs) {
    const failed = passes.find((g) => g.error);
    const mid = (key) => median(passes.map((g) => g[key]));
    results.shapes[backend] = failed ? {error: failed.error} : {
      fixedMs: mid('fixedMs'), fixedMeanMs: mid('fixedMeanMs'), variableMs: mid('variableMs'),
      newWidthMs: mid('newWidthMs'), seenWidthMs: mid('seenWidthMs'),
      rssDeltaMB: mid('rssDeltaMB'), graphsAlive: passes[0].graphsAlive,
      meanWidth: passes[0].meanWidth, widths: passes[0].widths,
    };
  }
}

/**
 * Real client libraries of tfjs-node (scripts/clients.js), each on its sample images in fresh
 * worker processes, interleaved across backends: the first call after loading the models, and
 * the median of later calls (a whole pipeline on one image each). `cpu` is left out: human's
 * pipeline takes about 30 s a call there.
 */
const CLIENT_BACKENDS = ['tensorflow', 'tfjs-node', 'wasm'];

function runClients(opts, backends, results) {
  const {CLIENTS} = require('../scripts/clients');
  const runOn = backends.filter((b) => CLIENT_BACKENDS.includes(b));
  const runs = new Map();  // `client|backend` -> [result of each process]
  let rotate = 0;
  for (let pass = 0; pass < (opts.quick ? 1 : opts.passes); pass++) {
    for (const client of Object.keys(CLIENTS)) {
      const order = runOn.slice(rotate % runOn.length).concat(runOn.slice(0, rotate % runOn.length));
      rotate++;
      for (const backend of order) {
        const r = runWorker({backend, kind: 'clients', client, repeat: opts.quick ? 3 : 10});
        const got = r.clients || {error: r.error};
        const key = `${client}|${backend}`;
        if (!runs.has(key)) runs.set(key, []);
        runs.get(key).push(got);
        console.log(`  ${client.padEnd(10)} ${backend.padEnd(10)} ` + (got.error ? 'ERROR' :
          `first ${got.firstMs.toFixed(0)} ms, steady ${median(got.steadyMs).toFixed(0)} ms ` +
          `(${Math.min(...got.steadyMs).toFixed(0)}-${Math.max(...got.steadyMs).toFixed(0)})`) +
          `  (pass ${pass + 1})`);
      }
    }
  }
  results.clients = Object.keys(CLIENTS).map((client) => {
    const row = {client, results: {}};
    for (const backend of runOn) {
      const passes = runs.get(`${client}|${backend}`) || [];
      const failed = passes.find((g) => g.error);
      row.results[backend] = failed ? {error: failed.error.split('\n')[0]} : {
        first: combineTimings(passes.map((g) => ({ms: g.firstMs, min: g.firstMs})), 'ms'),
        steady: combineTimings(passes.map((g) => ({ms: median(g.steadyMs),
                                                  min: Math.min(...g.steadyMs)})), 'ms'),
        steadyCalls: passes.map((g) => g.steadyMs),
      };
    }
    return row;
  });
}

/** benches/distributed.js in a process of its own (it starts worker processes itself). */
function runDistributed(opts, results) {
  const out = path.join(tmp, `r${seq++}.json`);
  const child = spawnSync(process.execPath,
                          [path.join(__dirname, 'distributed.js'),
                           ...(opts.quick ? ['--quick'] : []), '--json', out],
                          {cwd: ROOT, encoding: 'utf8', timeout: 10 * 60 * 1000,
                           env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2'}});
  try {
    results.distributed = JSON.parse(fs.readFileSync(out, 'utf8'));
  } catch (e) {
    console.error(`  [distributed] failed (exit ${child.status}): ` +
                  String(child.stderr || '').slice(-2000));
  }
}

// ------------------------------------------------------------------ main

function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.reportOnly) {
    const results = report.derive(JSON.parse(fs.readFileSync(opts.reportOnly, 'utf8')));
    console.log(report.text(results));
    fs.writeFileSync(path.join(__dirname, 'RESULTS.md'), report.markdown(results));
    fs.writeFileSync(path.join(__dirname, 'speed-ratios.svg'), report.svg(results));
    console.log('wrote benches/RESULTS.md, benches/speed-ratios.svg');
    fs.rmSync(tmp, {recursive: true, force: true});
    return;
  }
  const started = Date.now();
  const results = {date: new Date().toISOString(), machine: machine(),
                   options: {quick: opts.quick, full: opts.full, predictCalls: PREDICT_CALLS,
                             fitEpochs: FIT_EPOCHS,
                             passes: opts.quick ? 1 : opts.passes,
                             models: opts.models, groups: opts.only},
                   primary: PRIMARY, backends: {}};
  console.log(`tfjs-node-rs benchmarks${opts.quick ? ' (quick)' : ''}: ` +
              `${results.machine.cpu}, ${results.machine.cores} cores, node ${process.version}`);

  // Which backends load at all.
  const backends = [];
  for (const backend of opts.backends) {
    if (backend === 'tfjs-node' && !fs.existsSync(path.join(peerDir(), 'app', 'node_modules',
                                                           '@tensorflow', 'tfjs-node'))) {
      results.backends[backend] = {available: false,
                                   note: `no tfjs-node build at ${peerDir()} (set ` +
                                         'TFJS_NODE_PEER_DIR or run ' +
                                         '../shared/peers/tfjs-node/setup.sh); column skipped'};
      console.log(`  skipping tfjs-node: ${results.backends[backend].note}`);
      continue;
    }
    if (backend === 'keras' && !fs.existsSync(kerasPython())) {
      results.backends[backend] = {available: false,
                                   note: `no venv at ${path.dirname(path.dirname(kerasPython()))} ` +
                                         '(set TFJS_NODE_RS_KERAS_VENV or run ' +
                                         'sh benches/keras/setup.sh); column skipped'};
      console.log(`  skipping keras: ${results.backends[backend].note}`);
      continue;
    }
    const r = runWorker({backend, kind: 'info'}, 120000);
    if (r.error) {
      results.backends[backend] = {available: false, note: r.error.split('\n')[0]};
      console.log(`  skipping ${backend}: ${results.backends[backend].note}`);
      continue;
    }
    results.backends[backend] = {available: true, ...r.info};
    if (backend === 'tfjs-node') results.backends[backend].dir = peerDir();
    backends.push(backend);
  }
  results.backendsRun = backends;
  if (!backends.length) throw new Error('no backend could be loaded');

  const tfjsBackends = backends.filter((b) => TFJS_BACKENDS.includes(b));
  if (opts.only.includes('models')) {
    console.log('\nlayers suite and user workloads (ms per predict / per fit epoch; first call):');
    runModels(opts, backends, results);
  }
  if (opts.only.includes('micro') && tfjsBackends.length) {
    console.log('\nmicro-benchmarks:');
    runMicro(opts, tfjsBackends, results);
  }
  if (opts.only.includes('rss') && tfjsBackends.length) {
    console.log('\npeak RSS added by a 400 MB tensor:');
    runRss(opts, tfjsBackends, results);
  }
  if (opts.only.includes('shapes') && tfjsBackends.length) {
    console.log('\ninputs of many shapes (ms per predict from the first call, benches/shapes.js):');
    runShapes(opts, backends, results);
  }
  if (opts.only.includes('cold') && tfjsBackends.length) {
    console.log('\ncold starts: a fresh process loads a GraphModel, predicts once, exits ' +
                '(benches/cold_start.js):');
    require('./cold_start').runColdStart(opts, tfjsBackends, results, {tmp, envOf: workerEnv});
  }
  if (opts.only.includes('tfgraph') && backends.includes(PRIMARY)) {
    console.log('\ncompute-bound models against bare TF graphs (ms per predict of 128 rows / per ' +
                'training step):');
    runTfGraph(opts, backends, results);
  }
  if (opts.only.includes('clients') && tfjsBackends.length) {
    console.log('\nreal client libraries (ms per call, first and steady state):');
    runClients(opts, tfjsBackends, results);
  }
  if (opts.only.includes('serving') && tfjsBackends.length) {
    console.log('\nserving: an HTTP server predicting per request under load (benches/serving.js):');
    require('./serving').runServing(opts, tfjsBackends.filter((b) => b !== 'cpu'), results);
  }
  if (opts.only.includes('distributed') && backends.includes(PRIMARY)) {
    console.log('\ntf.node distributed runtime on 127.0.0.1:');
    runDistributed(opts, results);
  }
  results.seconds = Math.round((Date.now() - started) / 1000);
  report.derive(results);

  console.log('\n' + report.text(results));
  const dir = path.join(__dirname, 'results');
  fs.mkdirSync(dir, {recursive: true});
  fs.writeFileSync(path.join(dir, 'latest.json'), JSON.stringify(results, null, 2) + '\n');
  console.log(`wrote ${path.relative(ROOT, path.join(dir, 'latest.json'))}`);
  if (opts.full || opts.write) {
    fs.writeFileSync(path.join(dir, 'full.json'), JSON.stringify(results, null, 2) + '\n');
    fs.writeFileSync(path.join(__dirname, 'RESULTS.md'), report.markdown(results));
    fs.writeFileSync(path.join(__dirname, 'speed-ratios.svg'), report.svg(results));
    console.log('wrote benches/results/full.json, benches/RESULTS.md, benches/speed-ratios.svg');
  }
  fs.rmSync(tmp, {recursive: true, force: true});
  console.log(`done in ${results.seconds} s`);
}

main();
