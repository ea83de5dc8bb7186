import { existsSync } from "node:fs"
import { chromium } from "playwright-core"

/** Debian's Chromium, which `.ci/run` installs; the browser tests are skipped with a printed reason without it. */
export const chromiumPath = "/usr/bin/chromium"

/** Whether the browser tests can run; prints why not when they cannot. */
export const chromiumAvailable = (what: string): boolean => {
  const available = existsSync(chromiumPath)
  if (!available) console.log(`skipping ${what}: ${chromiumPath} is missing (apt-get install chromium)`)
  return available
}

/**
 * Headless Chromium as this machine can run it: without the background-networking flags it tries to reach Google's
 * hosts at every start, and this machine's closed network refuses them.
 */
export const launchChromium = (extraArgs: ReadonlyArray<string> = []) =>
  chromium.launch({
    executablePath: chromiumPath,
    args: [
      ...extraArgs,
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync"
    ]
  })
