import { seatItems } from '../accounts/seat-lists.js'
import { schemas } from '../generated/schemas.js'
import type { OutboxEvent } from '../store/records.js'
import type { WebhookRecord } from './records.js'
import type { Store } from '../store/store.js'

const SUBSCRIBABLE: ReadonlySet<string> = new Set(schemas.WebhookEventType.enum)
const GENERAL: ReadonlySet<string> = new Set(schemas.GeneralEventType.enum)

/** A subscription with its health as its deliveries left it, or undefined when there is none (or it was removed). */
export function subscriptionOf (store: Store, webhookId: string): WebhookRecord | undefined {
  const w = store.webhooks.get(webhookId)
  if (w === undefined) return undefined
  const health = store.webhookHealth.get(webhookId)
  return health === undefined ? w : { ...w, ...health }
}

/** A seat's webhook subscriptions, newest first. */
export function seatWebhooks (store: Store, seatId: string): WebhookRecord[] {
  return seatItems(store, 'webhook', seatId, (id) => subscriptionOf(store, id))
}

/** One endpoint an event goes to: a subscription, or the seat's webhook_url (webhookId undefined). */
export interface Recipient {
  seatId: string
  url: string
  webhookId?: string
}

/**
 * The seats an event concerns: the seat that owns its subject (the outbox event's seat_id). Screens belong to
 * partners, so screen.online and screen.offline go to the seats whose assignments play on the screen and have not
 * ended; deal changes go to the proposing seat and every invited seat.
 */
function seatsOf (store: Store, event: OutboxEvent): string[] {
  if (event.type.startsWith('screen.')) {
    const screenId = String(event.data.screen_id)
    const today = event.at.slice(0, 10)
    const seats = new Set<string>()
    for (const { value } of store.placements.getRange({ start: [screenId], end: [screenId + '\u0000'] } as never)) {
      const a = store.assignments.get(value)
      if (a !== undefined && a.status === 'active' && a.end_date >= today) seats.add(a.seat_id)
    }
    return [...seats]
  }
  if (event.type.startsWith('deal.')) {
    const d = store.deals.get(String(event.data.deal_id))
    return d === undefined ? [] : [...new Set([d.proposed_by ?? '', ...d.invited_seats].filter((s) => s !== ''))]
  }
  return event.seat_id !== undefined ? [event.seat_id] : []
}

/**
 * Every endpoint an event is delivered to: each active subscription of a concerned seat that asked for the event and
 * existed when it happened, and the seat's webhook_url for the general events. Revoked seats get nothing.
 */
export function recipients (store: Store, event: OutboxEvent): Recipient[] {
  const subscribable = SUBSCRIBABLE.has(event.type)
  const general = GENERAL.has(event.type)
  if (!subscribable && !general) return []
  const out: Recipient[] = []
  for (const seatId of seatsOf(store, event)) {
    const seat = store.seats.get(seatId.toLowerCase())
    if (seat === undefined || seat.status === 'revoked') continue
    if (general && seat.webhook_url !== undefined) out.push({ seatId: seat.seat_id, url: seat.webhook_url })
    if (!subscribable) continue
    for (const w of seatWebhooks(store, seat.seat_id)) {
      if (w.status === 'active' && w.created_at <= event.at && (w.events as string[]).includes(event.type)) out.push({ seatId: seat.seat_id, url: w.url, webhookId: w.webhook_id })
    }
  }
  return out
}
