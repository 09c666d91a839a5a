/**
 * A lock file beside a cached asset, so that two processes starting at once
 * download it once: one holds `<file>.lock`, the other waits for it. The lock
 * only saves work; correctness comes from the atomic rename in cached-file.ts
 * (no half-written file is ever visible, whoever wins).
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';

/** The holder touches the lock this often; a lock untouched for STALE_MS is abandoned. */
const HEARTBEAT_MS = 2000;
const STALE_MS = 30000;
const POLL_MS = 200;

interface LockOwner {
  readonly pid: number;
  readonly host: string;
  readonly token: string;
}

function readOwner(lockPath: string): LockOwner | undefined {
  try {
    return JSON.parse(fs.readFileSync(lockPath, 'utf8')) as LockOwner;
  } catch {
    return undefined; // gone, or being written right now
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Dead holder on this host, or no heartbeat for STALE_MS (a holder on another host sharing the cache). */
function isStale(lockPath: string): boolean {
  let mtimeMs: number;
  try {
    mtimeMs = fs.statSync(lockPath).mtimeMs;
  } catch {
    return false; // already released
  }
  const owner = readOwner(lockPath);
  if (owner && owner.host === os.hostname() && !processAlive(owner.pid)) return true;
  return Date.now() - mtimeMs > STALE_MS;
}

function tryCreate(lockPath: string, owner: LockOwner): boolean {
  try {
    fs.writeFileSync(lockPath, JSON.stringify(owner), { flag: 'wx' });
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs `work` while holding `lockPath`. `onWait` is called once if another
 * process holds it; the caller re-checks the cache inside `work`.
 */
export async function withFileLock<T>(lockPath: string, work: () => Promise<T>, onWait?: () => void): Promise<T> {
  const owner: LockOwner = { pid: process.pid, host: os.hostname(), token: randomBytes(8).toString('hex') };
  let told = false;
  while (!tryCreate(lockPath, owner)) {
    if (isStale(lockPath)) {
      // Move it aside under a unique name first: of two processes that both
      // saw it stale, only one rename succeeds, so neither removes a fresh lock.
      const aside = `${lockPath}.stale-${owner.token}`;
      try {
        fs.renameSync(lockPath, aside);
        fs.rmSync(aside, { force: true });
      } catch {
        // another process got there first
      }
      continue;
    }
    if (!told && onWait) onWait();
    told = true;
    await sleep(POLL_MS);
  }
  const heartbeat = setInterval(() => {
    const now = new Date();
    try {
      fs.utimesSync(lockPath, now, now);
    } catch {
      // removed as stale by someone else: the rename keeps the result correct anyway
    }
  }, HEARTBEAT_MS);
  heartbeat.unref();
  try {
    return await work();
  } finally {
    clearInterval(heartbeat);
    if (readOwner(lockPath)?.token === owner.token) fs.rmSync(lockPath, { force: true });
  }
}
