'use strict';
// Tests for scripts/macho.js: the Mach-O reader on small images made here (thin and fat), its
// bind-opcode, export-trie and .tbd readers, and the macOS addon's check on the real cross-built
// tfjs-node-rs.darwin-arm64.node (skipped, saying how to make it, where it or the darwin-arm64
// libtensorflow is absent: `node scripts/build.js --target aarch64-apple-darwin` makes both).

const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const macho = require('../scripts/macho.js');
const {LIBRARIES} = require('../js/libtensorflow_facts.js');

const {readMachO, readExportTrie, readTbd, headerFunctions, checkMacAddon, checkInputs, DYNAMIC_LOOKUP} = macho;
const {readBindOpcodes, readChainedImports} = macho._internal;

// ---------------------------------------------------------------------------
// A small arm64 dylib, laid out as a linker would: header, load commands, then __LINKEDIT's
// bind opcodes, export trie, symbol table and strings.

function command(cmd, body) {
  const size = Math.ceil((8 + body.length) / 8) * 8;
  const out = Buffer.alloc(size);
  out.writeUInt32LE(cmd >>> 0, 0);
  out.writeUInt32LE(size, 4);
  body.copy(out, 8);
  return out;
}

// A dylib_command: the name (lc_str) at offset 24, after timestamp and versions.
function dylibCommand(cmd, name) {
  const body = Buffer.alloc(16 + name.length + 1);
  body.writeUInt32LE(24, 0);
  body.write(name, 16);
  return command(cmd, body);
}

const u32s = (...values) => {
  const b = Buffer.alloc(values.length * 4);
  values.forEach((v, i) => b.writeUInt32LE(v >>> 0, i * 4));
  return b;
};

// Root node (no terminal part, one edge) -> a terminal node (flags 0, address 0, no edges).
function exportTrie(name) {
  const rootSize = 1 + 1 + name.length + 1 + 1;
  return Buffer.concat([Buffer.from([0, 1]), Buffer.from(`${name}\0`), Buffer.from([rootSize, 2, 0, 0, 0])]);
}

function bindOps() {
  return Buffer.concat([
    Buffer.from([0x3e, 0x40]), Buffer.from('_napi_create_object\0'), // SPECIAL_IMM -2 (flat), name
    Buffer.from([0x51, 0x72, 0x10, 0x90]), // type, segment 2 + offset 0x10, DO_BIND
    Buffer.from([0x11, 0x40]), Buffer.from('_TF_NewStatus\0'), // ordinal 1, name
    Buffer.from([0x80, 0xf8, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x90, 0x00]), // a step back, DO_BIND, DONE
  ]);
}

function tinyDylib({cpu = 0x0100000c} = {}) {
  const symbols = ['_napi_register_module_v1', '_napi_create_object', '_TF_NewStatus'];
  const strings = Buffer.from(`\0${symbols.join('\0')}\0`);
  const strx = (name) => strings.indexOf(`\0${name}\0`) + 1;
  const nlist = (name, type, desc) => {
    const b = Buffer.alloc(16);
    b.writeUInt32LE(strx(name), 0);
    b[4] = type;
    b[5] = type === 0x0f ? 1 : 0;
    b.writeUInt16LE(desc, 6);
    return b;
  };
  const table = Buffer.concat([
    nlist('_napi_register_module_v1', 0x0f, 0), // N_SECT | N_EXT
    nlist('_napi_create_object', 0x01, 0), // undefined; n_desc ordinal 0, as zig leaves it
    nlist('_TF_NewStatus', 0x01, 1 << 8), // undefined, library #1
  ]);
  const trie = exportTrie('_napi_register_module_v1');
  const binds = bindOps();
  // Sizes are fixed by the commands' count, so the offsets can be computed first.
  const cmdsFor = (linkedit) => [
    dylibCommand(0xd, '@rpath/libtiny.dylib'),
    dylibCommand(0xc, '@rpath/libtensorflow_cc.2.dylib'),
    dylibCommand(0xc, '/usr/lib/libSystem.B.dylib'),
    command(0x8000001c, Buffer.concat([u32s(12), Buffer.from('@loader_path/../x/deps/lib\0')])),
    command(0x32, u32s(1, 0x000c0000, 0x000e0200, 0)), // macos, minos 12.0, sdk 14.2
    command(0x80000022, u32s(0, 0, linkedit.bind, binds.length, 0, 0, 0, 0, linkedit.trie, trie.length)),
    command(0x2, u32s(linkedit.symoff, 3, linkedit.stroff, strings.length)),
    command(0xb, u32s(0, 0, 0, 1, 1, 2, ...new Array(12).fill(0))),
  ];
  const cmdsSize = Buffer.concat(cmdsFor({bind: 0, trie: 0, symoff: 0, stroff: 0})).length;
  const bind = 32 + cmdsSize;
  const linkedit = {bind, trie: bind + binds.length, symoff: bind + binds.length + trie.length};
  linkedit.stroff = linkedit.symoff + table.length;
  const cmds = cmdsFor(linkedit);
  const header = u32s(0xfeedfacf, cpu, 0, 6, cmds.length, cmdsSize, 0x80, 0);
  return Buffer.concat([header, ...cmds, binds, trie, table, strings]);
}

function fat(image) {
  const head = Buffer.alloc(4096);
  head.writeUInt32BE(0xcafebabe, 0);
  head.writeUInt32BE(2, 4);
  // An x86_64 entry first (pointing at nothing this test reads), then arm64's.
  [[0x01000007, 0, 0], [0x0100000c, 4096, image.length]].forEach(([cpu, offset, size], i) => {
    const e = 8 + i * 20;
    head.writeUInt32BE(cpu, e);
    head.writeUInt32BE(offset, e + 8);
    head.writeUInt32BE(size, e + 12);
    head.writeUInt32BE(12, e + 16);
  });
  return Buffer.concat([head, image]);
}

function scratch(t, name, bytes) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tfjs-node-rs-macho-'));
  t.after(() => fs.rmSync(dir, {recursive: true, force: true}));
  const file = path.join(dir, name);
  fs.writeFileSync(file, bytes);
  return file;
}

test('readMachO: a thin arm64 dylib, its commands, binds, symbols and exports', (t) => {
  const m = readMachO(scratch(t, 'tiny.dylib', tinyDylib()));
  assert.equal(m.cpu, 'arm64');
  assert.equal(m.filetype, 'dylib');
  assert.equal(m.platform, 'macos');
  assert.equal(m.minos, '12.0');
  assert.equal(m.sdk, '14.2');
  assert.equal(m.id, '@rpath/libtiny.dylib');
  assert.deepEqual(m.dylibs.map((d) => d.name), ['@rpath/libtensorflow_cc.2.dylib', '/usr/lib/libSystem.B.dylib']);
  assert.deepEqual(m.rpaths, ['@loader_path/../x/deps/lib']);
  assert.deepEqual(m.imports.map((s) => [s.name, s.library]), [
    ['_napi_create_object', DYNAMIC_LOOKUP],
    ['_TF_NewStatus', '@rpath/libtensorflow_cc.2.dylib'],
  ]);
  // The symbol table alone: n_desc's ordinals (0 = "self" where the linker left none).
  assert.deepEqual(m.undefined.map((s) => [s.name, s.library]), [
    ['_napi_create_object', 'self'],
    ['_TF_NewStatus', '@rpath/libtensorflow_cc.2.dylib'],
  ]);
  assert.equal(m.exportsFrom, 'dyld info');
  assert.deepEqual([...m.exports], ['_napi_register_module_v1']);
});

test('readMachO: the arm64 slice of a fat file; a fat file without one, and non-Mach-O files, are refused', (t) => {
  const image = tinyDylib();
  const m = readMachO(scratch(t, 'fat.dylib', fat(image)));
  assert.equal(m.id, '@rpath/libtiny.dylib');
  assert.deepEqual([...m.exports], ['_napi_register_module_v1']);
  const onlyX64 = scratch(t, 'x64.dylib', tinyDylib({cpu: 0x01000007}));
  assert.equal(readMachO(onlyX64, {arch: 'x86_64'}).cpu, 'x86_64');
  const refuse = (file, re) => assert.throws(() => readMachO(file), (err) => err.code === macho.MACHO_ERROR_CODE && re.test(err.message));
  refuse(scratch(t, 'elf.so', Buffer.from('\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0')), /not a 64-bit Mach-O or fat file/);
  refuse(scratch(t, 'cut.dylib', image.subarray(0, 200)), /lies outside the image|ends at byte/);
  refuse(path.join(os.tmpdir(), 'tfjs-node-rs-macho-absent.dylib'), /does not exist/);
});

test('readBindOpcodes / readChainedImports: which symbol from which library', () => {
  assert.deepEqual(readBindOpcodes(bindOps(), 'ops').map((b) => [b.name, b.ordinal]), [['_napi_create_object', -2], ['_TF_NewStatus', 1]]);
  assert.throws(() => readBindOpcodes(Buffer.from([0x90]), 'ops'), /binds before naming a symbol/);
  assert.throws(() => readBindOpcodes(Buffer.from([0xe0]), 'ops'), /unknown bind opcode/);
  // DYLD_CHAINED_IMPORT (format 1): lib_ordinal 8 bits, weak 1, name_offset 23.
  const names = Buffer.from('_a\0_b\0');
  const header = u32s(0, 0, 28, 36, 2, 1, 0);
  const imports = u32s(1 | (0 << 9), 0xfe | 0x100 | (3 << 9));
  assert.deepEqual(readChainedImports(Buffer.concat([header, imports, names]), 'fixups'), [
    {name: '_a', ordinal: 1, weak: false},
    {name: '_b', ordinal: -2, weak: true},
  ]);
});

test('readExportTrie: every terminal name; a looping trie is refused', () => {
  assert.deepEqual([...readExportTrie(exportTrie('_x'), 'trie')], ['_x']);
  assert.throws(() => readExportTrie(Buffer.from([0, 1, 0x61, 0, 0]), 'trie'), /loops back/);
});

test('readTbd: exported and re-exported names per install name, not the undefined ones', () => {
  const tbd = [
    '--- !tapi-tbd', 'install-name:    \'/usr/lib/system/libx.dylib\'', 'exports:',
    '  - targets:         [ arm64e-macos ]', '    symbols:         [ _a, \'_b$UNIX2003\',', '                       _c ]',
    'undefineds:', '  - targets:         [ arm64e-macos ]', '    symbols:         [ _u ]', '...',
  ].join('\n');
  assert.deepEqual([...readTbd(tbd).get('/usr/lib/system/libx.dylib')], ['_a', '_b$UNIX2003', '_c']);
  assert.deepEqual([...headerFunctions('NAPI_EXTERN napi_status NAPI_CDECL napi_get_undefined(napi_env env);')], ['_napi_get_undefined']);
});

// ---------------------------------------------------------------------------
// The real addon.

const inputs = checkInputs();
const absent = !inputs.addon
  ? 'no tfjs-node-rs.darwin-arm64.node: `node scripts/build.js --target aarch64-apple-darwin` cross-builds it'
  : !inputs.libDir
    ? 'no darwin-arm64 libtensorflow in the cache: the same cross build unpacks it'
    : false;

test('the cross-built macOS addon: arm64, macOS <= 12.0, its dylibs, rpaths and every undefined symbol', {skip: absent}, (t) => {
  const res = checkMacAddon(inputs);
  t.diagnostic(res.summary.split('\n').slice(0, 5).join(' | '));
  if (!inputs.node) t.diagnostic('no macOS node in the cache (`node scripts/macho.js --check` fetches it): its N-API symbols were checked against Node\'s headers or by name only');
  if (!inputs.tbd) t.diagnostic('no zig in the cache: the system symbols were not checked against libSystem\'s stubs');
  const a = res.addon;
  assert.equal(a.cpu, 'arm64');
  assert.ok(a.signature.adhoc && a.signature.pages > 0 && !a.signature.badPages.length);
  assert.deepEqual(a.dylibs.map((d) => d.name).sort(), [
    '/usr/lib/libSystem.B.dylib', ...LIBRARIES.darwin.libs.map((lib) => `@rpath/${lib}`),
  ].sort());
  assert.ok(res.counts.tf > 100 && res.counts.node > 50 && res.counts.system > 0, JSON.stringify(res.counts));
  assert.equal(res.counts.tf + res.counts.node + res.counts.system, res.symbols.length);
  // A check that would pass anything is no check: a missing rpath, and a node without N-API, fail it.
  assert.throws(() => checkMacAddon({...inputs, rpathDirs: ['../elsewhere/deps/lib']}), /lack @loader_path\/\.\.\/elsewhere\/deps\/lib/);
  // One byte changed in the code: the signature no longer matches that page.
  const bytes = fs.readFileSync(inputs.addon);
  bytes[5000] ^= 0xff;
  const altered = scratch(t, 'altered.node', bytes);
  assert.throws(() => checkMacAddon({...inputs, addon: altered}), /code signature does not match pages 1$/m);
  if (inputs.node) {
    const noNode = scratch(t, 'node', tinyDylib());
    assert.throws(() => checkMacAddon({...inputs, node: noNode}), /the macOS node does not export it/);
  }
});
