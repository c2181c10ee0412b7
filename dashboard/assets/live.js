// Keeps the searches feed live: asks for the latest searches every second and redraws the
// table. The page works without it, as of its loading.
"use strict";
(function () {
  const body = document.querySelector("#feed tbody");
  const live = document.getElementById("live");
  if (!body || !live) return;
  const when = (t) => new Date(t).toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
  const cell = (text, cls) => {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    return td;
  };
  const outcome = (s) => {
    const td = document.createElement("td");
    const span = document.createElement("span");
    if (s.outcome === "hit") {
      span.className = "hit";
      span.textContent = "called " + s.called;
    } else if (s.outcome) {
      span.className = "miss";
      span.textContent = s.outcome + (s.used ? ", then called " + s.used : "");
    } else {
      span.className = "open";
      span.textContent = "waiting";
    }
    td.appendChild(span);
    return td;
  };
  let last = "";
  async function refresh() {
    try {
      const res = await fetch("/ui/api/searches", { credentials: "same-origin" });
      if (!res.ok) {
        live.textContent = "Not updating: " + res.status + " " + res.statusText + ".";
        return;
      }
      const text = await res.text();
      live.textContent = "Updated live.";
      if (text === last) return;
      last = text;
      const rows = JSON.parse(text).map((s) => {
        const tr = document.createElement("tr");
        tr.append(cell(when(s.time)), cell(s.client), cell(s.query, "query"),
          cell((s.results || []).length ? s.results.join(", ") : "nothing"), outcome(s));
        return tr;
      });
      if (rows.length === 0) return;
      body.replaceChildren(...rows);
    } catch (e) {
      live.textContent = "Not updating: " + e.message;
    }
  }
  refresh();
  setInterval(refresh, 1000);
})();
