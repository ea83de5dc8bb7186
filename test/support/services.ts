/**
 * A test that needs a service this machine lacks is skipped with the reason printed; under CI (`CI=true`) it fails
 * instead, so that a CI run cannot pass with half the suite skipped.
 */
export const skipUnlessCi = (what: string, reason: string | undefined): boolean => {
  if (reason === undefined) return false
  if (process.env.CI !== undefined && process.env.CI !== "" && process.env.CI !== "false") {
    throw new Error(`${what} cannot run under CI: ${reason}`)
  }
  console.warn(`skipping ${what}: ${reason}`)
  return true
}
