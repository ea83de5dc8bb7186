/** The write key of an `Authorization: Basic base64(writeKey:)` header, if the header is one. */
export const writeKeyFromBasicAuth = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const match = /^\s*Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header)
  if (match === null) return undefined
  const decoded = Buffer.from(match[1]!, "base64").toString("utf8")
  const separator = decoded.indexOf(":")
  const user = separator === -1 ? decoded : decoded.slice(0, separator)
  return user === "" ? undefined : user
}

/** The token of an `Authorization: Bearer <token>` header, if the header is one. */
export const bearerToken = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const match = /^\s*Bearer\s+(\S+)\s*$/i.exec(header)
  return match === null ? undefined : match[1]
}
