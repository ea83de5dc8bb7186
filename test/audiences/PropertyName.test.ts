import { describe, expect, it } from "@effect/vitest"
import { audiencePropertyName } from "../../src/audiences/PropertyName.js"

describe("audiencePropertyName (REFERENCE §6)", () => {
  it.each([
    ["High Value Users", "high_value_users"],
    ["PowerUsers", "power_users"],
    ["VIP", "vip"],
    ["churn-risk (30d)", "churn_risk_30d"],
    ["  trailing  ", "trailing"],
    ["already_snake_case", "already_snake_case"],
    ["HTTPServer Fans", "http_server_fans"],
    ["cartAbandoners2024", "cart_abandoners2024"],
    ["Käufer im Mai", "käufer_im_mai"]
  ])("%j → %j", (name, expected) => {
    expect(audiencePropertyName(name)).toBe(expected)
  })
})
