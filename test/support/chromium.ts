import { existsSync } from "node:fs"
import { chromium } from "playwright-core"
import { skipUnlessCi } from "./services.js"

/** Debian's Chromium, which `.ci/run` installs; without it the browser tests are skipped, or fail under CI. */
export const chromiumPath = "/usr/bin/chromium"

/** Whether the browser tests can run; prints why not when they cannot, and throws under CI. */
export const chromiumAvailable = (what: string): boolean =>
  !skipUnlessCi(what, existsSync(chromiumPath) ? undefined : `${chromiumPath} is missing (apt-get install chromium)`)

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
