// npm test's runner: every test file in a plain `node` process, `jobs` at a time, the longest first, each ended past
// its limit. The files are tap tests, and `npx tap <file>` runs any of them too; the suite does not go through tap's
// runner because it loads its coverage hooks (@tapjs/processinfo, a module loader off the main thread) into every
// thread and child process it starts: with a service's hot threads and analytics process in most files, that doubled
// the suite's CPU (auth.test.js: 18 s of CPU alone, 41 s under tap's runner, 54 s with its mock loader as well).
//
// Prints a line a file as tap does, the whole TAP of a file that failed, the slowest files, and tap's summary line
// (`# { total, pass, fail, skip }`, which .ci/run reads). What each file did is written to dist/test-results.json.
import { spawn } from 'node:child_process'
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { Parser, type Result } from 'tap-parser'

interface FileResult {
  file: string
  ok: boolean
  ms: number
  /** CPU seconds of the file's process and the children it waited for, as last read before it ended (Linux). */
  cpu?: number
  pass: number
  fail: number
  skip: number
  todo: number
  /** Why the whole file was skipped (`t.plan(0, reason)`). */
  skipped?: string
  /** The assertions skipped, with their reasons. */
  skips: Array<{ name: string, reason: string }>
  output: string
}

const root = process.cwd()
const tap = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { tap: { jobs: number, timeout: number, 'test-env'?: string[] } }).tap
const jobs = Number(process.env.TEST_JOBS ?? tap.jobs)
const limitMs = tap.timeout * 1000
const verbose = process.env.TEST_VERBOSE === '1'
const timesFile = join(root, 'dist', 'test-times.json')
const seedFile = join(root, 'test', 'durations.json')
const resultsFile = join(root, 'dist', 'test-results.json')

/** The test files under each path given (a file, or a folder walked for *.test.js). */
function testFiles (paths: string[]): string[] {
  const found: string[] = []
  const walk = (path: string) => {
    if (statSync(path).isFile()) {
      found.push(relative(root, path))
      return
    }
    for (const entry of readdirSync(path)) {
      const full = join(path, entry)
      if (statSync(full).isDirectory()) walk(full)
      else if (entry.endsWith('.test.js')) found.push(relative(root, full))
    }
  }
  for (const p of paths) walk(p)
  return [...new Set(found)].sort()
}

/** Times in ms by file, as a times file holds them; none where it is missing. */
function readTimes (path: string): Record<string, number> {
  try { return JSON.parse(readFileSync(path, 'utf8')) } catch { return {} }
}

/**
 * Longest first, so that no long file starts last: by this checkout's last run of each file, or on a fresh clone by
 * the times committed in test/durations.json. A file neither knows goes first (the larger first): it may be long.
 */
function ordered (files: string[]): string[] {
  const times = { ...readTimes(seedFile), ...readTimes(timesFile) }
  const weight = (f: string) => times[f] ?? 1e9 + statSync(f).size
  return [...files].sort((a, b) => weight(b) - weight(a))
}

const env: NodeJS.ProcessEnv = { ...process.env, TAP_TIMEOUT: String(tap.timeout) }
for (const e of tap['test-env'] ?? []) {
  const i = e.indexOf('=')
  env[e.slice(0, i)] = e.slice(i + 1)
}

const children = new Set<number>()
const endGroup = (pid: number) => { try { process.kill(-pid, 'SIGKILL') } catch {} }
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    for (const pid of children) endGroup(pid)
    process.exit(1)
  })
}

function runFile (file: string): Promise<FileResult> {
  const started = performance.now()
  // Its own process group: a file that runs past its limit is ended with what it started (engines, nodes, browsers).
  const child = spawn(process.execPath, [file], { cwd: root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child.pid!)
  const parser = new Parser()
  let output = ''
  const skips: FileResult['skips'] = []
  const counts = { pass: 0, fail: 0, skip: 0, todo: 0 }
  // Assertions at every depth, as tap's summary counts them: a subtest's own closing point is not one.
  const watch = (p: Parser) => {
    let closing = false
    p.on('child', (c: Parser) => {
      closing = true
      watch(c)
    })
    p.on('assert', (r: Result) => {
      if (closing) {
        closing = false
        return
      }
      if (r.skip !== false) {
        counts.skip++
        skips.push({ name: r.name, reason: r.skip === true ? '' : String(r.skip) })
      } else if (r.todo !== false) counts.todo++
      else if (r.ok) counts.pass++
      else counts.fail++
    })
  }
  watch(parser)
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    parser.write(chunk)
    if (verbose) process.stdout.write(chunk)
  })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  // Its CPU (its own, its threads', and its children's once reaped), read from /proc while it runs: the last reading
  // before it ends, a little short of its whole use.
  let cpu: number | undefined
  const sample = setInterval(() => {
    try {
      const f = readFileSync(`/proc/${child.pid!}/stat`, 'utf8').split(') ')[1]!.split(' ')
      // Clock ticks of 1/100 s (USER_HZ on Linux).
      cpu = (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100
    } catch {}
  }, 250)
  let timedOut = false
  const term = setTimeout(() => {
    timedOut = true
    child.kill('SIGTERM')
    setTimeout(() => endGroup(child.pid!), 10_000).unref()
  }, limitMs + 5_000)
  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(term)
      clearInterval(sample)
      // Whatever the file left running in its group (it ended, so its teardown had its chance).
      endGroup(child.pid!)
      children.delete(child.pid!)
      parser.end()
      const r = parser.results!
      const ms = performance.now() - started
      const failed = !r.ok || code !== 0 || timedOut
      // A file ended before its first assertion parses as "no tests found": a skip only when it ended by itself.
      const skipped = r.plan.skipAll && !failed ? r.plan.skipReason || 'skipped' : undefined
      // A file skipped whole counts as one skip, as in tap's summary.
      if (skipped !== undefined && counts.pass + counts.fail + counts.skip === 0) counts.skip = 1
      if (timedOut) output += `\nnot ok - timeout! ${file} ran past its ${tap.timeout} s\n`
      else if (code !== 0) output += `\nnot ok - ${file} exited with ${signal ?? code}\n`
      resolve({ file, ok: !failed, ms, ...(cpu !== undefined ? { cpu } : {}), ...counts, fail: Math.max(counts.fail, failed ? 1 : 0), ...(skipped !== undefined ? { skipped } : {}), skips, output })
    })
  })
}

/**
 * Files that start a cluster of processes (three nodes, the engine's members, a front) run one at a time: two at once
 * would each take the machine's cores from the other.
 */
const exclusive = (file: string) => /(^|\/)cluster[^/]*\.test\.js$/.test(file)

const queue = ordered(testFiles(process.argv.slice(2).length > 0 ? process.argv.slice(2) : ['dist/test', 'dist/src']))
const started = performance.now()
const results: FileResult[] = []
let exclusiveRunning = false
let n = 0
/** The next file this worker may start: the first queued, passing over an exclusive one while another runs. */
const take = (): string | undefined => {
  const i = queue.findIndex((f) => !exclusive(f) || !exclusiveRunning)
  return i < 0 ? undefined : queue.splice(i, 1)[0]
}
await Promise.all(Array.from({ length: Math.min(jobs, queue.length) }, async () => {
  for (let file = take(); file !== undefined; file = take()) {
    if (exclusive(file)) exclusiveRunning = true
    const r = await runFile(file)
    if (exclusive(file)) exclusiveRunning = false
    results.push(r)
    n++
    const directive = r.skipped !== undefined ? ` # SKIP ${r.skipped}` : ` # time=${r.ms.toFixed(0)}ms`
    process.stdout.write(`${r.ok ? 'ok' : 'not ok'} ${n} - ${r.file}${directive}\n`)
    if (!r.ok && !verbose) process.stdout.write(r.output.replace(/^/gm, '    ') + '\n')
  }
}))

const sum = (k: 'pass' | 'fail' | 'skip' | 'todo') => results.reduce((s, r) => s + r[k], 0)
const total = sum('pass') + sum('fail') + sum('skip') + sum('todo')
const ms = performance.now() - started
process.stdout.write('\n# slowest files\n')
for (const r of [...results].sort((a, b) => b.ms - a.ms).slice(0, 15)) process.stdout.write(`#   ${(r.ms / 1000).toFixed(1).padStart(6)} s  ${r.cpu !== undefined ? `(${r.cpu.toFixed(1).padStart(5)} s CPU)  ` : ''}${r.file}\n`)
const cpu = results.reduce((s, r) => s + (r.cpu ?? 0), 0)
if (cpu > 0) process.stdout.write(`# CPU of the test files and what they started: ${(cpu / 60).toFixed(1)} min\n`)
writeFileSync(timesFile, JSON.stringify({ ...readTimes(timesFile), ...Object.fromEntries(results.map((r) => [r.file, Math.round(r.ms)])) }, null, 1))
writeFileSync(resultsFile, JSON.stringify(results.map(({ output: _, ...r }) => ({ ...r, ms: Math.round(r.ms) })), null, 1))
process.stdout.write(`# { total: ${total}, pass: ${sum('pass')}, fail: ${sum('fail')}, skip: ${sum('skip')}${sum('todo') > 0 ? `, todo: ${sum('todo')}` : ''} }\n`)
process.stdout.write(`# time=${ms.toFixed(0)}ms\n`)
process.exitCode = results.every((r) => r.ok) ? 0 : 1
