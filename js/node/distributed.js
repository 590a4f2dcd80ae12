'use strict';
// TensorFlow's own distributed runtime: this process as a task of a cluster (TF's gRPC server),
// a client whose ops run on other tasks' devices (remote eager execution), and data-parallel
// training whose gradients TF's collective ops all-reduce across worker processes.
//
// A cluster is `{job: ['host:port', ...]}`; it travels to TF as a `tensorflow.ServerDef`
// (tensorflow/core/protobuf/tensorflow_server.proto), written here with proto.js.

const net = require('net');
const tfc = require('@tensorflow/tfjs-core');
const {Writer} = require('./proto');
const {tensorflowBackend} = require('./backend');

/** How long a client waits for the cluster's tasks, unless told. */
const DEFAULT_TIMEOUT_MS = 10000;
/** The pause between tries to reach a cluster whose tasks do not answer yet. */
const RETRY_MS = 100;
/** TF's job names (`[a-z][a-z0-9_]*`, as its device names require). */
const JOB_NAME = /^[a-z][a-z0-9_]*$/;
/** `host:port` with a port number; hosts as IPv4, IPv6 in brackets, or names. */
const ADDRESS = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):([0-9]{1,5})$/;

/** Checks a cluster spec before TF sees it; returns its jobs as `[name, addresses]`. */
function checkCluster(cluster, fn) {
  if (cluster === null || typeof cluster !== 'object' || Array.isArray(cluster)) {
    throw new TypeError(`${fn}: cluster must be an object {job: ['host:port', ...]}`);
  }
  const jobs = Object.entries(cluster);
  if (jobs.length === 0) throw new TypeError(`${fn}: cluster has no jobs`);
  for (const [job, addresses] of jobs) {
    if (!JOB_NAME.test(job)) {
      throw new TypeError(`${fn}: job name ${JSON.stringify(job)} must match [a-z][a-z0-9_]*`);
    }
    if (!Array.isArray(addresses) || addresses.length === 0) {
      throw new TypeError(`${fn}: cluster.${job} must be a non-empty array of 'host:port'`);
    }
    for (const address of addresses) {
      const match = typeof address === 'string' ? ADDRESS.exec(address) : null;
      if (match === null || Number(match[2]) < 1 || Number(match[2]) > 65535) {
        throw new TypeError(`${fn}: cluster.${job} holds ${JSON.stringify(address)}, ` +
                            'not a \'host:port\' address');
      }
    }
  }
  return jobs;
}

function checkTask(jobs, jobName, taskIndex, fn) {
  const job = jobs.find(([name]) => name === jobName);
  if (job === undefined) {
    throw new TypeError(`${fn}: jobName ${JSON.stringify(jobName)} is not a job of the cluster ` +
                        `(${jobs.map(([name]) => name).join(', ')})`);
  }
  if (!Number.isInteger(taskIndex) || taskIndex < 0 || taskIndex >= job[1].length) {
    throw new RangeError(`${fn}: taskIndex must be an integer in 0..${job[1].length - 1}, ` +
                         `got ${taskIndex}`);
  }
}

/**
 * The serialized `ServerDef` of task `taskIndex` of job `jobName` in `jobs`. `groupLeader`, when
 * given, goes into `default_session_config.experimental.collective_group_leader`: the task that
 * resolves collective groups for the others.
 */
function serverDef(jobs, jobName, taskIndex, groupLeader) {
  const clusterDef = new Writer();
  for (const [name, addresses] of jobs) {
    const jobDef = new Writer();
    jobDef.string(1, name);                          // JobDef.name
    addresses.forEach((address, index) => {          // JobDef.tasks: map<int32, string>
      const entry = new Writer();
      entry.varint(1, index);
      entry.string(2, address);
      jobDef.message(2, entry);
    });
    clusterDef.message(1, jobDef);                   // ClusterDef.job
  }
  const def = new Writer();
  def.message(1, clusterDef);                        // ServerDef.cluster
  def.string(2, jobName);                            // ServerDef.job_name
  def.varint(3, taskIndex);                          // ServerDef.task_index
  if (groupLeader !== undefined) {
    const experimental = new Writer();
    experimental.string(1, groupLeader);             // Experimental.collective_group_leader
    const config = new Writer();
    config.message(16, experimental);                // ConfigProto.experimental
    def.message(4, config);                          // ServerDef.default_session_config
  }
  def.string(5, 'grpc');                             // ServerDef.protocol
  return def.finish();
}

/** A TF gRPC server running in this process (`startServer`). */
class ClusterServer {
  constructor(native, jobName, taskIndex) {
    this.native = native;
    /** `grpc://host:port`. */
    this.target = native.target;
    this.jobName = jobName;
    this.taskIndex = taskIndex;
  }

  /**
   * Asks TF to stop the server. TF 2.21 cannot stop a started gRPC server: this rejects with
   * TF's UNIMPLEMENTED error, and the server serves until the process exits.
   */
  async stop() {
    this.native.stop();
  }
}

/**
 * Starts TF's gRPC server in this process as task `taskIndex` of job `jobName` (default
 * 'worker') of `cluster`: clients (`connectToCluster`) can then run ops on its devices.
 */
async function startServer({cluster, jobName = 'worker', taskIndex = 0} = {}) {
  const fn = 'tf.node.startServer';
  const jobs = checkCluster(cluster, fn);
  checkTask(jobs, jobName, taskIndex, fn);
  const backend = tensorflowBackend(fn);
  return new ClusterServer(backend.startServer(serverDef(jobs, jobName, taskIndex)), jobName,
                           taskIndex);
}

/**
 * `count` TCP ports free on 127.0.0.1 now (the OS picks them, all held open together so that
 * they differ), for tasks on this machine.
 */
async function freePorts(count) {
  const servers = await Promise.all(Array.from({length: count}, () => new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(server));
  })));
  const ports = servers.map((s) => s.address().port);
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}

/**
 * Makes this process a client of `cluster`: ops placed with `withDevice` on the cluster's
 * devices (`/job:worker/replica:0/task:1/device:CPU:0`) run there. The client is one task of its
 * own job, `jobName` (default 'client'), on `address` (default 127.0.0.1 and a free port).
 * Rejects with TF's error when a task does not answer within `timeoutMs`. Connecting again
 * replaces the cluster: tensors still on remote devices are lost then (using them throws),
 * but variables are copied here first (a fit still running on a worker in another scope
 * leaves its weights there); when one cannot be (its worker is gone), it rejects with that
 * Error without connecting, the variable dropped, and connecting again goes on.
 */
async function connectToCluster(cluster, {timeoutMs = DEFAULT_TIMEOUT_MS, jobName = 'client',
  address} = {}) {
  const fn = 'tf.node.connectToCluster';
  const jobs = checkCluster(cluster, fn);
  if (!JOB_NAME.test(jobName)) {
    throw new TypeError(`${fn}: jobName ${JSON.stringify(jobName)} must match [a-z][a-z0-9_]*`);
  }
  if (jobs.some(([name]) => name === jobName)) {
    throw new TypeError(`${fn}: the cluster already has a job ${JSON.stringify(jobName)}, ` +
                        'the client\'s own (pass another jobName)');
  }
  if (typeof timeoutMs !== 'number' || !(timeoutMs >= 1) || !Number.isFinite(timeoutMs)) {
    throw new RangeError(`${fn}: timeoutMs must be a positive number, got ${timeoutMs}`);
  }
  const backend = tensorflowBackend(fn);
  // Before the retries below, which would take this error (UNAVAILABLE) for a task starting.
  backend.bringVariablesHere(fn, []);
  const own = address === undefined ? `127.0.0.1:${(await freePorts(1))[0]}` : address;
  const withClient = checkCluster({...cluster, [jobName]: [own]}, fn);
  const def = serverDef(withClient, jobName, 0);
  // Without fail-fast RPCs, TF waits for an absent task forever, whatever the timeout; with
  // them, it fails at once, so a task still starting is retried here until the deadline.
  if (process.env.GRPC_FAIL_FAST === undefined) process.env.GRPC_FAIL_FAST = 'true';
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      backend.connectToCluster(def, `/job:${jobName}/replica:0/task:0`,
                               Math.max(1, deadline - Date.now()));
      return;
    } catch (e) {
      if (e.code !== 'UNAVAILABLE' || Date.now() + RETRY_MS >= deadline) throw e;
    }
    await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
  }
}

/** The devices this process can place ops on: `[{name, deviceType}]`, local and remote. */
function listDevices() {
  return tensorflowBackend('tf.node.listDevices').listDevices();
}

/**
 * Runs `fn()` with every op it issues placed on `device` (a full TF device name, as
 * `listDevices` gives them: '/job:worker/replica:0/task:1/device:CPU:0'); returns what `fn`
 * returns. Inputs move to that device and results are read back as usual. `fn` may be async
 * (return a Promise): the scope then holds for its work after each `await` too, until the
 * Promise settles, and `withDevice` returns a Promise of its result (so `model.fit`,
 * `trainOnBatch` and `evaluate` train or test there), while other async work meanwhile runs
 * where its own scope says. Inside the scope single ops run one by one (deferred runs are
 * off), and a whole call (predict, execute, a training step, `tf.node.function`) compiled
 * there runs as one TF function call on `device`: on a remote worker, one request per call.
 */
function withDevice(device, fn) {
  const name = 'tf.node.withDevice';
  if (typeof device !== 'string' || device.length === 0) {
    throw new TypeError(`${name}: device must be a device name, got ${String(device)}`);
  }
  if (typeof fn !== 'function') throw new TypeError(`${name}: fn must be a function`);
  const backend = tensorflowBackend(name);
  // A whole call being recorded cannot hold ops placed elsewhere: it stays eager.
  backend.notRecordable(`${name} places ops`);
  return backend.runInDeviceScope(device, fn);
}

/**
 * The device of `tensor`: where the op that made it ran, or with `{backing: true}` the device
 * whose memory holds it.
 */
function deviceOf(tensor, {backing = false} = {}) {
  const name = 'tf.node.deviceOf';
  if (!(tensor instanceof tfc.Tensor)) throw new TypeError(`${name}: expected a tf.Tensor`);
  const backend = tensorflowBackend(name);
  return backend.tensorDevice(backend.idOf(tensor), backing);
}

module.exports = {
  startServer, connectToCluster, listDevices, withDevice, deviceOf, ClusterServer,
  // for data_parallel.js, the tests and benches/distributed.js
  serverDef, checkCluster, checkTask, freePorts,
};
