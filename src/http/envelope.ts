import { STATUS_CODES } from 'node:http'
import type { ApiError } from '../errors.js'
import type { ErrorCode } from '../generated/types.js'

/** Status line text uWS needs ("201 Created"), computed once per status. */
const statusLines = new Map<number, string>()
export function statusLine (status: number): string {
  let line = statusLines.get(status)
  if (line === undefined) {
    line = `${status} ${STATUS_CODES[status] ?? 'Unknown'}`
    statusLines.set(status, line)
  }
  return line
}

/** What to do next, for the nested envelope's `suggestion` and `related_endpoints`. */
const HINTS: Partial<Record<ErrorCode, { suggestion: string, related: string[] }>> = {
  authentication_required: { suggestion: 'Send Authorization: Bearer <API_KEY>. Partners get a key from POST /v1/partner/register.', related: ['POST /v1/partner/register', 'POST /v1/partner/agent/register'] },
  not_authorized: { suggestion: 'Use a key that belongs to the resource owner.', related: ['POST /v1/partner/register'] },
  missing_scope: { suggestion: 'Ask the operator to grant the scope to this key, or use a key that has it.', related: [] },
  rate_limited: { suggestion: 'Wait retry_after_seconds (also in the Retry-After header) before retrying.', related: [] },
  invalid_json: { suggestion: 'Send a well-formed JSON body.', related: [] },
  unsupported_media_type: { suggestion: 'Send Content-Type: application/json.', related: [] },
  payload_too_large: { suggestion: 'Send a smaller body; the limit is in the OpenAPI description.', related: [] },
  route_not_found: { suggestion: 'Check the path against the OpenAPI description.', related: ['GET /openrtb/v2/openapi.json'] },
  method_not_allowed: { suggestion: 'Use one of the methods in the Allow header.', related: ['GET /openrtb/v2/openapi.json'] },
  already_exists: { suggestion: 'Pick another unique value, or fetch the existing resource.', related: [] },
  internal_error: { suggestion: 'Retry with exponential backoff (1, 2, 4, 8 s, capped at 60 s, up to 5 attempts) and quote request_id to support.', related: [] }
}

/** The flat envelope used on /openrtb/v2/* and /admin/v1/*. */
export function flatError (err: ApiError, requestId: string): string {
  return JSON.stringify({ success: false, error: err.message, error_code: err.code, request_id: requestId, ...err.extras })
}

/** The error of one refused item of a partner batch: the code, message and param a single call would answer. */
export function itemError (err: ApiError): { code: string, message: string, param?: string } {
  return { code: err.code.toUpperCase(), message: err.message, ...(err.extras.param !== undefined ? { param: err.extras.param } : {}) }
}

/** The nested envelope used on partner-style routes; code is the flat code in upper snake case. */
export function nestedError (err: ApiError, requestId: string, baseUrl: string): string {
  const hint = HINTS[err.code] ?? { suggestion: 'Fix the request as the message says and retry.', related: [] }
  const error: Record<string, unknown> = {
    code: err.code.toUpperCase(),
    type: err.type,
    message: err.message,
    request_id: requestId,
    docs_url: `${baseUrl}/docs/errors#${err.code}`,
    suggestion: hint.suggestion,
    related_endpoints: hint.related
  }
  if (err.extras.param !== undefined) error.param = err.extras.param
  if (err.extras.retry_after_seconds !== undefined) error.retry_after_seconds = err.extras.retry_after_seconds
  return JSON.stringify({ error })
}
