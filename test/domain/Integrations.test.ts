import { describe, expect, it } from "@effect/vitest"
import { selectsWebhooks } from "../../src/domain/Integrations.js"

describe("selectsWebhooks (REFERENCE §2 selecting destinations)", () => {
  it.each([
    [undefined, true],
    [{}, true],
    [{ All: true }, true],
    [{ Webhooks: false }, false],
    [{ All: true, Webhooks: false }, false],
    [{ All: false }, false],
    [{ All: false, Webhooks: true }, true],
    [{ All: false, Webhooks: { url: "x" } }, true],
    [{ All: false, webhooks: true }, false],
    [{ webhooks: false }, true],
    [{ "Google Analytics": false }, true]
  ])("%j → %s", (integrations, expected) => {
    expect(selectsWebhooks(integrations)).toBe(expected)
  })
})
