import type { ApiError } from '../errors.js'
import { flatError, nestedError } from './envelope.js'
import { RawJson, type Result, type RouteDef } from './route.js'

/** An answer that can be written now. */
export type Written = Exclude<Result, { kind: 'held' }>

/** A handler's answer as its bytes: the success envelope, a raw body, or a dry run's report of what would be. */
export function renderResult (result: Written, dryRun: boolean, warnings: string[]): { status: number, contentType: string, body: string | Buffer } {
  if (dryRun && result.kind === 'raw') {
    const text = result.body.toString()
    const data = text === '' ? null : result.contentType.startsWith('application/json') ? JSON.parse(text) as unknown : text
    return { status: 200, contentType: 'application/json', body: JSON.stringify({ dry_run: true, data, warnings }) }
  }
  if (result.kind === 'raw') return { status: result.status, contentType: result.contentType, body: result.body }
  if (dryRun) return { status: 200, contentType: 'application/json', body: JSON.stringify({ dry_run: true, data: result.data, warnings }) }
  const data = result.data instanceof RawJson ? result.data.json : JSON.stringify(result.data)
  // What the service decided for the caller (defaults it filled in, a targeting that matches nothing yet).
  const warned = warnings.length > 0 ? `,"warnings":${JSON.stringify(warnings)}` : ''
  return { status: result.status, contentType: 'application/json', body: data === undefined ? `{"success":true${warned}}` : `{"success":true,"data":${data}${warned}}` }
}

/** An error in the route's envelope. */
export function errorBody (route: RouteDef, err: ApiError, requestId: string, baseUrl: string): string {
  return route.envelope === 'nested' ? nestedError(err, requestId, baseUrl) : flatError(err, requestId)
}
