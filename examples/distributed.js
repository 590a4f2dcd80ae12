'use strict';
// `node examples/distributed.js`: TensorFlow's distributed runtime between Node processes on
// this machine (README: "Beyond one machine").
//
// 1. This process starts a worker process (TF's gRPC server, `tf.node.startServer`), connects to
//    it as a client and runs an op and a model's predict there (`tf.node.withDevice`).
// 2. Two more worker processes train one model data-parallel (`tf.node.distributed.fit`): each
//    trains on its half of every batch, TF's collective ops average the gradients, and both
//    end with the same weights.
//
// On other machines, give each process the cluster's real addresses instead of 127.0.0.1.

const {fork} = require('child_process');
const net = require('net');
const tf = require('..');

const [role, clusterJson, taskIndex] = process.argv.slice(2);
// gRPC sends through http(s)_proxy when one is set; these tasks are all on this machine.
process.env.no_grpc_proxy = process.env.no_grpc_proxy || '127.0.0.1,localhost';

/** A free port on 127.0.0.1, for this example's tasks. */
function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const {port} = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** The same model and data in every process (seeded). */
function modelAndData() {
  const model = tf.sequential({layers: [
    tf.layers.dense({inputShape: [2], units: 8, activation: 'tanh',
                     kernelInitializer: tf.initializers.glorotUniform({seed: 1})}),
    tf.layers.dense({units: 1, kernelInitializer: tf.initializers.glorotUniform({seed: 2})}),
  ]});
  model.compile({optimizer: tf.train.adam(0.05), loss: 'meanSquaredError'});
  const x = tf.randomUniform([64, 2], -1, 1, 'float32', 3);
  const y = x.sum(1, true).sin();  // learn sin(a + b)
  return {model, x, y};
}

async function worker() {
  // A worker serves until its parent goes.
  process.on('disconnect', () => process.exit(0));
  const cluster = JSON.parse(clusterJson);
  if (role === 'server') {
    const server = await tf.node.startServer({cluster, jobName: 'worker', taskIndex: 0});
    process.send(`serving on ${server.target}`);
  } else {
    const {model, x, y} = modelAndData();
    const history = await tf.node.distributed.fit(model, x, y, {
      cluster, taskIndex: Number(taskIndex), batchSize: 16, epochs: 20, verbose: 0,
    });
    const loss = history.history.loss;
    const weights = Array.from(model.getWeights()[0].dataSync().slice(0, 3), (v) => v.toFixed(5));
    process.send(`task ${taskIndex}: loss on its shards ${loss[0].toFixed(4)} -> ` +
                 `${loss[loss.length - 1].toFixed(4)}, first weights ${weights.join(' ')}`);
  }
}

/** Forks this file as a task; resolves with its first message. */
function task(...args) {
  const child = fork(__filename, args, {env: {...process.env, TF_CPP_MIN_LOG_LEVEL: '2'}});
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({child, message: m}));
    child.once('exit', (code) => reject(new Error(`task ${args.join(' ')} exited (${code})`)));
  });
}

async function main() {
  // 1. Remote execution.
  const cluster = {worker: [`127.0.0.1:${await freePort()}`]};
  const server = await task('server', JSON.stringify(cluster));
  console.log(`worker process: ${server.message}`);
  await tf.node.connectToCluster(cluster, {timeoutMs: 10000});
  console.log('devices:', tf.node.listDevices().map((d) => d.name).join(', '));
  const device = '/job:worker/replica:0/task:0/device:CPU:0';
  const a = tf.tensor2d([[1, 2], [3, 4]]);
  const product = tf.node.withDevice(device, () => tf.matMul(a, a));
  console.log(`matMul ran on ${tf.node.deviceOf(product)}:`, Array.from(product.dataSync()));
  const {model, x} = modelAndData();
  const remote = tf.node.withDevice(device, () => model.predict(x));
  const local = model.predict(x);
  console.log(`predict on ${tf.node.deviceOf(remote)}; largest difference from local: ` +
              tf.max(tf.abs(tf.sub(remote, local))).dataSync()[0]);
  server.child.kill();

  // 2. Data-parallel training over two worker processes.
  const workers = {worker: [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`]};
  const trained = await Promise.all(['0', '1'].map((i) => task('fit', JSON.stringify(workers), i)));
  for (const {child, message} of trained) {
    console.log(message);
    child.kill();
  }
}

(role === undefined ? main() : worker()).catch((e) => {
  console.error(e);
  process.exit(1);
});
