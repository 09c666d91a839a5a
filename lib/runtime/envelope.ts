/**
 * The byte format of executable.serialize(): a magic tag, a JSON header
 * (plugin, signature, sha256 of the payload) and the plugin's own bytes.
 * The plugin's deserializer trusts its input (a flipped byte can abort the
 * process inside LLVM), so the payload's digest is checked, and the header's
 * shape validated, before any byte reaches the plugin. The digest catches
 * corruption, not malice: bytes crafted with a matching digest are a
 * program, and loading one is running it.
 */
import { createHash } from 'node:crypto';
import { dimsProblem } from '../util/dims';
import { isDType } from './dtype';
import { Signature, TensorSpec } from './signature';

const MAGIC = 'PJRTSCX2';
const OLD_MAGIC = 'PJRTSCX1'; // before the payload digest
const PREFIX_BYTES = 12; // magic + u32 header length

/** What travels with serialized plugin bytes, so a loaded executable is checked like a compiled one. */
interface EnvelopeHeader {
  readonly platform: string;
  readonly platformVersion: string;
  readonly signature?: Signature;
}

export function packEnvelope(header: EnvelopeHeader, payload: Uint8Array): Uint8Array {
  const payloadSha256 = createHash('sha256').update(payload).digest('hex');
  const json = Buffer.from(JSON.stringify({ ...header, payloadSha256 }), 'utf8');
  const out = Buffer.allocUnsafe(PREFIX_BYTES + json.length + payload.length);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(json.length, 8);
  json.copy(out, PREFIX_BYTES);
  Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).copy(out, PREFIX_BYTES + json.length);
  return new Uint8Array(out.buffer, out.byteOffset, out.byteLength);
}

/** Splits and checks serialized bytes; throws a TypeError for anything that is not intact output of packEnvelope. */
export function unpackEnvelope(bytes: Uint8Array): { header: EnvelopeHeader; payload: Uint8Array } {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const magic = buf.length >= PREFIX_BYTES ? buf.toString('latin1', 0, 8) : '';
  if (magic === OLD_MAGIC) {
    throw new TypeError('serialized executable is from an older pjrt-score (no payload checksum): serialize it again');
  }
  if (magic !== MAGIC) {
    throw new TypeError('not a serialized pjrt-score executable (bad magic): use bytes from executable.serialize()');
  }
  const length = buf.readUInt32LE(8);
  if (PREFIX_BYTES + length > buf.length) throw new TypeError('serialized executable is truncated');
  let raw: unknown;
  try {
    raw = JSON.parse(buf.toString('utf8', PREFIX_BYTES, PREFIX_BYTES + length));
  } catch {
    throw new TypeError('serialized executable has a corrupt header');
  }
  const header = checkHeader(raw);
  const payload = new Uint8Array(
    buf.buffer,
    buf.byteOffset + PREFIX_BYTES + length,
    buf.length - PREFIX_BYTES - length,
  );
  if (createHash('sha256').update(payload).digest('hex') !== header.payloadSha256) {
    throw new TypeError('serialized executable is corrupt: its payload does not match the checksum in its header');
  }
  const { payloadSha256: _digest, ...rest } = header;
  return { header: rest, payload };
}

function checkHeader(raw: unknown): EnvelopeHeader & { payloadSha256: string } {
  const corrupt = (what: string): never => {
    throw new TypeError(`serialized executable has a corrupt header (${what})`);
  };
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return corrupt('not an object');
  const h = raw as Record<string, unknown>;
  if (typeof h.platform !== 'string' || typeof h.platformVersion !== 'string') return corrupt('platform');
  if (typeof h.payloadSha256 !== 'string') return corrupt('payload checksum');
  if (h.signature !== undefined && !isSignature(h.signature)) return corrupt('signature');
  return h as unknown as EnvelopeHeader & { payloadSha256: string };
}

function isSignature(value: unknown): value is Signature {
  if (typeof value !== 'object' || value === null) return false;
  const s = value as Record<string, unknown>;
  return isSpecList(s.inputs) && isSpecList(s.outputs);
}

function isSpecList(value: unknown): value is TensorSpec[] {
  return (
    Array.isArray(value) &&
    value.every(
      (spec: unknown) =>
        typeof spec === 'object' &&
        spec !== null &&
        isDType((spec as TensorSpec).dtype) &&
        Array.isArray((spec as TensorSpec).dims) &&
        dimsProblem((spec as TensorSpec).dims) === undefined,
    )
  );
}
