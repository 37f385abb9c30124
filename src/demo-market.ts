import { fork, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

/**
 * DEMO_FLEET: a market that moves by itself. Simulated screens register, stream FEIN data and run headless players
 * through the public partner API and player feed, and a demo buyer bids on them, like real devices and a real DSP,
 * against baseUrl: one node (npm start) or a cluster's front (npm run cluster). Their progress lines share our stdout;
 * each line they write to stderr (a crash's stack, say) goes to onStderr. Answers the processes, to stop with SIGTERM.
 */
export function startDemoMarket (options: { baseUrl: string, screens: number, stateDir: string, adminToken: string, onStderr: (name: string, text: string) => void, onExit: (name: string, code: number | null) => void }): ChildProcess[] {
  const scripts = join(fileURLToPath(new URL('.', import.meta.url)), '..', 'scripts')
  const start = (name: string, args: string[], env: Record<string, string> = {}): ChildProcess => {
    const child = fork(join(scripts, `${name}.js`), args, { stdio: ['ignore', 'inherit', 'pipe', 'ipc'], env: { ...process.env, ...env } })
    createInterface({ input: child.stderr!, crlfDelay: Infinity }).on('line', (text) => options.onStderr(name, text))
    child.on('exit', (code) => options.onExit(name, code))
    return child
  }
  return [
    start('simulate-fleet', ['--screens', String(options.screens), '--base-url', options.baseUrl, '--state', join(options.stateDir, 'demo-fleet.json')]),
    start('demo-buyer', ['--base-url', options.baseUrl, '--state', join(options.stateDir, 'demo-buyer.json')], { ADMIN_TOKEN: options.adminToken })
  ]
}
