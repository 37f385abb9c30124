import type { KV } from 'nats'

// Numbered grants in a KV bucket made of creates of fresh keys only (the rate windows: rate-leases.ts). Re-creating a
// deleted key is a write that expects the delete marker's revision, and nats-server 2.9's clustered streams let
// concurrent writes expecting one revision all succeed (three clients adding 1 to a value by compare-and-set 600 times
// ended at 524). Creates race too: 2.9.10 checks a create's expected sequence on the leader outside the Raft write
// (nats-server issue 4320), so creates in flight at once can both win. Names, locks and budgets moved to logs for that
// reason (name-claims.ts, record-locks.ts, budget-grants.ts); a race here grants one part of a rate window twice (at
// most 10% of its limit), beside the windows' documented bounds (docs/architecture.md, "Rate windows").

/** JetStream's "wrong last sequence": the key exists (a create lost). */
const isWrongLastSequence = (err: unknown): boolean => (err as { api_error?: { err_code?: number } }).api_error?.err_code === 10071

/** Creates record n of base with value: true when this call made it, false when another did first. */
async function createHold (kv: KV, base: string, n: number, value: Uint8Array): Promise<boolean> {
  try {
    await kv.create(`${base}.${n}`, value)
    return true
  } catch (err) {
    if (isWrongLastSequence(err)) return false
    throw err
  }
}

/** What a node knows of a run of numbered grants: the next number to try, and the total through the one before it. */
export interface GrantRun { next: number, total: number }

/**
 * Takes the run's next grant of up to want, never past limit: grant n is a create of `<base>.<n>` holding the total
 * through n, which one node wins however many try; a node that loses reads the winner's total and tries n + 1. So the
 * nodes together are never granted more than the limit. Answers what this call was granted (0: the limit is reached)
 * and the total through its grant; known moves past what it learned.
 */
export async function takeGrant (kv: KV, base: string, known: GrantRun, want: number, limit: number): Promise<{ granted: number, total: number }> {
  for (;;) {
    const granted = Math.min(want, limit - known.total)
    if (granted <= 0) return { granted: 0, total: known.total }
    const n = known.next
    const total = known.total + granted
    if (await createHold(kv, base, n, new TextEncoder().encode(String(total)))) {
      // Another ask of this node's for the run may have moved past n meanwhile.
      if (known.next <= n) {
        known.next = n + 1
        known.total = total
      }
      return { granted, total }
    }
    // Another node took grant n first: its record holds the total through it.
    const entry = await kv.get(`${base}.${n}`)
    if (entry === null || entry.operation !== 'PUT') throw new Error(`grant ${n} of ${base} is taken but unreadable`)
    if (known.next <= n) {
      known.next = n + 1
      known.total = Number(entry.string())
    }
  }
}
