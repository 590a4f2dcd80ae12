'use strict';
// A minimal protobuf wire-format reader and writer: just what tf.node needs to read
// `saved_model.pb` signatures and binary GraphDefs, and to write TensorBoard `Event` records.
// (Written here rather than taken from a protobuf library: these few messages need a reader
// of ~100 lines, where a library would bring generated code for all of TF's protos.)

const WIRE_VARINT = 0;
const WIRE_I64 = 1;
const WIRE_LEN = 2;
const WIRE_I32 = 5;

class ProtoError extends Error {}

/** Reads the fields of one message from `bytes[start, end)`. */
class Reader {
  constructor(bytes, start = 0, end = bytes.length) {
    this.bytes = bytes;
    this.pos = start;
    this.end = end;
  }

  done() {
    return this.pos >= this.end;
  }

  /** A varint as a BigInt (unsigned, up to 64 bits). */
  varintBig() {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError('truncated varint');
      const b = this.bytes[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return BigInt.asUintN(64, result);
      shift += 7n;
    }
    throw new ProtoError('varint longer than 10 bytes');
  }

  /** A varint that fits a JS number (tags, lengths, enums, bools). */
  varint() {
    let result = 0;
    let mul = 1;
    for (let i = 0; i < 10; i++) {
      if (this.pos >= this.end) throw new ProtoError('truncated varint');
      const b = this.bytes[this.pos++];
      result += (b & 0x7f) * mul;
      if ((b & 0x80) === 0) {
        if (i >= 7) {
          // Negative int32/int64 values take 10 bytes: re-read them exactly.
          this.pos -= i + 1;
          return Number(BigInt.asIntN(64, this.varintBig()));
        }
        return result;
      }
      mul *= 128;
    }
    throw new ProtoError('varint longer than 10 bytes');
  }

  /** The next field's `{field, wire}`. */
  tag() {
    const t = this.varint();
    const field = Math.floor(t / 8);
    if (field === 0) throw new ProtoError('field number 0');
    return {field, wire: t & 7};
  }

  /** A length-delimited field as a sub-reader. */
  sub() {
    const len = this.varint();
    if (len > this.end - this.pos) throw new ProtoError('length past the end of the message');
    const r = new Reader(this.bytes, this.pos, this.pos + len);
    this.pos += len;
    return r;
  }

  string() {
    return Buffer.from(this.bytesField()).toString('utf8');
  }

  /** A length-delimited field's bytes (a view, not a copy). */
  bytesField() {
    const r = this.sub();
    return r.bytes.subarray(r.pos, r.end);
  }

  /** A little-endian float (wire type I32). */
  float32() {
    this.advance(4);
    const b = this.bytes;
    return new DataView(b.buffer, b.byteOffset + this.pos - 4, 4).getFloat32(0, true);
  }

  /** A little-endian double (wire type I64). */
  float64() {
    this.advance(8);
    const b = this.bytes;
    return new DataView(b.buffer, b.byteOffset + this.pos - 8, 8).getFloat64(0, true);
  }

  skip(wire) {
    switch (wire) {
      case WIRE_VARINT: this.varintBig(); return;
      case WIRE_I64: this.advance(8); return;
      case WIRE_LEN: this.sub(); return;
      case WIRE_I32: this.advance(4); return;
      default: throw new ProtoError(`unsupported wire type ${wire}`);
    }
  }

  advance(n) {
    if (n > this.end - this.pos) throw new ProtoError('field past the end of the message');
    this.pos += n;
  }

  /** Calls `onField(field, wire, reader)` per field; unknown fields must be skipped by it. */
  each(onField) {
    while (!this.done()) {
      const {field, wire} = this.tag();
      if (onField(field, wire, this) === false) this.skip(wire);
    }
  }
}

/** Builds one message. Fields are appended in the order written. */
class Writer {
  constructor() {
    this.parts = [];
    this.length = 0;
  }

  push(buf) {
    this.parts.push(buf);
    this.length += buf.length;
  }

  rawVarint(value) {
    let v = BigInt.asUintN(64, BigInt(value));
    const out = [];
    do {
      let b = Number(v & 0x7fn);
      v >>= 7n;
      if (v !== 0n) b |= 0x80;
      out.push(b);
    } while (v !== 0n);
    this.push(Buffer.from(out));
  }

  key(field, wire) {
    this.rawVarint(field * 8 + wire);
  }

  varint(field, value) {
    this.key(field, WIRE_VARINT);
    this.rawVarint(value);
  }

  double(field, value) {
    this.key(field, WIRE_I64);
    const b = Buffer.alloc(8);
    b.writeDoubleLE(value, 0);
    this.push(b);
  }

  float(field, value) {
    this.key(field, WIRE_I32);
    const b = Buffer.alloc(4);
    b.writeFloatLE(value, 0);
    this.push(b);
  }

  bytes(field, buf) {
    this.key(field, WIRE_LEN);
    this.rawVarint(buf.length);
    this.push(Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength));
  }

  string(field, text) {
    this.bytes(field, Buffer.from(String(text), 'utf8'));
  }

  message(field, writer) {
    this.bytes(field, writer.finish());
  }

  /** A packed repeated double field. */
  packedDoubles(field, values) {
    const b = Buffer.alloc(8 * values.length);
    for (let i = 0; i < values.length; i++) b.writeDoubleLE(values[i], 8 * i);
    this.bytes(field, b);
  }

  finish() {
    return Buffer.concat(this.parts, this.length);
  }
}

module.exports = {Reader, Writer, ProtoError, WIRE_VARINT, WIRE_I64, WIRE_LEN, WIRE_I32};
