// Notices' storage shape: a win, loss or billing notice or legacy notification waiting to be sent, and the table that
// holds them.
import { table } from '../store/table.js'

/**
 * An outbound notice: an OpenRTB nurl, lurl or burl (GET), a legacy win/loss notification, a webhook delivery or a
 * media buy's delivery report (signed POSTs). A webhook delivery's id is its delivery id (del_...).
 */
export interface NoticeRecord {
  id: string
  kind: 'nurl' | 'lurl' | 'burl' | 'legacy' | 'webhook' | 'report'
  url: string
  seat_id?: string
  /** legacy and webhook: the event name. */
  event?: string
  /** legacy: the JSON body. webhook: the JSON of its data; the envelope is built at each attempt, with its delivered_at. */
  body?: string
  /** legacy: the key that signs it when it is sent. */
  key_id?: string
  /** webhook: the subscription; absent for a delivery to the seat's webhook_url (signed with the seat's API key). */
  webhook_id?: string
  /** report: the media buy whose reporting webhook it goes to (its credentials sign it). */
  media_buy_id?: string
  attempts: number
  created_at: number
}

/** The notices' table (src/store/tables.ts). */
export const notifyTables = {
  /** [receiver origin, due ms, notice id] -> an outbound notice waiting for its (next) attempt. */
  notices: table<NoticeRecord, [string, number, string]>({ name: 'notices', ordered: true, shapes: true, replication: 'local', owners: ['src/notify/'] }),
  /**
   * [settlement key, n] -> a notice of a settlement that counts only once its partition's log accepts it (a cluster
   * node's spot decision), with when it was decided: queued on acceptance, dropped on refusal (Notices.hold).
   */
  heldNotices: table<HeldNotice, [string, number]>({ name: 'held_notices', ordered: true, replication: 'local', owners: ['src/notify/'] })
}

/** What a caller says about a notice; the queue adds its id, attempt count and time. */
export type NoticeDraft = Omit<NoticeRecord, 'id' | 'attempts' | 'created_at'>

/** A notice waiting for its settlement's verdict: what the queue is given then, and the decision's time. */
export interface HeldNotice {
  draft: NoticeDraft
  at: number
}
