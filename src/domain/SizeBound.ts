/**
 * An upper bound on how many UTF-8 bytes `JSON.stringify` gives for any value parsed from a JSON text, and for a
 * message merged with batch defaults parsed from the same text; `undefined` when no cheap bound is known.
 *
 * The 32 KiB check measures each message as it serializes, which costs a second `JSON.stringify` of every message.
 * When a whole request's text is small, no message in it can be over the limit, and that work can be skipped:
 * - A string or key serializes no longer than it was written: every character `JSON.stringify` escapes (quote,
 *   backslash, control characters, lone surrogates) had to be escaped in the text too, at least as long.
 * - Whitespace and repeated keys only shrink; a merged message holds parts of the same text, plus at most the
 *   `"context":` and `"integrations":` keys and their commas (`slackBytes`).
 * - A number written without an exponent keeps at most its significant digits; rounding can carry into one more
 *   integer digit (`99999999999999999` → `100000000000000000`), only for literals of 16 digits or more: at most
 *   one byte in 16. A number written with an exponent can grow five-fold (`1e20` → 21 digits): then no bound.
 * The text's own UTF-8 length is taken, not the request's bytes: an invalid byte decodes to U+FFFD, three bytes.
 */
export const serializedSizeBound = (text: string): number | undefined => {
  if (exponentLiteral.test(text)) return undefined
  const bytes = Buffer.byteLength(text, "utf8")
  return bytes + Math.ceil(bytes / 16) + slackBytes
}

/** Digits followed by an exponent marker: the only way JSON writes an exponent (a string's text may match too). */
const exponentLiteral = /[0-9][eE]/

/** `,"context":` and `,"integrations":` added to a message by batch defaults, with room to spare. */
const slackBytes = 64
