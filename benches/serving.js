'use strict';
// A model behind a web server, as Node programs use TensorFlow: a `node:http` server on
// 127.0.0.1 whose /predict route runs `model.predict(x)` and `await out.data()` for a batch of
// 16 images through a convnet, loaded by N concurrent clients while a /ping route is
// polled every 5 ms. One server process per backend, taking turns in one run; the clients run
// in this process.
//
//   node benches/serving.js [--backends=tensorflow,tfjs-node,wasm] [--clients=200]
//                           [--seconds=6] [--warmup-seconds=2]
//
// Per backend: the server's event-loop delay during the load (`monitorEventLoopDelay`: p50,
// p99, max), request latency (p50, p99) and requests per second seen by the clients, ping
// round trips, and the time the server's JS thread is busy per request (event-loop utilization
// x wall time / requests). `runServing` is what `npm run bench` (benches/run.js) calls.

const http = require('http');
const {fork} = require('child_process');
const {monitorEventLoopDelay, performance} = require('perf_hooks');
const {backendEnv, loadBackend} = require('./worker');

const BATCH = 16;
const IMAGE = [28, 28, 1];
const PING_EVERY_MS = 5;
/** A request not answered by then counts as an error (a server that stalls that long fails). */
const REQUEST_TIMEOUT_MS = 120000;

// ---------------------------------------------------------------- the server (child process)

// The Keras MNIST example's convnet without its dropout: about 7 ms a batch of 16 on TF here.
function convnet(tf) {
  const init = (seed) => tf.initializers.glorotUniform({seed});
  const model = tf.sequential();
  model.add(tf.layers.conv2d({filters: 32, kernelSize: 3, activation: 'relu', inputShape: IMAGE,
                              kernelInitializer: init(1)}));
  model.add(tf.layers.conv2d({filters: 64, kernelSize: 3, activation: 'relu',
                              kernelInitializer: init(2)}));
  model.add(tf.layers.maxPooling2d({poolSize: 2}));
  model.add(tf.layers.flatten());
  model.add(tf.layers.dense({units: 128, activation: 'relu', kernelInitializer: init(3)}));
  model.add(tf.layers.dense({units: 10, activation: 'softmax', kernelInitializer: init(4)}));
  return model;
}

/** Starts the server in this process; resolves with `{port, close}`. */
async function serve(tf) {
  const model = convnet(tf);
  const size = BATCH * IMAGE.reduce((a, b) => a * b, 1);
  const pixels = new Float32Array(size).map((_, i) => (i * 7919 % 255) / 255);
  const predict = async () => {
    const x = tf.tensor4d(pixels, [BATCH, ...IMAGE]);
    const out = model.predict(x);
    const values = await out.data();
    x.dispose();
    out.dispose();
    return values;
  };
  const t0 = performance.now();
  await predict();
  const firstMs = performance.now() - t0;
  const delay = monitorEventLoopDelay({resolution: 1});
  let window = null;
  const startWindow = () => {
    delay.reset();
    delay.enable();
    window = {requests: 0, elu: performance.eventLoopUtilization(), at: performance.now()};
  };
  const server = http.createServer((req, res) => {
    if (req.url === '/ping') {
      res.end('pong');
    } else if (req.url === '/predict' || req.url === '/predict?measured') {
      // The first measured request opens the window (a separate request to open it would
      // queue behind the backlog of a slow backend).
      if (window === null && req.url === '/predict?measured') startWindow();
      predict().then((v) => {
        if (window) window.requests++;
        res.end(String(v[0]));
      }, (e) => {
        res.statusCode = 500;
        res.end(String(e && e.message));
      });
    } else if (req.url === '/stop' && window !== null) {
      delay.disable();
      const elu = performance.eventLoopUtilization(window.elu);
      const wallMs = performance.now() - window.at;
      const ms = (ns) => ns / 1e6;
      res.end(JSON.stringify({
        loopDelayMs: {p50: ms(delay.percentile(50)), p99: ms(delay.percentile(99)),
                      max: ms(delay.max)},
        busyMsPerRequest: window.requests ? elu.utilization * wallMs / window.requests : null,
        utilization: elu.utilization,
        served: window.requests,
        tensors: tf.memory().numTensors,
      }));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {port: server.address().port, firstMs, close: () => server.close()};
}

async function serverMain(backend) {
  const {tf} = await loadBackend(backend);
  const {port, firstMs} = await serve(tf);
  process.send({port, firstMs});
}

// ---------------------------------------------------------------- the load (this process)

/** GETs `route`; rejects on an error status, a broken connection or after `REQUEST_TIMEOUT_MS`. */
function get(agent, port, route) {
  return new Promise((resolve, reject) => {
    const req = http.get({host: '127.0.0.1', port, path: route, agent}, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('error', reject);
      res.on('aborted', () => reject(new Error('response aborted')));
      res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(body))));
    });
    req.setTimeout(REQUEST_TIMEOUT_MS, () => req.destroy(new Error(`${route} timed out`)));
    req.on('error', reject);
  });
}

const percentile = (sorted, p) => sorted.length ?
    sorted[Math.min(sorted.length - 1, Math.floor(p / 100 * sorted.length))] : null;

/**
 * Loads the server on `port` with `clients` concurrent request loops for `seconds` (after
 * `warmupSeconds` of the same load, not counted) and a ping every 5 ms.
 */
async function load(port, {clients, seconds, warmupSeconds}) {
  const agent = new http.Agent({keepAlive: true, maxSockets: clients + 1});
  const pingAgent = new http.Agent({keepAlive: true, maxSockets: 1});
  let phase = 'warmup';
  const latencies = [];
  let errors = 0;
  let firstError = null;
  const loop = async () => {
    while (phase !== 'done') {
      const t = performance.now();
      try {
        await get(agent, port, phase === 'warmup' ? '/predict' : '/predict?measured');
        if (phase === 'measure') latencies.push(performance.now() - t);
      } catch (e) {
        errors++;
        firstError = firstError || e.message;
      }
    }
  };
  const pings = [];
  const pinger = async () => {
    while (phase !== 'done') {
      const t = performance.now();
      try {
        await get(pingAgent, port, '/ping');
        if (phase === 'measure') pings.push(performance.now() - t);
      } catch (e) {
        errors++;
        firstError = firstError || e.message;
      }
      const wait = PING_EVERY_MS - (performance.now() - t);
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
  };
  const loops = [...Array(clients)].map(loop).concat([pinger()]);
  let wallS;
  let server;
  try {
    await new Promise((r) => setTimeout(r, warmupSeconds * 1000));
    phase = 'measure';
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, seconds * 1000));
    phase = 'done';
    wallS = (performance.now() - t0) / 1000;
    server = JSON.parse(await get(pingAgent, port, '/stop'));
  } finally {
    phase = 'done';
    await Promise.all(loops);
    agent.destroy();
    pingAgent.destroy();
  }
  latencies.sort((a, b) => a - b);
  pings.sort((a, b) => a - b);
  return {
    clients, seconds: wallS,
    requestsPerSecond: latencies.length / wallS,
    latencyMs: {p50: percentile(latencies, 50), p99: percentile(latencies, 99)},
    pingMs: {count: pings.length, p50: percentile(pings, 50), max: percentile(pings, 100)},
    errors, firstError, ...server,
  };
}

/** Starts a server process for `backend`; resolves with `{port, firstMs, child}`. */
function startServer(backend, env = {}) {
  const child = fork(__filename, [`--serve=${backend}`],
                     {env: {...process.env, ...backendEnv(backend), ...env},
                      stdio: ['ignore', 'ignore', 'pipe', 'ipc']});
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += c));
  return new Promise((resolve, reject) => {
    child.once('message', (m) => resolve({...m, child}));
    child.once('exit', (code) => reject(new Error(`server exited (${code}): ${stderr.slice(-2000)}`)));
  });
}

/** One server process and one load per backend, in turn. */
async function measure(backends, options) {
  const results = {};
  for (const backend of backends) {
    let server;
    try {
      server = await startServer(backend);
      results[backend] = {firstMs: server.firstMs, ...(await load(server.port, options))};
    } catch (e) {
      results[backend] = {error: String(e && e.message || e)};
    } finally {
      if (server) server.child.kill();
    }
  }
  return results;
}

/** The serving section of `npm run bench`: runs its own event loop in a child of run.js. */
function runServing(opts, backends, results) {
  const {spawnSync} = require('child_process');
  const args = [__filename, `--backends=${backends.join(',')}`, '--json'];
  if (opts.quick) args.push('--seconds=3', '--warmup-seconds=1');
  const r = spawnSync(process.execPath, args, {encoding: 'utf8', timeout: 10 * 60 * 1000});
  const line = (r.stdout || '').trim().split('\n').pop();
  try {
    results.serving = JSON.parse(line);
  } catch (e) {
    results.serving = {error: (r.stderr || r.stdout || '').slice(-2000)};
  }
  console.log(results.serving.error ? `  serving: ${results.serving.error}` :
    require('./report').servingText(results.serving));
}

async function main() {
  const opts = {};
  for (const arg of process.argv.slice(2)) {
    const [k, v] = arg.replace(/^--/, '').split('=');
    opts[k] = v === undefined ? true : v;
  }
  if (opts.serve) return serverMain(opts.serve);
  const backends = (opts.backends || 'tensorflow,tfjs-node,wasm').split(',');
  const options = {clients: Number(opts.clients || 200), seconds: Number(opts.seconds || 6),
                   warmupSeconds: Number(opts['warmup-seconds'] || 2)};
  const serving = {...options, date: new Date().toISOString(), model: `convnet, batch ${BATCH}`,
                   backends: await measure(backends, options)};
  if (opts.json) console.log(JSON.stringify(serving));
  else console.log(require('./report').servingText(serving));
}

if (require.main === module) {
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}

module.exports = {serve, startServer, load, runServing, convnet};
