'use strict';
// Helpers of the set-up tests: numbered folders under one temporary folder that is
// removed after the file's tests, and a log that keeps its lines.

const test = require('node:test');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

/** Returns tempDir(label): a new empty folder for each call. */
function scratchDirs(prefix) {
  const scratch = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  test.after(() => fs.rmSync(scratch, {recursive: true, force: true}));
  let counter = 0;
  return (label) => {
    const dir = path.join(scratch, `${label}-${++counter}`);
    fs.mkdirSync(dir, {recursive: true});
    return dir;
  };
}

/** A log function that keeps what it is given in log.lines. */
function quietLog() {
  const lines = [];
  const log = (m) => lines.push(m);
  log.lines = lines;
  return log;
}

module.exports = {scratchDirs, quietLog};
