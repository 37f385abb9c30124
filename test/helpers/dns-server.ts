import { createSocket } from 'node:dgram'
import type { AddressInfo } from 'node:net'
import dnsPacket from 'dns-packet'

export interface DnsServer {
  /** host:port, as DNS_SERVERS takes it. */
  address: string
  /** What each name resolves to now (A and AAAA answers by the address's form); change it to rebind a name. */
  records: Map<string, string[]>
  /** How many questions each name got. */
  asked: Map<string, number>
}

/** A real DNS server on loopback UDP answering from a table: names that resolve wherever a test needs them. */
export async function startDnsServer (t: { teardown (fn: () => unknown): void }, records: Record<string, string[]>): Promise<DnsServer> {
  const table = new Map(Object.entries(records))
  const asked = new Map<string, number>()
  const socket = createSocket('udp4')
  socket.on('message', (msg, peer) => {
    const query = dnsPacket.decode(msg)
    const question = query.questions?.[0]
    if (question === undefined) return
    asked.set(question.name, (asked.get(question.name) ?? 0) + 1)
    const wanted = question.type === 'AAAA' ? (a: string) => a.includes(':') : (a: string) => !a.includes(':')
    const answers = (table.get(question.name) ?? []).filter(wanted).map((data) => ({ type: question.type as 'A', name: question.name, ttl: 0, data }))
    const reply = dnsPacket.encode({ id: query.id, type: 'response', flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE, questions: [question], answers })
    socket.send(reply, peer.port, peer.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => socket.close(() => resolve())))
  return { address: `127.0.0.1:${(socket.address() as AddressInfo).port}`, records: table, asked }
}
