'use strict';
// Real client libraries of tfjs-node, installed from npm (scripts/clients.js) with
// `@tensorflow/tfjs-node` resolving to this package, as a user would install them:
// @vladmandic/human (face with mesh, iris, emotion, age/gender and descriptor; body; hand;
// object; selfie segmentation; gestures) and @vladmandic/face-api (SSD MobileNet v1, 68
// landmarks, expressions, age/gender, descriptors) on their own sample images. Their results
// are compared with the real tfjs-node's, recorded beside this test by
// `node scripts/clients.js --record` (fixtures/clients/expected.json).

const test = require('node:test');
const assert = require('node:assert/strict');
const clients = require('../scripts/clients');

const expected = require(clients.EXPECTED);

/** Pixels: boxes, landmarks and keypoints. */
const PX = 1.5;
/** Scores, probabilities, angles; ages in years. */
const SCORE = 0.01;
const AGE = 0.2;
/** Least cosine similarity of descriptors. */
const COSINE = 0.9999;

function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / Math.sqrt(aa * bb);
}

/** Compares two summaries leaf by leaf; `tolerance(path)` gives a number leaf's tolerance. */
function assertClose(actual, wanted, tolerance, where = '') {
  if (typeof wanted === 'number') {
    assert.equal(typeof actual, 'number', where);
    const eps = tolerance(where);
    assert.ok(Math.abs(actual - wanted) <= eps, `${where}: ${actual}, tfjs-node ${wanted} (±${eps})`);
  } else if (Array.isArray(wanted)) {
    assert.ok(Array.isArray(actual), where);
    assert.equal(actual.length, wanted.length, `${where}: count`);
    wanted.forEach((w, i) => assertClose(actual[i], w, tolerance, `${where}[${i}]`));
  } else if (wanted !== null && typeof wanted === 'object') {
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(wanted).sort(), where);
    for (const key of Object.keys(wanted)) {
      if (key === 'embedding' || key === 'descriptor') {
        assert.equal(actual[key].length, wanted[key].length, `${where}.${key}`);
        if (wanted[key].length) {
          const c = cosine(actual[key], wanted[key]);
          assert.ok(c >= COSINE, `${where}.${key}: cosine ${c} to tfjs-node's`);
        }
      } else {
        assertClose(actual[key], wanted[key], tolerance, `${where}.${key}`);
      }
    }
  } else {
    assert.equal(actual, wanted, where);
  }
}

/** The tolerance of a leaf, by the name it is under. */
function toleranceOf(where) {
  if (/\.age$/.test(where)) return AGE;
  if (/score|Score|Probability|rotation|emotion\[\d+\]\[1\]/.test(where)) return SCORE;
  if (/keypoints\[\d+\]\[3\]$/.test(where)) return SCORE;
  if (/segmentation\.(mean|sample)/.test(where)) return 2;  // of 0..255
  return PX;
}

for (const client of Object.keys(clients.CLIENTS)) {
  test(`${client} runs on the tensorflow backend and finds what it finds on tfjs-node`,
       {timeout: 180000}, () => {
         // Each library in its own process, as a program using it would be. The first run
         // fetches the packages from npm (cached in ~/.cache/tfjs-node-rs/clients).
         const got = clients.runInChild(client, 'tensorflow');
         // human chooses its backend itself (by tf.backend().binding.TF_Version).
         assert.equal(got.backend, 'tensorflow');
         const wanted = expected.clients[client];
         assert.ok(wanted.some((image) => JSON.stringify(image).length > 100), 'something found');
         assertClose(got.summaries, wanted, toleranceOf, client);
       });
}
