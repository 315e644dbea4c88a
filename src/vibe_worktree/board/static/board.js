// The board's page. Every value from the server is put into the page as text
// (textContent, setAttribute), never as HTML: names, paths and diffs are hostile input.
"use strict";
(() => {
  const csrf = document.querySelector('meta[name="vwt-csrf"]').content;
  if (location.search) history.replaceState(null, "", location.pathname); // drop the token
  const $ = (selector) => document.querySelector(selector);
  let data = { worktrees: [], can_merge: false, can_land: false };
  let received = false;
  const detail = detailTarget();
  let detailSignature = null;

  function detailTarget() {
    const parts = location.pathname.split("/");
    if (parts.length !== 4 || parts[1] !== "worktree") return null;
    return { bucket: decodeURIComponent(parts[2]), name: decodeURIComponent(parts[3]) };
  }

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key === "onclick") node.addEventListener("click", value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child !== null && child !== undefined) node.append(child);
    }
    return node;
  }

  function age(stamp) {
    if (!stamp) return "";
    const seconds = Math.max(0, (Date.now() - Date.parse(stamp)) / 1000);
    if (seconds < 60) return `${Math.floor(seconds)}s`;
    if (seconds < 3600) return `${Math.floor(seconds / 60)}m`;
    if (seconds < 86400) return `${Math.floor(seconds / 3600)}h`;
    return `${Math.floor(seconds / 86400)}d`;
  }

  const num = (value) => (value === null || value === undefined ? "" : String(value));
  const detailHref = (row) =>
    `/worktree/${encodeURIComponent(row.bucket)}/${encodeURIComponent(row.name)}`;
  const isDirty = (row) =>
    !(row.changes === 0 && (row.ahead === 0 || row.safe_to_remove === true));

  // `vwt activity set` may name no session: then the agent alone.
  const who = (a) => (a.session ? `${a.agent} session ${a.session}` : a.agent);

  // An agent session's activity (working, waiting for you, idle), beside its holders.
  function activityView(row) {
    const a = row.activity;
    if (!a) return null;
    return el("span", {
      class: `activity badge activity-${a.state}`,
      title: `${who(a)}, ${a.state} since ${a.since}`,
      text: a.state === "waiting" ? "waiting for you" : a.state,
    });
  }

  function activityText(row) {
    const a = row.activity;
    return a ? `${a.state} since ${a.since} (${who(a)})` : "none";
  }

  // "held by 2 live sessions": what a person needs first; which ones comes after.
  const heldText = (count) => `held by ${count} live session${count === 1 ? "" : "s"}`;
  const holderName = (h) => `${h.tool || h.id}${h.pid ? ` pid ${h.pid}` : ""}`;

  function holdersView(row) {
    const activity = activityView(row);
    if (!row.holders) return activity || "";
    const known = (row.holder_details || []).filter((h) => h.tool || h.pid);
    return el("span", {},
      el("span", { class: "badge held", text: heldText(row.holders) }),
      ...known.map((h) => el("span", { class: "holder", title: h.id, text: holderName(h) })),
      activity);
  }

  function integrationView(row) {
    if (row.rebase === "stopped") return "rebase stopped";
    if (row.integrated) return el("span", { class: "badge integrated", text: row.integrated });
    if (row.state === "ready" && row.integrated === null && row.target) return "not merged";
    return "";
  }

  // What runs inside (vwt ps): its leased ports, a link to each port a process inside
  // listens on, and a mark when a leased port is served from another folder.
  function portsView(row) {
    const r = row.running;
    if (!r) return "";
    const links = new Map(r.links.map((l) => [l.port, l.url]));
    const ports = [...r.ports, ...r.links.map((l) => l.port).filter((p) => !r.ports.includes(p))];
    const cell = [];
    for (const port of ports) {
      if (cell.length) cell.push(" ");
      cell.push(links.has(port)
        ? el("a", { class: "port", href: links.get(port), target: "_blank",
          rel: "noopener noreferrer", title: `served from inside ${row.name}`, text: port })
        : el("span", { class: "port", title: "leased; nothing inside listens on it",
          text: port }));
    }
    if (r.mismatches.length) {
      cell.push(" ", el("span", { class: "badge mismatch", title: r.mismatches.join("\n"),
        text: "mismatch" }));
    }
    return el("span", {}, ...cell);
  }

  function runningText(row) {
    const r = row.running;
    if (!r || !r.processes.length) return r ? "nothing" : null;
    return r.processes.map((p) =>
      `pid ${p.pid}${p.listening.length ? ` (:${p.listening.join(", :")})` : ""}: ${p.command}`)
      .join("; ");
  }

  function actionButton(label, action, row, handler, danger) {
    return el("button", {
      type: "button", "data-action": action, class: danger ? "danger" : null, text: label,
      onclick: () => handler(row),
    });
  }

  function actionButtons(row) {
    const buttons = [];
    if (row.state === "ready") {
      buttons.push(actionButton("Snapshot", "snapshot", row, doSnapshot));
      if (data.can_merge) buttons.push(actionButton("Merge…", "merge", row, askMerge, true));
      if (data.can_land) buttons.push(actionButton("Land…", "land", row, askLand, true));
      buttons.push(actionButton("Remove…", "remove", row, askRemove, true));
    } else if (row.state === "missing") {
      buttons.push(actionButton("Remove…", "remove", row, askRemove, true));
    } else if (row.state === "snapshot") {
      buttons.push(actionButton("Restore", "restore", row, doRestore));
    }
    return buttons;
  }

  function stateView(row) {
    const cell = [el("span", { class: `badge ${row.state}`, text: row.state })];
    if (row.changes) cell.push(" ", el("span", { class: "badge dirty", text: "dirty" }));
    const collision = collisionText(row);
    if (collision) {
      cell.push(" ", el("span", { class: `badge ${collision.kind}`, title: collision.text,
        text: collision.kind === "collides" ? "conflicts" : "overlaps" }));
    }
    if (row.problem) cell.push(el("span", { class: "problem", text: row.problem }));
    return cell;
  }

  // Where this worktree will conflict (vwt conflicts): with its target, with other sessions.
  function collisionText(row) {
    const c = row.collisions;
    if (!c) return null;
    const parts = [];
    if (c.target_conflicts && c.target_conflicts.length) {
      parts.push(`conflicts with ${c.target} in ${c.target_conflicts.join(", ")}`);
    }
    for (const other of c.with || []) {
      parts.push(other.conflicts.length
        ? `conflicts with ${other.name} in ${other.conflicts.join(", ")}`
        : `overlaps ${other.name} in ${other.overlap.join(", ")}`);
    }
    if (!parts.length) return null;
    const conflicting = parts.some((p) => p.startsWith("conflicts"));
    return { kind: conflicting ? "collides" : "overlaps", text: parts.join("; ") };
  }

  function rowView(row, columns) {
    const classes = ["row", `state-${row.state}`];
    if (row.held) classes.push("held");
    if (row.changes) classes.push("dirty");
    const stamp = row.state === "snapshot" ? row.removed_at : row.claimed_at;
    return el("tr", { class: classes.join(" "), "data-bucket": row.bucket, "data-name": row.name },
      el("td", { class: "repo", title: row.repo_root || row.bucket, text: row.repository }),
      el("td", { class: "name" }, el("a", { href: detailHref(row), text: row.name })),
      el("td", { class: "branch", text: row.branch || "" }),
      el("td", { class: "state" }, ...stateView(row)),
      el("td", { class: "holders" }, holdersView(row)),
      columns.ports ? el("td", { class: "ports" }, portsView(row)) : null,
      el("td", { class: "num changes", text: num(row.changes) }),
      el("td", { class: "num ahead", text: num(row.ahead) }),
      columns.behind ? el("td", { class: "num behind", text: num(row.behind) }) : null,
      columns.integration ? el("td", { class: "integration" }, integrationView(row)) : null,
      el("td", { class: "age", title: `${stamp || ""} · active ${row.active_at || "?"}`,
        text: age(stamp) }),
      el("td", { class: "actions" }, ...actionButtons(row)));
  }

  function columnsShown() {
    const rows = data.worktrees;
    const columns = {
      behind: rows.some((r) => "behind" in r),
      integration: rows.some((r) => "integrated" in r),
      ports: rows.some((r) => r.running && (r.running.ports.length || r.running.links.length)),
    };
    for (const [name, shown] of Object.entries(columns)) {
      document.querySelectorAll(`[data-col="${name}"]`).forEach((n) => { n.hidden = !shown; });
    }
    return columns;
  }

  function renderList() {
    const columns = columnsShown();
    const rows = data.worktrees;
    $("#worktrees tbody").replaceChildren(...rows.map((row) => rowView(row, columns)));
    $("#empty").hidden = rows.length > 0;
    const held = rows.filter((r) => r.held).length;
    const dirty = rows.filter((r) => r.changes).length;
    const repos = new Set(rows.map((r) => r.bucket)).size;
    const mismatched = rows.filter((r) => r.running && r.running.mismatches.length).length;
    $("#summary").textContent =
      `${rows.length} worktree(s) in ${repos} repositories · ${held} held · ${dirty} dirty`
      + (mismatched ? ` · ${mismatched} with a port served from elsewhere` : "");
  }

  // -- the detail view ---------------------------------------------------------------------
  function detailRow() {
    return data.worktrees.find((r) => r.bucket === detail.bucket && r.name === detail.name);
  }

  function renderDetailFacts(row) {
    $("#detail-title").textContent = detail.name;
    document.title = `${detail.name} · vwt board`;
    if (!row) {
      $("#detail-facts").replaceChildren(el("dt", { text: "state" }),
        el("dd", { text: "no longer listed (removed?)" }));
      $("#detail-actions").replaceChildren();
      return;
    }
    const facts = [
      ["repository", row.repo_root || row.bucket], ["path", row.path],
      ["branch", row.branch], ["state", row.state], ["base", row.base_commit],
      ["held", row.holders ? `${heldText(row.holders)}: ${(row.holder_details || []).map((h) =>
        (h.tool || h.pid ? `${holderName(h)} (${h.id})` : h.id)).join(", ")}`
        : "no: no live session holds it"],
      ["activity", activityText(row)],
      ["made by", row.agent ? `${row.agent} session ${row.session}` : null],
      ["changes", row.changes], ["ahead", row.ahead], ["behind", row.behind],
      ["target", row.target], ["integrated", row.integrated],
      ["claimed", row.claimed_at], ["removed", row.removed_at], ["snapshot", row.snapshot_ref],
      ["collisions", (collisionText(row) || {}).text],
      ["ports", row.running && row.running.ports.length ? row.running.ports.join(", ") : null],
      ["running inside", runningText(row)],
      ["mismatches", row.running && row.running.mismatches.length
        ? row.running.mismatches.join("; ") : null],
      ["last active", row.active_at],
      ["problem", row.problem],
    ];
    $("#detail-facts").replaceChildren(...facts
      .filter(([, value]) => value !== null && value !== undefined && value !== "")
      .flatMap(([key, value]) => [el("dt", { text: key }), el("dd", { text: value })]));
    $("#detail-actions").replaceChildren(...actionButtons(row));
  }

  function diffLine(line) {
    let kind = "";
    if (line.startsWith("+++") || line.startsWith("---") || line.startsWith("diff ")) kind = "meta";
    else if (line.startsWith("+")) kind = "add";
    else if (line.startsWith("-")) kind = "del";
    else if (line.startsWith("@@")) kind = "hunk";
    return el("span", { class: kind || null, text: line });
  }

  async function loadDetail() {
    const url = `/api/worktree/${encodeURIComponent(detail.bucket)}/${encodeURIComponent(detail.name)}`;
    const response = await fetch(url, { credentials: "same-origin" });
    const info = await response.json().catch(() => ({ error: `HTTP ${response.status}` }));
    if (info.error) {
      showResult({ kind: "error", message: info.error });
      return;
    }
    $("#files tbody").replaceChildren(...info.files.map((f) => el("tr", {},
      el("td", { class: "status", text: f.status }), el("td", { class: "path", text: f.path }))));
    $("#files-none").hidden = info.files.length > 0;
    $("#commits tbody").replaceChildren(...info.commits.map((c) => el("tr", {},
      el("td", { class: "commit", title: c.commit, text: (c.commit || "").slice(0, 12) }),
      el("td", { class: "subject", text: c.subject }), el("td", { text: c.author }),
      el("td", { text: c.date }))));
    $("#commits-none").hidden = info.commits.length > 0;
    const lines = info.diff ? info.diff.replace(/\n$/, "").split("\n") : [];
    const nodes = lines.map(diffLine);
    if (info.diff_truncated) nodes.push(el("span", { class: "meta", text: "… (diff cut here)" }));
    $("#diff").replaceChildren(...nodes);
    $("#diff").hidden = !lines.length;
    $("#diff-none").hidden = lines.length > 0;
  }

  function renderDetail() {
    const row = detailRow();
    renderDetailFacts(row);
    const signature = JSON.stringify(row ? [row.state, row.changes, row.ahead, row.active_at,
      row.base_commit] : null);
    if (signature !== detailSignature) {
      detailSignature = signature;
      loadDetail();
    }
  }

  function render() {
    if (detail) renderDetail(); else renderList();
  }

  // -- actions -----------------------------------------------------------------------------
  async function post(action, body) {
    let outcome;
    try {
      const response = await fetch(`/api/${action}`, {
        method: "POST", credentials: "same-origin", body: JSON.stringify(body),
        headers: { "Content-Type": "application/json", "X-Vwt-Csrf": csrf },
      });
      const text = await response.text();
      try { outcome = JSON.parse(text); } catch { outcome = { kind: "error", message: text.trim() }; }
    } catch (error) {
      outcome = { kind: "error", message: `the board is not answering (${error.message})` };
    }
    showResult(outcome);
    return outcome;
  }

  function resultDetails(outcome) {
    const result = outcome.result || {};
    const list = (key) => (Array.isArray(result[key]) ? result[key] : []);
    const items = [];
    for (const c of list("conflicts")) items.push(`conflict: ${c}`);
    for (const r of list("results")) {  // a land's
      for (const c of r.conflicts || []) items.push(`conflict: ${c}`);
      if (r.gate && r.gate.exit !== 0) items.push(`gate log: ${r.gate.log}`);
    }
    const verb = outcome.dry ? "would remove" : "removed";
    for (const r of list("removed")) items.push(`${verb} ${r.bucket}/${r.name}`);
    for (const k of list("kept")) items.push(`kept ${k.bucket}/${k.name}: ${k.reason}`);
    for (const d of list("reservations_discarded")) {
      items.push(`reservation discarded: ${d.bucket}/${d.name}`);
    }
    for (const w of outcome.warnings || []) items.push(`warning: ${w}`);
    return items;
  }

  function showResult(outcome) {
    const box = $("#result");
    const items = resultDetails(outcome);
    box.className = outcome.kind || "error";
    box.replaceChildren(el("div", { class: "message", text: outcome.message || "" }),
      items.length ? el("ul", {}, ...items.map((t) => el("li", { text: t }))) : null);
    box.hidden = false;
  }

  const target = (row) => ({ bucket: row.bucket, name: row.name });

  async function doSnapshot(row) { await post("snapshot", target(row)); }
  async function doRestore(row) { await post("restore", target(row)); }

  // One dialog for every confirmation; resolves true only on the confirm button.
  function confirmDialog({ title, lines, check, ok, controls }) {
    const dialog = $("#confirm");
    $("#confirm-title").textContent = title;
    $("#confirm-body").replaceChildren(
      ...lines.map((line) => (typeof line === "string" ? el("p", { text: line }) : line)),
      ...(controls || []));
    const box = $("#confirm-check");
    const okButton = $("#confirm-ok");
    box.checked = false;
    $("#confirm-check-label").hidden = !check;
    $("#confirm-check-text").textContent = check || "";
    okButton.textContent = ok;
    okButton.disabled = Boolean(check);
    box.onchange = () => { okButton.disabled = check ? !box.checked : false; };
    return new Promise((resolve) => {
      const finish = (answer) => {
        okButton.onclick = null;
        $("#confirm-cancel").onclick = null;
        dialog.onclose = null;
        if (dialog.open) dialog.close();
        resolve(answer);
      };
      okButton.onclick = () => finish(true);
      $("#confirm-cancel").onclick = () => finish(false);
      dialog.onclose = () => finish(false);
      dialog.showModal();
    });
  }

  function holdLine(row) {
    if (!row.held) return null;
    const who = (row.holder_details || []).map((h) => h.tool || h.id).join(", ");
    return `Held by a live session (${who || row.holders}): the removal will be refused.`;
  }

  function lossLine(row) {
    if (row.changes === null || row.changes === undefined) {
      return "Its status could not be read: treat its work as unsaved.";
    }
    const parts = [];
    if (row.changes) parts.push(`${row.changes} uncommitted change(s)`);
    if (row.ahead && row.safe_to_remove !== true) parts.push(`${row.ahead} commit(s) since its base`);
    return `${parts.join(" and ")} would be lost from the checkout. A snapshot is saved first ` +
      `(refs/vibe/reaped/${row.name}); Restore brings it back.`;
  }

  async function askRemove(row) {
    const dirty = isDirty(row);
    const lines = [`${row.path}`];
    const hold = holdLine(row);
    if (hold) lines.push(hold);
    lines.push(dirty ? lossLine(row) : "Nothing would be lost: it has no changes and no unmerged commits.");
    lines.push(row.branch_created
      ? `Its branch ${row.branch} was created by vwt and is deleted with it.`
      : `Its branch ${row.branch || "?"} existed before and is kept.`);
    const yes = await confirmDialog({
      title: `Remove ${row.name}?`, lines, ok: "Remove",
      check: dirty ? "Yes, remove it: I know the work above leaves the checkout (it is kept in a snapshot)." : null,
    });
    if (yes) await post("remove", { ...target(row), confirm_dirty: dirty });
  }

  async function askMerge(row) {
    const mode = el("select", { id: "merge-mode" },
      ...["squash", "rebase", "ff-only"].map((m) => el("option", { value: m, text: m })));
    const commitBox = el("input", { type: "checkbox", id: "merge-commit" });
    const controls = [el("label", {}, "Mode ", mode)];
    if (row.changes) {
      controls.push(el("label", {}, commitBox,
        ` commit its ${row.changes} uncommitted change(s) first`));
    }
    const lines = [
      `Lands the commits of ${row.name} (${row.branch}) on ${row.target || "the target branch"} ` +
      "and then removes the worktree; a snapshot of it is kept, so Restore brings it back.",
    ];
    const hold = holdLine(row);
    if (hold) lines.push(hold.replace("removal", "merge"));
    const yes = await confirmDialog({ title: `Merge ${row.name}?`, lines, ok: "Merge", controls });
    if (yes) {
      await post("merge", { ...target(row), mode: mode.value, commit: commitBox.checked });
    }
  }

  async function askLand(row) {
    const keepBox = el("input", { type: "checkbox", id: "land-keep" });
    const lines = [
      `Lands ${row.name} through the merge queue: it waits for any other land on ` +
      `${row.target || "the target branch"}, is rebased onto its tip, checked there by the ` +
      "repository's approved [land] gate (if it has one), and lands only if the target has " +
      "not moved meanwhile. Then the worktree is removed; a snapshot is kept, so Restore " +
      "brings it back.",
    ];
    const hold = holdLine(row);
    if (hold) lines.push(hold.replace("removal", "land"));
    if (row.changes) lines.push(`It has ${row.changes} uncommitted change(s): commit them first.`);
    const yes = await confirmDialog({
      title: `Land ${row.name}?`, lines, ok: "Land",
      controls: [el("label", {}, keepBox, " keep the worktree, moved onto the new tip")],
    });
    if (yes) await post("land", { ...target(row), keep: keepBox.checked });
  }

  async function askPrune() {
    const keep = el("input", { type: "number", min: "0", id: "prune-keep",
      placeholder: "configured limit" });
    const plan = el("div", { id: "prune-plan", text: "Planning…" });
    const replan = el("button", { type: "button", id: "prune-replan", text: "Plan again" });
    const keepValue = () => (keep.value === "" ? null : Number(keep.value));
    const showPlan = async () => {
      plan.textContent = "Planning…";
      $("#confirm-ok").disabled = true;
      const outcome = await post("prune", { keep: keepValue(), dry_run: true });
      outcome.dry = true;
      const items = resultDetails(outcome);
      plan.replaceChildren(el("p", { class: "message", text: `Plan: ${outcome.message}` }),
        items.length ? el("ul", {}, ...items.map((t) => el("li", { text: t }))) : null);
      showResult(outcome);
      $("#confirm-ok").disabled = outcome.kind !== "done";
    };
    replan.addEventListener("click", showPlan);
    const answer = confirmDialog({
      title: "Prune: retention across all repositories",
      lines: ["Removes the oldest worktrees no session holds beyond the limit, each after a " +
        "snapshot. This is the plan; nothing has changed yet."],
      controls: [el("label", {}, "Keep ", keep, " ", replan), plan], ok: "Run prune",
    });
    showPlan();
    if (await answer) await post("prune", { keep: keepValue(), dry_run: false });
  }

  $("#prune-button").addEventListener("click", askPrune);

  // -- live updates ------------------------------------------------------------------------
  function connect() {
    const live = $("#live");
    const events = new EventSource("/api/events");
    events.addEventListener("worktrees", (event) => {
      data = JSON.parse(event.data);
      received = true;
      live.textContent = `live · ${new Date().toLocaleTimeString()}`;
      live.classList.remove("off");
      render();
    });
    events.onerror = () => {
      live.textContent = "reconnecting…";
      live.classList.add("off");
    };
  }

  (detail ? $("#detail-view") : $("#list-view")).hidden = false;
  if (detail) $("#prune-button").hidden = true;
  connect();
  setInterval(() => { if (received && !detail) renderList(); }, 30000); // ages move on
})();
