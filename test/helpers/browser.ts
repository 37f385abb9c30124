import { chromium, type Browser } from 'playwright-core'

/** Headless Chromium (Debian's package), closed at teardown. Autoplay is allowed: a signage screen has no user to click. */
export async function startBrowser (t: { teardown (fn: () => unknown): void }): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--autoplay-policy=no-user-gesture-required']
  })
  t.teardown(() => browser.close())
  return browser
}
