/** An answer of the service: its HTTP status and JSON body. */
export interface Answer {
  status: number
  body: any
}

/** One JSON call; `key` is sent as the bearer token. */
export type Call = (method: string, path: string, body?: unknown, key?: string) => Promise<Answer>

const ATTEMPTS = 5
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * JSON calls to the service at base, retried as a real device or DSP retries: a restarting service resets or refuses
 * connections and answers 5xx (backoff 1, 2, 4, 8, 16 s), and 429 says when to come back (Retry-After). After five
 * retries the last answer is returned, or the network error thrown. headers go with every call.
 */
export function apiClient (base: string, headers: Record<string, string> = {}): Call {
  return async (method, path, body, key) => {
    for (let attempt = 0; ; attempt++) {
      let res: Response
      let json: any
      try {
        res = await fetch(base + path, { method, headers: { 'content-type': 'application/json', ...headers, ...(key !== undefined ? { authorization: `Bearer ${key}` } : {}) }, ...(body !== undefined ? { body: JSON.stringify(body) } : {}) })
        json = await res.json()
      } catch (err) {
        if (attempt >= ATTEMPTS) throw err
        await pause(2 ** attempt * 1000)
        continue
      }
      if (res.status === 429 && attempt < ATTEMPTS) {
        await pause(1000 * Number(res.headers.get('retry-after') ?? 1))
        continue
      }
      if (res.status >= 500 && attempt < ATTEMPTS) {
        await pause(2 ** attempt * 1000)
        continue
      }
      return { status: res.status, body: json }
    }
  }
}
