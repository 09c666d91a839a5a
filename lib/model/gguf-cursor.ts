import * as fs from 'node:fs';
import { GgufError } from './gguf-types';

/**
 * Sequential little-endian reads from a file descriptor through a window
 * that grows on demand. The GGUF header of a real model holds ~100k
 * strings (vocabulary and merges), several MB: reading it in 1 MB chunks
 * keeps memory small and never pulls tensor data in by accident.
 */
export class FileCursor {
  private window: Buffer = Buffer.alloc(0);
  /** File offset of window[0]. */
  private windowStart = 0;
  /** Current file offset. */
  position = 0;

  constructor(
    private readonly fd: number,
    readonly fileSize: number,
    private readonly fileName: string,
  ) {}

  /** Make sure bytes [position, position + n) are in the window, or explain the truncation. */
  private ensure(n: number, what: string): number {
    const end = this.position + n;
    if (end > this.fileSize) {
      throw new GgufError(
        `GGUF file ${this.fileName} is truncated: reading ${what} needs bytes ${this.position}..${end}, ` +
          `but the file has ${this.fileSize} bytes`,
      );
    }
    if (this.position < this.windowStart || end > this.windowStart + this.window.length) {
      const length = Math.min(Math.max(n, 1 << 20), this.fileSize - this.position);
      const chunk = Buffer.allocUnsafe(length);
      let filled = 0;
      while (filled < length) {
        const got = fs.readSync(this.fd, chunk, filled, length - filled, this.position + filled);
        if (got === 0) break;
        filled += got;
      }
      if (filled < n)
        throw new GgufError(`GGUF file ${this.fileName}: short read at byte ${this.position} while reading ${what}`);
      this.window = chunk.subarray(0, filled);
      this.windowStart = this.position;
    }
    return this.position - this.windowStart;
  }

  u8(what: string): number {
    const at = this.ensure(1, what);
    this.position += 1;
    return this.window[at];
  }
  i8(what: string): number {
    const at = this.ensure(1, what);
    this.position += 1;
    return this.window.readInt8(at);
  }
  u16(what: string): number {
    const at = this.ensure(2, what);
    this.position += 2;
    return this.window.readUInt16LE(at);
  }
  i16(what: string): number {
    const at = this.ensure(2, what);
    this.position += 2;
    return this.window.readInt16LE(at);
  }
  u32(what: string): number {
    const at = this.ensure(4, what);
    this.position += 4;
    return this.window.readUInt32LE(at);
  }
  i32(what: string): number {
    const at = this.ensure(4, what);
    this.position += 4;
    return this.window.readInt32LE(at);
  }
  f32(what: string): number {
    const at = this.ensure(4, what);
    this.position += 4;
    return this.window.readFloatLE(at);
  }
  f64(what: string): number {
    const at = this.ensure(8, what);
    this.position += 8;
    return this.window.readDoubleLE(at);
  }
  /** 64-bit integers as number when exact, else bigint (never rounded silently). */
  u64(what: string): number | bigint {
    const at = this.ensure(8, what);
    this.position += 8;
    // Two u32 halves: a header holds ~100k string lengths, and a BigInt per length cost ~15 ms.
    const high = this.window.readUInt32LE(at + 4);
    if (high < 2 ** 21) return high * 2 ** 32 + this.window.readUInt32LE(at);
    return this.window.readBigUInt64LE(at);
  }
  i64(what: string): number | bigint {
    const at = this.ensure(8, what);
    this.position += 8;
    const v = this.window.readBigInt64LE(at);
    return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
  }
  /** A u64 that must be a usable count or size (lengths, dims, offsets). */
  size(what: string): number {
    const v = this.u64(what);
    if (typeof v === 'bigint')
      throw new GgufError(`GGUF file ${this.fileName}: ${what} is ${v}, which is not a plausible size`);
    return v;
  }
  /** GGUF string: u64 byte length, then UTF-8 bytes (no terminator). */
  string(what: string): string {
    // `what` names the string in the messages of both reads (no label is built per string).
    const length = this.size(what);
    const at = this.ensure(length, what);
    this.position += length;
    return this.window.toString('utf8', at, at + length);
  }
  /** `count` GGUF strings in a row (an array's elements): string() in one loop. */
  strings(count: number, what: string): string[] {
    const values = new Array<string>(count);
    for (let i = 0; i < count; i++) values[i] = this.string(what);
    return values;
  }
}
