'use strict';
// Turns a results object from run.js into ratios, targets, a text table, RESULTS.md and an SVG
// chart. Ratios are always peer time / tensorflow time: above 1 means this backend is faster.

const PEERS = ['defer-off', 'tfjs-node', 'wasm', 'cpu', 'keras'];
// The rows of keras/worker.py's bare-graph tasks, which run no Keras loop.
const BARE_GRAPH = 'bare TF graph';
const COLORS = {'defer-off': '#2e8b57', 'tfjs-node': '#e8710a', 'wasm': '#5b6abf',
                'cpu': '#7f8c8d', 'keras': '#c0392b'};
// The rows of the two model tables: the 2019 suite, and the user workloads beyond it.
const GROUPS = [{key: 'suite', title: 'Layers suite', of: (r) => !r.workload},
                {key: 'workloads', title: 'User workloads', of: (r) => r.workload}];

const {median} = require('./stats');
const {CODE_CACHE} = require('./cold_start');

/** A ratio or measurement with two decimals, for the targets table. */
const f2 = (x) => (x == null ? 'n/a' : x.toFixed(2));
/** A value short of `goal`, with a third decimal where two would show it equal (2.00 for 1.998). */
const below = (x, goal) => (x != null && f2(x) === f2(goal) ? x.toFixed(3) : f2(x));
const ratio = (peer, mine) => (peer != null && mine != null && mine > 0 ? peer / mine : null);
/**
 * The peer whose processes ran back to back with this package's, pass by pass (run.js
 * `passOrder`): its ratio is the median of the passes' own ratios.
 */
const PAIRED_PEER = 'defer-off';

/**
 * The paired peer's ratio: the median of `peer[i] / mine[i]` over passes, with a confidence
 * interval of that median (`medianInterval`) as `{ratio, low, high}`; else the ratio of the
 * medians, with no interval.
 */
function pairedRatio(peer, mine, peerProcesses, mineProcesses) {
  const n = peerProcesses ? peerProcesses.length : 0;
  const unpaired = {ratio: ratio(peer, mine), low: null, high: null};
  if (n === 0 || !mineProcesses || mineProcesses.length !== n) return unpaired;
  const each = peerProcesses.map((p, i) => ratio(p, mineProcesses[i]));
  if (each.some((r) => r == null)) return unpaired;
  const sorted = each.sort((a, b) => a - b);
  const interval = medianInterval(sorted);
  return {ratio: median(sorted), low: interval && interval.low, high: interval && interval.high};
}

/** The confidence of the interval a paired ratio comes with. */
const INTERVAL_LEVEL = 0.95;

/**
 * A confidence interval of the median of the `sorted` samples at `INTERVAL_LEVEL` or more,
 * assuming nothing of their distribution: the k-th smallest and the k-th largest sample for the
 * largest k whose binomial tail P(Binomial(n, 1/2) < k) is at most half the miss. A sample
 * falls below the median with probability 1/2, so the median lies between those two but for
 * that tail on either side. Null when even the least and the greatest do not reach the level
 * (fewer than 6 samples).
 */
function medianInterval(sorted) {
  const n = sorted.length;
  const allowed = (1 - INTERVAL_LEVEL) / 2;
  let k = 0;
  let tail = 0;  // P(Binomial(n, 1/2) < k + 1), summed term by term
  let term = Math.pow(0.5, n);  // P(Binomial(n, 1/2) = k)
  while (k < n / 2) {
    tail += term;
    if (tail > allowed) break;
    term = term * (n - k) / (k + 1);
    k++;
  }
  return k === 0 ? null : {low: sorted[k - 1], high: sorted[n - k]};
}
const geomean = (xs) => {
  const ok = xs.filter((x) => x != null && x > 0);
  return ok.length ? Math.exp(ok.reduce((s, x) => s + Math.log(x), 0) / ok.length) : null;
};

function peersOf(results) {
  return PEERS.filter((p) => (results.backendsRun || []).includes(p));
}

/**
 * The times a model row's cells hold: the steady state (per call), the first call, and the whole
 * program (on predict rows: run.js `programTimes`). Per kind: the cell's key, its processes' key,
 * and where the row keeps its ratios and its paired peer's interval.
 */
const MODEL_TIMES = [
  {key: 'ms', processes: 'processes', ratios: 'ratios', interval: 'pairedInterval'},
  {key: 'firstMs', processes: 'firstProcesses', ratios: 'firstRatios',
   interval: 'firstPairedInterval'},
  {key: 'programMs', processes: 'programProcesses', ratios: 'programRatios',
   interval: 'programPairedInterval'},
  {key: 'processMs', processes: 'processProcesses', ratios: 'processRatios',
   interval: 'processPairedInterval'},
];

/** The rows of a whole program's time: one per model. */
const programRows = (rows) => rows.filter((r) => r.method === 'predict');

function derive(results) {
  const P = results.primary;
  const peers = peersOf(results);
  if (results.models) {
    for (const row of results.models) {
      const mine = row.results[P] || {};
      for (const t of MODEL_TIMES) {
        row[t.ratios] = {};
        for (const p of peers) {
          const peer = row.results[p] || {};
          if (p === PAIRED_PEER) {
            const paired = pairedRatio(peer[t.key], mine[t.key], peer[t.processes],
                                       mine[t.processes]);
            row[t.ratios][p] = paired.ratio;
            row[t.interval] = {low: paired.low, high: paired.high};
          } else {
            row[t.ratios][p] = ratio(peer[t.key], mine[t.key]);
          }
        }
      }
    }
    results.geomean = {};
    results.programGeomean = {};
    results.processGeomean = {};
    for (const g of GROUPS) {
      const rows = results.models.filter(g.of);
      results.geomean[g.key] = {};
      results.programGeomean[g.key] = {};
      results.processGeomean[g.key] = {};
      for (const p of peers) {
        results.geomean[g.key][p] = geomean(rows.map((r) => r.ratios[p]));
        results.programGeomean[g.key][p] =
            geomean(programRows(rows).map((r) => r.programRatios[p]));
        results.processGeomean[g.key][p] =
            geomean(programRows(rows).map((r) => r.processRatios[p]));
      }
    }
  }
  const m = results.micro;
  if (m) {
    const val = (x, k = 'ms') => (x ? x[k] : null);
    m.ratios = {perOp: {}, create: {}, readback: {}, roundTrip: {}, readbackInHeap: {}};
    for (const p of peers) {
      m.ratios.perOp[p] = ratio(val(m.perOp[p], 'ns'), val(m.perOp[P], 'ns'));
      m.ratios.roundTrip[p] = ratio(val(m.roundTrip[p]), val(m.roundTrip[P]));
      const inHeap = m.readbackInHeap || {};
      m.ratios.readbackInHeap[p] = ratio(val(inHeap[p]), val(inHeap[P]));
    }
    for (const n of Object.keys(m.readback)) {
      m.ratios.readback[n] = {};
      for (const p of peers) m.ratios.readback[n][p] = ratio(val(m.readback[n][p]),
                                                             val(m.readback[n][P]));
    }
    for (const n of Object.keys(m.create.plain || {})) {
      m.ratios.create[n] = {};
      for (const p of peers) m.ratios.create[n][p] = ratio(val(m.create.plain[n][p]),
                                                           val(m.create.plain[n][P]));
    }
  }
  for (const row of results.clients || []) {
    row.ratios = {first: {}, steady: {}};
    const mine = row.results[P] || {};
    for (const p of peers) {
      const peer = row.results[p] || {};
      for (const when of ['first', 'steady']) {
        row.ratios[when][p] = ratio(peer[when] && peer[when].ms, mine[when] && mine[when].ms);
      }
    }
  }
  results.targets = targets(results);
  return results;
}

/**
 * Deferring must never lose: every row at least 0.95x deferring off (one backend's processes
 * spread 10-20% on this machine, so a row counts as slower only past 5%). A row below that
 * whose interval (`medianInterval`) still reaches 1 is within noise, not slower: the pairs do
 * not show deferring slower at all, and the target is met with those rows named. A row whose
 * whole interval lies below 1 is slower. dense-tiny's 20 predicts add up to 3 ms, and its
 * pairs' ratios spread from 0.5 to 1.7 with the same code on both sides (whole-call graphs
 * pause deferring): the median of 21 such pairs has a standard error of about 8%.
 */
function deferringNeverSlower(rows, measured, add) {
  if (!measured || !rows.length) return;
  const peer = PAIRED_PEER;
  const goal = 0.95;
  const short = rows.filter((r) => !(r.ratios[peer] >= goal));
  const noisy = short.filter((r) => r.pairedInterval && r.pairedInterval.high >= 1);
  const slower = short.filter((r) => !noisy.includes(r));
  const describe = (r) => {
    const i = r.pairedInterval;
    const interval = i && i.low != null ?
      ` (${Math.round(INTERVAL_LEVEL * 100)}% interval ${f2(i.low)}-${f2(i.high)})` : '';
    return `${r.model} ${r.method} ${below(r.ratios[peer], goal)}${interval}`;
  };
  const detail = [slower.length ? `slower: ${slower.map(describe).join(', ')}` : '',
                  noisy.length ? `within noise: ${noisy.map(describe).join(', ')}` : '']
      .filter(Boolean).join('; ');
  add('deferring never slower: every row vs deferring off',
      `${rows.length - short.length}/${rows.length}` +
      (noisy.length ? `, ${noisy.length} within noise` : ''),
      `≥ ${f2(goal)}× ${peer} on each, or its interval reaching 1`, slower.length === 0, detail);
}

function targets(results) {
  const P = results.primary;
  const out = [];
  const add = (name, value, goal, met, detail) => out.push({name, value, goal, met, detail});
  const has = (b) => (results.backendsRun || []).includes(b);
  if (results.models && has(P)) {
    const suite = results.models.filter((r) => !r.workload);
    const workloads = results.models.filter((r) => r.workload);
    // Each row of `rows` whose ratio against `peer` is below `goal` (or missing).
    // `explain(row)`: what the detail adds after a short row.
    const atLeast = (name, rows, peer, goal, explain = () => '') => {
      if (!has(peer) || !rows.length) return;
      const measured = rows.filter((r) => r.ratios[peer] != null);
      const short = rows.filter((r) => !(r.ratios[peer] >= goal));
      add(name, `${rows.length - short.length}/${rows.length}`, `≥ ${f2(goal)}× ${peer} on each`,
          short.length === 0,
          short.map((r) => `${r.model} ${r.method} ${below(r.ratios[peer], goal)}${explain(r)}`)
              .join(', ') + (measured.length < rows.length ? ' (— : not measured)' : ''));
    };
    // A compute-bound row short of twice tfjs-node, against the machine's ceiling (the bare
    // graphs' table).
    const ceiling = (r) => {
      const row = results.tfGraph && results.tfGraph[r.model];
      const roof = row && roofline(row, r.method, P, results.fmaPeak && results.fmaPeak.gflops);
      return roof && roof.twiceNodeOfPeak != null ?
        ` (twice tfjs-node takes ${percent(roof.twiceNodeOfPeak)} of the FMA peak; ` +
        `${percent(roof.ofPeak)} now)` : '';
    };
    atLeast('every suite model, predict and fit, vs tfjs-node', suite, 'tfjs-node', 2, ceiling);
    // wasm has no Conv2DBackpropFilter kernel: the convolutional fits cannot run there.
    atLeast('every suite model, predict and fit, vs wasm',
            suite.filter((r) => !notRegistered(r.results.wasm)), 'wasm', 1.5);
    atLeast('dense-tiny and the RNN predicts vs wasm',
            suite.filter((r) => r.method === 'predict' &&
                                (r.model === 'dense-tiny' || r.model.startsWith('rnn-'))),
            'wasm', 3);
    atLeast('every fit vs Keras', results.models.filter((r) => r.method === 'fit'), 'keras', 1.5);
    atLeast('every user workload vs tfjs-node', workloads, 'tfjs-node', 1);
    // A whole program as a row of its own: its ratios and interval are the program's.
    const programs = programRows(results.models).map((r) => ({
      model: r.model, method: 'whole program', workload: r.workload, ratios: r.programRatios,
      pairedInterval: r.programPairedInterval}));
    atLeast('every user workload\'s whole program vs tfjs-node',
            programs.filter((p) => p.workload), 'tfjs-node', 1);
    const measuredPrograms = programs.filter((p) => p.ratios[PAIRED_PEER] != null);
    deferringNeverSlower([...results.models, ...measuredPrograms], has(PAIRED_PEER), add);
    if (has('tfjs-node') && workloads.length) {
      const g = results.geomean.workloads['tfjs-node'];
      add('user workloads\' geometric mean vs tfjs-node', f2(g), '≥ 1.50', g != null && g >= 1.5);
    }
  }
  const m = results.micro;
  if (m && m.perOp[P]) {
    const mine = m.perOp[P].ns;
    if (m.perOp['tfjs-node']) {
      const r = mine / m.perOp['tfjs-node'].ns;
      add('per-op overhead vs tfjs-node', `${f2(r)}×`, '≤ 0.75×', r <= 0.75,
          `${mine.toFixed(0)} ns vs ${m.perOp['tfjs-node'].ns.toFixed(0)} ns`);
    }
    if (m.cFloor && m.cFloor.ns) {
      const r = mine / m.cFloor.ns;
      const floor = tfBackendFloor(m);
      add('per-op overhead vs C TFE_Execute loop', `${f2(r)}×`, '≤ 1.3×', r <= 1.3,
          `${mine.toFixed(0)} ns vs ${m.cFloor.ns.toFixed(0)} ns` + (floor ?
            `; C loop + tfjs-core alone: ${f2(floor.ns / m.cFloor.ns)}×` : ''));
    }
    const big = String(1e7);
    if (m.readback[big] && m.readback[big]['tfjs-node'] && m.readback[big][P]) {
      const r = m.readback[big]['tfjs-node'].ms / m.readback[big][P].ms;
      add('readback of 1e7 float32 vs tfjs-node', `${f2(r)}× faster`, '≥ 10×', r >= 10);
    }
    if (m.create.plain && has('tfjs-node')) {
      const sizes = Object.keys(m.create.plain);
      const slow = sizes.filter((n) => m.ratios.create[n]['tfjs-node'] < 1);
      add('creation from a plain Float32Array vs tfjs-node',
          `${sizes.length - slow.length}/${sizes.length} sizes`, 'ratio ≥ 1.0 on each',
          slow.length === 0,
          sizes.map((n) => `${fmtN(n)}: ${f2(m.ratios.create[n]['tfjs-node'])}`).join(', '));
    }
    for (const source of ['aligned', 'readback']) {
      const c = m.create[source];
      if (!c) continue;
      const sizes = Object.keys(c).map(Number).sort((a, b) => a - b);
      const lo = c[sizes[0]][P], hi = c[sizes[sizes.length - 1]][P];
      if (!lo || !hi) continue;
      const r = hi.ms / lo.ms;
      add(`creation from ${source === 'aligned' ? 'aligned memory' : 'data read back from TF'}` +
          ' independent of size', `${fmtN(sizes[sizes.length - 1])} / ${fmtN(sizes[0])} = ` +
          `${f2(r)}×`, '≤ 2× (flat)', r <= 2, `${fmtMs(lo.ms)} → ${fmtMs(hi.ms)} ms`);
    }
  }
  if (results.clients && has('tfjs-node')) {
    const cases = results.clients.flatMap((row) => ['first', 'steady'].map((when) =>
      ({name: `${row.client} ${when}`, r: row.ratios[when]['tfjs-node']})));
    const slow = cases.filter((c) => c.r == null || c.r < 1);
    add('every client library at least as fast as on tfjs-node',
        `${cases.length - slow.length}/${cases.length}`, 'ratio ≥ 1.0 on each', slow.length === 0,
        cases.map((c) => `${c.name} ${f2(c.r)}`).join(', '));
  }
  const serving = results.serving && results.serving.backends;
  const mine = serving && serving[P];
  if (mine && !mine.error) {
    add('serving: event-loop delay max under load', `${f2(mine.loopDelayMs.max)} ms`, '< 50 ms',
        mine.loopDelayMs.max < 50);
    add('serving: event-loop delay p99 under load', `${f2(mine.loopDelayMs.p99)} ms`, '< 10 ms',
        mine.loopDelayMs.p99 < 10);
    const peer = serving['tfjs-node'];
    if (peer && !peer.error) {
      add('serving: requests per second vs tfjs-node',
          `${f2(mine.requestsPerSecond)} vs ${f2(peer.requestsPerSecond)}`, '≥ tfjs-node\'s',
          mine.requestsPerSecond >= peer.requestsPerSecond);
    }
  }
  const cold = results.coldStart;
  if (cold) {
    // Whole processes: the peer's ms / ours on each model.
    // As installed, and with the code cache turned on (js/code_cache.js) beside.
    const speed = (r, peer, ours) => ratio(r[peer] && r[peer].process, r[ours] && r[ours].process);
    const speeds = (peer) => Object.entries(cold).map(([model, r]) =>
      ({model, r: speed(r, peer, P), cached: speed(r, peer, CODE_CACHE)}));
    const coldTarget = (peer, name, goal, fits, show) => {
      if (!has(peer)) return;
      const cases = speeds(peer);
      const short = cases.filter((c) => c.r == null || !fits(c.r));
      add(name, `${cases.length - short.length}/${cases.length}`, goal, short.length === 0,
          cases.map((c) => `${c.model} ${show(c.r)}` +
                    (c.cached == null ? '' : ` (with the code cache on ${show(c.cached)})`))
              .join(', '));
    };
    coldTarget('wasm', 'cold start (whole process) at least as fast as wasm', 'ratio ≥ 1.0 on each',
               (r) => r >= 1, (r) => `${f2(r)}× wasm's speed`);
    coldTarget('tfjs-node', 'cold start (whole process) vs tfjs-node\'s time',
               '≤ 0.75× on each', (r) => 1 / r <= 0.75, (r) => `${f2(r && 1 / r)}× its time`);
  }
  const shapes = results.shapes && results.shapes[P];
  if (shapes && !shapes.error) {
    const slower = shapes.variableMs / shapes.fixedMeanMs;
    const bare = results.shapes.keras;
    add('many input shapes vs one shape of the same size', `${f2(slower)}×`, '≤ 1.3×',
        slower <= 1.3, `${fmtMs(shapes.variableMs)} vs ${fmtMs(shapes.fixedMeanMs)} ms per call` +
        (shapes.seenWidthMs == null ? '' : `; a width's first call ${fmtMs(shapes.newWidthMs)}, ` +
         `its second ${fmtMs(shapes.seenWidthMs)}`) +
        (bare && !bare.error ? `; ${BARE_GRAPH}'s ${fmtMs(bare.newWidthMs)} and ` +
         `${fmtMs(bare.seenWidthMs)}` : ''));
    const peer = results.shapes['tfjs-node'];
    if (peer && !peer.error) {
      const r = peer.variableMs / shapes.variableMs;
      add('many input shapes vs tfjs-node', `${f2(r)}×`, '≥ 2×', r >= 2,
          `${fmtMs(shapes.variableMs)} vs ${fmtMs(peer.variableMs)} ms per call`);
    }
  }
  const al = results.rss && results.rss[`${P}/aligned`];
  if (al && al.peakDeltaMB != null) {
    add('peak RSS added by a 400 MB tensor in aligned memory', `${al.peakDeltaMB.toFixed(0)} MB`,
        '< 40 MB (no second copy)', al.peakDeltaMB < 40);
  }
  return out;
}

// ------------------------------------------------------------------ formatting

function fmtN(n) {
  n = Number(n);
  const e = Math.round(Math.log10(n));
  return 10 ** e === n ? `1e${e}` : String(n);
}

function fmtMs(x) {
  if (x == null) return '—';
  if (x >= 100) return x.toFixed(0);
  if (x >= 10) return x.toFixed(1);
  if (x >= 1) return x.toFixed(2);
  if (x >= 0.01) return x.toFixed(3);
  return x.toPrecision(2);
}

const fmtR = (x) => (x == null ? '—' : x >= 10 ? x.toFixed(1) : x.toFixed(2));

// `align`: one letter per column, l or r; by default the first two columns left, the rest right.
function table(header, rows, align = null) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const left = (i) => (align ? align[i] === 'l' : i < 2);
  const line = (r) => r.map((c, i) => (left(i) ? String(c).padEnd(widths[i]) :
                                                 String(c).padStart(widths[i]))).join('  ')
      .trimEnd();
  return [line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...rows.map(line)]
      .join('\n');
}

function mdTable(header, rows, leftCols = 2) {
  const align = header.map((_, i) => (i < leftCols ? '---' : '---:'));
  return [header, align, ...rows].map((r) => `| ${r.join(' | ')} |`).join('\n');
}

const notRegistered = (r) => !!(r && r.error && /not registered/.test(r.error));
// A case a backend cannot run at all (Keras and a tfjs GraphModel): its error says 'n/a: why'.
const notApplicable = (r) => !!(r && r.error && /^n\/a: /.test(r.error));

// A model cell: ms (of `key`: 'ms', the steady state, or 'firstMs'), '*' when only the first
// call was timed, 'n/a' when the backend lacks a kernel the case needs or cannot run the case,
// 'error' otherwise.
function cell(r, key = 'ms') {
  if (!r) return '—';
  if (r.error) return notRegistered(r) || notApplicable(r) ? 'n/a' : 'error';
  return fmtMs(r[key]) + (r.firstOnly && key === 'ms' ? '*' : '');
}

function modelNotes(results) {
  const notes = new Set();
  const missing = new Map();  // 'backend|kernel' -> cases
  for (const row of results.models || []) {
    for (const [b, r] of Object.entries(row.results)) {
      if (notRegistered(r)) {
        const k = (r.error.match(/Kernel '([^']+)'/) || [])[1] || 'a kernel';
        const key = `${b}|${k}`;
        missing.set(key, [...(missing.get(key) || []), `${row.model} ${row.method}`]);
      } else if (notApplicable(r)) {
        notes.add(`${r.error.split(': ').slice(1).join(': ')} (${b} ${row.model}).`.replace(/^./,
            (c) => `n/a: ${c}`));
      } else if (r.error) {
        notes.add(`error: ${b} ${row.model} ${row.method}: ${r.error}`);
      }
      if (r.firstOnly) {
        notes.add(`*: one ${row.method === 'fit' ? 'epoch' : 'call'} took so long on ${b} ` +
                  'that only the first call was timed.');
      } else if (r.count && r.count < (row.method === 'fit' ? 10 : 20)) {
        notes.add(`${b}: slow cases ran ${row.method === 'fit' ? 'fewer than 10 epochs' :
                                            'fewer than 20 predicts'} (to fit the time ` +
                  'budget).');
      }
    }
  }
  for (const [key, cases] of missing) {
    const [b, k] = key.split('|');
    notes.add(`n/a: ${b} has no ${k} kernel, so it cannot run ${cases.join(', ')}.`);
  }
  return [...notes];
}

// The model tables: per group (suite, workloads) one of the steady state, one of first calls.
function modelTables(results) {
  const P = results.primary;
  const backs = [P, ...peersOf(results)].filter((b) => (results.backendsRun || []).includes(b));
  const peers = peersOf(results);
  const header = ['model', 'method', ...backs.map((b) => `${b} ms`),
                  ...peers.map((p) => `× ${p}`)];
  const tables = [];
  for (const g of GROUPS) {
    const models = results.models.filter(g.of);
    if (!models.length) continue;
    const steady = models.map((r) => [r.model, r.method, ...backs.map((b) => cell(r.results[b])),
                                      ...peers.map((p) => fmtR(r.ratios[p]))]);
    steady.push(['geometric mean', '', ...backs.map(() => ''),
                 ...peers.map((p) => fmtR(results.geomean[g.key][p]))]);
    tables.push({group: g.key, title: `${g.title}: steady state, ms per predict() call / per ` +
                                      'fit() epoch', header, rows: steady});
    const first = models.map((r) => [r.model, r.method,
                                     ...backs.map((b) => cell(r.results[b], 'firstMs')),
                                     ...peers.map((p) => fmtR(r.firstRatios[p]))]);
    tables.push({group: g.key, title: `${g.title}: first call, ms of the first predict() (after ` +
                                      'fit) / the first fit() of one epoch', header, rows: first});
    const fitted = new Set(models.filter((r) => r.method === 'fit').map((r) => r.model));
    const wholeRows = (key, ratios, geomeans) => [
      ...programRows(models).map((r) => [
        r.model, fitted.has(r.model) ? 'build, fit, predict' : 'build, predict',
        ...backs.map((b) => cell(r.results[b], key)), ...peers.map((p) => fmtR(r[ratios][p]))]),
      ['geometric mean', '', ...backs.map(() => ''), ...peers.map((p) => fmtR(geomeans[g.key][p]))]];
    tables.push({group: g.key, title: `${g.title}: the whole program, ms from building the ` +
                                      'model to the end of its last predict()',
                 header: ['model', 'program', ...header.slice(2)],
                 rows: wholeRows('programMs', 'programRatios', results.programGeomean)});
    tables.push({group: g.key, title: `${g.title}: the whole process, ms from the process's ` +
                                      'start (the backend\'s require, or Python\'s TF import, ' +
                                      'included) to the end of its last predict()',
                 header: ['model', 'program', ...header.slice(2)],
                 rows: wholeRows('processMs', 'processRatios', results.processGeomean)});
  }
  return tables;
}

/**
 * The least per-op a backend that runs each tfjs op as a TF op can reach: TF's own execute
 * (the C loop) plus tfjs-core's dispatch (a backend doing nothing else); null when either is
 * missing.
 */
function tfBackendFloor(m) {
  if (!m.cFloor || !m.cFloor.ns || !m.coreFloor) return null;
  return {ns: m.cFloor.ns + m.coreFloor.ns};
}

function microTables(results) {
  const m = results.micro;
  const P = results.primary;
  const backs = [P, ...peersOf(results)].filter((b) => m.perOp[b]);
  const peers = peersOf(results).filter((b) => m.perOp[b]);
  const tables = [];
  {
    const rows = backs.map((b) => [b, '', m.perOp[b].ns.toFixed(0), m.perOp[b].min.toFixed(0),
                                   b === P ? '' : fmtR(m.ratios.perOp[b])]);
    if (m.cFloor && m.cFloor.ns) {
      rows.push(['C TFE_Execute loop', '(benches/c)', m.cFloor.ns.toFixed(0),
                 m.cFloor.min.toFixed(0), '']);
    } else if (m.cFloor) {
      rows.push(['C TFE_Execute loop', m.cFloor.error, '', '', '']);
    }
    if (m.coreFloor) {
      rows.push(['tfjs-core alone', '(benches/core_floor.js)', m.coreFloor.ns.toFixed(0),
                 m.coreFloor.min.toFixed(0), '']);
    }
    const floor = tfBackendFloor(m);
    if (floor) {
      rows.push(['C loop + tfjs-core', '(the least a TF backend for tfjs can reach)',
                 floor.ns.toFixed(0), '', '']);
    }
    tables.push({title: 'Per-op overhead: `tf.add` of two scalars + dispose (ns per op)',
                 header: ['backend', '', 'median ns', 'best ns', `peer / ${P}`], rows});
  }
  const sizeTable = (title, data, ratios) => {
    const sizes = Object.keys(data);
    const header = ['elements', '', ...backs.map((b) => `${b} ms`),
                    ...(ratios ? peers.map((p) => `× ${p}`) : [])];
    const rows = sizes.map((n) => [fmtN(n), '', ...backs.map((b) => fmtMs(data[n][b] &&
                                                                         data[n][b].ms)),
                                   ...(ratios ? peers.map((p) => fmtR(ratios[n][p])) : [])]);
    tables.push({title, header, rows});
  };
  sizeTable('Creation from a plain `Float32Array`, up to the first op (ms)', m.create.plain,
            m.ratios.create);
  if (m.create.aligned) {
    const sizes = Object.keys(m.create.aligned);
    tables.push({
      title: `Creation on ${P} by source, up to the first op (ms)`,
      header: ['elements', '', 'plain Float32Array', 'aligned (backend.alloc)',
               'read back from TF'],
      rows: sizes.map((n) => [fmtN(n), '', fmtMs(m.create.plain[n][P] && m.create.plain[n][P].ms),
                              fmtMs(m.create.aligned[n][P] && m.create.aligned[n][P].ms),
                              fmtMs(m.create.readback[n][P] && m.create.readback[n][P].ms)]),
    });
  }
  sizeTable('Creation from data read back from the backend (`dataSync()` output), up to the ' +
            'first op (ms)', m.create.readback, null);
  sizeTable('Readback: `dataSync()` of an op\'s output (ms)', m.readback, m.ratios.readback);
  {
    const size = (m.roundTrip[P] || Object.values(m.roundTrip)[0] || {}).size;
    tables.push({
      title: `Round trip JS → TF → JS → TF of ${fmtN(size)} float32 (tensor, add 1, dataSync, ` +
             'tensor, 1-element slice read) (ms)',
      header: ['backend', '', 'ms', `peer / ${P}`],
      rows: backs.map((b) => [b, '', fmtMs(m.roundTrip[b] && m.roundTrip[b].ms),
                              b === P ? '' : fmtR(m.ratios.roundTrip[b])]),
    });
  }
  if (m.readbackInHeap && Object.keys(m.readbackInHeap).length) {
    const any = m.readbackInHeap[P] || Object.values(m.readbackInHeap)[0];
    tables.push({
      title: `add + dataSync + dispose of a ${fmtN(any.size)}-element tensor in a realistic heap ` +
             `(a model built, ${fmtN(any.objects)} JS objects alive), against reading one ` +
             'element of it (ms)',
      header: ['backend', '', 'full read median', 'mean', '1-element median', 'mean',
               `peer / ${P}`],
      rows: backs.map((b) => {
        const r = m.readbackInHeap[b];
        return [b, '', fmtMs(r && r.ms), fmtMs(r && r.meanMs), fmtMs(r && r.oneMs),
                fmtMs(r && r.oneMeanMs), b === P ? '' : fmtR(m.ratios.readbackInHeap[b])];
      }),
    });
  }
  return tables;
}

function rssTable(results) {
  const rows = Object.entries(results.rss).map(([k, v]) => {
    const [b, source] = k.split('/');
    return [b, source, v.error ? `error: ${v.error}` : v.peakDeltaMB.toFixed(0),
            v.error ? '' : v.rssDeltaMB.toFixed(0)];
  });
  return {title: 'Peak RSS added by a 400 MB float32 tensor (fresh process; tensor + first op)',
          header: ['backend', 'source', 'peak RSS +MB', 'RSS after +MB'], rows};
}

function clientsTable(results) {
  const P = results.primary;
  const backends = Object.keys(results.clients[0].results);
  const peers = backends.filter((b) => b !== P);
  const header = ['client', 'call', ...backends.map((b) => `${b} ms`), ...peers.map((p) => `× ${p}`)];
  const rows = results.clients.flatMap((row) => ['first', 'steady'].map((when) => [
    row.client, when,
    ...backends.map((b) => { const r = row.results[b]; return r.error ? 'error' : fmtMs(r[when].ms); }),
    ...peers.map((p) => fmtR(row.ratios[when][p])),
  ]));
  return {title: 'Real client libraries of tfjs-node (scripts/clients.js): ms per call of the ' +
                 'whole pipeline on one sample image; first call after loading the models, and ' +
                 'the median of 10 later calls; medians over worker processes',
          header, rows};
}

function servingTable(s) {
  const header = ['backend', 'loop delay p50 ms', 'p99', 'max', 'latency p50 ms', 'p99',
                  'req/s', 'JS busy ms/req', 'pings answered'];
  const rows = Object.entries(s.backends || {}).map(([b, r]) => r.error ?
    [b, `error: ${r.error.split('\n')[0].slice(0, 80)}`, '', '', '', '', '', '', ''] :
    [b, fmtMs(r.loopDelayMs.p50), fmtMs(r.loopDelayMs.p99), fmtMs(r.loopDelayMs.max),
     fmtMs(r.latencyMs.p50), fmtMs(r.latencyMs.p99), r.requestsPerSecond.toFixed(0),
     fmtMs(r.busyMsPerRequest), String(r.pingMs.count)]);
  return {title: `Serving (benches/serving.js${s.date ? `, ${s.date}` : ''}): ${s.model} behind node:http, ${s.clients} ` +
                 `concurrent clients for ${s.seconds} s per backend after ${s.warmupSeconds} s ` +
                 'of warm-up, /ping polled every 5 ms; event-loop delay of the server\'s ' +
                 'thread, latency seen by the clients, JS busy time = event-loop utilization × ' +
                 'wall time / requests',
          header, rows};
}

/** The serving table as text (`benches/serving.js` prints it too). */
function servingText(serving) {
  const t = servingTable(serving);
  return t.title + '\n' + table(t.header, t.rows);
}

/** tf.node's distributed runtime on 127.0.0.1 (benches/distributed.js). */
function distributedTable(results) {
  const d = results.distributed;
  const rows = [
    ['scalar tf.add + dataSync', fmtMs(d.scalarOp.localMs), fmtMs(d.scalarOp.remoteMs)],
    ['predict, dense 784-128-10, 32 rows, + dataSync', fmtMs(d.predict.localMs),
     fmtMs(d.predict.remoteMs)],
  ];
  const train = d.training.map((t) => [`${t.workers}`, fmtMs(t.ms),
                                       t.samplesPerSecond.toFixed(0)]);
  return {
    title: 'Round trip, median ms per call: this process against a worker process on ' +
           '127.0.0.1 (tf.node.withDevice)',
    header: ['call', 'local ms', 'remote ms'], rows,
    trainTitle: `Data-parallel training (tf.node.distributed.fit, dense 64-256-10, ` +
                `${d.train.samples} samples, global batch ${d.train.batchSize}, ` +
                `${d.training[0].epochs} timed epochs), on ${d.cores} cores`,
    trainHeader: ['workers', 'ms (slowest worker)', 'samples / s'], trainRows: train,
  };
}

/**
 * Time to a first result (issue 40): cold starts' phases (benches/cold_start.js), inputs of many
 * shapes (benches/shapes.js) and the compute-bound rows against bare TF graphs (run.js
 * `runTfGraph`), each a table where the run measured it.
 */
function firstResultTables(results) {
  const P = results.primary;
  const tables = [];
  const cold = results.coldStart;
  if (cold) {
    const rows = Object.entries(cold).flatMap(([model, byBackend]) =>
      Object.entries(byBackend).map(([b, r]) => (r.error ? [model, b, `error: ${r.error.slice(0, 80)}`,
                                                              '', '', '', '', ''] :
        [model, b, fmtMs(r.require), fmtMs(r.load), fmtMs(r.call), fmtMs(r.read),
         fmtMs(r.process),
         b === P ? '' : fmtR(ratio(r.process, byBackend[P] && byBackend[P].process))])));
    tables.push({
      title: 'Cold starts: a fresh process requires the backend, loads a GraphModel shipped in ' +
             'an npm package (@vladmandic/human\'s blazeface, 0.5 MB, and centernet, 4.0 MB), ' +
             'predicts once on zeros, reads the result and exits (benches/cold_start.js); ' +
             `${CODE_CACHE}: ${P} with V8's code cache turned on (TFJS_NODE_RS_CODE_CACHE), ` +
             'made by an earlier run of the model; ms of ' +
             'each phase and of the whole process (exit included) as its parent timed it, ' +
             'medians of runs alternating between backends; × = peer\'s process ms / ours',
      header: ['model', 'backend', 'require', 'load', 'first call', 'read', 'process', '×'],
      rows,
    });
  }
  const shapes = results.shapes;
  if (shapes) {
    const rows = Object.entries(shapes).map(([b, r]) => (r.error ?
      [b, `error: ${r.error.slice(0, 80)}`, '', '', '', '', '', '', '', ''] :
      [b === 'keras' ? BARE_GRAPH : b, fmtMs(r.fixedMs), fmtMs(r.fixedMeanMs), fmtMs(r.variableMs),
       f2(r.variableMs / r.fixedMeanMs), fmtMs(r.newWidthMs), fmtMs(r.seenWidthMs),
       r.rssDeltaMB.toFixed(0),
       r.graphsAlive == null ? '—' : String(r.graphsAlive),
       b === P ? '' : fmtR(ratio(r.variableMs, shapes[P].variableMs))]));
    const any = Object.values(shapes).find((r) => !r.error);
    tables.push({
      title: 'Inputs of many shapes: a convnet (conv2d of 8 filters on [null, null, 3], global ' +
             'average pooling, dense 4) predicting 800 images of one shape, 800 of one shape ' +
             `of the widths' mean (${any ? any.meanWidth : '—'}), and 800 over ` +
             `${any ? any.widths : '—'} widths each seen twice, a fresh model each, ms per ` +
             'call from its first (benches/shapes.js), and the widths\' calls apart: a width\'s ' +
             'first call (where oneDNN\'s convolution, in TF, creates its primitive for each new ' +
             'shape; this package runs this conv on its own kernel, which has none) and ' +
             `its second; RSS added by the widths' run; ${BARE_GRAPH}: the same convnet and ` +
             'inputs as one `tf.function` over any height and width, called from Python ' +
             '(TF\'s own per-shape cost, under Python\'s per-call one); × = peer\'s ms per ' +
             'call over the widths / ours',
      header: ['backend', 'one shape', 'mean width', 'many widths', 'many / mean',
               'a width\'s first call', 'its second', 'RSS +MB', 'call graphs', '×'],
      rows,
    });
  }
  const graph = results.tfGraph;
  if (graph) {
    const peak = results.fmaPeak && results.fmaPeak.gflops;
    const rows = Object.entries(graph).flatMap(([model, row]) => ['predict', 'fit'].map((m) => {
      const ms = (b) => row[b] && row[b][`${m}Ms`];
      const roof = roofline(row, m, P, peak);
      return [model, m, fmtMs(ms(P)), fmtMs(ms('tfjs-node')), fmtMs(ms('tfGraph')),
              fmtR(ratio(ms('tfjs-node'), ms(P))), fmtR(ratio(ms(P), ms('tfGraph'))),
              roof ? f2(roof.gflop) : '—', roof ? roof.rate.toFixed(0) : '—',
              roof && roof.ofPeak != null ? percent(roof.ofPeak) : '—',
              roof && roof.twiceNodeOfPeak != null ? percent(roof.twiceNodeOfPeak) : '—'];
    }));
    tables.push({
      title: 'The compute-bound suite rows against the same models as bare TF graphs (forward ' +
             'pass and training step each one `tf.function` called from Python, no Keras loop: ' +
             'what this package\'s call graphs run on TF\'s kernels); ms per predict / per ' +
             'fit epoch, medians of processes alternating; GFLOP of a call as TF\'s profiler ' +
             'counts them for the bare graph, the rate this package computes them at, that ' +
             'rate against the machine\'s peak of float32 multiply-adds on all cores ' +
             `(benches/c/fma_peak.c: ${peak ? `${peak.toFixed(0)} GFLOP/s` : 'not measured'}), ` +
             'and the share of that peak a call at twice tfjs-node\'s speed would take',
      header: ['model', 'call', `${P} ms`, 'tfjs-node ms', `${BARE_GRAPH} ms`, '× tfjs-node',
               `${P} / bare graph`, 'GFLOP', `${P} GFLOP/s`, 'of FMA peak',
               '2× tfjs-node needs'],
      rows,
    });
  }
  return tables;
}

/**
 * A compute-bound row against the machine's ceiling: the GFLOP of a `method` call, the rate of
 * backend `P` (GFLOP/s), its share of `peak`, and the share a call at twice tfjs-node's speed
 * would take. Null without a count.
 */
function roofline(row, method, P, peak) {
  const gflop = row.gflop && row.gflop[method];
  const ms = (b) => row[b] && row[b][`${method}Ms`];
  if (!gflop || !ms(P)) return null;
  const rate = gflop / (ms(P) / 1e3);
  const twiceNode = ms('tfjs-node') ? gflop / (ms('tfjs-node') / 2e3) : null;
  return {gflop, rate, ofPeak: peak ? rate / peak : null,
          twiceNodeOfPeak: peak && twiceNode ? twiceNode / peak : null};
}

function percent(share) {
  return `${Math.round(share * 100)}%`;
}

function targetRows(results) {
  return results.targets.map((t) => [t.name, t.goal, t.value, t.met ? 'met' : 'NOT met',
                                     t.detail || '']);
}

function text(results) {
  const parts = [];
  if (results.models) {
    for (const t of modelTables(results)) {
      parts.push(`${t.title}; × = peer ms / ${results.primary} ms (above 1: ` +
                 `${results.primary} faster)\n` + table(t.header, t.rows));
    }
    const notes = modelNotes(results);
    if (notes.length) parts.push(notes.map((n) => `  ${n}`).join('\n'));
  }
  if (results.micro) {
    for (const t of microTables(results)) parts.push(t.title + '\n' + table(t.header, t.rows));
  }
  if (results.rss) {
    const t = rssTable(results);
    parts.push(t.title + '\n' + table(t.header, t.rows));
  }
  for (const t of firstResultTables(results)) parts.push(t.title + '\n' + table(t.header, t.rows));
  if (results.clients) {
    const t = clientsTable(results);
    parts.push(t.title + '\n' + table(t.header, t.rows));
  }
  if (results.serving && results.serving.backends) parts.push(servingText(results.serving));
  if (results.distributed) {
    const t = distributedTable(results);
    parts.push(t.title + '\n' + table(t.header, t.rows));
    parts.push(t.trainTitle + '\n' + table(t.trainHeader, t.trainRows));
  }
  if (results.targets.length) {
    parts.push('Targets\n' + table(['target', 'goal', 'measured', '', 'detail'],
                                   targetRows(results), 'llrll'));
  }
  const skipped = Object.entries(results.backends).filter(([, v]) => !v.available);
  for (const [b, v] of skipped) parts.push(`(${b} skipped: ${v.note})`);
  return parts.join('\n\n') + '\n';
}

// How the model tables were measured, and why so (RESULTS.md's method section).
const MODEL_METHOD = [
  'Models and the suite\'s method: `../shared/reference/benchmark-suite.md`; the user workloads ' +
  'and the GraphModel: `benches/models.js` (`benches/fixtures/graph_convnet`, made by ' +
  '`tensorflowjs_converter` in `scripts/make_fixtures.py bench`); the Keras column: ' +
  '`benches/keras/worker.py`, the same architectures (the parameter counts are checked against ' +
  'this package\'s; a model that differs is an error, not a number).',
  '',
  'Each (backend, model) runs in a process of its own that does what a user program does: build ' +
  'the model, compile, `fit` one epoch (the **first fit**), `fit` 10 epochs (**fit**: their ' +
  'total / 10), then one warm-up `predict` (the **first predict**, after training) and 20 timed ' +
  '`predict` calls (**predict**: their total / 20), each `predict` + `dataSync()` of every ' +
  'output + dispose; a fit is followed by a `dataSync()` of the first trainable weight. The ' +
  '**whole program** is the time from the build to the end of the last predict (none where a ' +
  'process ran fewer calls, or its fit failed): what a program that trains and then predicts ' +
  'waits for in all. The **whole process** is the same end from the process\'s start: the ' +
  'backend\'s `require` (or Python\'s `import tensorflow`, read from `/proc` in 10 ms steps) ' +
  'and the harness\'s own start included, which a program that runs once pays too. ' +
  '`predict` keeps its default `batchSize` of 32 (the batch of 128 runs as 4 × 32), in tfjs ' +
  'and Keras alike. A cell is the median over the processes; no GC is forced anywhere. ' +
  'This package runs 5 processes per model with deferring on and 5 with it off (21 and 21 ' +
  'for a model whose first process took under 3 s: its timed calls add up to a few ms), each ' +
  'pair back to back, which of the two first alternating, and **× defer-off** is the median ' +
  'of the pairs\' own ratios (apart, one backend\'s processes differed 2-3× between passes of ' +
  'a run). Each such median comes with a 95% confidence interval that assumes nothing of the ' +
  'ratios\' distribution (the k-th smallest and largest pair, k from the binomial ' +
  'distribution); a row below 0.95 whose interval reaches 1 is reported as within noise, ' +
  'one whose interval lies below 1 as slower. Only ' +
  'the pure-JS `cpu` backend runs fewer calls where the first shows they would take too long.',
  '',
  'Until this harness, `benches/` measured predict and fit on fresh models in separate cases ' +
  '(predict never ran after a fit), as the median of 5 rounds of 20 calls, each round after a ' +
  'young-generation GC, and reported the median of 3 processes\' medians. Runs that warm up over ' +
  'many calls (this package\'s deferred runs become graphs only after they have been seen, and ' +
  'wasm\'s JIT) were timed in their warm rounds only, so the slow first rounds a user\'s 20 ' +
  'calls include were hidden, and the first call after `fit`, which a trained model meets, was ' +
  'never measured.',
];

function markdown(results) {
  const mc = results.machine;
  const P = results.primary;
  const lines = [];
  lines.push('# Benchmark results', '');
  lines.push('The last full run of `npm run bench` (`benches/run.js`); regenerated by it. ' +
             'Each backend runs in processes of its own, alternating in one run. ' +
             `Ratios are peer time / ${P} time, so above 1 means ${P} (this package) is faster. ` +
             'The machine is shared and noisy: compare numbers only within this run.', '');
  lines.push(`- Date: ${results.date}`);
  lines.push(`- Machine: ${mc.cpu}, ${mc.cores} cores, ${mc.memoryGB} GB, ${mc.os}; ` +
             `Node ${mc.node}; load average at start ${mc.loadavg.join(' ')}`);
  for (const [b, v] of Object.entries(results.backends)) {
    if (!v.available) {
      lines.push(`- ${b}: skipped — ${v.note}`);
      continue;
    }
    const bits = b === 'keras' ? [`Keras ${v.keras} on Python ${v.python}`] : [`tfjs ${v.tfjs}`];
    if (v.tfVersion) bits.push(`TensorFlow ${v.tfVersion}`);
    if (b === 'wasm') bits.push(`SIMD ${v.wasmSimd ? 'on' : 'off'}, threads off (Node)`);
    if (b === 'tfjs-node') bits.push(`@tensorflow/tfjs-node 4.22.0 built by ` +
                                     '../shared/peers/tfjs-node/setup.sh');
    if (b === 'keras') bits.push('venv of benches/keras/setup.sh');
    if (b === P) bits.push('this package');
    if (b === 'defer-off') bits.push('this package with TFJS_NODE_RS_DEFER=0');
    lines.push(`- ${b}: ${bits.join(', ')}`);
  }
  const passes = results.options.passes || 1;
  lines.push(`- ${passes} worker process${passes > 1 ? 'es' : ''} per model and backend (cpu: ` +
             `1), alternating between backends; total run ${results.seconds} s`, '');
  if (results.models) {
    lines.push('## Models', '', ...MODEL_METHOD, '');
    lines.push('![speed ratios per model](speed-ratios.svg)', '');
    for (const t of modelTables(results)) {
      lines.push(`### ${t.title}`, '', mdTable(t.header, t.rows), '');
    }
    const notes = modelNotes(results);
    if (notes.length) lines.push(...notes.map((n) => `- ${n}`), '');
  }
  if (results.micro) {
    lines.push('## Micro-benchmarks', '');
    const perOp = results.micro.perOp[P];
    if (perOp && perOp.processes) {
      lines.push(`Each number is the median of ${perOp.processes.length} worker processes per ` +
                 'backend (the backends\' order rotating between passes) of each process\'s ' +
                 'median.', '');
    }
    for (const t of microTables(results)) {
      lines.push(`### ${t.title}`, '', mdTable(t.header, t.rows), '');
    }
    if (results.micro.cFloor && results.micro.cFloor.ns) {
      lines.push('The C floor is `benches/c/tfe_add_loop.c` (op created, executed and deleted ' +
                 'per call), median of 3 runs of the best of 5 rounds each.', '');
    }
    if (results.micro.coreFloor) {
      lines.push('"tfjs-core alone" is the same `tf.add` loop on a backend whose one kernel ' +
                 'adds two scalars in JS (`benches/core_floor.js`), in worker processes of its ' +
                 'own taking turns with the backends: the cost of tfjs-core\'s dispatch, which ' +
                 'every backend pays on top of its own work.', '');
    }
  }
  if (results.rss) {
    const t = rssTable(results);
    lines.push('## Memory', '', `### ${t.title}`, '', mdTable(t.header, t.rows), '');
  }
  const firstResult = firstResultTables(results);
  if (firstResult.length) {
    lines.push('## Time to a first result', '');
    for (const t of firstResult) lines.push(`${t.title}:`, '', mdTable(t.header, t.rows), '');
  }
  if (results.clients) {
    const t = clientsTable(results);
    lines.push('## Real client libraries', '', t.title + '.', '', mdTable(t.header, t.rows), '');
  }
  if (results.serving && results.serving.backends) {
    const t = servingTable(results.serving);
    lines.push('## Serving', '', t.title + '.', '', mdTable(t.header, t.rows, 1), '');
  }
  if (results.distributed) {
    const t = distributedTable(results);
    lines.push('## Beyond one machine', '', `${t.title}:`, '', mdTable(t.header, t.rows), '',
               `${t.trainTitle}:`, '', mdTable(t.trainHeader, t.trainRows), '',
               'Each remote op is one gRPC request, which TF sends without waiting for the one ' +
               'before; the remote predict above ran op by op (inside withDevice, a whole call ' +
               'is one request now: benches/remote_calls.js). With 2 cores the two ' +
               'workers share them and add an all-reduce per gradient each step: a second ' +
               'worker cannot show a speed-up here; it needs cores (or machines) of its own.',
               '');
  }
  if (results.targets.length) {
    lines.push('## Targets', '', mdTable(['target', 'goal', 'measured', '', 'detail'],
                                         targetRows(results), 1), '');
  }
  return lines.join('\n');
}

// ------------------------------------------------------------------ SVG chart

function esc(s) {
  return String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

// Horizontal grouped bars, one group per (model, method), one bar per peer, on a log axis with
// a line at 1 (parity).
function svg(results) {
  const peers = peersOf(results);
  const rows = (results.models || []).filter((r) => peers.some((p) => r.ratios[p] != null));
  const all = rows.flatMap((r) => peers.map((p) => r.ratios[p])).filter((x) => x > 0);
  const lo = Math.min(0.5, ...all.map((x) => x / 1.2));
  const hi = Math.max(2, ...all.map((x) => x * 1.2));
  const lmin = Math.floor(Math.log2(lo)), lmax = Math.ceil(Math.log2(hi));
  const W = 860, left = 230, right = 40, top = 70, barH = 9, gap = 10;
  const groupH = peers.length * barH + gap;
  const H = top + rows.length * groupH + 50;
  const x = (v) => left + (Math.log2(v) - lmin) / (lmax - lmin) * (W - left - right);
  const o = [];
  o.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" ` +
         `viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="11">`);
  o.push(`<rect width="${W}" height="${H}" fill="white"/>`);
  o.push(`<text x="${W / 2}" y="20" text-anchor="middle" font-size="14" font-weight="bold">` +
         `${esc(results.primary)} (tfjs-node-rs) speed ratio per model: peer time / our time` +
         '</text>');
  o.push(`<text x="${W / 2}" y="37" text-anchor="middle" fill="#555">log scale; right of the ` +
         `line at 1 = faster than the peer. ${esc(results.date.slice(0, 10))}, ` +
         `${esc(results.machine.cpu)}, ${results.machine.cores} cores</text>`);
  // legend
  peers.forEach((p, i) => {
    const lx = left + i * 130;
    o.push(`<rect x="${lx}" y="47" width="12" height="10" fill="${COLORS[p]}"/>`);
    o.push(`<text x="${lx + 16}" y="56">vs ${esc(p)}</text>`);
  });
  // grid
  const axisY = top + rows.length * groupH;
  for (let e = lmin; e <= lmax; e++) {
    const v = 2 ** e;
    const gx = x(v).toFixed(1);
    o.push(`<line x1="${gx}" y1="${top - 4}" x2="${gx}" y2="${axisY}" ` +
           `stroke="${e === 0 ? '#000' : '#ddd'}" stroke-width="${e === 0 ? 1.5 : 1}"/>`);
    const step = lmax - lmin > 12 ? 2 : 1;  // label every other power of 2 on a wide axis
    if (e % step === 0) {
      o.push(`<text x="${gx}" y="${axisY + 14}" text-anchor="middle">` +
             `${v >= 1 ? v : `1/${1 / v}`}×</text>`);
    }
  }
  rows.forEach((r, i) => {
    const gy = top + i * groupH;
    o.push(`<text x="${left - 8}" y="${gy + peers.length * barH / 2 + 4}" ` +
           `text-anchor="end">${esc(r.model)} ${esc(r.method)}</text>`);
    peers.forEach((p, j) => {
      const v = r.ratios[p];
      const y = gy + j * barH;
      if (!(v > 0)) {
        o.push(`<text x="${(x(1) + 3).toFixed(1)}" y="${y + barH - 1.5}" font-size="8.5" ` +
               `fill="#999">n/a (${esc(p)})</text>`);
        return;
      }
      const x0 = x(1), x1 = x(v);
      const bx = Math.min(x0, x1), bw = Math.max(1, Math.abs(x1 - x0));
      o.push(`<rect x="${bx.toFixed(1)}" y="${y}" width="${bw.toFixed(1)}" height="${barH - 1}" ` +
             `fill="${COLORS[p]}"><title>${esc(`${r.model} ${r.method} vs ${p}: ` +
                                                 `${fmtR(v)}×`)}</title></rect>`);
      const tx = v >= 1 ? x1 + 3 : x1 - 3;
      o.push(`<text x="${tx.toFixed(1)}" y="${y + barH - 1.5}" font-size="8.5" ` +
             `text-anchor="${v >= 1 ? 'start' : 'end'}" fill="#333">${fmtR(v)}</text>`);
    });
  });
  o.push(`<text x="${(left + W - right) / 2}" y="${axisY + 32}" text-anchor="middle" ` +
         'fill="#555">geometric mean: ' +
         peers.map((p) => `${esc(p)} ${fmtR(geomean(rows.map((r) => r.ratios[p])))}×`)
             .join(', ') + '</text>');
  o.push('</svg>');
  return o.join('\n') + '\n';
}

module.exports = {derive, text, markdown, svg, servingText};
