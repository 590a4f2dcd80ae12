'use strict';
// Image codecs on image files written by Pillow (scripts/make_fixtures.py), compared with
// the pixels Pillow decoded from the same files; encoded PNGs are read back by a PNG decoder
// written here (zlib + unfiltering), JPEGs by their markers and a decode.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const zlib = require('zlib');
const {tf, fixture, readJson, assertNoLeak} = require('./fixtures/helpers');

const EXPECTED = readJson('images', 'expected.json');
const bytes = (name) => new Uint8Array(fs.readFileSync(fixture('images', name)));

/** Pillow's pixels of `name` as a flat array, frame by frame. */
function pillowPixels(name, channelPick) {
  const e = EXPECTED[name];
  const flat = [];
  for (const frame of e.pixels) {
    for (const p of frame) flat.push(...(channelPick ? channelPick(p) : p));
  }
  return flat;
}

function assertPixels(t, name, {channels, frames, tolerance = 0, pick} = {}) {
  const e = EXPECTED[name];
  const c = channels || e.pixels[0][0].length;
  const shape = frames ? [e.frames, e.height, e.width, c] : [e.height, e.width, c];
  assert.deepEqual(t.shape, shape, `${name} shape`);
  assert.equal(t.dtype, 'int32');
  const got = t.dataSync();
  const want = pillowPixels(name, pick);
  assert.equal(got.length, want.length);
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  assert.ok(worst <= tolerance, `${name}: max pixel difference ${worst} > ${tolerance}`);
}

test('decodePng / decodeBmp / decodeGif and accurate-DCT decodeJpeg match Pillow exactly',
     async () => {
  await assertNoLeak(() => {
    const cases = [
      [tf.node.decodePng(bytes('rgb.png')), 'rgb.png', {}],
      [tf.node.decodePng(bytes('gray.png')), 'gray.png', {}],
      [tf.node.decodePng(bytes('rgba.png')), 'rgba.png', {}],
      [tf.node.decodeBmp(bytes('rgb.bmp')), 'rgb.bmp', {}],
      [tf.node.decodeGif(bytes('anim.gif')), 'anim.gif', {frames: true}],
      // Pillow's libjpeg uses the accurate integer DCT; TF's default ('') is the fast one.
      [tf.node.decodeJpeg(bytes('rgb.jpg'), 0, 1, true, false, 1, 'INTEGER_ACCURATE'),
       'rgb.jpg', {}],
      [tf.node.decodeJpeg(bytes('gray.jpg'), 0, 1, true, false, 1, 'INTEGER_ACCURATE'),
       'gray.jpg', {}],
      [tf.node.decodeJpeg(bytes('rgb.jpg')), 'rgb.jpg', {tolerance: 8}],
      [tf.node.decodeJpeg(bytes('gray.jpg')), 'gray.jpg', {tolerance: 8}],
    ];
    for (const [t, name, opts] of cases) assertPixels(t, name, opts);
    tf.dispose(cases.map((c) => c[0]));
  });
});

test('channel options convert as TF does', async () => {
  await assertNoLeak(() => {
    const rgbOfRgba = tf.node.decodePng(bytes('rgba.png'), 3);
    assertPixels(rgbOfRgba, 'rgba.png', {channels: 3, pick: (p) => p.slice(0, 3)});
    const rgbOfGray = tf.node.decodePng(bytes('gray.png'), 3);
    assertPixels(rgbOfGray, 'gray.png', {channels: 3, pick: (p) => [p[0], p[0], p[0]]});
    const rgbaOfRgb = tf.node.decodePng(bytes('rgb.png'), 4);
    assertPixels(rgbaOfRgb, 'rgb.png', {channels: 4, pick: (p) => [...p, 255]});
    const grayOfRgb = tf.node.decodeJpeg(bytes('rgb.jpg'), 1);
    assert.deepEqual(grayOfRgb.shape, [6, 8, 1]);
    const bmp4 = tf.node.decodeBmp(bytes('rgb.bmp'), 4);
    assert.deepEqual(bmp4.shape, [6, 8, 4]);
    const halfJpeg = tf.node.decodeJpeg(bytes('rgb.jpg'), 0, 2);
    assert.deepEqual(halfJpeg.shape, [3, 4, 3]);
    tf.dispose([rgbOfRgba, rgbOfGray, rgbaOfRgb, grayOfRgb, bmp4, halfJpeg]);
  });
});

test('decodeImage sniffs the format; GIFs expand to frames unless told not to', () => {
  for (const [name, opts] of [['rgb.png', {}], ['gray.png', {}], ['rgba.png', {}],
                              ['rgb.bmp', {}], ['rgb.jpg', {tolerance: 8}],
                              ['anim.gif', {frames: true}]]) {
    const t = tf.node.decodeImage(bytes(name));
    assertPixels(t, name, opts);
    t.dispose();
  }
  // The first frame alone: one tensor more, for tfjs and for TF (tfjs-node's spec counts both;
  // the frames it is cut from are freed).
  const backend = tf.backend();
  const tensors = [tf.memory().numTensors, backend.getNumOfTFTensors()];
  const first = tf.node.decodeImage(bytes('anim.gif'), 3, 'int32', false);
  assert.deepEqual(first.shape, [6, 8, 3]);
  assert.deepEqual(Array.from(first.dataSync()), EXPECTED['anim.gif'].pixels[0].flat());
  assert.deepEqual([tf.memory().numTensors, backend.getNumOfTFTensors()], tensors.map((n) => n + 1));
  first.dispose();
  assert.deepEqual([tf.memory().numTensors, backend.getNumOfTFTensors()], tensors);
  const rgb = tf.node.decodeImage(bytes('gray.png'), 3);
  assert.deepEqual(rgb.shape, [6, 8, 3]);
  rgb.dispose();
  assert.equal(tf.node.getImageType(bytes('rgb.jpg')), 'jpeg');
  assert.equal(tf.node.getImageType(bytes('rgb.bmp')), 'BMP');
  assert.throws(() => tf.node.decodeImage(bytes('rgb.png'), 0, 'float32'), /int32/);
});

test('truncated or non-image bytes give clear errors', async () => {
  await assertNoLeak(() => {
    const junk = new Uint8Array(64).fill(7);
    assert.throws(() => tf.node.decodeImage(junk), /Expected image \(BMP, JPEG, PNG, or GIF\)/);
    assert.throws(() => tf.node.decodePng(junk), /decodePng: the image could not be decoded/);
    assert.throws(() => tf.node.decodeJpeg(junk), /decodeJpeg: the image could not be decoded/);
    assert.throws(() => tf.node.decodeGif(junk), /decodeGif: the image could not be decoded/);
    assert.throws(() => tf.node.decodeBmp(junk), /decodeBmp: the image could not be decoded/);
    for (const name of ['rgb.png', 'rgb.jpg', 'rgb.bmp']) {
      const b = bytes(name);
      const truncated = b.subarray(0, Math.floor(b.length / 2));
      assert.throws(() => tf.node.decodeImage(truncated), /could not be decoded/, name);
    }
    // TF keeps the complete frames of a truncated GIF and refuses one without any.
    const gif = bytes('anim.gif');
    assert.throws(() => tf.node.decodeImage(gif.subarray(0, 100)), /Invalid GIF data/);
    const partial = tf.node.decodeImage(gif.subarray(0, 150));
    assert.deepEqual(partial.shape, [1, 6, 8, 3]);
    assert.deepEqual(Array.from(partial.dataSync()), EXPECTED['anim.gif'].pixels[0].flat());
    partial.dispose();
    assert.throws(() => tf.node.decodeImage(new Uint8Array(0)), /empty/);
    assert.throws(() => tf.node.decodeImage('not bytes'), TypeError);
    assert.throws(() => tf.node.decodePng(bytes('rgb.png'), 2), /channels must be one of 0, 1, 3, 4/);
    assert.throws(() => tf.node.decodeJpeg(bytes('rgb.jpg'), 0, 3), /ratio/);
  });
});

/** A minimal PNG reader (8-bit, non-interlaced): [width, height, channels, pixels]. */
function readPng(buf) {
  assert.deepEqual(Array.from(buf.subarray(0, 8)), [137, 80, 78, 71, 13, 10, 26, 10]);
  let pos = 8;
  let ihdr;
  const idat = [];
  while (pos < buf.length) {
    const len = buf.readUInt32BE(pos);
    const kind = buf.toString('latin1', pos + 4, pos + 8);
    const data = buf.subarray(pos + 8, pos + 8 + len);
    assert.equal(buf.readUInt32BE(pos + 8 + len), zlib.crc32 ? zlib.crc32(buf.subarray(pos + 4, pos + 8 + len)) : buf.readUInt32BE(pos + 8 + len));
    if (kind === 'IHDR') ihdr = data;
    if (kind === 'IDAT') idat.push(data);
    pos += 12 + len;
  }
  const width = ihdr.readUInt32BE(0);
  const height = ihdr.readUInt32BE(4);
  assert.equal(ihdr[8], 8, 'bit depth');
  assert.equal(ihdr[12], 0, 'interlace');
  const channels = {0: 1, 4: 2, 2: 3, 6: 4}[ihdr[9]];
  const raw = zlib.inflateSync(Buffer.concat(idat));
  const stride = width * channels;
  const out = new Uint8Array(height * stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const v = raw[y * (stride + 1) + 1 + x];
      const a = x >= channels ? out[y * stride + x - channels] : 0;
      const b = y > 0 ? out[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? out[(y - 1) * stride + x - channels] : 0;
      let pred = 0;
      if (filter === 1) pred = a;
      else if (filter === 2) pred = b;
      else if (filter === 3) pred = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      out[y * stride + x] = (v + pred) & 0xff;
    }
  }
  return [width, height, channels, out];
}

test('encodePng writes a PNG an independent reader decodes to the same pixels', async () => {
  for (const [name, c] of [['rgb.png', 3], ['gray.png', 1], ['rgba.png', 4]]) {
    const e = EXPECTED[name];
    const image = tf.tensor3d(pillowPixels(name), [e.height, e.width, c], 'int32');
    for (const compression of [undefined, 0, 9]) {
      const png = await tf.node.encodePng(image, compression);
      assert.ok(png instanceof Uint8Array);
      const [w, h, ch, pixels] = readPng(Buffer.from(png));
      assert.deepEqual([w, h, ch], [e.width, e.height, c]);
      assert.deepEqual(Array.from(pixels), pillowPixels(name));
    }
    image.dispose();
  }
  const twoChannel = tf.tensor3d([1, 2, 3, 4], [1, 2, 2], 'int32');
  const [, , ch2, px2] = readPng(Buffer.from(await tf.node.encodePng(twoChannel)));
  assert.equal(ch2, 2);
  assert.deepEqual(Array.from(px2), [1, 2, 3, 4]);
  twoChannel.dispose();
  const bad = tf.zeros([2, 2, 5], 'int32');
  await assert.rejects(tf.node.encodePng(bad), /1, 2, 3, 4 channels, got 5/);
  await assert.rejects(tf.node.encodePng(tf.zeros([2, 2], 'int32')), /3D tensor/);
  await assert.rejects(tf.node.encodePng(tf.zeros([2, 2, 3], 'int32'), 12), /compression/);
  bad.dispose();
});

/** JPEG segments: [{marker, data}] up to the start of scan. */
function jpegSegments(buf) {
  assert.equal(buf[0], 0xff);
  assert.equal(buf[1], 0xd8);
  const segs = [];
  let pos = 2;
  while (pos < buf.length) {
    assert.equal(buf[pos], 0xff);
    const marker = buf[pos + 1];
    const len = buf.readUInt16BE(pos + 2);
    segs.push({marker, data: buf.subarray(pos + 4, pos + 2 + len)});
    if (marker === 0xda) break;
    pos += 2 + len;
  }
  assert.equal(buf[buf.length - 2], 0xff);
  assert.equal(buf[buf.length - 1], 0xd9);
  return segs;
}

test('encodeJpeg honours its options; the result decodes back to the image', async () => {
  const e = EXPECTED['rgb.png'];
  const image = tf.tensor3d(pillowPixels('rgb.png'), [e.height, e.width, 3], 'int32');
  const jpeg = Buffer.from(await tf.node.encodeJpeg(image));
  let segs = jpegSegments(jpeg);
  const jfif = segs.find((s) => s.marker === 0xe0);
  assert.equal(jfif.data.toString('latin1', 0, 4), 'JFIF');
  assert.equal(jfif.data[7], 1, 'density unit: inches');
  assert.equal(jfif.data.readUInt16BE(8), 300);
  assert.equal(jfif.data.readUInt16BE(10), 300);
  assert.ok(segs.some((s) => s.marker === 0xc0), 'baseline by default');
  const back = tf.node.decodeJpeg(new Uint8Array(jpeg));
  assert.deepEqual(back.shape, [6, 8, 3]);
  back.dispose();

  const best = await tf.node.encodeJpeg(image, 'rgb', 100, false, false, false);
  const decoded = tf.node.decodeJpeg(best, 0, 1, true, false, 1, 'INTEGER_ACCURATE');
  const want = pillowPixels('rgb.png');
  const got = decoded.dataSync();
  let worst = 0;
  for (let i = 0; i < want.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  assert.ok(worst <= 3, `quality 100 without chroma downsampling: max difference ${worst}`);
  decoded.dispose();

  const small = await tf.node.encodeJpeg(image, '', 10);
  assert.ok(small.length < best.length, 'lower quality is smaller');

  const xmp = '<x:xmpmeta>tfjs</x:xmpmeta>';
  const fancy = Buffer.from(await tf.node.encodeJpeg(image, '', 90, true, true, true, 'cm', 72,
                                                     96, xmp));
  segs = jpegSegments(fancy);
  assert.ok(segs.some((s) => s.marker === 0xc2), 'progressive');
  const jfif2 = segs.find((s) => s.marker === 0xe0);
  assert.equal(jfif2.data[7], 2, 'density unit: cm');
  assert.equal(jfif2.data.readUInt16BE(8), 72);
  assert.equal(jfif2.data.readUInt16BE(10), 96);
  assert.ok(segs.some((s) => s.marker === 0xe1 && s.data.toString('latin1').includes(xmp)));

  const gray = tf.tensor3d(pillowPixels('gray.png'), [6, 8, 1], 'int32');
  const grayJpeg = await tf.node.encodeJpeg(gray, 'grayscale');
  const grayBack = tf.node.decodeJpeg(grayJpeg);
  assert.deepEqual(grayBack.shape, [6, 8, 1]);
  await assert.rejects(tf.node.encodeJpeg(image, 'grayscale'), /must have 1 channels, got 3/);
  await assert.rejects(tf.node.encodeJpeg(image, 'cmyk'), /format/);
  await assert.rejects(tf.node.encodeJpeg(image, '', 101), /quality/);
  await assert.rejects(tf.node.encodeJpeg(image, '', 90, false, false, true, 'mm'), /densityUnit/);
  tf.dispose([image, gray, grayBack]);
});

for (const defer of ['1', '0']) {
  test(`decodeJpeg does not leak, as tfjs-node's spec states it (deferring ${defer === '1' ? 'on' : 'off'})`,
       () => {
         const {spawnSync} = require('node:child_process');
         // tfjs-node 4.22's 'decode jpeg node bindings do not leak' bounds RSS: after 10,000
         // warm-up calls, 100,000 decodes grow it by less than 1 MB. Here the package's own
         // counters come first: its native tensors, their bytes, the external buffers and the
         // releases waiting for the JS thread must all be back where they were. Then what V8's
         // heap holds after a full GC must not grow. RSS is bounded loosely, since what
         // allocators do once shows there too: Node.js 24's V8 grows a background thread's
         // malloc arena by 0.4-1.6 MB once, and under Wine RSS jumps by up to 2 MB once,
         // over 30,000 decodes or 300,000 alike. So 200,000 decodes may grow it by 5 MB, less
         // what V8 added to its heap's size (V8's choice: Node.js 26 once grew it by 8.4 MB with
         // nothing more held): 25 bytes a call, where a leaked input (685 bytes) or output (144)
         // would add 29-137 MB.
         const COUNTERS = ['liveTensors', 'liveBytes', 'externalBuffers', 'pendingReleases'];
         const script = `
           const tf = require(${JSON.stringify(require('path').resolve(__dirname, '..'))});
           const bytes = new Uint8Array(require('fs').readFileSync(${JSON.stringify(fixture('images', 'rgb.jpg'))}));
           const decode = (n) => { for (let i = 0; i < n; i++) tf.node.decodeJpeg(bytes).dispose(); };
           const counters = () => { const s = tf.backend().binding.stats(); return ${JSON.stringify(COUNTERS)}.map((k) => s[k]); };
           const first = counters();
           decode(10000);
           global.gc();
           const before = process.memoryUsage();
           decode(200000);
           const after = process.memoryUsage();
           global.gc();
           const held = process.memoryUsage().heapUsed - before.heapUsed;
           // Releases from other threads reach the JS thread when the event loop turns.
           setImmediate(() => console.log(JSON.stringify({
             counters: [first, counters()], held,
             outsideHeap: after.rss - before.rss - Math.max(0, after.heapTotal - before.heapTotal),
             rss: after.rss - before.rss})));`;
         const run = spawnSync(process.execPath, ['--expose-gc', '-e', script],
                               {encoding: 'utf8', env: {...process.env, TFJS_NODE_RS_DEFER: defer}});
         assert.equal(run.status, 0, run.stderr);
         const grown = JSON.parse(run.stdout.trim());
         const [first, last] = grown.counters.map((values) => Object.fromEntries(COUNTERS.map((k, i) => [k, values[i]])));
         assert.deepEqual(last, first, 'the native counters after the loop');
         // Measured on Node.js 20-26: 0.0-0.5 MB. Before, 12.8 MB on Node.js 26 (a Set entry
         // added and deleted per tensor: tensorflow_backend.js's LiveRecords).
         const mb = (bytes) => `${(bytes / 1e6).toFixed(2)} MB`;
         const grew = `over 200k decodes (RSS ${mb(grown.rss)}, less V8's heap growth ` +
                      `${mb(grown.outsideHeap)}, held by V8's heap ${mb(grown.held)})`;
         assert.ok(grown.outsideHeap < 5e6, `RSS grew ${grew}`);
         assert.ok(grown.held < 1e6, `V8's heap holds more ${grew}`);
       });
}
