import { schemas } from './generated/schemas.js'
import type { ErrorCode, Scope } from './generated/types.js'

/** The table of codes lives in schemas/common/error-code.json; this is its runtime view. */
const table = schemas.ErrorCode['x-error-codes'] as Record<ErrorCode, { status: number, type: string, description: string }>

/** Extra fields an error may carry in either envelope. */
export interface ErrorExtras {
  param?: string
  retry_after_seconds?: number
  retry_after?: number
  required_scope?: Scope
  granted_scopes?: Scope[]
  nbr?: number
  status?: string
}

/** The one error type: a stable code from the spec's table, its HTTP status, a message and extras. */
export class ApiError extends Error {
  readonly code: ErrorCode
  readonly status: number
  readonly type: string
  readonly extras: ErrorExtras
  /** Response headers the error needs (Retry-After, Allow). */
  readonly headers: Record<string, string>

  constructor (code: ErrorCode, message?: string, extras: ErrorExtras = {}, headers: Record<string, string> = {}) {
    const entry = table[code]
    super(message ?? entry.description)
    this.name = 'ApiError'
    this.code = code
    this.status = entry.status
    this.type = entry.type
    this.extras = extras
    this.headers = headers
  }
}

/** Status of a code, for documentation and tests. */
export function statusOf (code: ErrorCode): number {
  return table[code].status
}

/** Every code with its status and meaning, in table order. */
export function errorTable (): Array<{ code: ErrorCode, status: number, type: string, description: string }> {
  return (Object.keys(table) as ErrorCode[]).map((code) => ({ code, ...table[code] }))
}
