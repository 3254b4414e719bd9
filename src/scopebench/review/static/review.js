/* scopebench review: keyboard flow, help overlay and the deep-zoom image viewer.
 *
 * Served from the package (no CDN, no inline script: the Content-Security-Policy allows 'self' only).
 * Keys are ignored while a text box has the focus, so a comment can hold any letter.
 */
(function () {
  "use strict";

  const LETTERS = "abcdefghij";
  const viewers = [];
  let activeViewer = null;

  /* ---- the deep-zoom viewer (OpenSeadragon, static/vendor/openseadragon) ---- */

  function openViewer(el) {
    const source = el.dataset.kind === "dzi" ? el.dataset.source : { type: "image", url: el.dataset.source };
    const viewer = window.OpenSeadragon({
      element: el,
      tileSources: source,
      showNavigationControl: false, // own buttons below each image: no button images to ship
      keyboardNavEnabled: false, // the page's keys (A–J, 1–9, +, -, 0) act on the active viewer
      drawer: "canvas",
      maxZoomPixelRatio: 4, // past full resolution, so single pixels can be inspected
      visibilityRatio: 0.5,
    });
    const box = el.closest(".viewer-box");
    box.querySelector(".zoom-in").addEventListener("click", () => zoom(viewer, 1.5));
    box.querySelector(".zoom-out").addEventListener("click", () => zoom(viewer, 1 / 1.5));
    box.querySelector(".zoom-home").addEventListener("click", () => viewer.viewport.goHome());
    const activate = () => { activeViewer = viewer; };
    box.addEventListener("pointerenter", activate);
    box.addEventListener("pointerdown", activate);
    el.viewer = viewer; // for tests and the console
    viewers.push(viewer);
  }

  function zoom(viewer, factor) {
    viewer.viewport.zoomBy(factor);
    viewer.viewport.applyConstraints();
  }

  function initViewers() {
    const els = document.querySelectorAll(".viewer[data-source]");
    if (!els.length || !window.OpenSeadragon) return;
    // OpenSeadragon injects an inline <style> (no focus outline on touch screens) unless a
    // style[data-openseadragon-mobile-css] exists; the CSP blocks inline styles, even empty ones,
    // so the marker is a "style" element outside the HTML namespace (matched, never applied) and
    // review.css carries the rule.
    const marker = document.createElementNS("urn:x-scopebench:marker", "style");
    marker.setAttribute("data-openseadragon-mobile-css", "true");
    document.head.appendChild(marker);
    els.forEach(openViewer);
    activeViewer = viewers[0];
  }

  /* ---- keyed forms: rows of radio buttons, one highlighted ---- */

  const form = document.querySelector("form.keyed");
  const rows = form ? Array.from(form.querySelectorAll("fieldset.key-row")) : [];
  let active = 0;

  function chosen(row) {
    return row.querySelector("input[type=radio]:checked") !== null;
  }

  function highlight(i, scroll = true) {
    if (!rows.length) return;
    active = Math.max(0, Math.min(rows.length - 1, i));
    rows.forEach((r, k) => r.classList.toggle("active-row", k === active));
    if (scroll) rows[active].scrollIntoView({ block: "nearest" });
  }

  function nextOpen(from) {
    for (let k = 1; k <= rows.length; k++) {
      const i = (from + k) % rows.length;
      if (!chosen(rows[i])) return i;
    }
    return from;
  }

  function pick(row, n) {
    const radios = row.querySelectorAll("input[type=radio]");
    if (n >= radios.length) return false;
    radios[n].checked = true;
    radios[n].dispatchEvent(new Event("change", { bubbles: true }));
    return true;
  }

  function hint(text) {
    const p = form && form.querySelector(".form-hint");
    if (p) p.textContent = text;
  }

  let submitted = false;

  function submitForm() {
    // One submit per page: a second Enter before the next page loads would post the answer again
    // and land on "answered already" (the first answer is final).
    if (submitted) return;
    const open = rows.filter((r) => !chosen(r));
    if (open.length) {
      highlight(rows.indexOf(open[0]));
      const names = open.map((r) => r.querySelector("legend").textContent.trim());
      hint("Still to choose: " + names.join("; "));
      return;
    }
    hint("");
    submitted = true;
    form.requestSubmit();
  }

  if (form) {
    form.addEventListener("submit", (e) => {
      if (submitted && e.submitter) e.preventDefault(); // a click after the Enter that submitted
      submitted = true;
    });
    form.addEventListener("change", (e) => {
      const row = e.target.closest("fieldset.key-row");
      if (row && e.target.type === "radio") highlight(nextOpen(rows.indexOf(row)));
    });
    highlight(0, false); // the page opens at its top: header, progress and images first
  }

  /* ---- keys ---- */

  function typing(target) {
    return target.closest && target.closest("textarea, select, input:not([type=radio]):not([type=checkbox])");
  }

  function follow(id) {
    const link = document.getElementById(id);
    if (link) window.location.assign(link.href);
  }

  function onKey(e) {
    if (e.ctrlKey || e.metaKey || e.altKey || e.isComposing) return;
    const help = document.getElementById("help");
    if (typing(e.target)) {
      if (e.key === "Escape") e.target.blur();
      return;
    }
    if (e.key === "?") {
      if (!help) return; // the login and error pages have no key list
      e.preventDefault();
      if (help.open) help.close(); else help.showModal();
      return;
    }
    if (help && help.open) return; // Esc closes the dialog natively
    const key = e.key.toLowerCase();
    if (form && LETTERS.includes(key) && key.length === 1) {
      const lettered = rows.find((r) => r.dataset.letters);
      if (lettered && pick(lettered, LETTERS.indexOf(key))) e.preventDefault();
      return;
    }
    if (form && /^[1-9]$/.test(key)) {
      if (pick(rows[active], Number(key) - 1)) e.preventDefault();
      return;
    }
    if (key === "arrowdown" || key === "arrowup") {
      if (!rows.length) return;
      e.preventDefault();
      highlight(active + (key === "arrowdown" ? 1 : -1));
      return;
    }
    if (key === "enter" && form && !e.target.closest("a, button")) {
      e.preventDefault();
      if (!e.repeat) submitForm();
      return;
    }
    if (key === "n") { follow("next-item"); return; }
    if (key === "p") { follow("prev-item"); return; }
    if (activeViewer && (key === "+" || key === "=")) { zoom(activeViewer, 1.5); return; }
    if (activeViewer && key === "-") { zoom(activeViewer, 1 / 1.5); return; }
    if (activeViewer && key === "0") { activeViewer.viewport.goHome(); }
  }

  document.addEventListener("keydown", onKey);
  // A page restored by the browser's Back button runs no script again: let its form submit anew.
  window.addEventListener("pageshow", (e) => { if (e.persisted) submitted = false; });
  const helpButton = document.getElementById("help-button");
  if (helpButton) helpButton.addEventListener("click", () => document.getElementById("help").showModal());
  initViewers();
})();
