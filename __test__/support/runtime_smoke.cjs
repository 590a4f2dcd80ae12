'use strict';
// What a first program does, run by another JS runtime (Bun, Deno) or Node version: load the
// package, train a model, predict, read results sync and async, decode an image. Values are by
// hand; prints one line per check and 'N passed, N failed' last, and exits 1 on a failure.
// Usage: <runtime> runtime_smoke.cjs <package dir>   (.cjs: Deno runs it as CommonJS)

const path = require('path');

const tf = require(path.resolve(process.argv[2] || path.join(__dirname, '..', '..')));
const runtime = process.versions.bun ? `Bun ${process.versions.bun}` :
  process.versions.deno ? `Deno ${process.versions.deno}` : `Node.js ${process.versions.node}`;

const checks = [];
function check(name, ok, got) {
  checks.push(ok);
  console.log(`${ok ? 'ok' : 'not ok'} - ${runtime}: ${name}${ok ? '' : ` (got ${got})`}`);
}

async function main() {
  check('the tensorflow backend is current', tf.getBackend() === 'tensorflow', tf.getBackend());

  // y = 2x + 1 from a zero-initialised dense layer: the first epoch's loss is the mean of
  // y^2 = (1 + 9 + 25 + 49) / 4 = 21, and full-batch SGD converges to the line.
  const model = tf.sequential({
    layers: [tf.layers.dense({units: 1, inputShape: [1], kernelInitializer: 'zeros'})],
  });
  model.compile({optimizer: tf.train.sgd(0.1), loss: 'meanSquaredError'});
  const xs = tf.tensor2d([[0], [1], [2], [3]]);
  const ys = tf.tensor2d([[1], [3], [5], [7]]);
  const history = await model.fit(xs, ys, {epochs: 200, verbose: 0});
  const loss = history.history.loss;
  check('the first epoch\'s loss is 21', Math.abs(loss[0] - 21) < 1e-5, loss[0]);
  check('training converges', loss[loss.length - 1] < 1e-6, loss[loss.length - 1]);

  const input = tf.tensor2d([[10]]);
  const predicted = model.predict(input);
  const sync = predicted.dataSync()[0];
  const async = (await predicted.data())[0];
  check('predict(10) reads 21 (sync)', Math.abs(sync - 21) < 1e-3, sync);
  check('the async read equals the sync one', async === sync, async);

  // A 2x2 RGB PNG made here (zlib is in every runtime's Node API): decodePng runs TF's kernel.
  const png = tinyPng([[[255, 0, 0], [0, 255, 0]], [[0, 0, 255], [9, 8, 7]]]);
  const image = tf.node.decodePng(png, 3);
  const pixels = Array.from(image.dataSync());
  check('decodePng gives the pixels', pixels.join() === '255,0,0,0,255,0,0,0,255,9,8,7', pixels);

  tf.dispose([xs, ys, input, predicted, image]);
  model.optimizer.dispose();  // SGD's learning-rate scalar
  model.dispose();
  check('no tensor left', tf.memory().numTensors === 0, tf.memory().numTensors);
}

/** An 8-bit RGB PNG of `rows` ([[r, g, b], ...] per row), no filtering. */
function tinyPng(rows) {
  const zlib = require('zlib');
  const crcTable = Array.from({length: 256}, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes) => {
    let c = 0xffffffff;
    for (const b of bytes) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type, data) => {
    const head = Buffer.alloc(8);
    head.writeUInt32BE(data.length, 0);
    head.write(type, 4, 'latin1');
    const tail = Buffer.alloc(4);
    tail.writeUInt32BE(crc(Buffer.concat([head.subarray(4), data])), 0);
    return Buffer.concat([head, data, tail]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(rows[0].length, 0);
  header.writeUInt32BE(rows.length, 4);
  header.set([8, 2, 0, 0, 0], 8);  // 8 bits, RGB, deflate, no filter, no interlace
  const raw = Buffer.from(rows.flatMap((row) => [0, ...row.flat()]));
  return new Uint8Array(Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header), chunk('IDAT', zlib.deflateSync(raw)), chunk('IEND', Buffer.alloc(0)),
  ]));
}

main().then(
    () => {
      const failed = checks.filter((ok) => !ok).length;
      console.log(`${checks.length - failed} passed, ${failed} failed`);
      process.exitCode = failed === 0 ? 0 : 1;
    },
    (err) => {
      console.error(err);
      process.exitCode = 1;
    });
