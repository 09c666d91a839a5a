'use strict';
// A started `pjrt-score serve` child (stdout piped): resolves with its URL once
// its log says 'ready' (the port from its 'listening' line); rejects if it
// exits before. Shared by npm run bench:service's closed and open loops.
const readline = require('node:readline');

function serverReady(child) {
  let port = null;
  const lines = readline.createInterface({ input: child.stdout });
  return new Promise((resolve, reject) => {
    const early = (code) => reject(new Error(`server exited with ${code} before it was ready`));
    child.on('exit', early);
    lines.on('line', (line) => {
      let entry;
      try {
        entry = JSON.parse(line);
      } catch {
        return;
      }
      if (entry.event === 'listening') port = entry.port;
      if (entry.event === 'ready') {
        child.removeListener('exit', early);
        resolve(`http://127.0.0.1:${port}`);
      }
    });
  });
}

module.exports = { serverReady };
