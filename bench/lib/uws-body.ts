import type { HttpResponse } from 'uWebSockets.js'

/**
 * Reads a request's whole body for the benchmarks' own uWS servers and hands it over as text. Each chunk is copied:
 * uWS owns its memory only until the onData callback returns.
 */
export function readBody (res: HttpResponse, onBody: (body: string) => void): void {
  const chunks: Buffer[] = []
  res.onData((chunk, last) => {
    chunks.push(Buffer.from(new Uint8Array(chunk)))
    if (last) onBody(Buffer.concat(chunks).toString())
  })
}
