// SPDX-License-Identifier: MIT
// node sse-gate.mjs URL FLAGFILE: read the origin's /sse-gate stream (lib/
// origin.py) with Node's fetch; after event 1, and only then, make FLAGFILE,
// which releases event 2. Event 1 arriving while the origin still waits for
// the flag proves the stream was not held back on the way: no timing
// involved. Prints what it read; exits 1 on an error.
import { writeFileSync } from "node:fs";

const [url, flag] = process.argv.slice(2);
try {
	const res = await fetch(url, { signal: AbortSignal.timeout(25_000) });
	if (res.status !== 200) throw new Error(`status ${res.status}`);
	const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
	let buf = "";
	let done = false;
	while (!buf.includes("data: event 1\n\n") && !done) {
		const r = await reader.read();
		done = r.done;
		buf += r.value ?? "";
	}
	if (!buf.includes("data: event 1\n\n")) throw new Error(`no event 1 in ${JSON.stringify(buf)}`);
	console.log("sse-gate: event 1");
	writeFileSync(flag, "");
	while (!done) {
		const r = await reader.read();
		done = r.done;
		buf += r.value ?? "";
	}
	console.log(buf.includes("data: event 2\n\n") ? "sse-gate: event 2" : `sse-gate: no event 2 in ${JSON.stringify(buf)}`);
} catch (e) {
	console.log(`sse-gate error: ${e.message}` + (e.cause ? ` (cause: ${e.cause.code ?? e.cause.message})` : ""));
	process.exit(1);
}
