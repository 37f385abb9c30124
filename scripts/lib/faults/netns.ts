import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { findBinary } from '../engines/local.js'

// A host of its own on this machine (issue 47): a network namespace joined to the root namespace by a veth pair, so
// that a node run in it can be cut off from the engine, HAProxy and every client at once, and healed. The cut drops
// every packet both ways without a word (a tc blackhole qdisc on each end): TCP sees a silent peer and retransmits, as
// across a failed switch, not the reset a killed process sends. Needs root and iproute2; iptables is not needed (nor
// installed here, and this kernel has no netem).

const run = promisify(execFile)

/** Namespaces and veths this module made and has not removed: removed at exit whatever happened. */
const made = new Map<string, string>()
process.once('exit', () => { for (const [ns, veth] of made) removeSync(ns, veth) })

function removeSync (ns: string, veth: string): void {
  // Deleting the root end deletes its peer; the namespace outlives its name only while a process still runs in it.
  try { execFileSync('ip', ['link', 'del', veth], { stdio: 'ignore' }) } catch {}
  try { execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' }) } catch {}
  made.delete(ns)
}

export interface NetHost {
  /** The namespace's name (`ip netns exec <name>`). */
  name: string
  /** The host's address, where the root namespace (HAProxy, clients) reaches what listens in it. */
  address: string
  /** The root namespace's end of the link: where the host reaches the root's services (through relay.ts for loopback ones). */
  gateway: string
  /** The command prefix that runs a program on the host: spawn(wrap[0], [...wrap.slice(1), program, ...args]). ip execs it: the pid is the program's. */
  wrap: string[]
  /** Whether the link is cut now. */
  readonly isCut: boolean
  /** Drops every packet both ways ('drop', silent), or takes the link down ('down'). */
  cut (how?: 'drop' | 'down'): Promise<void>
  heal (): Promise<void>
  /** Deletes the veth and the namespace; stop what runs in it first. */
  remove (): Promise<void>
}

/** Why namespace hosts cannot be made here, or undefined when they can. */
export function netnsUnavailable (): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root'
  if (findBinary('ip', ['/usr/sbin', '/sbin']) === undefined || findBinary('tc', ['/usr/sbin', '/sbin']) === undefined) return 'iproute2 (ip, tc) is not installed'
  return undefined
}

/**
 * Makes host `index` (1 to 250): namespace ohf-<label>, veth ohf<index>r (root end, 10.201.<index>.1/30) and
 * ohf<index>h (host end, 10.201.<index>.2/30), loopback up. Leftovers of a run that died with the same index are
 * removed first.
 */
export async function netHost (label: string, index: number): Promise<NetHost> {
  if (!Number.isInteger(index) || index < 1 || index > 250) throw new Error(`netHost index ${index} is not 1 to 250`)
  const name = `ohf-${label}`
  const rootEnd = `ohf${index}r`
  const hostEnd = `ohf${index}h`
  const gateway = `10.201.${index}.1`
  const address = `10.201.${index}.2`
  removeSync(name, rootEnd)
  made.set(name, rootEnd)
  const inNs = (...args: string[]) => run('ip', ['netns', 'exec', name, ...args])
  try {
    await run('ip', ['netns', 'add', name])
    await run('ip', ['link', 'add', rootEnd, 'type', 'veth', 'peer', 'name', hostEnd, 'netns', name])
    await run('ip', ['addr', 'add', `${gateway}/30`, 'dev', rootEnd])
    await run('ip', ['link', 'set', rootEnd, 'up'])
    await inNs('ip', 'addr', 'add', `${address}/30`, 'dev', hostEnd)
    await inNs('ip', 'link', 'set', hostEnd, 'up')
    await inNs('ip', 'link', 'set', 'lo', 'up')
  } catch (err) {
    removeSync(name, rootEnd)
    throw err
  }
  let cut: 'drop' | 'down' | undefined
  return {
    name,
    address,
    gateway,
    wrap: ['ip', 'netns', 'exec', name],
    get isCut () { return cut !== undefined },
    async cut (how = 'drop') {
      if (cut !== undefined) return
      if (how === 'drop') {
        await run('tc', ['qdisc', 'replace', 'dev', rootEnd, 'root', 'blackhole'])
        await inNs('tc', 'qdisc', 'replace', 'dev', hostEnd, 'root', 'blackhole')
      } else {
        await run('ip', ['link', 'set', rootEnd, 'down'])
      }
      cut = how
    },
    async heal () {
      if (cut === 'drop') {
        await run('tc', ['qdisc', 'del', 'dev', rootEnd, 'root'])
        await inNs('tc', 'qdisc', 'del', 'dev', hostEnd, 'root')
      } else if (cut === 'down') {
        await run('ip', ['link', 'set', rootEnd, 'up'])
      }
      cut = undefined
    },
    async remove () { removeSync(name, rootEnd) }
  }
}
