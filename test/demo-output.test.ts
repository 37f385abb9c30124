import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import t from 'tap'

const output = fileURLToPath(new URL('../scripts/lib/output.js', import.meta.url))

t.test('a demo process whose stdout reader went away goes on silently instead of dying of EPIPE', async (t) => {
  // Lines every 2 ms; the reader closes its end at once; the process must still reach its own exit, 0.
  const script = `import(${JSON.stringify(output)}).then(({ stdoutLines }) => {
  const out = stdoutLines('demo: ')
  const timer = setInterval(() => out('a line'), 2)
  setTimeout(() => { clearInterval(timer); process.exit(0) }, 400)
})`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.on('data', (d) => { stderr += d })
  child.stdout.destroy()
  const code = await new Promise((resolve) => child.once('exit', resolve))
  t.equal(code, 0, 'it ran to its end', { stderr })
  t.notMatch(stderr, /EPIPE/)
})
