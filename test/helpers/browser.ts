import { chromium, type Browser } from 'playwright-core'
import { chromiumLaunchOptions } from './chromium.js'

/** Headless Chromium (chromium.ts says which), closed at teardown. Autoplay is allowed: a signage screen has no user to click. */
export async function startBrowser (t: { teardown (fn: () => unknown): void }): Promise<Browser> {
  const { executablePath, args } = await chromiumLaunchOptions()
  const browser = await chromium.launch({ executablePath, args: [...args, '--autoplay-policy=no-user-gesture-required'] })
  t.teardown(() => browser.close())
  return browser
}
