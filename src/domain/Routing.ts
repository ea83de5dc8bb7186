import { dropsMessage } from "./Filters.js"
import { selectsWebhooks } from "./Integrations.js"
import type { Message } from "./Message.js"
import type { WebhookSettings } from "./Settings.js"

/**
 * Why an accepted message creates no delivery job; `undefined` when it is to be delivered.
 * `filtered`: a destination filter dropped it (counted as `filtered` in usage, REFERENCE §10, §11).
 */
export type SkipReason = "no-destination" | "disabled" | "integrations" | "filtered"

/** Decides whether an accepted message goes to the source's webhook destination (REFERENCE §1, §2, §10). */
export const skipReason = (settings: WebhookSettings | undefined, message: Message): SkipReason | undefined => {
  if (settings === undefined) return "no-destination"
  if (!settings.enabled) return "disabled"
  if (!selectsWebhooks(message.integrations)) return "integrations"
  if (dropsMessage(settings.filters, message)) return "filtered"
  return undefined
}
