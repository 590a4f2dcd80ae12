'use strict';
// A task of a test cluster, run as a child process by __test__/distributed.test.js:
//   node cluster_task.js server <cluster JSON> <taskIndex> [exitAfterMs]   TF's gRPC server
//                                                ("ready" on stdout), exiting after exitAfterMs
//   node cluster_task.js block <cluster JSON> 0    a client whose op on worker 0 blocks until the
//                                                worker goes (a dequeue from an empty queue)
//   node cluster_task.js fit <cluster JSON> <taskIndex> [timeoutMs]   tf.node.distributed.fit
//                                                of the shared model; prints its weights
//   node cluster_task.js join <cluster JSON> <taskIndex> [timeoutMs]   joins the workers'
//                                                collective group, takes part in nothing, and
//                                                leaves after timeoutMs (saying "left")
// It exits when its stdin closes, so it never outlives the test that started it.

const tf = require('../..');
const {trainingSetup} = require('./cluster_model');

process.stdin.resume();
process.stdin.on('end', () => process.exit(0));

async function main() {
  const [mode, clusterJson, task, timeout = '20000'] = process.argv.slice(2);
  const cluster = JSON.parse(clusterJson);
  const taskIndex = Number(task);
  if (mode === 'server') {
    const server = await tf.node.startServer({cluster, jobName: 'worker', taskIndex});
    process.stdout.write(`ready ${server.target}\n`);
    if (timeout !== '20000') setTimeout(() => process.exit(0), Number(timeout));
  } else if (mode === 'block') {
    await tf.node.connectToCluster(cluster, {timeoutMs: 20000});
    const types = [{name: 'component_types', type: 'type', value: ['float32']}];
    const {binding} = tf.backend();
    tf.node.withDevice('/job:worker/replica:0/task:0/device:CPU:0', () => {
      const [queue] = binding.executeOp('FIFOQueueV2', types, [], 1);
      binding.executeOp('QueueDequeueV2', [...types, {name: 'timeout_ms', type: 'int', value: -1}],
                        [queue.id], 1);
    });
    process.stdout.write('done dequeued from an empty queue\n');
  } else if (mode === 'fit') {
    const {model, x, y, fitArgs} = trainingSetup(tf, taskIndex);
    await tf.node.distributed.fit(model, x, y, {cluster, taskIndex, timeoutMs: Number(timeout), ...fitArgs});
    const weights = model.getWeights().map((w) => Array.from(w.dataSync()));
    process.stdout.write(`weights ${JSON.stringify(weights)}\n`);
  } else if (mode === 'join') {
    await tf.node.distributed.join({cluster, taskIndex, timeoutMs: Number(timeout)});
    // Staying while the others wait for it in their first collective: they fail by their
    // timeout, or when it goes.
    setTimeout(() => {
      process.stdout.write('left after joining\n');
      process.exit(0);
    }, Number(timeout));
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
}

main().catch((e) => {
  process.stdout.write(`error ${JSON.stringify({message: e.message, code: e.code})}\n`);
  process.exit(1);
});
