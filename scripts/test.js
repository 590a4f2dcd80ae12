#!/usr/bin/env node
'use strict';
// `npm test`: makes sure the addon is built (in a development checkout), then runs
// the steps below in order, stopping at the first failure with its exit code.
//   npm test                          all steps
//   npm test -- __test__/foo.test.js  only the node:test step, on those files

const fs = require('fs');
const path = require('path');
const {spawnSync} = require('child_process');
const {build, buildEnv, isDevCheckout, napiCli, newestSourceMtime, runMain} = require('./build');
const {log} = require('./libtensorflow');

const root = path.resolve(__dirname, '..');
const testDir = path.join(root, '__test__');

function testFiles() {
  const picked = process.argv.slice(2);
  if (picked.length) return picked;
  if (!fs.existsSync(testDir)) return [];
  return fs.readdirSync(testDir)
    .filter((name) => name.endsWith('.test.js'))
    .sort()
    .map((name) => path.join('__test__', name));
}

// Each step: name, the command (node arguments, or `command` for another program), and when
// it applies.
const steps = [
  {
    name: 'Rust unit tests (cargo test)',
    command: 'cargo',
    args: () => ['test', '--release', '--lib', '--quiet'],
    when: () => process.argv.length <= 2 && isDevCheckout(root) && hasCargo() &&
        process.env.TFJS_NODE_RS_SKIP_CARGO_TESTS !== '1',
  },
  {
    name: 'unit tests (node --test)',
    args: () => ['--expose-gc', '--test', ...testFiles()],
    when: () => testFiles().length > 0,
  },
  {
    name: 'fuzzing the binding (scripts/fuzz.js, fixed seed)',
    args: () => [path.join('scripts', 'fuzz.js')],
    when: () => process.argv.length <= 2,
  },
  {
    name: 'conformance',
    args: () => [path.join('__test__', 'conformance', 'run.js')],
    when: () => process.argv.length <= 2 && fs.existsSync(path.join(testDir, 'conformance', 'run.js')),
  },
];

function hasCargo() {
  const found = spawnSync('cargo', ['--version'], {env: buildEnv(root, process.env), stdio: 'ignore'});
  return found.status === 0;
}

// The .node file the generated binding.js loads on this machine.
function addonFile() {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
  const name = (pkg.napi && pkg.napi.binaryName) || pkg.name;
  let abi = '';
  if (process.platform === 'linux') {
    const glibc = process.report.getReport().header.glibcVersionRuntime;
    abi = glibc ? '-gnu' : '-musl';
  }
  return path.join(root, `${name}.${process.platform}-${process.arch}${abi}.node`);
}

// Why the addon needs building, or null when it is up to date.
function staleReason() {
  if (!fs.existsSync(path.join(root, 'binding.js'))) return 'binding.js is missing';
  const file = addonFile();
  let built;
  try {
    built = fs.statSync(file).mtimeMs;
  } catch {
    return `${path.basename(file)} is missing`;
  }
  if (newestSourceMtime(root) > built) return 'the Rust sources changed since the last build';
  return null;
}

async function ensureBuilt() {
  if (!isDevCheckout(root) || process.env.TFJS_NODE_RS_SKIP_BUILD === '1' || !napiCli(root)) return 0;
  const why = staleReason();
  if (!why) return 0;
  log(`building the addon first: ${why}`);
  return build({root, log});
}

async function main() {
  const code = await ensureBuilt();
  if (code !== 0) return code;
  for (const step of steps) {
    if (step.when && !step.when()) continue;
    log(`test step: ${step.name}`);
    const res = spawnSync(step.command || process.execPath, step.args(), {cwd: root, stdio: 'inherit', env: buildEnv(root, process.env)});
    if (res.error) throw res.error;
    if (res.status !== 0) {
      log(`test step failed: ${step.name} (${res.signal ? `signal ${res.signal}` : `exit code ${res.status}`})`);
      return res.status || 1;
    }
  }
  return 0;
}

runMain(main);
