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

  // The session this page shows, and its application session's pane.
  let shown = "", child = null;
  const screens = {};
  // The screen as text (tests, copying): the shown session's, or
  // mureScreen("child") for the application's pane.
  window.mureScreen = (which) => (screens[which || "main"] || (() => ""))();

  async function attach(id) {
    $("pick").hidden = true;
    $("term").hidden = false;
    $("launch").hidden = false;
    shown = id;
    await openPane($("term"), id, "main", status);
  }

  // openPane shows session id in el: a terminal attached over a
  // WebSocket; it returns a function that closes it.
  async function openPane(el, id, name, say) {
    const term = new Terminal({ cursorBlink: true, scrollback: 1000 });
    const fit = new FitAddon.FitAddon(), serialize = new SerializeAddon.SerializeAddon();
    term.loadAddon(fit);
    term.loadAddon(serialize);
    term.open(el);
    screens[name] = () => serialize.serialize();
    const refit = () => fit.fit();
    window.addEventListener("resize", refit);
    fit.fit();
    const { ticket } = await api("POST", "/sessions/" + encodeURIComponent(id) + "/ticket");
    const proto = location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${proto}//${location.host}/attach/${encodeURIComponent(id)}?ticket=${encodeURIComponent(ticket)}&cols=${term.cols}&rows=${term.rows}`);
    ws.binaryType = "arraybuffer";
    const enc = new TextEncoder();
    ws.onopen = () => say("attached to " + id);
    ws.onmessage = (m) => {
      if (typeof m.data !== "string") {
        term.write(new Uint8Array(m.data));
        return;
      }
      const c = JSON.parse(m.data);
      if (c.type === "notice") say(c.text);
      if (c.type === "exit") say("session ended" + (c.error ? ": " + c.error : ", status " + c.code));
    };
    ws.onclose = () => say("detached from " + id + " (it runs on)");
    term.onData((d) => ws.readyState === 1 && ws.send(enc.encode(d)));
    term.onResize(({ cols, rows }) => ws.readyState === 1 && ws.send(JSON.stringify({ type: "resize", cols, rows })));
    term.focus();
    return () => {
      ws.onclose = null;
      ws.close();
      window.removeEventListener("resize", refit);
      delete screens[name];
      term.dispose();
    };
  }

  // The launcher: an application session of the shown session (like
  // mure run inside it), placed by its kind's policy, ending with it. A
  // command line runs through sh -c; a web app opens in a new tab.
  $("launch").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    $("run-error").textContent = "";
    const line = $("run-cmd").value.trim(), kind = $("run-kind").value.trim();
    const body = { parent: shown };
    if (line) body.command = ["sh", "-c", line];
    if (kind) body.kind = kind;
    try {
      const s = await api("POST", "/sessions", body);
      const why = s.placement ? `, placed by ${s.placement.policy}` : "";
      $("app-where").textContent = `application ${s.id} (${s.kind} on ${s.node}${why})`;
      $("app").hidden = false;
      if (child) child();
      child = null;
      if (s.web) {
        // noopener: the app is served from this origin (/web/ID/), and
        // with a handle on this page it could reach its credential.
        window.open(s.web, "_blank", "noopener");
        $("app-status").textContent = "opened " + s.web;
        return;
      }
      child = await openPane($("child"), s.id, "child", (t) => { $("app-status").textContent = t; });
    } catch (e) {
      $("run-error").textContent = e.message;
    }
  });
})();
