'use strict';
// A task of a test cluster, run as a child process by __test__/distributed.test.js:
//   node cluster_task.js server <cluster JSON> <taskIndex>   TF's gRPC server ("ready" on stdout)
//   node cluster_task.js fit <cluster JSON> <taskIndex> [timeoutMs]   tf.node.distributed.fit
//                                                of the shared model; prints its weights
//   node cluster_task.js join <cluster JSON> <taskIndex>     joins the workers' collective group,
//                                                            says "joined" and exits at once
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
  } else if (mode === 'fit') {
    const {model, x, y, fitArgs} = trainingSetup(tf, taskIndex);
    await tf.node.distributed.fit(model, x, y, {cluster, taskIndex, timeoutMs: Number(timeout), ...fitArgs});
    const weights = model.getWeights().map((w) => Array.from(w.dataSync()));
    process.stdout.write(`weights ${JSON.stringify(weights)}\n`);
  } else if (mode === 'join') {
    await tf.node.distributed.join({cluster, taskIndex, timeoutMs: Number(timeout)});
    process.stdout.write('joined now\n');
    process.exit(0);
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
}

main().catch((e) => {
  process.stdout.write(`error ${JSON.stringify({message: e.message, code: e.code})}\n`);
  process.exit(1);
});
