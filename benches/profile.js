'use strict';
// Where the time goes, on one backend, under V8's sampling profiler (only the measured loop is
// profiled, not start-up); prints the functions with the most self time. Time inside a native
// addon is charged to the JS function that called it; `perf` splits that part further.
//
//   node benches/profile.js [backend=tensorflow] [op] [iterations=300000]
//       the per-op loop: tf.add of two scalars + dispose
//   node benches/profile.js [backend] MODEL [predict|fit] [iterations=20]
//       a model of the suite (benches/models.js), as the suite measures it
//   perf record -g node --perf-basic-prof benches/profile.js tensorflow op 1500000 --no-prof
//
// The raw profile is written to os.tmpdir() for Chrome DevTools.

const fs = require('fs');
const os = require('os');
const path = require('path');
const inspector = require('inspector');

const args = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const backendName = args[0] || 'tensorflow';
const target = args[1] || 'op';
const method = target === 'op' ? null : (args[2] || 'predict');
const iterations = Number(args[target === 'op' ? 2 : 3] || (target === 'op' ? 300000 : 20));
const profile = !process.argv.includes('--no-prof');

function post(session, method, params) {
  return new Promise((resolve, reject) => session.post(method, params || {},
                                                       (e, r) => (e ? reject(e) : resolve(r))));
}

function summarize(prof) {
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map();
  const dt = prof.timeDeltas;
  for (let i = 0; i < prof.samples.length; i++) {
    const f = byId.get(prof.samples[i]).callFrame;
    const where = f.url ? `${path.basename(f.url)}:${f.lineNumber + 1}` : '';
    const key = `${f.functionName || '(anonymous)'} ${where}`.trim();
    self.set(key, (self.get(key) || 0) + (dt[i] || 0));
  }
  const total = [...self.values()].reduce((s, x) => s + x, 0);
  console.log(`\nself time, top 30 of ${(total / 1000).toFixed(0)} ms sampled:`);
  [...self.entries()].sort((x, y) => y[1] - x[1]).slice(0, 30).forEach(([k, v]) => {
    console.log(`${(100 * v / total).toFixed(1).padStart(5)}%  ${k}`);
  });
}

async function main() {
  process.env.TF_CPP_MIN_LOG_LEVEL = process.env.TF_CPP_MIN_LOG_LEVEL || '2';
  const {loadBackend} = require('./worker');
  const {tf} = await loadBackend(backendName);
  let body;
  if (target === 'op') {
    const a = tf.scalar(1), b = tf.scalar(2);
    body = async (n) => { for (let i = 0; i < n; i++) tf.add(a, b).dispose(); };
    await body(20000);
  } else {
    const models = require('./models');
    const spec = models.byName(target);
    if (!spec) throw new Error(`unknown model ${target}`);
    const model = await models.build(tf, spec);
    const xs = models.inputs(tf, spec);
    if (method === 'predict') {
      body = async (n) => {
        for (let i = 0; i < n; i++) {
          const out = model.predict(xs);
          for (const o of Array.isArray(out) ? out : [out]) o.dataSync();
          tf.dispose(out);
        }
      };
    } else {
      const ys = models.targets(tf, spec);
      body = async (n) => {
        await model.fit(xs, ys, {batchSize: spec.batch, epochs: n, verbose: 0,
                                 yieldEvery: 'never'});
        model.trainableWeights[0].read().dataSync();
      };
    }
    await body(1);
  }
  const what = target === 'op' ? 'tf.add + dispose' : `${target} ${method}`;
  const session = new inspector.Session();
  if (profile) {
    session.connect();
    await post(session, 'Profiler.enable');
    await post(session, 'Profiler.setSamplingInterval', {interval: 50});
    await post(session, 'Profiler.start');
  }
  const t0 = process.hrtime.bigint();
  await body(iterations);
  const ns = Number(process.hrtime.bigint() - t0) / iterations;
  console.log(`${backendName}: ${ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : `${ns.toFixed(0)} ns`}` +
              ` per ${what}${profile ? ' (under the profiler)' : ''}`);
  if (profile) {
    const {profile: prof} = await post(session, 'Profiler.stop');
    const file = path.join(os.tmpdir(), `profile-${backendName}-${target}-${process.pid}.cpuprofile`);
    fs.writeFileSync(file, JSON.stringify(prof));
    summarize(prof);
    console.log(`\nprofile: ${file}`);
  }
  process.exit(0);
}

main();
