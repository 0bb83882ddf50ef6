/**
 * The words of a text: runs of letters and digits, split where a lower-case letter or a digit meets an upper-case
 * one ("parseHTTPResponse" is parse, HTTP, Response) and at anything that is neither.
 */
export function words(text: string): string[] {
  const spaced = text
    .replace(/([\p{Ll}\d])(\p{Lu})/gu, "$1 $2")
    .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, "$1 $2");
  return spaced.split(/[^\p{L}\d]+/u).filter((word) => word.length > 0);
}
