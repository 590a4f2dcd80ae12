'use strict';
// scripts/pe.js, the PE reader behind the Windows build (the import library's names, the
// python311.dll stub's) and scripts/pack.js's check of the Windows addon: on the files the Windows
// build leaves (skipped where it has not run), and its refusal of what is not a PE image.

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const {readPe, importsFrom, MACHINE_AMD64} = require('../scripts/pe.js');
const {checkAddon} = require('../scripts/pack.js');
const {scratchDirs} = require('./support/scratch.js');

const tempDir = scratchDirs('tfjs-node-rs-pe-');
const ROOT = path.join(__dirname, '..');
const STUB = path.join(ROOT, 'npm', 'win32-x64-msvc', 'python311.dll');
const ADDON = path.join(ROOT, 'tfjs-node-rs.win32-x64-msvc.node');
const noBuild = (file) => (fs.existsSync(file) ? false : `${path.basename(file)} is not built (node scripts/build.js --target x86_64-pc-windows-gnu)`);

test('the python311.dll stub exports the 219 names TF\'s DLL imports, and imports no Python', {skip: noBuild(STUB)}, () => {
  const pe = readPe(STUB);
  assert.equal(pe.machine, MACHINE_AMD64);
  assert.equal(pe.exports.length, 219);
  assert.ok(pe.exports.includes('PyExc_TypeError') && pe.exports.includes('Py_IncRef'));
  assert.deepEqual(importsFrom(pe.imports, 'PYTHON311.DLL'), []);
});

test('the Windows addon imports TF\'s DLL and nothing from node.exe; pack.js accepts it', {skip: noBuild(ADDON)}, () => {
  const pe = readPe(ADDON);
  assert.ok(importsFrom(pe.imports, '_pywrap_tensorflow_common.dll').includes('TFE_NewContext'));
  assert.deepEqual(importsFrom(pe.imports, 'node.exe'), []);
  checkAddon(ADDON, 'x86_64-pc-windows-gnu');
  // The stub is a PE for x86-64 too, but no addon: it does not import TF.
  if (fs.existsSync(STUB)) assert.throws(() => checkAddon(STUB, 'x86_64-pc-windows-gnu'), /does not import _pywrap_tensorflow_common\.dll/);
});

test('what is not a 64-bit PE image is refused with the reason', () => {
  const dir = tempDir('files');
  const write = (name, buf) => {
    const file = path.join(dir, name);
    fs.writeFileSync(file, buf);
    return file;
  };
  assert.throws(() => readPe(write('elf', Buffer.from('\x7fELF\x02\x01\x01'.padEnd(64, '\0'), 'latin1'))), /no MZ header/);
  const mz = Buffer.alloc(256);
  mz.write('MZ', 0, 'latin1');
  mz.writeUInt32LE(0x80, 0x3c);
  assert.throws(() => readPe(write('mz', mz)), /no PE signature/);
  mz.write('PE\0\0', 0x80, 'latin1');
  mz.writeUInt16LE(0x8664, 0x84);
  mz.writeUInt16LE(0xf0, 0x94);
  mz.writeUInt16LE(0x10b, 0x98); // PE32: a 32-bit image
  assert.throws(() => readPe(write('pe32', Buffer.concat([mz, Buffer.alloc(256)]))), /not a 64-bit \(PE32\+\) image/);
  const short = Buffer.from(mz.subarray(0, 0x84));
  assert.throws(() => readPe(write('short', short)), /lies past its end/);
});
