import { spawn, type ChildProcess } from 'node:child_process'

/** The environment a child service gets: this one without the test runner's loaders and variables. */
export function inherited (): Record<string, string | undefined> {
  return Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP') && k !== 'NODE_OPTIONS'))
}

/** The service as users run it (node dist/src/main.js), in its own process that a test can kill -9. */
export function startProcess (dataDir: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess, url: string, stdout: () => string, stderr: () => string }> {
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    env: { ...inherited(), PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: 'crash-admin', TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'error', DEMO_FLEET: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  // Passed on as it comes, and kept, so that a test can read what an operator's log would hold.
  let err = ''
  child.stderr!.on('data', (d: Buffer) => {
    err += d
    process.stderr.write(d)
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (\S+)/.exec(out)
      if (m) resolve({ child, url: m[1]!, stdout: () => out, stderr: () => err })
    })
    child.once('exit', (code) => reject(new Error(`exited with ${code}`)))
  })
}

/** What a start that refused printed: its exit code, stderr, and stderr's lines read as JSON (null for a line that is not). */
export interface Refusal {
  code: number | null
  stderr: string
  lines: Array<Record<string, unknown> | null>
}

/** Runs the service as users do and waits for it to exit on its own; a start that serves instead is killed and says so. */
export function refusedStart (dataDir: string, env: Record<string, string>): Promise<Refusal> {
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    env: { ...inherited(), HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: 'own-admin', LOG_LEVEL: 'error', DEMO_FLEET: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (d) => { stdout += d })
  child.stderr.on('data', (d) => { stderr += d })
  const killer = setTimeout(() => child.kill('SIGKILL'), 20_000)
  const json = (line: string) => { try { return JSON.parse(line) as Record<string, unknown> } catch { return null } }
  return new Promise((resolve) => child.once('exit', (code) => {
    clearTimeout(killer)
    const text = stdout.includes('listening on') ? `it started serving: ${stdout}` : stderr
    resolve({ code, stderr: text, lines: text.split('\n').filter((l) => l !== '').map(json) })
  }))
}

/** The reason a refused start gave, when it wrote what a refusal writes: one JSON log line, event start_refused. */
export function reason (r: Refusal): string {
  const [line] = r.lines
  return r.lines.length === 1 && line?.level === 'error' && line.event === 'start_refused' ? String(line.msg) : `not one start_refused JSON line: ${r.stderr}`
}

/** Stops a service started with startProcess with SIGTERM, which must exit 0. */
export async function stopsCleanly (t: { equal (a: unknown, b: unknown, message: string): void }, service: { child: ChildProcess }): Promise<void> {
  const stop = new Promise((resolve) => service.child.once('exit', resolve))
  service.child.kill('SIGTERM')
  t.equal(await stop, 0, 'SIGTERM exits cleanly')
}
