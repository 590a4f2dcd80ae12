'use strict';
// A Python package index on 127.0.0.1 for tests: the simple API page of one
// project (PEP 691 JSON, or PEP 503 HTML) and its files, with the faults a real
// index or network has, so the download logic is tested without the 274 MB wheel.

const crypto = require('node:crypto');
const http = require('node:http');
const https = require('node:https');

const JSON_TYPE = 'application/vnd.pypi.simple.v1+json';

/**
 * files: [{ filename, data, listedSha256?, listedSize? }] (listed* override what
 * the page says). options:
 *   form: 'json' (default: the JSON form when asked for) or 'html' (an index that
 *         knows only PEP 503, whatever the Accept header says);
 *   faults: { [filename]: '404' | 'truncate-once' | 'truncate-always' };
 *   auth: 'user:password' the index requires;
 *   tls: { key, cert } to serve HTTPS.
 * Resolves to { url (the index URL), requests: [{ path, headers }], close() }.
 */
async function startIndex(files, {project = 'tensorflow-cpu', form = 'json', faults = {}, auth = null, tls = null} = {}) {
  const requests = [];
  const served = new Map();
  const handler = (req, res) => {
    requests.push({path: req.url, headers: req.headers});
    if (auth && req.headers.authorization !== `Basic ${Buffer.from(auth).toString('base64')}`) {
      res.writeHead(401, {'www-authenticate': 'Basic realm="index"'}).end();
      return;
    }
    if (req.url === `/simple/${project}/`) {
      const listed = files.map((f) => ({
        filename: f.filename,
        url: `../../files/${encodeURIComponent(f.filename)}`,
        sha256: f.listedSha256 ?? crypto.createHash('sha256').update(f.data).digest('hex'),
        size: f.listedSize ?? f.data.length,
      }));
      if (form === 'json' && (req.headers.accept || '').includes(JSON_TYPE)) {
        const body = JSON.stringify({
          meta: {'api-version': '1.1'},
          name: project,
          files: listed.map((f) => ({filename: f.filename, url: f.url, hashes: {sha256: f.sha256}, size: f.size})),
        });
        res.writeHead(200, {'content-type': JSON_TYPE}).end(body);
      } else {
        const links = listed.map((f) => `<a href="${f.url}#sha256=${f.sha256}">${f.filename}</a><br/>`);
        res.writeHead(200, {'content-type': 'text/html; charset=utf-8'})
          .end(`<!DOCTYPE html><html><body><h1>Links for ${project}</h1>${links.join('\n')}</body></html>`);
      }
      return;
    }
    const file = files.find((f) => req.url === `/files/${encodeURIComponent(f.filename)}`);
    if (!file || faults[file.filename] === '404') {
      res.writeHead(404, {'content-type': 'text/plain'}).end('Not Found');
      return;
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range || '');
    const start = range ? Number(range[1]) : 0;
    const body = file.data.subarray(start);
    const headers = {'content-type': 'application/octet-stream', 'content-length': body.length};
    if (range) headers['content-range'] = `bytes ${start}-${file.data.length - 1}/${file.data.length}`;
    res.writeHead(range ? 206 : 200, headers);
    const count = (served.get(file.filename) || 0) + 1;
    served.set(file.filename, count);
    const fault = faults[file.filename];
    if (fault === 'truncate-always' || (fault === 'truncate-once' && count === 1)) {
      // Half of what the header promised, then the connection drops.
      res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket.destroy());
      return;
    }
    res.end(body);
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const scheme = tls ? 'https' : 'http';
  return {
    url: `${scheme}://${auth ? `${auth}@` : ''}127.0.0.1:${server.address().port}/simple/`,
    requests,
    close: () => new Promise((resolve) => {
      server.closeAllConnections?.();
      server.close(resolve);
    }),
  };
}

module.exports = {startIndex, JSON_TYPE};
