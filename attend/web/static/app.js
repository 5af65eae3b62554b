// attend web: the page's script. Every peer's text (bodies, names, subjects, channels) reaches the page
// through textContent only, never as markup; the server's Content-Security-Policy runs no other script.
"use strict";

const S = {
  user: "", mailbox: "", rooms: [], current: null, messages: [], byId: new Map(), shown: new Set(),
  chosen: null, replying: null, unread: 0, source: null, peersTimer: 0, searching: null,
  recent: [],  // the last messages the stream gave: a room loading as one lands still shows it
};
const $ = (id) => document.getElementById(id);
const MAX_DEPTH = 4;
const CUT_CHARS = 600;
const CUT_LINES = 8;
const WAITING_SHOWN = 5;  // held messages listed at once; each decided brings the next
const RECENT = 200;  // messages kept in S.recent

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body),
  };
  const r = await fetch(path, { credentials: "same-origin", cache: "no-store", ...init });
  let doc = {};
  try { doc = await r.json(); } catch (e) { doc = { error: "the server answered " + r.status }; }
  if (!r.ok) throw new Error(doc.error || "the server answered " + r.status);
  return doc;
}

// ------------------------------------------------------------------ time, title, status

function localTime(ms) {
  const d = new Date(ms), now = new Date();
  const hm = d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
  return d.toDateString() === now.toDateString() ? hm : d.toLocaleDateString([], { month: "short", day: "numeric" }) + " " + hm;
}

// The count the stream gives is the newest; one an answer carries was read when its request was
// served, and a count event since then is newer: such an answer's count is left unused.
let counts = 0;

function countNow() { return counts; }

function setUnread(n, asOf) {
  if (asOf !== undefined && asOf !== counts) return;
  S.unread = n;
  document.title = (n > 0 ? "(" + n + ") " : "") + "attend";
  const box = S.rooms.find((r) => r.room === S.mailbox);
  if (box) { box.unread = n; drawRooms(); }
}

function say(text, error) {
  const s = $("status");
  s.textContent = text;
  s.classList.toggle("error", !!error);
}

function connection(state) {
  const c = $("conn");
  c.textContent = { live: "live", down: "reconnecting…", gone: "stopped: run attend web again and open its new address" }[state] || "connecting…";
  c.className = state === "gone" ? "down" : state;
}

// ------------------------------------------------------------------ rooms

function drawRooms() {
  const list = $("rooms");
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.room : null;
  list.replaceChildren();
  for (const r of S.rooms) {
    const li = el("li");
    const b = el("button");
    b.type = "button";
    b.dataset.room = r.room;
    b.append(el("span", "label", r.label));
    if (r.kind === "project") b.append(el("span", "kind", "project"));
    if (r.kind === "mailbox") b.append(el("span", "kind", "mail"));
    if (r.unread > 0) {
      const c = el("span", "count", r.unread);
      c.setAttribute("aria-label", r.unread + " unread");
      b.append(c);
    }
    if (S.current && r.room === S.current.room) b.setAttribute("aria-current", "true");
    b.title = r.detail || r.label;
    b.addEventListener("click", () => { openRoom(r.room); document.body.classList.remove("side-open"); $("text").focus(); });
    li.append(b);
    list.append(li);
  }
  const waiting = S.rooms.reduce((n, r) => n + r.unread, 0);
  $("menu").textContent = waiting ? "Rooms (" + waiting + ")" : "Rooms";
  $("menu").setAttribute("aria-label", waiting ? "Rooms, " + waiting + " unread" : "Rooms");
  if (focused) { const again = list.querySelector('button[data-room="' + CSS.escape(focused) + '"]'); if (again) again.focus(); }
}

async function loadRooms() {
  const asOf = countNow();
  const st = await api("/api/state");
  const was = new Map(S.rooms.map((r) => [r.room, r.unread]));
  S.rooms = st.rooms.map((r) => (r.kind === "mailbox" ? r : { ...r, unread: was.get(r.room) || 0 }));
  drawRooms();
  setUnread(st.unread, asOf);
  return st;
}

function roomIndex(room) { return S.rooms.findIndex((r) => r.room === room); }

function stepRoom(delta) {
  const i = roomIndex(S.current.room);
  const next = S.rooms[(i + delta + S.rooms.length) % S.rooms.length];
  if (next) openRoom(next.room);
}

async function openRoom(room) {
  let doc;
  try { doc = await api("/api/room?room=" + encodeURIComponent(room)); } catch (e) { say(e.message, true); return; }
  S.current = doc.room;
  S.searching = null;
  const r = S.rooms.find((x) => x.room === room);
  if (r && r.kind !== "mailbox") r.unread = 0;
  S.messages = doc.messages;
  S.byId = new Map(S.messages.map((m) => [m.id, m]));
  S.chosen = null;
  cancelReply();
  $("room-title").textContent = doc.room.label;
  $("room-detail").textContent = doc.room.detail || "";
  drawRooms();
  drawMessages();
  // What the stream gave while the room's look was in flight, if the look was taken before it landed.
  for (const m of S.recent) if (m.panes.includes(room) && !S.byId.has(m.id)) place(m);
  say(addressedTo());
  const end = $("messages");
  end.scrollTop = end.scrollHeight;
  history.replaceState(null, "", "#" + encodeURIComponent(room));
}

function addressedTo() {
  if (S.replying) return "";
  if (!S.current) return "";
  if (S.current.kind === "mailbox") return "Your mailbox: reply to a message (r), or start the line with @name.";
  return "To " + S.current.label + " · start with @name or #channel to send elsewhere.";
}

// ------------------------------------------------------------------ the conversation

function article(m) {
  const a = el("article", "msg d" + Math.min(m.depth || 0, MAX_DEPTH));
  a.dataset.id = m.id;
  a.tabIndex = -1;
  if (m.mine) a.classList.add("mine");
  if (m.unread) a.classList.add("unread");
  const head = el("div", "head");
  const t = el("time", null, localTime(m.t));
  t.dateTime = new Date(m.t).toISOString();
  head.append(t, el("span", "sender", m.sender));
  if (m.client) head.append(el("span", "client", m.client));
  head.append(el("span", "kind", m.kind));
  if (m.host && !m.sender.endsWith("@" + m.host)) head.append(el("span", "host", "on " + m.host));
  if (m.unread) head.append(el("span", "badge", "unread"));
  a.append(head);
  if (m.re) {
    const p = m.parent;
    a.append(el("div", "re", "↳ re " + (p ? p.sender + ": " + p.text : m.re)));
  }
  const body = el("div", "body", m.body);
  const lines = m.body.split("\n").length;
  if (m.body.length > CUT_CHARS || lines > CUT_LINES) {
    body.classList.add("cut");
    a.append(body, el("div", "more", "cut: " + lines + " lines; Enter opens it whole"));
  } else {
    a.append(body);
  }
  const acts = el("div", "actions");
  const rep = el("button", "reply", "Reply");
  rep.type = "button";
  rep.tabIndex = -1;
  rep.addEventListener("click", () => { choose(a); startReply(); });
  acts.append(rep);
  if (m.unread) {
    const rd = el("button", "read", "Mark read");
    rd.type = "button";
    rd.tabIndex = -1;
    rd.addEventListener("click", () => markRead([m.id]));
    acts.append(rd);
  }
  a.append(acts);
  a.addEventListener("click", (ev) => { if (!(ev.target instanceof HTMLButtonElement)) { choose(a); openMessage(); } });
  return a;
}

function drawMessages() {
  const box = $("messages");
  box.replaceChildren();
  box.tabIndex = 0;  // nothing chosen in a room just drawn: Tab reaches the log itself
  if (!S.messages.length) box.append(el("p", "empty", "No messages here yet."));
  for (const m of S.messages) box.append(article(m));
  updateMarkAll();
}

function updateMarkAll() {
  $("mark-all").hidden = !S.messages.some((m) => m.unread);
}

function inCurrent(m) { return S.current && m.panes.includes(S.current.room); }

function place(m) {
  // A reply goes under what it answers, after that message's last reply; anything else at the end.
  const parent = m.re ? S.byId.get(m.re) : null;
  let at = S.messages.length;
  m.depth = 0;
  if (parent) {
    m.depth = Math.min((parent.depth || 0) + 1, MAX_DEPTH);
    const i = S.messages.indexOf(parent);
    at = i + 1;
    while (at < S.messages.length && isUnder(S.messages[at], parent.id)) at++;
  }
  S.messages.splice(at, 0, m);
  S.byId.set(m.id, m);
  const box = $("messages");
  const stick = box.scrollTop + box.clientHeight >= box.scrollHeight - 40;
  const empty = box.querySelector(".empty");
  if (empty) empty.remove();
  const node = article(m);
  const after = box.children[at];
  box.insertBefore(node, after || null);
  if (stick) box.scrollTop = box.scrollHeight;
  updateMarkAll();
}

function isUnder(m, rootId) {
  let cur = m, hops = 0;
  while (cur && cur.re && hops++ < 64) {
    if (cur.re === rootId) return true;
    cur = S.byId.get(cur.re);
  }
  return false;
}

function arrived(m) {
  if (S.shown.has(m.id)) return;  // a resumed stream may give again what the page has
  S.shown.add(m.id);
  S.recent.push(m);
  if (S.recent.length > RECENT) S.recent.shift();
  if (!S.searching && inCurrent(m) && !S.byId.has(m.id)) place(m);  // search results stay as found
  let fresh = false;
  for (const room of m.panes) {
    const r = S.rooms.find((x) => x.room === room);
    if (!r) fresh = true;
    else if (r.kind !== "mailbox" && !m.mine && (!S.current || r.room !== S.current.room)) r.unread += 1;
  }
  drawRooms();
  if (fresh) loadRooms().catch(() => {});
  if (m.mail && !m.mine) notify(m);
}

// ------------------------------------------------------------------ choosing, opening, reading

function articles() { return Array.from($("messages").querySelectorAll("article.msg")); }

function choose(a) {
  for (const x of articles()) { x.removeAttribute("aria-selected"); x.tabIndex = -1; }
  // Tab reaches the conversation: the chosen message, or the log itself until one is chosen.
  $("messages").tabIndex = a ? -1 : 0;
  if (!a) { S.chosen = null; return; }
  a.setAttribute("aria-selected", "true");
  a.tabIndex = 0;
  a.focus();
  S.chosen = a.dataset.id;
}

function move(delta) {
  const all = articles();
  if (!all.length) return;
  let i = all.findIndex((a) => a.dataset.id === S.chosen);
  i = i < 0 ? (delta > 0 ? 0 : all.length - 1) : Math.max(0, Math.min(all.length - 1, i + delta));
  choose(all[i]);
}

function openMessage() {
  if (S.searching) { openResult(S.chosen); return; }
  const a = articles().find((x) => x.dataset.id === S.chosen);
  if (!a) return;
  const body = a.querySelector(".body");
  if (body.classList.contains("cut")) { body.classList.remove("cut"); const more = a.querySelector(".more"); if (more) more.remove(); }
  const m = S.byId.get(S.chosen);
  if (m && m.unread) markRead([m.id]);
}

async function markRead(ids) {
  let doc;
  const asOf = countNow();
  try { doc = await api("/api/read", { ids }); } catch (e) { say(e.message, true); return; }
  for (const id of ids) {
    const m = S.byId.get(id);
    if (m) m.unread = false;
    const a = articles().find((x) => x.dataset.id === id);
    if (a) {
      a.classList.remove("unread");
      const b = a.querySelector(".badge"); if (b) b.remove();
      const r = a.querySelector("button.read"); if (r) r.remove();
    }
  }
  setUnread(doc.unread, asOf);
  updateMarkAll();
  say(doc.marked === 1 ? "Marked read." : "Marked " + doc.marked + " read.");
}

// ------------------------------------------------------------------ search

async function search(text) {
  if (!text.trim()) return;
  let doc;
  try { doc = await api("/api/search?q=" + encodeURIComponent(text)); } catch (e) { say(e.message, true); return; }
  S.searching = { text, results: doc.results };
  S.chosen = null;
  cancelReply();
  $("room-title").textContent = "Search: " + text;
  const n = doc.results.length;
  $("room-detail").textContent = (n === 1 ? "1 result" : n + " results") + ", best first · Enter opens one in its room · Esc goes back";
  $("mark-all").hidden = true;
  const box = $("messages");
  box.replaceChildren();
  box.tabIndex = 0;
  if (!n) box.append(el("p", "empty", "Nothing found."));
  for (const r of doc.results) box.append(result(r));
  box.scrollTop = 0;
  say([...doc.notes, ...doc.warnings].join(" · ") || "Search results: Enter (or a click) opens one in its room.");
  document.body.classList.remove("side-open");
}

function result(r) {
  // The snippet comes as pieces, marked or not: the mark is made here, each piece as text.
  const a = el("article", "msg result");
  a.dataset.id = r.id;
  a.tabIndex = -1;
  const head = el("div", "head");
  const t = el("time", null, localTime(r.t));
  t.dateTime = new Date(r.t).toISOString();
  head.append(t, el("span", "sender", r.sender), el("span", "where", "in " + r.room));
  const body = el("div", "body");
  for (const [text, marked] of r.snippet) body.append(marked ? el("mark", null, text) : document.createTextNode(text));
  a.append(head, body);
  a.addEventListener("click", () => { choose(a); openResult(r.id); });
  return a;
}

async function openResult(id) {
  const r = S.searching && S.searching.results.find((x) => x.id === id);
  if (!r) return;
  if (!r.pane) { say("That message is in a room this page does not show (attend inbox " + r.id + " reads it).", true); return; }
  await openRoom(r.pane);
  const a = articles().find((x) => x.dataset.id === id);
  if (a) { choose(a); a.scrollIntoView({ block: "center" }); openMessage(); }
  else say("That message is older than what the room shows here: attend inbox " + id + " reads it.");
}

function leaveSearch() {
  if (S.searching && S.current) openRoom(S.current.room);
}

// ------------------------------------------------------------------ compose

function startReply() {
  const m = S.byId.get(S.chosen);
  if (!m) { say("Choose a message first (↑ ↓ in the conversation).", true); return; }
  S.replying = m;
  $("replying-text").textContent = "Reply to " + m.sender + ": " + m.body.slice(0, 80).replace(/\n/g, " ⏎ ");
  $("replying").hidden = false;
  say("");
  $("text").focus();
}

function cancelReply() {
  S.replying = null;
  $("replying").hidden = true;
  say(addressedTo());
}

async function send() {
  const box = $("text");
  const text = box.value;
  if (!text.trim()) return;
  $("send").disabled = true;
  try {
    const doc = await api("/api/send", { text, room: S.current.room, re: S.replying ? S.replying.id : null });
    if (box.value === text) box.value = "";  // what was typed meanwhile stays
    cancelReply();
    say(doc.said + (doc.warnings.length ? " · " + doc.warnings.join(" · ") : ""));
  } catch (e) {
    say(e.message, true);  // nothing was sent; the line stays for fixing
  } finally {
    $("send").disabled = false;
  }
}

// Tab completes the @name or #channel the cursor ends, as in chat; anywhere else Tab moves on.
function wordAtCursor() {
  const box = $("text");
  const before = box.value.slice(0, box.selectionStart);
  const word = before.split(/\s/).pop();
  return { word, start: before.length - word.length, end: box.selectionStart };
}

function commonPrefix(words) {
  let p = words[0] || "";
  for (const w of words) while (!w.toLowerCase().startsWith(p.toLowerCase())) p = p.slice(0, -1);
  return p;
}

async function complete() {
  const box = $("text");
  const { word, start, end } = wordAtCursor();
  let doc;
  try { doc = await api("/api/complete?word=" + encodeURIComponent(word)); } catch (e) { say(e.message, true); return; }
  const options = doc.options;
  if (!options.length) { say("No peer or channel starts with " + word + ".", true); return; }
  const done = options.length === 1 ? options[0] + " " : commonPrefix(options);
  if (done.trimEnd().length >= word.length) {
    box.setRangeText(done, start, end, "end");
  }
  say(options.length > 1 ? options.join("  ") : addressedTo());
}

// ------------------------------------------------------------------ notifications

function notifySetup() {
  const b = $("notify");
  if (!("Notification" in window)) return;
  b.hidden = Notification.permission !== "default";
  b.addEventListener("click", async () => {
    await Notification.requestPermission();
    b.hidden = Notification.permission !== "default";
  });
}

function notify(m) {
  if (!("Notification" in window) || Notification.permission !== "granted") return;
  try {
    const n = new Notification("attend: " + m.sender, { body: m.body.slice(0, 200), tag: m.id });
    n.onclick = () => { window.focus(); openRoom(S.mailbox); };
  } catch (e) { /* a browser that shows notifications only from a service worker */ }
}

// ------------------------------------------------------------------ peers

async function loadPeers() {
  let doc;
  try { doc = await api("/api/peers"); } catch (e) { return; }
  const list = $("peers");
  list.replaceChildren();
  for (const p of doc.peers) {
    const li = el("li");
    li.append(el("span", "name", p.name), " ", el("span", "status " + (p.status === "working" ? "working" : ""), p.status));
    const where = el("span", "where");
    where.append(el("span", "client", p.client), " in " + p.project);
    if (p.channels.length) where.append(" " + p.channels.join(" "));
    if (p.host) where.append(" on " + p.host);
    li.append(where);
    list.append(li);
  }
  for (const h of doc.humans) {
    const li = el("li");
    li.append(el("span", "name", h.name), " ", el("span", "status", "human" + (h.host ? " on " + h.host : "")));
    list.append(li);
  }
  if (!list.children.length) list.append(el("li", "none", "no live sessions"));
}

// ------------------------------------------------------------------ who holds which files

async function loadLeases() {
  try { drawLeases(await api("/api/leases")); } catch (e) { /* the next change draws them */ }
}

function drawLeases(doc) {
  const list = $("held");
  const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  list.replaceChildren();
  for (const x of doc.leases) {
    const li = el("li");
    li.dataset.session = x.session;
    const what = el("span", "what");
    what.append(el("code", "glob", x.glob));
    if (x.shared) what.append(" ", el("span", "tag", "shared"));
    li.append(what);
    const who = el("span", "who");
    who.append(el("span", "name", x.holder));
    if (x.client) who.append(" ", el("span", "client", x.client));
    who.append(" · " + (x.remote ? "on " + x.host : "in " + x.project) + " · ", el("span", "when", "since " + localTime(Date.parse(x.since))));
    if (x.until) who.append(" · ", el("span", "when", "until " + localTime(Date.parse(x.until))));
    li.append(who);
    if (x.reason) li.append(el("span", "reason", "“" + x.reason + "”"));
    li.title = x.remote ? x.glob + " in " + (x.repo || "a repository") + " on " + x.host : x.root + "/" + x.glob;
    if (!x.remote) {
      const b = el("button", "release", "Release");
      b.type = "button";
      b.dataset.key = x.session + "\n" + x.glob;
      b.setAttribute("aria-label", "Release " + x.glob + ", held by " + x.holder);
      b.addEventListener("click", () => askRelease(x));
      li.append(b);
    }
    list.append(li);
  }
  if (!list.children.length) list.append(el("li", "none", "no file is leased"));
  if (focused) {
    const again = Array.from(list.querySelectorAll("button.release")).find((b) => b.dataset.key === focused);
    if (again) again.focus();
  }
}

function askRelease(x) {
  const d = $("release");
  const what = $("release-what");
  what.replaceChildren(el("code", null, x.glob), ", held by ", el("strong", null, x.holder));
  if (x.reason) what.append(" (“" + x.reason + "”)");
  what.append(".");
  d.returnValue = "";
  d.onclose = async () => {
    if (d.returnValue !== "release") { say("Kept: nothing released."); return; }
    try {
      const doc = await api("/api/release", { session: x.session, glob: x.glob, confirmed: true });
      say(doc.said + (doc.not_released.length ? " · " + doc.not_released.join(" · ") : ""), doc.released === 0);
    } catch (e) { say(e.message, true); }
    loadLeases();
  };
  d.showModal();
}

// ------------------------------------------------------------------ what inbound rules hold

async function loadWaiting() {
  try { drawWaiting(await api("/api/inbound")); } catch (e) { /* the next change draws it */ }
}

function drawWaiting(doc) {
  const list = $("waiting");
  const focused = document.activeElement && list.contains(document.activeElement) ? document.activeElement.dataset.key : null;
  list.replaceChildren();
  for (const w of doc.waiting.slice(0, WAITING_SHOWN)) {
    const li = el("li");
    li.dataset.id = w.id;
    li.title = w.subject;
    const head = el("span", "who");
    head.append(el("span", "name", w.sender), " → ", el("span", "name", w.for), " · ", el("span", "when", localTime(w.t)));
    if (w.unreviewed) head.append(" ", el("span", "tag", "unreviewed"));
    li.append(head, el("span", "subject", w.subject));
    const acts = el("span", "acts");
    for (const [action, label] of [["accept", "Accept"], ["decline", "Decline"]]) {
      const b = el("button", action, label);
      b.type = "button";
      b.dataset.key = w.id + " " + action;
      b.setAttribute("aria-label", label + " " + w.sender + "'s message to " + w.for);
      b.addEventListener("click", () => decide(w, action));
      acts.append(b);
    }
    li.append(acts);
    list.append(li);
  }
  const more = doc.waiting.length - WAITING_SHOWN;
  if (more > 0) list.append(el("li", "more", "and " + more + " more (oldest first; attend inbound lists them all)"));
  $("waiting-box").hidden = !doc.waiting.length;
  if (focused) {
    const again = Array.from(list.querySelectorAll("button")).find((b) => b.dataset.key === focused);
    if (again) again.focus();
  }
}

async function decide(w, action) {
  try {
    const doc = await api("/api/inbound", { id: w.id, action });
    const what = action === "accept" ? "Accepted: " + w.for + " is shown it once." : "Declined: " + w.sender + "'s receipt says so.";
    say(doc.decided.length ? what : doc.said);
    drawWaiting(doc);
  } catch (e) { say(e.message, true); loadWaiting(); }
}

// ------------------------------------------------------------------ live

function listen(cursor) {
  const src = new EventSource("/events?after=" + encodeURIComponent(cursor));
  S.source = src;
  src.addEventListener("open", () => { connection("live"); loadLeases(); loadWaiting(); });  // what changed while it was down
  // The browser retries a broken stream by itself; a refused one (a server started again has another
  // cookie) it closes for good.
  src.addEventListener("error", () => connection(src.readyState === EventSource.CLOSED ? "gone" : "down"));
  src.addEventListener("message", (ev) => arrived(JSON.parse(ev.data)));
  src.addEventListener("count", (ev) => { counts += 1; setUnread(JSON.parse(ev.data).count); });
  src.addEventListener("peers", () => loadPeers());
  src.addEventListener("leases", (ev) => drawLeases(JSON.parse(ev.data)));
  src.addEventListener("inbound", (ev) => drawWaiting(JSON.parse(ev.data)));
  src.addEventListener("rooms", () => loadRooms().catch(() => {}));
  src.addEventListener("reset", () => location.reload());
}

// ------------------------------------------------------------------ keys

function typing(t) { return t instanceof HTMLTextAreaElement || t instanceof HTMLInputElement; }

function onKey(ev) {
  const t = ev.target;
  if ($("help").open || $("release").open) return;
  if (ev.altKey && (ev.key === "ArrowUp" || ev.key === "ArrowDown")) { ev.preventDefault(); stepRoom(ev.key === "ArrowUp" ? -1 : 1); return; }
  if (ev.key === "Escape" && document.body.classList.contains("side-open")) {
    document.body.classList.remove("side-open");
    $("menu").setAttribute("aria-expanded", "false");
    $("menu").focus();
    return;
  }
  if (t === $("q")) {
    if (ev.key === "Escape") { ev.preventDefault(); t.value = ""; leaveSearch(); $("text").focus(); }
    else if (ev.key === "ArrowDown" && S.searching) { ev.preventDefault(); choose(articles()[0]); }
    return;
  }
  if (t === $("text")) {
    if (ev.key === "Enter" && !ev.shiftKey && !ev.isComposing) { ev.preventDefault(); send(); }
    else if (ev.key === "Tab" && !ev.shiftKey && /^[@#]/.test(wordAtCursor().word)) { ev.preventDefault(); complete(); }
    else if (ev.key === "Escape") { ev.preventDefault(); if (S.replying) cancelReply(); else if (articles().length) move(0); else $("messages").focus(); }
    return;
  }
  if (typing(t) || ev.ctrlKey || ev.metaKey) return;
  const inRooms = t instanceof HTMLButtonElement && t.dataset.room;
  if (inRooms && (ev.key === "ArrowDown" || ev.key === "ArrowUp" || ev.key === "j" || ev.key === "k")) {
    ev.preventDefault();
    const all = Array.from($("rooms").querySelectorAll("button"));
    const i = all.indexOf(t) + (ev.key === "ArrowDown" || ev.key === "j" ? 1 : -1);
    if (all[i]) all[i].focus();
    return;
  }
  if (t instanceof HTMLButtonElement && ev.key === "Enter") return;  // a button's own Enter
  switch (ev.key) {
    case "ArrowDown": case "j": ev.preventDefault(); move(1); break;
    case "ArrowUp": case "k": ev.preventDefault(); move(-1); break;
    case "Home": ev.preventDefault(); choose(articles()[0]); break;
    case "End": ev.preventDefault(); choose(articles()[articles().length - 1]); break;
    case "Enter": if (S.chosen) { ev.preventDefault(); openMessage(); } break;
    case "r": ev.preventDefault(); startReply(); break;
    case "m": { ev.preventDefault(); const m = S.byId.get(S.chosen); if (m && m.unread) markRead([m.id]); break; }
    case "c": case "i": ev.preventDefault(); $("text").focus(); break;
    case "[": ev.preventDefault(); stepRoom(-1); break;
    case "]": ev.preventDefault(); stepRoom(1); break;
    case "g": { ev.preventDefault(); const cur = $("rooms").querySelector('[aria-current="true"]') || $("rooms").querySelector("button"); if (cur) cur.focus(); break; }
    case "?": ev.preventDefault(); $("help").showModal(); break;
    case "/": ev.preventDefault(); $("q").focus(); $("q").select(); break;
    case "Escape": if (S.replying) cancelReply(); else if (S.searching) { leaveSearch(); } break;
    default: break;
  }
}

// ------------------------------------------------------------------ start

async function start() {
  notifySetup();
  document.addEventListener("keydown", onKey);
  $("compose").addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
  $("search").addEventListener("submit", (ev) => { ev.preventDefault(); search($("q").value); });
  $("reply-cancel").addEventListener("click", () => { cancelReply(); $("text").focus(); });
  $("mark-all").addEventListener("click", () => markRead(S.messages.filter((m) => m.unread).map((m) => m.id)));
  $("help-open").addEventListener("click", () => $("help").showModal());
  $("messages").addEventListener("focus", () => { if (articles().length) move(0); });
  $("menu").addEventListener("click", () => {
    const open = document.body.classList.toggle("side-open");
    $("menu").setAttribute("aria-expanded", String(open));
  });
  document.addEventListener("visibilitychange", () => { if (!document.hidden) { loadRooms().catch(() => {}); loadWaiting(); } });
  let st;
  try { st = await loadRooms(); } catch (e) { connection("down"); say(e.message, true); return; }
  S.user = st.user;
  S.mailbox = st.mailbox;
  for (const id of st.known) S.shown.add(id);  // the first stream gives these again: not news
  $("who").textContent = "as " + st.user;
  listen(st.cursor);
  const wanted = decodeURIComponent(location.hash.slice(1));
  await openRoom(roomIndex(wanted) >= 0 ? wanted : "open");
  loadPeers();
  // Presence events refresh the peers; this catches a session that ended with no one to say so.
  S.peersTimer = setInterval(() => { if (!document.hidden) loadPeers(); }, 60000);
  $("text").focus();
  document.body.dataset.ready = "1";
}

start();
