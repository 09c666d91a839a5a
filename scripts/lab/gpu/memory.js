'use strict';
/**
 * The process's resident memory, for bench:gpu and the GPU memory probe:
 * peak and current RSS from /proc/self/status, and /proc/self/smaps summed
 * by mapping (a file's base name, or [heap] / [anon] / [stack]), the largest
 * first, with the anonymous and file-backed totals and the JS engine's view.
 */
const fs = require('node:fs');
const path = require('node:path');

const statusBytes = (field) =>
  Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;
const peakRss = () => statusBytes('VmHWM');

/**
 * Where the resident memory is: /proc/self/smaps summed by mapping (a file's
 * base name, or [heap] / [anon] / [stack]), the largest first, with the totals
 * of anonymous and file-backed pages and the JS engine's own view.
 */
function rssBreakdown() {
  const by = new Map();
  let name = '';
  let anon = 0;
  let file = 0;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const p = head[1].trim();
      name = p === '' ? '[anon]' : p.startsWith('[') ? p : path.basename(p);
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (!rss) continue;
    const bytes = Number(rss[1]) * 1024;
    by.set(name, (by.get(name) ?? 0) + bytes);
    if (name.startsWith('[')) anon += bytes;
    else file += bytes;
  }
  const gb = (b) => Number((b / 1e9).toFixed(3));
  const top = [...by]
    .sort((x, y) => y[1] - x[1])
    .slice(0, 12)
    .map(([k, v]) => [k, gb(v)]);
  const m = process.memoryUsage();
  return {
    rss: gb(statusBytes('VmRSS')),
    peak: gb(peakRss()),
    anon: gb(anon),
    file: gb(file),
    js: { heap: gb(m.heapUsed), external: gb(m.external), arrayBuffers: gb(m.arrayBuffers) },
    top,
  };
}

module.exports = { peakRss, rssBreakdown, statusBytes };
