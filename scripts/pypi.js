'use strict';
// Downloads one file of a project from a Python package index, in plain Node, the
// way `pip download` would (no python3 needed):
//
//   - the index comes from pip's own settings: PIP_INDEX_URL / PIP_EXTRA_INDEX_URL,
//     else index-url / extra-index-url in pip.conf ([global], overridden by
//     [download]), else https://pypi.org/simple/; likewise the CA bundle
//     (PIP_CERT / cert), the proxy (PIP_PROXY / proxy, else HTTPS_PROXY /
//     HTTP_PROXY and NO_PROXY) and the timeout (PIP_TIMEOUT / timeout);
//   - the project page is read through the simple API, asking for its JSON form
//     (PEP 691) and accepting its HTML form (PEP 503): both list each file with its
//     URL and sha256 (the JSON form also gives its size);
//   - the file is streamed to <name>.part, resumed with a Range request after a
//     broken connection, retried with backoff, checked against the size and
//     sha256 the index gave, and renamed to <name> only when it matches.
//
// pip's find-links, trusted-host and keyring settings are not used: without them
// the caller falls back to pip itself.

const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const https = require('https');
const net = require('net');
const os = require('os');
const path = require('path');
const tls = require('tls');
const {pipeline} = require('stream/promises');

const DEFAULT_INDEX = 'https://pypi.org/simple/';
const JSON_TYPE = 'application/vnd.pypi.simple.v1+json';
const HTML_TYPES = ['application/vnd.pypi.simple.v1+html', 'text/html'];
const ACCEPT = `${JSON_TYPE}, application/vnd.pypi.simple.v1+html;q=0.2, text/html;q=0.01`;
const DEFAULT_TIMEOUT_S = 30;
const MAX_REDIRECTS = 10;
const INDEX_ERROR = 'TFJS_NODE_RS_INDEX';
const MB = 1024 * 1024;

function indexError(message, {fatal = true, cause} = {}) {
  const err = new Error(message);
  err.code = INDEX_ERROR;
  err.fatal = fatal; // false: worth retrying (network trouble, 5xx, a cut-short body)
  if (cause) err.cause = cause;
  return err;
}

// ---------------------------------------------------------------------------
// pip's configuration.

// The pip.conf files pip reads, lowest precedence first (pip's configuration.py: global, user
// unless PIP_CONFIG_FILE exists, site, then PIP_CONFIG_FILE), where pip keeps them on `platform`
// (platformdirs' site and user config folders; pip.ini on Windows).
function pipConfigFiles(env = process.env, platform = process.platform) {
  const home = env.HOME || env.USERPROFILE || os.homedir();
  const name = platform === 'win32' ? 'pip.ini' : 'pip.conf';
  const join = platform === 'win32' ? path.win32.join : path.posix.join;
  let globals;
  let users;
  if (platform === 'win32') {
    globals = [join(env.ProgramData || env.PROGRAMDATA || 'C:\\ProgramData', 'pip', name)];
    const appData = env.APPDATA || join(home, 'AppData', 'Roaming');
    users = [join(home, 'pip', name), join(appData, 'pip', name)];
  } else if (platform === 'darwin') {
    globals = [join('/Library/Application Support/pip', name)];
    users = [join(home, '.pip', name), join(home, 'Library/Application Support/pip', name),
             join(env.XDG_CONFIG_HOME || join(home, '.config'), 'pip', name)];
  } else {
    const xdgDirs = (env.XDG_CONFIG_DIRS || '/etc/xdg').split(':').filter(Boolean);
    globals = [...xdgDirs.map((d) => join(d, 'pip', name)), '/etc/pip.conf'];
    users = [join(home, '.pip', name), join(env.XDG_CONFIG_HOME || join(home, '.config'), 'pip', name)];
  }
  const files = [...globals];
  const own = env.PIP_CONFIG_FILE;
  if (!(own && fs.existsSync(own))) files.push(...users);
  if (env.VIRTUAL_ENV) files.push(join(env.VIRTUAL_ENV, name));
  if (own) files.push(own);
  return files;
}

// An INI file as Python's configparser reads it: { section: { key: value } }, keys
// lower-cased with '_' as '-', indented lines continuing the previous value.
function parseIni(text) {
  const sections = {};
  let section = null;
  let key = null;
  for (const raw of text.split(/\r?\n/)) {
    if (/^\s*([#;]|$)/.test(raw)) continue;
    if (/^\s/.test(raw) && section && key) {
      section[key] += `\n${raw.trim()}`;
      continue;
    }
    const head = /^\[([^\]]+)\]\s*$/.exec(raw.trim());
    if (head) {
      section = sections[head[1].trim()] = sections[head[1].trim()] || {};
      key = null;
      continue;
    }
    const kv = /^([^=:]+?)\s*[=:]\s*(.*)$/.exec(raw.trim());
    if (kv && section) {
      key = kv[1].toLowerCase().replace(/_/g, '-');
      section[key] = kv[2].trim();
    }
  }
  return sections;
}

/**
 * pip's settings for a download: { indexUrls, cert, proxy, timeoutS }. Environment
 * variables override pip.conf, as in pip.
 */
function pipSettings(env = process.env, {readFile = fs.readFileSync, platform = process.platform} = {}) {
  const conf = {};
  for (const file of pipConfigFiles(env, platform)) {
    let text;
    try {
      text = readFile(file, 'utf8');
    } catch {
      continue;
    }
    const ini = parseIni(text);
    Object.assign(conf, ini.global || {}, ini.download || {});
  }
  const setting = (names, key) => {
    for (const n of names) if (env[n]) return env[n];
    return conf[key];
  };
  const list = (value) => (value || '').split(/\s+/).filter(Boolean);
  const index = list(setting(['PIP_INDEX_URL'], 'index-url'))[0] || DEFAULT_INDEX;
  const extra = list(setting(['PIP_EXTRA_INDEX_URL'], 'extra-index-url'));
  const timeout = Number(setting(['PIP_TIMEOUT', 'PIP_DEFAULT_TIMEOUT'], 'timeout') || conf['default-timeout']);
  return {
    indexUrls: [...new Set([index, ...extra])],
    cert: setting(['PIP_CERT'], 'cert') || null,
    proxy: setting(['PIP_PROXY'], 'proxy') || null,
    timeoutS: timeout > 0 ? timeout : DEFAULT_TIMEOUT_S,
  };
}

// ---------------------------------------------------------------------------
// HTTP(S) with pip's CA bundle and proxy.

function bypassesProxy(url, env) {
  const list = (env.NO_PROXY || env.no_proxy || '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);
  const host = url.hostname.toLowerCase();
  return list.some((entry) => {
    if (entry === '*') return true;
    const name = entry.replace(/^\*?\./, '').replace(/:\d+$/, '');
    return host === name || host.endsWith(`.${name}`);
  });
}

function proxyFor(url, {proxy, env}) {
  if (bypassesProxy(url, env)) return null;
  const value = proxy ||
    (url.protocol === 'https:' ? env.HTTPS_PROXY || env.https_proxy : env.HTTP_PROXY || env.http_proxy);
  if (!value) return null;
  return new URL(/^[a-z]+:\/\//i.test(value) ? value : `http://${value}`);
}

function basicAuth(url) {
  if (!url.username && !url.password) return null;
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  return `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;
}

// The TLS server name (SNI) for url: none for an IP address, as RFC 6066 says.
function serverName(url) {
  return net.isIP(url.hostname) ? undefined : url.hostname;
}

function defaultPort(url) {
  return Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
}

// A CONNECT tunnel through an HTTP(S) proxy to url's host, wrapped in TLS.
function tunnel(url, proxyUrl, {ca, timeoutMs}) {
  return new Promise((resolve, reject) => {
    const headers = {host: `${url.hostname}:${defaultPort(url)}`};
    const auth = basicAuth(proxyUrl);
    if (auth) headers['proxy-authorization'] = auth;
    const lib = proxyUrl.protocol === 'https:' ? https : http;
    const req = lib.request({
      host: proxyUrl.hostname,
      port: defaultPort(proxyUrl),
      method: 'CONNECT',
      path: headers.host,
      headers,
      ca,
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`the proxy did not answer in ${timeoutMs / 1000} s`)));
    req.on('error', reject);
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        reject(new Error(`the proxy answered CONNECT with ${res.statusCode} ${res.statusMessage || ''}`.trim()));
        return;
      }
      resolve(tls.connect({socket, host: url.hostname, servername: serverName(url), ca}));
    });
    req.end();
  });
}

/**
 * GET url; resolves to the response (an IncomingMessage, redirects followed) and the
 * final URL. opts: { headers, ca, proxy, env, timeoutMs, auth: { origin, header } }.
 */
async function get(url, opts, redirects = 0) {
  url = new URL(url);
  const headers = {'user-agent': 'tfjs-node-rs-installer', ...opts.headers};
  if (opts.auth && url.origin === opts.auth.origin) headers.authorization = opts.auth.header;
  const proxyUrl = proxyFor(url, opts);
  const target = {host: url.hostname, port: defaultPort(url), path: `${url.pathname}${url.search}`, headers};
  let request;
  if (proxyUrl && url.protocol === 'https:') {
    const socket = await tunnel(url, proxyUrl, opts);
    request = () => http.request({...target, createConnection: () => socket});
  } else if (proxyUrl) {
    const auth = basicAuth(proxyUrl);
    if (auth) headers['proxy-authorization'] = auth;
    request = () => http.request({host: proxyUrl.hostname, port: defaultPort(proxyUrl), path: url.href, headers});
  } else if (url.protocol === 'https:') {
    request = () => https.request({...target, ca: opts.ca, servername: serverName(url)});
  } else if (url.protocol === 'http:') {
    request = () => http.request(target);
  } else {
    throw indexError(`unsupported URL scheme in ${url.href} (only http and https are)`);
  }
  const res = await new Promise((resolve, reject) => {
    const req = request();
    req.setTimeout(opts.timeoutMs, () => req.destroy(new Error(`no data for ${opts.timeoutMs / 1000} s`)));
    req.on('error', reject);
    // The socket's inactivity timeout covers the body too.
    req.on('response', resolve);
    req.end();
  });
  if ([301, 302, 303, 307, 308].includes(res.statusCode) && res.headers.location) {
    res.resume();
    if (redirects >= MAX_REDIRECTS) throw indexError(`too many redirects from ${url.href}`);
    return get(new URL(res.headers.location, url), opts, redirects + 1);
  }
  return {res, url};
}

async function readBody(res, url, limit = 64 * MB) {
  const chunks = [];
  let size = 0;
  try {
    for await (const chunk of res) {
      size += chunk.length;
      if (size > limit) throw indexError(`the index page ${url.href} is larger than ${limit / MB} MB`);
      chunks.push(chunk);
    }
  } catch (err) {
    if (err.code === INDEX_ERROR) throw err;
    throw indexError(`reading ${url.href} broke off (${err.message})`, {fatal: false, cause: err});
  }
  return Buffer.concat(chunks).toString('utf8');
}

// What went wrong in a request, for the user (certificate trouble gets a hint).
function describeNetworkError(err, url, proxyUrl) {
  const via = proxyUrl ? ` through the proxy ${proxyUrl.host}` : '';
  const what = err.code ? `${err.code}: ${err.message}` : err.message;
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|certificate/i.test(`${err.code} ${err.message}`)) {
    return `the TLS certificate of ${url.host} could not be verified${via} (${what}); if your network ` +
      'uses its own certificate authority, point PIP_CERT (or cert in pip.conf) at its CA bundle';
  }
  return `cannot reach ${url.host}${via} (${what})`;
}

// ---------------------------------------------------------------------------
// The simple API.

// PEP 503 name normalization.
function normalizeName(name) {
  return name.toLowerCase().replace(/[-_.]+/g, '-');
}

function projectUrl(indexUrl, project) {
  const base = new URL(indexUrl.endsWith('/') ? indexUrl : `${indexUrl}/`);
  return new URL(`${normalizeName(project)}/`, base);
}

function decodeEntities(text) {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|#39);/gi, (m, e) => {
    const named = {amp: '&', lt: '<', gt: '>', quot: '"', apos: "'"}[e.toLowerCase()];
    if (named) return named;
    return String.fromCodePoint(e[1] === 'x' || e[1] === 'X' ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
  });
}

function hashFromFragment(url) {
  const m = /^#sha256=([0-9a-f]{64})$/i.exec(url.hash);
  return m ? m[1].toLowerCase() : null;
}

/** Files of a project page: [{ filename, url, sha256, size, yanked }]. */
function parseProjectPage(body, contentType, pageUrl) {
  const type = (contentType || '').split(';')[0].trim().toLowerCase();
  if (type === JSON_TYPE || type === 'application/json') {
    let doc;
    try {
      doc = JSON.parse(body);
    } catch (err) {
      throw indexError(`${pageUrl.href} sent invalid JSON (${err.message})`);
    }
    if (!doc || !Array.isArray(doc.files)) throw indexError(`${pageUrl.href} sent JSON without a "files" list`);
    return doc.files.filter((f) => f && typeof f.filename === 'string' && typeof f.url === 'string').map((f) => {
      const url = new URL(f.url, pageUrl);
      const sha256 = (f.hashes && typeof f.hashes.sha256 === 'string' && f.hashes.sha256.toLowerCase()) || hashFromFragment(url);
      return {filename: f.filename, url, sha256, size: Number.isSafeInteger(f.size) ? f.size : null, yanked: !!f.yanked};
    });
  }
  if (HTML_TYPES.includes(type)) {
    const files = [];
    const anchor = /<a\s([^>]*)>([^<]*)<\/a\s*>/gi;
    for (let m; (m = anchor.exec(body));) {
      const href = /\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))/i.exec(m[1]);
      if (!href) continue;
      const url = new URL(decodeEntities(href[1] ?? href[2] ?? href[3]), pageUrl);
      const filename = decodeEntities(m[2]).trim() || decodeURIComponent(url.pathname.split('/').pop());
      files.push({filename, url, sha256: hashFromFragment(url), size: null, yanked: /\bdata-yanked\b/i.test(m[1])});
    }
    return files;
  }
  throw indexError(`${pageUrl.href} answered with content type ${type || '(none)'}, not the simple API's JSON or HTML`);
}

// ---------------------------------------------------------------------------
// Progress on a terminal: stderr when it is one, else the controlling terminal
// (npm hides install scripts' output, but the user is watching /dev/tty).

function openTerminal(env, stream = process.stderr) {
  if (stream.isTTY) return {write: (s) => stream.write(s), close() {}};
  if (env.CI || process.platform === 'win32') return null;
  let fd;
  try {
    fd = fs.openSync('/dev/tty', 'w');
  } catch {
    return null;
  }
  return {
    write: (s) => {
      try {
        fs.writeSync(fd, s);
      } catch {
        // the terminal went away: no more progress
      }
    },
    close: () => fs.closeSync(fd),
  };
}

function progressBar(label, total, terminal) {
  if (!terminal) return {update() {}, done() {}};
  const started = Date.now();
  let last = 0;
  const draw = (got) => {
    const s = Math.max((Date.now() - started) / 1000, 0.001);
    const pct = total ? `${String(Math.floor((100 * got) / total)).padStart(3)}% ` : '';
    const of = total ? `/${(total / MB).toFixed(0)}` : '';
    terminal.write(`\rtfjs-node-rs: ${label} ${pct}${(got / MB).toFixed(0)}${of} MB, ${(got / MB / s).toFixed(1)} MB/s \x1b[K`);
  };
  return {
    update(got) {
      if (Date.now() - last < 200) return;
      last = Date.now();
      draw(got);
    },
    done(got) {
      draw(got);
      terminal.write('\n');
      terminal.close();
    },
  };
}

// ---------------------------------------------------------------------------
// Downloading one file.

async function sha256OfFile(file) {
  const hash = crypto.createHash('sha256');
  await pipeline(fs.createReadStream(file, {highWaterMark: MB}), hash);
  return hash.digest('hex');
}

function sizeOf(file) {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// One attempt: continues part from its current size (or starts over when the
// server sends the whole file). Returns the bytes part holds, or throws
// (err.fatal false: try again).
async function downloadAttempt(file, part, http_, progress) {
  const {res} = await get(file.url, {...http_, headers: sizeOf(part) ? {range: `bytes=${sizeOf(part)}-`} : {}});
  let have = sizeOf(part);
  const status = res.statusCode;
  if (status === 416) {
    // The range starts at or past the end: what we hold is suspect, start over.
    res.resume();
    fs.rmSync(part, {force: true});
    throw indexError(`${file.url.href} refused to resume`, {fatal: false});
  }
  if (status !== 200 && status !== 206) {
    res.resume();
    const msg = `downloading ${file.url.href} answered ${status} ${res.statusMessage || ''}`.trim();
    throw indexError(msg, {fatal: status >= 400 && status < 500 && status !== 408 && status !== 429});
  }
  const range = status === 206 && /^bytes (\d+)-/.exec(res.headers['content-range'] || '');
  if (!range || Number(range[1]) !== have) have = 0; // a full body, or a range we did not ask for
  const length = Number(res.headers['content-length']);
  const expected = file.size ?? (Number.isFinite(length) ? have + length : null);
  let got = have;
  const out = fs.createWriteStream(part, {flags: have ? 'a' : 'w'});
  try {
    await pipeline(res, async function* count(source) {
      for await (const chunk of source) {
        got += chunk.length;
        if (expected !== null && got > expected) throw indexError(`${file.filename} is larger than the ${expected} bytes the index gave`);
        progress.update(got);
        yield chunk;
      }
    }, out);
  } catch (err) {
    if (err.code === INDEX_ERROR) {
      fs.rmSync(part, {force: true});
      throw err;
    }
    throw indexError(`the download of ${file.filename} broke off at ${got} of ${expected ?? '?'} bytes (${err.message})`, {fatal: false, cause: err});
  }
  if (expected !== null && got < expected) {
    throw indexError(`the download of ${file.filename} was cut short at ${got} of ${expected} bytes`, {fatal: false});
  }
  return got;
}

/**
 * Downloads file ({ filename, url, sha256, size }) into dir, resuming a <name>.part
 * left there. Returns the final path. opts: { http, log, env, retries, retryDelayMs }.
 */
async function downloadFile(file, dir, {http: http_, log, env = process.env, retries = 4, retryDelayMs = 1000, terminal = openTerminal(env)}) {
  const dest = path.join(dir, file.filename);
  const part = `${dest}.part`;
  if (file.size !== null && sizeOf(part) > file.size) fs.rmSync(part, {force: true});
  const resumed = sizeOf(part);
  log(`downloading ${file.filename} (${file.size ? `${Math.round(file.size / MB)} MB` : 'size unknown'}) from ${file.url.host}` +
    `${resumed ? `, resuming at ${Math.round(resumed / MB)} MB` : ''} ...`);
  const started = Date.now();
  const progress = progressBar(`downloading ${file.filename}`, file.size, terminal);
  let got = resumed;
  for (let attempt = 0; ; attempt++) {
    try {
      if (file.size === null || sizeOf(part) < file.size) got = await downloadAttempt(file, part, http_, progress);
      break;
    } catch (err) {
      const networkError = err.code !== INDEX_ERROR;
      const fatal = !networkError && err.fatal;
      const message = networkError ? describeNetworkError(err, file.url, proxyFor(file.url, http_)) : err.message;
      if (fatal || attempt >= retries) {
        progress.done(sizeOf(part));
        throw indexError(`${message}${attempt ? ` (after ${attempt + 1} attempts)` : ''}`, {cause: err});
      }
      const wait = retryDelayMs * 2 ** attempt;
      log(`${message}; trying again in ${(wait / 1000).toFixed(1)} s`);
      await sleep(wait);
    }
  }
  progress.done(got);
  if (file.sha256) {
    const actual = await sha256OfFile(part);
    if (actual !== file.sha256) {
      fs.rmSync(part, {force: true});
      throw indexError(
        `${file.filename} from ${file.url.host} has sha256 ${actual}, but the index lists ${file.sha256}; ` +
          'the download was deleted (a proxy or mirror changed it?)',
      );
    }
  } else {
    log(`the index gives no sha256 for ${file.filename}: relying on the archive's own CRC-32 checks`);
  }
  fs.renameSync(part, dest);
  log(`downloaded ${file.filename} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return dest;
}

// ---------------------------------------------------------------------------

function httpOptions(settings, env) {
  let ca;
  if (settings.cert) {
    try {
      ca = fs.readFileSync(settings.cert);
    } catch (err) {
      throw indexError(`cannot read the CA bundle ${settings.cert} named by PIP_CERT / cert in pip.conf (${err.message})`);
    }
  }
  return {ca, proxy: settings.proxy, env, timeoutMs: settings.timeoutS * 1000};
}

// The project page of one index: its files, or an error naming the index.
async function listFiles(indexUrl, project, http_) {
  const index = new URL(indexUrl);
  const auth = basicAuth(index) ? {origin: index.origin, header: basicAuth(index)} : null;
  index.username = '';
  index.password = '';
  const page = projectUrl(index.href, project);
  let res;
  let url;
  try {
    ({res, url} = await get(page, {...http_, auth, headers: {accept: ACCEPT}}));
  } catch (err) {
    if (err.code === INDEX_ERROR) throw err;
    throw indexError(describeNetworkError(err, page, proxyFor(page, http_)), {fatal: false, cause: err});
  }
  if (res.statusCode === 404) {
    res.resume();
    throw indexError(`the index ${index.href} has no project ${project} (404 at ${page.href})`);
  }
  if (res.statusCode !== 200) {
    res.resume();
    throw indexError(`the index page ${page.href} answered ${res.statusCode} ${res.statusMessage || ''}`.trim(), {
      fatal: res.statusCode < 500,
    });
  }
  const files = parseProjectPage(await readBody(res, url), res.headers['content-type'], url);
  return {files, auth, page};
}

/**
 * Finds the file `pick(files)` chooses among a project's files on pip's indexes
 * (the first index that has one wins) and downloads it into dir, checked.
 * pick gets [{ filename, url, sha256, size, yanked }] and returns one or null;
 * describe says what was looked for (for messages). Progress goes to terminal
 * ({ write, close }; default: the user's terminal, if any). Returns the downloaded path.
 * Throws an Error with code TFJS_NODE_RS_INDEX and a message for the user.
 */
async function downloadFromIndex({project, pick, describe, dir, env = process.env, log, retries, retryDelayMs, terminal}) {
  const settings = pipSettings(env);
  const http_ = httpOptions(settings, env);
  const misses = [];
  for (const indexUrl of settings.indexUrls) {
    let listing;
    for (let attempt = 0; ; attempt++) {
      try {
        listing = await listFiles(indexUrl, project, http_);
        break;
      } catch (err) {
        if (err.fatal || attempt >= (retries ?? 4)) {
          misses.push(err.message);
          break;
        }
        const wait = (retryDelayMs ?? 1000) * 2 ** attempt;
        log(`${err.message}; trying again in ${(wait / 1000).toFixed(1)} s`);
        await sleep(wait);
      }
    }
    if (!listing) continue;
    const file = pick(listing.files.filter((f) => !f.yanked)) || pick(listing.files);
    if (!file) {
      misses.push(`the index page ${listing.page.href} lists no ${describe} (${listing.files.length} files)`);
      continue;
    }
    return downloadFile(file, dir, {http: {...http_, auth: listing.auth}, log, env, retries, retryDelayMs, terminal});
  }
  throw indexError(misses.join('; '));
}

module.exports = {
  downloadFromIndex,
  pipSettings,
  INDEX_ERROR,
  DEFAULT_INDEX,
  // For tests.
  _internal: {parseIni, parseProjectPage, projectUrl},
};
