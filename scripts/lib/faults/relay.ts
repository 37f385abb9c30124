import { createConnection, createServer, type Socket } from 'node:net'

// A process in a network namespace of its own (netns.ts) reaches the root namespace only at the veth's root address,
// while the engine's members listen on 127.0.0.1 (scripts/lib/engines/nats.ts). A relay on the veth address passes
// each connection on to loopback byte for byte, so the engine needs no change; a cut of the veth silences the relayed
// connections exactly as it would direct ones (the relay's side to the engine stays open, as the engine's own socket
// to a partitioned client would).

export interface Relay {
  /** host:port it listens on. */
  host: string
  port: number
  close (): Promise<void>
}

/** Listens on host:port and relays every connection to targetHost:targetPort. */
export async function relay (host: string, port: number, targetHost: string, targetPort: number): Promise<Relay> {
  const sockets = new Set<Socket>()
  const server = createServer((inbound) => {
    const outbound = createConnection({ host: targetHost, port: targetPort })
    for (const s of [inbound, outbound]) {
      sockets.add(s)
      s.setNoDelay(true)
      // Either side failing ends both, as one TCP connection would end.
      s.once('error', () => { inbound.destroy(); outbound.destroy() })
      s.once('close', () => { sockets.delete(s); inbound.destroy(); outbound.destroy() })
    }
    inbound.pipe(outbound)
    outbound.pipe(inbound)
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, host, () => { server.off('error', reject); resolve() })
  })
  return {
    host,
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy()
      server.close(() => resolve())
    })
  }
}

/** URLs of loopback services (nats://127.0.0.1:4222) as a namespace host reaches them through relays on its gateway. */
export async function relayUrls (urls: string[], gateway: string): Promise<{ urls: string[], close: () => Promise<void> }> {
  const relays = await Promise.all(urls.map(async (u) => {
    const url = new URL(u)
    return { url, relay: await relay(gateway, Number(url.port), url.hostname, Number(url.port)) }
  }))
  return {
    urls: relays.map(({ url, relay }) => `${url.protocol}//${relay.host}:${relay.port}`),
    close: async () => { await Promise.all(relays.map(({ relay }) => relay.close())) }
  }
}
