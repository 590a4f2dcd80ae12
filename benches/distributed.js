'use strict';
// TF's distributed runtime from Node (tf.node.connectToCluster / withDevice /
// distributed.fit), all on 127.0.0.1: what a remote op costs against a local one, and
// data-parallel training throughput with 1 and 2 worker processes.
//
//   node benches/distributed.js [--quick] [--json FILE]   (also `npm run bench`, group
//                                                          `distributed`)
//
// - round trip: one op issued, run and read back (`dataSync`): a scalar add, and the predict of
//   a dense model (784-128-10 on 32 rows), locally and on a worker process (median ms per call);
// - training: `tf.node.distributed.fit` of a dense model on 4096 samples, global batch 256, in
//   1 and in 2 worker processes (samples per second of the timed epochs, slowest worker). On a
//   machine with few cores the workers share them: speed-up from a second worker needs cores
//   it does not take from the first.

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawn} = require('child_process');

const tf = require('..');
const {freePorts} = require('../js/node/distributed');
const {median} = require('./stats');

const WORKER = '/job:worker/replica:0/task:0/device:CPU:0';
// gRPC sends through http(s)_proxy when one is set; these tasks are all on this machine.
process.env.no_grpc_proxy = process.env.no_grpc_proxy || '127.0.0.1,localhost';

async function freeAddresses(count) {
  return (await freePorts(count)).map((p) => `127.0.0.1:${p}`);
}

/**
 * Runs this file as a task (`--task ...`); resolves with the first line starting with `word`.
 * `wrap(argv)`, when given, is the `[command, args]` that runs argv (in a network namespace).
 */
function task(args, word, wrap = (argv) => [argv[0], argv.slice(1)]) {
  const [command, commandArgs] = wrap([process.execPath, __filename, '--task', ...args]);
  const child = spawn(command, commandArgs,
                      {stdio: ['pipe', 'pipe', 'pipe'],
                       env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2'}});
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-2000);
  });
  const answer = new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`task ${args[0]} timed out: ${stderr}`)),
                             5 * 60 * 1000);
    child.stdout.on('data', (d) => {
      out += d;
      const line = out.split('\n').slice(0, -1).find((l) => l.startsWith(word + ' '));
      if (line !== undefined) {
        clearTimeout(timer);
        resolve(line.slice(word.length + 1));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`task ${args[0]} exited (${code}): ${stderr}`));
    });
  });
  return {child, answer};
}

function denseModel(inputs, hidden, outputs, seed) {
  const init = (s) => tf.initializers.glorotUniform({seed: seed + s});
  return tf.sequential({layers: [
    tf.layers.dense({inputShape: [inputs], units: hidden, activation: 'relu',
                     kernelInitializer: init(1)}),
    tf.layers.dense({units: outputs, activation: 'softmax', kernelInitializer: init(2)}),
  ]});
}

/** Median ms of `calls` runs of `fn` (which reads its result back), after 10 warm-ups. */
function timeCalls(fn, calls) {
  for (let i = 0; i < 10; i++) tf.tidy(fn);
  const ms = [];
  for (let i = 0; i < calls; i++) {
    const t0 = process.hrtime.bigint();
    tf.tidy(fn);
    ms.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(ms);
}

async function roundTrips(quick) {
  const [address] = await freeAddresses(1);
  const server = task(['serve', JSON.stringify({worker: [address]})], 'ready');
  try {
    await server.answer;
    await tf.node.connectToCluster({worker: [address]}, {timeoutMs: 30000});
    const calls = quick ? 50 : 300;
    const a = tf.scalar(1);
    const b = tf.scalar(2);
    const model = denseModel(784, 128, 10, 7);
    const x = tf.randomUniform([32, 784], 0, 1, 'float32', 1);
    const scalarOp = () => tf.add(a, b).dataSync();
    const predict = () => model.predict(x).dataSync();
    return {
      scalarOp: {localMs: timeCalls(scalarOp, calls),
                 remoteMs: timeCalls(() => tf.node.withDevice(WORKER, scalarOp), calls)},
      predict: {localMs: timeCalls(predict, calls / 5),
                remoteMs: timeCalls(() => tf.node.withDevice(WORKER, predict), calls / 5)},
    };
  } finally {
    server.child.kill('SIGKILL');
  }
}

const TRAIN = {samples: 4096, batchSize: 256, epochs: 3};

/**
 * Data-parallel fit in `workers` processes; `network` (scripts/netns.js), when given, puts
 * them behind its relays, its `addresses` theirs.
 */
async function training(workers, quick, network = null) {
  const addresses = network === null ? await freeAddresses(workers) : network.addresses;
  const cluster = JSON.stringify({worker: addresses});
  const epochs = quick ? 1 : TRAIN.epochs;
  const tasks = addresses.map((_, i) => task(['fit', cluster, String(i), String(epochs)], 'ms',
                                             network === null ? undefined :
                                               (argv) => network.command(i, argv)));
  try {
    const ms = (await Promise.all(tasks.map((t) => t.answer))).map(Number);
    const slowest = Math.max(...ms);
    return {workers, epochs, ms: slowest, samplesPerSecond: TRAIN.samples * epochs / slowest * 1e3};
  } finally {
    for (const t of tasks) t.child.kill('SIGKILL');
  }
}

/** A task process: `serve CLUSTER` (a worker's server) or `fit CLUSTER TASK EPOCHS`. */
async function runTask([mode, clusterJson, taskIndex, epochs]) {
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
  const cluster = JSON.parse(clusterJson);
  if (mode === 'serve') {
    await tf.node.startServer({cluster});
    process.stdout.write('ready 1\n');
    return;
  }
  const model = denseModel(64, 256, 10, 3);
  model.compile({optimizer: tf.train.sgd(0.05), loss: 'categoricalCrossentropy'});
  const x = tf.randomUniform([TRAIN.samples, 64], 0, 1, 'float32', 5);
  const y = tf.oneHot(tf.randomUniform([TRAIN.samples], 0, 10, 'int32', 6), 10).toFloat();
  const args = {cluster, taskIndex: Number(taskIndex), batchSize: TRAIN.batchSize, verbose: 0,
                timeoutMs: 60000};
  // The first epoch joins the group and warms up; the later ones are timed.
  await tf.node.distributed.fit(model, x, y, {...args, epochs: 1});
  const t0 = process.hrtime.bigint();
  await tf.node.distributed.fit(model, x, y, {...args, epochs: Number(epochs)});
  process.stdout.write(`ms ${Number(process.hrtime.bigint() - t0) / 1e6}\n`);
  process.exit(0);
}

/** All measurements, as benches/run.js stores them under `distributed`. */
async function measure(quick = false) {
  const trips = await roundTrips(quick);
  const train = [];
  for (const workers of [1, 2]) train.push(await training(workers, quick));
  return {...trips, training: train, cores: os.cpus().length, train: TRAIN};
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === '--task') return runTask(argv.slice(1));
  const results = await measure(argv.includes('--quick'));
  const out = argv.indexOf('--json');
  if (out >= 0) fs.writeFileSync(argv[out + 1], JSON.stringify(results) + '\n');
  else console.log(JSON.stringify(results, null, 2));
  process.exit(0);
}

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

module.exports = {measure, path: path.resolve(__filename),
  // for benches/remote_calls.js
  task, training, denseModel, WORKER, TRAIN};
