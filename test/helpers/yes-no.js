'use strict';
// The yes/no request of test/fixtures/yes-no.json: every subject with every claim (50 items).
const fixture = require('../fixtures/yes-no.json');

function yesNoRequest() {
  const items = fixture.subjects.flatMap((subject) => fixture.claims.map((claim) => fixture.itemTemplate.replace('{subject}', subject).replace('{claim}', claim)));
  return { query: fixture.query, items, labelTokenIds: fixture.labelTokenIds };
}

module.exports = { yesNoRequest };
