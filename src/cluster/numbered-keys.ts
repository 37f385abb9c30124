import type { KV } from 'nats'

// Exclusive holds in a KV bucket made of creates of fresh keys only: a name's holds are numbered, the holder of hold n
// created `<base>.<n>` and gives it back by creating `<base>.<n>.r`, and the next holder creates `<base>.<n + 1>`.
// Deleting a key and creating it again would be simpler, but re-creating a deleted key is a write that expects the
// delete marker's revision, and nats-server 2.9's clustered streams let concurrent writes expecting one revision all
// succeed (three clients adding 1 to a value by compare-and-set 600 times ended at 524; two nodes took one lock),
// while concurrent creates of a fresh key keep one winner (600 creates of 200 keys by three clients: 200 won).

/** JetStream's "wrong last sequence": the key exists (a create lost). */
const isWrongLastSequence = (err: unknown): boolean => (err as { api_error?: { err_code?: number } }).api_error?.err_code === 10071

/** The newest hold of base: its number, its value, and whether it was given back; undefined before the first. */
export async function newestHold (kv: KV, base: string): Promise<{ n: number, value: string, released: boolean } | undefined> {
  let last: number | undefined
  const given = new Set<number>()
  for await (const key of await kv.keys(`${base}.>`)) {
    const [n, r] = key.slice(base.length + 1).split('.')
    const number = Number(n)
    if (r === 'r') given.add(number)
    else if (last === undefined || number > last) last = number
  }
  if (last === undefined) return undefined
  const entry = await kv.get(`${base}.${last}`)
  return { n: last, value: entry?.string() ?? '', released: given.has(last) }
}

/** Creates hold n of base with value: true when this call made it, false when another did first. */
export async function createHold (kv: KV, base: string, n: number, value: Uint8Array): Promise<boolean> {
  try {
    await kv.create(`${base}.${n}`, value)
    return true
  } catch (err) {
    if (isWrongLastSequence(err)) return false
    throw err
  }
}

/** Gives hold n of base back (a fresh key, so it needs no revision). */
export async function releaseHold (kv: KV, base: string, n: number): Promise<void> {
  try {
    await kv.create(`${base}.${n}.r`, new Uint8Array())
  } catch (err) {
    if (!isWrongLastSequence(err)) throw err
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
