'use strict';
// Removes the static symbol table (.symtab and the .strtab it names) from a 64-bit
// little-endian ELF shared library, in place: what `strip --strip-all` does to
// libtensorflow, in plain Node (slim images have no binutils).
//
// The dynamic linker never reads these two sections: it loads the segments named
// by the program headers and resolves symbols through .dynsym/.dynstr. They only
// give debuggers and crash symbolizers the names of non-exported functions. In the
// tensorflow-cpu 2.21.0 wheel they are the last sections of each library, after
// every loaded byte: 205 MB of libtensorflow_cc.so.2 (788 MB) and 14 MB of
// libtensorflow_framework.so.2 (65 MB). So the file is cut where .symtab begins,
// and the small section-name table and the section headers (without those two)
// are written there. Every byte the loader maps stays where it was.
//
// Anything unexpected (another layout, a section that links to the symbol table,
// a loaded byte past the cut) leaves the file untouched.

const fs = require('fs');

const SHT_SYMTAB = 2;
const SHT_NOBITS = 8;
const SHT_REL = 9;
const SHT_RELA = 4;
const SHF_ALLOC = 0x2;
const SHF_INFO_LINK = 0x40;
const SHDR_SIZE = 64;

/**
 * `length` bytes of `fd` at `position`; `endError(at)` makes the error for a file that ends
 * before them. (Also the wheel reader's, in libtensorflow.js.)
 */
function readAt(fd, position, length, endError = (at) => new Error(`the file ends before byte ${at}`)) {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const n = fs.readSync(fd, buf, done, length - done, position + done);
    if (n === 0) throw endError(position + done);
    done += n;
  }
  return buf;
}

/** A NUL-terminated string of `buf` from `start`, not past `end`. (Also macho.js's and prebind.js's.) */
function cString(buf, start, end = buf.length) {
  if (start < 0 || start >= end) return '';
  const nul = buf.indexOf(0, start);
  return buf.toString('utf8', start, nul < 0 || nul > end ? end : nul);
}

function big(buf, off) {
  return Number(buf.readBigUInt64LE(off));
}

/**
 * The 64-byte header of a 64-bit little-endian ELF file with 64-byte section headers, as
 * {header}, or {why} it is not one. (Also scripts/prebind.js's, as are `sectionHeaders` and
 * `big`.)
 */
function elfHeader(fd) {
  if (fs.fstatSync(fd).size < 64) return {why: 'not an ELF file'};
  const header = readAt(fd, 0, 64);
  if (header.readUInt32BE(0) !== 0x7f454c46 || header[4] !== 2 || header[5] !== 1) {
    return {why: 'not a 64-bit little-endian ELF file'};
  }
  if (header.readUInt16LE(0x3a) !== SHDR_SIZE) return {why: 'unexpected section header size'};
  return {header};
}

function sectionHeaders(fd, header) {
  const shoff = big(header, 0x28);
  const shnum = header.readUInt16LE(0x3c);
  const table = readAt(fd, shoff, shnum * SHDR_SIZE);
  return Array.from({length: shnum}, (_, i) => {
    const raw = table.subarray(i * SHDR_SIZE, (i + 1) * SHDR_SIZE);
    return {
      raw,
      nameAt: raw.readUInt32LE(0),
      type: raw.readUInt32LE(4),
      flags: big(raw, 8),
      offset: big(raw, 24),
      size: big(raw, 32),
      link: raw.readUInt32LE(40),
      info: raw.readUInt32LE(44),
    };
  });
}

function loadedEnd(fd, header) {
  const phoff = big(header, 0x20);
  const phentsize = header.readUInt16LE(0x36);
  const phnum = header.readUInt16LE(0x38);
  const table = readAt(fd, phoff, phnum * phentsize);
  let end = phoff + phnum * phentsize;
  for (let i = 0; i < phnum; i++) {
    const p = i * phentsize;
    end = Math.max(end, big(table, p + 8) + big(table, p + 32)); // p_offset + p_filesz
  }
  return end;
}

// Why the file cannot be stripped safely, or null, plus the plan.
function plan(fd) {
  const {header, why} = elfHeader(fd);
  if (why) return {why};
  const shstrndx = header.readUInt16LE(0x3e);
  const sections = sectionHeaders(fd, header);
  if (!sections.length || shstrndx === 0 || shstrndx >= sections.length) return {why: 'extended section numbering'};
  const symtab = sections.findIndex((s) => s.type === SHT_SYMTAB);
  if (symtab < 0) return {why: 'no .symtab (already stripped)'};
  const strtab = sections[symtab].link;
  const drop = new Set([symtab, strtab]);
  if (strtab === 0 || strtab === shstrndx || strtab >= sections.length) return {why: '.symtab shares its string table'};
  if ([...drop].some((i) => sections[i].flags & SHF_ALLOC)) return {why: 'the symbol table is loaded'};
  const linked = sections.some((s, i) => !drop.has(i) && (drop.has(s.link) ||
    ((s.type === SHT_REL || s.type === SHT_RELA || s.flags & SHF_INFO_LINK) && drop.has(s.info))));
  if (linked) return {why: 'another section refers to the symbol table'};
  const cut = Math.min(...[...drop].map((i) => sections[i].offset));
  if (loadedEnd(fd, header) > cut) return {why: 'loaded bytes lie past the symbol table'};
  const tooFar = sections.some((s, i) => !drop.has(i) && i !== shstrndx && s.type !== SHT_NOBITS && s.offset + s.size > cut);
  if (tooFar) return {why: 'other sections lie past the symbol table'};
  return {header, sections, drop, shstrndx, cut};
}

/**
 * Strips .symtab/.strtab from file in place. Returns { before, after } in bytes, or
 * { skipped: reason } when the file is left as it was.
 */
function stripSymbols(file) {
  const fd = fs.openSync(file, 'r+');
  try {
    const p = plan(fd);
    if (p.why) return {skipped: p.why};
    const {header, sections, drop, shstrndx, cut} = p;
    const before = fs.fstatSync(fd).size;
    const names = readAt(fd, sections[shstrndx].offset, sections[shstrndx].size);
    const newIndex = new Map();
    sections.forEach((_, i) => {
      if (!drop.has(i)) newIndex.set(i, newIndex.size);
    });
    const namesAt = cut;
    const headersAt = Math.ceil((namesAt + names.length) / 8) * 8;
    const table = Buffer.alloc(newIndex.size * SHDR_SIZE);
    for (const [oldI, newI] of newIndex) {
      const s = sections[oldI];
      const raw = Buffer.from(s.raw);
      if (s.link) raw.writeUInt32LE(newIndex.get(s.link), 40);
      if ((s.type === SHT_REL || s.type === SHT_RELA || s.flags & SHF_INFO_LINK) && s.info) {
        raw.writeUInt32LE(newIndex.get(s.info), 44);
      }
      if (oldI === shstrndx) raw.writeBigUInt64LE(BigInt(namesAt), 24);
      raw.copy(table, newI * SHDR_SIZE);
    }
    fs.writeSync(fd, names, 0, names.length, namesAt);
    fs.writeSync(fd, Buffer.alloc(headersAt - namesAt - names.length), 0, headersAt - namesAt - names.length, namesAt + names.length);
    fs.writeSync(fd, table, 0, table.length, headersAt);
    fs.ftruncateSync(fd, headersAt + table.length);
    const newHeader = Buffer.from(header);
    newHeader.writeBigUInt64LE(BigInt(headersAt), 0x28);
    newHeader.writeUInt16LE(newIndex.size, 0x3c);
    newHeader.writeUInt16LE(newIndex.get(shstrndx), 0x3e);
    fs.writeSync(fd, newHeader, 0, 64, 0);
    return {before, after: headersAt + table.length};
  } finally {
    fs.closeSync(fd);
  }
}

module.exports = {stripSymbols, readAt, cString, elfHeader, sectionHeaders, big, SHT_RELA};
