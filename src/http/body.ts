import type { HttpResponse } from 'uWebSockets.js'
import { ApiError } from '../errors.js'
import type { Ctx, RouteDef } from './route.js'
import { validate } from './validate.js'

function isJson (contentType: string | undefined): boolean {
  if (contentType === undefined) return false
  const type = contentType.split(';', 1)[0]!.trim().toLowerCase()
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'))
}

/** Whether a route reads a body at all. */
export function takesBody (route: RouteDef): boolean {
  return route.body !== undefined || route.rawBody === true
}

/**
 * Checks the body's headers, then reads it and hands it to then, inside the uWS callback that delivered its last
 * byte (so the reply can be written there, corked); a body past the limit mid-stream goes to fail. Throws what the
 * headers alone refuse.
 */
export function readBody (res: HttpResponse, route: RouteDef, headers: Record<string, string>, defaultMax: number, ended: () => boolean, then: (raw: Buffer) => void, fail: (err: unknown) => void): void {
  const max = route.maxBodyBytes ?? defaultMax
  const declared = headers['content-length'] === undefined ? undefined : Number(headers['content-length'])
  const chunked = /chunked/i.test(headers['transfer-encoding'] ?? '')
  if ((declared === undefined || declared === 0) && !chunked) return then(Buffer.alloc(0))
  if (route.rawBody !== true && !isJson(headers['content-type'])) throw new ApiError('unsupported_media_type', 'Send the body as Content-Type: application/json.')
  if (declared !== undefined && declared > max) throw new ApiError('payload_too_large', `The body is ${declared} bytes; this route accepts at most ${max}.`)
  const chunks: Buffer[] = []
  let size = 0
  res.onData((chunk, isLast) => {
    if (ended()) return
    try {
      size += chunk.byteLength
      if (size > max) throw new ApiError('payload_too_large', `The body exceeds ${max} bytes.`)
      if (isLast && chunks.length === 0) {
        // uWS owns the chunk's memory only until this callback returns; the handler runs before that, but a raw
        // body may be kept by the handler, so it gets a copy.
        return then(route.rawBody === true ? Buffer.from(new Uint8Array(chunk)) : Buffer.from(chunk))
      }
      chunks.push(Buffer.from(new Uint8Array(chunk)))
      if (isLast) then(Buffer.concat(chunks))
    } catch (err) {
      fail(err)
    }
  })
}

/** Verifies, parses and validates the body into ctx.body; a route's invalidBody renames what a bad one answers. */
export function parseBody (route: RouteDef, ctx: Ctx, raw: Buffer | undefined): void {
  route.verifyRaw?.(ctx, raw ?? Buffer.alloc(0))
  if (route.rawBody === true) ctx.body = raw ?? Buffer.alloc(0)
  if (route.body === undefined) return
  try {
    let body: unknown = {}
    if (raw !== undefined && raw.length > 0) {
      try {
        body = JSON.parse(raw.toString('utf8'))
      } catch {
        throw new ApiError('invalid_json', 'The request body is not valid JSON.')
      }
    }
    validate(route.body, body)
    ctx.body = body
  } catch (err) {
    const invalid = route.invalidBody
    if (invalid === undefined || !(err instanceof ApiError)) throw err
    throw new ApiError(invalid.code, err.message, { ...invalid.extras, ...(err.extras.param !== undefined ? { param: err.extras.param } : {}) })
  }
}
