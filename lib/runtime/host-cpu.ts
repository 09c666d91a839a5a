/**
 * The host CPU as XLA's CPU compiler sees it: the model and the instruction
 * set extensions it may generate code for. XLA compiles for the host's
 * features (AVX-512 where present), so an executable compiled on one CPU can
 * fault with an illegal instruction on another: every cache of compiled
 * programs keys on this identity (docs/design.md "Platforms and precision").
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';

interface HostCpu {
  /** The model name, e.g. "AMD EPYC 7B13". */
  readonly model: string;
  /**
   * The family and model numbers (x86 Linux: "cpu family", "model"), e.g. "family 23 model 1";
   * absent where /proc/cpuinfo has none. A VM's model name ("AMD EPYC") may not tell one
   * generation from the next.
   */
  readonly generation?: string;
  /** The vendor as CPUID names it ("GenuineIntel", "AuthenticAMD"); absent where /proc/cpuinfo has none. */
  readonly vendor?: string;
  /** Feature flags as the kernel reports them (cpuid bits), sorted. */
  readonly flags: readonly string[];
  /** Short stable hash of architecture, vendor, family, model and flags: the cache key part. */
  readonly id: string;
}

let cached: HostCpu | null = null;

/** Fields of the first processor block of /proc/cpuinfo (Linux); empty elsewhere. */
function cpuinfoFields(): Map<string, string> {
  const fields = new Map<string, string>();
  let text: string;
  try {
    text = fs.readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return fields;
  }
  for (const line of text.split('\n')) {
    if (line.trim() === '') break; // end of the first processor block
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return fields;
}

/** This machine's CPU identity (read once per process). */
export function hostCpu(): HostCpu {
  if (cached) return cached;
  const fields = cpuinfoFields();
  const model = fields.get('model name') ?? os.cpus()[0]?.model ?? 'unknown';
  const flags = (fields.get('flags') ?? fields.get('Features') ?? '').split(/\s+/).filter(Boolean).sort();
  const family = fields.get('cpu family');
  const modelNumber = fields.get('model');
  const identity = [
    os.arch(),
    fields.get('vendor_id') ?? '',
    family ?? '',
    modelNumber ?? '',
    model,
    flags.join(' '),
  ].join('|');
  const id = createHash('sha256').update(identity).digest('hex').slice(0, 12);
  const generation =
    family !== undefined && modelNumber !== undefined ? `family ${family} model ${modelNumber}` : undefined;
  const vendor = fields.get('vendor_id');
  cached = {
    model,
    ...(generation !== undefined ? { generation } : {}),
    ...(vendor !== undefined ? { vendor } : {}),
    flags,
    id,
  };
  return cached;
}

/** The flags that matter to XLA's f32/bf16/int8 code paths, for logs and bench output. */
export function notableCpuFlags(cpu: HostCpu = hostCpu()): string[] {
  const wanted = [
    'avx2',
    'fma',
    'avx512f',
    'avx512_bf16',
    'avx512_vnni',
    'avx_vnni',
    'amx_bf16',
    'amx_int8',
    'amx_tile',
  ];
  return wanted.filter((f) => cpu.flags.includes(f));
}
