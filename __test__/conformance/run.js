#!/usr/bin/env node
'use strict';
// Runs tfjs-core's own Jasmine suite (the installed @tensorflow/tfjs-core
// 4.22, dist/tests) against a backend: `tensorflow` (this package, default)
// or `cpu` (tfjs's pure-JS backend, for comparison).
//
//   node __test__/conformance/run.js [--backend cpu] [--grep REGEX]
//        [--failures FILE] [--no-skips] [--verbose]
//
// Prints one closing line `N passed, N failed, N skipped` and exits non-zero
// on any failure. Specs whose full name contains an entry of skips.txt are
// skipped (see that file for the reason of each entry).

const fs = require('fs');
const path = require('path');
const {installCoreHook} = require('./load_core');

function parseArgs(argv) {
  const args = {backend: 'tensorflow', grep: null, failures: null,
                skips: true, verbose: false};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--backend') args.backend = argv[++i];
    else if (a === '--grep') args.grep = argv[++i];
    else if (a === '--failures') args.failures = argv[++i];
    else if (a === '--no-skips') args.skips = false;
    else if (a === '--verbose') args.verbose = true;
    else throw new Error(`unknown argument ${a}`);
  }
  return args;
}

function readSkips(file) {
  const entries = [];
  for (const raw of fs.readFileSync(file, 'utf8').split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const sep = line.indexOf(' # ');
    if (sep < 0) throw new Error(`skips.txt: entry without a reason: ${line}`);
    entries.push(line.slice(0, sep).trim());
  }
  return entries;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const started = Date.now();
  installCoreHook();

  const Jasmine = require('jasmine');
  const runner = new Jasmine();
  runner.exitOnCompletion = false;
  runner.loadConfig({random: false, jsLoader: 'require'});
  runner.env.clearReporters();

  const tf = require('@tensorflow/tfjs');
  if (args.backend === 'tensorflow') {
    require('../..');  // registers the `tensorflow` backend
  }
  require('@tensorflow/tfjs-core/dist/public/chained_ops/register_all_chained_ops');
  require('@tensorflow/tfjs-core/dist/register_all_gradients');
  const jasmineUtil = require('@tensorflow/tfjs-core/dist/jasmine_util');
  // The library and the test files must share one tfjs-core: one engine,
  // one Tensor class, one kernel registry.
  if (require('@tensorflow/tfjs-core/dist/engine').ENGINE !== tf.engine() ||
      require('@tensorflow/tfjs-core/dist/tensor').Tensor !== tf.Tensor) {
    throw new Error('the tests and @tensorflow/tfjs load different tfjs-core modules');
  }
  const envName = args.backend === 'tensorflow' ? 'test-tensorflow' :
                                                   `test-${args.backend}`;
  jasmineUtil.setTestEnvs([{
    name: envName,
    backendName: args.backend,
    flags: {},
    isDataSync: true,
  }]);

  const skips = args.skips ? readSkips(path.join(__dirname, 'skips.txt')) : [];
  const grep = args.grep ? new RegExp(args.grep) : null;
  runner.env.configure({
    random: false,
    specFilter: (spec) => {
      const name = spec.getFullName();
      if (grep && !grep.test(name)) return false;
      for (let i = 0; i < skips.length; i++) {
        if (name.indexOf(skips[i]) >= 0) return false;
      }
      return true;
    },
  });

  let passed = 0, failed = 0, skipped = 0;
  const failures = [];
  const slow = [];
  runner.env.addReporter({
    specStarted() {
      this.t0 = Date.now();
    },
    specDone(result) {
      if (args.verbose) slow.push([Date.now() - this.t0, result.fullName]);
      if (result.status === 'passed') {
        passed++;
      } else if (result.status === 'failed') {
        failed++;
        const msgs = result.failedExpectations.map(e => e.message);
        failures.push({name: result.fullName, messages: msgs});
        if (args.verbose) {
          console.log(`FAILED: ${result.fullName}\n  ${msgs.join('\n  ')}`);
        }
      } else if (grep == null || grep.test(result.fullName)) {
        // 'excluded' (skip list) or 'pending' (xit in the suite).
        skipped++;
      }
    },
    suiteDone(result) {
      // Errors in beforeAll/afterAll hooks are failures too.
      if (result.failedExpectations && result.failedExpectations.length) {
        failed++;
        failures.push({name: `suite ${result.fullName}`,
                       messages: result.failedExpectations.map(e => e.message)});
      }
    },
  });

  process.on('unhandledRejection', (e) => {
    failed++;
    failures.push({name: 'unhandledRejection', messages: [String(e && e.stack || e)]});
  });

  require('@tensorflow/tfjs-core/dist/tests');
  console.log(`tfjs-core ${tf.version_core} conformance on backend ` +
              `'${args.backend}'` + (args.backend === 'tensorflow' ?
              ` (TensorFlow ${require('../../js/backend/binding').tfVersion()})` : ''));
  await runner.execute();

  if (failures.length && !args.verbose) {
    const shown = failures.slice(0, 50);
    for (const f of shown) {
      console.log(`FAILED: ${f.name}\n  ${f.messages.join('\n  ').slice(0, 600)}`);
    }
    if (failures.length > shown.length) {
      console.log(`... and ${failures.length - shown.length} more failures`);
    }
  }
  if (args.failures) {
    fs.writeFileSync(args.failures, failures.map(
        f => `${f.name}\n  ${f.messages.join('\n  ')}`).join('\n') + '\n');
  }
  if (args.verbose) {
    slow.sort((a, b) => b[0] - a[0]);
    for (const [ms, name] of slow.slice(0, 15)) console.log(`slow: ${ms} ms ${name}`);
  }
  if (args.backend === 'tensorflow') {
    const s = require('../../js/backend/binding').stats();
    console.log(`native tensors alive at the end: ${s.liveTensors} (${s.liveBytes} bytes)`);
  }
  console.log(`time: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((e) => {
  console.error(e && e.stack || e);
  console.log('0 passed, 1 failed, 0 skipped');
  process.exitCode = 1;
});
