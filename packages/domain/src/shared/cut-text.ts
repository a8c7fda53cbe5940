/** Cutting text that must stay short (a summary, a name echoed in an error) so that it still reads. */

const ELLIPSIS = "…"

/**
 * Cuts `text` to at most `max` UTF-16 units (so also at most `max` characters) ending
 * in an ellipsis: at the last space when there is one in the second half, never inside
 * a surrogate pair, without a dangling separator.
 */
export const cutText = (text: string, max: number): string => {
  if (text.length <= max) return text
  let cut = max - ELLIPSIS.length
  const code = text.charCodeAt(cut - 1)
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1
  let head = text.slice(0, cut)
  const space = head.lastIndexOf(" ")
  if (space >= max / 2) head = head.slice(0, space)
  return head.replace(/[\s;,:]+$/, "") + ELLIPSIS
}
