'use strict';
// The yes/no request of test/fixtures/yes-no.json: every subject with every claim (50 items).
const fixture = require('../fixtures/yes-no.json');

function yesNoRequest() {
  const items = fixture.subjects.flatMap((subject) =>
    fixture.claims.map((claim) => fixture.itemTemplate.replace('{subject}', subject).replace('{claim}', claim)),
  );
  return { query: fixture.query, items, labelTokenIds: fixture.labelTokenIds };
}

/** Max and mean |a - b| over two score tables of the same shape (items x labels). */
function scoreDiffs(a, b) {
  let max = 0;
  let sum = 0;
  let n = 0;
  a.forEach((row, i) =>
    row.forEach((x, j) => {
      const d = Math.abs(x - b[i][j]);
      max = Math.max(max, d);
      sum += d;
      n++;
    }),
  );
  return { max, mean: sum / n };
}

module.exports = { yesNoRequest, scoreDiffs };
