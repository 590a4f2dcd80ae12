'use strict';
// Zips for the set-up tests, written by Python's zipfile (an implementation independent of
// scripts/libtensorflow.js's reader).

const assert = require('node:assert/strict');
const {spawnSync} = require('node:child_process');

const HAVE_PYTHON = spawnSync('python3', ['-c', 'import zipfile'], {stdio: 'ignore'}).status === 0;
/** Test options that skip a test where python3 is missing. */
const needsPython = {skip: HAVE_PYTHON ? false : 'python3 (zipfile) is not available'};

// Writes a zip with Python's zipfile (an implementation independent of ours).
// entries: [name, Buffer|string, 'stored'|'deflated'] ; names ending in / are folders.
function pyZip(file, entries) {
  const spec = entries.map(([name, data, method = 'deflated']) => [
    name,
    Buffer.from(data || '').toString('base64'),
    method,
  ]);
  const code = [
    'import base64, json, sys, zipfile',
    'spec = json.load(sys.stdin)',
    'with zipfile.ZipFile(sys.argv[1], "w") as z:',
    '    for name, data, method in spec:',
    '        info = zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0))',
    '        info.compress_type = zipfile.ZIP_DEFLATED if method == "deflated" else zipfile.ZIP_STORED',
    '        info.external_attr = (0o40755 if name.endswith("/") else 0o100644) << 16',
    '        z.writestr(info, base64.b64decode(data))',
  ].join('\n');
  const res = spawnSync('python3', ['-c', code, file], {input: JSON.stringify(spec), encoding: 'utf8'});
  assert.equal(res.status, 0, res.stderr);
  return file;
}

module.exports = {pyZip, needsPython, HAVE_PYTHON};
