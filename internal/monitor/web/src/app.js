// The dashboard: the cluster as the node serving this page sees it,
// live. Data: GET api/view (who and what), GET api/events (server-sent
// events: the view and each node's new points every second), GET
// api/sessions (the sessions the user may see, every few seconds). uPlot
// (a global from uPlot.iife.min.js) draws the charts.

const CHARTS = [
  { id: 'cpu', title: 'CPU, % of quota', fields: ['cpu'], scale: 100 },
  { id: 'cpu_pressure', title: 'CPU pressure, % (without PSI or a v1 quota: load per core, may pass 100)', fields: ['cpu_pressure'], scale: 100 },
  { id: 'mem', title: 'memory in use', fields: ['mem_bytes'], bytes: true },
  { id: 'disk_used', title: 'disk used by blobs', fields: ['disk_used_bytes'], bytes: true },
  { id: 'disk_io', title: 'disk read, write per s', fields: ['disk_read_bps', 'disk_write_bps'], bytes: true },
  { id: 'net', title: 'network in, out per s', fields: ['net_rx_bps', 'net_tx_bps'], bytes: true },
  { id: 'connections', title: 'client connections', fields: ['connections'] },
  { id: 'requests', title: 'requests per s', fields: ['requests_ps'] },
  { id: 'errors', title: 'errors (5xx) per s', fields: ['errors_ps'] },
  { id: 'latency', title: 'latency p50, p99, ms', fields: ['p50_ms', 'p99_ms'] },
  { id: 'files', title: 'files', fields: ['files'] },
  { id: 'replication', title: 'under-replicated, healing, pending', fields: ['under_replicated', 'healing', 'pending'] },
  { id: 'corrupt', title: 'corrupt replicas found', fields: ['corrupt'] },
  { id: 'scrub', title: 'scrub reads per s', fields: ['scrub_bps'], bytes: true },
  { id: 'decisions', title: 'front-door decisions per s', fields: ['decisions_ps'] },
];
// The caching proxy's panel, drawn when some node runs the proxy (its
// cache figures are known).
const CACHE_CHARTS = [
  { id: 'cache_requests', title: 'cache requests per s: hit, miss, stale, bypass', fields: ['cache_hit_ps', 'cache_miss_ps', 'cache_stale_ps', 'cache_bypass_ps'] },
  { id: 'cache_ratio', title: 'cache hit ratio, % of requests', fields: ['cache_hit_ratio'], scale: 100 },
  { id: 'cache_bytes', title: 'cache bytes per s from memory, disk, origin', fields: ['cache_memory_bps', 'cache_disk_bps', 'cache_origin_bps'], bytes: true },
  { id: 'cache_fetches', title: 'origin fetches per s', fields: ['cache_fetches_ps'] },
  { id: 'cache_probe', title: 'probe: one object through the cache, from the origin, ms', fields: ['probe_cache_ms', 'probe_origin_ms'] },
];
const SESSION_CHARTS = [
  { id: 'sessions', title: 'sessions running, lost', fields: ['sessions_running', 'sessions_lost'] },
];
const SESSIONS_EVERY = 5000; // ms between two reads of api/sessions
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];
const DASHES = [[], [6, 4], [2, 3], [10, 3, 2, 3]];
const KEEP = { fine: 3600, coarse: 1440 };

const $ = (sel) => document.querySelector(sel);
const state = { view: null, nodes: {}, fields: [], charts: {}, events: null, range: 'fine', sessionsTimer: null };

// ---- data ----

// merge adds a Dump's points (arrays [t, ...figures]) to the nodes' series.
function merge(dump) {
  if (dump.fields) state.fields = dump.fields;
  for (const [id, nd] of Object.entries(dump.nodes || {})) {
    const s = state.nodes[id] || (state.nodes[id] = { fine: [], coarse: [] });
    for (const res of ['fine', 'coarse']) {
      const pts = nd[res] || [];
      const arr = s[res];
      const last = arr.length ? arr[arr.length - 1][0] : -Infinity;
      for (const p of pts) if (p[0] > last) arr.push(p);
      if (arr.length > KEEP[res]) arr.splice(0, arr.length - KEEP[res]);
    }
  }
}

function fieldIndex(name) { return state.fields.indexOf(name) + 1; } // +1: the time comes first

function latest(id, name) {
  const s = state.nodes[id];
  const i = fieldIndex(name);
  if (!s || !i) return null;
  for (let k = s.fine.length - 1; k >= 0 && k >= s.fine.length - 5; k--) {
    const v = s.fine[k][i];
    if (v !== null && v !== undefined) return v;
  }
  return null;
}

// aligned returns uPlot's data for a chart: the union of the nodes' times,
// and one column per node and figure, null where a node has no point.
function aligned(chart, ids) {
  const times = new Set();
  for (const id of ids) for (const p of state.nodes[id][state.range]) times.add(p[0]);
  const xs = [...times].sort((a, b) => a - b);
  const at = new Map(xs.map((t, i) => [t, i]));
  const cols = [xs];
  for (const id of ids) {
    for (const f of chart.fields) {
      const col = new Array(xs.length).fill(null);
      const i = fieldIndex(f);
      for (const p of state.nodes[id][state.range]) {
        const v = p[i];
        if (v !== null && v !== undefined) col[at.get(p[0])] = chart.scale ? v * chart.scale : v;
      }
      cols.push(col);
    }
  }
  return cols;
}

// ---- formatting ----

function bytes(v) {
  if (v === null || v === undefined) return '–';
  const u = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  while (Math.abs(v) >= 1000 && i < u.length - 1) { v /= 1000; i++; }
  return (i ? v.toFixed(1) : Math.round(v * 10) / 10) + ' ' + u[i];
}
function num(v, digits = 0) { return v === null || v === undefined ? '–' : v.toFixed(digits); }
function up(m) { return m.gossip === 'alive' || m.gossip === 'suspect'; }
function color(id) { return COLORS[Object.keys(state.nodes).sort().indexOf(id) % COLORS.length]; }

// ---- drawing ----

function drawMembers(v) {
  $('#cluster').textContent = 'cluster ' + v.cluster_id;
  $('#where').textContent = 'seen from ' + v.node;
  $('#user').textContent = v.user ? 'user ' + v.user : '';
  $('#logout').hidden = !v.user || v.user === 'anonymous';
  const rows = v.members.map((m) => {
    const tr = document.createElement('tr');
    const alive = up(m);
    tr.dataset.node = m.id;
    tr.dataset.state = alive ? 'up' : 'down';
    const roles = [];
    if (m.leader) roles.push('raft leader');
    if (m.raft === 'voter') roles.push('voter');
    if (m.raft === 'nonvoter') roles.push('non-voter');
    if (v.dispatcher === m.id) roles.push('dispatcher');
    if (m.id === v.node) roles.push('this node');
    const cells = [
      ['', m.id], ['', (alive ? 'up' : 'down') + (m.gossip === 'suspect' ? ' (suspect)' : '') + (m.state && m.state !== 'active' ? ', ' + m.state : '')],
      ['', ''], ['', m.http || ''],
      ['num', num(pct(latest(m.id, 'cpu')), 0) + ' %'], ['num', bytes(latest(m.id, 'mem_bytes'))],
      ['num', num(latest(m.id, 'requests_ps'), 1)], ['num', num(latest(m.id, 'p99_ms'), 1)],
      ['num', num(latest(m.id, 'connections'))], ['num', num(latest(m.id, 'files'))],
      ['num', num(latest(m.id, 'under_replicated'))], ['num', bytes(latest(m.id, 'disk_used_bytes'))],
    ];
    for (const [cls, text] of cells) {
      const td = document.createElement('td');
      if (cls) td.className = cls;
      td.textContent = text;
      tr.appendChild(td);
    }
    const sw = document.createElement('span');
    sw.className = 'swatch';
    sw.style.background = color(m.id);
    tr.cells[0].prepend(sw);
    tr.cells[1].className = alive ? 'state-up' : 'state-down';
    for (const r of roles) {
      const s = document.createElement('span');
      s.className = 'role';
      s.textContent = r;
      tr.cells[2].appendChild(s);
    }
    return tr;
  });
  $('#members tbody').replaceChildren(...rows);
  const extra = v.extra || {};
  const front = v.front;
  const parts = [];
  if (v.dispatcher) parts.push(`dispatcher role: ${v.dispatcher} (${v.dispatcher_how})`);
  parts.push('dispatch.policy ' + (extra.policy || "unset (each node's --front-policy)"));
  if (front && front.active) {
    parts.push(`front door of ${v.dispatcher} at ${front.addr} (${front.mode}, policy ${front.policy}), decisions since it opened: ` +
      (Object.entries(front.decisions || {}).map(([k, n]) => `${k} ${n}`).join(', ') || 'none'));
  }
  $('#front').textContent = parts.join(' · ');
}

function pct(v) { return v === null ? null : v * 100; }

// known reports whether any point of the node holds the figure.
function known(id, name) {
  const i = fieldIndex(name);
  const s = state.nodes[id];
  if (!s || !i) return false;
  return s.fine.some((p) => p[i] !== null && p[i] !== undefined) || s.coarse.some((p) => p[i] !== null && p[i] !== undefined);
}

// drawCache shows the cache panel when some node runs the proxy: the
// nodes whose cache figures are known, and this node's tiers now.
function drawCache() {
  const ids = Object.keys(state.nodes).sort().filter((id) => known(id, 'cache_hit_ps'));
  $('#cache').hidden = ids.length === 0;
  if (!ids.length) return;
  drawCharts($('#cache-charts'), CACHE_CHARTS, ids);
  const c = ((state.view || {}).extra || {}).cache;
  if (!c) { $('#cache-now').textContent = 'proxies on ' + ids.join(', ') + '; this node runs none'; return; }
  const t = c.tiers || {}, n = c.counts || {};
  const req = Object.entries(n.requests || {}).map(([k, v]) => `${k} ${v}`).join(', ') || 'none';
  $('#cache-now').textContent = `this node's cache at ${c.addr}: ${t.objects || 0} objects, ${bytes(t.memory_bytes || 0)} in memory, ` +
    `${bytes(t.disk_bytes || 0)} on disk; requests since it started: ${req}; origin fetches ${n.origin_fetches || 0}, collapsed waits ${n.collapsed_waits || 0}`;
}

function drawSessionCharts() {
  drawCharts($('#session-charts'), SESSION_CHARTS, Object.keys(state.nodes).sort());
}

function age(s) {
  if (s === null || s === undefined) return '–';
  if (s < 60) return s + ' s';
  if (s < 3600) return Math.floor(s / 60) + ' min';
  return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
}

// placedWhy says why a session is on node, as mure session ls does: the
// policy, the decider, and each candidate's figure the policy compared
// (the chosen node starred; +N: placements in flight not counted in it).
function placedWhy(node, p) {
  if (!p) return 'asked';
  const figs = (p.nodes || []).map((n) => {
    let fig;
    if (p.policy === 'most-free-memory') fig = `${Math.round((n.free_memory_bytes || 0) / 1048576)}MiB free`;
    else if (p.policy === 'least-load') fig = `cpu ${Math.round(100 * (n.cpu || 0))}%`;
    else fig = `${n.sessions || 0} sessions`;
    if (n.in_flight > 0) fig += `+${n.in_flight}`;
    return `${n.node === node ? '*' : ''}${n.node} ${fig}`;
  });
  return `${p.policy} by ${p.decider}: ${figs.join(', ')}`;
}

// drawSessions fills the sessions table: what api/sessions answers, which
// holds no secret (no ticket, no web app's secret).
function drawSessions(list) {
  const rows = list.map((s) => {
    const tr = document.createElement('tr');
    tr.dataset.session = s.id;
    tr.dataset.state = s.state === 'lost' ? 'down' : 'up';
    for (const [cls, text] of [['', s.id], ['', s.user], ['', s.kind], ['', s.node], ['', s.state],
      ['num', age(s.idle_seconds)], ['num', age(s.age_seconds)], ['num', bytes(s.memory_bytes)], ['num', num(s.clients)],
      ['', placedWhy(s.node, s.placement)]]) {
      const td = document.createElement('td');
      if (cls) td.className = cls;
      td.textContent = text;
      tr.appendChild(td);
    }
    return tr;
  });
  $('#sessions tbody').replaceChildren(...rows);
  $('#sessions-none').hidden = list.length > 0;
}

async function pollSessions() {
  clearTimeout(state.sessionsTimer);
  const r = await fetch('api/sessions', { credentials: 'same-origin' }).catch(() => null);
  if (r && r.ok) drawSessions(await r.json());
  state.sessionsTimer = setTimeout(pollSessions, SESSIONS_EVERY);
}

function drawAll() {
  drawCharts($('#charts'), CHARTS, Object.keys(state.nodes).sort());
  drawCache();
  drawSessionCharts();
}

function drawCharts(box, charts, ids) {
  const down = new Set((state.view ? state.view.members : []).filter((m) => !up(m)).map((m) => m.id));
  for (const c of charts) {
    let el = document.getElementById('chart-' + c.id);
    if (!el) {
      el = document.createElement('div');
      el.id = 'chart-' + c.id;
      el.className = 'chart';
      el.dataset.field = c.id;
      box.appendChild(el);
    }
    const data = aligned(c, ids);
    const key = ids.map((id) => id + (down.has(id) ? '!' : '')).join(',') + '|' + state.range;
    let ch = state.charts[c.id];
    if (!ch || ch.key !== key) {
      if (ch) ch.plot.destroy();
      const series = [{}];
      for (const id of ids) {
        c.fields.forEach((f, k) => series.push({
          label: id + (c.fields.length > 1 ? ' ' + f.replace(/_(bps|ms|ps)$/, '') : '') + (down.has(id) ? ' (down)' : ''),
          stroke: color(id), dash: DASHES[k % DASHES.length], width: 1.5, spanGaps: false,
          value: (u, v) => c.bytes ? bytes(v) : num(v, 2),
        }));
      }
      const axis = { values: (u, vals) => vals.map((v) => c.bytes ? bytes(v) : v) , size: 70 };
      const opts = { title: c.title, width: Math.max(300, el.clientWidth - 10), height: 200, series,
        scales: { x: { time: true }, y: { range: (u, min, max) => [Math.min(0, min), max > 0 ? max * 1.1 : c.bytes ? 1000 : 1] } },
        axes: [{}, axis], cursor: { drag: { x: true, y: false } } };
      el.replaceChildren();
      ch = state.charts[c.id] = { key, plot: new uPlot(opts, data, el) };
    } else {
      ch.plot.setData(data);
    }
    el.dataset.points = String(data[0].length);
    el.dataset.nodes = ids.join(',');
  }
}

function update(msg) {
  if (msg.history) merge(msg.history);
  if (msg.view) { state.view = msg.view; drawMembers(msg.view); }
  drawAll();
  $('#stale').hidden = true;
}

// ---- session ----

async function start() {
  const r = await fetch('api/view', { credentials: 'same-origin' });
  if (r.status === 401) return showLogin();
  if (!r.ok) return showLogin((await r.json().catch(() => ({}))).error || r.statusText);
  $('#login').hidden = true;
  $('#dash').hidden = false;
  update({ view: await r.json() });
  listen();
  pollSessions();
}

function listen() {
  if (state.events) state.events.close();
  const es = state.events = new EventSource('api/events');
  es.addEventListener('update', (e) => update(JSON.parse(e.data)));
  es.onerror = async () => {
    $('#stale').textContent = 'lost contact with ' + (state.view ? state.view.node : 'the node') + '; trying again…';
    $('#stale').hidden = false;
    if (es.readyState === EventSource.CLOSED) {
      const r = await fetch('api/view').catch(() => null);
      if (r && r.status === 401) return showLogin('the session ended: log in again');
      setTimeout(listen, 2000);
    }
  };
}

function showLogin(msg) {
  if (state.events) state.events.close();
  clearTimeout(state.sessionsTimer);
  drawSessions([]);
  $('#dash').hidden = true;
  $('#login').hidden = false;
  $('#logout').hidden = true;
  $('#login-error').textContent = msg || '';
}

$('#login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const body = new URLSearchParams(new FormData(e.target));
  const r = await fetch('login', { method: 'POST', body, credentials: 'same-origin' });
  if (!r.ok) {
    const j = await r.json().catch(() => ({}));
    $('#login-error').textContent = j.error || r.statusText;
    return;
  }
  e.target.reset();
  start();
});

$('#logout').addEventListener('click', async () => {
  await fetch('logout', { method: 'POST', credentials: 'same-origin' });
  showLogin();
});

$('#range').addEventListener('change', (e) => { state.range = e.target.value; drawAll(); });

start();
