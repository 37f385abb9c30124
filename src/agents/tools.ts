import type { SeatRecord } from '../accounts/records.js'
import type { SchemaTitle } from '../generated/schemas.js'
import type { Outbox } from '../store/outbox.js'
import type { Store } from '../store/store.js'
import { capabilities } from './capabilities.js'

/** What a tool call runs with: the calling seat and key, the clock reading of the request, and the store. */
export interface ToolCall {
  store: Store
  outbox: Outbox
  seat: SeatRecord
  keyId: string
  now: number
  /** ?dry_run=true: the tools run their checks and answer, and nothing they would record is kept. */
  dryRun: boolean
}

/** An AdCP task offered as an MCP tool: its input schema (in schemas/) and what it answers. */
export interface Tool {
  name: string
  description: string
  input: SchemaTitle
  run (call: ToolCall, args: Record<string, unknown>): Record<string, unknown>
}

/** The AdCP media-buy tasks this sales agent offers, in the order tools/list gives them. */
export const TOOLS: Tool[] = [
  {
    name: 'get_adcp_capabilities',
    description: 'What this DOOH sales agent supports: AdCP version, protocols (media_buy), pricing (CPM per 1,000 impressions, DOOH multipliers), reporting, creative specs and targeting.',
    input: 'AdcpCapabilitiesRequest',
    run: (call, args) => ({ ...capabilities(call.seat), ...(args.context !== undefined ? { context: args.context } : {}) })
  }
]
