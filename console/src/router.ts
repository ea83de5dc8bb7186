import { useEffect, useState } from "preact/hooks"

// A small history router: the console lives under /console/ and the server answers every deep link
// there with index.html, so /console/sources/web reloads to the same page.

export const base = "/console"

export interface Location {
  /** The path below /console, starting with "/". */
  readonly path: string
  readonly query: URLSearchParams
}

const current = (): Location => {
  const pathname = window.location.pathname
  const below = pathname.startsWith(base) ? pathname.slice(base.length) : pathname
  return { path: below === "" ? "/" : below, query: new URLSearchParams(window.location.search) }
}

const listeners = new Set<() => void>()
window.addEventListener("popstate", () => listeners.forEach((listener) => listener()))

/** `to` is a console path such as "/sources?x=1". */
export const href = (to: string) => `${base}${to}`

export const navigate = (to: string, options: { readonly replace?: boolean } = {}) => {
  const target = href(to)
  if (target === `${window.location.pathname}${window.location.search}`) return
  if (options.replace === true) window.history.replaceState(null, "", target)
  else window.history.pushState(null, "", target)
  listeners.forEach((listener) => listener())
}

export const useLocation = (): Location => {
  const [location, setLocation] = useState(current)
  useEffect(() => {
    const listener = () => setLocation(current())
    listeners.add(listener)
    return () => void listeners.delete(listener)
  }, [])
  return location
}

/** A link that navigates without reloading; a modified click (new tab) is left to the browser. */
export const onLinkClick = (to: string) => (event: MouseEvent) => {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey) return
  event.preventDefault()
  navigate(to)
}
