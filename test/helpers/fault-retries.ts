import { outcomeOf, type Answer, type History } from '../../scripts/lib/faults/history.js'
import { pause } from './eventually.js'

/**
 * Runs a client's operation through the history and, while its outcome is unknown (no answer, a 5xx, 409
 * idempotency_key_in_use), sends the same request again (its Idempotency-Key with it) up to `left` more times, a
 * second apart, as a careful client does. Every attempt is an operation of the history; answers the last answer.
 */
export async function untilKnown<A> (history: History, client: string, node: string, f: string, args: A, send: () => Promise<Answer>, left: number): Promise<Answer | undefined> {
  const r = await history.run(client, node, f, args, send)
  if (left === 0 || (r !== undefined && outcomeOf(r) !== 'unknown')) return r
  await pause(1000)
  return await untilKnown(history, client, node, f, args, send, left - 1)
}
