/**
 * Kernel paths are tried in a child first (docs/design.md): before the addon's
 * attention kernels may run anything above the portable loops in this
 * process, a child process runs each instruction set's trial
 * (native/kernels/kernel_probe.h) in order, from avx2 up to the CPU's best. A path
 * that kills the child (SIGSEGV from a tile configuration the CPU rejects,
 * SIGILL from an instruction a VM hides), fails its trial or does not finish
 * caps the kernels below it; this process never runs it. The verdict is kept
 * on disk by CPU identity and addon build (its sha256), so it costs one child
 * per machine and build (about a second), and is read in a millisecond after.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cacheDir } from '../util/cache-dir';
import { readCachedJson, writeCachedJson } from '../util/cached-json';
import { hostCpu } from './host-cpu';
import { KERNEL_ISAS, type KernelIsa } from './kernel-isas';

/** One instruction set's trial in the child. */
interface KernelTrial {
  readonly isa: KernelIsa;
  readonly ok: boolean;
  readonly detail: string;
}

/** What the probe found: the ceiling the kernels run under in this process, and why it is below the CPU's best. */
export interface KernelProbeVerdict {
  /** The CPU's best instruction set (CPUID, XCR0, tile permission). */
  readonly cpu: KernelIsa;
  /** The highest instruction set shown to run here: the kernels take nothing above it. */
  readonly tried: KernelIsa;
  /** Why `tried` is below `cpu` (which path killed or failed its trial, and how); absent when it is not. */
  readonly note?: string;
  /**
   * 'disk': read from the verdict file; 'child': a child ran the trials now; 'none': nothing to try (a CPU with only
   * the portable loops).
   */
  readonly source: 'disk' | 'child' | 'none';
  /** The trials, in order (the last one killed, failed or not finished where `note` says so). */
  readonly trials: readonly KernelTrial[];
}

/** The parts of the native binding the probe uses. */
interface ProbeBinding {
  kernelIsas(): { readonly cpu: KernelIsa; readonly tried: KernelIsa; readonly allowed: KernelIsa };
  setTriedKernelIsa(isa: KernelIsa): void;
}

/** The environment switch that makes the child's trial of one instruction set fault on purpose (tests). */
const PROBE_FAULT_ENV = 'PJRT_SCORE_KERNEL_PROBE_FAULT';
/** Set in the child only: native/kernels/kernel_probe.h runs its trials nowhere else. */
const CHILD_ENV = 'PJRT_SCORE_KERNEL_PROBE_CHILD';
/** A child that has not finished by then counts as not finished (its paths untried). */
const CHILD_TIMEOUT_MS = 120_000;
/** The verdict file's format; a file of another version is ignored. */
const VERDICT_VERSION = 2;

const order = (isa: KernelIsa): number => KERNEL_ISAS.indexOf(isa);

/** The verdict file of this CPU and addon build. */
function verdictFile(addonFile: string): string {
  const addon = createHash('sha256').update(fs.readFileSync(addonFile)).digest('hex');
  const key = createHash('sha256').update(`${hostCpu().id}|${addon}`).digest('hex').slice(0, 20);
  return path.join(cacheDir(), 'kernel-probe', `${key}.json`);
}

/** The verdict on disk, when it is of this format and fits this CPU. */
function readVerdict(file: string, cpu: KernelIsa): KernelProbeVerdict | null {
  const v = readCachedJson<KernelProbeVerdict>(file, VERDICT_VERSION);
  if (!v || v.cpu !== cpu || order(v.tried) < 0 || order(v.tried) > order(cpu)) return null;
  return { ...v, source: 'disk' };
}

/** Runs the trials in a child; its stdout has one JSON line per trial begun and ended. */
function runProbeChild(addonFile: string, cpu: KernelIsa): KernelProbeVerdict {
  const isas = KERNEL_ISAS.slice(1, order(cpu) + 1);
  // ELECTRON_RUN_AS_NODE: under Electron, process.execPath is Electron, which then runs as Node.
  const env: NodeJS.ProcessEnv = { ...process.env, [CHILD_ENV]: '1', ELECTRON_RUN_AS_NODE: '1' };
  delete env.PJRT_SCORE_KERNEL_ISA; // the trials run each path itself, uncapped
  delete env.PJRT_SCORE_KERNEL_PORTABLE;
  const child = spawnSync(process.execPath, [path.join(__dirname, 'kernel-probe-child.js'), addonFile, ...isas], {
    env,
    encoding: 'utf8',
    timeout: CHILD_TIMEOUT_MS,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const trials: KernelTrial[] = [];
  let begun: KernelIsa | null = null;
  for (const line of (child.stdout ?? '').split('\n')) {
    if (!line.startsWith('{')) continue;
    try {
      const event = JSON.parse(line) as { begin?: KernelIsa; isa?: KernelIsa; ok?: boolean; detail?: string };
      if (event.begin) begun = event.begin;
      else if (event.isa) {
        trials.push({ isa: event.isa, ok: event.ok === true, detail: event.detail ?? '' });
        begun = null;
      }
    } catch {
      // a line that is not the child's: ignore
    }
  }
  let tried: KernelIsa = 'portable';
  let note: string | undefined;
  for (const t of trials) {
    if (!t.ok) {
      note = `${t.isa} failed its trial in a child process (${t.detail}); the kernels run ${tried}`;
      break;
    }
    tried = t.isa;
  }
  if (note === undefined && order(tried) < order(cpu)) {
    const culprit = begun ?? isas[trials.length] ?? cpu;
    const how = child.error
      ? `could not be run: ${(child.error as NodeJS.ErrnoException).code ?? child.error.message}`
      : child.signal
        ? `killed its probe process (${child.signal})`
        : `ended its probe process with exit code ` +
          `${child.status}${child.stderr ? `: ${child.stderr.trim().split('\n').slice(-1)[0]}` : ''}`;
    note = `${culprit} ${how}; the kernels run ${tried}`;
  }
  return { cpu, tried, ...(note !== undefined ? { note } : {}), source: 'child', trials };
}

/** A verdict is kept only when the child answered for every path it was asked about, or one killed it. */
function worthKeeping(v: KernelProbeVerdict): boolean {
  return v.tried === v.cpu || v.trials.some((t) => !t.ok) || /killed its probe process/.test(v.note ?? '');
}

let verdict: KernelProbeVerdict | null = null;

/**
 * The probe's verdict for the addon at `addonFile`, applied to `native` (its tried ceiling): from the
 * verdict file, or a child's trials now. Once per process; never throws.
 */
export function applyKernelProbe(native: ProbeBinding, addonFile: string): KernelProbeVerdict {
  if (verdict) return verdict;
  const cpu = native.kernelIsas().cpu;
  if (cpu === 'portable') {
    verdict = { cpu, tried: 'portable', source: 'none', trials: [] };
    return verdict;
  }
  const testing = (process.env[PROBE_FAULT_ENV] ?? '') !== ''; // a forced fault is never read from nor written to disk
  let file: string | null;
  try {
    file = verdictFile(addonFile);
  } catch {
    file = null; // the addon file cannot be read: probe without a verdict file
  }
  const onDisk = file && !testing ? readVerdict(file, cpu) : null;
  const v = onDisk ?? runProbeChild(addonFile, cpu);
  if (!onDisk && file && !testing && worthKeeping(v)) writeCachedJson(file, VERDICT_VERSION, v);
  native.setTriedKernelIsa(v.tried);
  verdict = v;
  return v;
}
