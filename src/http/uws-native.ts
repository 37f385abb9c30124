import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'

/**
 * Why uWebSockets.js would run on its JavaScript stand-in here, or undefined when its native build loads. The build
 * we use ships native binaries for Node 16, 18 and 20 only; on any other Node its loader prints a warning and returns a
 * stand-in that fails on the first request ("Not implemented at HttpRequest.forEach"). This asks the same question
 * the loader does (does this Node's binary load?) before anything imports it, so that the service can refuse to start
 * with one line instead.
 */
export function uwsStandInReason (): string | undefined {
  if (/^(true|1)$/i.test(process.env.UWS_USE_FALLBACK ?? '')) {
    return 'UWS_USE_FALLBACK asks uWebSockets.js for its JavaScript stand-in, which cannot serve requests; unset it'
  }
  const require = createRequire(import.meta.url)
  const binary = join(dirname(require.resolve('uWebSockets.js/package.json')), 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`)
  try {
    require(binary)
    return undefined
  } catch (err) {
    const why = (err instanceof Error ? err.message : String(err)).split('\n')[0]
    return `uWebSockets.js has no native build that loads on Node ${process.version} (${process.platform}-${process.arch}, module ABI ${process.versions.modules}): ${why}. Its builds cover Node 16, 18 and 20; run oohbid on Node 20`
  }
}
