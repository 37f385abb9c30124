/**
 * Why the service will not start, for the operator to fix (a data directory or port another process holds): main
 * prints the message alone, without a stack trace, and exits 1.
 */
export class StartRefused extends Error {
  override readonly name = 'StartRefused'
}
