'use strict';
// Remote model calls over a network with delay: worker processes in network namespaces of their
// own behind relays that add a round trip time of 0 (the relay alone), 0.5, 2 and 10 ms
// (scripts/netns.js: half of it each way). Per delay:
// - latency: `withDevice(worker, () => model.predict(x))` and `await data()`, dense 784-128-10
//   on 32 rows, median ms, op by op (call graphs off) and as one whole-call graph; in round
//   trips (ms over the added round trip time, where that is large against the machine's own);
// - serving: requests per second of an HTTP server in this process whose every request sends
//   its predict to the worker, `CLIENTS` clients with keep-alive at once, for `SERVE_MS`;
// - remote fit: `await withDevice(worker, () => model.fit(...))` of the dense 784-128-10 model
//   (`FIT` samples, batches of 32) on the one worker, samples per second of the timed epoch,
//   op by op (call graphs off) and with each training step one call of its graph;
// - training: `tf.node.distributed.fit` in 2 worker processes (benches/distributed.js's model),
//   samples per second of the timed epoch.
// Ratios are printed, nothing is asserted. Needs root for `ip netns` (skips with why, else).
//
//   node benches/remote_calls.js [--json FILE] [--delays MS,MS,...]

const fs = require('fs');
const http = require('http');

const tf = require('..');
const {freePorts} = require('../js/node/distributed');
const {delayedWorkers} = require('../scripts/netns');
const {task, training, denseModel, WORKER} = require('./distributed');
const {median} = require('./stats');

/** Added round trip times, ms. */
const DELAYS_MS = [0, 0.5, 2, 10];
const CLIENTS = 8;
const SERVE_MS = 1500;
const CALLS = 20;
/** The remote fit's data: samples, batch size. */
const FIT = {samples: 1024, batchSize: 32};

/** Median ms of `CALLS` remote predicts read with `await data()`, after 3 warm-ups. */
async function remotePredictMs(model, x) {
  const ms = [];
  for (let i = 0; i < CALLS + 3; i++) {
    const start = performance.now();
    const y = tf.node.withDevice(WORKER, () => model.predict(x));
    await y.data();
    y.dispose();
    if (i >= 3) ms.push(performance.now() - start);
  }
  return median(ms);
}

/** Requests per second of an HTTP server whose requests each predict on the worker. */
async function serve(model, x) {
  const server = http.createServer(async (req, res) => {
    const y = tf.node.withDevice(WORKER, () => model.predict(x));
    const values = await y.data();
    y.dispose();
    res.end(String(values[0]));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const agent = new http.Agent({keepAlive: true, maxSockets: CLIENTS});
  const get = () => new Promise((resolve, reject) => {
    http.get({host: '127.0.0.1', port: server.address().port, agent}, (res) => {
      res.resume();
      res.on('end', resolve);
    }).on('error', reject);
  });
  const end = performance.now() + SERVE_MS;
  let done = 0;
  await Promise.all(Array.from({length: CLIENTS}, async () => {
    while (performance.now() < end) {
      await get();
      done++;
    }
  }));
  agent.destroy();
  await new Promise((resolve) => server.close(resolve));
  return done / SERVE_MS * 1e3;
}

/**
 * Samples per second of a fit on the worker (`await withDevice(...)`), the epoch after a first
 * one that compiles the step (or, op by op, warms up).
 */
async function remoteFitSamplesPerSecond(model, data) {
  model.compile({optimizer: tf.train.sgd(0.05), loss: 'categoricalCrossentropy'});
  const fit = () => tf.node.withDevice(WORKER, () => model.fit(data.x, data.y, {
    batchSize: FIT.batchSize, epochs: 1, shuffle: false, verbose: 0}));
  await fit();
  const start = performance.now();
  await fit();
  return FIT.samples / (performance.now() - start) * 1e3;
}

async function atDelay(rttMs, model, x, fitData) {
  const ports = await freePorts(2);
  const network = await delayedWorkers({workers: 1, delayMs: rttMs / 2, ports: ports.slice(0, 1)});
  if (network.skip !== undefined) return {skip: network.skip};
  const result = {rttMs};
  try {
    const worker = task(['serve', JSON.stringify({worker: network.addresses})], 'ready',
                        (argv) => network.command(0, argv));
    try {
      await worker.answer;
      await tf.node.connectToCluster({worker: network.addresses},
                                     {timeoutMs: 30000, address: `${network.clientHost}:${ports[1]}`});
      for (const graphs of [false, true]) {
        tf.env().set('TFJS_NODE_RS_CALL_GRAPHS', graphs);
        const ms = await remotePredictMs(model, x);
        result[graphs ? 'graph' : 'opByOp'] = {
          ms, roundTrips: rttMs >= 2 ? ms / rttMs : null, requestsPerSecond: await serve(model, x),
          fitSamplesPerSecond: await remoteFitSamplesPerSecond(denseModel(784, 128, 10, 7),
                                                               fitData),
        };
      }
    } finally {
      worker.child.kill('SIGKILL');
    }
  } finally {
    network.close();
  }
  const fitPorts = await freePorts(2);
  const fitNetwork = await delayedWorkers({workers: 2, delayMs: rttMs / 2, ports: fitPorts});
  if (fitNetwork.skip !== undefined) return {skip: fitNetwork.skip};
  try {
    result.fit = await training(2, true, fitNetwork);
  } finally {
    fitNetwork.close();
  }
  return result;
}

async function main() {
  const model = denseModel(784, 128, 10, 7);
  const x = tf.randomUniform([32, 784], 0, 1, 'float32', 1);
  const localMs = [];
  for (let i = 0; i < CALLS; i++) {
    const start = performance.now();
    await model.predict(x).data();
    localMs.push(performance.now() - start);
  }
  const fitData = {
    x: tf.randomUniform([FIT.samples, 784], 0, 1, 'float32', 2),
    y: tf.oneHot(tf.randomUniform([FIT.samples], 0, 10, 'int32', 3), 10).toFloat(),
  };
  const results = {localPredictMs: median(localMs), delays: []};
  const delays = process.argv.indexOf('--delays');
  for (const rttMs of delays < 0 ? DELAYS_MS : process.argv[delays + 1].split(',').map(Number)) {
    const at = await atDelay(rttMs, model, x, fitData);
    results.delays.push(at);
    if (at.skip !== undefined) {
      console.log(`skipped: ${at.skip}`);
      break;
    }
    const {opByOp, graph, fit} = at;
    const trips = (r) => (r.roundTrips === null ? '-' : r.roundTrips.toFixed(2));
    console.log(`+${rttMs} ms RTT: predict ${opByOp.ms.toFixed(2)} -> ${graph.ms.toFixed(2)} ms ` +
                `(x${(opByOp.ms / graph.ms).toFixed(2)}), round trips ${trips(opByOp)} -> ` +
                `${trips(graph)}; server ${opByOp.requestsPerSecond.toFixed(0)} -> ` +
                `${graph.requestsPerSecond.toFixed(0)} req/s (x` +
                `${(graph.requestsPerSecond / opByOp.requestsPerSecond).toFixed(2)}); fit on ` +
                `the worker ${opByOp.fitSamplesPerSecond.toFixed(0)} -> ` +
                `${graph.fitSamplesPerSecond.toFixed(0)} samples/s (x` +
                `${(graph.fitSamplesPerSecond / opByOp.fitSamplesPerSecond).toFixed(2)}); ` +
                `distributed fit, 2 workers: ${fit.samplesPerSecond.toFixed(0)} samples/s`);
  }
  const out = process.argv.indexOf('--json');
  if (out >= 0) fs.writeFileSync(process.argv[out + 1], JSON.stringify(results) + '\n');
  process.exit(0);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
