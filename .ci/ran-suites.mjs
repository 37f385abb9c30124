// After `npm test` in CI: the suites .ci/run installed tools for ran, each file of them whole and passing, and no
// file took longer than the limit a test file is held to. Reads what the test runner wrote (dist/test-results.json).
// Exits 1, saying what is missing, otherwise prints one line a suite.
import { readFileSync } from 'node:fs'

const LIMIT_S = 120
const SUITES = {
  cluster: /^dist\/test\/cluster[^/]*\.test\.js$/,
  'clickhouse-server': /^dist\/test\/analytics-server\.test\.js$/,
  'clickhouse-cluster': /^dist\/test\/analytics-cluster\.test\.js$/,
  chromium: /^dist\/test\/(player|player-video|player-serving|dashboard)\.test\.js$/,
  systemd: /^dist\/test\/supervision\.test\.js$/,
  faults: /^dist\/test\/(fault-injection|cluster-netns)\.test\.js$/
}

const results = JSON.parse(readFileSync('dist/test-results.json', 'utf8'))
const problems = []
for (const [suite, files] of Object.entries(SUITES)) {
  const ran = results.filter((r) => files.test(r.file))
  if (ran.length === 0) problems.push(`${suite}: no test file of it ran`)
  for (const r of ran) {
    if (r.skipped !== undefined) problems.push(`${suite}: ${r.file} was skipped (${r.skipped})`)
    else if (r.pass === 0) problems.push(`${suite}: ${r.file} passed no assertion`)
    for (const s of r.skips) problems.push(`${suite}: ${r.file} skipped "${s.name}" (${s.reason})`)
  }
  if (ran.length > 0) console.log(`${suite}: ${ran.length} file(s), ${ran.reduce((n, r) => n + r.pass, 0)} assertions passed`)
}
for (const r of results) if (r.ms > LIMIT_S * 1000) problems.push(`${r.file} took ${(r.ms / 1000).toFixed(0)} s, past the ${LIMIT_S} s a test file is held to`)
if (problems.length > 0) {
  console.error(problems.join('\n'))
  process.exit(1)
}
