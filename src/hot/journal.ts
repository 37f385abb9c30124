import { join } from 'node:path'
import { applyIntakes, type BidIntake, type IntakeDeps } from '../bidding/intake.js'
import { applySpots, type SpotWrite } from '../player/feed.js'
import { Journal, recoverJournals } from '../store/journal.js'

/**
 * What a hot thread's journal holds (src/store/journal.ts): a bid response's intake, or the writes of a spot decision
 * that settles nothing (the spot and its funnel event). One journal per thread, so a turn's bids and spots share one
 * transaction.
 */
export type HotEntry = { bid: BidIntake } | { spot: SpotWrite }

/** Applies a batch: each domain's entries in order and in one call (a seat's hour of stats is then written once). */
function applyEntries (deps: IntakeDeps, entries: readonly HotEntry[]): void {
  const bids: BidIntake[] = []
  const spots: SpotWrite[] = []
  for (const entry of entries) {
    if ('bid' in entry) bids.push(entry.bid)
    else spots.push(entry.spot)
  }
  // Bids and spots touch different records (a journaled spot settles no bid), so their order between them is free.
  if (bids.length > 0) applyIntakes(deps, bids)
  if (spots.length > 0) applySpots(deps, spots)
}

function journalDir (dataDir: string): string {
  return join(dataDir, 'journal')
}

/** A hot thread's journal (owner names its files), after replaying what a thread before it left unapplied. */
export function openHotJournal (deps: IntakeDeps, dataDir: string, durability: 'os' | 'fsync', owner: string): Journal<HotEntry> {
  recoverHotJournals(deps, dataDir, owner)
  return new Journal<HotEntry>({
    store: deps.store,
    dir: journalDir(dataDir),
    owner,
    apply: (entries) => applyEntries(deps, entries),
    fsync: durability === 'fsync',
    counted: (how) => deps.metrics.inc('oohbid_journal_entries_total', 'Bid responses and spot decisions made durable: committed at once (applied="at_once") or appended to the hot thread\'s journal and applied with the rest of their turn (applied="journaled").', `applied="${how}"`, 1)
  })
}

/** Applies what journals hold and LMDB does not: every owner's at a start, one owner's when its thread is replaced. */
export function recoverHotJournals (deps: IntakeDeps, dataDir: string, owner?: string): number {
  return recoverJournals(deps.store, journalDir(dataDir), (entries: readonly HotEntry[]) => applyEntries(deps, entries), owner)
}
