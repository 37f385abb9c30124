import { MessageChannel, type MessagePort } from 'node:worker_threads'
import t from 'tap'
import { Rpc, type Port } from './rpc.js'

/** Two ends of a channel declared as the supervisor's and a thread's are (src/hot/operations.ts). */
interface Upper { calls: { add: (a: number, b: number) => number, fail: () => void }, notes: { said: (text: string) => void } }
interface Lower { calls: { echo: (text: string) => string }, notes: Record<never, never> }

function pair (said: string[]): { upper: Rpc<Upper, Lower>, lower: Rpc<Lower, Upper>, ports: MessagePort[] } {
  const { port1, port2 } = new MessageChannel()
  const upper = new Rpc<Upper, Lower>(port1 as unknown as Port, {
    add: async (a, b) => await Promise.resolve(a + b),
    fail: () => { throw new Error('refused here') },
    said: (text) => { said.push(text) }
  })
  const lower = new Rpc<Lower, Upper>(port2 as unknown as Port, { echo: (text) => text })
  return { upper, lower, ports: [port1, port2] }
}

t.test('a call answers with the other end\'s value or its error; a note arrives in order, unanswered', async (t) => {
  const said: string[] = []
  const { upper, lower, ports } = pair(said)
  t.teardown(() => { for (const p of ports) p.close() })
  t.equal(await lower.call('add', 2, 3), 5)
  await t.rejects(lower.call('fail'), /refused here/)
  lower.notify('said', 'one')
  lower.notify('said', 'two')
  t.equal(await upper.call('echo', 'after the notes'), 'after the notes')
  t.equal(await lower.call('add', 0, 0), 0, 'a call made after the notes is answered after them')
  t.same(said, ['one', 'two'])
  // @ts-expect-error: an operation the other end does not declare does not compile, and fails if sent anyway
  await t.rejects(lower.call('nothing'), /no handler for nothing/)
})

t.test('calls still open when the other end dies are refused, so nobody waits for ever', async (t) => {
  const { port1 } = new MessageChannel()
  t.teardown(() => port1.close())
  const lone = new Rpc<Lower, Upper>(port1 as unknown as Port, { echo: (text) => text })
  const waiting = lone.call('add', 1, 1)
  lone.closed('hot thread 1 exited')
  await t.rejects(waiting, /hot thread 1 exited/)
})
