/**
 * The user property an audience is sent as: the snake_case of its name (REFERENCE §6). Words split on
 * white space, punctuation and lower→upper case changes (an upper-case run stays one word:
 * `VIP` → `vip`, `HTTPServer` → `http_server`), lower-cased and joined by `_`.
 */
export const audiencePropertyName = (audienceName: string): string =>
  audienceName
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2")
    .split(/[^\p{L}\p{N}]+/u)
    .filter((word) => word.length > 0)
    .map((word) => word.toLowerCase())
    .join("_")
