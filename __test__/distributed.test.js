'use strict';
// TF's distributed runtime from Node: worker processes serving TF's gRPC server
// (tf.node.startServer), this process as their client (connectToCluster, listDevices,
// withDevice, deviceOf), data-parallel training on TF's collectives (tf.node.distributed.fit)
// against one-process training, failures as JS errors, and a Python TF server as a worker.
// Every task is a child process on 127.0.0.1 and free ports, killed when the tests end.

const test = require('node:test');
const assert = require('node:assert');
const net = require('net');
const path = require('path');
const {spawn} = require('child_process');

const tf = require('..');
const {trainingSetup} = require('./support/cluster_model');
const {tensorflowPython} = require('./support/tensorflow_python');
const {freePorts} = require('../js/node/distributed');
const {delayedWorkers} = require('../scripts/netns');

// gRPC sends through http(s)_proxy when one is set (CI machines may set one); the tasks here are
// all on this machine. Child processes inherit it.
process.env.no_grpc_proxy = '127.0.0.1,localhost';

const TASK = path.join(__dirname, 'support', 'cluster_task.js');
/** Any child that has not said it is ready within this fails its test. */
const START_MS = 60000;
const children = new Set();

test.after(() => {
  for (const child of children) child.kill('SIGKILL');
});

/**
 * Starts `command args`; resolves with the child and its first stdout line that starts with
 * one of `words` (its answer). The child is killed at the end of the tests at the latest.
 */
function startChild(command, args, words = ['ready', 'weights', 'error']) {
  const child = spawn(command, args, {stdio: ['pipe', 'pipe', 'pipe']});
  children.add(child);
  child.on('exit', () => children.delete(child));
  let stderr = '';
  child.stderr.on('data', (d) => {
    stderr = (stderr + d).slice(-4000);
  });
  return new Promise((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${path.basename(args[0])} said nothing in ${START_MS} ms:\n${stderr}`));
    }, START_MS);
    child.stdout.on('data', (d) => {
      out += d;
      // Whole lines only: a line can arrive in pieces.
      for (const line of out.split('\n').slice(0, -1)) {
        if (words.some((w) => line.startsWith(w + ' '))) {
          clearTimeout(timer);
          resolve({child, line});
          return;
        }
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${path.basename(args[0])} exited (${code}) before answering:\n${stderr}`));
    });
  });
}

/** `model.predict(x)` on tfjs's cpu backend, the weights copied there. */
async function cpuPredict(model, x) {
  const weights = model.getWeights().map((w) => ({values: w.dataSync(), shape: w.shape}));
  const values = x.dataSync();
  await tf.setBackend('cpu');
  try {
    const copy = await tf.models.modelFromJSON(JSON.parse(JSON.stringify(model.toJSON(null, false))));
    copy.setWeights(weights.map((w) => tf.tensor(w.values, w.shape)));
    return copy.predict(tf.tensor(values, x.shape)).dataSync();
  } finally {
    await tf.setBackend('tensorflow');
  }
}

/** Runs `fn` on tfjs's cpu backend. */
async function onCpu(fn) {
  await tf.setBackend('cpu');
  try {
    return await fn();
  } finally {
    await tf.setBackend('tensorflow');
  }
}

/** The losses of `model.fit(x, y, args)`, then the weights it ends with, flat. */
async function fitOutcome(model, x, y, args) {
  const history = await model.fit(x, y, args);
  return [...history.history.loss, ...model.getWeights().flatMap((w) => Array.from(w.dataSync()))];
}

const addressesOf = (ports) => ports.map((p) => `127.0.0.1:${p}`);
const worker = (task) => `/job:worker/replica:0/task:${task}/device:CPU:0`;

function close(actual, expected, eps = 1e-4, what = '') {
  assert.strictEqual(actual.length, expected.length, `${what} length`);
  for (let i = 0; i < expected.length; i++) {
    assert.ok(Math.abs(actual[i] - expected[i]) <= eps * Math.max(1, Math.abs(expected[i])),
              `${what}[${i}] ${actual[i]} != ${expected[i]}`);
  }
}

test('arguments are checked before TF sees them', async () => {
  const cluster = {worker: ['127.0.0.1:2222']};
  await assert.rejects(tf.node.startServer({cluster: ['127.0.0.1:2222']}), TypeError);
  await assert.rejects(tf.node.startServer({cluster: {Worker: ['127.0.0.1:2222']}}), /job name/);
  await assert.rejects(tf.node.startServer({cluster: {worker: ['127.0.0.1:70000']}}),
                       /not a 'host:port'/);
  await assert.rejects(tf.node.startServer({cluster: {worker: []}}), TypeError);
  await assert.rejects(tf.node.startServer({cluster, taskIndex: 1}), RangeError);
  await assert.rejects(tf.node.startServer({cluster, jobName: 'ps'}), /not a job/);
  await assert.rejects(tf.node.connectToCluster(cluster, {timeoutMs: 0}), RangeError);
  await assert.rejects(tf.node.connectToCluster({client: ['127.0.0.1:1']}), /already has a job/);
  assert.throws(() => tf.node.withDevice('', () => 1), TypeError);
  assert.throws(() => tf.node.withDevice(worker(0), 1), TypeError);
  assert.throws(() => tf.node.deviceOf([1]), TypeError);
  await assert.rejects(tf.node.distributed.fit({}, null, null, {cluster, taskIndex: 0}),
                       TypeError);
  assert.throws(() => tf.node.distributed.allReduce(tf.scalar(1), 'Add', 'Id'), /join/);
  // Batches that cannot be split evenly are refused before the process joins a cluster.
  const {model, x, y} = trainingSetup(tf, 0);
  const pair = {worker: ['127.0.0.1:2222', '127.0.0.1:2223']};
  await assert.rejects(tf.node.distributed.fit(model, x, y, {cluster: pair, taskIndex: 0,
                                                            batchSize: 7}), RangeError);
  await assert.rejects(tf.node.distributed.fit(model, x.slice(0, 23), y.slice(0, 23),
                                               {cluster: pair, taskIndex: 0, batchSize: 8}),
                       /cannot be split evenly/);
  await assert.rejects(tf.node.distributed.fit(model, x, y, {cluster: pair, taskIndex: 0,
                                                            shuffle: true}), TypeError);
});

test('withDevice on this process\'s CPU: a whole call runs there as one function, its ' +
     'outputs staying there, equal to the call outside', () => {
  const model = tf.sequential({layers: [
    tf.layers.dense({inputShape: [3], units: 5, activation: 'relu',
                     kernelInitializer: tf.initializers.glorotUniform({seed: 8})}),
    tf.layers.dense({units: 2, kernelInitializer: tf.initializers.glorotUniform({seed: 9})})]});
  const x = tf.tensor2d([[1, -2, 3], [0.5, 0, -1]]);
  const expected = model.predict(x).dataSync();
  const replays = tf.node.callGraphStats().replays;
  const cpu = '/job:localhost/replica:0/task:0/device:CPU:0';
  for (let call = 0; call < 4; call++) {
    const y = tf.node.withDevice(cpu, () => model.predict(x));
    assert.strictEqual(tf.node.deviceOf(y), cpu);
    close(y.dataSync(), expected, 1e-6, `call ${call}`);
  }
  assert.ok(tf.node.callGraphStats().replays - replays >= 2, 'graph replays');
});

test('no op is deferred in a device scope, after a call recorded there too', () => {
  const cpu = '/job:localhost/replica:0/task:0/device:CPU:0';
  const model = tf.sequential({layers: [tf.layers.dense({inputShape: [3], units: 2})]});
  const x = tf.ones([2, 3]);
  const a = tf.ones([4]);
  // Runs of 24 ops, repeated: outside a scope they are deferred.
  const loop = () => {
    for (let i = 0; i < 50; i++) {
      tf.tidy(() => {
        let y = a;
        for (let k = 0; k < 8; k++) y = tf.relu(tf.mul(tf.add(y, 1), 2));
        y.dataSync();
      });
    }
  };
  const deferredOps = () => tf.backend().binding.stats().deferredOps;
  let before = deferredOps();
  loop();
  assert.ok(deferredOps() > before, 'deferred outside a scope');
  before = deferredOps();
  tf.node.withDevice(cpu, () => {
    // The recording ends by resuming deferred runs: the scope must keep them off.
    model.predict(x);
    loop();
  });
  assert.strictEqual(deferredOps() - before, 0);
});

test('a port already taken is a JS error with TF\'s message', async () => {
  const holder = net.createServer();
  await new Promise((resolve) => holder.listen(0, resolve));
  try {
    const port = holder.address().port;
    await assert.rejects(
        tf.node.startServer({cluster: {worker: [`127.0.0.1:${port}`]}}),
        (e) => e instanceof Error && /Could not start gRPC server/.test(e.message) &&
            e.code === 'UNKNOWN');
  } finally {
    holder.close();
  }
});

test('a server in this process: its target, TF\'s answer to stop, its port taken', async () => {
  const [port] = await freePorts(1);
  const cluster = {worker: [`127.0.0.1:${port}`]};
  const server = await tf.node.startServer({cluster, jobName: 'worker', taskIndex: 0});
  assert.strictEqual(server.target, `grpc://127.0.0.1:${port}`);
  // TF 2.21 cannot stop a started gRPC server; the server keeps serving (to the process's end).
  await assert.rejects(server.stop(), (e) => e instanceof Error && e.code === 'UNIMPLEMENTED' &&
                                             /Clean shutdown is not currently implemented/.test(e.message));
  await assert.rejects(tf.node.startServer({cluster}), /Could not start gRPC server/);
});

test('a worker that is not there: connectToCluster rejects within its timeout', async () => {
  const [port] = await freePorts(1);
  const start = Date.now();
  await assert.rejects(
      tf.node.connectToCluster({worker: [`127.0.0.1:${port}`]}, {timeoutMs: 1500}),
      (e) => e instanceof Error && e.code === 'UNAVAILABLE' && /127\.0\.0\.1/.test(e.message));
  assert.ok(Date.now() - start < 15000, `took ${Date.now() - start} ms`);
  // The process still computes locally.
  assert.deepStrictEqual(Array.from(tf.add(tf.scalar(1), 2).dataSync()), [3]);
});

test('Node worker processes run ops and models placed on them', async (t) => {
  const ports = await freePorts(2);
  const cluster = {worker: addressesOf(ports)};
  const started = await Promise.all(
      [0, 1].map((i) => startChild(process.execPath, [TASK, 'server', JSON.stringify(cluster),
                                                      String(i)])));
  for (const {line} of started) assert.match(line, /^ready grpc:\/\/127\.0\.0\.1:\d+$/);
  const [, second] = started;

  await tf.node.connectToCluster(cluster, {timeoutMs: 20000});

  await t.test('the remote devices are listed beside the local one', () => {
    const names = tf.node.listDevices().map((d) => d.name);
    assert.ok(names.includes(worker(0)), names.join(', '));
    assert.ok(names.includes(worker(1)), names.join(', '));
    assert.ok(names.some((n) => n.startsWith('/job:client/')), names.join(', '));
  });

  await t.test('an op runs on the device named, local inputs moving there', () => {
    const a = tf.tensor1d([1, 2, 3]);
    const remote = tf.node.withDevice(worker(1), () => tf.mul(a, tf.scalar(2)));
    assert.strictEqual(tf.node.deviceOf(remote), worker(1));
    assert.strictEqual(tf.node.deviceOf(remote, {backing: true}), worker(1));
    assert.deepStrictEqual(Array.from(remote.dataSync()), [2, 4, 6]);
    // Outside the scope ops run here again, on a remote tensor too.
    const local = tf.add(remote, 1);
    assert.match(tf.node.deviceOf(local), /^\/job:client\//);
    assert.deepStrictEqual(Array.from(local.dataSync()), [3, 5, 7]);
    // From one worker to the other.
    const moved = tf.node.withDevice(worker(0), () => tf.sub(remote, a));
    assert.strictEqual(tf.node.deviceOf(moved), worker(0));
    assert.deepStrictEqual(Array.from(moved.dataSync()), [1, 2, 3]);
  });

  await t.test('scopes nest, and an unknown device is TF\'s error', () => {
    const inner = tf.node.withDevice(worker(0), () => {
      const x = tf.node.withDevice(worker(1), () => tf.neg(tf.scalar(4)));
      assert.strictEqual(tf.node.deviceOf(x), worker(1));
      return tf.abs(x);
    });
    assert.strictEqual(tf.node.deviceOf(inner), worker(0));
    assert.strictEqual(inner.dataSync()[0], 4);
    assert.throws(() => tf.node.withDevice('/job:worker/replica:0/task:7/device:CPU:0',
                                           () => tf.neg(tf.scalar(1))),
                  (e) => e instanceof Error && typeof e.code === 'string' && e.code !== 'OK');
    assert.match(tf.node.deviceOf(tf.neg(tf.scalar(1))), /^\/job:client\//);
  });

  await t.test('a model predicts remotely as it does locally', () => {
    const model = tf.sequential({layers: [
      tf.layers.dense({inputShape: [4], units: 8, activation: 'relu',
                       kernelInitializer: tf.initializers.glorotUniform({seed: 3})}),
      tf.layers.dense({units: 3, activation: 'softmax',
                       kernelInitializer: tf.initializers.glorotUniform({seed: 4})}),
    ]});
    const x = tf.tensor2d(Float32Array.from({length: 20}, (_, i) => Math.sin(i)), [5, 4]);
    const expected = model.predict(x).dataSync();
    for (let call = 0; call < 3; call++) {
      // The first call runs op by op there (its outputs stay there); later ones are its
      // graph's, whose outputs come back in the call's job.
      const y = tf.node.withDevice(worker(0), () => model.predict(x));
      close(y.dataSync(), expected, 1e-5, `call ${call}`);
    }
    close(model.predict(x).dataSync(), expected, 1e-5, 'local again');
  });

  await t.test('dense, conv and RNN models predict remotely as whole-call graphs, equal to ' +
               'local, and follow setWeights', async () => {
    const seed = (s) => ({kernelInitializer: tf.initializers.glorotUniform({seed: s})});
    const models = {
      dense: [tf.sequential({layers: [
        tf.layers.dense({inputShape: [6], units: 12, activation: 'relu', ...seed(1)}),
        tf.layers.dense({units: 3, activation: 'softmax', ...seed(2)})]}), [4, 6]],
      conv: [tf.sequential({layers: [
        tf.layers.conv2d({inputShape: [8, 8, 2], filters: 4, kernelSize: 3, activation: 'relu',
                          ...seed(3)}),
        tf.layers.maxPooling2d({poolSize: 2}), tf.layers.flatten(),
        tf.layers.dense({units: 2, ...seed(4)})]}), [3, 8, 8, 2]],
      rnn: [tf.sequential({layers: [
        tf.layers.lstm({inputShape: [5, 3], units: 4, ...seed(5),
                        recurrentInitializer: tf.initializers.glorotUniform({seed: 6})}),
        tf.layers.dense({units: 2, ...seed(7)})]}), [2, 5, 3]],
    };
    for (const [name, [model, shape]] of Object.entries(models)) {
      const size = shape.reduce((a, b) => a * b);
      const x = tf.tensor(Float32Array.from({length: size}, (_, i) => Math.sin(i * 0.37)), shape);
      const expected = model.predict(x).dataSync();
      // Expected with other weights: tfjs's cpu backend, an independent computation.
      const others = model.getWeights().map((w) => tf.mul(w, -0.5));
      const replays = tf.node.callGraphStats().replays;
      for (let call = 0; call < 4; call++) {
        const y = tf.node.withDevice(worker(0), () => model.predict(x));
        close(await y.data(), expected, 1e-5, `${name} call ${call}`);
      }
      assert.ok(tf.node.callGraphStats().replays - replays >= 2, `${name}: graph replays`);
      model.setWeights(others);
      const changed = tf.node.withDevice(worker(0), () => model.predict(x));
      const onCpu = await cpuPredict(model, x);
      close(await changed.data(), onCpu, 1e-4, `${name} after setWeights`);
      close(model.predict(x).dataSync(), onCpu, 1e-4, `${name} after setWeights, local`);
    }
  });

  await t.test('a GraphModel executes remotely as a whole-call graph, equal to the file made ' +
               'by TF', async () => {
    const dir = path.join(__dirname, 'fixtures', 'model_io', 'graph_model');
    const want = require(path.join(dir, 'expected.json'));
    const model = await tf.loadGraphModel(tf.io.fileSystem(path.join(dir, 'model.json')));
    const x = tf.tensor(want.inputs.x.values, want.inputs.x.shape);
    const replays = tf.node.callGraphStats().replays;
    for (let call = 0; call < 4; call++) {
      const y = tf.node.withDevice(worker(1), () => model.execute(x));
      close(await y.data(), want.outputs.y.values, 1e-6, `call ${call}`);
    }
    assert.ok(tf.node.callGraphStats().replays - replays >= 2, 'graph replays');
  });

  await t.test('an error of a remote call is TF\'s Error at the call, as locally', () => {
    const params = tf.tensor1d([10, 20, 30]);
    const f = tf.node.function((i) => tf.gather(params, i));
    const replays = tf.node.callGraphStats().replays;
    for (let call = 0; call < 4; call++) {
      const y = tf.node.withDevice(worker(1), () => f(tf.tensor1d([2, 0], 'int32')));
      assert.deepStrictEqual(Array.from(y.dataSync()), [30, 10]);
    }
    assert.ok(tf.node.callGraphStats().replays - replays >= 1, 'graph replays');
    const local = (() => {
      try {
        f(tf.tensor1d([5, 0], 'int32')).dataSync();
      } catch (e) {
        return e;
      }
      return null;
    })();
    assert.ok(local instanceof Error, 'the local call fails');
    assert.throws(() => tf.node.withDevice(worker(1), () => f(tf.tensor1d([5, 0], 'int32'))),
                  (e) => e instanceof Error && e.code === local.code &&
                      /5 is not in \[0, 3\)/.test(e.message));
    // The error is that call's alone: TF keeps it on the executor, which the package clears, so
    // the ops and calls after it (on either worker) run. Several rounds: TF marked the executor
    // a moment after the call reported the error, so a stale error came once in some rounds.
    const w = tf.tensor2d([[0.5], [-0.5]]);
    const x = tf.tensor2d([[1, 2], [3, 4], [5, 6]]);
    for (let round = 0; round < 8; round++) {
      assert.throws(() => tf.node.withDevice(worker(1), () => f(tf.tensor1d([5, 0], 'int32'))).dataSync(),
                    /5 is not in \[0, 3\)/);
      assert.deepStrictEqual(Array.from(tf.node.withDevice(worker(0), () => tf.matMul(x, w)).dataSync()),
                             [-0.5, -0.5, -0.5], `round ${round}`);
      assert.deepStrictEqual(Array.from(tf.node.withDevice(worker(1), () => f(tf.tensor1d([1], 'int32')))
          .dataSync()), [20], `round ${round}`);
    }
  });

  await t.test('a training step in a tf.node.function runs remotely as one call, its ' +
               'variable updated as on the cpu backend', async () => {
    const train = () => {
      const w = tf.variable(tf.tensor2d([[0.5], [-0.5]]));
      const optimizer = tf.train.sgd(0.01);
      const x = tf.tensor2d([[1, 2], [3, 4], [5, 6]]);
      const y = tf.tensor2d([[1], [2], [3]]);
      const step = tf.node.function((a, b) => optimizer.minimize(
          () => tf.losses.meanSquaredError(b, tf.matMul(a, w)), true));
      const losses = [];
      for (let call = 0; call < 5; call++) {
        const place = tf.getBackend() === 'tensorflow' ? tf.node.withDevice : (_, fn) => fn();
        losses.push(place(worker(0), () => step(x, y)).dataSync()[0]);
      }
      return [...losses, ...w.dataSync()];
    };
    const replays = tf.node.callGraphStats().replays;
    const remote = train();
    assert.ok(tf.node.callGraphStats().replays - replays >= 2, 'graph replays');
    await tf.setBackend('cpu');
    let onCpu;
    try {
      onCpu = train();
    } finally {
      await tf.setBackend('tensorflow');
    }
    close(remote, onCpu, 1e-5, 'losses, then weights');
  });

  await t.test('a tf.node.function runs remotely as one call', () => {
    const w = tf.tensor2d([[1, -2], [3, 4]]);
    const f = tf.node.function((a) => tf.relu(tf.matMul(a, w)));
    const a = tf.tensor2d([[1, 2], [-1, 0.5]]);
    // [[1*1+2*3, 1*-2+2*4], [-1+1.5, 2+2]] -> relu
    for (let call = 0; call < 4; call++) {
      const y = tf.node.withDevice(worker(1), () => f(a));
      assert.deepStrictEqual(Array.from(y.dataSync()), [7, 6, 0.5, 4]);
    }
  });

  await t.test('fit inside an async withDevice trains on the worker, one call per step: ' +
               'equal to a local fit and to the cpu backend\'s', async () => {
    const fitArgs = {...trainingSetup(tf, 0).fitArgs, shuffle: false};
    const local = trainingSetup(tf, 0);
    const expected = await fitOutcome(local.model, local.x, local.y, fitArgs);
    const onCpuBackend = await onCpu(() => {
      const {model, x, y} = trainingSetup(tf, 0);
      return fitOutcome(model, x, y, fitArgs);
    });
    close(expected, onCpuBackend, 1e-4, 'local against cpu');

    const {model, x, y} = trainingSetup(tf, 0);
    const before = tf.node.callGraphStats();
    const placedInFit = [];
    const remote = await tf.node.withDevice(worker(0), async () => {
      const outcome = await fitOutcome(model, x, y, {...fitArgs, callbacks: {
        // Ops of the fit's JS after its awaits are in the scope too.
        onBatchEnd: () => placedInFit.push(tf.node.deviceOf(tf.neg(tf.scalar(1)))),
      }});
      assert.strictEqual(tf.node.deviceOf(tf.neg(tf.scalar(1))), worker(0), 'after the fit');
      return outcome;
    });
    const after = tf.node.callGraphStats();
    close(remote, expected, 1e-5, 'losses, then weights');
    assert.deepStrictEqual(new Set(placedInFit), new Set([worker(0)]));
    // 3 epochs of 3 batches: the first step compiles (placed, as its key says), the 8 others
    // replay its function on the worker.
    assert.strictEqual(after.compiled - before.compiled, 1, after.lastFailure);
    assert.ok(after.replays - before.replays >= 8, `replays ${after.replays - before.replays}`);
    assert.match(tf.node.deviceOf(tf.neg(tf.scalar(1))), /^\/job:client\//);

    // trainOnBatch and evaluate go on from there, on the other worker, as locally.
    const steps = async (m) => {
      const losses = [];
      for (let step = 0; step < 4; step++) losses.push(await m.trainOnBatch(x, y));
      const evaluated = m.evaluate(x, y, {batchSize: 8});
      return [...losses, ...await evaluated.data(), ...await m.predict(x).data()];
    };
    const onWorker = await tf.node.withDevice(worker(1), () => steps(model));
    close(onWorker, await steps(local.model), 1e-5, 'trainOnBatch losses, evaluate, predict');
  });

  await t.test('a remote fit keeps the weights on the worker between steps, read there as a ' +
               'local fit has them, and brings every variable here when its scope closes',
               async () => {
    const fitArgs = {...trainingSetup(tf, 0).fitArgs, shuffle: false};
    const weightsOf = (model) => model.getWeights().map((w) => Array.from(w.dataSync()));
    const local = trainingSetup(tf, 0);
    const expected = [];
    await local.model.fit(local.x, local.y, {...fitArgs, callbacks: {
      onEpochEnd: () => expected.push(weightsOf(local.model)),
    }});

    const {model, x, y} = trainingSetup(tf, 0);
    const devices = [];
    const read = [];
    const readAsync = [];
    const onDevice = (variables) => variables.map((v) => tf.node.deviceOf(v));
    await tf.node.withDevice(worker(0), () => model.fit(x, y, {...fitArgs, callbacks: {
      onEpochEnd: async () => {
        devices.push(onDevice(model.weights.map((w) => w.read())));
        read.push(weightsOf(model));
        readAsync.push(await Promise.all(model.getWeights().map(async (w) =>
          Array.from(await w.data()))));
      },
    }}));
    // From the second epoch on, every step is a call of the compiled step, whose new weights
    // stay on the worker: the variables hold them there, and reads see their values.
    for (let epoch = 1; epoch < expected.length; epoch++) {
      assert.deepStrictEqual(new Set(devices[epoch]), new Set([worker(0)]), `epoch ${epoch}`);
    }
    for (let epoch = 0; epoch < expected.length; epoch++) {
      close(read[epoch].flat(), expected[epoch].flat(), 1e-5, `weights after epoch ${epoch}`);
      close(readAsync[epoch].flat(), expected[epoch].flat(), 1e-5, `data() after ${epoch}`);
    }
    // Out of the scope, every variable (weights and the optimizer's slots) is here once more.
    const variables = Object.values(tf.engine().registeredVariables);
    assert.ok(variables.length >= 12, `${variables.length} variables`);
    for (const device of onDevice(variables)) assert.doesNotMatch(device, /^\/job:worker\//);
    close(weightsOf(model).flat(), expected[expected.length - 1].flat(), 1e-5, 'after the scope');
    const input = x.slice(0, 4);
    close(model.predict(input).dataSync(), local.model.predict(input).dataSync(), 1e-5,
          'a local predict after the scope');
  });

  await t.test('two async scopes interleaving place each its own ops and fits', async () => {
    const twoFits = [0, 1].map(() => trainingSetup(tf, 0));
    const fitArgs = {...twoFits[0].fitArgs, shuffle: false};
    const expected = await (() => {
      const {model, x, y} = trainingSetup(tf, 0);
      return fitOutcome(model, x, y, fitArgs);
    })();
    const outcomes = await Promise.all([0, 1].map((task) => tf.node.withDevice(worker(task),
        async () => {
          for (let turn = 0; turn < 5; turn++) {
            // Each await lets the other scope run ops before this one's next.
            await new Promise((resolve) => setImmediate(resolve));
            const y = tf.mul(tf.scalar(turn), task + 1);
            assert.strictEqual(tf.node.deviceOf(y), worker(task), `turn ${turn}`);
            assert.strictEqual((await y.data())[0], turn * (task + 1));
          }
          const {model, x, y} = twoFits[task];
          return fitOutcome(model, x, y, fitArgs);
        })));
    close(outcomes[0], expected, 1e-5, 'on worker 0');
    close(outcomes[1], expected, 1e-5, 'on worker 1');
  });

  await t.test('a timer that fires while a remote fit is awaited runs its ops here', async () => {
    const {model, x, y, fitArgs} = trainingSetup(tf, 0);
    const timerDevices = [];
    const timer = setInterval(() => timerDevices.push(tf.node.deviceOf(tf.neg(tf.scalar(1)))), 1);
    try {
      await tf.node.withDevice(worker(0), () => model.fit(x, y, {...fitArgs, callbacks: {
        // Longer than the timer's interval: it fires during the fit.
        onBatchEnd: () => new Promise((resolve) => setTimeout(resolve, 3)),
      }}));
    } finally {
      clearInterval(timer);
    }
    assert.ok(timerDevices.length > 0, 'the timer fired during the fit');
    for (const device of timerDevices) assert.match(device, /^\/job:client\//);
  });

  await t.test('an async scope resolves to its function\'s result, and rejects with its ' +
               'error, TF\'s Error too', async () => {
    const value = await tf.node.withDevice(worker(0), async () => {
      await null;
      return tf.node.deviceOf(tf.neg(tf.scalar(2)));
    });
    assert.strictEqual(value, worker(0));
    const thrown = new Error('thrown after an await');
    await assert.rejects(tf.node.withDevice(worker(0), async () => {
      await null;
      throw thrown;
    }), (e) => e === thrown);
    // TF's error from the worker, as tfjs's kernels word it.
    const params = tf.tensor1d([10, 20, 30]);
    await assert.rejects(tf.node.withDevice(worker(1), async () => {
      await null;
      return tf.gather(params, tf.tensor1d([5], 'int32')).data();
    }), (e) => e instanceof Error && typeof e.code === 'string' &&
        /index value 5 is not in \[0, 2\]/.test(e.message));
    // The scopes are closed: ops run here, and on the worker when placed there.
    assert.match(tf.node.deviceOf(tf.neg(tf.scalar(1))), /^\/job:client\//);
    assert.strictEqual((await tf.node.withDevice(worker(1), async () => tf.gather(params,
        tf.tensor1d([2], 'int32')).data()))[0], 30);
  });

  await t.test('the ops after a remote op failed on values run, each with its own result',
               () => {
    // TF fails the ops sent while a failed remote op is being marked done with that op's
    // error; before the binding waited for it, the op after a bad gather failed so 2 to 15
    // times in 100. Outputs whose shapes TF cannot infer (a gather's, a tile's) wait for the
    // worker's answer, and a read waits for the value: both would have reported it.
    const params = tf.tensor1d([10, 20, 30]);
    tf.node.withDevice(worker(1), () => {
      for (let round = 0; round < 60; round++) {
        assert.throws(() => tf.gather(params, tf.tensor1d([5], 'int32')),
                      /index value 5 is not in \[0, 2\]/);
        const kept = tf.gather(params, tf.tensor1d([round % 3], 'int32'));
        assert.deepStrictEqual(Array.from(kept.dataSync()), [10 * (round % 3 + 1)], `round ${round}`);
        assert.deepStrictEqual(Array.from(tf.tile(tf.tensor1d([round, 1]), [2]).dataSync()),
                               [round, 1, round, 1], `round ${round}`);
        assert.deepStrictEqual(Array.from(tf.neg(params).dataSync()), [-10, -20, -30]);
      }
    });
  });

  await t.test('a worker that dies: its ops fail, the others go on, reconnecting works',
               async () => {
    // Variables a scope still open leaves on the workers when connecting again (below): the
    // one on worker 0 is copied here first, the one on the dead worker cannot be.
    const kept = tf.variable(tf.tensor1d([3, 4]));
    const lost = tf.variable(tf.tensor1d([1, 2]));
    let reconnected;
    const openScope = tf.node.withDevice(worker(1), async () => {
      lost.assign(tf.add(lost, 1));
      kept.assign(tf.node.withDevice(worker(0), () => tf.mul(kept, 10)));
      await new Promise((resolve) => {
        reconnected = resolve;
      });
    });
    assert.strictEqual(tf.node.deviceOf(lost), worker(1));
    assert.strictEqual(tf.node.deviceOf(kept), worker(0));
    // A whole call compiled on this cluster, used again on the next one.
    const triple = tf.node.function((a) => tf.mul(a, 3));
    const a = tf.tensor1d([1, -2]);
    for (let call = 0; call < 3; call++) {
      assert.deepStrictEqual(Array.from(tf.node.withDevice(worker(0), () => triple(a)).dataSync()),
                             [3, -6]);
    }
    second.child.kill('SIGKILL');
    await new Promise((resolve) => second.child.once('exit', resolve));
    const start = Date.now();
    assert.throws(() => {
      const y = tf.node.withDevice(worker(1), () => tf.add(tf.scalar(1), tf.scalar(2)));
      y.dataSync();
    }, (e) => e instanceof Error && typeof e.message === 'string' && e.message.length > 0);
    assert.ok(Date.now() - start < 30000, `took ${Date.now() - start} ms`);
    const mirrored = tf.tensor1d([5, 6]);
    const before = {
      remote: tf.node.withDevice(worker(0), () => tf.add(tf.scalar(1), tf.scalar(4))),
      local: tf.add(tf.scalar(1), tf.scalar(5)),
      // TF caches the copy of `mirrored` made on worker 0 for this op.
      negated: tf.node.withDevice(worker(0), () => tf.neg(mirrored)),
    };
    assert.deepStrictEqual(Array.from(before.negated.dataSync()), [-5, -6]);
    // Not connected: the variable on the dead worker is lost, and says so; the other is here.
    await assert.rejects(tf.node.connectToCluster({worker: [cluster.worker[0]]},
                                                  {timeoutMs: 20000}),
                         /connectToCluster: a variable's value on a remote device could not be/);
    assert.throws(() => lost.dataSync(), /not been computed/);
    assert.doesNotMatch(tf.node.deviceOf(kept), /^\/job:worker\//);
    assert.ok(tf.node.listDevices().some((d) => d.name === worker(1)), 'the old cluster');
    // Connecting again goes on.
    await tf.node.connectToCluster({worker: [cluster.worker[0]]}, {timeoutMs: 20000});
    reconnected();
    await openScope;
    assert.deepStrictEqual(Array.from(kept.dataSync()), [30, 40]);
    const y = tf.node.withDevice(worker(0), () => tf.add(tf.scalar(1), tf.scalar(2)));
    assert.strictEqual(y.dataSync()[0], 3);
    assert.strictEqual(tf.node.deviceOf(y), worker(0));
    // A tensor left on the old cluster's devices is gone (an error, where TF would crash);
    // this process's own tensors stay.
    assert.throws(() => before.remote.dataSync(), /not been computed/);
    assert.throws(() => tf.add(before.remote, 1), Error);
    before.remote.dispose();
    kept.dispose();
    lost.dispose();
    assert.strictEqual(before.local.dataSync()[0], 6);
    assert.strictEqual(tf.add(before.local, 1).dataSync()[0], 7);
    // The copy cached on the old cluster is not used on the new one (it named another tensor).
    const again = tf.node.withDevice(worker(0), () => tf.mul(mirrored, tf.tensor1d([10, 10])));
    assert.deepStrictEqual(Array.from(again.dataSync()), [50, 60]);
    // Its graph is compiled anew for the new cluster, whose workers have not seen it.
    for (let call = 0; call < 3; call++) {
      assert.deepStrictEqual(Array.from(tf.node.withDevice(worker(0), () => triple(a)).dataSync()),
                             [3, -6]);
    }
  });
});

test('a worker that dies during a call: the call fails with TF\'s error, no hang', async () => {
  const ports = await freePorts(1);
  const cluster = JSON.stringify({worker: addressesOf(ports)});
  await startChild(process.execPath, [TASK, 'server', cluster, '0', '3000']);
  const start = Date.now();
  const {line} = await startChild(process.execPath, [TASK, 'block', cluster, '0'],
                                  ['error', 'done']);
  assert.match(line, /^error /);
  const {code, message} = JSON.parse(line.slice('error '.length));
  assert.strictEqual(code, 'UNAVAILABLE', message);
  assert.ok(Date.now() - start < START_MS);
});

test('data-parallel fit over 2 workers equals one-process fit on the global batches',
     async () => {
  const ports = await freePorts(2);
  const cluster = JSON.stringify({worker: addressesOf(ports)});
  const answers = await Promise.all(
      [0, 1].map((i) => startChild(process.execPath, [TASK, 'fit', cluster, String(i)])));
  const weights = answers.map(({line}) => {
    assert.match(line, /^weights /);
    return JSON.parse(line.slice('weights '.length));
  });

  const {model, x, y, fitArgs} = trainingSetup(tf, 0);
  const before = model.getWeights().map((w) => Array.from(w.dataSync()));
  await model.fit(x, y, {...fitArgs, shuffle: false});
  const expected = model.getWeights().map((w) => Array.from(w.dataSync()));

  assert.strictEqual(weights[0].length, expected.length);
  for (let i = 0; i < expected.length; i++) {
    close(weights[0][i], expected[i], 1e-4, `task 0 weight ${i}`);
    close(weights[1][i], weights[0][i], 1e-6, `task 1 weight ${i}`);
    assert.ok(expected[i].some((v, k) => Math.abs(v - before[i][k]) > 1e-3),
              `weight ${i} trained`);
  }
});

test('a worker that never joins: fit fails within its timeout', async () => {
  const ports = await freePorts(2);
  const cluster = JSON.stringify({worker: addressesOf(ports)});
  const start = Date.now();
  const {line} = await startChild(process.execPath, [TASK, 'fit', cluster, '0', '3000']);
  assert.match(line, /^error /);
  assert.match(JSON.parse(line.slice('error '.length)).message, /no worker answered/);
  assert.ok(Date.now() - start < START_MS);
});

test('a worker that stops taking part: fit fails with TF\'s error within its timeout',
     async () => {
  const ports = await freePorts(2);
  const cluster = JSON.stringify({worker: addressesOf(ports)});
  const start = Date.now();
  const [trainer, leaver] = await Promise.all([
    startChild(process.execPath, [TASK, 'fit', cluster, '0', '3000']),
    startChild(process.execPath, [TASK, 'join', cluster, '1', '3000'], ['left']),
  ]);
  assert.match(leaver.line, /^left/);
  assert.match(trainer.line, /^error /);
  const {message, code} = JSON.parse(trainer.line.slice('error '.length));
  assert.ok(['DEADLINE_EXCEEDED', 'UNAVAILABLE', 'ABORTED', 'CANCELLED'].includes(code),
            `${code}: ${message}`);
  assert.ok(Date.now() - start < START_MS);
});

test('examples/distributed.js runs: remote ops, then two workers end with equal weights',
     async () => {
  const example = path.join(__dirname, '..', 'examples', 'distributed.js');
  const child = spawn(process.execPath, [example], {stdio: ['ignore', 'pipe', 'pipe']});
  children.add(child);
  let out = '';
  child.stdout.on('data', (d) => {
    out += d;
  });
  const timer = setTimeout(() => child.kill('SIGKILL'), START_MS);
  const code = await new Promise((resolve) => child.on('exit', resolve));
  clearTimeout(timer);
  children.delete(child);
  assert.strictEqual(code, 0, out);
  assert.match(out, /matMul ran on \/job:worker\/replica:0\/task:0\/device:CPU:0: \[ 7, 10, 15, 22 \]/);
  assert.match(out, /largest difference from local: 0\n/);
  const weights = [...out.matchAll(/task \d: .*first weights (.*)/g)].map((m) => m[1]);
  assert.strictEqual(weights.length, 2, out);
  assert.strictEqual(weights[0], weights[1]);
});

const PYTHON_SERVER = `
import sys
try:
    import tensorflow as tf
except ImportError as e:
    print('skip', e, flush=True)
    sys.exit(0)
server = tf.distribute.Server({'worker': [sys.argv[1]]}, job_name='worker', task_index=0)
print('ready', server.target, flush=True)
sys.stdin.read()
`;

test('a Python tf.distribute.Server serves a Node client', async (t) => {
  const python = tensorflowPython();
  if (python === undefined) {
    t.skip('no Python with tensorflow: sh benches/keras/setup.sh makes its venv ' +
           '(or set TFJS_NODE_RS_KERAS_VENV)');
    return;
  }
  const [port] = await freePorts(1);
  const address = `127.0.0.1:${port}`;
  const {line} = await startChild(python, ['-c', PYTHON_SERVER, address], ['ready', 'skip']);
  if (line.startsWith('skip ')) {
    t.skip(`${python} has no tensorflow: ${line.slice(5)}`);
    return;
  }
  assert.match(line, /^ready grpc:\/\//);
  await tf.node.connectToCluster({worker: [address]}, {timeoutMs: 20000});
  assert.ok(tf.node.listDevices().some((d) => d.name === worker(0)));
  const a = tf.tensor2d([[1, 2], [3, 4]]);
  const y = tf.node.withDevice(worker(0), () => tf.matMul(a, a));
  assert.strictEqual(tf.node.deviceOf(y), worker(0));
  assert.deepStrictEqual(Array.from(y.dataSync()), [7, 10, 15, 22]);
});

test('a worker killed at any moment of a remote fit: the fit rejects with TF\'s error, the ' +
     'other worker goes on', async () => {
  for (let round = 0; round < 3; round++) {
    const ports = await freePorts(2);
    const cluster = {worker: addressesOf(ports)};
    const started = await Promise.all([0, 1].map((i) => startChild(
        process.execPath, [TASK, 'server', JSON.stringify(cluster), String(i)])));
    await tf.node.connectToCluster(cluster, {timeoutMs: 20000});
    const {model, x, y} = trainingSetup(tf, 0);
    // Anywhere in the fit: between steps, or while a step's call or read is in flight.
    const killAfterMs = 80 + 130 * round + Math.floor(Math.random() * 100);
    const killer = setTimeout(() => started[0].child.kill('SIGKILL'), killAfterMs);
    const start = Date.now();
    try {
      await assert.rejects(
          tf.node.withDevice(worker(0), () => model.fit(x, y, {batchSize: 8, epochs: 500,
                                                               verbose: 0})),
          (e) => e instanceof Error && typeof e.code === 'string' && e.message.length > 0,
          `killed after ${killAfterMs} ms`);
    } finally {
      clearTimeout(killer);
    }
    assert.ok(Date.now() - start < START_MS, `took ${Date.now() - start} ms`);
    const other = await tf.node.withDevice(worker(1), async () => tf.neg(tf.scalar(3)).data());
    assert.strictEqual(other[0], -3);
    started[1].child.kill('SIGKILL');
  }
});

// This process became a cluster's client in the tests above.
test('a cluster\'s client cannot also join a collective group', async () => {
  await assert.rejects(
      tf.node.distributed.join({cluster: {worker: ['127.0.0.1:2222']}, taskIndex: 0}),
      /cluster's client/);
});

/**
 * The delay each way between this process and a worker in the delayed-network test: large
 * against this machine's own latencies (well under 1 ms on loopback), so that a call's time over
 * the round trip time counts its round trips.
 */
const DELAY_MS = 25;

test('over a network with delay: a remote predict is two round trips, the JS thread serves ' +
     'meanwhile, calls overlap, a worker killed during a call is an Error and the other goes on', async (t) => {
  const ports = await freePorts(3);
  const net = await delayedWorkers({workers: 2, delayMs: DELAY_MS, ports: ports.slice(0, 2)});
  if (net.skip !== undefined) {
    t.skip(net.skip);
    return;
  }
  try {
    const cluster = {worker: net.addresses};
    const started = await Promise.all([0, 1].map((i) => {
      const [command, args] = net.command(i, [process.execPath, TASK, 'server',
        JSON.stringify(cluster), String(i)]);
      return startChild(command, args);
    }));
    await tf.node.connectToCluster(cluster, {timeoutMs: 20000,
      address: `${net.clientHost}:${ports[2]}`});
    const model = tf.sequential({layers: [
      tf.layers.dense({inputShape: [8], units: 16, activation: 'relu'}),
      tf.layers.dense({units: 16, activation: 'relu'}),
      tf.layers.dense({units: 4})]});
    const x = tf.tensor2d(Float32Array.from({length: 32}, (_, i) => Math.cos(i)), [4, 8]);
    const expected = model.predict(x).dataSync();
    const roundTrips = [];
    for (let call = 0; call < 6; call++) {
      const start = performance.now();
      const y = tf.node.withDevice(worker(0), () => model.predict(x));
      let ticks = 0;
      const timer = setInterval(() => ticks++, 1);
      const values = await y.data();
      clearInterval(timer);
      roundTrips.push((performance.now() - start) / (2 * DELAY_MS));
      close(values, expected, 1e-5, `call ${call}`);
      // The graph's calls (from the second on) run as jobs: timers fire while one is away.
      if (call >= 2) assert.ok(ticks > 0, `call ${call}: the JS thread served no timer`);
    }
    // Not a timing assert: with the delay this large, time / round trip time is the count of
    // round trips (TF sends the call without waiting, then a read of its output waits for the
    // answer and asks for the value), bounded generously on both sides.
    const median = roundTrips.slice(2).sort((a, b) => a - b)[2];
    assert.ok(median > 1.5 && median < 2.9, `round trips per call: ${roundTrips.join(', ')}`);

    // A call of 5 outputs (a training step's loss and new weights) brings them back at once:
    // about as many round trips as one output (one after another, each added one).
    const fiveOutputs = tf.node.function((a) => [1, 2, 3, 4, 5].map((k) => tf.mul(a, k)));
    const fiveTrips = [];
    for (let call = 0; call < 5; call++) {
      const start = performance.now();
      const outs = tf.node.withDevice(worker(0), () => fiveOutputs(x));
      const values = await Promise.all(outs.map((y) => y.data()));
      fiveTrips.push((performance.now() - start) / (2 * DELAY_MS));
      assert.strictEqual(values[4][1], 5 * x.dataSync()[1], `call ${call}`);
    }
    const fiveMedian = fiveTrips.slice(2).sort((a, b) => a - b)[1];
    assert.ok(fiveMedian < 3.9, `round trips per call of 5 outputs: ${fiveTrips.join(', ')}`);

    // Four calls at once are in flight together, each on a thread of its own: they take the
    // round trips of about one (counted as above), where one after another would take 8.
    const start = performance.now();
    const calls = [0, 1, 2, 3].map(() => tf.node.withDevice(worker(0), () => model.predict(x)));
    for (const values of await Promise.all(calls.map((y) => y.data()))) {
      close(values, expected, 1e-5, 'a call of four at once');
    }
    const together = (performance.now() - start) / (2 * DELAY_MS);
    assert.ok(together < 5, `four calls at once: ${together} round trips`);

    // A remote fit's training step (4 weights, 8 Adam slots): the values it assigns stay on the
    // worker, for the next step to use unsent, and only the loss comes back: measured 5.9-6.2
    // round trips a step (the batch's indices, the iteration count, the call, the loss). When
    // every step brought them here, the next one sent each, a request that waits for its
    // answer: 21.5-22.6. Counted as above, over epochs of compiled steps alone.
    const {model: fitModel, x: fitX, y: fitY, fitArgs} = trainingSetup(tf, 0);
    const epochMs = [];
    let epochStart;
    await tf.node.withDevice(worker(0), () => fitModel.fit(fitX, fitY, {...fitArgs, epochs: 4,
      shuffle: false, callbacks: {
        onEpochBegin: () => {
          epochStart = performance.now();
        },
        onEpochEnd: () => {
          epochMs.push(performance.now() - epochStart);
        },
      }}));
    const steps = fitX.shape[0] / fitArgs.batchSize;
    const stepTrips = epochMs.slice(2).map((ms) => ms / steps / (2 * DELAY_MS));
    assert.ok(Math.max(...stepTrips) < 12,
              `round trips per training step: ${stepTrips.join(', ')}`);

    // A worker killed while a call is on its way to it: the call's read is an Error.
    for (let call = 0; call < 2; call++) {
      tf.node.withDevice(worker(1), () => model.predict(x)).dispose();
    }
    const killedAt = Date.now();
    const lost = tf.node.withDevice(worker(1), () => model.predict(x));
    started[1].child.kill('SIGKILL');
    await assert.rejects(lost.data(), (e) => e instanceof Error && e.message.length > 0);
    assert.ok(Date.now() - killedAt < START_MS, `took ${Date.now() - killedAt} ms`);
    const after = tf.node.withDevice(worker(0), () => model.predict(x));
    close(await after.data(), expected, 1e-5, 'worker 0 after worker 1 died');
  } finally {
    net.close();
  }
});
