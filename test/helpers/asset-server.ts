import { createServer, type Server } from 'node:http'

/** A local asset server for URL mode (reachable only with ALLOW_PRIVATE_ASSET_URLS, as a public host would be). */
export async function assetServer (t: { teardown (fn: () => unknown): void }, files: Record<string, { body: Buffer, type: string, status?: number, location?: string }>): Promise<string> {
  const server: Server = createServer((req, res) => {
    const f = files[req.url ?? '']
    if (f === undefined) { res.writeHead(404).end(); return }
    res.writeHead(f.status ?? 200, { 'content-type': f.type, ...(f.location ? { location: f.location } : {}) }).end(f.body)
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  t.teardown(() => new Promise((r) => server.close(r)))
  return `http://127.0.0.1:${(server.address() as { port: number }).port}`
}
