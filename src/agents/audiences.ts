import { ApiError } from '../errors.js'
import { checkAccount, type ToolCall } from './call.js'

/**
 * sync_audiences: refused. A first-party audience is matched by identity (hashed emails, phones, device ids), and a
 * screen identifies no one: FEIN counts and measures the crowd in front of it. The agent is told what it can target
 * instead, so it can carry on planning.
 */
export function refuseAudiences (call: ToolCall, args: Record<string, unknown>): Record<string, unknown> {
  checkAccount(call, (args as { account?: { account_id?: string, sandbox?: boolean } }).account)
  throw new ApiError('unsupported_feature', 'Screens have no first-party identities to match an audience against: the people in front of a screen are counted and measured as a crowd (FEIN), never identified. Target what screens measure instead: venue types, places and dayparts in get_products briefs, and live-audience conditions (min_attention, emotion, min_vas) on campaigns.', { param: 'audiences' })
}
