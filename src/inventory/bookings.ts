/** Spots of a screen on a date that something has already taken (a confirmed placement, a held reservation, a deal). */
export type BookedSpots = (screenId: string, date: string) => number

/**
 * Where availability learns what is booked. Each kind of booking registers its own counter here (placements,
 * reservations and guaranteed deals as they are built), so availability never needs to know them.
 */
export class Bookings {
  readonly #sources: BookedSpots[] = []

  register (source: BookedSpots): void {
    this.#sources.push(source)
  }

  bookedOn (screenId: string, date: string): number {
    let n = 0
    for (const s of this.#sources) n += s(screenId, date)
    return n
  }
}
