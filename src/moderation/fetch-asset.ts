import http from 'node:http'
import https from 'node:https'
import { guardedLookup } from '../net/guarded-lookup.js'

/** Why a fetch was refused or failed; the message is shown to the buyer as the creative's failure. */
export class FetchError extends Error {}

export interface FetchOptions {
  maxBytes: number
  timeoutMs: number
  /** Test escape hatch: allow loopback and private addresses. */
  allowPrivate: boolean
  /** DNS servers to resolve with instead of the system resolver. */
  dnsServers?: string[]
}

/** Downloads an asset: http(s) only, public addresses only, no redirects, a size cap and a timeout. */
export function fetchAsset (raw: string, options: FetchOptions): Promise<{ bytes: Buffer, contentType: string | undefined }> {
  return new Promise((resolve, reject) => {
    let url: URL
    try {
      url = new URL(raw)
    } catch {
      return reject(new FetchError('the URL is not valid'))
    }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return reject(new FetchError('only http and https URLs can be fetched'))
    const client = url.protocol === 'https:' ? https : http
    const req = client.get(url, { lookup: guardedLookup(options.allowPrivate, (m) => new FetchError(m), options.dnsServers), timeout: options.timeoutMs, headers: { 'user-agent': 'oohbid-creative-fetcher/1.0', accept: 'image/*, video/*' } }, (res) => {
      const status = res.statusCode ?? 0
      if (status >= 300 && status < 400) { res.resume(); return reject(new FetchError(`the URL redirects (HTTP ${status}); give the final URL`)) }
      if (status !== 200) { res.resume(); return reject(new FetchError(`the URL answered HTTP ${status}`)) }
      const declared = Number(res.headers['content-length'] ?? 0)
      if (declared > options.maxBytes) { res.destroy(); return reject(new FetchError(`the asset is ${declared} bytes; the limit is ${options.maxBytes}`)) }
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        if (size > options.maxBytes) { res.destroy(); reject(new FetchError(`the asset exceeds ${options.maxBytes} bytes`)); return }
        chunks.push(chunk)
      })
      res.on('end', () => resolve({ bytes: Buffer.concat(chunks), contentType: res.headers['content-type'] }))
      res.on('error', (err) => reject(new FetchError(`the download failed: ${err.message}`)))
    })
    req.on('timeout', () => req.destroy(new FetchError(`the download took longer than ${options.timeoutMs} ms`)))
    req.on('error', (err) => reject(err instanceof FetchError ? err : new FetchError(`the download failed: ${err.message}`)))
  })
}
