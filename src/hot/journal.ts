import { join } from 'node:path'
import type { ScreenClaims } from '../bidding/auction/claims.js'
import { applyIntakes, type BidIntake, type IntakeDeps } from '../bidding/intake.js'
import { applySpots, type SpotWrite } from '../player/feed.js'
import { Journal, recoverJournals } from '../store/journal.js'
import type { JournalTurns } from '../store/journal-turns.js'

/**
 * What a hot thread's journal holds (src/store/journal.ts): a bid response's intake, or the writes of a spot decision
 * (the spot, its funnel event, what it settled). One journal per thread, so a turn's bids and spots share one
 * transaction.
 */
export type HotEntry = { bid: BidIntake } | { spot: SpotWrite }

/** What applying entries writes to, and the screens' claims that a spot's applied writes end. */
export type HotJournalDeps = IntakeDeps & { claims: ScreenClaims }

/** Applies a batch: each domain's entries in order and in one call (a seat's hour of stats is then written once). */
function applyEntries (deps: HotJournalDeps, entries: readonly HotEntry[], replay: boolean): void {
  const bids: BidIntake[] = []
  const spots: SpotWrite[] = []
  for (const entry of entries) {
    if ('bid' in entry) bids.push(entry.bid)
    else spots.push(entry.spot)
  }
  // Their order is free: a settlement takes a bid out of the book only if it is still the one decided on, so a bid its
  // seat sent again for the same imp meanwhile stays for the screen's next decision, whichever is applied first.
  if (bids.length > 0) applyIntakes(deps, bids)
  if (spots.length > 0) applySpots(deps, spots, replay)
}

function journalDir (dataDir: string): string {
  return join(dataDir, 'journal')
}

/** A hot thread's journal (owner names its files), after replaying what a thread before it left unapplied. */
export function openHotJournal (deps: HotJournalDeps, dataDir: string, durability: 'os' | 'fsync', owner: string, turns: JournalTurns): Journal<HotEntry> {
  recoverHotJournals(deps, dataDir, owner)
  return new Journal<HotEntry>({
    store: deps.store,
    turns,
    dir: journalDir(dataDir),
    owner,
    apply: (entries) => applyEntries(deps, entries, false),
    fsync: durability === 'fsync',
    // Stored bids, creatives a markup registers and a key's seal are replicated, and so is a settled bid's removal.
    replicates: (entry) => 'bid' in entry ? entry.bid.stored.length > 0 || entry.bid.register.length > 0 || entry.bid.seal !== undefined : (entry.spot.settled?.taken.length ?? 0) > 0,
    counted: (how) => deps.metrics.inc('oohbid_journal_entries_total', 'Bid responses and spot decisions made durable: committed at once (applied="at_once"), appended to the hot thread\'s journal and applied with the rest of their turn (applied="journaled"), or, on a cluster node, applied with their turn and answered once the engine holds them (applied="engine").', `applied="${how}"`, 1)
  })
}

/** Applies what journals hold and LMDB does not: every owner's at a start, one owner's when its thread is replaced. */
export function recoverHotJournals (deps: HotJournalDeps, dataDir: string, owner?: string): number {
  return recoverJournals(deps.store, journalDir(dataDir), (entries: readonly HotEntry[]) => applyEntries(deps, entries, true), owner)
}
