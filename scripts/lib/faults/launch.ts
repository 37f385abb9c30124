import type { NodeLaunch } from '../cluster.js'
import { clockEnv } from './clock.js'
import type { NetHost } from './netns.js'
import { relayUrls } from './relay.js'

// How one node of a local cluster is launched under a fault (LocalClusterOptions.launch): run on a namespace host
// (netns.ts) or with its clock off (clock.ts).

/**
 * A node on a namespace host: run in it (`ip netns exec`), listening on its address, where HAProxy and clients reach
 * it, and reaching the engine's members, which listen on loopback, through relays on its gateway. HAProxy's
 * connections come from the gateway: it is trusted as a proxy there as 127.0.0.1 is on loopback. close() stops the
 * relays (after the node).
 */
export async function onNetHost (host: NetHost, engineUrls: string[]): Promise<{ launch: NodeLaunch, close: () => Promise<void> }> {
  const relayed = await relayUrls(engineUrls, host.gateway)
  return {
    launch: { wrap: host.wrap, host: host.address, env: { CLUSTER_NATS_URLS: relayed.urls.join(','), TRUST_PROXY: `127.0.0.1,${host.gateway}` } },
    close: relayed.close
  }
}

/** A node whose wall clock is offsetSeconds off from its start (clock.ts). */
export function withClock (offsetSeconds: number): NodeLaunch {
  return { env: clockEnv(offsetSeconds) }
}

/** Launches together: wraps in the order given, environments merged (a later one's variables win), the last host given. */
export function combine (...launches: NodeLaunch[]): NodeLaunch {
  const host = launches.map((l) => l.host).filter((h) => h !== undefined).pop()
  return {
    wrap: launches.flatMap((l) => l.wrap ?? []),
    env: Object.assign({}, ...launches.map((l) => l.env ?? {})),
    ...(host !== undefined ? { host } : {})
  }
}
