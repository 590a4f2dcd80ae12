'use strict';
// Makes tfjs-core's published ES-module tree loadable with plain `require`
// and makes every package (tfjs, layers, converter, data, backend-cpu, this
// backend, and the test files) share ONE tfjs-core instance: the module tree
// under `@tensorflow/tfjs-core/dist/` (entry `dist/index.js`).
//
// - `@tensorflow/tfjs-core` and `@tensorflow/tfjs` resolve to their ES-module
//   entry `dist/index.js`; the test files' internal imports (`../engine`,
//   `../jasmine_util`, ...) then load the very modules the library uses.
// - The other tfjs packages resolve to their ES2017 UMD bundles (which keep
//   native `class` syntax, so they can extend tfjs-core's native classes;
//   their ES5 `.node.js` bundles cannot) and `require('@tensorflow/tfjs-core')`.
// - Files under those two packages' `dist/` that use ES-module syntax are
//   transpiled to CommonJS with esbuild on require (extensionless imports then
//   resolve through Node's CommonJS resolver). Results are cached on disk.

const fs = require('fs');
const os = require('os');
const path = require('path');
const crypto = require('crypto');
const Module = require('module');

const BUNDLES = {
  '@tensorflow/tfjs-layers': 'dist/tf-layers.es2017.js',
  '@tensorflow/tfjs-converter': 'dist/tf-converter.es2017.js',
  '@tensorflow/tfjs-data': 'dist/tf-data.es2017.js',
  '@tensorflow/tfjs-backend-cpu': 'dist/tf-backend-cpu.es2017.js',
  '@tensorflow/tfjs-backend-webgl': 'dist/tf-backend-webgl.es2017.js',
};

let installed = false;

function installCoreHook() {
  if (installed) return;
  installed = true;
  const pkgDir = (name) =>
      path.dirname(require.resolve(`${name}/package.json`));
  const redirects = new Map();
  redirects.set('@tensorflow/tfjs-core',
                path.join(pkgDir('@tensorflow/tfjs-core'), 'dist', 'index.js'));
  redirects.set('@tensorflow/tfjs',
                path.join(pkgDir('@tensorflow/tfjs'), 'dist', 'index.js'));
  for (const [name, file] of Object.entries(BUNDLES)) {
    redirects.set(name, path.join(pkgDir(name), file));
  }
  const esmRoots = [
    path.join(pkgDir('@tensorflow/tfjs-core'), 'dist') + path.sep,
    path.join(pkgDir('@tensorflow/tfjs'), 'dist') + path.sep,
  ];

  // esbuild is loaded on the first cache miss only: under qemu (scripts/test-arm64.js) its
  // native binary cannot start, and the cache is filled beforehand by a run on the host.
  let esbuild = null;
  const cacheDir = path.join(os.tmpdir(), 'tfjs-node-rs-cjs-' +
      require('@tensorflow/tfjs-core/package.json').version + '-' +
      require('esbuild/package.json').version);
  fs.mkdirSync(cacheDir, {recursive: true});

  const origResolve = Module._resolveFilename;
  Module._resolveFilename = function(request, parent, isMain, options) {
    const target = redirects.get(request);
    if (target !== undefined) return target;
    return origResolve.call(this, request, parent, isMain, options);
  };

  const origJs = Module._extensions['.js'];
  Module._extensions['.js'] = function(module, filename) {
    if (!esmRoots.some(r => filename.startsWith(r)) ||
        /[\\/]tf(-core)?\.[^\\/]*\.js$/.test(filename)) {
      return origJs(module, filename);
    }
    const source = fs.readFileSync(filename, 'utf8');
    const key = crypto.createHash('sha1').update(filename).update(source)
                    .digest('hex');
    const cached = path.join(cacheDir, key + '.js');
    let code;
    try {
      code = fs.readFileSync(cached, 'utf8');
    } catch (_) {
      // Drop the large inline source maps before transpiling.
      const stripped = source.replace(
          /\/\/# sourceMappingURL=data:[^\n]*\n?$/, '');
      if (!esbuild) esbuild = require('esbuild');
      code = esbuild.transformSync(stripped, {
        format: 'cjs',
        target: 'node18',
        loader: 'js',
        sourcefile: filename,
      }).code;
      const tmp = cached + '.' + process.pid + '.tmp';
      fs.writeFileSync(tmp, code);
      fs.renameSync(tmp, cached);
    }
    module._compile(code, filename);
  };
}

module.exports = {installCoreHook};
