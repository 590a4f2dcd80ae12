'use strict';
// Data-parallel training on TF's collective ops (`tf.node.distributed.fit`). Every worker
// process of a cluster job runs `fit` on the same model and the same global data: each trains
// on its shard of every global batch, and before each optimizer step the gradients are averaged
// across the workers by TF's `CollectiveReduceV2`, so all workers apply the same step to the
// same weights (task 0's initial weights, given to all first). The result is single-process
// training on the global batches, as far as float sums allow.

const net = require('net');
const tfc = require('@tensorflow/tfjs-core');
const {tensorflowBackend} = require('./backend');
const {checkCluster, checkTask, serverDef} = require('./distributed');
const {FLAG: CALL_GRAPHS_FLAG} = require('../graphs/call_graphs');

/** The collective group of the workers; one group per process. */
const GROUP_KEY = 1;
/** How long a worker waits for the others, unless told. */
const DEFAULT_TIMEOUT_MS = 30000;

/**
 * This process's membership of a collective group: which cluster it joined (TF takes one per
 * process) and the next instance key. Every collective op needs a key of its own, the same on
 * every worker, so all workers must issue the same collectives in the same order.
 */
let membership = null;

/** Resolves once `address` (host:port) accepts TCP connections, or rejects at `deadline`. */
async function reachable(address, deadline) {
  const at = address.lastIndexOf(':');
  const host = address.slice(0, at).replace(/^\[|\]$/g, '');
  const port = Number(address.slice(at + 1));
  for (;;) {
    const open = await new Promise((resolve) => {
      const socket = net.connect({host, port});
      socket.setTimeout(Math.max(1, deadline - Date.now()));
      const done = (ok) => {
        socket.destroy();
        resolve(ok);
      };
      socket.once('connect', () => done(true));
      socket.once('error', () => done(false));
      socket.once('timeout', () => done(false));
    });
    if (open) return;
    if (Date.now() + 50 >= deadline) {
      throw new Error(`tf.node.distributed: no worker answered on ${address} in time`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Makes this process task `taskIndex` of job `jobName` for collective ops: starts its server
 * (TFE_EnableCollectiveOps) and waits until every task of the job listens. Task 0 leads the
 * group. A process joins one cluster, once.
 */
async function join({cluster, jobName = 'worker', taskIndex, timeoutMs = DEFAULT_TIMEOUT_MS}) {
  const fn = 'tf.node.distributed.join';
  const jobs = checkCluster(cluster, fn);
  checkTask(jobs, jobName, taskIndex, fn);
  const key = JSON.stringify([jobs, jobName, taskIndex]);
  const addresses = cluster[jobName];
  // Joining the same group again is a no-op; another group, or after connectToCluster, the
  // binding refuses.
  if (membership !== null && membership.key === key) return membership;
  tensorflowBackend(fn).enableCollectiveOps(
      serverDef(jobs, jobName, taskIndex, `/job:${jobName}/replica:0/task:0`));
  membership = {key, taskIndex, groupSize: addresses.length, nextInstance: 1, timeoutMs};
  const deadline = Date.now() + timeoutMs;
  await Promise.all(addresses.map((address) => reachable(address, deadline)));
  return membership;
}

/**
 * `x` reduced across the group: `merge` 'Add' with `final` 'Div' is the mean, with 'Id' the
 * sum. Fails with TF's DEADLINE_EXCEEDED when a worker does not take part within the timeout.
 */
function allReduce(x, merge, final) {
  const fn = 'tf.node.distributed.allReduce';
  if (membership === null) throw new Error(`${fn}: join a cluster first (join or fit)`);
  const b = tensorflowBackend(fn);
  const {groupSize, timeoutMs} = membership;
  const instance = membership.nextInstance++;
  const out = b.run('CollectiveReduceV2', [
    {name: 'T', type: 'type', value: x.dtype},
    {name: 'merge_op', type: 'string', value: merge},
    {name: 'final_op', type: 'string', value: final},
    {name: 'communication_hint', type: 'string', value: 'ring'},
    {name: 'timeout_seconds', type: 'float', value: timeoutMs / 1000},
    {name: 'Nordering_token', type: 'int', value: 0},
  ], [x, b.scalar(groupSize, 'int32'), b.scalar(GROUP_KEY, 'int32'),
    b.scalar(instance, 'int32')])[0];
  return tfc.engine().makeTensorFromTensorInfo(b.wrap(out), b);
}

/** The optimizer's gradients, each replaced by its mean across the group. */
function meanGradients(grads) {
  if (Array.isArray(grads)) {
    return grads.map(({name, tensor}) => ({name, tensor: allReduce(tensor, 'Add', 'Div')}));
  }
  const reduced = {};
  for (const name of Object.keys(grads)) reduced[name] = allReduce(grads[name], 'Add', 'Div');
  return reduced;
}

/** Gives every worker task 0's values of `weights` (a sum where the others add zeros). */
function takeLeadersWeights(weights, taskIndex) {
  for (const w of weights) {
    tfc.tidy(() => {
      const value = w.read();
      const mine = taskIndex === 0 ? value : tfc.zerosLike(value);
      w.write(allReduce(mine, 'Add', 'Id'));
    });
  }
}

/** The rows of this task's shard of every global batch of `n` rows. */
function shardRows(n, batchSize, groupSize, taskIndex) {
  const rows = [];
  for (let start = 0; start < n; start += batchSize) {
    const size = Math.min(batchSize, n - start);
    if (size % groupSize !== 0) {
      throw new RangeError(`tf.node.distributed.fit: a global batch of ${size} rows cannot be ` +
                           `split evenly over ${groupSize} workers (make batchSize and the ` +
                           'number of samples multiples of the worker count)');
    }
    const shard = size / groupSize;
    for (let i = 0; i < shard; i++) rows.push(start + taskIndex * shard + i);
  }
  return rows;
}

/**
 * Trains `model` on `x`, `y` (tensors, or arrays of tensors for several inputs / outputs) as
 * task `taskIndex` of `cluster` (job `jobName`, default 'worker'): each of the job's workers
 * calls it with the same arguments but its own `taskIndex`. `batchSize` (default 32) is the
 * global batch, split evenly over the workers; the batches are taken in order (`shuffle` is not
 * supported). Other arguments go to `model.fit`, whose History it returns: its losses, metrics,
 * callbacks and validation are each worker's own, on its shards.
 */
async function fit(model, x, y, {cluster, jobName = 'worker', taskIndex,
  timeoutMs = DEFAULT_TIMEOUT_MS, batchSize = 32, ...fitArgs} = {}) {
  const fn = 'tf.node.distributed.fit';
  if (model === null || typeof model !== 'object' || typeof model.fit !== 'function') {
    throw new TypeError(`${fn}: model must be a compiled tf.LayersModel`);
  }
  if (model.optimizer == null) throw new TypeError(`${fn}: compile the model first`);
  if (fitArgs.shuffle === true) {
    throw new TypeError(`${fn}: shuffle is not supported (every worker must take the same ` +
                        'global batches in the same order)');
  }
  if (!Number.isInteger(batchSize) || batchSize < 1) {
    throw new RangeError(`${fn}: batchSize must be a positive integer, got ${batchSize}`);
  }
  const xs = Array.isArray(x) ? x : [x];
  const ys = Array.isArray(y) ? y : [y];
  const n = xs[0].shape[0];
  for (const t of [...xs, ...ys]) {
    if (!(t instanceof tfc.Tensor) || t.shape[0] !== n) {
      throw new TypeError(`${fn}: x and y must be tensors with the same number of rows (${n})`);
    }
  }
  checkTask(checkCluster(cluster, fn), jobName, taskIndex, fn);
  const groupSize = cluster[jobName].length;
  if (batchSize % groupSize !== 0) {
    throw new RangeError(`${fn}: batchSize ${batchSize} is not a multiple of the ` +
                         `${groupSize} workers`);
  }
  const shardOf = shardRows(n, batchSize, groupSize, taskIndex);
  await join({cluster, jobName, taskIndex, timeoutMs});
  const rows = tfc.tensor1d(shardOf, 'int32');
  const shard = (ts) => ts.map((t) => tfc.gather(t, rows));
  const localX = shard(xs);
  const localY = shard(ys);
  rows.dispose();
  const optimizer = model.optimizer;
  const applyGradients = optimizer.applyGradients;
  const env = tfc.env();
  const callGraphs = env.getBool(CALL_GRAPHS_FLAG);
  // A training step compiled into one graph would run the collective outside TF's eager
  // context, which holds the group: the steps stay eager.
  env.set(CALL_GRAPHS_FLAG, false);
  optimizer.applyGradients = function(grads) {
    const reduced = tfc.tidy(() => meanGradients(grads));
    try {
      return applyGradients.call(this, reduced);
    } finally {
      tfc.dispose(Array.isArray(reduced) ? reduced.map((g) => g.tensor) : Object.values(reduced));
    }
  };
  try {
    takeLeadersWeights(model.weights, taskIndex);
    return await model.fit(Array.isArray(x) ? localX : localX[0],
                           Array.isArray(y) ? localY : localY[0],
                           {...fitArgs, batchSize: batchSize / groupSize, shuffle: false});
  } finally {
    optimizer.applyGradients = applyGradients;
    env.set(CALL_GRAPHS_FLAG, callGraphs);
    tfc.dispose([...localX, ...localY]);
  }
}

module.exports = {fit, join, allReduce};
