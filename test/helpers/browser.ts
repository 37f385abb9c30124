import { chromium, type Browser } from 'playwright-core'
import { chromiumLaunchOptions } from './chromium.js'

/**
 * Headless Chromium (chromium.ts says which), closed at teardown. Autoplay is allowed: a signage screen has no user to
 * click. The browser is the screen, a device with a clock of its own: it is started without a preloaded library, so
 * that a suite run under faketime (README, Tests) shifts the service and the tests but not the screens, whose player
 * corrects for a wrong clock. (Chromium crashes under libfaketime's FAKETIME_SKIP_CMDS and crawls under its clock.)
 */
export async function startBrowser (t: { teardown (fn: () => unknown): void }): Promise<Browser> {
  const { executablePath, args } = await chromiumLaunchOptions()
  const { LD_PRELOAD: _, ...env } = process.env
  const browser = await chromium.launch({ executablePath, args: [...args, '--autoplay-policy=no-user-gesture-required'], env })
  t.teardown(() => browser.close())
  return browser
}
