import { createServer, connect, type Server, type Socket } from 'node:net'
import type { AddressInfo } from 'node:net'

/** A TCP proxy on loopback that a test can take down and bring back, to play a server that goes away. */
export interface TcpProxy {
  url: string
  down (): Promise<void>
  up (): Promise<void>
}

export async function startTcpProxy (t: { teardown (fn: () => unknown): void }, target: URL): Promise<TcpProxy> {
  const sockets = new Set<Socket>()
  let server: Server | undefined
  let port = 0
  const listen = () => new Promise<void>((resolve) => {
    server = createServer((client) => {
      const upstream = connect(Number(target.port), target.hostname)
      for (const s of [client, upstream]) {
        sockets.add(s)
        s.on('close', () => sockets.delete(s))
        s.on('error', () => { client.destroy(); upstream.destroy() })
      }
      client.pipe(upstream).pipe(client)
    })
    server.listen(port, '127.0.0.1', () => {
      port = (server!.address() as AddressInfo).port
      resolve()
    })
  })
  const down = () => new Promise<void>((resolve) => {
    for (const s of sockets) s.destroy()
    if (server === undefined) return resolve()
    server.close(() => resolve())
    server = undefined
  })
  await listen()
  t.teardown(down)
  return { url: `http://127.0.0.1:${port}`, down, up: listen }
}
