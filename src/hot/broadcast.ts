/**
 * Answers one hot thread computed that the others should hold too (report answers, catalog pages), so that a client's
 * next request finds them whichever thread it reaches. A value is handed to every thread, its sender included, so a
 * listener keeps the newer of what it has and what it receives.
 */
export interface Broadcast {
  send (channel: string, key: string, value: unknown): void
  /** What a value sent on channel does in this thread. */
  on (channel: string, receive: (key: string, value: unknown) => void): void
}

/** A thread's Broadcast: send goes out through post; deliver is called with what arrives. */
export function broadcast (post: (channel: string, key: string, value: unknown) => void): Broadcast & { deliver (channel: string, key: string, value: unknown): void } {
  const listeners = new Map<string, (key: string, value: unknown) => void>()
  return {
    send: post,
    on (channel, receive) { listeners.set(channel, receive) },
    deliver (channel, key, value) { listeners.get(channel)?.(key, value) }
  }
}
