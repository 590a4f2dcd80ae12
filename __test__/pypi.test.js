'use strict';
// Tests for the package-index client (scripts/pypi.js) against a local index on
// 127.0.0.1 serving a small fake wheel (__test__/support/index_server.js): the
// JSON and HTML simple API, pip's settings, sha256 and size checks, resuming,
// retries and the message for each failure.

const test = require('node:test');
const assert = require('node:assert/strict');
const crypto = require('node:crypto');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const {spawnSync} = require('node:child_process');

const pypi = require('../scripts/pypi.js');
const {startIndex, JSON_TYPE} = require('./support/index_server.js');
const {scratchDirs, quietLog} = require('./support/scratch.js');

const {parseIni, parseProjectPage, projectUrl} = pypi._internal;
const WHEEL = 'tensorflow_cpu-2.21.0-cp311-cp311-manylinux_2_27_x86_64.whl';
const OTHER = 'tensorflow_cpu-2.21.0-cp311-cp311-win_amd64.whl';
const DATA = crypto.randomBytes(3 * 1024 * 1024 + 17);

const tempDir = scratchDirs('tfjs-node-rs-pypi-test-');

const pick = (files) => files.find((f) => f.filename === WHEEL) || null;

// Downloads WHEEL from the given index URL(s) into a new folder, with quick retries
// and no pip.conf of this machine.
function download(indexUrl, {env = {}, retries = 2, extra, terminal = null} = {}) {
  const dir = tempDir('dl');
  const log = quietLog();
  const promise = pypi.downloadFromIndex({
    project: 'tensorflow-cpu',
    pick,
    describe: 'tensorflow-cpu 2.21.0 wheel',
    dir,
    env: {
      HOME: tempDir('home'),
      PIP_CONFIG_FILE: os.devnull,
      XDG_CONFIG_DIRS: tempDir('etc'),
      PIP_INDEX_URL: indexUrl,
      ...(extra ? {PIP_EXTRA_INDEX_URL: extra} : {}),
      ...env,
    },
    log,
    retries,
    retryDelayMs: 10,
    terminal,
  });
  return {dir, log, promise};
}

function leftIn(dir) {
  return fs.readdirSync(dir).sort();
}

test('JSON simple API: the file is found, downloaded and checked', async () => {
  const index = await startIndex([{filename: OTHER, data: Buffer.from('windows')}, {filename: WHEEL, data: DATA}]);
  try {
    const {dir, promise} = download(index.url);
    const file = await promise;
    assert.equal(file, path.join(dir, WHEEL));
    assert.ok(fs.readFileSync(file).equals(DATA));
    assert.deepEqual(leftIn(dir), [WHEEL]);
    const page = index.requests.find((r) => r.path === '/simple/tensorflow-cpu/');
    assert.match(page.headers.accept, new RegExp(`^${JSON_TYPE.replace(/[.+]/g, '\\$&')}`));
  } finally {
    await index.close();
  }
});

test('progress on a terminal: percent, MB and speed on one redrawn line', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}]);
  try {
    let drawn = '';
    let closed = false;
    await download(index.url, {terminal: {write: (s) => { drawn += s; }, close: () => { closed = true; }}}).promise;
    assert.match(drawn, new RegExp(`\\rtfjs-node-rs: downloading ${WHEEL.replace(/\./g, '\\.')} 100% 3/3 MB, [\\d.]+ MB/s \\x1b\\[K\\n$`));
    assert.ok(closed);
  } finally {
    await index.close();
  }
});

test('HTML simple API (an index without PEP 691): same result, hash from the link', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}], {form: 'html'});
  try {
    const {promise} = download(index.url);
    assert.ok(fs.readFileSync(await promise).equals(DATA));
  } finally {
    await index.close();
  }
});

test('sha256 mismatch: one clear message, nothing left behind', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA, listedSha256: 'ab'.repeat(32)}]);
  try {
    const {dir, promise} = download(index.url);
    await assert.rejects(promise, (err) => {
      assert.equal(err.code, pypi.INDEX_ERROR);
      assert.match(err.message, new RegExp(`^${WHEEL.replace(/\./g, '\\.')} from 127\\.0\\.0\\.1:\\d+ has sha256 [0-9a-f]{64}, but the index lists ${'ab'.repeat(32)}; the download was deleted`));
      return true;
    });
    assert.deepEqual(leftIn(dir), []);
  } finally {
    await index.close();
  }
});

test('a size other than the listed one is refused', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA, listedSize: DATA.length - 1}]);
  try {
    const {dir, promise} = download(index.url);
    await assert.rejects(promise, /is larger than the \d+ bytes the index gave/);
    assert.deepEqual(leftIn(dir), []);
  } finally {
    await index.close();
  }
});

test('a truncated download that repeats: retried, then one clear message', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}], {faults: {[WHEEL]: 'truncate-always'}});
  try {
    const {dir, log, promise} = download(index.url, {retries: 2});
    await assert.rejects(promise, (err) => {
      assert.equal(err.code, pypi.INDEX_ERROR);
      assert.match(err.message, new RegExp(`^the download of ${WHEEL.replace(/\./g, '\\.')} broke off at \\d+ of ${DATA.length} bytes .*\\(after 3 attempts\\)$`));
      return true;
    });
    assert.equal(log.lines.filter((l) => /trying again/.test(l)).length, 2);
    // What arrived stays, to be resumed by the next run; no finished file.
    assert.deepEqual(leftIn(dir), [`${WHEEL}.part`]);
    const ranges = index.requests.filter((r) => r.path.startsWith('/files/')).map((r) => r.headers.range || null);
    assert.equal(ranges[0], null);
    assert.match(ranges[1], /^bytes=\d+-$/); // each retry resumes where the last stopped
  } finally {
    await index.close();
  }
});

test('a download cut once is resumed with a Range request and completes', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}], {faults: {[WHEEL]: 'truncate-once'}});
  try {
    const {dir, promise} = download(index.url);
    assert.ok(fs.readFileSync(await promise).equals(DATA));
    assert.deepEqual(leftIn(dir), [WHEEL]);
    const files = index.requests.filter((r) => r.path.startsWith('/files/'));
    assert.equal(files.length, 2);
    // It resumes at what had arrived: at most the half the server sent before dropping.
    const resumedAt = Number(/^bytes=(\d+)-$/.exec(files[1].headers.range)[1]);
    assert.ok(resumedAt > 0 && resumedAt <= Math.floor(DATA.length / 2), files[1].headers.range);
  } finally {
    await index.close();
  }
});

test('a .part left by an earlier run is resumed', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}]);
  try {
    const {dir, promise} = (() => {
      const d = download(index.url);
      return d;
    })();
    // Written before the first request goes out (the page request comes first).
    fs.writeFileSync(path.join(dir, `${WHEEL}.part`), DATA.subarray(0, 1000));
    assert.ok(fs.readFileSync(await promise).equals(DATA));
    assert.equal(index.requests.find((r) => r.path.startsWith('/files/')).headers.range, 'bytes=1000-');
  } finally {
    await index.close();
  }
});

test('404 for the file: one clear message, no retries', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}], {faults: {[WHEEL]: '404'}});
  try {
    const {dir, promise} = download(index.url);
    await assert.rejects(promise, (err) => {
      assert.equal(err.code, pypi.INDEX_ERROR);
      assert.match(err.message, /^downloading http:\/\/127\.0\.0\.1:\d+\/files\/tensorflow_cpu-2\.21\.0-cp311-cp311-manylinux_2_27_x86_64\.whl answered 404 Not Found$/);
      return true;
    });
    assert.equal(index.requests.filter((r) => r.path.startsWith('/files/')).length, 1);
    assert.deepEqual(leftIn(dir), []);
  } finally {
    await index.close();
  }
});

test('404 for the project, or no matching file: says which index', async () => {
  const empty = await startIndex([], {project: 'something-else'});
  const windowsOnly = await startIndex([{filename: OTHER, data: Buffer.from('windows')}]);
  try {
    await assert.rejects(download(empty.url).promise, /^Error: the index http:\/\/127\.0\.0\.1:\d+\/simple\/ has no project tensorflow-cpu \(404 at http:\/\/127\.0\.0\.1:\d+\/simple\/tensorflow-cpu\/\)$/);
    await assert.rejects(download(windowsOnly.url).promise, /lists no tensorflow-cpu 2\.21\.0 wheel \(1 files\)/);
    // An extra index is asked when the first has nothing; both misses are reported.
    await assert.rejects(download(empty.url, {extra: windowsOnly.url}).promise, /has no project.*; the index page .* lists no/);
  } finally {
    await empty.close();
    await windowsOnly.close();
  }
});

test('PIP_EXTRA_INDEX_URL: the file comes from the extra index when the main one lacks it', async () => {
  const empty = await startIndex([]);
  const full = await startIndex([{filename: WHEEL, data: DATA}]);
  try {
    const {promise} = download(empty.url, {extra: full.url});
    assert.ok(fs.readFileSync(await promise).equals(DATA));
  } finally {
    await empty.close();
    await full.close();
  }
});

test('an index URL with credentials: sent as basic auth to that index', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}], {auth: 'user:s3cret'});
  try {
    assert.ok(fs.readFileSync(await download(index.url).promise).equals(DATA));
    const bad = index.url.replace('s3cret', 'wrong');
    await assert.rejects(download(bad).promise, /answered 401/);
  } finally {
    await index.close();
  }
});

test('nothing listening: cannot reach, after the retries', async () => {
  const server = net.createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = server.address().port;
  await new Promise((resolve) => server.close(resolve));
  const {promise, log} = download(`http://127.0.0.1:${port}/simple/`, {retries: 1});
  await assert.rejects(promise, new RegExp(`cannot reach 127\\.0\\.0\\.1:${port} \\(ECONNREFUSED`));
  assert.equal(log.lines.filter((l) => /trying again/.test(l)).length, 1);
});

test('HTTP_PROXY for an http index, and NO_PROXY', async () => {
  const index = await startIndex([{filename: WHEEL, data: DATA}]);
  const seen = [];
  const proxy = http.createServer((req, res) => {
    seen.push(req.url);
    const up = http.request(req.url, {headers: req.headers}, (r) => {
      res.writeHead(r.statusCode, r.headers);
      r.pipe(res);
    });
    req.pipe(up);
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  try {
    const proxyUrl = `http://127.0.0.1:${proxy.address().port}`;
    assert.ok(fs.readFileSync(await download(index.url, {env: {HTTP_PROXY: proxyUrl}}).promise).equals(DATA));
    assert.ok(seen.some((u) => /^http:\/\/127\.0\.0\.1:\d+\/simple\/tensorflow-cpu\/$/.test(u)), seen.join('\n'));
    assert.ok(seen.some((u) => u.includes('/files/')), seen.join('\n'));
    const before = seen.length;
    await download(index.url, {env: {HTTP_PROXY: proxyUrl, NO_PROXY: 'localhost,127.0.0.1'}}).promise;
    assert.equal(seen.length, before);
  } finally {
    proxy.closeAllConnections?.();
    await new Promise((resolve) => proxy.close(resolve));
    await index.close();
  }
});

// A certificate for 127.0.0.1, made with openssl.
function selfSignedCert() {
  const dir = tempDir('tls');
  const res = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1',
    '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem'),
  ], {encoding: 'utf8'});
  if (res.status !== 0) return null;
  return {key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')), file: path.join(dir, 'cert.pem')};
}

const HAVE_OPENSSL = spawnSync('openssl', ['version'], {stdio: 'ignore'}).status === 0;

test('HTTPS: PIP_CERT is the CA bundle; HTTPS_PROXY tunnels with CONNECT', {skip: !HAVE_OPENSSL && 'no openssl'}, async () => {
  const cert = selfSignedCert();
  assert.ok(cert, 'openssl could not make a certificate');
  const index = await startIndex([{filename: WHEEL, data: DATA}], {tls: {key: cert.key, cert: cert.cert}});
  const tunnels = [];
  const proxy = http.createServer((req, res) => res.writeHead(405).end());
  const tunnelSockets = [];
  proxy.on('connect', (req, socket) => {
    tunnels.push(req.url);
    tunnelSockets.push(socket);
    const [host, port] = req.url.split(':');
    const up = net.connect(Number(port), host, () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on('error', () => socket.destroy());
    socket.on('error', () => up.destroy());
  });
  await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  try {
    // Without the CA bundle the certificate is refused, with a hint.
    await assert.rejects(download(index.url, {retries: 0}).promise, /TLS certificate of 127\.0\.0\.1:\d+ could not be verified.*PIP_CERT/);
    // With it (from pip.conf here), directly and through the proxy.
    const conf = path.join(tempDir('conf'), 'pip.conf');
    fs.writeFileSync(conf, `[global]\ncert = ${cert.file}\n`);
    assert.ok(fs.readFileSync(await download(index.url, {env: {PIP_CONFIG_FILE: conf}}).promise).equals(DATA));
    const viaProxy = download(index.url, {
      env: {PIP_CERT: cert.file, HTTPS_PROXY: `http://127.0.0.1:${proxy.address().port}`},
    });
    assert.ok(fs.readFileSync(await viaProxy.promise).equals(DATA));
    assert.ok(tunnels.length >= 2 && tunnels.every((t) => /^127\.0\.0\.1:\d+$/.test(t)), tunnels.join('\n'));
  } finally {
    // Tunnels are no longer the HTTP server's connections: end them here.
    for (const socket of tunnelSockets) socket.destroy();
    await new Promise((resolve) => proxy.close(resolve));
    await index.close();
  }
});

// ---------------------------------------------------------------------------
// pip's settings and the page formats

test('pipSettings: pip.conf [global] and [download], PIP_CONFIG_FILE, environment first', () => {
  const files = {
    '/etc/xdg/pip/pip.conf': '[global]\nindex-url = https://global.example/simple\ntimeout = 5\n',
    '/home/u/.config/pip/pip.conf': [
      '# user config',
      '[global]',
      'extra-index-url =',
      '    https://extra-one.example/simple',
      '    https://extra-two.example/simple',
      'cert: /etc/ssl/corp.pem',
      '[download]',
      'proxy = http://proxy.example:3128',
      '[install]',
      'index-url = https://install-only.example/simple',
    ].join('\n'),
  };
  const readFile = (file) => {
    if (!(file in files)) throw Object.assign(new Error('ENOENT'), {code: 'ENOENT'});
    return files[file];
  };
  const env = {HOME: '/home/u'};
  assert.deepEqual(pypi.pipSettings(env, {readFile}), {
    indexUrls: ['https://global.example/simple', 'https://extra-one.example/simple', 'https://extra-two.example/simple'],
    cert: '/etc/ssl/corp.pem',
    proxy: 'http://proxy.example:3128',
    timeoutS: 5,
  });
  const fromEnv = pypi.pipSettings({
    ...env, PIP_INDEX_URL: 'https://env.example/simple', PIP_EXTRA_INDEX_URL: 'https://e1/ https://e2/', PIP_CERT: '/ca.pem', PIP_DEFAULT_TIMEOUT: '180',
  }, {readFile});
  assert.deepEqual(fromEnv.indexUrls, ['https://env.example/simple', 'https://e1/', 'https://e2/']);
  assert.equal(fromEnv.cert, '/ca.pem');
  assert.equal(fromEnv.timeoutS, 180);
  // Where pip keeps them on Windows (pip.ini) and macOS.
  const windows = {'C:\\Users\\u\\AppData\\Roaming\\pip\\pip.ini': '[global]\nindex-url = https://win.example/simple\n'};
  const read = (table) => (file) => {
    if (!(file in table)) throw Object.assign(new Error('ENOENT'), {code: 'ENOENT'});
    return table[file];
  };
  assert.deepEqual(pypi.pipSettings({USERPROFILE: 'C:\\Users\\u', APPDATA: 'C:\\Users\\u\\AppData\\Roaming'},
                                    {readFile: read(windows), platform: 'win32'}).indexUrls, ['https://win.example/simple']);
  const mac = {'/Users/u/Library/Application Support/pip/pip.conf': '[global]\nindex-url = https://mac.example/simple\n'};
  assert.deepEqual(pypi.pipSettings({HOME: '/Users/u'}, {readFile: read(mac), platform: 'darwin'}).indexUrls, ['https://mac.example/simple']);
  // No configuration at all: PyPI. pip's find-links is not used.
  const none = pypi.pipSettings({HOME: '/nowhere', PIP_FIND_LINKS: '/opt/wheels'}, {readFile: () => { throw new Error('ENOENT'); }});
  assert.deepEqual(none.indexUrls, [pypi.DEFAULT_INDEX]);
  assert.equal(none.cert, null);
});

test('parseIni: comments, continuation lines, keys with underscores', () => {
  assert.deepEqual(parseIni('; c\n[global]\nIndex_URL = a\nextra-index-url = b\n  c\n# x\n[download]\nno-deps: yes\n'), {
    global: {'index-url': 'a', 'extra-index-url': 'b\nc'},
    download: {'no-deps': 'yes'},
  });
});

test('parseProjectPage: JSON and HTML forms, relative URLs, hashes, yanked files', () => {
  const page = new URL('https://idx.example/simple/tensorflow-cpu/');
  const json = parseProjectPage(JSON.stringify({
    files: [
      {filename: 'a.whl', url: '../../f/a.whl', hashes: {sha256: 'AB'.repeat(32)}, size: 12},
      {filename: 'b.whl', url: 'https://cdn.example/b.whl#sha256=' + 'cd'.repeat(32), hashes: {}, yanked: 'broken'},
    ],
  }), `${JSON_TYPE}; charset=utf-8`, page);
  assert.deepEqual(json.map((f) => [f.filename, f.url.href, f.sha256, f.size, f.yanked]), [
    ['a.whl', 'https://idx.example/f/a.whl', 'ab'.repeat(32), 12, false],
    ['b.whl', `https://cdn.example/b.whl#sha256=${'cd'.repeat(32)}`, 'cd'.repeat(32), null, true],
  ]);
  const html = parseProjectPage(
    `<html><body><a href="../../f/a.whl#sha256=${'ab'.repeat(32)}" data-requires-python="&gt;=3.10">a.whl</a>
     <a data-yanked="" href='https://cdn.example/b.whl?x=1&amp;y=2'>b.whl</a></body></html>`,
    'text/html', page);
  assert.deepEqual(html.map((f) => [f.filename, f.url.href, f.sha256, f.yanked]), [
    ['a.whl', `https://idx.example/f/a.whl#sha256=${'ab'.repeat(32)}`, 'ab'.repeat(32), false],
    ['b.whl', 'https://cdn.example/b.whl?x=1&y=2', null, true],
  ]);
  assert.throws(() => parseProjectPage('{}', 'application/octet-stream', page), /content type application\/octet-stream/);
  assert.throws(() => parseProjectPage('{nope', JSON_TYPE, page), /invalid JSON/);
});

test('projectUrl: PEP 503 names under the index URL, with or without its slash', () => {
  assert.equal(projectUrl('https://pypi.org/simple', 'TensorFlow_CPU').href, 'https://pypi.org/simple/tensorflow-cpu/');
  assert.equal(projectUrl('http://127.0.0.1:1/x/simple/', 'a.b__c').href, 'http://127.0.0.1:1/x/simple/a-b-c/');
});
