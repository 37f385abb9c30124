/**
 * The record a cluster node locks (RouteDef.exclusive) to book screen time or rewrite a campaign, placement,
 * reservation, deal or media buy: one lock for the whole catalog. A booking reads the spots booked per screen and day
 * and writes them back, and one Guaranteed deal books up to 10,000 screens over every day of its flight at once, so a
 * lock per screen and day would be thousands of engine round trips a booking, taken in an order two bookings could
 * deadlock on. The catalog's time-driven moves (holds expiring, campaigns following their dates, deals ending) take the
 * same lock, so each happens, and raises its event, once; a campaign's pause through one node and its dated move on
 * another cannot write over each other. Bookings are an operator's, a buyer's or an agent's acts, not the hot path:
 * one at a time cluster-wide is their rate (docs/architecture.md measures it).
 */
export function catalogRecord (): string {
  return 'catalog'
}
