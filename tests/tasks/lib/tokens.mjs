// Token counts with a maintained tokenizer: gpt-tokenizer's o200k_base (GPT-4o and later), the
// encoding the figures this project compares against were counted with.
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';

export const TOKENIZER = 'gpt-tokenizer 4.0.0, o200k_base';

export function tokens(text) {
  return text ? countTokens(text) : 0;
}

// What a model reads of a tools/list answer: the tool definitions, as JSON.
export function toolsTokens(tools) {
  return tokens(JSON.stringify(tools));
}

// A call as the model writes it (tool name and arguments) and its result as the model reads it
// (the text items of `content`; structuredContent is for programs, and many clients never show it).
export function callTokens(name, args) {
  return tokens(JSON.stringify({ name, arguments: args }));
}

export function resultText(result) {
  return (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}
