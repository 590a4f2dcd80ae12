// Compiled (not run) by types.test.js: every public name of the package type-checks.
import * as tf from '../../index';
import * as binding from '../../binding';
import {configure} from '../../configure';

async function main(): Promise<void> {
  const x: tf.Tensor2D = tf.tensor2d([[1, 2], [3, 4]]);
  const y = tf.matMul(x, x).add(tf.scalar(1));
  const values: Float32Array | Int32Array | Uint8Array = y.dataSync();
  const backendVersion: string = tf.version['tfjs-node-rs'];
  const tfjsNodeVersion: string = tf.version['tfjs-node'];
  const model = tf.sequential({ layers: [tf.layers.dense({ units: 1, inputShape: [2] })] });
  model.compile({ optimizer: 'sgd', loss: 'meanSquaredError' });
  await model.fit(x, tf.ones([2, 1]), { epochs: 1, verbose: 0, callbacks: [tf.node.tensorBoard('/tmp/logs', { updateFreq: 'batch' })] });
  await model.save('file:///tmp/model');
  const handler: tf.io.IOHandler = tf.io.fileSystem('/tmp/model/model.json');
  const http: tf.io.IOHandler = tf.io.nodeHTTPRequest('http://127.0.0.1/model.json');

  configure({ intraOpThreads: 2, gpu: { allowGrowth: true, memoryLimitMB: 1024, visibleDevices: [0] } });
  tf.node.configure({ interOpThreads: 1 });
  const runtime = tf.node.runtimeInfo();
  const pools: number = runtime.intraOpThreads + runtime.interOpThreads;
  const gpuUsed: boolean = runtime.gpu.used;
  const customOps: string[] = tf.node.loadOpLibrary('/tmp/ops.so');
  const profiled = await tf.node.profile(() => model.predict(x) as tf.Tensor, { logdir: '/tmp/profile' });
  const jsMs: number = profiled.summary.jsThread.jsMs;
  const slowest: string = profiled.summary.topOps[0].op;
  profiled.result.dispose();

  const step = tf.node.function((a: tf.Tensor2D, b: tf.Tensor2D) => tf.matMul(a, b));
  const product: tf.Tensor2D = step(x, x);
  const graphCalls: number = tf.node.callGraphStats().replays;
  const whyEager: string | null = tf.node.callGraphStats().lastFailure;

  const server: tf.node.ClusterServer = await tf.node.startServer({ cluster: { worker: ['127.0.0.1:2222'] }, taskIndex: 0 });
  const target: string = server.target;
  await tf.node.connectToCluster({ worker: ['127.0.0.1:2222'] }, { timeoutMs: 5000 });
  const deviceNames: string[] = tf.node.listDevices().map((d) => d.name);
  const placed: tf.Tensor2D = tf.node.withDevice('/job:worker/replica:0/task:0/device:CPU:0', () => tf.matMul(x, x));
  const where: string = tf.node.deviceOf(placed, { backing: true });
  const trainedThere: tf.History = await tf.node.withDevice('/job:worker/replica:0/task:0/device:CPU:0',
                                                            async () => model.fit(x, tf.ones([2, 1]), { epochs: 1 }));
  const history: tf.History = await tf.node.distributed.fit(model, x, tf.ones([2, 1]), { cluster: { worker: ['127.0.0.1:2222'] }, taskIndex: 0, batchSize: 2, epochs: 1 });
  const mean: tf.Tensor2D = tf.node.distributed.allReduce(x, 'Add', 'Div');

  const exported: tf.io.SaveResult = await tf.node.saveSavedModel(model, '/tmp/exported', { signatures: { serving_default: {} }, tags: ['serve'] });
  await tf.node.saveSavedModel(tf.node.function((t: tf.Tensor) => tf.relu(t)), '/tmp/relu', { inputs: [{ name: 'x', shape: [null, 3] }] });
  const metaGraphs: tf.MetaGraph[] = await tf.node.getMetaGraphsFromSavedModel('/tmp/saved');
  const saved: tf.node.TFSavedModel = await tf.node.loadSavedModel('/tmp/saved', ['serve'], 'serving_default');
  const out = saved.predict(x) as tf.Tensor;
  const fetched: tf.Tensor[] = saved.execute({ x }, ['out:0']);
  const ids: tf.node.Int64Tensor = tf.node.int64Tensor([10000000000n, 2], [2]);
  const exact = saved.predict({ ids }, { int64: 'bigint' }) as { [name: string]: tf.node.SavedModelInput };
  const wide: BigInt64Array = (exact.wide as tf.node.Int64Tensor).values;
  const byName = saved.execute({ ids }, 'wide', { int64: 'bigint' });
  saved.dispose();
  const count: number = tf.node.getNumOfSavedModels();

  const image = tf.node.decodeImage(new Uint8Array(8), 3) as tf.Tensor3D;
  const png: Uint8Array = await tf.node.encodePng(image, 6);
  const jpeg: Uint8Array = await tf.node.encodeJpeg(image, 'rgb', 90);
  const gif: tf.Tensor4D = tf.node.decodeGif(png);
  const writer = tf.node.summaryFileWriter('/tmp/logs');
  writer.scalar('loss', 0.5, 1);
  writer.histogram('weights', tf.randomNormal([10]), 1);
  writer.flush();

  const backend = tf.backend() as tf.TensorFlowBackend;
  const id: number = backend.binding.createTensor([2], 'float32', backend.binding.alloc('float32', 2));
  const [info]: binding.TensorInfo[] = binding.executeOp('Neg', [{ name: 'T', type: 'type', value: 'float32' }], [id], 1);
  const read = binding.tensorDataSync(info.id);
  const stats: binding.Stats = binding.stats();
  const nativeTensors: number = backend.getNumOfTFTensors() + backend.getNumOfSavedModels();
  const linked: string = backend.binding.TF_Version;
  void [tfjsNodeVersion, wide, byName, nativeTensors];
  void [values, backendVersion, handler, http, metaGraphs, out, fetched, count, jpeg, gif, read, stats, linked];
}

void main;
