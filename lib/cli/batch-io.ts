/**
 * The files of `pjrt-score run-batch`: the input read line by line in
 * bounded memory (a line over the limit is dropped as it streams and
 * reported, never held), the output written a whole line per write, and the
 * resume scan of an output already there: its torn last line cut, its
 * complete lines read back in order.
 */
import * as fs from 'node:fs';
import type { Readable } from 'node:stream';
import type { BatchLine } from '../server/hosts/batch-lines';

/** Which lines a process takes: line numbers k (1-based) with (k - 1) mod count == index. */
export interface Shard {
  readonly index: number;
  readonly count: number;
}

export const WHOLE: Shard = { index: 0, count: 1 };

/** Counts what the reader has consumed, for the progress line. */
export interface ReadCounter {
  bytes: number;
}

/**
 * The non-blank lines of `stream` in `shard`, in order; a line longer than
 * `maxLineBytes` comes as `bytes: null`. A trailing \r is dropped (CRLF files).
 */
export async function* readLines(
  stream: Readable,
  maxLineBytes: number,
  shard: Shard = WHOLE,
  counter?: ReadCounter,
): AsyncGenerator<BatchLine, void, undefined> {
  let pieces: Buffer[] = [];
  let size = 0;
  let overlong = false;
  let number = 1;
  const finish = (): BatchLine | null => {
    const mine = (number - 1) % shard.count === shard.index;
    const line = mine ? lineOf(number, pieces, size, overlong) : null;
    pieces = [];
    size = 0;
    overlong = false;
    number++;
    return line;
  };
  for await (const chunk of stream as AsyncIterable<Buffer | string>) {
    const buffer = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    if (counter) counter.bytes += buffer.length;
    let start = 0;
    while (start <= buffer.length) {
      const newline = buffer.indexOf(0x0a, start);
      const end = newline === -1 ? buffer.length : newline;
      const mine = (number - 1) % shard.count === shard.index;
      if (mine && !overlong && end > start) {
        if (size + (end - start) > maxLineBytes) {
          overlong = true;
          pieces = [];
        } else pieces.push(buffer.subarray(start, end));
        size += end - start;
      }
      if (newline === -1) break;
      const line = finish();
      if (line !== null) yield line;
      start = newline + 1;
    }
  }
  const last = finish();
  if (last !== null) yield last;
}

function lineOf(number: number, pieces: Buffer[], size: number, overlong: boolean): BatchLine | null {
  if (overlong) return { number, bytes: null };
  let bytes = pieces.length === 1 ? Buffer.from(pieces[0]) : Buffer.concat(pieces, size);
  if (bytes.length > 0 && bytes[bytes.length - 1] === 0x0d) bytes = bytes.subarray(0, bytes.length - 1);
  for (const byte of bytes) if (byte !== 0x20 && byte !== 0x09 && byte !== 0x0d) return { number, bytes };
  return null; // blank: no request, no answer
}

/** Parses `--shard i/n` (0 <= i < n). */
export function parseShard(text: string): Shard | null {
  const m = /^(\d+)\/(\d+)$/.exec(text.trim());
  if (!m) return null;
  const index = Number(m[1]);
  const count = Number(m[2]);
  if (!Number.isSafeInteger(count) || count < 1 || index >= count) return null;
  return { index, count };
}

/**
 * An output file opened to append: a torn last line (no newline: the
 * process died mid-write) is cut off first. `done` is the byte length of
 * its complete lines, which a resume reads back.
 */
export function openOutput(path: string): { readonly fd: number; readonly done: number } {
  const fd = fs.openSync(path, fs.constants.O_RDWR | fs.constants.O_CREAT | fs.constants.O_APPEND, 0o644);
  try {
    const size = fs.fstatSync(fd).size;
    const done = lastNewlineEnd(fd, size);
    if (done < size) fs.ftruncateSync(fd, done);
    return { fd, done };
  } catch (error) {
    fs.closeSync(fd);
    throw error;
  }
}

/** The offset just past the file's last newline (0 if none), read backwards a block at a time. */
function lastNewlineEnd(fd: number, size: number): number {
  const block = Buffer.allocUnsafe(64 * 1024);
  let end = size;
  while (end > 0) {
    const start = Math.max(0, end - block.length);
    const n = fs.readSync(fd, block, 0, end - start, start);
    const at = block.subarray(0, n).lastIndexOf(0x0a);
    if (at !== -1) return start + at + 1;
    end = start;
  }
  return 0;
}

/** Writes all of `text` at the file's end (one write call unless the kernel takes less). */
export function appendLine(fd: number, text: string): void {
  const bytes = Buffer.from(text, 'utf8');
  let offset = 0;
  while (offset < bytes.length) offset += fs.writeSync(fd, bytes, offset, bytes.length - offset);
}

/** Writes `text` to a stream, waiting while its buffer is full (stdout into a slow pipe). */
export async function writeToStream(stream: NodeJS.WritableStream, text: string): Promise<void> {
  if (stream.write(text)) return;
  await new Promise<void>((resolve, reject) => {
    const onDrain = (): void => {
      stream.off('error', onError);
      resolve();
    };
    const onError = (error: Error): void => {
      stream.off('drain', onDrain);
      reject(error);
    };
    stream.once('drain', onDrain);
    stream.once('error', onError);
  });
}
