import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { reason, refusedStart } from './helpers/process.js'

// What the service refuses to start on, as an operator sees it: one JSON log line on stderr (jq reads every line) and
// exit 1, never a stack trace or a service that dies on its first request.

const dir = () => mkdtempSync(join(tmpdir(), 'oohbid-runtime-'))

t.test('on uWebSockets.js\'s JavaScript stand-in the service refuses to start with one line', async (t) => {
  // The stand-in is what uWS loads on a Node it has no native build for; UWS_USE_FALLBACK forces it on this one.
  const r = await refusedStart(dir(), { PORT: '0', UWS_USE_FALLBACK: '1' })
  t.equal(r.code, 1)
  t.match(reason(r), /^UWS_USE_FALLBACK asks uWebSockets.js for its JavaScript stand-in, which cannot serve requests/)
})

t.test('a configuration mistake is one JSON line too', async (t) => {
  const r = await refusedStart(dir(), { PORT: 'eighty' })
  t.equal(r.code, 1)
  t.match(reason(r), /PORT/)
  t.notMatch(r.stderr, /\n\s+at /, 'no stack trace')
})
