import { ApiError } from '../errors.js'

/**
 * The longest path parameter any route accepts, in characters after decoding. Every id the service mints or accepts
 * is shorter (device_id is at most 128, tokens under 100), and LMDB refuses keys over 1978 bytes: a longer parameter
 * can name nothing, so it is refused before it reaches a lookup.
 */
export const MAX_PATH_PARAM_LENGTH = 256

/**
 * Decodes a route's path parameters (uWS hands them percent-encoded) and bounds their length. A malformed escape
 * (`%`, `%zz`, an overlong or surrogate UTF-8 sequence such as `%C0%AF` or `%ED%A0%80`) is the client's mistake and
 * answers 400 invalid_parameter naming the parameter, never an exception out of the request.
 */
export function decodePathParams (names: readonly string[], raw: readonly string[]): Record<string, string> {
  const params: Record<string, string> = {}
  for (let i = 0; i < names.length; i++) {
    const name = names[i]!
    const text = raw[i] ?? ''
    // No character takes more than 12 characters of escapes, so a longer raw text is refused without decoding it.
    if (text.length > MAX_PATH_PARAM_LENGTH * 12) throw tooLong(name)
    let value: string
    try {
      value = decodeURIComponent(text)
    } catch {
      throw new ApiError('invalid_parameter', `The path parameter ${name} is not valid percent-encoded UTF-8.`, { param: name })
    }
    if (value.length > MAX_PATH_PARAM_LENGTH) throw tooLong(name)
    params[name] = value
  }
  return params
}

function tooLong (name: string): ApiError {
  return new ApiError('invalid_parameter', `The path parameter ${name} is longer than ${MAX_PATH_PARAM_LENGTH} characters; no ${name} is that long.`, { param: name })
}

/**
 * The longest query value any route accepts, in characters. The longest any route documents is a 500-character
 * cursor; values reach range reads as keys, which LMDB cannot read past about 4 KB (three bytes per character here).
 */
export const MAX_QUERY_VALUE_LENGTH = 1024

/** Refuses a query whose name or value is longer than any route takes: 400 invalid_parameter naming it. */
export function checkQueryLengths (query: URLSearchParams): void {
  for (const [name, value] of query) {
    if (value.length > MAX_QUERY_VALUE_LENGTH || name.length > MAX_QUERY_VALUE_LENGTH) {
      throw new ApiError('invalid_parameter', `The query parameter ${name.slice(0, 64)} is longer than ${MAX_QUERY_VALUE_LENGTH} characters.`, { param: name.slice(0, 64) })
    }
  }
}
