import type { SeatRecord } from '../accounts/records.js'
import type { KeySealer } from '../auth/sealed-keys.js'
import { ApiError } from '../errors.js'
import type { AccountReference } from '../generated/types.js'
import type { Reports } from '../analytics/reports.js'
import type { ResultCache } from '../analytics/results.js'
import type { ResolvedConfig } from '../config.js'
import type { Inventory } from '../inventory/inventory.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import type { ModerationReply } from '../moderation/types.js'

/** What a tool call runs with: the calling seat and key, the clock reading of the request, and the service's parts. */
export interface ToolCall {
  store: Store
  outbox: Outbox
  inventory: Inventory
  /** Where a synced creative goes for moderation, and what calibrates content against the same models. */
  moderator: { schedule (creativeId: string): void, analyze (url: string, declaredType: string): Promise<ModerationReply> }
  reports: Reports
  results: ResultCache
  config: Pick<ResolvedConfig, 'baseUrl' | 'operator' | 'pickupSeconds' | 'allowPrivateAssetUrls' | 'allowPrivateCallbackUrls'>
  /** Seals a reporting webhook's credentials. */
  sealer: KeySealer
  seat: SeatRecord
  keyId: string
  now: number
  /** ?dry_run=true (or X-Dry-Run on an approved seat): the tools run their checks and answer, and nothing they would record is kept. */
  dryRun: boolean
  /**
   * The request's bookings (Bookings.current), which its transactions run within: its tools record on later turns
   * than the request's own (undefined where bookings are decided in the request's transaction).
   */
  booking: unknown
}

/** This agent's own URL (its MCP endpoint), as AdCP names agents: in format ids, signal deployments, property lists. */
export function agentUrl (call: Pick<ToolCall, 'config'>): string {
  return `${call.config.baseUrl}/mcp`
}

/** What media buys are kept and played with, in a tool call or in the supervisor's activation job. */
export type BuyDeps = Pick<ToolCall, 'store' | 'outbox' | 'inventory' | 'config'>

class DryRun<T> {
  constructor (readonly result: T) {}
}

/**
 * Runs fn in one write transaction: everything a tool records happens together or not at all (a refusal thrown
 * halfway writes nothing). In a dry run the transaction is rolled back once fn has answered.
 */
export function record<T> (call: Pick<ToolCall, 'store' | 'dryRun' | 'booking'>, fn: () => T): T {
  const transaction = (): T => call.store.write(() => {
    const result = fn()
    if (call.dryRun) throw new DryRun(result)
    return result
  })
  try {
    const bookings = call.store.share.bookings
    return bookings === undefined ? transaction() : bookings.within(call.booking, transaction)
  } catch (err) {
    if (err instanceof DryRun) return err.result as T
    throw err
  }
}

/**
 * The AdCP account a request names must be the calling key's seat: its account_id, and a sandbox flag that matches
 * the seat's status (a buy meant for a sandbox account is never made on a live seat, nor the other way round).
 */
export function checkAccount (call: Pick<ToolCall, 'seat'>, account: AccountReference | undefined): void {
  if (account?.account_id !== undefined && account.account_id.toLowerCase() !== call.seat.seat_id.toLowerCase()) throw new ApiError('not_authorized', `account_id ${account.account_id} is not this key's seat; the key acts for account ${call.seat.seat_id}.`, { param: 'account.account_id' })
  if (account?.sandbox !== undefined && account.sandbox !== (call.seat.status === 'sandbox')) throw new ApiError('invalid_parameter', `account.sandbox is ${account.sandbox}, but seat ${call.seat.seat_id} is ${call.seat.status === 'sandbox' ? '' : 'not '}a sandbox seat.`, { param: 'account.sandbox' })
}
