// flare trace viewer: renders one flare.trace/1 record. Everything from a trace (model output,
// passage titles, queries) is untrusted text, so it is only ever set with textContent.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  // Red (p=0) to amber (p=1), lighter as p grows: the less sure, the louder.
  function lowColour(p) {
    const q = Math.max(0, Math.min(1, Number(p) || 0));
    return `hsl(${Math.round(45 * q)}, 90%, ${Math.round(62 + 24 * q)}%)`;
  }

  function setStatus(message, isError) {
    const status = $("status");
    status.textContent = message;
    status.classList.toggle("error", Boolean(isError));
  }

  function apiKey() {
    const key = $("api-key").value.trim();
    if (!key) throw new Error("type your API key first");
    return key;
  }

  async function api(path, key, body) {
    const init = { headers: { Authorization: `Bearer ${key}` } };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const response = await fetch(path, init);
    let data = null;
    try { data = await response.json(); } catch (_) { data = null; }
    if (!response.ok) {
      const message = data && data.error ? data.error.message : response.statusText;
      throw new Error(`${response.status}: ${message}`);
    }
    return data;
  }

  async function loadTrace(id, key) {
    setStatus(`loading trace ${id}…`);
    const trace = await api(`/v1/traces/${encodeURIComponent(id)}`, key);
    render(trace);
    setStatus(`trace ${trace.trace_id}`);
  }

  function lowFlags(step) {
    // Mark exactly the tokens the judge listed as low, in order (text and rounded p match).
    const tokens = step.draft_tokens || [];
    const low = step.low_tokens || [];
    const flags = new Array(tokens.length).fill(false);
    let j = 0;
    tokens.forEach(([text, p], i) => {
      if (j < low.length && low[j][0] === text && low[j][1] === p) {
        flags[i] = true;
        j += 1;
      }
    });
    if (j < low.length && typeof step.threshold === "number") {
      tokens.forEach(([, p], i) => { flags[i] = flags[i] || p < step.threshold; });
    }
    return flags;
  }

  function renderDraft(step) {
    const box = el("div", "draft");
    const tokens = step.draft_tokens || [];
    if (!tokens.length) {
      const why = step.kind === "draft" ? "(empty draft: the model ended the answer)"
        : "(no draft: this sentence was generated from documents)";
      box.textContent = step.draft || why;
      box.classList.add("muted");
      return box;
    }
    const flags = lowFlags(step);
    tokens.forEach(([text, p], i) => {
      const span = el("span", flags[i] ? "tok low" : "tok", text);
      span.title = `p = ${Number(p).toFixed(4)}`;
      span.dataset.p = String(p);
      if (flags[i]) span.style.setProperty("background-color", lowColour(p));
      box.append(span);
    });
    return box;
  }

  function table(headers, rows) {
    const t = el("table");
    const head = el("tr");
    headers.forEach((h) => head.append(el("th", null, h)));
    t.append(head);
    rows.forEach((cells) => {
      const tr = el("tr");
      cells.forEach(([value, cls]) => tr.append(el("td", cls, value)));
      t.append(tr);
    });
    return t;
  }

  // The sentence as text nodes, with each unsupported span wrapped in <mark> (never innerHTML).
  function highlight(text, spans) {
    const out = [];
    let rest = text;
    spans.filter((x) => x).forEach((span) => {
      const at = rest.indexOf(span);
      if (at < 0) return;
      if (at > 0) out.push(document.createTextNode(rest.slice(0, at)));
      const mark = el("mark", "unsupported", span);
      mark.title = "not found in the cited passages";
      out.push(mark);
      rest = rest.slice(at + span.length);
    });
    out.push(document.createTextNode(rest));
    return out;
  }

  function renderStep(step) {
    const card = el("article", "step");
    card.dataset.step = String(step.index);
    const head = el("div", "step-head");
    head.append(el("h2", null, `Sentence ${step.index + 1}`), el("span", "badge", step.kind));
    const decision = String(step.decision || "");
    const base = decision.split(/[:+]/)[0];
    head.append(el("span", `badge decision decision-${base}`, decision || "—"));
    if (typeof step.threshold === "number") head.append(el("span", "muted", `θ = ${step.threshold}`));
    card.append(head);

    card.append(el("h3", null, "Draft"), renderDraft(step));
    if (step.draft_support) {  // trigger=support: why the draft was sent to search
      const unbacked = (step.draft_unsupported || []).join(", ");
      card.append(el("p", "muted draft-support",
        `Its passages did not back the draft (${step.draft_support}${unbacked ? ": " + unbacked : ""}).`));
    }

    if (step.predraft) {  // draft_before_follow: drafted before a names search, then dropped
      card.append(el("p", "muted predraft",
        `Drafted before searching for new names, then dropped: ${step.predraft}`));
    }

    if ((step.queries || []).length) {
      card.append(el("h3", null, "Queries"));
      const list = el("ul", "queries");
      step.queries.forEach((q) => list.append(el("li", null, q)));
      card.append(list);
    }
    if ((step.known || []).length) {  // skip_known_names: a name's best match was already in the prompt
      card.append(el("p", "muted known",
        `Already in the prompt, so the name was not followed to other pages: ${step.known.join(", ")}`));
    }
    if ((step.retrieved || []).length) {
      card.append(el("h3", null, "Retrieved passages"));
      // The server leaves scores out of the traces it serves (they reveal hidden documents).
      // found_floor: a passage scoring far below its search's best was retrieved but not read.
      const unread = new Set(step.unread || []);
      card.append(table(["id", "title", "score"], step.retrieved.map((r) => [
        [r.id, "pid"],
        unread.has(r.id) ? [`${r.title || ""} (not read: below found_floor)`, "unread muted"] : [r.title || ""],
        [r.score === undefined ? "—" : Number(r.score).toFixed(3), "num"],
      ])));
    }
    card.append(el("h3", null, "Kept sentence"));
    const kept = el("div", "sentence");
    const spans = step.support === "supported" ? [] : (step.unsupported || []);
    kept.append(...highlight(step.sentence || "(nothing committed)", spans));
    (step.citations || []).forEach((n) => kept.append(el("span", "cite", `[${n}]`)));
    if (step.grounded === false) kept.append(el("span", "badge decision-cap", "ungrounded"));
    if (step.support && step.support !== "unchecked") {
      kept.append(el("span", `badge support support-${step.support}`, step.support));
    }
    if (step.verify) kept.append(el("span", "badge", `verify: ${step.verify}`));
    card.append(kept);
    if ((step.leaked || []).length) {
      card.append(el("p", "muted", `Names only the prompt's examples contain: ${step.leaked.join(", ")}`));
    }
    if ((step.rejected || []).length) {
      card.append(el("h3", null, "Rejected before acceptance (never shown to the user)"));
      const list = el("ul", "rejected");
      step.rejected.forEach((r) => list.append(el("li", null, r)));
      card.append(list);
    }

    const t = step.timings || {};
    const parts = Object.keys(t).map((k) => `${k} ${(1000 * t[k]).toFixed(0)} ms`);
    parts.push(`${step.lm_calls} LM calls`, `${step.lm_tokens_evaluated} tokens evaluated`);
    card.append(el("p", "timings", parts.join(" · ")));
    return card;
  }

  function render(trace) {
    if (!trace || !Array.isArray(trace.steps)) throw new Error("not a flare trace");
    const main = $("trace");
    main.replaceChildren();
    const summary = el("section", "panel summary");
    summary.append(el("h2", null, trace.question));
    const dl = el("dl");
    const facts = [
      ["trace", trace.trace_id], ["format", trace.version], ["method", trace.method],
      ["model", trace.model], ["retriever", trace.retriever], ["filters", trace.filters],
      ["stop", trace.stop_reason], ["retrievals", trace.retrievals], ["LM calls", trace.lm_calls],
      ["seconds", trace.seconds],
    ];
    facts.forEach(([k, v]) => { dl.append(el("dt", null, k), el("dd", null, v)); });
    summary.append(dl, el("h3", null, "Answer"), el("div", "answer", trace.rendered || trace.answer));
    main.append(summary);
    trace.steps.forEach((step) => main.append(renderStep(step)));
    $("legend").hidden = false;
    document.body.dataset.loaded = trace.trace_id || "file";
  }

  function parseTraces(text) {
    const trimmed = text.trim();
    try { return [JSON.parse(trimmed)]; } catch (_) { /* several lines: JSON lines */ }
    return trimmed.split("\n").filter((l) => l.trim()).map((l) => JSON.parse(l));
  }

  function showFile(traces) {
    const pick = $("trace-pick");
    pick.replaceChildren();
    traces.forEach((t, i) => {
      const option = el("option", null, `${i + 1}. ${t.question} (${String(t.trace_id).slice(0, 8)})`);
      option.value = String(i);
      pick.append(option);
    });
    pick.hidden = traces.length < 2;
    pick.onchange = () => render(traces[Number(pick.value)]);
    render(traces[traces.length - 1]);
    pick.value = String(traces.length - 1);
    setStatus(`${traces.length} trace(s) in file`);
  }

  function guard(fn) {
    return async (event) => {
      if (event) event.preventDefault();
      try { await fn(); } catch (err) { setStatus(err.message || String(err), true); }
    };
  }

  $("server-form").addEventListener("submit", guard(async () => {
    const id = $("trace-id").value.trim();
    if (!id) throw new Error("type a trace id");
    await loadTrace(id, apiKey());
  }));

  $("ask-form").addEventListener("submit", guard(async () => {
    const question = $("question").value.trim();
    if (!question) throw new Error("type a question");
    const key = apiKey();
    setStatus("answering…");
    const answer = await api("/v1/answers", key, { question });
    $("trace-id").value = answer.trace_id;
    await loadTrace(answer.trace_id, key);
  }));

  $("trace-file").addEventListener("change", guard(async () => {
    const file = $("trace-file").files[0];
    if (!file) return;
    const traces = parseTraces(await file.text());
    if (!traces.length) throw new Error("the file holds no traces");
    showFile(traces);
  }));

  for (let i = 0; i < 4; i += 1) {
    const legend = $(`legend-${i}`);
    legend.style.setProperty("background-color", lowColour([0.05, 0.25, 0.5, 0.75][i]));
  }
  const fromHash = new URLSearchParams(window.location.hash.slice(1)).get("trace");
  if (fromHash) $("trace-id").value = fromHash;
})();
