// The player feed's storage shapes: spots taken by screens and how they were decided, and the tables that hold them.
import type { StoredBid } from '../bidding/records.js'
import { table } from '../store/table.js'

/** Where a spot came from, in waterfall order. closed: outside operating hours, nothing plays. */
export type Tier = 'guaranteed' | 'preferred' | 'pmp' | 'open_auction' | 'house' | 'closed'

/** A spot the waterfall gave a screen's player, kept until its play is reported (and then for the proof). */
export interface SpotRecord {
  spot_id: string
  screen_id: string
  tier: Tier
  decided_at: number
  starts_at: number
  duration_seconds: number
  status: 'served' | 'started' | 'completed'
  creative_id?: string
  adm?: string
  seat_id?: string
  assignment_id?: string
  campaign_id?: string
  deal_id?: string
  /** A priced placement's CPM: what its play is charged to its campaign (fixed, or the auction's clearing price). */
  cpm?: number
  /** The winning bid: what the play is billed at and whom to tell. */
  bid?: StoredBid & { clearing: number }
  started_at?: number
  completed_at?: number
  /** Impressions the play counted (imp.qty.multiplier confirmed at render: live faces, at most what was offered). */
  multiplier?: number
  cost_micros?: number
}

/** The player domain's tables (src/store/tables.ts). */
export const playerTables = {
  /** spot_id -> the spot a player was given. */
  spots: table<SpotRecord>({ name: 'spots', shapes: true, replication: 'local', owners: ['src/player/'] }),
  /** [screen_id, local date, line] -> spots served today for an assignment or deal line: its pacing. */
  plays: table<number, [string, string, string]>({ name: 'plays', ordered: true, replication: 'local', owners: ['src/player/'] })
}
