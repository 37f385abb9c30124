/**
 * Compares two strings without an early exit, for signatures and tags. Comparing the text, not decoded bytes, also
 * refuses non-canonical base64 spellings of a valid tag (the unused low bits of the last character), so a token has
 * exactly one valid form.
 */
export function sameText (given: string, expected: string): boolean {
  if (given.length !== expected.length) return false
  let diff = 0
  for (let i = 0; i < expected.length; i++) diff |= given.charCodeAt(i) ^ expected.charCodeAt(i)
  return diff === 0
}
