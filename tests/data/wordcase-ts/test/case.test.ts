import { test } from "node:test";
import assert from "node:assert/strict";
import { camelCase, pascalCase, snakeCase, words } from "../src/index.ts";

test("words split at case changes and punctuation", () => {
  assert.deepEqual(words("parseHTTPResponse, now!"), ["parse", "HTTP", "Response", "now"]);
});

test("camelCase", () => {
  assert.equal(camelCase("hello big world"), "helloBigWorld");
});

test("pascalCase", () => {
  assert.equal(pascalCase("hello-big world"), "HelloBigWorld");
});

test("snakeCase", () => {
  assert.equal(snakeCase("helloBigWorld"), "hello_big_world");
});
