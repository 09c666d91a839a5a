'use strict';
// A small SVG bar chart (log scale) of items/s per workload and method.

function escape(text) {
  return String(text).replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]);
}

/** groups: [{ label (may hold '\n'), bars: [{ label, value, color }] }] */
function barChart({ title, subtitle, unit, groups }) {
  const barWidth = 26;
  const gap = 10;
  const groupGap = 40;
  const left = 70;
  const top = 60;
  const height = 260;
  const values = groups.flatMap((g) => g.bars.map((b) => b.value)).filter((v) => v > 0);
  const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...values))));
  const hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...values))));
  const y = (v) =>
    top + height - (height * (Math.log10(Math.max(v, lo)) - Math.log10(lo))) / (Math.log10(hi) - Math.log10(lo));
  const width = left + groups.reduce((w, g) => w + g.bars.length * (barWidth + gap) + groupGap, 0) + 20;
  const out = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${top + height + 110}" font-family="sans-serif" font-size="12">`,
  );
  out.push(`<rect width="100%" height="100%" fill="white"/>`);
  out.push(`<text x="${left}" y="22" font-size="16" font-weight="bold">${escape(title)}</text>`);
  out.push(`<text x="${left}" y="42" fill="#555">${escape(subtitle)}</text>`);
  for (let v = lo; v <= hi; v *= 10) {
    out.push(`<line x1="${left}" x2="${width - 10}" y1="${y(v)}" y2="${y(v)}" stroke="#ddd"/>`);
    out.push(
      `<text x="${left - 8}" y="${y(v) + 4}" text-anchor="end" fill="#555">${v >= 1 ? v : v.toPrecision(1)}</text>`,
    );
  }
  out.push(
    `<text x="16" y="${top + height / 2}" transform="rotate(-90 16 ${top + height / 2})" text-anchor="middle" fill="#555">${escape(unit)} (log scale)</text>`,
  );
  let x = left + 20;
  for (const g of groups) {
    const start = x;
    for (const b of g.bars) {
      const yy = y(b.value);
      out.push(`<rect x="${x}" y="${yy}" width="${barWidth}" height="${top + height - yy}" fill="${b.color}"/>`);
      out.push(
        `<text x="${x + barWidth / 2}" y="${yy - 4}" text-anchor="middle" font-size="10">${b.value >= 100 ? b.value.toFixed(0) : b.value.toFixed(1)}</text>`,
      );
      out.push(
        `<text x="${x + barWidth / 2}" y="${top + height + 12}" text-anchor="end" font-size="10" transform="rotate(-45 ${x + barWidth / 2} ${top + height + 12})">${escape(b.label)}</text>`,
      );
      x += barWidth + gap;
    }
    const mid = (start + x - gap) / 2;
    const lines = String(g.label).split('\n');
    out.push(
      `<text x="${mid}" y="${top + height + 88}" text-anchor="middle" font-weight="bold">${lines.map((l, i) => `<tspan x="${mid}" dy="${i ? 14 : 0}">${escape(l)}</tspan>`).join('')}</text>`,
    );
    x += groupGap;
  }
  out.push('</svg>');
  return `${out.join('\n')}\n`;
}

module.exports = { barChart };
