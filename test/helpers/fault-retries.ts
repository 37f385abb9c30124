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

/**
 * Starts one client a node, each taking steps n = 0, 1, ... (below `steps`) one after the other, 50-150 ms apart, so
 * that the clients on different nodes act at about the same time. Until the steps run out or stop(), which resolves
 * once every client has had its last answer.
 */
export function nodeClients<N extends { id: string, url: string }> (nodes: N[], step: (node: N, n: number) => Promise<unknown>, steps = Infinity): { stop: () => Promise<void> } {
  let stopped = false
  const client = async (node: N, n = 0): Promise<void> => {
    if (stopped || n === steps) return
    await step(node, n)
    await pause(50 + Math.random() * 100)
    await client(node, n + 1)
  }
  const clients = nodes.map(async (node) => await client(node))
  return {
    stop: async () => {
      stopped = true
      await Promise.all(clients)
    }
  }
}
