/**
 * Standard base64 (with padding) over bytes: the domain has no Node globals and uses the
 * platform's `btoa` / `atob`.
 */

export const encodeBase64 = (bytes: Uint8Array): string => {
  let binary = ""
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary)
}

/** The bytes of a standard base64 text, or null when it is not one. */
export const decodeBase64 = (text: string): Uint8Array | null => {
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(text) || text.length % 4 === 1) return null
  try {
    return Uint8Array.from(atob(text), (c) => c.charCodeAt(0))
  } catch {
    return null
  }
}
