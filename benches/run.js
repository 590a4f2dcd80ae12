'use strict';
// `npm run bench [-- options]`: the layers suite and the micro-benchmarks on this backend
// ('tensorflow', i.e. this package) and its peers (tfjs-node, wasm, cpu), each backend in its
// own process; medians of repeated rounds; ratios printed, written to benches/results/*.json,
// and (full runs) to benches/RESULTS.md and benches/speed-ratios.svg.
//
// Options:
//   --quick              a subset, fewer rounds (for development; does not touch RESULTS.md)
//   --backends=a,b       backends to run (default: tensorflow,tfjs-node,wasm,cpu)
//   --models=a,b         models to run (default: all, or the quick subset)
//   --only=models,micro,rss,clients   groups to run (default: all four; clients: real client
//                        libraries of tfjs-node, scripts/clients.js, on tensorflow, tfjs-node, wasm)
//   --rounds=N           rounds per model case in each worker process (default 5; quick 2)
//   --passes=N           worker processes per model case and backend, interleaved across
//                        backends (default 3; cpu and quick runs: 1)
//   --write              write RESULTS.md and the SVG even for a partial or quick run
//   --report-only[=FILE] only regenerate RESULTS.md and the SVG from a results file
//                        (default benches/results/full.json)
// Environment:
//   TFJS_NODE_PEER_DIR   where ../shared/peers/tfjs-node/setup.sh built tfjs-node
//                        (default ~/.cache/tfjs-node-peer); the column is skipped when absent.

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {MODELS, cases: allCases} = require('./models');
const report = require('./report');

const ROOT = path.resolve(__dirname, '..');
const PRIMARY = 'tensorflow';
const CORE_FLOOR = require('./core_floor').NAME;
const ALL_BACKENDS = ['tensorflow', 'tfjs-node', 'wasm', 'cpu'];
const QUICK_MODELS = ['dense-tiny', 'convolutional-1filters', 'rnn-SimpleRNN'];
const GROUPS = ['models', 'micro', 'rss', 'clients'];

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
    else if (k === 'rounds') o.rounds = Number(v);
    else if (k === 'passes') o.passes = Number(v);
    else if (k === 'help' || k === 'h') {
      console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 21)
          .map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown option ${a}`);
  }
  o.backends = o.backends || ALL_BACKENDS;
  o.models = o.models || (o.quick ? QUICK_MODELS : MODELS.map((m) => m.name));
  o.only = o.only || GROUPS;
  o.rounds = o.rounds || (o.quick ? 2 : 5);
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

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-bench-'));
let seq = 0;

// Runs one task in a fresh child process; returns its JSON result (or {error}).
function runWorker(task, timeoutMs = 15 * 60 * 1000) {
  const out = path.join(tmp, `r${seq++}.json`);
  const child = spawnSync(process.execPath,
                          ['--expose-gc', path.join(__dirname, 'worker.js'), JSON.stringify(task),
                           out],
                          {cwd: ROOT, encoding: 'utf8', timeout: timeoutMs,
                           maxBuffer: 64 << 20,
                           env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2'}});
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

function median(xs) {
  const s = xs.filter((x) => x != null && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
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

// ------------------------------------------------------------------ groups

/**
 * Worker processes per model case and backend. A machine phase that slows everything for a few
 * seconds would otherwise land on one backend only: near-equal peers (tfjs-node, on the same TF
 * kernels) flipped between 0.8x and 1.2x from run to run. The passes interleave the backends, and
 * a case's time is the median of the passes' medians. `cpu`, slower by far, runs one pass.
 */
function passesFor(opts, backend) {
  return opts.quick || backend === 'cpu' ? 1 : opts.passes;
}

function runModels(opts, backends, results) {
  const cases = allCases().filter((c) => opts.models.includes(c.model));
  const byModel = {};
  for (const c of cases) (byModel[c.model] = byModel[c.model] || []).push(c);
  const rows = cases.map((c) => ({...c, results: {}}));
  const runs = new Map();  // `model|method|backend` -> [result of each pass]
  const maxPasses = Math.max(...backends.map((b) => passesFor(opts, b)));
  let rotate = 0;
  for (let pass = 0; pass < maxPasses; pass++) {
    for (const model of Object.keys(byModel)) {
      // Rotate the order so that no backend always runs first (or last) on a drifting machine.
      const order = backends.slice(rotate % backends.length)
          .concat(backends.slice(0, rotate % backends.length));
      rotate++;
      for (const backend of order) {
        if (pass >= passesFor(opts, backend)) continue;
        const t0 = Date.now();
        // Budgets: stop repeating a case after budgetMs; shorten a round whose warm-up call shows
        // it would exceed roundMs; time just the warm-up call when it exceeds slowMs (cpu only).
        const r = runWorker({backend, kind: 'models', cases: byModel[model], rounds: opts.rounds,
                             budgetMs: opts.quick ? 5000 : (backend === 'cpu' ? 20000 : 8000),
                             roundMs: opts.quick ? 2000 : 4000,
                             slowMs: opts.quick ? 5000 : 10000});
        const got = r.models || byModel[model].map((c) => ({...c, error: r.error}));
        for (const g of got) {
          const key = `${g.model}|${g.method}|${backend}`;
          if (!runs.has(key)) runs.set(key, []);
          runs.get(key).push(g);
        }
        const summary = got.map((g) => `${g.method} ${g.error ? 'ERROR' : g.ms.toFixed(2) + ' ms'}`)
            .join(', ');
        console.log(`  ${model.padEnd(24)} ${backend.padEnd(10)} ${summary}  ` +
                    `(pass ${pass + 1}, ${((Date.now() - t0) / 1000).toFixed(1)} s)`);
      }
    }
  }
  for (const row of rows) {
    for (const backend of backends) {
      const passes = runs.get(`${row.model}|${row.method}|${backend}`) || [];
      const failed = passes.find((g) => g.error);
      if (failed || !passes.length) {
        row.results[backend] = {error: failed ? failed.error.split('\n')[0] : 'not run'};
        continue;
      }
      row.results[backend] = {
        ...combineTimings(passes, 'ms'), rounds: passes.flatMap((g) => g.rounds),
        iterations: passes[passes.length - 1].iterations,
        warmupOnly: passes.some((g) => g.warmupOnly),
        leakedTensors: Math.max(...passes.map((g) => g.leakedTensors || 0)),
      };
    }
  }
  results.models = rows;
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
                   options: {quick: opts.quick, full: opts.full, rounds: opts.rounds,
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

  if (opts.only.includes('models')) {
    console.log('\nlayers suite (ms per predict / per fit epoch):');
    runModels(opts, backends, results);
  }
  if (opts.only.includes('micro')) {
    console.log('\nmicro-benchmarks:');
    runMicro(opts, backends, results);
  }
  if (opts.only.includes('rss')) {
    console.log('\npeak RSS added by a 400 MB tensor:');
    runRss(opts, backends, results);
  }
  if (opts.only.includes('clients')) {
    console.log('\nreal client libraries (ms per call, first and steady state):');
    runClients(opts, backends, results);
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
