'use strict';
// Model IO in Node: the file:// handler (against a model saved by the real tfjs-node 4.22 and
// a graph model made from a TF GraphDef) and http(s) loading from a local server.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const http = require('http');
const path = require('path');
const {tf, fixture, readJson, tmpDir, assertClose} = require('./fixtures/helpers');

const LAYERS = fixture('model_io', 'layers_tfjs_node');
const GRAPH = fixture('model_io', 'graph_model');

function tinyModel() {
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 5, inputShape: [4], activation: 'relu'}));
  model.add(tf.layers.dense({units: 3, activation: 'softmax'}));
  return model;
}

test('loads a LayersModel saved by @tensorflow/tfjs-node 4.22 and predicts as it did', async () => {
  const want = readJson('model_io', 'layers_tfjs_node', 'expected.json');
  const model = await tf.loadLayersModel(`file://${LAYERS}/model.json`);
  const x = tf.tensor(want.inputs.x.values, want.inputs.x.shape);
  const y = model.predict(x);
  assert.deepEqual(y.shape, want.outputs.y.shape);
  assertClose(y.dataSync(), want.outputs.y.values, {atol: 1e-6, rtol: 1e-6});
  tf.dispose([x, y]);
  model.dispose();
});

test('model.save(file://dir) writes model.json + weights.bin; a round trip predicts exactly',
     async () => {
       const dir = path.join(tmpDir(), 'nested', 'model');
       const model = tinyModel();
       model.compile({optimizer: 'adam', loss: 'categoricalCrossentropy'});
       const result = await model.save(`file://${dir}`);
       assert.deepEqual(fs.readdirSync(dir).sort(), ['model.json', 'weights.bin']);
       const json = JSON.parse(fs.readFileSync(path.join(dir, 'model.json'), 'utf8'));
       assert.equal(json.format, 'layers-model');
       assert.match(json.generatedBy, /TensorFlow\.js tfjs-layers/);
       assert.deepEqual(json.weightsManifest[0].paths, ['weights.bin']);
       assert.equal(json.weightsManifest[0].weights.length, 4);
       const bytes = fs.statSync(path.join(dir, 'weights.bin')).size;
       assert.equal(bytes, (4 * 5 + 5 + 5 * 3 + 3) * 4);
       assert.equal(result.modelArtifactsInfo.weightDataBytes, bytes);

       const loaded = await tf.loadLayersModel(`file://${dir}/model.json`);
       const x = tf.randomNormal([6, 4], 0, 1, 'float32', 3);
       const a = model.predict(x);
       const b = loaded.predict(x);
       assert.deepEqual(Array.from(b.dataSync()), Array.from(a.dataSync()));
       for (let i = 0; i < model.weights.length; i++) {
         assert.deepEqual(Array.from(loaded.weights[i].read().dataSync()),
                          Array.from(model.weights[i].read().dataSync()));
       }
       // Saving again over the same directory replaces the files.
       await loaded.save(`file://${dir}`);
       // The explicit handler and the [model.json, weights] form load the same model.
       const viaHandler = await tf.loadLayersModel(tf.io.fileSystem(path.join(dir, 'model.json')));
       const viaPair = await tf.loadLayersModel(
           tf.io.fileSystem([path.join(dir, 'model.json'), path.join(dir, 'weights.bin')]));
       for (const m of [viaHandler, viaPair]) {
         const c = m.predict(x);
         assert.deepEqual(Array.from(c.dataSync()), Array.from(a.dataSync()));
         c.dispose();
         m.dispose();
       }
       tf.dispose([x, a, b]);
       model.dispose();
       loaded.dispose();
     });

test('loads a graph model (TF GraphDef in tfjs format) and saves it back', async () => {
  const want = readJson('model_io', 'graph_model', 'expected.json');
  const model = await tf.loadGraphModel(`file://${GRAPH}/model.json`);
  const x = tf.tensor(want.inputs.x.values, want.inputs.x.shape);
  const y = model.predict(x);
  assert.deepEqual(y.shape, want.outputs.y.shape);
  assertClose(y.dataSync(), want.outputs.y.values);

  const dir = path.join(tmpDir(), 'graph');
  await model.save(`file://${dir}`);
  const again = await tf.loadGraphModel(`file://${dir}/model.json`);
  const y2 = again.predict(x);
  assert.deepEqual(Array.from(y2.dataSync()), Array.from(y.dataSync()));
  tf.dispose([x, y, y2]);
  model.dispose();
  again.dispose();
});

test('file:// errors are clear', async () => {
  const tmp = tmpDir();
  await assert.rejects(tf.loadLayersModel(`file://${tmp}/none/model.json`), /does not exist/);
  await assert.rejects(tf.loadLayersModel(`file://${tmp}`), /must be a file/);

  const asFile = path.join(tmp, 'a-file');
  fs.writeFileSync(asFile, 'x');
  await assert.rejects(tinyModel().save(`file://${asFile}`), /exists as a file/);

  const noWeights = path.join(tmp, 'no-weights');
  fs.mkdirSync(noWeights);
  fs.copyFileSync(path.join(LAYERS, 'model.json'), path.join(noWeights, 'model.json'));
  await assert.rejects(tf.loadLayersModel(`file://${noWeights}/model.json`),
                       // tfjs-node's words (its specs match /Weight file .*X does not exist/).
                       new RegExp(`Weight file ${noWeights}/weights.bin does not exist: ` +
                                  'loading failed \\(named in .*model.json\\)$'));

  const shortWeights = path.join(tmp, 'short-weights');
  fs.mkdirSync(shortWeights);
  fs.copyFileSync(path.join(LAYERS, 'model.json'), path.join(shortWeights, 'model.json'));
  fs.writeFileSync(path.join(shortWeights, 'weights.bin'), Buffer.alloc(8));
  await assert.rejects(tf.loadLayersModel(`file://${shortWeights}/model.json`),
                       /need 104 bytes, but its weights files hold 8/);

  const badJson = path.join(tmp, 'bad.json');
  fs.writeFileSync(badJson, '{"modelTopology": ');
  await assert.rejects(tf.loadLayersModel(`file://${badJson}`), /Failed to parse model JSON/);
  fs.writeFileSync(badJson, '{"hello": 1}');
  await assert.rejects(tf.loadLayersModel(`file://${badJson}`), /no modelTopology/);
  assert.throws(() => tf.io.fileSystem(['a', 'b', 'c']), /array of \[model.json, weights file\]/);
});

/** Serves the model_io fixtures; records request headers; accepts POST uploads. */
async function withServer(fn) {
  const requests = [];
  const uploads = [];
  const server = http.createServer((req, res) => {
    requests.push({url: req.url, headers: req.headers, method: req.method});
    if (req.method === 'POST') {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        uploads.push({headers: req.headers, body: Buffer.concat(chunks)});
        res.writeHead(200, {'content-type': 'application/json'});
        res.end('{}');
      });
      return;
    }
    const file = path.join(fixture('model_io'), path.normalize(decodeURIComponent(req.url)));
    if (!file.startsWith(fixture('model_io')) || !fs.existsSync(file) ||
        !fs.statSync(file).isFile()) {
      res.writeHead(404);
      res.end('not found');
      return;
    }
    res.writeHead(200, {'content-type': file.endsWith('.json') ? 'application/json' :
                                                                  'application/octet-stream'});
    res.end(fs.readFileSync(file));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${server.address().port}`;
  try {
    await fn(base, requests, uploads);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

test('http: loadLayersModel / loadGraphModel from a local server, nodeHTTPRequest headers',
     async () => {
       await withServer(async (base, requests, uploads) => {
         const want = readJson('model_io', 'layers_tfjs_node', 'expected.json');
         const x = tf.tensor(want.inputs.x.values, want.inputs.x.shape);

         const plain = await tf.loadLayersModel(`${base}/layers_tfjs_node/model.json`);
         const y = plain.predict(x);
         assertClose(y.dataSync(), want.outputs.y.values, {atol: 1e-6, rtol: 1e-6});
         assert.deepEqual(requests.map((r) => r.url),
                          ['/layers_tfjs_node/model.json', '/layers_tfjs_node/weights.bin']);

         requests.length = 0;
         const handler = tf.io.nodeHTTPRequest(`${base}/layers_tfjs_node/model.json`,
                                               {headers: {'x-model-token': 'secret'}});
         const withHeaders = await tf.loadLayersModel(handler);
         const y2 = withHeaders.predict(x);
         assert.deepEqual(Array.from(y2.dataSync()), Array.from(y.dataSync()));
         assert.equal(requests.length, 2);
         for (const r of requests) assert.equal(r.headers['x-model-token'], 'secret');

         const gwant = readJson('model_io', 'graph_model', 'expected.json');
         const graph = await tf.loadGraphModel(`${base}/graph_model/model.json`);
         const gx = tf.tensor(gwant.inputs.x.values, gwant.inputs.x.shape);
         const gy = graph.predict(gx);
         assertClose(gy.dataSync(), gwant.outputs.y.values);

         await assert.rejects(tf.loadLayersModel(`${base}/missing/model.json`), /404/);

         // Saving over http POSTs model.json and the weights as a multipart form.
         await plain.save(tf.io.nodeHTTPRequest(`${base}/upload`));
         assert.equal(uploads.length, 1);
         assert.match(uploads[0].headers['content-type'], /multipart\/form-data/);
         const body = uploads[0].body.toString('latin1');
         assert.match(body, /name="model.json"/);
         assert.match(body, /name="model.weights.bin"/);

         tf.dispose([x, y, y2, gx, gy]);
         plain.dispose();
         withHeaders.dispose();
         graph.dispose();
       });
     });

test('loads [model.pb, weights_manifest.json] (binary GraphDef) as a graph model', async () => {
  const want = readJson('model_io', 'graph_model', 'expected.json');
  const binary = fixture('model_io', 'graph_model_binary');
  const handler = tf.io.fileSystem([path.join(binary, 'model.pb'),
                                    path.join(binary, 'weights_manifest.json')]);
  // The topology decodes to what model.json holds (protobuf's JSON form of the same GraphDef).
  const artifacts = await handler.load();
  assert.deepEqual(artifacts.modelTopology, readJson('model_io', 'graph_model', 'model.json').modelTopology);
  const model = await tf.loadGraphModel(handler);
  const x = tf.tensor(want.inputs.x.values, want.inputs.x.shape);
  const y = model.predict(x);
  assertClose(y.dataSync(), want.outputs.y.values);
  tf.dispose([x, y]);
  model.dispose();
  // The same pair over file:// URLs; a .pb that is not a GraphDef is a clear error.
  const viaUrl = await tf.loadGraphModel([`file://${binary}/model.pb`, `file://${binary}/weights_manifest.json`]);
  viaUrl.dispose();
  const bad = tmpDir();
  fs.writeFileSync(path.join(bad, 'model.pb'), Buffer.from([0x0a, 0x7f, 1]));
  fs.copyFileSync(path.join(binary, 'weights_manifest.json'), path.join(bad, 'weights_manifest.json'));
  await assert.rejects(tf.io.fileSystem([path.join(bad, 'model.pb'), path.join(bad, 'weights_manifest.json')]).load(),
                       /model.pb is not a binary TensorFlow GraphDef: length past the end/);
  // A function library (GraphDef field 2) is refused by name; an empty one is nothing.
  const pb = fs.readFileSync(path.join(binary, 'model.pb'));
  const {decodeGraphDef} = require('../js/node/graph_def');
  assert.equal(decodeGraphDef(Buffer.concat([pb, Buffer.from([0x12, 0x00])])).node.length,
               artifacts.modelTopology.node.length);
  assert.throws(() => decodeGraphDef(Buffer.concat([pb, Buffer.from([0x12, 0x02, 0x0a, 0x00])])),
                /has a function library/);
});

test('file:// weights are read only from the model folder (.., absolute paths, symlinks)', async () => {
  const tmp = tmpDir();
  const secret = path.join(tmp, 'secret.bin');
  fs.writeFileSync(secret, Buffer.alloc(104, 1));
  const modelJSON = JSON.parse(fs.readFileSync(path.join(LAYERS, 'model.json'), 'utf8'));
  const dir = path.join(tmp, 'models', 'evil');
  fs.mkdirSync(dir, {recursive: true});
  const withPath = (p) => {
    modelJSON.weightsManifest[0].paths = [p];
    fs.writeFileSync(path.join(dir, 'model.json'), JSON.stringify(modelJSON));
    return tf.loadLayersModel(`file://${dir}/model.json`);
  };
  await assert.rejects(withPath('../../secret.bin'),
                       new RegExp(`weights path '../../secret.bin' in .*model.json resolves to ${secret}, outside the model's folder`));
  await assert.rejects(withPath(secret), /outside the model's folder/);
  await assert.rejects(withPath('../../../../../../../../etc/passwd'), /resolves to \/etc\/passwd, outside/);
  fs.symlinkSync(secret, path.join(dir, 'link.bin'));
  await assert.rejects(withPath('link.bin'), new RegExp(`resolves to ${secret}, outside`));
  // Inside the folder (a subfolder, a symlink within it) is fine.
  fs.mkdirSync(path.join(dir, 'shards'));
  fs.copyFileSync(path.join(LAYERS, 'weights.bin'), path.join(dir, 'shards', 'w.bin'));
  (await withPath('shards/../shards/w.bin')).dispose();
  fs.symlinkSync(path.join(dir, 'shards', 'w.bin'), path.join(dir, 'inner-link.bin'));
  (await withPath('inner-link.bin')).dispose();
});

test('http loading goes through tfjs platform fetch, which applications can replace', async () => {
  const platform = tf.env().platform;
  const original = platform.fetch;
  const seen = [];
  platform.fetch = async (url, init) => {
    seen.push(String(url));
    const file = path.join(fixture('model_io'), new URL(url).pathname);
    return new Response(fs.readFileSync(file), {status: 200});
  };
  try {
    for (const load of [(u) => tf.loadLayersModel(u), (u) => tf.loadLayersModel(tf.io.nodeHTTPRequest(u))]) {
      seen.length = 0;
      const model = await load('http://models.invalid/layers_tfjs_node/model.json');
      assert.deepEqual(seen, ['http://models.invalid/layers_tfjs_node/model.json',
                              'http://models.invalid/layers_tfjs_node/weights.bin']);
      model.dispose();
    }
  } finally {
    platform.fetch = original;
  }
});
