// SPDX-License-Identifier: MIT
// The @anthropic-ai/sdk as an agent uses it: the default base URL and the
// key from ANTHROPIC_API_KEY (inside `sluice run`, a placeholder; sluice
// injects the real key). One plain call and one streamed (the SDK's
// MessageStream, which checks the order of the events it accumulates);
// prints one line for each. Exits 1, printing the error, if either fails.
//
// No retries and a bounded timeout, so that a failure fails (not a retry
// that hides it) and fails fast; everything else is the SDK's default.
import Anthropic from "@anthropic-ai/sdk";

const client = new Anthropic({ maxRetries: 0, timeout: 20_000 });
const req = {
	model: "claude-haiku-4-5",
	max_tokens: 64,
	messages: [{ role: "user", content: "say hello" }],
};
const text = (msg) => msg.content.filter((b) => b.type === "text").map((b) => b.text).join("");

try {
	const done = await client.messages.create(req);
	console.log(`anthropic nonstream: ${text(done)}`);

	const stream = client.messages.stream(req);
	let deltas = "", events = 0;
	for await (const ev of stream) {
		events++;
		if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") deltas += ev.delta.text;
	}
	const final = await stream.finalMessage();
	console.log(`anthropic stream: ${deltas}`);
	console.log(`anthropic stream events: ${events} final: ${text(final)} stop: ${final.stop_reason}`);
} catch (e) {
	console.log(`anthropic error: ${e.constructor.name}: ${e.message}` +
		(e.cause ? ` (cause: ${e.cause.code ?? e.cause.message})` : ""));
	process.exit(1);
}
