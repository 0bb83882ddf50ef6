import { words } from "./words.ts";

export { words };

function capitalised(word: string): string {
  return word.charAt(0).toUpperCase() + word.slice(1).toLowerCase();
}

/** "hello big world" -> "helloBigWorld" */
export function camelCase(text: string): string {
  return words(text)
    .map((word, index) => (index === 0 ? word.toLowerCase() : capitalised(word)))
    .join("");
}

/** "hello big world" -> "HelloBigWorld" */
export function pascalCase(text: string): string {
  return words(text).map(capitalised).join("");
}

/** "helloBigWorld" -> "hello_big_world" */
export function snakeCase(text: string): string {
  return words(text)
    .map((word) => word.toLowerCase())
    .join("_");
}
