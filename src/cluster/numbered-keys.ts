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
