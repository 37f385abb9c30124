import { spawn, type ChildProcess } from 'node:child_process'

/** The service as users run it (node dist/src/main.js), in its own process that a test can kill -9. */
export function startProcess (dataDir: string, env: Record<string, string> = {}): Promise<{ child: ChildProcess, url: string }> {
  // Without the test runner's loaders and variables.
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('TAP') && k !== 'NODE_OPTIONS'))
  const child = spawn(process.execPath, ['dist/src/main.js'], {
    env: { ...inherited, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, ADMIN_TOKEN: 'crash-admin', TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'error', DEMO_FLEET: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  return new Promise((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (d) => {
      out += d
      const m = /listening on (\S+)/.exec(out)
      if (m) resolve({ child, url: m[1]! })
    })
    child.once('exit', (code) => reject(new Error(`exited with ${code}`)))
  })
}
