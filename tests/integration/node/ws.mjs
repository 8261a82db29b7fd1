// SPDX-License-Identifier: MIT
// node --experimental-websocket ws.mjs URL MESSAGE: open a websocket with
// Node's own client (which ignores the proxy variables), send MESSAGE once
// it is open, print what comes back ("ws echo: ..."), close. Exits 1 on an
// error or after 20 s.
const [url, message] = process.argv.slice(2);
const timer = setTimeout(() => {
	console.log("ws error: timed out");
	process.exit(1);
}, 20_000);
const ws = new WebSocket(url);
ws.onopen = () => ws.send(message);
ws.onmessage = (ev) => {
	console.log(`ws echo: ${ev.data}`);
	ws.close();
};
ws.onerror = (ev) => {
	console.log(`ws error: ${ev.message ?? ev.error?.message ?? "failed"}`);
	process.exit(1);
};
ws.onclose = () => clearTimeout(timer);
