/** The destination's published name, matched case-sensitively (REFERENCE §2). */
export const destinationName = "Webhooks"

const isEnabledValue = (value: unknown): boolean => value === true || (typeof value === "object" && value !== null)

/**
 * Whether a message's `integrations` object lets it reach the webhook destination: on by
 * default; `"Webhooks": false` turns it off; `"All": false` turns it off unless `"Webhooks"` is
 * `true` or a settings object.
 */
export const selectsWebhooks = (integrations: Readonly<Record<string, unknown>> | undefined): boolean => {
  if (integrations === undefined) return true
  const own = integrations[destinationName]
  if (own === false) return false
  if (isEnabledValue(own)) return true
  return integrations.All !== false
}
