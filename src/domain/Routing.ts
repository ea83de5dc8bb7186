import { selectsWebhooks } from "./Integrations.js"
import type { Message } from "./Message.js"
import type { WebhookSettings } from "./Settings.js"

/** Why an accepted message creates no delivery job; `undefined` when it is to be delivered. */
export type SkipReason = "no-destination" | "disabled" | "integrations"

/** Decides whether an accepted message goes to the source's webhook destination (SPEC §1, §2). */
export const skipReason = (settings: WebhookSettings | undefined, message: Message): SkipReason | undefined => {
  if (settings === undefined) return "no-destination"
  if (!settings.enabled) return "disabled"
  if (!selectsWebhooks(message.integrations)) return "integrations"
  return undefined
}
