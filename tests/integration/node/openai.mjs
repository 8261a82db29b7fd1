// SPDX-License-Identifier: MIT
// The openai SDK as an agent uses it: the default base URL and the key from
// OPENAI_API_KEY (inside `sluice run`, a placeholder; sluice injects the
// real key). One plain call and one streamed; prints one line for each.
// Exits 1, printing the error, if either fails.
//
// No retries and a bounded timeout, so that a failure fails (not a retry
// that hides it) and fails fast; everything else is the SDK's default.
import OpenAI from "openai";

const client = new OpenAI({ maxRetries: 0, timeout: 20_000 });
const req = { model: "gpt-4o-mini", messages: [{ role: "user", content: "say hello" }] };

try {
	const done = await client.chat.completions.create(req);
	console.log(`openai nonstream: ${done.choices[0].message.content}`);

	const stream = await client.chat.completions.create({ ...req, stream: true });
	let text = "", chunks = 0, finish = null;
	for await (const chunk of stream) {
		chunks++;
		text += chunk.choices[0]?.delta?.content ?? "";
		finish = chunk.choices[0]?.finish_reason ?? finish;
	}
	console.log(`openai stream: ${text}`);
	console.log(`openai stream chunks: ${chunks} finish: ${finish}`);
} catch (e) {
	console.log(`openai error: ${e.constructor.name}: ${e.message}` +
		(e.cause ? ` (cause: ${e.cause.code ?? e.cause.message})` : ""));
	process.exit(1);
}
