// The browser terminal: sign in (a password or a token, kept in this
// page's memory only), pick or start a session, attach to it over a
// WebSocket with a one-use ticket (a browser cannot set headers on one).
// The server sends the screen as it is now, then the output.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  let auth = "";
  const api = async (method, path, body) => {
    const r = await fetch(path, {
      method,
      headers: { Authorization: auth, "Content-Type": "application/json" },
      body: body ? JSON.stringify(body) : undefined,
    });
    const data = r.status === 204 ? null : await r.json();
    if (!r.ok) throw new Error((data && data.error) || r.statusText);
    return data;
  };
  const status = (s) => { $("status").textContent = s; };
  $("where").textContent = location.host;

  $("login").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const user = $("user").value, secret = $("secret").value;
    auth = secret.startsWith("mure_") ? "Bearer " + secret : "Basic " + btoa(user + ":" + secret);
    try {
      await showSessions();
      $("login").hidden = true;
    } catch (e) {
      $("error").textContent = e.message;
    }
  });

  async function showSessions() {
    const list = await api("GET", "/sessions");
    const want = new URLSearchParams(location.search).get("id");
    if (want) return attach(want);
    $("pick").hidden = false;
    const ul = $("list");
    ul.replaceChildren();
    for (const s of list) {
      const li = document.createElement("li");
      const b = document.createElement("button");
      b.textContent = s.id;
      b.dataset.id = s.id;
      b.onclick = () => attach(s.id);
      li.append(b, ` ${s.kind} on ${s.node} (${s.state})`);
      ul.append(li);
    }
  }

  $("new").onclick = async () => {
    const s = await api("POST", "/sessions", {});
    attach(s.id);
  };

  let term, fit, serialize, ws;
  async function attach(id) {
    $("pick").hidden = true;
    $("term").hidden = false;
    if (!term) {
      term = new Terminal({ cursorBlink: true, scrollback: 1000 });
      fit = new FitAddon.FitAddon();
      serialize = new SerializeAddon.SerializeAddon();
      term.loadAddon(fit);
      term.loadAddon(serialize);
      term.open($("term"));
      // The screen as text (tests, copying).
      window.mureScreen = () => serialize.serialize();
      window.addEventListener("resize", () => fit.fit());
    }
    fit.fit();
    const { ticket } = await api("POST", "/sessions/" + encodeURIComponent(id) + "/ticket");
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    ws = new WebSocket(`${proto}//${location.host}/attach/${encodeURIComponent(id)}?ticket=${encodeURIComponent(ticket)}&cols=${term.cols}&rows=${term.rows}`);
    ws.binaryType = "arraybuffer";
    const enc = new TextEncoder();
    ws.onopen = () => status("attached to " + id);
    ws.onmessage = (m) => {
      if (typeof m.data !== "string") {
        term.write(new Uint8Array(m.data));
        return;
      }
      const c = JSON.parse(m.data);
      if (c.type === "notice") status(c.text);
      if (c.type === "exit") status("session ended" + (c.error ? ": " + c.error : ", status " + c.code));
    };
    ws.onclose = () => status("detached from " + id + " (it runs on)");
    term.onData((d) => ws.readyState === 1 && ws.send(enc.encode(d)));
    term.onResize(({ cols, rows }) => ws.readyState === 1 && ws.send(JSON.stringify({ type: "resize", cols, rows })));
    term.focus();
  }
})();
