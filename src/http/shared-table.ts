/** Slots looked at from a key's home slot before the oldest of them is taken over. */
const MAX_PROBE = 32

/** FNV-1a over the string's UTF-16 code units; never 0, which marks an empty slot. */
export function fnv (s: string, seed: number): number {
  let h = seed
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619)
  return h === 0 ? 1 : h
}

/**
 * A fixed-size hash table in shared memory, so that every hot thread reads and changes the same entries: rate-limit
 * windows, idempotency keys in flight. A key is known by two 32-bit hashes (a false match needs a 64-bit collision);
 * each slot holds `width` numbers, the first of them the entry's time, by which the oldest entry is taken over when a
 * key's probe window is full. One spin lock guards the table: every change is a handful of array writes, far shorter
 * than the time a thread would spend parking.
 */
export class SharedTable {
  readonly buffer: SharedArrayBuffer
  readonly #lock: Int32Array
  readonly #keys: Int32Array
  readonly #values: Float64Array
  readonly #mask: number
  readonly #width: number

  /** slots: a power of two. buffer: another thread's table (of the same slots and width) to share. */
  constructor (slots: number, width: number, buffer = new SharedArrayBuffer(8 + slots * 8 + slots * width * 8)) {
    this.buffer = buffer
    this.#lock = new Int32Array(buffer, 0, 1)
    this.#keys = new Int32Array(buffer, 8, slots * 2)
    this.#values = new Float64Array(buffer, 8 + slots * 8, slots * width)
    this.#mask = slots - 1
    this.#width = width
  }

  /**
   * Runs fn under the lock on the key's values (values[base] .. values[base + width - 1]). An entry that `dead` says
   * is over counts as free; fresh is true when the key had no live entry, whose values fn then sets.
   */
  with<T> (key: string, dead: (values: Float64Array, base: number) => boolean, fn: (values: Float64Array, base: number, fresh: boolean) => T): T {
    const h1 = fnv(key, 0x811c9dc5)
    const h2 = fnv(key, 0x01000193)
    while (Atomics.compareExchange(this.#lock, 0, 0, 1) !== 0);
    try {
      let free = -1
      let oldest = -1
      for (let i = 0; i < MAX_PROBE; i++) {
        const slot = (h1 + i) & this.#mask
        const k = this.#keys[slot * 2]!
        const base = slot * this.#width
        if (k === 0) {
          if (free === -1) free = slot
          break
        }
        if (k === h1 && this.#keys[slot * 2 + 1] === h2) {
          if (!dead(this.#values, base)) return fn(this.#values, base, false)
          if (free === -1) free = slot
          continue
        }
        if (free === -1 && dead(this.#values, base)) free = slot
        if (oldest === -1 || this.#values[base]! < this.#values[oldest * this.#width]!) oldest = slot
      }
      const slot = free !== -1 ? free : oldest
      this.#keys[slot * 2] = h1
      this.#keys[slot * 2 + 1] = h2
      return fn(this.#values, slot * this.#width, true)
    } finally {
      Atomics.store(this.#lock, 0, 0)
    }
  }

  /** Runs fn under the lock on the values of every slot a key has taken (live or not). */
  each (fn: (values: Float64Array, base: number) => void): void {
    while (Atomics.compareExchange(this.#lock, 0, 0, 1) !== 0);
    try {
      for (let slot = 0; slot <= this.#mask; slot++) if (this.#keys[slot * 2] !== 0) fn(this.#values, slot * this.#width)
    } finally {
      Atomics.store(this.#lock, 0, 0)
    }
  }
}
