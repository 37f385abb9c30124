import { existsSync } from 'node:fs'
import { required } from './required.js'

/**
 * Flags of the packaged build (made for serverless functions) that would change what the player page is tested under:
 * web security and site isolation off, and one process, where a closing page's last beacon (leave) is not sent.
 */
const UNSAFE = new Set(['--disable-web-security', '--allow-running-insecure-content', '--disable-site-isolation-trials', '--single-process'])

/**
 * Where Chromium is and how to start it headless: CHROMIUM_PATH, else Debian's package when installed, else the build
 * that @sparticuz/chromium ships inside its npm package (unpacked to /tmp on first use), so that `npm ci && npm test`
 * needs no apt step. Both play H.264 MP4 and VP8/VP9 WebM. Where .ci/run requires the chromium suite (it installs
 * Debian's), the packaged build does not stand in for it.
 */
export async function chromiumLaunchOptions (): Promise<{ executablePath: string, args: string[] }> {
  const quiet = ['--disable-background-networking', '--disable-component-update']
  const installed = process.env.CHROMIUM_PATH ?? (existsSync('/usr/bin/chromium') ? '/usr/bin/chromium' : undefined)
  if (installed !== undefined) return { executablePath: installed, args: ['--headless', '--no-sandbox', '--disable-gpu', ...quiet] }
  if (required('chromium')) throw new Error('the chromium suite must run on an installed Chromium here (OOHBID_TEST_REQUIRE), but /usr/bin/chromium is missing and CHROMIUM_PATH is not set')
  const { default: packaged } = await import('@sparticuz/chromium')
  return { executablePath: await packaged.executablePath(), args: [...packaged.args.filter((a) => !UNSAFE.has(a)), ...quiet] }
}
